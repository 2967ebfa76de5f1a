//! Runs a [`Bot`] over the text protocol on any reader and writer (stdin/stdout in
//! the `astragal-bot` binary). Sequential and simple: a model for bot authors.

use crate::{Bot, View};
use proto::{FromBot, PROTOCOL_VERSION, ToBot};
use std::io::{self, BufRead, Write};

/// Serves `bot` until `quit` or the end of input. Lines the bot does not
/// understand (or that are not UTF-8) are ignored, as the protocol asks.
///
/// # Errors
/// Only I/O errors.
pub fn serve(
    bot: &mut dyn Bot,
    author: &str,
    mut input: impl BufRead,
    mut output: impl Write,
) -> io::Result<()> {
    let mut session = Session {
        bot,
        author,
        game: String::new(),
        options: Vec::new(),
        seats: 0,
        moves: Vec::new(),
        reply: String::new(),
    };
    // The part of a line that did not fit in the reader's buffer.
    let mut spill: Vec<u8> = Vec::new();
    loop {
        // Lines are read where the reader holds them, not copied out first: a
        // request can be a kilobyte or more and this runs for every move.
        let available = input.fill_buf()?;
        if available.is_empty() {
            if !spill.is_empty() {
                session.handle(&spill, &mut output)?;
            }
            return Ok(());
        }
        let (flow, used) = match memchr::memchr(b'\n', available) {
            Some(end) if spill.is_empty() => (session.handle(&available[..end], &mut output)?, end + 1),
            Some(end) => {
                spill.extend_from_slice(&available[..end]);
                let flow = session.handle(&spill, &mut output)?;
                spill.clear();
                (flow, end + 1)
            }
            None => {
                spill.extend_from_slice(available);
                (Flow::Continue, available.len())
            }
        };
        input.consume(used);
        if let Flow::Quit = flow {
            return Ok(());
        }
    }
}

/// Whether to go on reading after a line.
enum Flow {
    Continue,
    Quit,
}

/// What the bot knows between lines.
struct Session<'b, 'a> {
    bot: &'b mut dyn Bot,
    author: &'a str,
    game: String,
    options: Vec<String>,
    seats: usize,
    /// The legal-move list's allocation, kept between requests.
    moves: Vec<&'static str>,
    /// The reply line's buffer, likewise.
    reply: String,
}

impl Session<'_, '_> {
    fn handle(&mut self, line: &[u8], output: &mut impl Write) -> io::Result<Flow> {
        let Ok(line) = std::str::from_utf8(line) else {
            return Ok(Flow::Continue);
        };
        let line = line.strip_suffix('\r').unwrap_or(line);
        // The hot path: read `go` without copying its moves.
        if let Some(go) = proto::GoRef::parse(line) {
            let observation = if self.bot.reads_observations() {
                serde_json::from_str(go.obs).unwrap_or(serde_json::Value::Null)
            } else {
                serde_json::Value::Null
            };
            let mut moves = reuse(std::mem::take(&mut self.moves));
            moves.extend(go.legal_moves());
            let view = View {
                game: &self.game,
                seat: go.seat,
                seats: self.seats,
                options: &self.options,
                observation: &observation,
                legal: &moves,
                time_ms: go.time_ms,
                movetime_ms: go.movetime_ms,
            };
            let mv = self.bot.choose(&view);
            self.moves = reuse(moves);
            self.reply.clear();
            proto::text::write_move_reply(&mut self.reply, go.id, &mv);
            self.reply.push('\n');
            output.write_all(self.reply.as_bytes())?;
            output.flush()?;
            return Ok(Flow::Continue);
        }
        // Others' moves and results change nothing here: skip them unparsed (in a
        // two-seat game every request comes behind one).
        if matches!(line.split_ascii_whitespace().next(), Some("played" | "gameover")) {
            return Ok(Flow::Continue);
        }
        let Ok(msg) = ToBot::parse(line) else {
            return Ok(Flow::Continue);
        };
        match msg {
            ToBot::Hello { .. } => {
                let id = FromBot::Id {
                    name: Some(self.bot.name()),
                    author: Some(self.author.to_owned()),
                };
                send(id, output)?;
                for decl in self.bot.options() {
                    send(FromBot::Option(decl), output)?;
                }
                send(
                    FromBot::HelloOk {
                        version: PROTOCOL_VERSION,
                    },
                    output,
                )?;
            }
            ToBot::SetOption { name, value } => {
                if let Err(e) = self.bot.set_option(&name, &value) {
                    send(FromBot::Info(format!("ignored: {e}")), output)?;
                }
            }
            ToBot::IsReady => send(FromBot::ReadyOk, output)?,
            ToBot::NewGame {
                game,
                seats,
                seat,
                options,
                salt,
            } => {
                self.bot.new_game(&game, seats, seat, &options);
                if let Some(salt) = salt {
                    self.bot.salt_game(salt);
                }
                (self.game, self.seats, self.options) = (game, seats, options);
            }
            // A `go` GoRef refused (no id or no observation) is ignored, as any
            // line the bot cannot use.
            ToBot::Go { .. } | ToBot::Played { .. } | ToBot::GameOver { .. } => {}
            ToBot::Quit => return Ok(Flow::Quit),
        }
        Ok(Flow::Continue)
    }
}

/// Sends one message and flushes: the referee is waiting for it.
fn send(msg: FromBot, out: &mut impl Write) -> io::Result<()> {
    writeln!(out, "{msg}")?;
    out.flush()
}

/// The same allocation, emptied, to borrow from another line (the collect reuses
/// the buffer: same element size, nothing to move).
fn reuse<'to>(mut moves: Vec<&str>) -> Vec<&'to str> {
    moves.clear();
    moves.into_iter().map(|_| "").collect()
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

    /// Lines longer than the reader's buffer, a line that is not UTF-8, and a last
    /// line without its newline are all read as the protocol says.
    #[test]
    fn long_lines_bad_bytes_and_a_missing_last_newline() {
        let legal: Vec<String> = (0..40).map(|i| format!("m{i}")).collect();
        let mut input = format!(
            "astragal version=1\nnewgame game=ur seats=2 seat=0 options=-\ngo id=1 seat=0 legal={} obs={{}}\n",
            legal.join(",")
        )
        .into_bytes();
        input.extend_from_slice(b"go id=2 seat=0 legal=\xff,a obs={}\n");
        input.extend_from_slice(b"go id=3 seat=0 legal=b,c obs={}");
        // A 16-byte buffer splits nearly every line.
        let reader = io::BufReader::with_capacity(16, input.as_slice());
        let mut out = Vec::new();
        serve(&mut crate::FirstBot, "me", reader, &mut out).unwrap();
        let out = String::from_utf8(out).unwrap();
        let replies: Vec<&str> = out.lines().filter(|l| l.starts_with("move")).collect();
        assert_eq!(replies, ["move id=1 move=m0", "move id=3 move=b"], "{out}");
    }
}
