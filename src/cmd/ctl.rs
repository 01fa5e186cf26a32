//! `spotagg ctl`: the control link to a board (or a simulated board on a pseudo-terminal):
//! identity, status, counters, job configuration, counter reset.
//!
//! Every command opens the port, reads the identity and refuses a design whose major version
//! differs from this tool's (`spotagg_driver::control::DESIGN_VERSION`). Output is a human
//! table by default, one JSON object with `--json` (for counters: the keys of
//! `Counters::named()` in that order). A board that does not answer within `--timeout-ms` is
//! an error, not a hang.

use anyhow::{Context, Result};
use spotagg_driver::control::{link_state_name, open_serial, CounterSnapshot, DESIGN_VERSION};
use spotagg_driver::JobConfig;
use std::path::PathBuf;
use std::time::Duration;

/// Arguments of `spotagg ctl`.
#[derive(clap::Args)]
pub struct Args {
    /// Serial port of the board's control link (e.g. /dev/ttyUSB0, or a pty).
    #[arg(long)]
    serial: String,
    /// Baud rate.
    #[arg(long, default_value_t = 115_200)]
    baud: u32,
    /// Longest wait for one response, in milliseconds.
    #[arg(long, default_value_t = 1000)]
    timeout_ms: u64,
    /// One JSON object instead of a table.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    what: What,
}

#[derive(clap::Subcommand)]
enum What {
    /// Identity registers: board, design version, git hash, build date, build parameters.
    Id,
    /// Core status, slot usage, link state, job registers.
    Status,
    /// All counters.
    Counters {
        /// Print again every this many seconds until interrupted.
        #[arg(long, num_args = 0..=1, default_missing_value = "1")]
        watch: Option<f64>,
    },
    /// Write a job configuration (TOML) and enable it (clears the slot state).
    Configure {
        /// The job configuration.
        job: PathBuf,
    },
    /// Zero the counters.
    ResetCounters,
}

/// One counter snapshot as a JSON object: the core's counters under the keys of
/// `Counters::named()` in that order, then `ports` (each MAC port's counters, empty without
/// MACs), `flooded` (null without MACs) and `quiescent`.
pub fn snapshot_json(k: &CounterSnapshot) -> String {
    let mut fields: Vec<String> = k.core.named().iter().map(|(n, x)| format!("\"{n}\": {x}")).collect();
    fields.push(format!("\"ports\": {}", serde_json::to_string(&k.ports).unwrap_or_default()));
    fields.push(format!("\"flooded\": {}", serde_json::to_string(&k.flooded).unwrap_or_default()));
    fields.push(format!("\"quiescent\": {}", k.quiescent));
    format!("{{{}}}", fields.join(", "))
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    let mut c = open_serial(&args.serial, args.baud, Duration::from_millis(args.timeout_ms))
        .with_context(|| format!("control link on {}", args.serial))?;
    match args.what {
        What::Id => {
            let id = c.identity()?;
            if args.json {
                println!("{}", serde_json::to_string(&id)?);
            } else {
                println!("board          {} (id {})", id.board, id.board_id);
                println!(
                    "design version {} (driver {}.{}.{})",
                    id.version_string(),
                    DESIGN_VERSION.0,
                    DESIGN_VERSION.1,
                    DESIGN_VERSION.2
                );
                println!("git hash       {:08x}", id.git_hash);
                println!("build date     {}", id.build_date());
                println!("width          {} bytes", id.width_bytes);
                println!("slots          {}", id.slots);
                println!("max payload    {} bytes", id.max_payload);
                println!("max workers    {}", id.max_workers);
                println!("baud divisor   {} clocks/bit", id.baud_divisor);
                println!("counters       {} registers", id.counter_registers);
            }
        }
        What::Status => {
            let s = c.status()?;
            if args.json {
                println!("{}", serde_json::to_string(&s)?);
            } else {
                let j = &s.job_registers;
                let mac = (u64::from(j[0]) << 32) | u64::from(j[1]);
                let mac: Vec<String> = (0..6).rev().map(|i| format!("{:02x}", (mac >> (8 * i)) as u8)).collect();
                println!("core           {}", if s.idle { "idle" } else { "busy" });
                println!("job            {}", if s.job_enabled { "enabled" } else { "not enabled" });
                println!("switch MAC     {}", mac.join(":"));
                println!("switch IP      {}", std::net::Ipv4Addr::from(j[2]));
                println!("workers n      {}", j[3]);
                println!("payload        {} bytes (size code {})", 128u32 << j[4].min(3), j[4]);
                println!("slots in use   {}", s.slots_in_use);
                match s.vlan {
                    0 => println!("vlan           none (untagged)"),
                    t => println!("vlan           {} (priority {})", t & 0xfff, t >> 13),
                }
                println!("worker port    {}", s.worker_port);
                println!("job number     {}", s.job_number);
                println!("uptime         {} cycles", s.uptime_cycles);
                for (p, l) in s.link_state.iter().enumerate() {
                    println!("port {p} link    {}", link_state_name(*l));
                }
            }
        }
        What::Counters { watch } => loop {
            let k = c.snapshot()?;
            if args.json {
                println!("{}", snapshot_json(&k));
            } else {
                print!("{}", super::replay::counters_table(&k.core));
                for (p, pc) in k.ports.iter().enumerate() {
                    let row: Vec<String> = pc.named().iter().map(|(n, v)| format!("{n} {v}")).collect();
                    println!("port {p}: {}", row.join(", "));
                }
                if let Some(f) = k.flooded {
                    println!("sent to both ports: {f}");
                }
                if !k.quiescent {
                    println!("(snapshot not quiescent: the core did not become idle)");
                }
            }
            match watch {
                Some(secs) => {
                    std::thread::sleep(Duration::from_secs_f64(secs.max(0.05)));
                    if !args.json {
                        println!();
                    }
                }
                None => break,
            }
        },
        What::Configure { job } => {
            let j = JobConfig::load(&job).with_context(|| format!("job {}", job.display()))?;
            c.configure(&j)?;
            if args.json {
                println!(
                    "{{\"configured\": true, \"n\": {}, \"slots\": {}, \"payload\": {}}}",
                    j.n(),
                    j.slots,
                    j.payload.bytes()
                );
            } else {
                println!("configured: n = {}, S = {}, payload {} bytes", j.n(), j.slots, j.payload.bytes());
            }
        }
        What::ResetCounters => {
            c.reset_counters()?;
            if args.json {
                println!("{{\"counters_reset\": true}}");
            } else {
                println!("counters reset");
            }
        }
    }
    Ok(())
}
