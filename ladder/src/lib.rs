//! # astragal ladder
//!
//! What a competition host runs: tournaments between bots with mirrored groups,
//! maximum-likelihood Elo with 95% intervals ([`rating`]), pentanomial statistics
//! and the SPRT ([`stats`]), a persistent store (SQLite embedded, PostgreSQL shared),
//! a scheduling service over gRPC with a read-only web page, and workers that lease
//! groups of games and play them with the referee library.

pub mod audit;
pub mod bench_service;
pub mod bench_web;
pub mod cache;
pub mod elo;
pub mod rating;
pub mod schedule;
pub mod separation;
pub mod service;
pub mod sprt;
pub mod sprt_estimate;
pub mod standings;
pub mod stats;
pub mod store;
pub mod tournament;
pub mod web;
pub mod worker;
