//! The Python package (`python/`) passes its own suite (`python/tests`: the
//! forward model, replays of refereed games, PettingZoo's and OpenSpiel's own
//! tests), run here against the extension module built from this workspace, so
//! `cargo test` covers it. `.ci/run` installs pytest, PettingZoo and OpenSpiel,
//! and checks `pip install ./python` on its own.

use astragal_tests::{binary, cargo, skipped, workspace_root};
use std::path::Path;
use std::process::Command;

/// The extension module, built with the cargo that runs the tests.
fn extension_module() -> std::path::PathBuf {
    let root = workspace_root();
    let status = cargo()
        .args(["build", "-q", "-p", "astragal-python"])
        .current_dir(&root)
        .status()
        .expect("cargo runs");
    assert!(status.success(), "building the Python extension failed");
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(std::path::PathBuf::from)
        .unwrap_or_else(|| root.join("target"));
    target.join("debug").join("lib_astragal.so")
}

/// The package as pip would lay it out: its Python files and the module beside
/// them, in a folder of its own (so the source folder cannot shadow it).
fn lay_out_package(into: &Path) {
    let package = into.join("astragal");
    std::fs::create_dir_all(&package).unwrap();
    let source = workspace_root().join("python").join("astragal");
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_name().unwrap().to_owned();
        let keep = path
            .extension()
            .is_some_and(|e| e == "py" || e == "pyi" || e == "typed");
        if keep {
            std::fs::copy(&path, package.join(name)).unwrap();
        }
    }
    std::fs::copy(extension_module(), package.join("_astragal.abi3.so")).unwrap();
}

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
    let dir = tempfile::tempdir().unwrap();
    lay_out_package(dir.path());
    let root = workspace_root();
    let output = Command::new("python3")
        .args(["-m", "pytest", "-q", "-p", "no:cacheprovider", "-c"])
        .arg(root.join("python").join("pyproject.toml"))
        .arg(root.join("python").join("tests"))
        .current_dir(dir.path())
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
