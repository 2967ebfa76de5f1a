//! `ladder`: tournaments, ratings, the SPRT, the scheduling service and its workers.

mod commands;

use clap::{Parser, Subcommand};
use commands::{admin, author, backup, bench, ratings, serve, sprt, tournament, verify, worker};
use std::process::ExitCode;

/// Tournaments and a ladder service for astragal bots, with maximum-likelihood Elo.
///
/// Examples:
///   ladder tournament --game ur --bot builtin:random --bot heur="python3 bots/python/heuristic_bot.py" --games 200 --concurrency 2 --db ur.db
///   ladder ratings --db ur.db
///   ladder sprt --game ur --bot new="./my_bot" --vs old="./my_bot --v1" --elo0 0 --elo1 10
///   ladder serve --db sqlite:ladder.db --listen 127.0.0.1:50060 --http 127.0.0.1:8080
///   ladder admin add-worker w1 > w1.token      (the admin token in $ASTRAGAL_ADMIN_TOKEN)
///   ladder worker --server http://127.0.0.1:50060 --token-file w1.token --concurrency 2
///   ladder admin add-author alice > alice.token
///   ladder submit --server http://127.0.0.1:50060 --token-file alice.token ./my-bot
///
/// Tokens come from a file (--token-file, --admin-token-file) or the environment
/// (ASTRAGAL_ADMIN_TOKEN, ASTRAGAL_WORKER_TOKEN, ASTRAGAL_AUTHOR_TOKEN), never from the command line,
/// which every process on the machine can read.
#[derive(Parser)]
#[command(name = "ladder", version, verbatim_doc_comment)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Play a round-robin or gauntlet of mirrored groups and print Elo standings.
    /// With --db the run is resumable: run the same command again after a kill and
    /// it plays only what is missing; with more --games it extends the tournament.
    ///
    /// Progress goes to stderr (a bar with games/s and ETA on a terminal). Ctrl-C
    /// starts no new game and prints the standings so far; the games under way are
    /// recorded, and the same command resumes. Exit status: 0 when every game was
    /// played as asked; 3 when a bot could not start or shake hands in some game;
    /// 130 when stopped by Ctrl-C; 1 for any other error.
    Tournament(tournament::TournamentArgs),
    /// Print standings of the competitions in a store, or of record files.
    Ratings(ratings::RatingsArgs),
    /// Play mirrored pairs between two bots until the SPRT decides between elo0 and
    /// elo1 (exact pentanomial GLLR, normalized or logistic Elo). Shows the LLR as it
    /// runs; Ctrl-C stops after the games in flight and prints where it stood.
    Sprt(sprt::SprtArgs),
    /// Measure the rating fit on simulated results.
    BenchFit(bench::BenchFitArgs),
    /// Measure the SPRT's error rates on simulated pairs (α at elo0, β at elo1).
    BenchSprt(bench::BenchSprtArgs),
    /// Measure the service: start a real `ladder serve` on loopback (SQLite or
    /// PostgreSQL) and simulated workers in this process, each with its own token,
    /// leasing, playing with in-process random bots and reporting; print groups and
    /// games per second, lease and report latency p50/p99, and the server's CPU per
    /// game, for each number of workers.
    ///
    ///   ladder bench-service --db sqlite --workers 10,100,500
    ///   ladder bench-service --db postgres://postgres@127.0.0.1:5432/postgres
    ///
    /// With PostgreSQL, a new database is made on that server for the run and
    /// dropped after it (the user needs CREATE DATABASE).
    BenchService(bench::BenchServiceArgs),
    /// Measure the public pages of a large competition: fill a new store with
    /// simulated results (default 100,000 games, with faults and rating history),
    /// serve the pages on loopback and ask for each of them again and again; print
    /// p50/p99/max per page.
    ///
    ///   ladder bench-web --games 100000
    ///   ladder bench-web --db postgres://postgres@127.0.0.1:5432/postgres
    BenchWeb(bench::BenchWebArgs),
    /// Measure what an author's upload costs: a Python bot padded to --mib is
    /// uploaded, built and checked by a worker, and plays its first game (a
    /// server and a worker in this process, SQLite); then a worker's games/s
    /// with it from the warm cache against the same program as the host's
    /// command, in turn.
    ///
    ///   ladder bench-upload --mib 10 --games 200
    BenchUpload(bench::BenchUploadArgs),
    /// Run the ladder service: gRPC API (admin, reads, worker leases) and a web page.
    /// Its flags can come from a file too (--config ladder.toml).
    #[command(args_override_self = true)]
    Serve(serve::ServeArgs),
    /// Lease groups from a ladder server, play them, report the records.
    Worker(worker::WorkerArgs),
    /// Copy a SQLite ladder to a new file while it serves (PostgreSQL: pg_dump).
    Backup(backup::BackupArgs),
    /// Talk to a ladder server as its admin: register bots, open and close competitions, read standings.
    Admin(admin::AdminArgs),
    /// Upload your bot to a ladder, as its author: a folder holding astragal.toml
    /// (its name, games, runtime, run and build commands), or an archive of one.
    /// Each upload is a new version; a worker builds and checks it before it plays.
    ///
    ///   ladder submit --server https://ladder.example.org:50060 --token-file me.token ./my-bot
    Submit(author::SubmitArgs),
    /// Your bots on a ladder, as their author: list every version with its status,
    /// disable one, enable it again.
    Author(author::AuthorArgs),
    /// Check a closed season's finals from their public record alone: the
    /// commitment opens with the revealed master seed, every game's seed derives
    /// from it, every game replays, every group is whole, and the standings
    /// recomputed are the ones published. Prints "verified", or names the first
    /// game or figure that differs (exit status 2).
    ///
    ///   ladder verify https://ladder.example.org/competitions/spring/season.jsonl
    ///   ladder verify season.jsonl --commitment 9307…f7d9
    Verify(verify::VerifyArgs),
}

fn main() -> ExitCode {
    referee::cli::quiet_on_closed_stdout();
    let args = match serve::with_config(std::env::args_os().collect()) {
        Ok(args) => args,
        Err(e) => {
            eprintln!("ladder serve: {e:#}");
            return ExitCode::from(2);
        }
    };
    let cli = Cli::parse_from(args);
    referee::cli::log_to_stderr();
    let result = match cli.command {
        Command::Tournament(a) => tournament::run(a),
        Command::Ratings(a) => ratings::run(a),
        Command::Sprt(a) => sprt::run(a),
        Command::BenchSprt(a) => bench::sprt(a),
        Command::BenchService(a) => bench::service(a),
        Command::BenchWeb(a) => bench::web(a),
        Command::BenchUpload(a) => bench::upload(a),
        Command::BenchFit(a) => bench::fit(a),
        Command::Serve(a) => serve::run(a),
        Command::Worker(a) => worker::run(a),
        Command::Backup(a) => backup::run(a),
        Command::Admin(a) => admin::run(a),
        Command::Submit(a) => author::submit(a),
        Command::Author(a) => author::run(a),
        Command::Verify(a) => verify::run(a),
    };
    result.unwrap_or_else(|e| {
        // Whoever read the output stopped (`| head`): nothing more to say.
        if e.downcast_ref::<std::io::Error>()
            .is_some_and(|io| io.kind() == std::io::ErrorKind::BrokenPipe)
        {
            return ExitCode::SUCCESS;
        }
        // The error and its causes on one line; never a backtrace, whatever
        // RUST_BACKTRACE says (it is for panics, and a refusal is not one).
        // A refusal may quote what a bot or worker wrote: escapes made visible.
        eprintln!("ladder: {}", referee::text::escaped(&format!("{e:#}")));
        ExitCode::FAILURE
    })
}
