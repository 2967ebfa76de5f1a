//! Fuzz target: no season record, however made, makes `ladder verify` panic,
//! allocate without bound or run away; it verifies or names what does not hold.
//!
//! Run with `cargo +nightly fuzz run season_record` from `ladder/`. Seed the
//! corpus with a real record (`curl -o corpus/season_record/spring.jsonl
//! http://LADDER/competitions/spring/season.jsonl`).
#![no_main]

use ladder::season::verify::verify;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let _ = verify(text, None);
    let _ = verify(text, Some("0000000000000000000000000000000000000000000000000000000000000000"));
});
