//! `spotagg switch`: an engine (the reference switch by default) served over a UDP socket, for
//! hosts without an FPGA and for tests.
//!
//! The serve loop is [`spotagg_spec::udp_switch::serve_threads`]: with `--threads T` (default:
//! the job's `switch_ports`), thread t listens on the bound port + t and owns the slots s with
//! s mod T = t; workers of a job with `switch_ports = T` send slot s there.
//!
//! The first line on stdout is `spotagg switch: listening on ADDR` (with the port the system
//! chose for `--bind IP:0`). The counters are printed when the switch exits (`--exit-after-idle`)
//! and, with `--stats-every`, periodically on stderr. With `--metrics ADDR` the counters, the
//! tree counters and the per-rank straggler counters (docs/switch.md §4, §6, §7) are served in
//! the Prometheus text format on `http://ADDR/metrics` (the second line on stdout says where).

use crate::engines::{load_job, EngineKind};
use anyhow::{Context, Result};
use spotagg_driver::transport::{enlarge_buffers, SOCKET_BUFFER};
use spotagg_driver::Counters;
use spotagg_driver::JobConfig;
use spotagg_spec::metrics_http::{serve_http, MetricsBoard};
use spotagg_spec::multi_job::{MultiSwitch, SharedSwitch};
pub use spotagg_spec::udp_switch::{counters_line, serve, serve_threads_lanes, ServeOptions};
use std::io::{self, Write};
use std::net::{SocketAddr, TcpListener, UdpSocket};
use std::path::PathBuf;
use std::sync::atomic::AtomicBool;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Duration;

/// Arguments of `spotagg switch`.
#[derive(clap::Args)]
pub struct Args {
    /// The job configuration (TOML).
    #[arg(long, required_unless_present_any = ["jobs", "controller"], conflicts_with = "jobs")]
    config: Option<PathBuf>,
    /// Several jobs on one switch (docs/switch.md §8): a TOML file of `[[job]]` entries, each a
    /// job file (`config`) and its `slot_base` (spotagg_spec::multi_job). Reference engine, one thread.
    #[arg(long)]
    jobs: Option<PathBuf>,
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
    /// Threads, one UDP port each (the bound port + t), each owning the slots s with s mod T = t.
    /// Default: the job's `switch_ports`; another value is refused, as workers would send to
    /// the wrong ports.
    #[arg(long)]
    threads: Option<u16>,
    /// Plain recv_from/send_to, one datagram a system call (no recvmmsg, GRO or GSO).
    #[arg(long)]
    plain_io: bool,
    /// Serve the counters, tree and straggler counters in the Prometheus text format on
    /// http://ADDR/metrics (e.g. 127.0.0.1:9464).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Serve SwitchML's gRPC controller on ADDR (e.g. 127.0.0.1:50099): jobs set themselves up
    /// as their workers register (docs/controller.md). With `--config`, that job keeps its slots
    /// and sessions take others. Reference engine, one thread.
    #[arg(long, value_name = "ADDR", conflicts_with = "jobs")]
    controller: Option<SocketAddr>,
    /// The switch's IPv4 address in the controller's answers and jobs (default: --bind's).
    #[arg(long, requires = "controller")]
    switch_ip: Option<std::net::Ipv4Addr>,
    /// The switch's MAC in the controller's answers and jobs.
    #[arg(long, requires = "controller", default_value = "02:00:5a:00:00:01")]
    switch_mac: spotagg_driver::wire::MacAddr,
    /// Slots of the switch's memory that sessions share (with `--config`, past its job's).
    #[arg(long, requires = "controller", default_value_t = 4096)]
    capacity: u32,
    /// Slots a session takes (or what is left). SwitchML's client at its defaults (4 threads,
    /// 256 packets in flight) needs 448.
    #[arg(long, requires = "controller", default_value_t = 512)]
    slots_per_session: u16,
    /// The controller's options (with --controller).
    #[command(flatten)]
    ctl: super::controller_args::ControllerArgs,
}

/// The 16-bit twin of each of `sockets` (docs/switch.md §9): the same address, the port with bit
/// 4 set (0xBEE0 + t → 0xBEF0 + t). The sockets must be on SwitchML ports.
pub fn bind_lanes16(sockets: &[UdpSocket]) -> Result<Vec<UdpSocket>> {
    use spotagg_driver::wire::Lanes;
    sockets
        .iter()
        .map(|s| {
            let mut a = s.local_addr()?;
            anyhow::ensure!(
                spotagg_driver::wire::switchml::is_switchml_port(a.port()),
                "the job has lanes16 = true: the switch must listen on SwitchML ports (0xBEE0..=0xBEEF, 48864..=48879) \
                 so that its 16-bit lanes have theirs (0xBEF0..=0xBEFF); --bind gives port {}",
                a.port()
            );
            a.set_port(Lanes::I16.port(a.port()));
            UdpSocket::bind(a).with_context(|| format!("cannot bind {a} for the job's 16-bit lanes (lanes16 = true)"))
        })
        .collect()
}

/// Binds `threads` UDP sockets on consecutive ports from `addr` (port 0: the first port the
/// system gives that has its successors free).
pub fn bind_ports(addr: SocketAddr, threads: u16) -> Result<Vec<UdpSocket>> {
    let attempts = if addr.port() == 0 { 64 } else { 1 };
    let mut last_err = None;
    for _ in 0..attempts {
        let first = UdpSocket::bind(addr).with_context(|| format!("cannot bind {addr}"))?;
        let base = first.local_addr()?;
        let mut socks = vec![first];
        for t in 1..threads {
            let mut a = base;
            let Some(p) = base.port().checked_add(t) else { break };
            a.set_port(p);
            match UdpSocket::bind(a) {
                Ok(s) => socks.push(s),
                Err(e) => {
                    last_err = Some(anyhow::anyhow!("cannot bind {a} (port {t} of --threads {threads}): {e}"));
                    break;
                }
            }
        }
        if socks.len() == usize::from(threads) {
            return Ok(socks);
        }
    }
    Err(last_err.unwrap_or_else(|| anyhow::anyhow!("no {threads} consecutive free ports from {addr}")))
}

/// Counters of several engines summed.
pub fn sum_counters(cs: impl IntoIterator<Item = Counters>) -> Counters {
    let mut t = Counters::default();
    for c in cs {
        t.add(&c);
    }
    t
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    anyhow::ensure!((0.0..=1.0).contains(&args.loss), "--loss {} is not a probability in 0..=1", args.loss);
    anyhow::ensure!(
        args.controller.is_some() || (args.ctl.token_file.is_none() && args.ctl.allow.is_empty()),
        "--token-file and --allow are the controller's: give --controller ADDR"
    );
    let mut controlled = None;
    let (job, threads, mut engines) = if let Some(ctl) = args.controller {
        let (engine, job) = controlled_switch(&args, ctl)?;
        controlled = Some(engine.clone());
        let engines: Vec<Box<dyn spotagg_driver::Engine>> = vec![Box::new(engine)];
        (job, 1, engines)
    } else if let Some(jobs) = &args.jobs {
        let multi = MultiSwitch::load(jobs)?;
        anyhow::ensure!(
            matches!(args.engine, EngineKind::Model),
            "--jobs runs the reference switch: drop --engine or use --engine model"
        );
        anyhow::ensure!(args.threads.unwrap_or(1) == 1, "--jobs serves on one thread: drop --threads");
        for (p, _) in multi.jobs() {
            println!(
                "spotagg switch: job_number {}: {} workers, {} B payload, slots {}..{}",
                p.job.job_number,
                p.job.n(),
                p.job.payload.bytes(),
                p.slot_base,
                p.slot_base + u32::from(p.job.slots)
            );
        }
        let engines: Vec<Box<dyn spotagg_driver::Engine>> = vec![Box::new(multi.clone())];
        (multi.addressing_job(), 1, engines)
    } else {
        let path = args.config.as_ref().expect("clap requires --config without --jobs");
        let job = load_job(path)?;
        let threads = args.threads.unwrap_or(job.switch_ports);
        anyhow::ensure!(
            threads == job.switch_ports,
            "--threads {threads} but the job's switch_ports = {}: its workers send slot s to port + (s mod {}); set switch_ports = {threads} in {}",
            job.switch_ports,
            job.switch_ports,
            path.display()
        );
        let engines = (0..threads).map(|_| args.engine.build(&job)).collect::<Result<Vec<_>>>()?;
        (job, threads, engines)
    };
    let sockets = bind_ports(args.bind, threads)?;
    let sockets16 = if job.lanes16 { bind_lanes16(&sockets)? } else { Vec::new() };
    for s in sockets.iter().chain(&sockets16) {
        enlarge_buffers(s, SOCKET_BUFFER);
    }
    let addr = sockets[0].local_addr()?;
    if threads > 1 {
        println!(
            "spotagg switch: listening on {addr} ({} engine, {} workers, {threads} threads on ports {}..={})",
            engines[0].name(),
            job.n(),
            addr.port(),
            addr.port() + threads - 1
        );
    } else {
        println!("spotagg switch: listening on {addr} ({} engine, {} workers)", engines[0].name(), job.n());
    }
    if let Some(s) = sockets16.first() {
        println!("spotagg switch: 16-bit lanes on {} (docs/switch.md §9)", s.local_addr()?);
    }
    io::stdout().flush()?;
    let board = Arc::new(MetricsBoard::new(usize::from(threads)));
    let http = match args.metrics {
        Some(a) => {
            let l = TcpListener::bind(a).with_context(|| format!("--metrics {a}: cannot listen"))?;
            println!("spotagg switch: metrics on http://{}/metrics", l.local_addr()?);
            io::stdout().flush()?;
            Some(l)
        }
        None => None,
    };
    let opts = ServeOptions {
        loss: args.loss,
        seed: args.seed,
        exit_after_idle: args.exit_after_idle.map(Duration::from_secs_f64),
        stats_every: args.stats_every.map(Duration::from_secs_f64),
        plain_io: args.plain_io,
        metrics: http.as_ref().map(|_| board.clone()),
    };
    let ctl_stop = Arc::new(AtomicBool::new(false));
    let ctl_thread = match (&controlled, args.controller) {
        (Some(sw), Some(addr)) => {
            let mut settings = args.ctl.settings(job.switch_mac, job.switch_ip, addr_port(&sockets[0])?)?;
            settings.lanes16 = !sockets16.is_empty();
            settings.slots_per_session = args.slots_per_session;
            let registry = spotagg_controller::registry::Registry::new(settings, sw.clone());
            let (at, h) = spotagg_controller::server::Controller::new(registry)
                .spawn(addr, ctl_stop.clone())
                .with_context(|| format!("--controller {addr}: cannot listen"))?;
            println!("spotagg switch: controller on {at} (docs/controller.md)");
            io::stdout().flush()?;
            Some(h)
        }
        _ => None,
    };
    let http_stop = AtomicBool::new(false);
    let st = std::thread::scope(|scope| {
        let server = http.as_ref().map(|l| scope.spawn(|| serve_http(l, &board, &http_stop)));
        let st = serve_threads_lanes(&sockets, &sockets16, &job, &mut engines, &opts, &AtomicBool::new(false));
        http_stop.store(true, Ordering::Relaxed);
        if let Some(h) = server {
            if let Ok(Err(e)) = h.join() {
                eprintln!("spotagg switch: metrics server: {e}");
            }
        }
        st
    });
    ctl_stop.store(true, Ordering::Relaxed);
    if let Some(h) = ctl_thread {
        let _ = h.join();
    }
    let st = st?;
    let c = sum_counters(engines.iter().map(|e| e.counters()));
    let line = format!(
        "datagrams in {} out {}, injected drops in {} out {}, unknown senders {}, misrouted {}; system calls: {} receive, {} send",
        st.datagrams_in,
        st.datagrams_out,
        st.injected_drops_in,
        st.injected_drops_out,
        st.unknown_senders,
        st.misrouted,
        st.recv_calls,
        st.send_calls
    );
    print_summary("switch", args.json, &c, ("udp", &st), &line);
    Ok(())
}

/// The switch a controller configures: the `--config` job (if any) at slots 0..S, and the
/// switch's addresses, as a job for the serve loop's addressing (no workers: those of the
/// sessions' jobs are found through the engine, [`spotagg_driver::Engine::peer_mac`]).
fn controlled_switch(args: &Args, ctl: SocketAddr) -> Result<(SharedSwitch, JobConfig)> {
    use spotagg_spec::multi_job::JobPlacement;
    anyhow::ensure!(
        matches!(args.engine, EngineKind::Model),
        "--controller runs the reference switch: drop --engine or use --engine model"
    );
    anyhow::ensure!(args.threads.unwrap_or(1) == 1, "--controller serves on one thread: drop --threads");
    let bind_ip = match args.bind {
        SocketAddr::V4(a) if !a.ip().is_unspecified() => Some(*a.ip()),
        _ => None,
    };
    let file_job = args.config.as_ref().map(|p| load_job(p)).transpose()?;
    let switch_ip = args.switch_ip.or(file_job.as_ref().map(|j| j.switch_ip)).or(bind_ip).with_context(|| {
        format!("--controller {ctl}: give --switch-ip, the address workers send to (--bind {} names none)", args.bind)
    })?;
    let mut multi = MultiSwitch::empty(args.switch_mac, switch_ip, args.capacity);
    let mut addressing = JobConfig::example(1, spotagg_driver::wire::PayloadSize::B256, 1);
    addressing.workers.clear();
    addressing.lanes16 = true;
    if let Some(j) = file_job {
        anyhow::ensure!(
            j.switch_mac == args.switch_mac,
            "{}: switch_mac = {} but --switch-mac {}: the controller's jobs share the switch's MAC",
            args.config.as_ref().expect("loaded").display(),
            j.switch_mac,
            args.switch_mac
        );
        addressing = j.clone();
        addressing.lanes16 = true;
        multi.add(JobPlacement { job: j, slot_base: 0 }).map_err(|e| anyhow::anyhow!("--config: {e}"))?;
    }
    addressing.switch_mac = args.switch_mac;
    addressing.switch_ip = switch_ip;
    addressing.switch_port = match args.bind.port() {
        0 => addressing.switch_port,
        p => p,
    };
    Ok((SharedSwitch(Arc::new(std::sync::Mutex::new(multi))), addressing))
}

fn addr_port(s: &UdpSocket) -> Result<u16> {
    Ok(s.local_addr()?.port())
}

/// What a serving command prints when it stops: the counters and its own figures (`stats`,
/// under its key), as one JSON object with `json`, else as two lines (the figures as `line`).
pub fn print_summary(command: &str, json: bool, c: &Counters, stats: (&str, &impl serde::Serialize), line: &str) {
    if json {
        println!("{}", serde_json::json!({ "counters": c, stats.0: stats.1 }));
    } else {
        println!("spotagg {command}: {}", counters_line(c));
        println!("spotagg {command}: {line}");
    }
}
