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

/// Whether `c` is one a reader cannot see, or that changes how the text around it
/// is shown, by its Unicode general category: a control (`Cc`: C0, DEL, C1, what
/// drives a terminal), a format character (`Cf`: the bidi overrides and isolates
/// U+202A–U+202E and U+2066–U+2069 that reorder a line, zero-width spaces and
/// joiners, the soft hyphen, tags), a line or a paragraph separator (`Zl`, `Zp`:
/// U+2028, U+2029, which end a line where none is seen).
pub fn is_invisible(c: char) -> bool {
    use unicode_general_category::{GeneralCategory as G, get_general_category};
    if c.is_ascii() {
        return c.is_ascii_control();
    }
    matches!(
        get_general_category(c),
        G::Control | G::Format | G::LineSeparator | G::ParagraphSeparator
    )
}

/// `s` with every character a reader cannot see ([`is_invisible`]: controls,
/// format characters such as the bidi overrides, line and paragraph separators)
/// written as a visible escape (`\e`, `\n`, `\u{202e}`...). Everything else is
/// unchanged, so a line of it on a terminal shows what was sent, in the order
/// sent.
pub fn escaped(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_invisible) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{1b}' => out.push_str("\\e"),
            c if is_invisible(c) => {
                let _ = write!(out, "\\u{{{:x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `s` as [`escaped`] writes it, line by line: its line feeds stay (a log's lines
/// stay lines), every other character a reader cannot see is escaped.
pub fn escaped_lines(s: &str) -> Cow<'_, str> {
    if !s.chars().any(|c| c != '\n' && is_invisible(c)) {
        return Cow::Borrowed(s);
    }
    Cow::Owned(s.split('\n').map(escaped).collect::<Vec<_>>().join("\n"))
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

    /// Every character of the categories a reader cannot see (controls, format
    /// characters, line and paragraph separators, as the Unicode Character
    /// Database's general categories say) is escaped, and no other: checked over
    /// every character there is, against the category table (Unicode 16).
    #[test]
    fn every_invisible_character_by_category_and_no_other_is_made_visible() {
        use unicode_general_category::{GeneralCategory as G, get_general_category};
        let mut counts = std::collections::BTreeMap::new();
        for c in (0..=0x10_ffffu32).filter_map(char::from_u32) {
            let category = get_general_category(c);
            let hidden = matches!(
                category,
                G::Control | G::Format | G::LineSeparator | G::ParagraphSeparator
            );
            let text = format!("a{c}b");
            let shown = escaped(&text);
            assert_eq!(is_invisible(c), hidden, "U+{:04X} ({category:?})", c as u32);
            if hidden {
                *counts.entry(category.abbreviation()).or_insert(0) += 1;
                assert!(!shown.chars().any(is_invisible), "U+{:04X}: {shown}", c as u32);
                assert!(
                    shown.starts_with('a') && shown.ends_with('b') && shown.contains('\\'),
                    "U+{:04X}: {shown}",
                    c as u32
                );
            } else {
                assert_eq!(shown, text, "U+{:04X} ({category:?})", c as u32);
            }
        }
        // The table is the whole of each category, not a hand list: 65 controls,
        // and the format characters of Unicode 16.
        assert_eq!(counts.get("Cc"), Some(&65));
        assert_eq!((counts.get("Zl"), counts.get("Zp")), (Some(&1), Some(&1)));
        assert!(counts.get("Cf").is_some_and(|&n| n >= 160), "{counts:?}");
        // The red team's: a bidi override, an isolate, a zero-width space and a
        // line separator, each seen where it was.
        assert_eq!(
            escaped("evil\u{202e}gnp.exe\u{2066}x\u{200b}y\u{2028}z"),
            "evil\\u{202e}gnp.exe\\u{2066}x\\u{200b}y\\u{2028}z"
        );
    }

    #[test]
    fn json_length_counts_escapes() {
        for s in ["abc", "a\"b\\c", "\u{1}\u{1f}x", "é\t"] {
            assert_eq!(json_len(s) + 2, serde_json::to_string(s).unwrap().len(), "{s:?}");
        }
    }
}
