//! # astragal ladder
//!
//! What a competition host runs. The statistics live in the `rating` crate (pure);
//! this crate holds what touches the world:
//!
//! | module | what it is |
//! |---|---|
//! | [`store`] | the persistent store (SQLite embedded, PostgreSQL shared), one file per aggregate |
//! | [`server`] | the service: its logic, its gRPC front end and auth, the scheduler, the standings cache |
//! | [`web`] | the pages and their JSON: a front end that calls the service |
//! | [`serve`] | `ladder serve`: the service and the pages wired together |
//! | [`submission`] | a bot an author uploads: its archive checked, its manifest, its artifact |
//! | [`worker`] | `ladder worker`: lease groups, play them with the referee library, report |
//! | [`local`] | runs without a server: tournaments, SPRTs, standings from records |
//! | [`season`] | a competition with a deadline and finals anyone can verify: phases, commitments, `verify` |
//! | [`dealing`] | how a group's games are dealt from its seed (mirrored or each its own) |
//! | [`clock`] | the time decisions read: the system's, or a test's hand |
//! | [`metrics`] | the host's numbers in Prometheus' text format, a server's and a worker's |
//!
//! The `ladder` binary (`src/bin/ladder/`) is one file per command, benchmarks
//! included; the library has no benchmark in its API.

pub mod app;
pub mod clock;
pub mod conn;
pub mod dealing;
pub mod grpc;
pub mod local;
pub mod metrics;
pub mod season;
pub mod serve;
pub mod store;
pub mod submission;
pub mod web;
pub mod worker;
