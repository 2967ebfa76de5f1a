//! Helpers for position notation: a position is a line of `key=value` fields.

use std::collections::HashMap;
use std::str::FromStr;

/// A position text that could not be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ParsePositionError {
    /// A word without `=`.
    #[error("position field {0:?} is not of the form key=value")]
    Malformed(String),
    /// A key the game's notation does not have.
    #[error("position has unknown field {0:?}")]
    UnknownField(String),
    /// A field given twice.
    #[error("position field {0:?} is given twice")]
    Duplicate(String),
    /// A field the notation needs.
    #[error("position lacks the field {0:?}")]
    Missing(&'static str),
    /// A field whose value does not parse or breaks a rule of the game.
    #[error("position field {field}={value:?} is invalid: {why}")]
    Invalid {
        /// The field.
        field: &'static str,
        /// The value given.
        value: String,
        /// What is wrong.
        why: String,
    },
    /// The fields parse but do not describe a reachable kind of state.
    #[error("inconsistent position: {0}")]
    Inconsistent(String),
    /// The text describes a state, but not as the engine writes it (a sign, a
    /// leading zero, upper-case hex, an unsorted list, fields in another order or
    /// other white space): one state has one position text.
    #[error(
        "position field {field:?} is not written as the engine writes it: {given:?}, write {canonical:?}"
    )]
    NotCanonical {
        /// The field where the text first differs from the canonical one (the
        /// field the engine writes there).
        field: String,
        /// The text given there (empty when the text ends early).
        given: String,
        /// The field as the engine writes it there (empty when the text has more).
        canonical: String,
    },
}

/// Compares a position text with the text the engine writes for the state it
/// describes: `None` when they are the same, else the refusal naming the first
/// field (in the engine's order) where they differ.
pub fn canonical_difference(given: &str, canonical: &str) -> Option<ParsePositionError> {
    if given == canonical {
        return None;
    }
    // Split on single spaces, so doubled or other white space shows as a field.
    let mut given_fields = given.split(' ');
    let mut canonical_fields = canonical.split(' ');
    loop {
        match (given_fields.next(), canonical_fields.next()) {
            (Some(g), Some(c)) if g == c => {}
            (None, None) => {
                // Equal field by field yet different: cannot happen, but never
                // accept a text that is not the canonical one.
                return Some(ParsePositionError::NotCanonical {
                    field: String::new(),
                    given: given.to_owned(),
                    canonical: canonical.to_owned(),
                });
            }
            (g, c) => {
                let field = c.or(g).unwrap_or_default();
                let key = field.split_once('=').map_or(field, |(k, _)| k);
                return Some(ParsePositionError::NotCanonical {
                    field: key.to_owned(),
                    given: g.unwrap_or_default().to_owned(),
                    canonical: c.unwrap_or_default().to_owned(),
                });
            }
        }
    }
}

/// The fields of a position text, consumed one by one.
#[derive(Debug)]
pub struct Fields<'a> {
    map: HashMap<&'a str, &'a str>,
}

impl<'a> Fields<'a> {
    /// Splits `text` into fields, allowing only the keys in `known`.
    ///
    /// # Errors
    /// A malformed, unknown or repeated field.
    pub fn parse(text: &'a str, known: &[&str]) -> Result<Fields<'a>, ParsePositionError> {
        let mut map = HashMap::new();
        for word in text.split_whitespace() {
            let (k, v) = word
                .split_once('=')
                .ok_or_else(|| ParsePositionError::Malformed(word.to_owned()))?;
            if !known.contains(&k) {
                return Err(ParsePositionError::UnknownField(k.to_owned()));
            }
            if map.insert(k, v).is_some() {
                return Err(ParsePositionError::Duplicate(k.to_owned()));
            }
        }
        Ok(Fields { map })
    }

    /// The raw text of a required field.
    ///
    /// # Errors
    /// The field is missing.
    pub fn raw(&self, key: &'static str) -> Result<&'a str, ParsePositionError> {
        self.map.get(key).copied().ok_or(ParsePositionError::Missing(key))
    }

    /// The raw text of an optional field.
    pub fn opt(&self, key: &str) -> Option<&'a str> {
        self.map.get(key).copied()
    }

    /// A required field parsed with `FromStr`.
    ///
    /// # Errors
    /// The field is missing or does not parse.
    pub fn get<T: FromStr>(&self, key: &'static str) -> Result<T, ParsePositionError>
    where
        T::Err: std::fmt::Display,
    {
        let raw = self.raw(key)?;
        parse_item(key, raw, raw)
    }

    /// A comma-separated list, each item parsed with `FromStr`.
    ///
    /// # Errors
    /// The field is missing or an item does not parse.
    pub fn list<T: FromStr>(&self, key: &'static str) -> Result<Vec<T>, ParsePositionError>
    where
        T::Err: std::fmt::Display,
    {
        let raw = self.raw(key)?;
        parse_list(key, raw)
    }
}

/// Parses a comma-separated list (an empty text is an empty list).
///
/// # Errors
/// An item does not parse.
pub fn parse_list<T: FromStr>(key: &'static str, raw: &str) -> Result<Vec<T>, ParsePositionError>
where
    T::Err: std::fmt::Display,
{
    if raw.is_empty() || raw == "-" {
        return Ok(Vec::new());
    }
    raw.split(',').map(|item| parse_item(key, raw, item)).collect()
}

/// One value of field `key` (whose whole text is `raw`), refused unless written as
/// the game writes it: a number has no sign and no leading zeros, so one state has
/// one position text.
fn parse_item<T: FromStr>(key: &'static str, raw: &str, item: &str) -> Result<T, ParsePositionError>
where
    T::Err: std::fmt::Display,
{
    if let Some(why) = non_canonical_number(item) {
        return Err(invalid(key, raw, format!("{item:?}: {why}")));
    }
    item.parse().map_err(|e: T::Err| invalid(key, raw, e))
}

/// Why `text` is not a number as the engine writes numbers, if it is not: a `+`
/// sign, `-0`, or a leading zero (`007`).
pub fn non_canonical_number(text: &str) -> Option<&'static str> {
    let digits = text.strip_prefix('-').unwrap_or(text);
    if text.starts_with('+') {
        Some("a number is written without a + sign")
    } else if digits.len() > 1 && digits.starts_with('0') && digits.as_bytes()[1].is_ascii_digit() {
        Some("a number is written without leading zeros")
    } else if text == "-0" {
        Some("zero is written 0")
    } else {
        None
    }
}

/// A natural number written as the engine writes it: ASCII digits, no sign, no
/// leading zeros.
///
/// # Errors
/// Anything else, or a value beyond `T`.
pub fn parse_natural<T: FromStr>(text: &str) -> Result<T, &'static str> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return Err("expected a number (digits only)");
    }
    if let Some(why) = non_canonical_number(text) {
        return Err(why);
    }
    text.parse().map_err(|_| "number out of range")
}

/// Builds an [`ParsePositionError::Invalid`].
pub fn invalid(field: &'static str, value: &str, why: impl std::fmt::Display) -> ParsePositionError {
    ParsePositionError::Invalid {
        field,
        value: value.to_owned(),
        why: why.to_string(),
    }
}

/// Joins items with commas (`-` for an empty list, so the field is never empty).
pub fn join<T: std::fmt::Display>(items: impl IntoIterator<Item = T>) -> String {
    let mut out = String::new();
    write_join(&mut out, items);
    out
}

/// [`join`] written at the end of `out` (positions are written once per request:
/// no string per item).
pub fn write_join<T: std::fmt::Display>(out: &mut String, items: impl IntoIterator<Item = T>) {
    use std::fmt::Write as _;
    let start = out.len();
    for (i, item) in items.into_iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        let _ = write!(out, "{item}");
    }
    if out.len() == start {
        out.push('-');
    }
}
