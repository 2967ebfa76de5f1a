//! The runtimes this machine offers uploaded bots.

/// The runtimes whose programs this machine has on the bots' PATH: what a
/// worker offers uploaded bots unless told otherwise. `python3-engine` only
/// where the host gave the engine's package (`with_engine`).
pub fn detect_runtimes(with_engine: bool) -> Vec<String> {
    let on_path = |program: &str| {
        referee::sandbox::BOT_PATH
            .split(':')
            .any(|dir| std::path::Path::new(dir).join(program).is_file())
    };
    crate::submission::RUNTIMES
        .iter()
        .filter(|r| {
            let needs: &[&str] = match r.name {
                "python3" => &["python3"],
                "python3-engine" if with_engine => &["python3"],
                "python3-engine" => return false,
                "node" => &["node"],
                "java" => &["java", "javac"],
                "cc" => &["cc", "make"],
                "cargo" => &["cargo", "rustc"],
                _ => &[],
            };
            needs.iter().all(|p| on_path(p))
        })
        .map(|r| r.name.to_owned())
        .collect()
}
