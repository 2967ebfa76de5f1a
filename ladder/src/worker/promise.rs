//! A runtime is a promise to authors (docs/hosting.md, "Workers, and the runtimes
//! they offer"): what is on the bots' PATH and what it can do. A worker keeps it
//! before it offers the runtime: it builds and runs a tiny program with it, in
//! the same sandbox as authors' builds, and says what it found (the versions).

use referee::sandbox::{Home, Sandbox};
use std::time::Duration;

/// How a runtime's promise is checked: files put in a fresh folder, and a
/// command run there as a build is (its output: what the runtime is).
#[derive(Debug, Clone, Copy)]
pub struct Probe {
    /// Files of the folder: name and contents.
    pub files: &'static [(&'static str, &'static str)],
    /// The command, run as a build's is.
    pub command: &'static str,
}

const CC_SCRIPT: &str = "set -e
c++ --version | head -n 1
cc -o probe-c probe.c && ./probe-c
c++ -o probe-cpp probe.cpp && ./probe-cpp
c++ -std=c++17 -O2 -o probe-cpp17 probe.cpp && ./probe-cpp17 > /dev/null
make --version | head -n 1
";
const CC_C: &str = "#include <stdio.h>\nint main(void) { printf(\"C default standard %ld\\n\", __STDC_VERSION__); return 0; }\n";
const CC_CPP: &str = "#include <iostream>\n#include <optional>\n#include <string>\n\
int main() { std::optional<std::string> s = \"C++\"; std::cout << *s << \" standard \" << __cplusplus << \"\\n\"; }\n";
const JAVA_SCRIPT: &str = "set -e
javac -version 2>&1
javac -d classes Probe.java
java -XX:+UseSerialGC -cp classes Probe
";
const JAVA_PROBE: &str = "public class Probe { public static void main(String[] a) { \
System.out.println(\"java \" + System.getProperty(\"java.version\") + \" runs\"); } }\n";
const CARGO_SCRIPT: &str = "set -e
cargo --version
rustc --version
rustc -O -o probe probe.rs && ./probe
";
const RUST_PROBE: &str = "fn main() { println!(\"rustc's program runs\"); }\n";

/// The check of each runtime the ladder knows; `None` for those with nothing
/// of the worker's to check (`native`: the system's libraries; `remote`).
pub fn probe(runtime: &str) -> Option<Probe> {
    Some(match runtime {
        "python3" => Probe {
            files: &[],
            command: "python3 -c \"import sys, json, sqlite3; print('Python', sys.version.split()[0])\"",
        },
        // The package's folder is on PYTHONPATH through the sandbox's own
        // environment (`ladder worker --python-engine`).
        "python3-engine" => Probe {
            files: &[],
            command: "python3 -c \"import sys, astragal_engine as e; print('Python', sys.version.split()[0], 'with astragal_engine', e.ENGINE_VERSION)\"",
        },
        "node" => Probe {
            files: &[],
            command: "node -e \"console.log('node ' + process.version)\"",
        },
        "java" => Probe {
            files: &[("probe.sh", JAVA_SCRIPT), ("Probe.java", JAVA_PROBE)],
            command: "sh probe.sh",
        },
        "cc" => Probe {
            files: &[("probe.sh", CC_SCRIPT), ("probe.c", CC_C), ("probe.cpp", CC_CPP)],
            command: "sh probe.sh",
        },
        "cargo" => Probe {
            files: &[("probe.sh", CARGO_SCRIPT), ("probe.rs", RUST_PROBE)],
            command: "sh probe.sh",
        },
        _ => return None,
    })
}

/// Why a runtime's promise is not kept on this machine.
#[derive(Debug, thiserror::Error)]
pub enum PromiseError {
    /// The probe could not be set up or started here.
    #[error("{doing}: {source}")]
    Setup {
        /// What could not be done.
        doing: String,
        /// Why.
        source: std::io::Error,
    },
    /// The probe's command could not start in the sandbox.
    #[error("`{command}` cannot start: {why}")]
    Start {
        /// The command.
        command: &'static str,
        /// Why.
        why: String,
    },
    /// The probe ran and failed: how it ended and what it said.
    #[error("`{command}` ended with {ended}: {said}")]
    Failed {
        /// The command.
        command: &'static str,
        /// How it ended.
        ended: String,
        /// Its output's lines, joined.
        said: String,
    },
    /// The engine package found is not this release's.
    #[error(
        "its astragal_engine is version {found:?}, and this worker's referee plays the rules of {wanted}: \
         install the package of this release (pip install --target DIR ./python)"
    )]
    EngineVersion {
        /// The version found.
        found: String,
        /// This release's.
        wanted: &'static str,
    },
}

/// Runs `probe` under `sandbox` (as an author's build runs, in a writable folder
/// of its own) within `limit`.
///
/// # Errors
/// Why the promise is not kept: the command's output and how it ended.
pub fn check(probe: &Probe, sandbox: &Sandbox, limit: Duration) -> Result<String, PromiseError> {
    let setup = |doing: String| move |source| PromiseError::Setup { doing, source };
    let scratch = tempfile::Builder::new()
        .prefix("astragal-runtime-")
        .tempdir()
        .map_err(setup("cannot make a folder to check it in".into()))?;
    let dir = std::fs::canonicalize(scratch.path())
        .map_err(setup("cannot read its folder".into()))?
        .join("probe");
    std::fs::create_dir(&dir).map_err(setup(format!("cannot make {}", dir.display())))?;
    for (name, text) in probe.files {
        std::fs::write(dir.join(name), text).map_err(setup(format!("cannot write {name}")))?;
    }
    let home = Home { dir, writable: true };
    let finished =
        referee::sandbox::run_to_end(probe.command, sandbox, &home, limit, 16 << 10).map_err(|why| {
            PromiseError::Start {
                command: probe.command,
                why,
            }
        })?;
    let said: Vec<&str> = finished
        .output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if finished.success {
        Ok(said.join("; "))
    } else {
        Err(PromiseError::Failed {
            command: probe.command,
            ended: finished.ended.to_string(),
            said: said.join(" / "),
        })
    }
}

/// Checks `runtime`'s promise on this machine: what it found, in a line.
///
/// # Errors
/// Why this machine does not keep it.
pub fn check_runtime(runtime: &str, sandbox: &Sandbox) -> Result<String, PromiseError> {
    let found = match probe(runtime) {
        Some(p) => check(&p, sandbox, Duration::from_secs(120))?,
        None => return Ok("nothing to check".to_owned()),
    };
    // A search bot simulates with the package: rules other than the referee's
    // would make it plan for a game it is not playing.
    if runtime == "python3-engine" {
        let version = found.rsplit(' ').next().unwrap_or_default();
        if version != engine::ENGINE_VERSION {
            return Err(PromiseError::EngineVersion {
                found: version.to_owned(),
                wanted: engine::ENGINE_VERSION,
            });
        }
    }
    Ok(found)
}
