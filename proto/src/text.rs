//! The text encoding: one message per line, a command word, then `key=value`
//! fields. A value with spaces or quotes is written in double quotes with `\"` and
//! `\\` escapes. The `obs` field of `go` holds JSON and runs to the end of the line;
//! `info` takes the rest of its line as free text.
//!
//! ```
//! use proto::{FromBot, ToBot};
//! let go = ToBot::Go {
//!     id: 7,
//!     seat: 0,
//!     time_ms: Some(9_500),
//!     inc_ms: Some(100),
//!     movetime_ms: None,
//!     legal: vec!["swallow:1".into(), "gamble".into()],
//!     obs: r#"{"roll":2}"#.into(),
//! };
//! let line = go.to_string();
//! assert_eq!(line, r#"go id=7 seat=0 time=9500 inc=100 legal=swallow:1,gamble obs={"roll":2}"#);
//! assert_eq!(ToBot::parse(&line).unwrap(), go);
//! assert_eq!(FromBot::parse("move id=7 move=gamble").unwrap(), FromBot::Move { id: 7, mv: "gamble".into() });
//! ```

use std::fmt;

/// A line that is not a valid message.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParseError {
    /// Nothing but white space.
    #[error("empty line")]
    Empty,
    /// A command word this side does not know.
    #[error("unknown command {0:?}")]
    UnknownCommand(String),
    /// A bot line that starts with no command of the protocol: most often a debug
    /// print on stdout.
    #[error(
        "unknown command {0:?}: a bot's stdout carries protocol lines only; write debug output to stderr (or send it as `info`)"
    )]
    NotFromBot(String),
    /// A word that is not `key=value`.
    #[error("{0:?} is not key=value")]
    NotAField(String),
    /// A quoted value without its closing quote.
    #[error("unterminated quoted value")]
    Unterminated,
    /// A field the message needs.
    #[error("{command} lacks the field {field}")]
    Missing {
        /// The command.
        command: &'static str,
        /// The field.
        field: &'static str,
    },
    /// A field the message does not have (bots' output is read strictly).
    #[error("{command} has no field {field:?}")]
    UnknownField {
        /// The command.
        command: &'static str,
        /// The field.
        field: String,
    },
    /// A field given twice.
    #[error("field {0:?} given twice")]
    Duplicate(String),
    /// A value of the wrong form.
    #[error("{field}={value:?} is invalid: {expected}")]
    BadValue {
        /// The field.
        field: &'static str,
        /// The value.
        value: String,
        /// What was expected.
        expected: &'static str,
    },
}

/// Kinds of bot option, as in UCI.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OptionType {
    /// An integer within bounds.
    Spin {
        /// Default.
        default: i64,
        /// Smallest value.
        min: i64,
        /// Largest value.
        max: i64,
    },
    /// A boolean.
    Check {
        /// Default.
        default: bool,
    },
    /// One of a list of words.
    Combo {
        /// Default.
        default: String,
        /// Allowed values.
        values: Vec<String>,
    },
    /// Free text.
    Text {
        /// Default.
        default: String,
    },
}

/// A bot's declaration of an option it understands.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionDecl {
    /// Its name.
    pub name: String,
    /// Its kind and default.
    pub kind: OptionType,
}

impl OptionDecl {
    /// Checks a value for this option.
    ///
    /// # Errors
    /// A message naming what the option takes.
    pub fn check(&self, value: &str) -> Result<(), String> {
        let ok = match &self.kind {
            OptionType::Spin { min, max, .. } => {
                value.parse::<i64>().is_ok_and(|v| (*min..=*max).contains(&v))
            }
            OptionType::Check { .. } => value == "true" || value == "false",
            OptionType::Combo { values, .. } => values.iter().any(|v| v == value),
            OptionType::Text { .. } => true,
        };
        if ok {
            return Ok(());
        }
        Err(match &self.kind {
            OptionType::Spin { min, max, .. } => {
                format!("option {} takes a whole number {min}..{max}", self.name)
            }
            OptionType::Check { .. } => format!("option {} takes true or false", self.name),
            OptionType::Combo { values, .. } => {
                format!("option {} takes one of {}", self.name, values.join("|"))
            }
            OptionType::Text { .. } => unreachable!("text options take anything"),
        })
    }
}

/// Messages from the referee to a bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ToBot {
    /// `astragal version=1`: start of the handshake.
    Hello {
        /// Protocol version the referee speaks.
        version: u32,
    },
    /// `setoption name=N value=V`.
    SetOption {
        /// Option name.
        name: String,
        /// Value.
        value: String,
    },
    /// `isready`: answer `readyok` as soon as possible.
    IsReady,
    /// `newgame game=ur seats=2 seat=0 options=k=v,k=v salt=N`.
    NewGame {
        /// Game id.
        game: String,
        /// Number of seats.
        seats: usize,
        /// This bot's seat.
        seat: usize,
        /// Game options, `key=value` each.
        options: Vec<String>,
        /// A value for the bot's own randomness this game: different for every
        /// game and seat, the same when a game is played again, and telling
        /// nothing of the dice (older referees do not send it).
        salt: Option<u64>,
    },
    /// `go id=.. seat=.. [time=ms inc=ms] [movetime=ms] legal=a,b obs=JSON`.
    Go {
        /// Request id, to echo in the reply.
        id: u64,
        /// The seat that must decide.
        seat: usize,
        /// Time left on this bot's clock.
        time_ms: Option<u64>,
        /// Increment added after each move.
        inc_ms: Option<u64>,
        /// Fixed time for this move.
        movetime_ms: Option<u64>,
        /// Legal moves, in notation.
        legal: Vec<String>,
        /// The seat's observation (compact JSON).
        obs: String,
    },
    /// `played seat=S move=M`: another seat's public move.
    Played {
        /// Who moved.
        seat: usize,
        /// The move.
        mv: String,
    },
    /// `gameover ranks=1,2 scores=35,15 reason=normal [detail=".."]`.
    GameOver {
        /// Place of each seat, 1 = first.
        ranks: Vec<u8>,
        /// Score of each seat.
        scores: Vec<i64>,
        /// `normal`, `cap` or `forfeit`.
        reason: String,
        /// What happened, for a forfeit.
        detail: Option<String>,
    },
    /// `quit`: exit now.
    Quit,
}

/// Messages from a bot to the referee.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FromBot {
    /// `id name=.. author=..` (either field may come on its own line).
    Id {
        /// Bot name.
        name: Option<String>,
        /// Author.
        author: Option<String>,
    },
    /// `option name=.. type=spin|check|combo|string default=.. [min= max=] [values=a,b]`.
    Option(OptionDecl),
    /// `astragalok version=1`: end of the handshake.
    HelloOk {
        /// Protocol version the bot speaks.
        version: u32,
    },
    /// `readyok`.
    ReadyOk,
    /// `move id=N move=M`.
    Move {
        /// The request id answered.
        id: u64,
        /// The move.
        mv: String,
    },
    /// `info <free text>`: logged, never scored.
    Info(String),
}

/// Whether a value must be quoted.
fn needs_quotes(v: &str) -> bool {
    v.is_empty() || v.chars().any(|c| c.is_whitespace() || c == '"' || c == '\\')
}

fn quoted(v: &str) -> String {
    let mut s = String::with_capacity(v.len() + 2);
    push_quoted(&mut s, v);
    s
}

/// Appends `v` as a field value: as it is when it can be, else quoted.
fn push_quoted(out: &mut String, v: &str) {
    if !needs_quotes(v) {
        out.push_str(v);
        return;
    }
    out.push('"');
    for c in v.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' | '\r' => out.push(' '), // a line is one message
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Appends an unsigned number.
fn push_num(out: &mut String, n: impl itoa::Integer) {
    out.push_str(itoa::Buffer::new().format(n));
}

fn list<T: fmt::Display>(items: &[T]) -> String {
    if items.is_empty() {
        "-".to_owned()
    } else {
        items
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join(",")
    }
}

/// Writes a `go` line from borrowed parts (no copy of the legal moves or the
/// observation); `legal` is the moves joined by commas. Same text as
/// [`ToBot::Go`]'s `Display`.
#[allow(clippy::too_many_arguments)]
pub fn write_go(
    out: &mut String,
    id: u64,
    seat: usize,
    time_ms: Option<u64>,
    inc_ms: Option<u64>,
    movetime_ms: Option<u64>,
    legal: &str,
    obs: &str,
) {
    write_go_head(out, id, seat, time_ms, inc_ms, movetime_ms);
    out.push_str(" legal=");
    out.push_str(if legal.is_empty() { "-" } else { legal });
    out.push_str(" obs=");
    out.push_str(obs);
}

/// Writes the start of a `go` line, up to (not including) ` legal=`: the referee's
/// hot path then writes the moves and the observation straight from the game
/// (` legal=` + moves, or `-` for none, then ` obs=` + JSON), as [`write_go`] does.
pub fn write_go_head(
    out: &mut String,
    id: u64,
    seat: usize,
    time_ms: Option<u64>,
    inc_ms: Option<u64>,
    movetime_ms: Option<u64>,
) {
    // Written piece by piece, without the formatting machinery: one per decision.
    out.push_str("go id=");
    push_num(out, id);
    out.push_str(" seat=");
    push_num(out, seat);
    for (key, value) in [
        (" time=", time_ms),
        (" inc=", inc_ms),
        (" movetime=", movetime_ms),
    ] {
        if let Some(v) = value {
            out.push_str(key);
            push_num(out, v);
        }
    }
}

/// Appends a `played` event (the text of [`ToBot::Played`]) to `out`.
pub fn write_played(out: &mut String, seat: usize, mv: &str) {
    out.push_str("played seat=");
    push_num(out, seat);
    out.push_str(" move=");
    push_quoted(out, mv);
}

/// Appends a `move` reply (the text of [`FromBot::Move`]) to `out`.
pub fn write_move_reply(out: &mut String, id: u64, mv: &str) {
    out.push_str("move id=");
    push_num(out, id);
    out.push_str(" move=");
    push_quoted(out, mv);
}

/// A `go` request read without copying: the legal moves and the observation are
/// slices of the line. What a bot's hot loop wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GoRef<'a> {
    /// Request id.
    pub id: u64,
    /// Deciding seat.
    pub seat: usize,
    /// Clock left.
    pub time_ms: Option<u64>,
    /// Increment.
    pub inc_ms: Option<u64>,
    /// Fixed time for this move.
    pub movetime_ms: Option<u64>,
    /// The legal moves, joined by commas.
    pub legal: &'a str,
    /// The observation (JSON).
    pub obs: &'a str,
}

impl<'a> GoRef<'a> {
    /// Reads a `go` line (leniently, as bots do); `None` if it is not one.
    ///
    /// One pass over the line, borrowing everything: the fields before `obs=` are
    /// words separated by spaces or tabs (the legal moves are often a kilobyte),
    /// and the first word that starts with `obs=` takes the rest of the line.
    pub fn parse(line: &'a str) -> Option<GoRef<'a>> {
        let mut rest = line.trim_start().strip_prefix("go")?;
        if !rest.starts_with(char::is_whitespace) {
            return None;
        }
        let mut go = GoRef {
            id: 0,
            seat: 0,
            time_ms: None,
            inc_ms: None,
            movetime_ms: None,
            legal: "",
            obs: "",
        };
        let mut have_id = false;
        loop {
            rest = rest.trim_start_matches([' ', '\t']);
            if let Some(obs) = rest.strip_prefix("obs=") {
                go.obs = obs.trim_end();
                return have_id.then_some(go);
            }
            if rest.is_empty() {
                return None; // no observation
            }
            // Both separators are ASCII, so `end` is on a character boundary.
            let end = memchr::memchr2(b' ', b'\t', rest.as_bytes()).unwrap_or(rest.len());
            let (word, after) = rest.split_at(end);
            rest = after;
            let Some((k, v)) = word.split_once('=') else {
                continue;
            };
            match k {
                "id" => {
                    go.id = v.parse().ok()?;
                    have_id = true;
                }
                "seat" => go.seat = v.parse().ok()?,
                "time" => go.time_ms = v.parse().ok(),
                "inc" => go.inc_ms = v.parse().ok(),
                "movetime" => go.movetime_ms = v.parse().ok(),
                "legal" => go.legal = if v == "-" { "" } else { v },
                _ => {}
            }
        }
    }

    /// The legal moves, one by one.
    pub fn legal_moves(&self) -> impl Iterator<Item = &'a str> + 'a {
        // A byte loop: moves are a few bytes each, too short for a vectorised search
        // to pay for starting (measured, it was the bot's largest cost), and
        // `split(',')` goes through the same search.
        let mut rest = Some(self.legal);
        std::iter::from_fn(move || {
            loop {
                let text = rest?;
                let (mv, after) = match text.bytes().position(|b| b == b',') {
                    // A comma is ASCII, so both sides are character boundaries.
                    Some(i) => (&text[..i], Some(&text[i + 1..])),
                    None => (text, None),
                };
                rest = after;
                if !mv.is_empty() {
                    return Some(mv);
                }
            }
        })
    }
}

impl fmt::Display for ToBot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ToBot::Hello { version } => write!(f, "astragal version={version}"),
            ToBot::SetOption { name, value } => {
                write!(f, "setoption name={} value={}", quoted(name), quoted(value))
            }
            ToBot::IsReady => f.write_str("isready"),
            ToBot::NewGame {
                game,
                seats,
                seat,
                options,
                salt,
            } => {
                write!(
                    f,
                    "newgame game={} seats={seats} seat={seat} options={}",
                    quoted(game),
                    list(options)
                )?;
                match salt {
                    Some(salt) => write!(f, " salt={salt}"),
                    None => Ok(()),
                }
            }
            ToBot::Go {
                id,
                seat,
                time_ms,
                inc_ms,
                movetime_ms,
                legal,
                obs,
            } => {
                write!(f, "go id={id} seat={seat}")?;
                if let Some(t) = time_ms {
                    write!(f, " time={t}")?;
                }
                if let Some(t) = inc_ms {
                    write!(f, " inc={t}")?;
                }
                if let Some(t) = movetime_ms {
                    write!(f, " movetime={t}")?;
                }
                write!(f, " legal={} obs={obs}", list(legal))
            }
            ToBot::Played { seat, mv } => {
                let mut line = String::with_capacity(mv.len() + 24);
                write_played(&mut line, *seat, mv);
                f.write_str(&line)
            }
            ToBot::GameOver {
                ranks,
                scores,
                reason,
                detail,
            } => {
                write!(
                    f,
                    "gameover ranks={} scores={} reason={}",
                    list(ranks),
                    list(scores),
                    quoted(reason)
                )?;
                if let Some(d) = detail {
                    write!(f, " detail={}", quoted(d))?;
                }
                Ok(())
            }
            ToBot::Quit => f.write_str("quit"),
        }
    }
}

impl fmt::Display for FromBot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FromBot::Id { name, author } => {
                f.write_str("id")?;
                if let Some(n) = name {
                    write!(f, " name={}", quoted(n))?;
                }
                if let Some(a) = author {
                    write!(f, " author={}", quoted(a))?;
                }
                Ok(())
            }
            FromBot::Option(decl) => {
                write!(f, "option name={}", quoted(&decl.name))?;
                match &decl.kind {
                    OptionType::Spin { default, min, max } => {
                        write!(f, " type=spin default={default} min={min} max={max}")
                    }
                    OptionType::Check { default } => write!(f, " type=check default={default}"),
                    OptionType::Combo { default, values } => {
                        write!(
                            f,
                            " type=combo default={} values={}",
                            quoted(default),
                            list(values)
                        )
                    }
                    OptionType::Text { default } => write!(f, " type=string default={}", quoted(default)),
                }
            }
            FromBot::HelloOk { version } => write!(f, "astragalok version={version}"),
            FromBot::ReadyOk => f.write_str("readyok"),
            FromBot::Move { id, mv } => {
                let mut line = String::with_capacity(mv.len() + 24);
                write_move_reply(&mut line, *id, mv);
                f.write_str(&line)
            }
            FromBot::Info(text) => write!(f, "info {}", text.replace(['\n', '\r'], " ")),
        }
    }
}

/// The fields of one line, after the command word. Values borrow from the line
/// unless they were quoted (a line is parsed without a map and with few copies:
/// bots parse one per request).
struct Fields<'a> {
    command: &'static str,
    items: Vec<(&'a str, std::borrow::Cow<'a, str>)>,
    /// The rest of the line after the tail key (`obs=`), if present.
    tail: Option<&'a str>,
    strict: bool,
}

impl<'a> Fields<'a> {
    fn parse(
        command: &'static str,
        mut rest: &'a str,
        strict: bool,
        tail_key: Option<&str>,
    ) -> Result<Self, ParseError> {
        let mut items: Vec<(&'a str, std::borrow::Cow<'a, str>)> = Vec::with_capacity(8);
        let mut tail = None;
        loop {
            rest = rest.trim_start_matches(is_field_space);
            if rest.is_empty() {
                break;
            }
            let space = rest.find(is_field_space).unwrap_or(rest.len());
            let Some(eq) = rest[..space].find('=').filter(|&e| e > 0) else {
                let word = &rest[..space];
                if strict {
                    return Err(ParseError::NotAField(word.to_owned()));
                }
                rest = &rest[space..]; // lenient: skip words we do not understand
                continue;
            };
            let key = &rest[..eq];
            let after = &rest[eq + 1..];
            if Some(key) == tail_key {
                tail = Some(after);
                break;
            }
            let (value, next): (std::borrow::Cow<'a, str>, &'a str) = if let Some(q) = after.strip_prefix('"')
            {
                let mut value = String::new();
                let mut chars = q.char_indices();
                let mut end = None;
                while let Some((i, c)) = chars.next() {
                    match c {
                        '\\' => match chars.next() {
                            Some((_, e)) => value.push(e),
                            None => return Err(ParseError::Unterminated),
                        },
                        '"' => {
                            end = Some(i + 1);
                            break;
                        }
                        c => value.push(c),
                    }
                }
                let end = end.ok_or(ParseError::Unterminated)?;
                (value.into(), &q[end..])
            } else {
                let stop = after.find(is_field_space).unwrap_or(after.len());
                (after[..stop].into(), &after[stop..])
            };
            if let Some(slot) = items.iter_mut().find(|(k, _)| *k == key) {
                if strict {
                    return Err(ParseError::Duplicate(key.to_owned()));
                }
                slot.1 = value;
            } else {
                items.push((key, value));
            }
            rest = next;
        }
        Ok(Fields {
            command,
            items,
            tail,
            strict,
        })
    }

    fn take_opt(&mut self, field: &'static str) -> Option<String> {
        let i = self.items.iter().position(|(k, _)| *k == field)?;
        Some(self.items.swap_remove(i).1.into_owned())
    }

    fn take(&mut self, field: &'static str) -> Result<String, ParseError> {
        self.take_opt(field).ok_or(ParseError::Missing {
            command: self.command,
            field,
        })
    }

    /// A number; from a bot (strict), only in canonical decimal: `7`, never `07`
    /// or `+7`, so that one value has one text.
    fn num<T: std::str::FromStr + fmt::Display>(&mut self, field: &'static str) -> Result<T, ParseError> {
        let v = self.take(field)?;
        match v.parse::<T>() {
            Ok(n) if !self.strict || n.to_string() == v => Ok(n),
            _ => Err(ParseError::BadValue {
                field,
                value: v,
                expected: if self.strict {
                    "a whole number in canonical decimal"
                } else {
                    "a whole number"
                },
            }),
        }
    }

    fn num_opt<T: std::str::FromStr>(&mut self, field: &'static str) -> Result<Option<T>, ParseError> {
        match self.take_opt(field) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| ParseError::BadValue {
                field,
                value: v,
                expected: "a whole number",
            }),
        }
    }

    fn finish(self) -> Result<(), ParseError> {
        match self.items.into_iter().next() {
            Some((field, _)) if self.strict => Err(ParseError::UnknownField {
                command: self.command,
                field: field.to_owned(),
            }),
            _ => Ok(()),
        }
    }
}

fn split_list(s: &str) -> Vec<String> {
    if s == "-" || s.is_empty() {
        Vec::new()
    } else {
        s.split(',').map(str::to_owned).collect()
    }
}

fn num_list<T: std::str::FromStr>(field: &'static str, s: &str) -> Result<Vec<T>, ParseError> {
    split_list(s)
        .into_iter()
        .map(|v| {
            v.parse().map_err(|_| ParseError::BadValue {
                field,
                value: v,
                expected: "numbers separated by commas",
            })
        })
        .collect()
}

fn split_command(line: &str) -> Result<(&str, &str), ParseError> {
    let line = line
        .trim_end_matches(['\n', '\r'])
        .trim_start_matches(is_field_space);
    if line.trim().is_empty() {
        return Err(ParseError::Empty);
    }
    Ok(line.split_once(is_field_space).unwrap_or((line, "")))
}

/// What separates a line's command and fields: a space (or a tab, leniently),
/// and nothing else. A carriage return, a no-break space or U+0085 inside a line
/// belongs to the word it stands in, so `move\rid=3` is no `move` line.
fn is_field_space(c: char) -> bool {
    c == ' ' || c == '\t'
}

impl ToBot {
    /// Reads a referee line, as a bot does: unknown fields are ignored, and an
    /// unknown command is an error the bot should ignore (forward compatibility).
    ///
    /// # Errors
    /// The line is empty, has an unknown command, or lacks a field.
    pub fn parse(line: &str) -> Result<ToBot, ParseError> {
        let (cmd, rest) = split_command(line)?;
        let fields = |command, tail| Fields::parse(command, rest, false, tail);
        Ok(match cmd {
            "astragal" => {
                let mut f = fields("astragal", None)?;
                ToBot::Hello {
                    version: f.num("version")?,
                }
            }
            "setoption" => {
                let mut f = fields("setoption", None)?;
                ToBot::SetOption {
                    name: f.take("name")?,
                    value: f.take("value")?,
                }
            }
            "isready" => ToBot::IsReady,
            "newgame" => {
                let mut f = fields("newgame", None)?;
                ToBot::NewGame {
                    game: f.take("game")?,
                    seats: f.num("seats")?,
                    seat: f.num("seat")?,
                    options: split_list(&f.take_opt("options").unwrap_or_default()),
                    salt: f.num_opt("salt")?,
                }
            }
            "go" => {
                let mut f = fields("go", Some("obs"))?;
                ToBot::Go {
                    id: f.num("id")?,
                    seat: f.num("seat")?,
                    time_ms: f.num_opt("time")?,
                    inc_ms: f.num_opt("inc")?,
                    movetime_ms: f.num_opt("movetime")?,
                    legal: split_list(&f.take("legal")?),
                    obs: f
                        .tail
                        .ok_or(ParseError::Missing {
                            command: "go",
                            field: "obs",
                        })?
                        .trim_end()
                        .to_owned(),
                }
            }
            "played" => {
                let mut f = fields("played", None)?;
                ToBot::Played {
                    seat: f.num("seat")?,
                    mv: f.take("move")?,
                }
            }
            "gameover" => {
                let mut f = fields("gameover", None)?;
                ToBot::GameOver {
                    ranks: num_list("ranks", &f.take("ranks")?)?,
                    scores: num_list("scores", &f.take("scores")?)?,
                    reason: f.take("reason")?,
                    detail: f.take_opt("detail"),
                }
            }
            "quit" => ToBot::Quit,
            other => return Err(ParseError::UnknownCommand(other.to_owned())),
        })
    }
}

/// `move id=N move=M` exactly as [`FromBot`]'s `Display` writes an unquoted move:
/// the line of nearly every reply, read without the general field parser. `None`
/// for anything else (spacing, quotes, other fields), which the general parser then
/// reads or refuses as before.
fn plain_move_reply(line: &str) -> Option<FromBot> {
    let (id, mv) = line.strip_prefix("move id=")?.split_once(" move=")?;
    if mv.is_empty()
        || needs_quotes(mv)
        || !id.bytes().all(|b| b.is_ascii_digit())
        || (id.len() > 1 && id.starts_with('0'))
    {
        return None;
    }
    Some(FromBot::Move {
        id: id.parse().ok()?,
        mv: mv.to_owned(),
    })
}

impl FromBot {
    /// Reads a bot line, strictly: unknown commands and fields are errors.
    ///
    /// # Errors
    /// Any line that is not exactly a bot message.
    pub fn parse(line: &str) -> Result<FromBot, ParseError> {
        match plain_move_reply(line) {
            Some(reply) => Ok(reply),
            None => FromBot::parse_fields(line),
        }
    }

    /// [`FromBot::parse`] through the general field reader.
    fn parse_fields(line: &str) -> Result<FromBot, ParseError> {
        let (cmd, rest) = split_command(line)?;
        let fields = |command| Fields::parse(command, rest, true, None);
        let msg = match cmd {
            "info" => return Ok(FromBot::Info(rest.trim().to_owned())),
            "readyok" => {
                fields("readyok")?.finish()?;
                FromBot::ReadyOk
            }
            "id" => {
                let mut f = fields("id")?;
                let (name, author) = (f.take_opt("name"), f.take_opt("author"));
                f.finish()?;
                if name.is_none() && author.is_none() {
                    return Err(ParseError::Missing {
                        command: "id",
                        field: "name",
                    });
                }
                FromBot::Id { name, author }
            }
            "astragalok" => {
                let mut f = fields("astragalok")?;
                let version = f.num("version")?;
                f.finish()?;
                FromBot::HelloOk { version }
            }
            "move" => {
                let mut f = fields("move")?;
                let (id, mv) = (f.num("id")?, f.take("move")?);
                f.finish()?;
                FromBot::Move { id, mv }
            }
            "option" => {
                let mut f = fields("option")?;
                let name = f.take("name")?;
                let ty = f.take("type")?;
                let kind = match ty.as_str() {
                    "spin" => OptionType::Spin {
                        default: f.num("default")?,
                        min: f.num("min")?,
                        max: f.num("max")?,
                    },
                    "check" => {
                        let d = f.take("default")?;
                        let default = match d.as_str() {
                            "true" => true,
                            "false" => false,
                            _ => {
                                return Err(ParseError::BadValue {
                                    field: "default",
                                    value: d,
                                    expected: "true or false",
                                });
                            }
                        };
                        OptionType::Check { default }
                    }
                    "combo" => OptionType::Combo {
                        default: f.take("default")?,
                        values: split_list(&f.take("values")?),
                    },
                    "string" => OptionType::Text {
                        default: f.take_opt("default").unwrap_or_default(),
                    },
                    _ => {
                        return Err(ParseError::BadValue {
                            field: "type",
                            value: ty,
                            expected: "spin, check, combo or string",
                        });
                    }
                };
                f.finish()?;
                FromBot::Option(OptionDecl { name, kind })
            }
            other => return Err(ParseError::NotFromBot(other.to_owned())),
        };
        Ok(msg)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use engine::GameRng;

    fn to_bot_samples() -> Vec<ToBot> {
        vec![
            ToBot::Hello { version: 1 },
            ToBot::SetOption {
                name: "iterations".into(),
                value: "500".into(),
            },
            ToBot::SetOption {
                name: "book".into(),
                value: "a path/with \"quotes\"".into(),
            },
            ToBot::IsReady,
            ToBot::NewGame {
                game: "ur".into(),
                seats: 2,
                seat: 1,
                options: vec!["rules=tablet".into(), "max_turns=1000".into()],
                salt: Some(u64::MAX),
            },
            ToBot::NewGame {
                game: "spartan".into(),
                seats: 2,
                seat: 0,
                options: vec![],
                salt: None,
            },
            ToBot::Go {
                id: 3,
                seat: 1,
                time_ms: None,
                inc_ms: None,
                movetime_ms: Some(100),
                legal: vec!["d4=3".into(), "c3-f6".into()],
                obs: r#"{"a": [1, 2], "b": "x y"}"#.into(),
            },
            ToBot::Played {
                seat: 0,
                mv: "reroll:236".into(),
            },
            ToBot::Played {
                seat: 2,
                mv: "a move \"with\" spaces".into(),
            },
            ToBot::GameOver {
                ranks: vec![1, 2],
                scores: vec![35, -2],
                reason: "forfeit".into(),
                detail: Some("seat 1: timeout after 100 ms".into()),
            },
            ToBot::GameOver {
                ranks: vec![1, 1],
                scores: vec![0, 0],
                reason: "normal".into(),
                detail: None,
            },
            ToBot::Quit,
        ]
    }

    fn from_bot_samples() -> Vec<FromBot> {
        vec![
            FromBot::Id {
                name: Some("My Bot".into()),
                author: Some("A. Author".into()),
            },
            FromBot::Id {
                name: Some("x".into()),
                author: None,
            },
            FromBot::Option(OptionDecl {
                name: "iterations".into(),
                kind: OptionType::Spin {
                    default: 100,
                    min: 1,
                    max: 100_000,
                },
            }),
            FromBot::Option(OptionDecl {
                name: "fast".into(),
                kind: OptionType::Check { default: true },
            }),
            FromBot::Option(OptionDecl {
                name: "style".into(),
                kind: OptionType::Combo {
                    default: "calm".into(),
                    values: vec!["calm".into(), "wild".into()],
                },
            }),
            FromBot::Option(OptionDecl {
                name: "book".into(),
                kind: OptionType::Text {
                    default: String::new(),
                },
            }),
            FromBot::HelloOk { version: 1 },
            FromBot::ReadyOk,
            FromBot::Move {
                id: 42,
                mv: "swallow:3".into(),
            },
            FromBot::Move {
                id: 7,
                mv: "two words".into(),
            },
            FromBot::Info("depth 3 score +12".into()),
        ]
    }

    #[test]
    fn every_message_round_trips() {
        for m in to_bot_samples() {
            assert_eq!(ToBot::parse(&m.to_string()), Ok(m.clone()), "{m}");
        }
        for m in from_bot_samples() {
            assert_eq!(FromBot::parse(&m.to_string()), Ok(m.clone()), "{m}");
        }
    }

    #[test]
    fn fields_are_separated_by_spaces_and_by_no_other_white_space() {
        // A space or a tab separates; a carriage return, a no-break space, U+0085
        // or U+2003 is part of the word it stands in.
        assert!(FromBot::parse("move id=1 move=a").is_ok());
        assert!(FromBot::parse("move\tid=1\tmove=a").is_ok());
        for line in [
            "move\rid=1 move=a",
            "move id=1\u{a0}move=a",
            "move\u{85}id=1 move=a",
            "move id=1\u{2003}move=a",
            "astragalok\u{a0}version=1",
        ] {
            assert!(FromBot::parse(line).is_err(), "{line:?} was read");
        }
    }

    #[test]
    fn bots_ignore_what_they_do_not_know_but_the_referee_does_not() {
        let go = ToBot::parse("go id=1 seat=0 colour=blue legal=a,b extra obs={}").unwrap();
        assert!(matches!(go, ToBot::Go { id: 1, .. }));
        assert!(matches!(
            ToBot::parse("ponderhit"),
            Err(ParseError::UnknownCommand(_))
        ));
        assert!(matches!(
            FromBot::parse("move id=1 move=a colour=blue"),
            Err(ParseError::UnknownField { .. })
        ));
        // A debug print on stdout: the error says where debug output goes.
        let e = FromBot::parse("bestmove a").unwrap_err();
        assert!(matches!(e, ParseError::NotFromBot(_)));
        assert!(e.to_string().contains("write debug output to stderr"), "{e}");
        assert!(matches!(
            FromBot::parse("move id=x move=a"),
            Err(ParseError::BadValue { .. })
        ));
        assert!(matches!(
            FromBot::parse("move move=a"),
            Err(ParseError::Missing { field: "id", .. })
        ));
        assert!(matches!(
            FromBot::parse("move id=1 id=2 move=a"),
            Err(ParseError::Duplicate(_))
        ));
        assert!(matches!(
            FromBot::parse("move id=1 move=\"a"),
            Err(ParseError::Unterminated)
        ));
        assert!(matches!(FromBot::parse("   "), Err(ParseError::Empty)));
        assert!(matches!(
            FromBot::parse("readyok now"),
            Err(ParseError::NotAField(_))
        ));
    }

    #[test]
    fn go_reads_borrowed_the_same_as_owned() {
        for m in to_bot_samples() {
            if let ToBot::Go {
                id,
                seat,
                time_ms,
                inc_ms,
                movetime_ms,
                legal,
                obs,
            } = &m
            {
                let line = m.to_string();
                let g = GoRef::parse(&line).unwrap();
                assert_eq!(
                    (g.id, g.seat, g.time_ms, g.inc_ms, g.movetime_ms),
                    (*id, *seat, *time_ms, *inc_ms, *movetime_ms)
                );
                assert_eq!(
                    g.legal_moves().collect::<Vec<_>>(),
                    legal.iter().map(String::as_str).collect::<Vec<_>>()
                );
                assert_eq!(g.obs, obs);
            }
        }
        assert!(GoRef::parse("gone id=1 legal=a obs={}").is_none());
        assert!(GoRef::parse("go seat=0 legal=a obs={}").is_none(), "no id");
        assert!(GoRef::parse("go id=1 seat=0 legal=a").is_none(), "no observation");
        // Lenient spacing, unknown fields and bare words are read past.
        let g = GoRef::parse("  go\tid=3  seat=1 colour=blue extra\tlegal=a,b   obs={\"x\": \"obs=1\"}  ")
            .unwrap();
        assert_eq!(
            (g.id, g.seat, g.legal, g.obs),
            (3, 1, "a,b", "{\"x\": \"obs=1\"}")
        );
        assert_eq!(
            GoRef::parse("go id=3 legal=- obs={}").map(|g| g.legal_moves().count()),
            Some(0)
        );
        assert!(GoRef::parse("go id=x legal=a obs={}").is_none(), "a bad id");
    }

    #[test]
    fn legal_moves_split_on_commas_and_skip_empty_ones() {
        let moves = |legal: &str| -> Vec<String> {
            let line = format!("go id=1 legal={legal} obs={{}}");
            GoRef::parse(&line)
                .unwrap()
                .legal_moves()
                .map(str::to_owned)
                .collect()
        };
        assert_eq!(moves("a"), ["a"]);
        assert_eq!(moves("a1=2,b3-c4"), ["a1=2", "b3-c4"]);
        assert_eq!(moves(",a,,b,"), ["a", "b"]);
        assert_eq!(moves(",,"), Vec::<String>::new());
        assert_eq!(moves("é,ü:1"), ["é", "ü:1"]);
    }

    /// The fast path for plain `move` replies gives what the general reader
    /// gives, on the lines it takes and the near misses it must leave alone.
    #[test]
    fn plain_move_replies_read_as_the_general_reader_reads_them() {
        let lines = [
            "move id=5 move=c3=4",
            "move id=0 move=a",
            "move id=007 move=a",
            "move id=18446744073709551615 move=a",
            "move id=18446744073709551616 move=a",
            "move id=+5 move=a",
            "move id=-5 move=a",
            "move id= move=a",
            "move id=5 move=",
            "move id=5 move=a b",
            "move id=5 move=a colour=blue",
            "move id=5 move=\"a b\"",
            "move id=5 move=a\r",
            "move id=5 move=a\t",
            "move id=5  move=a",
            "move id=5 move=é",
            "move id=5 move=a move=b",
            "move id=5 id=6 move=a",
            "move  id=5 move=a",
            " move id=5 move=a",
            "move id=5 move=a\\b",
            "move id=5 move=x move=y",
        ];
        for line in lines {
            assert_eq!(FromBot::parse(line), FromBot::parse_fields(line), "{line:?}");
        }
        let mut rng = GameRng::from_seed(78);
        let mut pick = |chars: &str, most: u32| -> String {
            let chars: Vec<char> = chars.chars().collect();
            (0..rng.below(most + 1))
                .map(|_| chars[rng.below(chars.len() as u32) as usize])
                .collect()
        };
        let mut fast = 0;
        for _ in 0..20_000 {
            let id = pick("0123456789", 3) + &pick("0123456789+- a", 1);
            let gap = [" move=", " move=", "  move=", "\tmove=", " mov="][id.len() % 5];
            let mv = pick("abc=é \"\\\r\t", 5);
            let line = format!("move id={id}{gap}{mv}");
            fast += usize::from(plain_move_reply(&line).is_some());
            assert_eq!(FromBot::parse(&line), FromBot::parse_fields(&line), "{line:?}");
        }
        assert!(fast > 100, "the random lines reached the fast path {fast} times");
    }

    #[test]
    fn carriage_returns_are_tolerated() {
        assert_eq!(FromBot::parse("readyok\r\n"), Ok(FromBot::ReadyOk));
        assert_eq!(
            FromBot::parse("move id=2 move=gamble\r"),
            Ok(FromBot::Move {
                id: 2,
                mv: "gamble".into()
            })
        );
    }

    /// No input makes the parsers panic (the fuzz target in `proto/fuzz` does the
    /// same with coverage guidance; this runs in every `cargo test`).
    #[test]
    fn random_lines_never_panic() {
        let mut rng = GameRng::from_seed(77);
        let alphabet: Vec<char> = "moveidinfo=\" \\,-:astragalok0123456789readyoption\u{e9}\t"
            .chars()
            .collect();
        for _ in 0..20_000 {
            let len = rng.below(40) as usize;
            let line: String = (0..len)
                .map(|_| alphabet[rng.below(alphabet.len() as u32) as usize])
                .collect();
            let _ = FromBot::parse(&line);
            let _ = ToBot::parse(&line);
        }
    }
}
