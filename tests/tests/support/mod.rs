//! Helpers shared by some test files (a folder, so cargo makes no test of it).

// Each file that includes it uses a part.
#![allow(dead_code)]

pub mod in_process;
