//! What `--bot` accepts.

use std::fmt;

/// How to reach a bot.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum BotSpec {
    /// A program speaking the text protocol on stdin/stdout; the command line is
    /// split as a shell would (quotes respected), without a shell.
    Process {
        /// The command line.
        command: String,
    },
    /// A bot in the referee's own process: `builtin:NAME[?key=value&key=value]`.
    Builtin {
        /// Its name (`random`, `first`).
        name: String,
        /// Its options.
        options: Vec<(String, String)>,
    },
    /// A bot served over gRPC: `grpc://host:port`.
    Grpc {
        /// The endpoint, as given (`grpc://` is dialled as `http://`).
        url: String,
    },
    /// A person at this terminal.
    Human,
}

impl BotSpec {
    /// Reads a `--bot` value.
    ///
    /// # Errors
    /// An empty spec, or a built-in option that is not `key=value`.
    pub fn parse(text: &str) -> Result<BotSpec, String> {
        let text = text.trim();
        if text.is_empty() {
            return Err("an empty bot spec".into());
        }
        if text == "human" {
            return Ok(BotSpec::Human);
        }
        if text.starts_with("grpc://") {
            return Ok(BotSpec::Grpc { url: text.to_owned() });
        }
        if let Some(rest) = text.strip_prefix("builtin:") {
            let (name, query) = rest.split_once('?').unwrap_or((rest, ""));
            let options = query
                .split('&')
                .filter(|s| !s.is_empty())
                .map(|kv| {
                    kv.split_once('=')
                        .map(|(k, v)| (k.to_owned(), v.to_owned()))
                        .ok_or_else(|| format!("bot option {kv:?} in {text:?} is not key=value"))
                })
                .collect::<Result<_, _>>()?;
            return Ok(BotSpec::Builtin {
                name: name.to_owned(),
                options,
            });
        }
        Ok(BotSpec::Process {
            command: text.to_owned(),
        })
    }

    /// A short name for tables.
    pub fn short_name(&self) -> String {
        match self {
            BotSpec::Process { command } => {
                let words = shlex::split(command).unwrap_or_default();
                // The script or program, without its directory.
                let main = words.iter().rev().find(|w| !w.starts_with('-')).or(words.first());
                main.map(|w| w.rsplit('/').next().unwrap_or(w).to_owned())
                    .unwrap_or_else(|| command.clone())
            }
            BotSpec::Builtin { name, .. } => name.clone(),
            BotSpec::Grpc { url } => url.clone(),
            BotSpec::Human => "human".into(),
        }
    }
}

impl fmt::Display for BotSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            BotSpec::Process { command } => f.write_str(command),
            BotSpec::Builtin { name, options } => {
                write!(f, "builtin:{name}")?;
                for (i, (k, v)) in options.iter().enumerate() {
                    write!(f, "{}{k}={v}", if i == 0 { '?' } else { '&' })?;
                }
                Ok(())
            }
            BotSpec::Grpc { url } => f.write_str(url),
            BotSpec::Human => f.write_str("human"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_parse_and_print_back() {
        for text in [
            "human",
            "builtin:random",
            "builtin:random?seed=4&x=y",
            "python3 bots/python/random_bot.py",
        ] {
            assert_eq!(BotSpec::parse(text).unwrap().to_string(), text);
        }
        assert_eq!(
            BotSpec::parse("builtin:random?seed=4").unwrap(),
            BotSpec::Builtin {
                name: "random".into(),
                options: vec![("seed".into(), "4".into())]
            }
        );
        assert!(BotSpec::parse("builtin:random?seed").is_err());
        assert!(BotSpec::parse("  ").is_err());
        assert_eq!(
            BotSpec::parse("python3 bots/python/random_bot.py")
                .unwrap()
                .short_name(),
            "random_bot.py"
        );
        assert_eq!(
            BotSpec::parse("./target/release/astragal-bot --bot first")
                .unwrap()
                .short_name(),
            "first"
        );
    }
}
