//! `astragal.toml`: what an uploaded bot says about itself.
//!
//! ```toml
//! name = "my-bot"            # letters, digits, `-` and `_`; at most 40
//! games = ["ur"]             # the games it plays
//! runtime = "python3"        # what it needs on the worker (see RUNTIMES)
//! run = "python3 bot.py"     # started in the bot's folder
//! build = "python3 -m compileall -q ."   # optional: run once, without network
//! ```

use serde::{Deserialize, Serialize};

/// What a worker may offer a bot: the runtimes a host can declare.
pub struct Runtime {
    /// The manifest's word for it.
    pub name: &'static str,
    /// What a bot gets, in words (the worker image's contract).
    pub gives: &'static str,
}

/// Every runtime the ladder knows. A worker declares the ones its machine has
/// (`ladder worker --runtimes`); a host may take fewer (`ladder serve --runtimes`).
pub const RUNTIMES: &[Runtime] = &[
    Runtime {
        name: "native",
        gives: "nothing but the system's libraries: a program built for the worker's machine",
    },
    Runtime {
        name: "python3",
        gives: "python3 and its standard library (no packages: vendor them)",
    },
    Runtime {
        name: "python3-engine",
        gives: "python3, its standard library and the astragal_engine package, of the rules the referee plays",
    },
    Runtime {
        name: "node",
        gives: "node and its standard library (vendor node_modules)",
    },
    Runtime {
        name: "java",
        gives: "java and javac",
    },
    Runtime {
        name: "cc",
        gives: "cc, c++ and make",
    },
    Runtime {
        name: "cargo",
        gives: "cargo and rustc, offline: vendor the crates (`cargo vendor`)",
    },
    Runtime {
        name: "remote",
        gives: "nothing: the bot runs on its author's machine, reached over grpcs:// (not contained)",
    },
];

/// The runtime of a bot its author serves (`run = "grpcs://HOST:PORT"`).
pub const REMOTE: &str = "remote";
/// The longest secret of a remote bot.
pub const MAX_SECRET: usize = 256;

/// The longest bot name.
pub const MAX_NAME: usize = 40;
/// The longest command.
const MAX_COMMAND: usize = 1000;

/// The manifest, checked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Manifest {
    pub name: String,
    pub games: Vec<String>,
    pub runtime: String,
    pub run: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build: Option<String>,
    /// A remote bot's secret, sent with every call (`runtime = "remote"` only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub secret: Option<String>,
}

/// Why a manifest was refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ManifestError {
    #[error("the archive has no `astragal.toml` at its top (nor in a single top folder)")]
    Missing,
    #[error("astragal.toml: {0}")]
    NotToml(String),
    #[error("astragal.toml: name {0:?}: use 1 to 40 letters, digits, `-` and `_`")]
    BadName(String),
    #[error("astragal.toml: `games` is empty; name the games the bot plays ({known})")]
    NoGames { known: String },
    #[error("astragal.toml: unknown game {game:?}; this ladder knows {known}")]
    UnknownGame { game: String, known: String },
    #[error("astragal.toml: game {0:?} listed twice")]
    DuplicateGame(String),
    #[error("astragal.toml: unknown runtime {runtime:?}; this ladder offers {known}")]
    UnknownRuntime { runtime: String, known: String },
    #[error("astragal.toml: `{field}`: {why}")]
    BadCommand { field: &'static str, why: String },
    #[error("astragal.toml: a remote bot (runtime = \"remote\"): {0}")]
    Remote(String),
}

impl Manifest {
    /// Reads and checks a manifest. `runtimes` are the ones the host offers.
    ///
    /// # Errors
    /// The first thing wrong, by name.
    pub fn parse(text: &[u8], runtimes: &[String]) -> Result<Manifest, ManifestError> {
        let text = std::str::from_utf8(text).map_err(|_| ManifestError::NotToml("not UTF-8".into()))?;
        let manifest: Manifest =
            toml::from_str(text).map_err(|e| ManifestError::NotToml(one_line(&e.to_string())))?;
        let name_ok = !manifest.name.is_empty()
            && manifest.name.len() <= MAX_NAME
            && manifest
                .name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'-' || b == b'_');
        if !name_ok {
            return Err(ManifestError::BadName(manifest.name));
        }
        let known = engine::GAME_IDS.join(", ");
        if manifest.games.is_empty() {
            return Err(ManifestError::NoGames { known });
        }
        for (i, game) in manifest.games.iter().enumerate() {
            if !engine::GAME_IDS.contains(&game.as_str()) {
                return Err(ManifestError::UnknownGame {
                    game: game.clone(),
                    known,
                });
            }
            if manifest.games[..i].contains(game) {
                return Err(ManifestError::DuplicateGame(game.clone()));
            }
        }
        if !runtimes.contains(&manifest.runtime) {
            return Err(ManifestError::UnknownRuntime {
                runtime: manifest.runtime,
                known: runtimes.join(", "),
            });
        }
        if manifest.runtime == REMOTE {
            let remote = |why: &str| ManifestError::Remote(why.to_owned());
            let spec = referee::spec::BotSpec::parse(&manifest.run).map_err(|e| remote(&e))?;
            if !manifest.run.starts_with("grpcs://")
                || spec.check().is_err()
                || manifest.run.len() > MAX_COMMAND
            {
                return Err(remote(
                    "`run` is the address it serves on, grpcs://HOST:PORT (TLS: never in clear)",
                ));
            }
            if manifest.build.is_some() {
                return Err(remote("it has no `build`: it runs on your machine"));
            }
            if let Some(secret) = &manifest.secret
                && (secret.is_empty()
                    || secret.len() > MAX_SECRET
                    || !secret.bytes().all(|b| b.is_ascii_graphic()))
            {
                return Err(remote("`secret` is 1 to 256 visible ASCII characters"));
            }
            return Ok(manifest);
        }
        if manifest.secret.is_some() {
            return Err(ManifestError::BadCommand {
                field: "secret",
                why: "only a remote bot (runtime = \"remote\") has a secret".into(),
            });
        }
        command_words("run", &manifest.run)?;
        if let Some(build) = &manifest.build {
            command_words("build", build)?;
        }
        Ok(manifest)
    }

    /// A `run` program named without a `/` (so looked up on the worker's PATH)
    /// that is no runtime's own: its name, and whether the `build` line names
    /// it (`-o bot`), so that it is the bot's own file after all.
    pub fn bare_own_program(&self) -> Option<(String, bool)> {
        if self.runtime == REMOTE {
            return None;
        }
        let program = shlex::split(&self.run)?.into_iter().next()?;
        if program.contains('/') {
            return None;
        }
        let made = self
            .build
            .as_deref()
            .and_then(shlex::split)
            .is_some_and(|words| words.iter().skip(1).any(|w| *w == program));
        Some((program, made))
    }

    /// The program the `run` command starts, if it is a path in the bot's
    /// folder (`./bot`, `bin/bot`) rather than a runtime's (`python3`).
    pub fn run_program_path(&self) -> Option<String> {
        if self.runtime == REMOTE {
            return None;
        }
        let words = shlex::split(&self.run)?;
        let program = words.into_iter().next()?;
        program
            .contains('/')
            .then(|| program.trim_start_matches("./").to_owned())
    }
}

/// A command's words, or why it cannot be run.
fn command_words(field: &'static str, command: &str) -> Result<Vec<String>, ManifestError> {
    let bad = |why: &str| ManifestError::BadCommand {
        field,
        why: why.to_owned(),
    };
    if command.len() > MAX_COMMAND {
        return Err(bad("longer than 1000 bytes"));
    }
    if command.contains(['\0', '\n', '\r']) {
        return Err(bad("a control character (NUL or a line break)"));
    }
    let words = shlex::split(command).ok_or_else(|| bad("bad quoting"))?;
    let Some(program) = words.first() else {
        return Err(bad("empty"));
    };
    if program.starts_with('/') {
        return Err(bad(
            "an absolute program path; name a runtime's program (`python3`) or a path in the bot's folder (`./bot`)",
        ));
    }
    if words.iter().any(|w| w.split('/').any(|part| part == "..")) {
        return Err(bad("`..` in a path; the command runs inside the bot's folder"));
    }
    // The sandbox's own rule, said at upload rather than at the first spawn.
    referee::sandbox::check_home_command(&words).map_err(|why| bad(why.as_str()))?;
    Ok(words)
}

/// A parser's message on one line (toml's span the bot author can still find).
fn one_line(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}
