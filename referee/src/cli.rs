//! What the `referee` and `ladder` programs share at their edges: reading
//! numbers from the command line, a reader who closed the output, logging.

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

/// Reads a command-line number and checks it lies in `lo..=hi`, for clap's
/// `value_parser`: every number a host types is range-checked with a message that
/// names the range, never taken as given to overflow or panic later.
///
/// # Errors
/// Not a number, or out of range.
pub fn number_in<T>(text: &str, lo: T, hi: T) -> Result<T, String>
where
    T: std::str::FromStr + PartialOrd + std::fmt::Display + Copy,
{
    let v: T = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    // NaN fails both comparisons, so it is refused too.
    if v >= lo && v <= hi {
        Ok(v)
    } else {
        Err(format!("{text} is outside {lo}..={hi}"))
    }
}

/// An error and its causes, joined: tonic's own text of a failed connection is
/// only "transport error", and the cause says what went wrong.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut next = e.source();
    while let Some(cause) = next {
        text.push_str(": ");
        text.push_str(&cause.to_string());
        next = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_outside_their_range_are_refused_by_name() {
        assert_eq!(number_in("5", 1u64, 10), Ok(5));
        assert!(number_in("0", 1u64, 10).unwrap_err().contains("outside 1..=10"));
        assert!(number_in("1e300", 0.0, 86_400.0).is_err());
        assert!(number_in("NaN", 0.0, 1.0).is_err());
        assert!(number_in("-1", 0u64, 1).unwrap_err().contains("not a number"));
    }
}
