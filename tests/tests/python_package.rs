//! The Python package (`python/`) passes its own suite (`python/tests`: the
//! forward model, replays of refereed games, PettingZoo's and OpenSpiel's own
//! tests), run here against the extension module built from this workspace, so
//! `cargo test` covers it. `.ci/run` installs pytest, PettingZoo and OpenSpiel,
//! and checks `pip install ./python` on its own.

use astragal_tests::{binary, python_package, skipped, workspace_root};
use std::process::Command;

#[test]
fn the_python_package_passes_its_own_suite() {
    let probe = Command::new("python3")
        .args(["-c", "import pytest, numpy, pettingzoo, pyspiel"])
        .output();
    if !probe.is_ok_and(|o| o.status.success()) {
        skipped(
            "the_python_package_passes_its_own_suite",
            "python3 lacks pytest, numpy, pettingzoo or open_spiel (pip install -e ./python[test] or see .ci/run)",
        );
        return;
    }
    let package = python_package();
    let root = workspace_root();
    let output = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-c"])
        .arg(root.join("python").join("pyproject.toml"))
        .arg(root.join("python").join("tests"))
        .current_dir(&package)
        .env("ASTRAGAL_REFEREE", binary("referee"))
        .env_remove("PYTHONPATH")
        .output()
        .expect("python3 runs");
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "the Python suite failed:\n{text}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    // It ran the suite, not nothing: pytest's summary counts what passed.
    let passed: usize = text
        .lines()
        .rev()
        .find_map(|l| l.split(" passed").next()?.rsplit(' ').next()?.parse().ok())
        .unwrap_or(0);
    assert!(passed >= 50, "only {passed} Python tests passed:\n{text}");
}
