//! Game options given as `key=value` text, checked against each game's table of
//! option specs, with defaults from the project's rulings.

use std::collections::BTreeMap;
use std::fmt;

/// What values an option takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionKind {
    /// A whole number in `min..=max`.
    Int {
        /// Smallest allowed value.
        min: i64,
        /// Largest allowed value.
        max: i64,
    },
    /// `true` or `false`.
    Bool,
    /// One of a fixed list of words.
    Choice(&'static [&'static str]),
    /// Free text checked by the game itself (for example `sky=7x7`).
    Text(&'static str),
}

impl fmt::Display for OptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionKind::Int { min, max } => write!(f, "a whole number from {min} to {max}"),
            OptionKind::Bool => f.write_str("true or false"),
            OptionKind::Choice(words) => write!(f, "one of {}", words.join("|")),
            OptionKind::Text(what) => f.write_str(what),
        }
    }
}

/// One option a game understands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OptionSpec {
    /// The key, as written in `key=value`.
    pub name: &'static str,
    /// The value used when the option is not given (empty: computed by the game).
    pub default: &'static str,
    /// What values it takes.
    pub kind: OptionKind,
    /// One line for `--help` and the protocol.
    pub help: &'static str,
}

/// An option text that could not be accepted.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OptionError {
    /// A word without `=`.
    #[error("option {0:?} is not of the form key=value")]
    Malformed(String),
    /// A key the game does not know.
    #[error("game {game} has no option {key:?} (known: {known})")]
    UnknownKey {
        /// The game id.
        game: &'static str,
        /// The key given.
        key: String,
        /// The keys the game knows, comma-separated.
        known: String,
    },
    /// The same key twice.
    #[error("option {0:?} is given twice")]
    Duplicate(String),
    /// A value of the wrong kind or out of range.
    #[error("option {key}={value:?} is invalid: expected {expected}")]
    BadValue {
        /// The key.
        key: String,
        /// The value given.
        value: String,
        /// What was expected.
        expected: String,
    },
}

/// Checked option values for one game: every known key, given or defaulted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OptionValues {
    values: BTreeMap<&'static str, String>,
    given: BTreeMap<&'static str, String>,
}

impl OptionValues {
    /// Checks `pairs` (each `key=value`) against `specs` and fills in defaults.
    ///
    /// # Errors
    /// A malformed pair, an unknown or repeated key, or a value of the wrong kind.
    pub fn parse<S: AsRef<str>>(
        game: &'static str,
        specs: &'static [OptionSpec],
        pairs: &[S],
    ) -> Result<OptionValues, OptionError> {
        let mut given = BTreeMap::new();
        for pair in pairs {
            let pair = pair.as_ref().trim();
            if pair.is_empty() {
                continue;
            }
            let (key, value) = pair
                .split_once('=')
                .ok_or_else(|| OptionError::Malformed(pair.to_owned()))?;
            let (key, value) = (key.trim(), value.trim());
            let spec = specs
                .iter()
                .find(|s| s.name == key)
                .ok_or_else(|| OptionError::UnknownKey {
                    game,
                    key: key.to_owned(),
                    known: specs.iter().map(|s| s.name).collect::<Vec<_>>().join(", "),
                })?;
            check_kind(spec, value)?;
            if given.insert(spec.name, value.to_owned()).is_some() {
                return Err(OptionError::Duplicate(key.to_owned()));
            }
        }
        let values = specs
            .iter()
            .map(|s| {
                let v = given.get(s.name).cloned().unwrap_or_else(|| s.default.to_owned());
                (s.name, v)
            })
            .collect();
        Ok(OptionValues { values, given })
    }

    /// Splits a text such as `"size=8 reserve=6"` (spaces or commas) and parses it.
    ///
    /// # Errors
    /// As [`OptionValues::parse`].
    pub fn parse_text(
        game: &'static str,
        specs: &'static [OptionSpec],
        text: &str,
    ) -> Result<OptionValues, OptionError> {
        let pairs: Vec<&str> = text
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|s| !s.is_empty())
            .collect();
        Self::parse(game, specs, &pairs)
    }

    /// The raw text of an option (the default if it was not given).
    pub fn text(&self, key: &str) -> &str {
        self.values.get(key).map(String::as_str).unwrap_or("")
    }

    /// Whether the option was given explicitly.
    pub fn is_given(&self, key: &str) -> bool {
        self.given.contains_key(key)
    }

    /// An integer option (already range-checked).
    pub fn int(&self, key: &str) -> i64 {
        self.text(key).parse().unwrap_or(0)
    }

    /// A boolean option.
    pub fn flag(&self, key: &str) -> bool {
        self.text(key) == "true"
    }

    /// Every option as `key=value`, sorted by key: the canonical form kept in records.
    /// Options whose default is computed by the game (empty) and that were not given
    /// are left out, so the form parses back to the same game.
    pub fn canonical(&self) -> Vec<String> {
        self.values
            .iter()
            .filter(|(_, v)| !v.is_empty())
            .map(|(k, v)| format!("{k}={v}"))
            .collect()
    }
}

fn check_kind(spec: &OptionSpec, value: &str) -> Result<(), OptionError> {
    let ok = match spec.kind {
        OptionKind::Int { min, max } => value.parse::<i64>().is_ok_and(|v| (min..=max).contains(&v)),
        OptionKind::Bool => value == "true" || value == "false",
        OptionKind::Choice(words) => words.contains(&value),
        OptionKind::Text(_) => !value.is_empty(),
    };
    if ok {
        Ok(())
    } else {
        Err(OptionError::BadValue {
            key: spec.name.to_owned(),
            value: value.to_owned(),
            expected: spec.kind.to_string(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SPECS: &[OptionSpec] = &[
        OptionSpec {
            name: "size",
            default: "8",
            kind: OptionKind::Int { min: 4, max: 16 },
            help: "",
        },
        OptionSpec {
            name: "moon",
            default: "full",
            kind: OptionKind::Choice(&["full", "dark"]),
            help: "",
        },
        OptionSpec {
            name: "blocks",
            default: "false",
            kind: OptionKind::Bool,
            help: "",
        },
    ];

    #[test]
    fn defaults_and_given_values() {
        let v = OptionValues::parse_text("t", SPECS, "size=10, blocks=true").unwrap();
        assert_eq!(v.int("size"), 10);
        assert!(v.flag("blocks"));
        assert_eq!(v.text("moon"), "full");
        assert!(v.is_given("size") && !v.is_given("moon"));
        assert_eq!(v.canonical(), vec!["blocks=true", "moon=full", "size=10"]);
    }

    #[test]
    fn errors_name_the_problem() {
        let e = OptionValues::parse_text("t", SPECS, "colour=red").unwrap_err();
        assert_eq!(
            e.to_string(),
            "game t has no option \"colour\" (known: size, moon, blocks)"
        );
        let e = OptionValues::parse_text("t", SPECS, "size=3").unwrap_err();
        assert_eq!(
            e.to_string(),
            "option size=\"3\" is invalid: expected a whole number from 4 to 16"
        );
        let e = OptionValues::parse_text("t", SPECS, "moon=half").unwrap_err();
        assert!(e.to_string().contains("one of full|dark"), "{e}");
        assert!(matches!(
            OptionValues::parse_text("t", SPECS, "size"),
            Err(OptionError::Malformed(_))
        ));
        assert!(matches!(
            OptionValues::parse_text("t", SPECS, "size=5 size=6"),
            Err(OptionError::Duplicate(_))
        ));
    }
}
