//! Text that came from a bot, made safe to keep and to show.
//!
//! Bots are strangers' programs: what they say (names, `info` lines, moves quoted in
//! faults, the end of their stderr) is capped before it is kept, so that a record
//! stays small whatever a bot sends, and escaped before it is shown, so that it
//! cannot drive the host's terminal with escape sequences.

use std::borrow::Cow;
use std::fmt::Write;

/// `s` cut to at most `max` bytes at a character boundary; a cut text ends with
/// how much was cut, so nobody mistakes it for the whole.
pub fn capped(s: &str, max: usize) -> String {
    if s.len() <= max {
        return s.to_owned();
    }
    let note = format!("… ({} bytes cut)", s.len() - max);
    let mut end = max.saturating_sub(note.len());
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    let mut out = String::with_capacity(end + note.len());
    out.push_str(&s[..end]);
    out.push_str(&note);
    out
}

/// `s` with every control character (C0, DEL, C1: what drives a terminal) written
/// as a visible escape (`\e`, `\n`, `\u{9b}`...). Printable text is unchanged.
pub fn escaped(s: &str) -> Cow<'_, str> {
    if !s.chars().any(char::is_control) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` as HTML text or an attribute value: `& < > " '` escaped.
pub fn html_escaped(s: &str) -> Cow<'_, str> {
    if !s.contains(['&', '<', '>', '"', '\'']) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
            .replace('"', "&quot;")
            .replace('\'', "&#39;"),
    )
}

/// What `s` costs in a JSON record: control characters become six bytes
/// (`\u001b`), quotes and backslashes two.
pub fn json_len(s: &str) -> usize {
    s.chars()
        .map(|c| match c {
            '"' | '\\' | '\u{8}' | '\u{c}' | '\n' | '\r' | '\t' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn capped_texts_fit_and_say_so() {
        assert_eq!(capped("short", 10), "short");
        let long = "é".repeat(1000);
        let c = capped(&long, 100);
        assert!(c.len() <= 100, "{} bytes", c.len());
        assert!(c.ends_with("bytes cut)"), "{c}");
        assert!(c.starts_with("éé"));
    }

    #[test]
    fn control_characters_are_shown_not_obeyed() {
        assert!(matches!(escaped("plain text"), Cow::Borrowed(_)));
        let hostile = "\u{1b}[2J\u{1b}]0;owned\u{7}bye\u{9b}31m\r\n";
        let shown = escaped(hostile);
        assert!(!shown.chars().any(char::is_control), "{shown}");
        assert_eq!(shown, "\\e[2J\\e]0;owned\\u{7}bye\\u{9b}31m\\r\\n");
    }

    #[test]
    fn json_length_counts_escapes() {
        for s in ["abc", "a\"b\\c", "\u{1}\u{1f}x", "é\t"] {
            assert_eq!(json_len(s) + 2, serde_json::to_string(s).unwrap().len(), "{s:?}");
        }
    }
}
