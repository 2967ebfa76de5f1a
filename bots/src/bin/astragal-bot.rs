//! A built-in bot as a program speaking the text protocol on stdin/stdout.
//!
//! ```text
//! referee play --game ur --bot "astragal-bot --bot random" --bot builtin:random
//! ```

use bots::spin::SpinRead;
use clap::Parser;
use std::io::{self, BufRead, BufReader, BufWriter};
use std::os::fd::AsFd;

/// Run a built-in astragal bot over the text protocol (stdin/stdout).
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Args {
    /// Which bot: random, first, greedy or mcts (see docs/bots.md).
    #[arg(long, default_value = "random")]
    bot: String,
    /// Bot option key=value (repeatable); the referee can also set options.
    #[arg(long = "opt", value_parser = parse_pair)]
    opts: Vec<(String, String)>,
    /// Not a bot: answer every line with one line of this many bytes (the raw pipe
    /// round trip that `referee bench` compares the protocol against).
    #[arg(long, hide = true)]
    echo: Option<usize>,
    /// Serve the bot over gRPC on this address (e.g. 127.0.0.1:50051) instead of
    /// stdin/stdout; the referee dials it with --bot grpc://127.0.0.1:50051.
    #[arg(long)]
    grpc: Option<std::net::SocketAddr>,
    /// Microseconds to keep polling standard input after each answer before going
    /// to sleep (try 50). A fast referee's next request then finds this bot awake,
    /// which halves a round trip on virtual machines whose idle cores halt at
    /// once; but a spinning bot keeps a core busy, so with as many games at once as
    /// cores it only slows the others down. 0: sleep at once.
    #[arg(long, default_value_t = 0)]
    spin_us: u64,
}

fn parse_pair(s: &str) -> Result<(String, String), String> {
    s.split_once('=')
        .map(|(k, v)| (k.to_owned(), v.to_owned()))
        .ok_or_else(|| format!("{s:?} is not key=value"))
}

fn echo(bytes: usize, input: impl BufRead) -> anyhow::Result<()> {
    use std::io::Write;
    let reply = format!("{}\n", "x".repeat(bytes));
    let mut out = io::stdout().lock();
    for line in input.lines() {
        line?;
        out.write_all(reply.as_bytes())?;
        out.flush()?;
    }
    Ok(())
}

fn main() -> anyhow::Result<()> {
    let args = Args::parse();
    let spin = std::time::Duration::from_micros(args.spin_us);
    if let Some(bytes) = args.echo {
        return echo(bytes, BufReader::new(SpinRead::stdin(spin)?));
    }
    if let Some(addr) = args.grpc {
        // Check the bot and its options now, then make one per game.
        bots::builtin(&args.bot, &args.opts).map_err(anyhow::Error::msg)?;
        let (name, opts) = (args.bot.clone(), args.opts.clone());
        let make: bots::grpc::BotFactory = std::sync::Arc::new(move || {
            bots::builtin(&name, &opts).unwrap_or_else(|_| Box::new(bots::FirstBot))
        });
        let rt = tokio::runtime::Runtime::new()?;
        eprintln!("serving {} over gRPC on {addr}", args.bot);
        rt.block_on(bots::grpc::serve(addr, make, async {
            let _ = tokio::signal::ctrl_c().await;
        }))?;
        return Ok(());
    }
    let mut bot = bots::builtin(&args.bot, &args.opts).map_err(anyhow::Error::msg)?;
    let stdin = BufReader::new(SpinRead::stdin(spin)?);
    // Standard output through its own descriptor too: one buffer, one write per
    // message (std's line-buffered stdout would copy each reply a second time).
    let stdout = BufWriter::new(std::fs::File::from(io::stdout().as_fd().try_clone_to_owned()?));
    bots::driver::serve(bot.as_mut(), "astragal", stdin, stdout)?;
    Ok(())
}
