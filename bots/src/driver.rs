//! Runs a [`Bot`] over the text protocol on any reader and writer (stdin/stdout in
//! the `astragal-bot` binary). Sequential and simple: a model for bot authors.

use crate::{Bot, View};
use proto::{FromBot, PROTOCOL_VERSION, ToBot};
use std::io::{self, BufRead, Write};

/// Serves `bot` until `quit` or the end of input. Lines the bot does not
/// understand are ignored, as the protocol asks.
///
/// # Errors
/// Only I/O errors.
pub fn serve(
    bot: &mut dyn Bot,
    author: &str,
    mut input: impl BufRead,
    mut output: impl Write,
) -> io::Result<()> {
    let send = |msg: FromBot, out: &mut dyn Write| -> io::Result<()> {
        writeln!(out, "{msg}")?;
        out.flush() // flush after every message: the referee is waiting for it
    };
    let mut game = String::new();
    let mut options: Vec<String> = Vec::new();
    let mut seats = 0;
    // One buffer for every line (a request can be a kilobyte or more).
    let mut buf = String::new();
    loop {
        buf.clear();
        if input.read_line(&mut buf)? == 0 {
            break;
        }
        let line = buf.strip_suffix('\n').unwrap_or(&buf);
        let line = line.strip_suffix('\r').unwrap_or(line);
        // The hot path: read `go` without copying its moves.
        if let Some(go) = proto::GoRef::parse(line) {
            let observation = if bot.reads_observations() {
                serde_json::from_str(go.obs).unwrap_or(serde_json::Value::Null)
            } else {
                serde_json::Value::Null
            };
            let moves: Vec<&str> = go.legal_moves().collect();
            let view = View {
                game: &game,
                seat: go.seat,
                seats,
                options: &options,
                observation: &observation,
                legal: &moves,
                time_ms: go.time_ms,
                movetime_ms: go.movetime_ms,
            };
            let mv = bot.choose(&view);
            send(FromBot::Move { id: go.id, mv }, &mut output)?;
            continue;
        }
        // Others' moves and results change nothing here: skip them unparsed (in a
        // two-seat game every request comes behind one).
        if matches!(line.split_ascii_whitespace().next(), Some("played" | "gameover")) {
            continue;
        }
        let Ok(msg) = ToBot::parse(line) else {
            continue;
        };
        match msg {
            ToBot::Hello { .. } => {
                send(
                    FromBot::Id {
                        name: Some(bot.name()),
                        author: Some(author.to_owned()),
                    },
                    &mut output,
                )?;
                for decl in bot.options() {
                    send(FromBot::Option(decl), &mut output)?;
                }
                send(
                    FromBot::HelloOk {
                        version: PROTOCOL_VERSION,
                    },
                    &mut output,
                )?;
            }
            ToBot::SetOption { name, value } => {
                if let Err(e) = bot.set_option(&name, &value) {
                    send(FromBot::Info(format!("ignored: {e}")), &mut output)?;
                }
            }
            ToBot::IsReady => send(FromBot::ReadyOk, &mut output)?,
            ToBot::NewGame {
                game: g,
                seats: n,
                seat,
                options: o,
            } => {
                bot.new_game(&g, n, seat, &o);
                (game, seats, options) = (g, n, o);
            }
            // A `go` GoRef refused (no id or no observation) is ignored, as any
            // line the bot cannot use.
            ToBot::Go { .. } | ToBot::Played { .. } | ToBot::GameOver { .. } => {}
            ToBot::Quit => return Ok(()),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::RandomBot;

    #[test]
    fn a_whole_conversation() {
        let input = "astragal version=1\nsetoption name=seed value=9\nsetoption name=depth value=2\nisready\n\
                     newgame game=ur seats=2 seat=1 options=rules=tablet\nponderhit\n\
                     played seat=0 move=raven:4\nplayed nonsense\n\
                     go id=4 seat=1 legal=swallow:1,gamble obs={\"roll\":2}\ngameover ranks=1,2 scores=7,0 reason=normal\nquit\ngo id=5 seat=1 legal=a obs={}\n";
        let mut out = Vec::new();
        serve(&mut RandomBot::new(1), "me", input.as_bytes(), &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let lines: Vec<&str> = out.lines().collect();
        assert_eq!(lines[0], "id name=random author=me");
        assert!(lines[1].starts_with("option name=seed type=spin"));
        assert_eq!(lines[2], "astragalok version=1");
        assert!(
            lines[3].starts_with("info ignored: bot random has no option \"depth\""),
            "{}",
            lines[3]
        );
        assert_eq!(lines[4], "readyok");
        assert!(
            lines[5] == "move id=4 move=swallow:1" || lines[5] == "move id=4 move=gamble",
            "{}",
            lines[5]
        );
        assert_eq!(lines.len(), 6, "nothing after quit: {out}");
    }
}
