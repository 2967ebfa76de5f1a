//! The text session over the in-memory transport: every protocol step, no process.

use super::*;
use crate::session::ClockFields;
use crate::transport::memory::{MemoryPeer, pair};

fn limits() -> Limits {
    Limits {
        handshake: Duration::from_millis(300),
        ping: Duration::from_millis(300),
        ..Limits::default()
    }
}

/// A session whose bot has already answered the handshake.
fn open() -> (TextSession, MemoryPeer) {
    let (transport, mut peer) = pair();
    peer.say("id name=mem author=tests");
    peer.say("option name=depth type=spin default=2 min=1 max=9");
    peer.say("astragalok version=1");
    let session = TextSession::open(Box::new(transport), &limits()).unwrap();
    assert_eq!(peer.lines_so_far(), ["astragal version=1"]);
    (session, peer)
}

fn ur() -> Box<dyn engine::AnyGame> {
    engine::new_game::<&str>("ur", &[], Some(2), 7).unwrap()
}

fn ask<'a>(game: &'a dyn engine::AnyGame, options: &'a [String], deadline: Duration) -> Ask<'a> {
    let seat = game.to_act().iter().next().unwrap();
    Ask {
        game,
        options,
        seat,
        clock: ClockFields {
            movetime_ms: Some(100),
            ..ClockFields::default()
        },
        deadline: Instant::now() + deadline,
    }
}

fn table(options: &[String]) -> Table<'_> {
    Table {
        game: "ur",
        seats: 2,
        seat: 0,
        options,
        bot_salt: 0,
    }
}

#[test]
fn the_handshake_collects_name_author_and_options() {
    let (session, _peer) = open();
    let hello = session.hello();
    assert_eq!(hello.name.as_deref(), Some("mem"));
    assert_eq!(hello.author.as_deref(), Some("tests"));
    assert_eq!(hello.options.len(), 1);
    assert_eq!(hello.options[0].name, "depth");
}

#[test]
fn a_handshake_without_astragalok_in_time_is_a_handshake_fault() {
    let (transport, peer) = pair();
    peer.say("id name=slow");
    let start = Instant::now();
    let f = TextSession::open(Box::new(transport), &limits()).unwrap_err();
    assert_eq!(f.kind, FaultKind::Handshake);
    assert!(f.detail.contains("no astragalok within 300 ms"), "{f}");
    assert!(start.elapsed() >= Duration::from_millis(300));
}

#[test]
fn a_handshake_in_another_version_or_out_of_order_is_refused() {
    let (transport, peer) = pair();
    peer.say("astragalok version=2");
    let f = TextSession::open(Box::new(transport), &limits()).unwrap_err();
    assert_eq!(f.kind, FaultKind::Handshake);
    assert!(f.detail.contains("version 2"), "{f}");

    let (transport, peer) = pair();
    peer.say("readyok");
    let f = TextSession::open(Box::new(transport), &limits()).unwrap_err();
    assert_eq!(f.kind, FaultKind::Handshake);
    assert!(f.detail.contains("unexpected readyok"), "{f}");

    let (transport, mut peer) = pair();
    peer.close();
    let f = TextSession::open(Box::new(transport), &limits()).unwrap_err();
    assert_eq!(f.kind, FaultKind::Handshake);
    assert!(f.detail.contains("crash"), "{f}");
}

#[test]
fn a_new_game_is_told_then_checked_and_an_old_move_before_readyok_is_counted() {
    let (mut session, mut peer) = open();
    let options = vec!["rules=tablet".to_owned()];
    session.set_option("depth", "3");
    peer.say("move id=9 move=old");
    peer.say("readyok");
    session.new_game(&table(&options), limits().ping).unwrap();
    assert_eq!(
        peer.lines_so_far(),
        [
            "setoption name=depth value=3",
            "newgame game=ur seats=2 seat=0 options=rules=tablet salt=0",
            "isready"
        ]
    );
    assert_eq!(session.late_replies(), 1);

    // No readyok: a stall, once the ping's time is up.
    let f = session.new_game(&table(&options), limits().ping).unwrap_err();
    assert_eq!(f.kind, FaultKind::Stall);
}

#[test]
fn a_go_carries_the_games_moves_and_observation_and_ids_count_from_one_each_game() {
    let (mut session, mut peer) = open();
    let game = ur();
    let options = game.options().to_vec();
    for _ in 0..2 {
        peer.say("readyok");
        session.new_game(&table(&options), limits().ping).unwrap();
        peer.lines_so_far();
        for id in 1..=3u64 {
            let ask = ask(game.as_ref(), &options, Duration::from_secs(2));
            let legal = game.legal_moves(ask.seat);
            let mut asked = session.ask(&ask).unwrap();
            peer.say(&format!("move id={id} move={}", legal[0]));
            assert_eq!(asked.id, id);
            let reply = session.await_reply(&mut asked).unwrap();
            assert_eq!(reply.mv, legal[0]);
            let sent = peer.lines_so_far();
            let mut expected = String::new();
            proto::text::write_go(
                &mut expected,
                id,
                ask.seat,
                None,
                None,
                Some(100),
                &legal.join(","),
                &game.observation_json(ask.seat),
            );
            assert_eq!(sent, [expected]);
        }
    }
}

#[test]
fn late_and_early_replies_are_discarded_and_counted() {
    let (mut session, mut peer) = open();
    let game = ur();
    let options = game.options().to_vec();
    peer.say("readyok");
    session.new_game(&table(&options), limits().ping).unwrap();
    let ask = ask(game.as_ref(), &options, Duration::from_secs(2));
    let legal = game.legal_moves(ask.seat);
    // Sent before the request: the right id, but not an answer (the bot had not read
    // the request). Then half a line, finished only after the request went out.
    peer.say(&format!("move id=1 move={}", legal[0]));
    peer.send_raw(b"move id=1 mo");
    let mut asked = session.ask(&ask).unwrap();
    peer.say(&format!("ve={}", legal[0]));
    // An answer to an older request, one to a request not yet made, then the answer.
    peer.say("move id=0 move=stale");
    peer.say("move id=5 move=future");
    peer.say(&format!("move id=1 move={}", legal[0]));
    let reply = session.await_reply(&mut asked).unwrap();
    assert_eq!(reply.mv, legal[0]);
    assert_eq!(session.late_replies(), 1);
    assert_eq!(session.early_replies(), 3);
    peer.lines_so_far();

    // A pre-sent move and no answer after the request: a timeout, not a move.
    let ask2 = Ask {
        deadline: Instant::now() + Duration::from_millis(100),
        ..ask
    };
    peer.say(&format!("move id=2 move={}", legal[0]));
    let mut asked = session.ask(&ask2).unwrap();
    let f = session.await_reply(&mut asked).unwrap_err();
    assert_eq!(f.kind, FaultKind::Timeout, "{f}");
}

#[test]
fn ids_are_read_only_in_canonical_decimal() {
    let (mut session, peer) = open();
    let game = ur();
    let options = game.options().to_vec();
    let ask = ask(game.as_ref(), &options, Duration::from_secs(2));
    let legal = game.legal_moves(ask.seat);
    for id in ["01", "+1", "1.0", " 1"] {
        let mut asked = session.ask(&ask).unwrap();
        peer.say(&format!("move id={id} move={}", legal[0]));
        let f = session.await_reply(&mut asked).unwrap_err();
        assert_eq!(f.kind, FaultKind::Malformed, "id={id}: {f}");
    }
}

#[test]
fn info_lines_are_kept_with_the_reply_capped_in_count_and_length() {
    let (mut session, peer) = open();
    let game = ur();
    let options = game.options().to_vec();
    let ask = ask(game.as_ref(), &options, Duration::from_secs(2));
    let legal = game.legal_moves(ask.seat);
    let long = "x".repeat(INFO_CHARS_KEPT + 50);
    let mut asked = session.ask(&ask).unwrap();
    for i in 0..INFO_LINES_KEPT + 10 {
        peer.say(&format!("info {i} {long}"));
    }
    peer.say(&format!("move id=1 move={}", legal[0]));
    let reply = session.await_reply(&mut asked).unwrap();
    assert_eq!(reply.info.len(), INFO_LINES_KEPT);
    assert!(
        reply.info.iter().all(|l| l.len() == INFO_CHARS_KEPT),
        "{:?}",
        reply.info[0]
    );
}

#[test]
fn a_flood_of_lines_for_one_request_is_a_flood_fault() {
    let (mut session, peer) = open();
    let game = ur();
    let options = game.options().to_vec();
    let ask = ask(game.as_ref(), &options, Duration::from_secs(2));
    let mut asked = session.ask(&ask).unwrap();
    for _ in 0..MAX_LINES_PER_REQUEST + 1 {
        peer.say("info spam");
    }
    peer.say("move id=1 move=too-late");
    let f = session.await_reply(&mut asked).unwrap_err();
    assert_eq!(f.kind, FaultKind::Flood, "{f}");
}

#[test]
fn a_line_over_the_limit_is_refused_whether_or_not_it_ends() {
    for ended in [true, false] {
        let (mut session, peer) = open();
        let game = ur();
        let options = game.options().to_vec();
        let ask = ask(game.as_ref(), &options, Duration::from_secs(2));
        let mut line = format!("info {}", "y".repeat(MAX_BOT_LINE));
        if ended {
            line.push('\n');
        }
        let mut asked = session.ask(&ask).unwrap();
        // In pieces, as a pipe delivers it.
        for chunk in line.as_bytes().chunks(7000) {
            peer.send_raw(chunk);
        }
        let f = session.await_reply(&mut asked).unwrap_err();
        assert_eq!(f.kind, FaultKind::LineTooLong, "{f}");
    }
}

#[test]
fn no_reply_by_the_deadline_is_a_timeout_and_a_reply_split_in_pieces_is_one_line() {
    let (mut session, peer) = open();
    let game = ur();
    let options = game.options().to_vec();
    let ask1 = ask(game.as_ref(), &options, Duration::from_millis(150));
    let start = Instant::now();
    let mut asked = session.ask(&ask1).unwrap();
    let f = session.await_reply(&mut asked).unwrap_err();
    assert_eq!(f.kind, FaultKind::Timeout);
    assert!(start.elapsed() >= Duration::from_millis(150));

    let ask2 = ask(game.as_ref(), &options, Duration::from_secs(2));
    let legal = game.legal_moves(ask2.seat);
    let reply = format!("move id=2 move={}\n", legal[0]);
    let (a, b) = reply.split_at(6);
    let mut asked = session.ask(&ask2).unwrap();
    peer.send_raw(a.as_bytes());
    peer.send_raw(b.as_bytes());
    assert_eq!(session.await_reply(&mut asked).unwrap().mv, legal[0]);
}

#[test]
fn a_bot_that_leaves_or_says_nonsense_is_charged_for_it() {
    let (mut session, mut peer) = open();
    let game = ur();
    let options = game.options().to_vec();
    let a = ask(game.as_ref(), &options, Duration::from_secs(2));
    let mut asked = session.ask(&a).unwrap();
    peer.say("bestmove e2e4");
    let f = session.await_reply(&mut asked).unwrap_err();
    assert_eq!(f.kind, FaultKind::Malformed, "{f}");

    // A last line without its newline, then the end: a crash, not a move.
    peer.send_raw(b"move id=2 move=x");
    peer.close();
    // Seen as the next request goes out.
    let f = session.ask(&a).unwrap_err();
    assert_eq!(f.kind, FaultKind::Crash, "{f}");
    assert!(session.has_ended());
}

#[test]
fn events_wait_for_the_next_message_or_go_ahead_of_it_whole() {
    let (mut session, mut peer) = open();
    session.queue_played(1, "swallow:3");
    session.queue_played(1, "gamble");
    assert!(peer.lines_so_far().is_empty(), "events wait for the next message");
    session.flush_events();
    assert_eq!(
        peer.lines_so_far(),
        ["played seat=1 move=swallow:3", "played seat=1 move=gamble"]
    );
    session.queue_played(1, "rooster:4");
    session.game_over(&GameOver {
        ranks: vec![1, 2],
        scores: vec![3, 0],
        reason: "end".into(),
        detail: None,
    });
    session.quit();
    assert_eq!(
        peer.lines_so_far(),
        [
            "played seat=1 move=rooster:4",
            "gameover ranks=1,2 scores=3,0 reason=end",
            "quit"
        ]
    );
    // After quit the referee's side is closed: the bot sees the end of its input.
    assert_eq!(peer.next_line(Instant::now() + Duration::from_millis(50)), None);
}
