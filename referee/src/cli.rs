//! What the `referee` and `ladder` programs share at their edges.

/// Makes a closed standard output (`referee replay … | head -1`) end the program
/// quietly with status 0, as `head` expects of the program before it, instead
/// of a panic (status 101) from `println!`. Call once, first thing in `main`.
pub fn quiet_on_closed_stdout() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let said = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied())
            .unwrap_or("");
        if said.starts_with("failed printing to stdout") && said.contains("Broken pipe") {
            std::process::exit(0);
        }
        default(info);
    }));
}

/// Logs to stderr at the level `RUST_LOG` asks (`warn` by default), in colour
/// only on a terminal, so a redirected log stays plain text.
pub fn log_to_stderr() {
    use std::io::IsTerminal;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env().unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .with_ansi(std::io::stderr().is_terminal())
        .init();
}
