//! Fuzz target: arbitrary and mutated ur positions, and moves played on them.
//! Every position the notation accepts must round-trip, give each seat to act a
//! legal move and play to its end (see `engine::position_check`).
//!
//! Run with `cargo +nightly fuzz run positions_ur` from `engine/`.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| engine::position_check::check_fuzz_input("ur", data));
