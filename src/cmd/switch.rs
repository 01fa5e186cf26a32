//! `spotagg switch`: an engine (the reference switch by default) served over a UDP socket, for
//! hosts without an FPGA and for tests.
//!
//! The serve loop is [`spotagg_sim::udp_switch::serve`].
//!
//! The first line on stdout is `spotagg switch: listening on ADDR` (with the port the system
//! chose for `--bind IP:0`). The counters are printed when the switch exits (`--exit-after-idle`)
//! and, with `--stats-every`, periodically on stderr.

use crate::engines::{load_job, EngineKind};
use anyhow::{Context, Result};
use spotagg_driver::transport::{enlarge_buffers, SOCKET_BUFFER};
pub use spotagg_sim::udp_switch::{counters_line, serve, ServeOptions};
use std::io::{self, Write};
use std::net::{SocketAddr, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

/// Arguments of `spotagg switch`.
#[derive(clap::Args)]
pub struct Args {
    /// The job configuration (TOML).
    #[arg(long)]
    config: PathBuf,
    /// Address to listen on, e.g. 0.0.0.0:48864 or 127.0.0.1:0.
    #[arg(long)]
    bind: SocketAddr,
    /// The switch implementation.
    #[arg(long, value_enum, default_value = "model")]
    engine: EngineKind,
    /// Probability of dropping a datagram, in each direction (fault injection).
    #[arg(long, default_value_t = 0.0)]
    loss: f64,
    /// Seed of the fault injection.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Exit after this many seconds without a datagram, printing the counters.
    #[arg(long)]
    exit_after_idle: Option<f64>,
    /// Print the counters on stderr every this many seconds.
    #[arg(long)]
    stats_every: Option<f64>,
    /// Print the final counters as one JSON object.
    #[arg(long)]
    json: bool,
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let job = load_job(&args.config)?;
    anyhow::ensure!((0.0..=1.0).contains(&args.loss), "--loss {} is not a probability in 0..=1", args.loss);
    let mut engine = args.engine.build(&job)?;
    let socket = UdpSocket::bind(args.bind).with_context(|| format!("cannot bind {}", args.bind))?;
    enlarge_buffers(&socket, SOCKET_BUFFER);
    println!("spotagg switch: listening on {} ({} engine, {} workers)", socket.local_addr()?, engine.name(), job.n());
    io::stdout().flush()?;
    let opts = ServeOptions {
        loss: args.loss,
        seed: args.seed,
        exit_after_idle: args.exit_after_idle.map(Duration::from_secs_f64),
        stats_every: args.stats_every.map(Duration::from_secs_f64),
    };
    let st = serve(&socket, &job, engine.as_mut(), &opts, &AtomicBool::new(false))?;
    let c = engine.counters();
    if args.json {
        println!("{}", serde_json::json!({ "counters": c, "udp": st }));
    } else {
        println!("spotagg switch: {}", counters_line(&c));
        println!(
            "spotagg switch: datagrams in {} out {}, injected drops in {} out {}, unknown senders {}",
            st.datagrams_in, st.datagrams_out, st.injected_drops_in, st.injected_drops_out, st.unknown_senders
        );
    }
    Ok(())
}
