//! # astragal rating
//!
//! The ladder's statistics, pure: every function takes numbers or results and
//! returns numbers, with no database, network, clock or global RNG. The ladder's
//! store, server and local runs feed it; it builds and tests on its own.
//!
//! | module | what it answers |
//! |---|---|
//! | [`elo`] | the Elo scale and the normal distribution |
//! | [`order`] | a finishing order as one integer key |
//! | [`fit`] | maximum-likelihood Elo (Plackett–Luce), intervals clustered by group |
//! | [`separation`] | which bots have no finite rating (never won, never lost) |
//! | [`shape`] | a finished group's results as a key, to count groups by |
//! | [`standings`] | tables of ratings, scores and mirrored pairs from [`GameResult`]s |
//! | [`schedule`] | which bots meet next |
//! | [`sprt`] | pentanomial statistics, the GSPRT and its stopping-aware estimate |
//! | [`audit`] | each worker's fault rates against the others' |

pub mod audit;
pub mod elo;
pub mod fit;
pub mod order;
pub mod schedule;
pub mod separation;
pub mod shape;
pub mod sprt;
pub mod standings;

pub use standings::GameResult;
