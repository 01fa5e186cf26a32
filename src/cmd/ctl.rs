//! `spotagg ctl`: the control link to a board (or a simulated board on a pseudo-terminal):
//! identity, status, counters, job configuration, counter reset, the EAPS node (`eaps
//! configure RING.toml`, `eaps status`), and a Prometheus exporter
//! (`metrics --listen ADDR`) that polls the link.
//!
//! Every command opens the port, reads the identity and refuses a design whose major version
//! differs from this tool's (`spotagg_driver::control::DESIGN_VERSION`). Output is a human
//! table by default, one JSON object with `--json` (for counters: the keys of
//! `Counters::named()` in that order). A board that does not answer within `--timeout-ms` is
//! an error, not a hang.

use anyhow::{bail, Context, Result};
use spotagg_driver::control::{link_state_name, open_serial, protocol, Control, CounterSnapshot, DESIGN_VERSION};
use spotagg_driver::metrics::{board_families, straggler_families, Family, Kind, RankLag};
use spotagg_driver::JobConfig;
use spotagg_spec::metrics_http::{serve_http, MetricsBoard};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpListener};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::Arc;
use std::time::{Duration, Instant};

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
    /// On a board of several jobs (docs/switch.md §8): the job the command reads or writes
    /// (its counters, status, straggler counters, configuration); job 0 is selected again
    /// afterwards. A board of one job refuses it.
    #[arg(long = "job", global = true, value_name = "J")]
    select_job: Option<usize>,
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
    /// Write a job configuration (TOML) and enable it (clears the slot state); or, with
    /// `--jobs`, each job of a switch of several jobs into its own core.
    Configure {
        /// The job configuration.
        #[arg(required_unless_present = "jobs")]
        job: Option<PathBuf>,
        /// A switch of several jobs (the `spotagg switch --jobs` file, docs/switch.md §8).
        #[arg(long, conflicts_with = "job")]
        jobs: Option<PathBuf>,
    },
    /// Zero the counters.
    ResetCounters,
    /// The board's EAPS node (docs/eaps.md §12): configure it from a ring file, or read its
    /// domains' status.
    Eaps {
        #[command(subcommand)]
        what: EapsWhat,
    },
    /// Serve SwitchML's gRPC controller on ADDR (docs/controller.md): a session's job is
    /// written into a free core of the board over this link when its last worker registers
    /// (each core one session), and disabled when the session ends. Runs until killed.
    Serve {
        /// Address of the controller (e.g. 0.0.0.0:50099; port 0 picks one, printed on stdout).
        #[arg(long)]
        controller: SocketAddr,
        /// The switch's IPv4 address in the answers and jobs (default: the board's job's).
        #[arg(long)]
        switch_ip: Option<std::net::Ipv4Addr>,
        /// The switch's MAC (default: the board's job's).
        #[arg(long)]
        switch_mac: Option<spotagg_driver::wire::MacAddr>,
        #[command(flatten)]
        ctl: super::controller_args::ControllerArgs,
    },
    /// Serve the board's counters and status as Prometheus metrics on http://ADDR/metrics,
    /// polling the control link every `--every` seconds (the first poll before serving).
    Metrics {
        /// Address to listen on (e.g. 127.0.0.1:9465; port 0 picks one, printed on stdout).
        #[arg(long)]
        listen: SocketAddr,
        /// Seconds between polls.
        #[arg(long, default_value_t = 1.0)]
        every: f64,
    },
}

#[derive(clap::Subcommand)]
enum EapsWhat {
    /// Write the domains of a ring file (the Linux daemon's format; ports "0"/"eth0" and
    /// "1"/"eth1") into the node and enable it.
    Configure {
        /// The ring file.
        ring: PathBuf,
    },
    /// Per domain: role, state, port states, PDU counters, time and cause of the last
    /// transition.
    Status,
}

/// One counter snapshot as a JSON object: the core's counters under the keys of
/// `Counters::named()` in that order, then `ports` (each MAC port's counters, empty without
/// MACs), `flooded` (null without MACs) and `quiescent`.
pub fn snapshot_json(k: &CounterSnapshot) -> String {
    let mut fields: Vec<String> = k.core.named().iter().map(|(n, x)| format!("\"{n}\": {x}")).collect();
    fields.push(format!("\"ports\": {}", serde_json::to_string(&k.ports).unwrap_or_default()));
    fields.push(format!("\"flooded\": {}", serde_json::to_string(&k.flooded).unwrap_or_default()));
    fields.push(format!("\"quiescent\": {}", k.quiescent));
    fields
        .push(format!("\"unknown_source_job\": {}", serde_json::to_string(&k.unknown_source_job).unwrap_or_default()));
    fields.push(format!("\"tree\": {}", serde_json::to_string(&k.tree).unwrap_or_default()));
    format!("{{{}}}", fields.join(", "))
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if let What::Metrics { every, .. } = args.what {
        if !(every.is_finite() && (0.05..=3600.0).contains(&every)) {
            bail!("--every {every}: the poll period must be between 0.05 and 3600 seconds");
        }
    }
    let mut c = open_serial(&args.serial, args.baud, Duration::from_millis(args.timeout_ms))
        .with_context(|| format!("control link on {}", args.serial))?;
    if let Some(j) = args.select_job {
        c.select_job(j).with_context(|| format!("--job {j} on {}", args.serial))?;
    }
    if let What::Serve { controller, switch_ip, switch_mac, ctl } = args.what {
        return serve_controller(c, &args.serial, controller, switch_ip, switch_mac, &ctl);
    }
    if let What::Metrics { listen, every } = args.what {
        // (With --job, the exporter polls that job's counters; job 0 stays unselected.)
        return export(c, &args.serial, args.baud, listen, Duration::from_secs_f64(every));
    }
    let result = command(&mut c, args.what, args.json, &args.serial);
    if args.select_job.is_some() {
        // Job 0 again, so that a later command without --job reads and writes job 0.
        c.select_job(0).with_context(|| format!("selecting job 0 again on {}", args.serial))?;
    }
    result
}

/// A board's cores as the controller's switch: session i of the board's slot ranges is core
/// `slot_base / S` (S the slots each core is built with; every session takes a whole core).
struct BoardJobs<P: Read + Write + Send + 'static> {
    control: Control<P>,
    serial: String,
    cores: usize,
    core_slots: u32,
}

impl<P: Read + Write + Send + 'static> BoardJobs<P> {
    fn on_core<T>(
        &mut self,
        core: usize,
        f: impl FnOnce(&mut Control<P>) -> std::result::Result<T, spotagg_driver::control::ControlError>,
    ) -> std::result::Result<T, String> {
        if self.cores > 1 {
            self.control.select_job(core).map_err(|e| format!("{}: job select {core}: {e}", self.serial))?;
        }
        let r = f(&mut self.control).map_err(|e| format!("{}: core {core}: {e}", self.serial));
        if self.cores > 1 {
            self.control.select_job(0).map_err(|e| format!("{}: job select 0: {e}", self.serial))?;
        }
        r
    }
}

impl<P: Read + Write + Send + 'static> spotagg_controller::registry::SwitchJobs for BoardJobs<P> {
    fn add(&mut self, p: spotagg_spec::multi_job::JobPlacement) -> std::result::Result<(), String> {
        let core = (p.slot_base / self.core_slots) as usize;
        if !p.slot_base.is_multiple_of(self.core_slots) || core >= self.cores {
            return Err(format!("slots {}.. are no core's of the board (S = {})", p.slot_base, self.core_slots));
        }
        let r = self.on_core(core, |c| c.configure(&p.job));
        if r.is_ok() {
            eprintln!(
                "spotagg ctl serve: core {core}: job_number {}, {} workers, {} B payload, written and enabled",
                p.job.job_number,
                p.job.n(),
                p.job.payload.bytes()
            );
        }
        r
    }
    fn remove(&mut self, slot_base: u32) {
        let core = (slot_base / self.core_slots) as usize;
        // Writing a job register disables the job until it is enabled again (docs/control.md):
        // its job_number, rewritten as it is.
        let r = self.on_core(core, |c| {
            let n = c.read(protocol::reg::JOB_NUMBER, 1)?;
            c.write(protocol::reg::JOB_NUMBER, &n)
        });
        match r {
            Ok(()) => eprintln!("spotagg ctl serve: core {core}: job disabled"),
            Err(e) => eprintln!("spotagg ctl serve: core {core}: cannot disable the job: {e}"),
        }
    }
    fn capacity(&self) -> u32 {
        self.cores as u32 * self.core_slots
    }
}

/// `spotagg ctl serve`: the controller of a board (docs/controller.md §1).
fn serve_controller<P: Read + Write + Send + 'static>(
    mut c: Control<P>,
    serial: &str,
    addr: SocketAddr,
    switch_ip: Option<std::net::Ipv4Addr>,
    switch_mac: Option<spotagg_driver::wire::MacAddr>,
    args: &super::controller_args::ControllerArgs,
) -> Result<()> {
    let id = c.identity()?;
    let status = c.status()?;
    let j = &status.job_registers;
    let board_mac = {
        let (hi, lo) = (j[0].to_be_bytes(), j[1].to_be_bytes());
        spotagg_driver::wire::MacAddr([hi[2], hi[3], lo[0], lo[1], lo[2], lo[3]])
    };
    let mac = switch_mac.unwrap_or(board_mac);
    let ip = switch_ip.unwrap_or(std::net::Ipv4Addr::from(j[2]));
    // A board of several jobs answers the job select register; one of one job does not.
    let cores = if c.select_job(1).is_ok() {
        c.select_job(0)?;
        2
    } else {
        1
    };
    let payload = spotagg_driver::wire::PayloadSize::from_bytes(id.max_payload as usize)
        .with_context(|| format!("{serial}: the board's max payload {} B is no SwitchML size", id.max_payload))?;
    let mut settings = args.settings(mac, ip, spotagg_driver::wire::switchml::UDP_PORT_BASE)?;
    settings.payloads = vec![payload];
    settings.lanes16 = false;
    settings.slots_per_session = u16::try_from(id.slots).unwrap_or(u16::MAX);
    // The board's own clock is not the controller's: its sessions do not time out.
    settings.session_timeout = Duration::ZERO;
    let jobs = BoardJobs { control: c, serial: serial.to_string(), cores, core_slots: id.slots };
    let registry = spotagg_controller::registry::Registry::new(settings, jobs);
    let stop = Arc::new(AtomicBool::new(false));
    let (at, handle) = spotagg_controller::server::Controller::new(registry)
        .spawn(addr, stop)
        .with_context(|| format!("--controller {addr}: cannot listen"))?;
    println!(
        "spotagg ctl serve: controller on {at} for {serial}: {cores} core(s) of {} slots, {} B payload, switch {mac} / {ip}",
        id.slots,
        payload.bytes()
    );
    std::io::stdout().flush()?;
    handle.join().map_err(|_| anyhow::anyhow!("the controller's thread panicked"))?;
    Ok(())
}

fn command(c: &mut Control<impl Read + Write + Send + 'static>, what: What, json: bool, serial: &str) -> Result<()> {
    match what {
        What::Id => {
            let id = c.identity()?;
            if json {
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
            if json {
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
                if s.worker_ports == 1 {
                    println!("worker port    {}", s.worker_port);
                } else {
                    println!("worker ports   {}..={}", s.worker_port, s.worker_port + s.worker_ports - 1);
                }
                println!("job number     {}", s.job_number);
                println!("uptime         {} cycles", s.uptime_cycles);
                for (p, l) in s.link_state.iter().enumerate() {
                    println!("port {p} link    {}", link_state_name(*l));
                }
            }
        }
        What::Counters { watch } => loop {
            let k = c.snapshot()?;
            if json {
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
                if let Some(u) = k.unknown_source_job.filter(|&u| u > 0) {
                    println!("unknown (source, job) pairs: {u}");
                }
                if !k.quiescent {
                    println!("(snapshot not quiescent: the core did not become idle)");
                }
            }
            match watch {
                Some(secs) => {
                    std::thread::sleep(Duration::from_secs_f64(secs.max(0.05)));
                    if !json {
                        println!();
                    }
                }
                None => break,
            }
        },
        What::Configure { jobs: Some(path), .. } => {
            let sw = spotagg_spec::multi_job::MultiSwitch::load(&path).map_err(|e| anyhow::anyhow!("{e}"))?;
            let jobs: Vec<JobConfig> = sw.jobs().map(|(p, _)| p.job.clone()).collect();
            c.configure_jobs(&jobs).with_context(|| format!("configuring {} on {serial}", path.display()))?;
            if json {
                let each: Vec<String> = jobs
                    .iter()
                    .map(|j| {
                        format!("{{\"n\": {}, \"slots\": {}, \"payload\": {}}}", j.n(), j.slots, j.payload.bytes())
                    })
                    .collect();
                println!("{{\"configured\": true, \"jobs\": [{}]}}", each.join(", "));
            } else {
                for (i, j) in jobs.iter().enumerate() {
                    println!("configured job {i}: n = {}, S = {}, payload {} bytes", j.n(), j.slots, j.payload.bytes());
                }
            }
        }
        What::Configure { job, .. } => {
            let job = job.context("a job file or --jobs")?;
            let j = JobConfig::load(&job).with_context(|| format!("job {}", job.display()))?;
            c.configure(&j)?;
            if json {
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
        What::Eaps { what: EapsWhat::Configure { ring } } => {
            let r = crate::cmd::eaps::config::load(&ring)?;
            let domains = crate::cmd::eaps::config::board_settings(&r, protocol::eaps::BOARD_DOMAINS)?;
            c.configure_eaps(&domains, true).with_context(|| format!("EAPS configuration on {serial}"))?;
            if !json {
                for (d, s) in r.domains.iter().zip(&domains) {
                    let s = s.as_ref().expect("configured");
                    println!(
                        "domain {} ({}): control VLAN {}, protected {}..={}",
                        d.name,
                        if s.master { "master" } else { "transit" },
                        s.control_vlan,
                        s.protected.0,
                        s.protected.1
                    );
                }
            }
        }
        What::Eaps { what: EapsWhat::Status } => {
            let st = c.eaps_status(protocol::eaps::BOARD_DOMAINS)?;
            if json {
                println!("{}", serde_json::to_string(&st)?);
            } else {
                for d in &st {
                    if !d.active {
                        println!("domain {}       not configured", d.domain);
                        continue;
                    }
                    let f = |b: bool| if b { "forwarding" } else { "blocking" };
                    println!(
                        "domain {}       {} (primary port {}), {}, port 0 {}, port 1 {}",
                        d.domain,
                        if d.master { "master" } else { "transit" },
                        d.primary_port,
                        d.state,
                        f(d.forwarding[0]),
                        f(d.forwarding[1])
                    );
                    println!(
                        "  PDUs          sent {}, received {}, forwarded {}, dropped {}",
                        d.tx, d.rx, d.forwarded, d.dropped
                    );
                    println!(
                        "  malformed     length {}, version {}, checksum {}, TLV list {}",
                        d.malformed[0], d.malformed[1], d.malformed[2], d.malformed[3]
                    );
                    println!("  last change   {} µs: {}", d.transition_time, d.transition_cause);
                }
            }
        }
        What::ResetCounters => {
            c.reset_counters()?;
            if json {
                println!("{{\"counters_reset\": true}}");
            } else {
                println!("counters reset");
            }
        }
        What::Metrics { .. } | What::Serve { .. } => bail!("{serial}: the exporter and the controller run from `run`"),
    }
    Ok(())
}

/// The exporter's own families: whether the last poll succeeded, polls and failed polls, and the
/// last poll's duration.
fn exporter_families(up: bool, polls: u64, errors: u64, seconds: f64) -> Vec<Family> {
    vec![
        Family::single(
            "spotagg_ctl_up",
            "1 if the last poll of the control link succeeded.",
            Kind::Gauge,
            f64::from(u8::from(up)),
        ),
        Family::single("spotagg_ctl_polls_total", "Polls of the control link.", Kind::Counter, polls as f64),
        Family::single(
            "spotagg_ctl_poll_errors_total",
            "Polls that failed (the error is on stderr).",
            Kind::Counter,
            errors as f64,
        ),
        Family::single("spotagg_ctl_poll_seconds", "Duration of the last poll.", Kind::Gauge, seconds),
    ]
}

/// `ctl metrics`: one thread polls the link (a counter snapshot, the status and, from a core
/// with them, the straggler counters under the software switch's names) and publishes
/// the families; this one serves them. The first poll must succeed (else the command fails, naming
/// the port); a later failed poll is reported on stderr and leaves only the exporter's families
/// (`spotagg_ctl_up 0`), so a scrape never shows stale board figures as current, and polling
/// goes on.
fn export<P: Read + Write + Send + 'static>(
    mut c: Control<P>,
    serial: &str,
    baud: u32,
    listen: SocketAddr,
    every: Duration,
) -> Result<()> {
    // The board's core clock, at which its straggler counters count: its UART's clocks per bit
    // (an identity register) at the link's baud rate (100 MHz for a board of one job, 83.33 MHz
    // for two; within the divisor's rounding, 0.05 %).
    let id = c.identity().map_err(|e| anyhow::anyhow!("identity of the board on {serial}: {e}"))?;
    let core_mhz = f64::from(id.baud_divisor) * f64::from(baud) / 1e6;
    let board = Arc::new(MetricsBoard::new(1));
    let (mut polls, mut errors) = (0u64, 0u64);
    let mut poll = move |board: &MetricsBoard| -> Result<(), String> {
        let t = Instant::now();
        // The straggler counters (if the core has them) of the job's ranks, from the same snapshot.
        let got = c.snapshot().and_then(|k| {
            let s = c.status()?;
            let n = s.job_registers.get(3).map_or(0, |&n| n as usize).min(32);
            Ok((k, c.stragglers(n)?, s))
        });
        polls += 1;
        let secs = t.elapsed().as_secs_f64();
        match got {
            Ok((k, lags, s)) => {
                let mut f = board_families(&k, &s);
                if let Some([up, resent, results, stale]) = k.tree {
                    let t = spotagg_spec::reference::TreeCounters {
                        partials_up: up,
                        partials_resent: resent,
                        parent_results: results,
                        parent_results_stale: stale,
                    };
                    f.extend(spotagg_spec::reference::tree_families(&t, &[]));
                }
                if let Some(u) = k.unknown_source_job {
                    f.push(Family::single(
                        "spotagg_switch_unknown_source_job_total",
                        "SwitchML frames of no job's (source address, source port), dropped (0 with one job).",
                        Kind::Counter,
                        u as f64,
                    ));
                }
                if let Some(lags) = lags {
                    let ranks: Vec<RankLag> = lags.iter().map(|w| RankLag::from_core_words_at(w, core_mhz)).collect();
                    f.extend(straggler_families(&ranks, &[]));
                }
                f.extend(exporter_families(true, polls, errors, secs));
                board.publish(0, f);
                Ok(())
            }
            Err(e) => {
                errors += 1;
                board.publish(0, exporter_families(false, polls, errors, secs));
                Err(e.to_string())
            }
        }
    };
    poll(&board).map_err(|e| anyhow::anyhow!("first poll of the control link on {serial}: {e}"))?;
    let l = TcpListener::bind(listen).with_context(|| format!("--listen {listen}: cannot listen"))?;
    println!(
        "spotagg ctl: metrics on http://{}/metrics (polling {serial} every {:.2} s)",
        l.local_addr()?,
        every.as_secs_f64()
    );
    std::io::stdout().flush()?;
    let stop = Arc::new(AtomicBool::new(false));
    let poller = {
        let (board, stop, serial) = (board.clone(), stop.clone(), serial.to_string());
        std::thread::spawn(move || {
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                std::thread::sleep(every);
                if let Err(e) = poll(&board) {
                    eprintln!("spotagg ctl metrics: poll of {serial} failed: {e}");
                }
            }
        })
    };
    let served = serve_http(&l, &board, &stop);
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let _ = poller.join();
    served.context("metrics server")
}
