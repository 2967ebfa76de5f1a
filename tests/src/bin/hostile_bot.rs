//! A bot that misbehaves on purpose, one way per `--mode`, for the referee's
//! fault tests. Until it misbehaves it plays the first legal move. Two modes
//! behave and show how a process is reused: `keepable` names itself after its
//! process id and writes one stderr line per `newgame`; `crash-in-second-game`
//! crashes at its first request of its second game. `exit-after-game` leaves
//! after `gameover` without waiting for `quit` (rude, but not a fault);
//! `tell-gameover` writes its `gameover` line to stderr, so a test can read what
//! it was told. `--stderr TEXT` writes TEXT to stderr first, in any mode;
//! `--think MS` sets how long `ponder` thinks over each move.

use std::io::{BufRead, Write};
use std::time::Duration;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let mode = args
        .iter()
        .position(|a| a == "--mode")
        .and_then(|i| args.get(i + 1))
        .cloned()
        .unwrap_or_default();
    let after: u64 = args
        .iter()
        .position(|a| a == "--after")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    let think: u64 = args
        .iter()
        .position(|a| a == "--think")
        .and_then(|i| args.get(i + 1))
        .and_then(|s| s.parse().ok())
        .unwrap_or(20);
    if let Some(said) = args
        .iter()
        .position(|a| a == "--stderr")
        .and_then(|i| args.get(i + 1))
    {
        let _ = writeln!(std::io::stderr(), "{said}");
    }
    let stdin = std::io::stdin();
    let mut out = std::io::stdout();
    let mut gos = 0u64;
    let mut games = 0u64;
    if mode == "flood-stderr" {
        // 2 MiB before saying anything (past the log cap), then tens of megabytes
        // while playing: the referee must drain it all.
        let chunk = "e".repeat(64 * 1024);
        for _ in 0..32 {
            let _ = std::io::stderr().write_all(chunk.as_bytes());
        }
        std::thread::spawn(|| {
            let chunk = "e".repeat(64 * 1024);
            let mut err = std::io::stderr();
            for _ in 0..800 {
                if err.write_all(chunk.as_bytes()).is_err() {
                    return;
                }
            }
        });
    }
    if mode == "fork" {
        // A grandchild in the same process group, which must not outlive the game.
        let _ = std::process::Command::new("sleep").arg("417").spawn();
    }
    for line in stdin.lock().lines() {
        let Ok(line) = line else { return };
        let cmd = line.split_whitespace().next().unwrap_or("");
        let field = |k: &str| {
            line.split_whitespace()
                .find_map(|w| w.strip_prefix(&format!("{k}=")).map(str::to_owned))
                .unwrap_or_default()
        };
        match cmd {
            "astragal" => {
                if mode == "slow-handshake" {
                    std::thread::sleep(Duration::from_secs(30));
                }
                let version = if mode == "bad-version" { 2 } else { 1 };
                let name = match mode.as_str() {
                    "keepable" => format!("hostile-keepable-{}", std::process::id()),
                    _ => format!("hostile-{mode}"),
                };
                let _ = writeln!(out, "id name={name} author=tests\nastragalok version={version}");
            }
            "newgame" => {
                games += 1;
                if mode == "keepable" {
                    eprintln!("newgame number {games} in process {}", std::process::id());
                }
            }
            "isready" => {
                if mode == "stall" {
                    continue;
                }
                let _ = writeln!(out, "readyok");
            }
            "go" => {
                gos += 1;
                let id = field("id");
                let first = field("legal").split(',').next().unwrap_or("").to_owned();
                if mode == "crash-in-second-game" && games >= 2 {
                    std::process::exit(3);
                }
                if gos > after {
                    match mode.as_str() {
                        "sleep" => std::thread::sleep(Duration::from_secs(3600)),
                        "ponder" => {
                            // Honest, but slow: --think MS a move (20 ms unless told).
                            std::thread::sleep(Duration::from_millis(think));
                            let _ = writeln!(out, "move id={id} move={first}");
                        }
                        "crash" => std::process::exit(3),
                        "garbage" => {
                            let _ = writeln!(out, "hello referee, here is my move: {first}");
                        }
                        "no-newline" => {
                            let _ = write!(out, "move id={id} move={first}");
                            let _ = out.flush();
                            std::thread::sleep(Duration::from_secs(3600));
                        }
                        "huge-line" => {
                            let chunk = "x".repeat(1024 * 1024);
                            for _ in 0..100 {
                                if out.write_all(chunk.as_bytes()).is_err() {
                                    return;
                                }
                            }
                            let _ = writeln!(out);
                        }
                        "flood" => {
                            for i in 0..100_000 {
                                if writeln!(out, "info line {i}").is_err() {
                                    return;
                                }
                            }
                        }
                        "info-flood" => {
                            // The most `info` a reply may carry, all control
                            // characters (six bytes each in a JSON record).
                            let junk: String = (0..200)
                                .map(|i| match 1 + (i % 30) as u8 {
                                    b'\n' | b'\r' => '\u{1b}',
                                    c => char::from(c),
                                })
                                .collect();
                            for _ in 0..64 {
                                let _ = writeln!(out, "info {junk}");
                            }
                            let _ = writeln!(out, "move id={id} move={first}");
                        }
                        "illegal" => {
                            let _ = writeln!(out, "move id={id} move=swallow:14");
                        }
                        "unparsable" => {
                            let _ = writeln!(out, "move id={id} move=fly-to-the-moon");
                        }
                        "late" => {
                            // A reply to an old request first (discarded), then the real one.
                            let _ = writeln!(
                                out,
                                "move id={} move={first}\ninfo thinking\nmove id={id} move={first}",
                                id.parse::<u64>().unwrap_or(1) - 1
                            );
                        }
                        "early" => {
                            // The answer, then a guess at the next request's answer,
                            // written before that request (discarded: the referee
                            // takes only what comes after its request). One write for
                            // both: line by line, the guess could reach the pipe only
                            // after the next request, and so be an answer to it.
                            let both = format!(
                                "move id={id} move={first}\nmove id={} move={first}\n",
                                id.parse::<u64>().unwrap_or(0) + 1
                            );
                            let _ = out.write_all(both.as_bytes());
                        }
                        _ => {
                            let _ = writeln!(out, "move id={id} move={first}");
                        }
                    }
                } else {
                    let _ = writeln!(out, "move id={id} move={first}");
                }
            }
            "gameover" if mode == "exit-after-game" => return,
            "gameover" if mode == "tell-gameover" => {
                let _ = writeln!(std::io::stderr(), "{line}");
            }
            "quit" => {
                if mode == "ignore-quit" {
                    loop {
                        std::thread::sleep(Duration::from_secs(3600));
                    }
                }
                return;
            }
            _ => {}
        }
        let _ = out.flush();
    }
}
