//! The starter kits in `bots/starters/`: each passes its own `check.sh` (which runs
//! `referee check-bot` on every game) and beats the built-in `first` at the Game of
//! Ur, as its README promises.

use astragal_tests::{binary, on_path, workspace_root};
use std::process::{Command, Stdio};

fn check_script_passes(kit: &str) {
    let script = workspace_root().join(format!("bots/starters/{kit}/check.sh"));
    let out = Command::new("bash")
        .arg(&script)
        .env("REFEREE", binary("referee"))
        .output()
        .expect("bash runs");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{kit}/check.sh failed:\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(
        text.matches(": PASSED").count(),
        5,
        "{kit}: one passed check per game\n{text}"
    );
}

/// `bot`'s score against `builtin:first` at Ur, in a fixed match.
fn score_against_first(bot: &str) -> f64 {
    score_against_first_at("ur", bot)
}

/// `bot`'s score against `builtin:first` at `game` over 400 mirrored games of a
/// fixed match: its share of the points, a draw half a point.
fn score_against_first_at(game: &str, bot: &str) -> f64 {
    let out = Command::new(binary("referee"))
        .current_dir(workspace_root())
        .args([
            "match",
            "--game",
            game,
            "--games",
            "400",
            "--seed",
            "11",
            "--concurrency",
            "2",
            "--json",
        ])
        .args(["--bot", bot, "--bot", "builtin:first"])
        .output()
        .expect("referee runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let me = &summary["summary"]["entrants"][0];
    assert_eq!(me["faults"], 0, "{summary}");
    let number = |field: &str| me[field].as_f64().unwrap();
    (number("wins") + number("draws") / 2.0) / number("games")
}

fn assert_beats_first(kit: &str, bot: &str) {
    let score = score_against_first(bot);
    // 400 mirrored games: 53% is well clear of chance (one standard error is 2.5%).
    assert!(
        score >= 0.53,
        "the {kit} starter scores {:.1}% against first",
        score * 100.0
    );
}

#[test]
fn the_python_starter() {
    check_script_passes("python");
    assert_beats_first("python", "python3 bots/starters/python/bot.py");
}

/// The Python starter that searches with the astragal package
/// (`search_bot.py`) against the plain one (`bot.py`), at every game: the share
/// of games it wins over a fixed mirrored match.
fn search_score_against_plain(game: &str, games: u32, playouts: u32) -> f64 {
    let package = astragal_tests::python_package();
    let out = Command::new(binary("referee"))
        .current_dir(workspace_root())
        .args([
            "match",
            "--game",
            game,
            "--seed",
            "5",
            "--concurrency",
            "2",
            "--json",
        ])
        .args(["--games", &games.to_string()])
        .args(["--bot", "search=python3 bots/starters/python/search_bot.py"])
        .args(["--bot", "plain=python3 bots/starters/python/bot.py"])
        .arg("--bot-env")
        .arg(format!("0:PYTHONPATH={}", package.display()))
        .arg("--bot-env")
        .arg(format!("0:SEARCH_PLAYOUTS={playouts}"))
        .output()
        .expect("referee runs");
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let summary: serde_json::Value = serde_json::from_slice(&out.stdout).expect("JSON");
    let me = &summary["summary"]["entrants"][0];
    assert_eq!(me["name"], "search", "{summary}");
    assert_eq!(me["faults"], 0, "{summary}");
    me["wins"].as_f64().unwrap() / me["games"].as_f64().unwrap()
}

#[test]
fn the_searching_python_starter_beats_the_plain_one_at_every_game() {
    for game in engine::GAME_IDS {
        // Its default at Ur, where the plain starter's heuristic is good and
        // moves are few; fewer elsewhere, which is plenty, to keep the test quick.
        let playouts = if game == "ur" { 2000 } else { 200 };
        let score = search_score_against_plain(game, 20, playouts);
        // 20 mirrored games, deterministic (fixed seed, salts and playouts): the
        // plain starter would need 7 wins. Measured over 200 games in the README.
        assert!(
            score >= 0.65,
            "search scores {:.0}% against plain at {game}",
            score * 100.0
        );
    }
}

#[test]
fn the_javascript_starter() {
    if !on_path("node") {
        astragal_tests::skipped("the JavaScript starter", "no node on PATH");
        return;
    }
    check_script_passes("javascript");
    assert_beats_first("javascript", "node bots/starters/javascript/bot.js");
}

/// Whether `program --version` answers; if not, the kit is skipped saying why
/// (and under CI the test fails: `.ci/run` installs every toolchain).
fn toolchain(kit: &str, programs: &[&str]) -> bool {
    match programs.iter().find(|p| !on_path(p)) {
        Some(missing) => astragal_tests::skipped(
            &format!("the {kit} starter"),
            &format!("no {missing} on PATH (its toolchain: {})", programs.join(", ")),
        ),
        None => true,
    }
}

/// The C++ and Java kits promise more: they beat `first` at every game.
fn assert_beats_first_at_every_game(kit: &str, bot: &str) {
    let scores: Vec<(&str, f64)> = engine::GAME_IDS
        .iter()
        .map(|game| (*game, score_against_first_at(game, bot)))
        .collect();
    // 400 mirrored games each: 53% is well clear of chance (one standard error
    // is 2.5%). Measured: 56–76% (the kits' READMEs).
    assert!(
        scores.iter().all(|(_, s)| *s >= 0.53),
        "the {kit} starter against first: {scores:?}"
    );
}

/// A copy of `kit` built with its manifest's `build` line, as a worker builds
/// it (check.sh builds in a copy of its own and leaves the kit clean).
fn built_kit(kit: &str) -> tempfile::TempDir {
    let source = workspace_root().join("bots/starters").join(kit);
    let dir = tempfile::tempdir().unwrap();
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        if path.is_file() {
            std::fs::copy(&path, dir.path().join(path.file_name().unwrap())).unwrap();
        }
    }
    let manifest = std::fs::read_to_string(source.join("astragal.toml")).unwrap();
    let build = manifest
        .lines()
        .find_map(|l| l.strip_prefix("build = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("the kit's manifest has a build line");
    let o = Command::new("sh")
        .args(["-c", build])
        .current_dir(dir.path())
        .output()
        .expect("sh runs");
    assert!(
        o.status.success(),
        "{kit}: {build}: {}",
        String::from_utf8_lossy(&o.stderr)
    );
    dir
}

#[test]
fn the_cpp_starter() {
    if !toolchain("C++", &["c++"]) {
        return;
    }
    check_script_passes("cpp");
    // check.sh left nothing built in the kit to be uploaded with it.
    assert!(!workspace_root().join("bots/starters/cpp/bot").exists());
    let built = built_kit("cpp");
    assert_beats_first_at_every_game("cpp", &built.path().join("bot").to_string_lossy());
}

#[test]
fn the_java_starter() {
    if !toolchain("Java", &["javac", "java"]) {
        return;
    }
    check_script_passes("java");
    assert!(!workspace_root().join("bots/starters/java/classes").exists());
    let built = built_kit("java");
    assert_beats_first_at_every_game(
        "java",
        &format!(
            "java -XX:+UseSerialGC -Xmx256m -cp {} Bot",
            built.path().join("classes").display()
        ),
    );
}

#[test]
fn the_rust_starter() {
    check_script_passes("rust");
    let exe = std::env::var_os("CARGO_TARGET_DIR")
        .map_or_else(|| workspace_root().join("target"), std::path::PathBuf::from)
        .join("release/astragal-starter");
    assert_beats_first("rust", &exe.display().to_string());
}

#[test]
fn the_python_grpc_starter() {
    let has_grpc = Command::new("python3")
        .args(["-c", "import grpc, grpc_tools"])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|s| s.success());
    if !has_grpc {
        // .ci/run installs them; a machine without them cannot run this kit.
        astragal_tests::skipped(
            "the Python gRPC starter",
            "python3 lacks grpcio and grpcio-tools (pip install -r bots/starters/python-grpc/requirements.txt)",
        );
        return;
    }
    check_script_passes("python-grpc");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let mut server = Command::new("python3")
        .arg(workspace_root().join("bots/starters/python-grpc/bot.py"))
        .arg(format!("127.0.0.1:{port}"))
        .stderr(Stdio::null())
        .spawn()
        .expect("python3 runs");
    let up = (0..100).any(|_| {
        std::thread::sleep(std::time::Duration::from_millis(100));
        std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
    });
    let score = up.then(|| score_against_first(&format!("grpc://127.0.0.1:{port}")));
    let _ = server.kill();
    let _ = server.wait();
    let score = score.expect("the gRPC starter serves within 10 s");
    assert!(
        score >= 0.53,
        "the python-grpc starter scores {:.1}% against first",
        score * 100.0
    );
}
