//! Runs on one machine, without a server: a tournament into a store (`ladder
//! tournament`), an SPRT between two bots (`ladder sprt`), and standings read from
//! record files (`ladder ratings --from-records`). Each is a job and a sink on the
//! referee's runner.

pub mod records;
pub mod sprt;
pub mod tournament;

pub use records::standings_from_records;
