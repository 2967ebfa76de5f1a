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

/// Runs `probe` under `sandbox` (as an author's build runs, in a writable folder
/// of its own) within `limit`.
///
/// # Errors
/// Why the promise is not kept: the command's output and how it ended.
pub fn check(probe: &Probe, sandbox: &Sandbox, limit: Duration) -> Result<String, String> {
    let scratch = tempfile::Builder::new()
        .prefix("astragal-runtime-")
        .tempdir()
        .map_err(|e| format!("cannot make a folder to check it in: {e}"))?;
    let dir = std::fs::canonicalize(scratch.path())
        .map_err(|e| format!("cannot read its folder: {e}"))?
        .join("probe");
    std::fs::create_dir(&dir).map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    for (name, text) in probe.files {
        std::fs::write(dir.join(name), text).map_err(|e| format!("cannot write {name}: {e}"))?;
    }
    let home = Home { dir, writable: true };
    let finished = referee::sandbox::run_to_end(probe.command, sandbox, &home, limit, 16 << 10)
        .map_err(|e| format!("`{}` cannot start: {e}", probe.command))?;
    let said: Vec<&str> = finished
        .output
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if finished.success {
        Ok(said.join("; "))
    } else {
        Err(format!(
            "`{}` ended with {}: {}",
            probe.command,
            finished.ended,
            said.join(" / ")
        ))
    }
}

/// Checks `runtime`'s promise on this machine: what it found, in a line.
///
/// # Errors
/// Why this machine does not keep it.
pub fn check_runtime(runtime: &str, sandbox: &Sandbox) -> Result<String, String> {
    let found = match probe(runtime) {
        Some(p) => check(&p, sandbox, Duration::from_secs(120))?,
        None => return Ok("nothing to check".to_owned()),
    };
    // A search bot simulates with the package: rules other than the referee's
    // would make it plan for a game it is not playing.
    if runtime == "python3-engine" {
        let version = found.rsplit(' ').next().unwrap_or_default();
        if version != engine::ENGINE_VERSION {
            return Err(format!(
                "its astragal_engine is version {version:?}, and this worker's referee plays the rules of {}: \
                 install the package of this release (pip install --target DIR ./python)",
                engine::ENGINE_VERSION
            ));
        }
    }
    Ok(found)
}
