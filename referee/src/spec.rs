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
    /// A bot served over gRPC: `grpc://host:port`, or `grpcs://host:port` over
    /// TLS (its certificate verified; its secret sent with every call).
    Grpc {
        /// The endpoint, as given (`grpc://` is dialled as `http://`, `grpcs://`
        /// as `https://`).
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
        if text.starts_with("grpc://") || text.starts_with("grpcs://") {
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

    /// Checks what can be checked before the bot is run: a built-in exists and
    /// takes its options; a command line splits into words (balanced quotes).
    /// Whether a program exists where it will run cannot be known here.
    ///
    /// # Errors
    /// What is wrong, in a sentence.
    pub fn check(&self) -> Result<(), String> {
        match self {
            BotSpec::Builtin { name, options } => bots::builtin(name, options).map(drop),
            BotSpec::Process { command } => match shlex::split(command) {
                Some(words) if !words.is_empty() => Ok(()),
                _ => Err(format!(
                    "the command {command:?} does not split into words (are its quotes balanced?)"
                )),
            },
            BotSpec::Grpc { url } => match url
                .strip_prefix("grpc://")
                .or_else(|| url.strip_prefix("grpcs://"))
            {
                Some(rest) if !rest.is_empty() && !rest.contains(char::is_whitespace) => Ok(()),
                _ => Err(format!("{url:?} is not grpc://HOST:PORT or grpcs://HOST:PORT")),
            },
            BotSpec::Human => Ok(()),
        }
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

/// `NAME=SPEC` or a bare `SPEC`: the host's name for an entrant, if given. A name is
/// ASCII letters, digits and `_-.`, so a command line with `=` in it (`./bot
/// --depth=3`) is read as a spec, not a name.
///
/// # Errors
/// A spec that does not parse.
pub fn parse_named(text: &str) -> Result<(Option<String>, BotSpec), String> {
    if let Some((name, spec)) = text.split_once('=')
        && !name.is_empty()
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "_-.".contains(c))
    {
        return Ok((Some(name.to_owned()), BotSpec::parse(spec)?));
    }
    Ok((None, BotSpec::parse(text)?))
}

/// Names every entrant of `texts` (each `NAME=SPEC` or `SPEC`): its given name,
/// else its spec's short name, numbered `#2`, `#3`… when repeated, so two
/// `builtin:random` show as two rows.
///
/// # Errors
/// A spec that does not parse, or a name given twice.
pub fn name_entrants(texts: &[String]) -> Result<Vec<(String, BotSpec)>, String> {
    let parsed: Vec<(Option<String>, BotSpec)> =
        texts.iter().map(|t| parse_named(t)).collect::<Result<_, _>>()?;
    let mut out: Vec<(String, BotSpec)> = Vec::new();
    for (given, spec) in &parsed {
        if let Some(n) = given
            && out.iter().any(|(m, _)| m == n)
        {
            return Err(format!(
                "two bots are named {n:?}; give each NAME=SPEC a different NAME"
            ));
        }
        let base = given.clone().unwrap_or_else(|| spec.short_name());
        let mut name = base.clone();
        let mut k = 2;
        // A later given name keeps its place: a generated one steps around it.
        while out.iter().any(|(n, _)| *n == name)
            || parsed
                .iter()
                .any(|(g, _)| given.is_none() && g.as_deref() == Some(name.as_str()))
        {
            name = format!("{base}#{k}");
            k += 1;
        }
        out.push((name, spec.clone()));
    }
    Ok(out)
}

#[cfg(test)]
mod naming_tests {
    use super::*;

    #[test]
    fn entrants_are_named_and_numbered() {
        let texts: Vec<String> = [
            "builtin:random",
            "builtin:random",
            "me=./bot --depth=3",
            "./bot --depth=3",
        ]
        .into_iter()
        .map(String::from)
        .collect();
        let named = name_entrants(&texts).unwrap();
        let names: Vec<&str> = named.iter().map(|(n, _)| n.as_str()).collect();
        assert_eq!(names, ["random", "random#2", "me", "bot"]);
        assert_eq!(named[2].1, BotSpec::parse("./bot --depth=3").unwrap());
        assert_eq!(named[3].1, BotSpec::parse("./bot --depth=3").unwrap());
        let twice = name_entrants(&["a=builtin:first".into(), "a=builtin:random".into()]);
        assert!(twice.unwrap_err().contains("two bots are named \"a\""));
        // A generated name never takes a name given later.
        let named = name_entrants(&["builtin:random".into(), "random=builtin:first".into()]).unwrap();
        assert_eq!(named[0].0, "random#2");
        assert_eq!(named[1].0, "random");
    }
}
