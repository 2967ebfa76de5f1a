//! The game viewer (`referee view`): the page's states are the engine's, and in a
//! real browser (headless Chromium) the page shows, at move N, what the engine's
//! position at move N says. Screenshots at desktop and phone widths are kept in
//! `target/test-artifacts/viewer/`.

use astragal_tests::browser::{attributes, chromium, dom, screenshot};
use astragal_tests::{binary, workspace_root};
use std::path::{Path, PathBuf};
use std::process::Command;

/// A game of `game` between random bots, recorded; returns the record file.
fn recorded(game: &str, dir: &Path) -> PathBuf {
    recorded_with_seed(game, "11", dir)
}

fn recorded_with_seed(game: &str, seed: &str, dir: &Path) -> PathBuf {
    let seats = *engine::game_info(game).unwrap().seats.start();
    let file = dir.join(format!("{game}-{seed}.jsonl"));
    let mut args = vec!["play", "--game", game, "--seed", seed, "--record"];
    let path = file.to_str().unwrap().to_owned();
    args.push(&path);
    for _ in 0..seats {
        args.extend(["--bot", "builtin:random"]);
    }
    let o = Command::new(binary("referee")).args(&args).output().unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    file
}

fn view(record: &Path, out: &Path) {
    let o = Command::new(binary("referee"))
        .args(["view", record.to_str().unwrap(), "-o", out.to_str().unwrap()])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
}

/// The JSON the page carries.
fn page_data(html: &str) -> serde_json::Value {
    let start = html
        .find(r#"<script type="application/json" id="data">"#)
        .unwrap();
    let body = &html[start..];
    let body = &body[body.find('>').unwrap() + 1..body.find("</script>").unwrap()];
    serde_json::from_str(body).unwrap()
}

fn temp_dir(tag: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("astragal-viewer-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The engine's game after `n` moves of the record.
fn engine_at(rec: &referee::GameRecord, n: usize) -> Box<dyn engine::AnyGame> {
    let mut g = engine::new_game(&rec.game, &rec.options, Some(rec.seats.len()), rec.seed).unwrap();
    for m in &rec.moves[..n] {
        g.play(m.seat, &m.mv).unwrap();
    }
    g
}

#[test]
fn every_state_on_the_page_is_the_engines_and_the_page_fetches_nothing() {
    let dir = temp_dir("data");
    for game in engine::GAME_IDS {
        let file = recorded(game, &dir);
        let out = dir.join(format!("{game}.html"));
        view(&file, &out);
        let html = std::fs::read_to_string(&out).unwrap();
        // Self-contained: nothing to load from anywhere.
        for outside in ["src=\"http", "href=\"http", "@import", "fetch(", "XMLHttpRequest"] {
            assert!(!html.contains(outside), "{game}: {outside}");
        }
        let rec: referee::GameRecord =
            serde_json::from_str(std::fs::read_to_string(&file).unwrap().lines().next().unwrap()).unwrap();
        let data = page_data(&html);
        let frames = data["frames"].as_array().unwrap();
        assert_eq!(frames.len(), rec.moves.len() + 1, "{game}");
        for (n, f) in frames.iter().enumerate() {
            let g = engine_at(&rec, n);
            assert_eq!(f["full"].as_str().unwrap(), g.render(), "{game} at {n}");
            for s in 0..rec.seats.len() {
                assert_eq!(f["observations"][s], g.observation(s), "{game} at {n}, seat {s}");
            }
            if n > 0 {
                assert_eq!(f["played"]["move"], rec.moves[n - 1].mv.as_str(), "{game} at {n}");
            }
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn text_a_bot_wrote_cannot_become_markup() {
    let dir = temp_dir("escape");
    let file = recorded("ur", &dir);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut rec: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    rec["moves"][0]["info"] = serde_json::json!(["</script><script>document.title='owned'</script>"]);
    rec["seats"][0]["name"] = serde_json::json!("<img src=x onerror=alert(1)>");
    std::fs::write(&file, format!("{rec}\n")).unwrap();
    let out = dir.join("ur.html");
    view(&file, &out);
    let html = std::fs::read_to_string(&out).unwrap();
    assert!(
        !html.contains("</script><script>document.title"),
        "the info line closed the script"
    );
    assert!(!html.contains("<img src=x"), "a name became markup");
    assert_eq!(
        page_data(&html)["frames"][1]["played"]["info"][0],
        "</script><script>document.title='owned'</script>"
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// Characters a reader cannot see (a bidi override, an isolate, a zero-width
/// space, a line separator, a bell) in what a bot wrote reach the page as
/// visible escapes, never raw: the override cannot reorder the line it is in.
#[test]
fn text_a_bot_wrote_shows_its_invisible_characters() {
    let dir = temp_dir("invisible");
    let file = recorded("ur", &dir);
    let text = std::fs::read_to_string(&file).unwrap();
    let mut rec: serde_json::Value = serde_json::from_str(text.lines().next().unwrap()).unwrap();
    let hostile = "win\u{202e}txt.exe\u{2066}a\u{200b}b\u{2028}c\u{7}";
    rec["moves"][0]["info"] = serde_json::json!([hostile]);
    rec["seats"][0]["name"] = serde_json::json!(hostile);
    std::fs::write(&file, format!("{rec}\n")).unwrap();
    let out = dir.join("ur.html");
    view(&file, &out);
    let html = std::fs::read_to_string(&out).unwrap();
    for c in ['\u{202e}', '\u{2066}', '\u{200b}', '\u{2028}', '\u{7}'] {
        assert!(!html.contains(c), "U+{:04X} reached the page raw", c as u32);
    }
    let shown = "win\\u{202e}txt.exe\\u{2066}a\\u{200b}b\\u{2028}c\\u{7}";
    let data = page_data(&html);
    assert_eq!(data["frames"][1]["played"]["info"][0], shown);
    assert_eq!(data["header"]["seats"][0], shown);
    let _ = std::fs::remove_dir_all(&dir);
}

/// Utara: the cells whose dice move `n` collected (in the engine's states before
/// and after it, within one round).
fn sailed(rec: &referee::GameRecord, n: usize) -> Vec<String> {
    if n == 0 {
        return vec![];
    }
    let (before, after) = (
        engine_at(rec, n - 1).observation(0),
        engine_at(rec, n).observation(0),
    );
    if before["round"][0] != after["round"][0] {
        return vec![];
    }
    let cells = |o: &serde_json::Value| -> Vec<String> {
        o["dice"]
            .as_array()
            .unwrap()
            .iter()
            .map(|d| d["cell"].as_str().unwrap().to_owned())
            .collect()
    };
    let now = cells(&after);
    cells(&before).into_iter().filter(|c| !now.contains(c)).collect()
}

/// Cuatto: `position:team` wherever one team has two or more checkers.
fn cuatto_blocks(obs: &serde_json::Value) -> Vec<String> {
    let mut out = Vec::new();
    for (t, spots) in obs["teams"].as_array().unwrap().iter().enumerate() {
        let mut count = std::collections::BTreeMap::<u64, u32>::new();
        for s in spots.as_array().unwrap() {
            let s = s.as_str().unwrap().trim_end_matches(['p', 's']);
            if let Ok(p) = s.parse::<u64>()
                && p > 0
            {
                *count.entry(p).or_default() += 1;
            }
        }
        out.extend(
            count
                .into_iter()
                .filter(|&(_, k)| k >= 2)
                .map(|(p, _)| format!("{p}:{t}")),
        );
    }
    out
}

#[test]
fn in_a_real_browser_the_board_at_move_n_is_the_engines_position_at_move_n() {
    let Some(browser) = chromium() else { return };
    let dir = temp_dir("browser");
    let profile = dir.join("profile");
    let shots = workspace_root().join("target/test-artifacts/viewer");
    std::fs::create_dir_all(&shots).unwrap();
    for game in engine::GAME_IDS {
        let file = recorded(game, &dir);
        let out = dir.join(format!("{game}.html"));
        view(&file, &out);
        let rec: referee::GameRecord =
            serde_json::from_str(std::fs::read_to_string(&file).unwrap().lines().next().unwrap()).unwrap();
        // Half way, or for Utara and Cuatto the first move from there that shows
        // a path sailed or a block, so that those drawings are checked too.
        let half = rec.moves.len() / 2;
        let shows = |n: usize| match game {
            "utara" => !sailed(&rec, n).is_empty(),
            "cuatto" => !cuatto_blocks(&engine_at(&rec, n).observation(0)).is_empty(),
            _ => true,
        };
        let n = (half..=rec.moves.len())
            .chain(1..half)
            .find(|&n| shows(n))
            .unwrap_or_else(|| panic!("{game}: no move shows what is checked"));
        let whole = dom(&browser, &profile, &format!("file://{}#{n}", out.display()));
        // The board as drawn (not the script that draws it).
        let start = whole.find(r#"<div id="board""#).expect("a board");
        let page = &whole[start..start + whole[start..].find(r#"<div class="controls">"#).unwrap()];
        assert_eq!(
            attributes(page, "data-ply"),
            [n.to_string()],
            "{game}: the page is not at move {n}"
        );
        let g = engine_at(&rec, n);
        let drawn = |attr: &str| {
            let mut v: Vec<String> = attributes(page, attr).iter().map(|s| (*s).to_owned()).collect();
            v.sort();
            v
        };
        let sorted = |mut v: Vec<String>| {
            v.sort();
            v
        };
        let obs: Vec<serde_json::Value> = (0..rec.seats.len()).map(|s| g.observation(s)).collect();
        let list = |v: &serde_json::Value| v.as_array().unwrap().clone();
        match game {
            "ur" => {
                let want: Vec<String> = (0..2)
                    .flat_map(|p| {
                        list(&obs[0]["pieces"][p])
                            .iter()
                            .map(|h| h.as_u64().unwrap())
                            .filter(|&h| h != 0 && h != 15)
                            .map(move |h| format!("{p}:{h}"))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                assert!(!want.is_empty(), "a game half played has pieces on the board");
                assert_eq!(drawn("data-piece"), sorted(want), "ur at move {n}");
                assert_eq!(drawn("data-cell").len(), 20, "Ur's board has twenty squares");
            }
            "uptick" => {
                let want = list(&obs[0]["dice"])
                    .iter()
                    .map(|d| format!("{}:{}:{}", d["cell"].as_str().unwrap(), d["seat"], d["value"]))
                    .collect();
                assert_eq!(drawn("data-die"), sorted(want), "uptick at move {n}");
            }
            "utara" => {
                let want = list(&obs[0]["dice"])
                    .iter()
                    .map(|d| format!("{}:{}", d["cell"].as_str().unwrap(), d["face"].as_str().unwrap()))
                    .collect();
                assert_eq!(drawn("data-die"), sorted(want), "utara at move {n}");
                let blocks = list(&obs[0]["blocks"])
                    .iter()
                    .map(|b| b.as_str().unwrap().to_owned())
                    .collect();
                assert_eq!(drawn("data-block"), sorted(blocks), "utara at move {n}");
                assert_eq!(
                    drawn("data-sailed"),
                    sorted(sailed(&rec, n)),
                    "utara's path at move {n}"
                );
            }
            "cuatto" => {
                let want = list(&obs[0]["teams"])
                    .iter()
                    .enumerate()
                    .flat_map(|(t, spots)| {
                        list(spots)
                            .iter()
                            .map(|s| format!("{t}:{}", s.as_str().unwrap()))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                assert_eq!(drawn("data-checker"), sorted(want), "cuatto at move {n}");
                assert_eq!(
                    drawn("data-block"),
                    sorted(cuatto_blocks(&obs[0])),
                    "cuatto's blocks at move {n}"
                );
            }
            "spartan" => {
                let hp = (0..2).map(|a| format!("{a}:{}", obs[0]["hp"][a])).collect();
                assert_eq!(drawn("data-hp"), sorted(hp), "spartan at move {n}");
                let dice = (0..2)
                    .flat_map(|a| {
                        list(&obs[a]["your_dice"])
                            .iter()
                            .map(|d| format!("{a}:{d}"))
                            .collect::<Vec<_>>()
                    })
                    .collect();
                assert_eq!(
                    drawn("data-die"),
                    sorted(dice),
                    "spartan at move {n}, the full state"
                );
                // As seat 0 saw it: its own dice, and of the other army only how many.
                let seen = dom(&browser, &profile, &format!("file://{}#{n}:0", out.display()));
                let hidden: Vec<String> =
                    attributes(&seen[seen.find(r#"<div id="board""#).unwrap()..], "data-die")
                        .iter()
                        .filter(|d| d.starts_with("1:"))
                        .map(|d| (*d).to_owned())
                        .collect();
                assert_eq!(
                    hidden,
                    vec!["1:?".to_owned(); obs[0]["in_hand"][1].as_u64().unwrap() as usize],
                    "seat 0's view shows army 1's dice only as a count"
                );
                // Nor does its move list say which dice army 1 rerolled: every row of
                // seat 1 reads "hidden", every row of seat 0 its move.
                let list = &seen[seen.find(r#"id="movelist""#).unwrap()..];
                let list = &list[..list.find("</tbody>").or_else(|| list.find("</table>")).unwrap()];
                let rows: Vec<&str> = list.split("<tr").skip(1).collect();
                assert_eq!(rows.len(), rec.moves.len(), "one row a move");
                for (row, m) in rows.iter().zip(&rec.moves) {
                    if m.seat == 1 {
                        assert!(
                            row.contains(">hidden<") && !row.contains(&format!("<td>{}", m.mv)),
                            "seat 0's move list shows seat 1's move: {row}"
                        );
                    } else {
                        assert!(row.contains(&format!("<td>{}", m.mv)), "seat 0's own move: {row}");
                    }
                }
                // The last reveal shows both armies' dice and the Mercenary's roll.
                if let Some(r) = obs[0]["last_reveal"].as_object() {
                    let faces = |a: usize| {
                        list_of(&r["dice"][a])
                            .iter()
                            .map(|d| d.to_string())
                            .collect::<String>()
                    };
                    let merc = match r["mercenary"].as_object() {
                        Some(m) => format!("{}-{}", m["seat"], m["roll"]),
                        None => "-".to_owned(),
                    };
                    assert_eq!(
                        drawn("data-reveal"),
                        vec![format!("{}:{}:{merc}", faces(0), faces(1))],
                        "spartan's last reveal at move {n}"
                    );
                }
            }
            other => panic!("no drawing check for {other}: add one with its drawing"),
        }
        for (size, name) in [((1200, 900), "desktop"), ((390, 1000), "phone")] {
            let png = shots.join(format!("{game}-{name}.png"));
            screenshot(
                &browser,
                &profile,
                &format!("file://{}#{n}", out.display()),
                size,
                &png,
            );
        }
    }
    let _ = std::fs::remove_dir_all(&dir);
}

fn list_of(v: &serde_json::Value) -> Vec<serde_json::Value> {
    v.as_array().cloned().unwrap_or_default()
}

/// A 64-bit seed shows whole: as a JavaScript number 11436449778045374795 read
/// …375000, a seed that plays another game.
#[test]
fn the_viewer_shows_a_64_bit_seed_exactly() {
    let seed = "11436449778045374795";
    let dir = temp_dir("seed");
    let file = recorded_with_seed("ur", seed, &dir);
    let out = dir.join("seed.html");
    view(&file, &out);
    let html = std::fs::read_to_string(&out).unwrap();
    assert_eq!(
        page_data(&html)["header"]["seed"],
        seed,
        "the page carries the seed as a string"
    );
    // A fault's detail (a traceback, say) keeps its line breaks.
    assert!(
        html.contains(".fault { color: #b3261e; white-space: pre-wrap"),
        "faults lose their line breaks"
    );
    let Some(browser) = chromium() else { return };
    let shown = dom(
        &browser,
        &dir.join("profile"),
        &format!("file://{}", out.display()),
    );
    assert!(
        shown.contains(&format!("seed {seed}")),
        "the page shows another seed"
    );
}
