//! `spotagg tap`: an engine attached to a Linux TAP device, so that the kernel's network stack
//! (ARP, ping, ordinary UDP sockets) talks to the switch as to a host on the link.
//!
//! The TAP device must exist (`ip tuntap add dev NAME mode tap`); the command attaches to it
//! with `TUNSETIFF` (`IFF_TAP | IFF_NO_PI`: whole Ethernet frames, no packet-information
//! header, no FCS). Every frame the kernel sends on the device is fed to the engine, and every
//! frame the engine emits is written back to the device, in order. Frames that are not for the
//! switch (IPv6 neighbour discovery, other hosts' traffic) go to the engine too, which counts
//! and drops them.
//!
//! What is attached is either the switch *core* (`--engine verilator|rtl|model`), whose
//! interface is Ethernet frames without preamble and FCS, which is what a TAP device carries,
//! or, with `--board-model`, the MAC-level board model ([`BoardModel`]: the board's switch
//! fabric — both MAC ports, their FIFOs, the bridge, the core — in Verilator): every frame from
//! the kernel is padded to 60 bytes, given preamble, SFD and FCS and sent into port 0's GMII
//! receive side, one byte a clock; what port 0's MAC transmits is checked (preamble, SFD, FCS)
//! and written back to the kernel without them. Port 1 has no host behind it: what it sends
//! (bridged or flooded frames) is counted and dropped. [`serve_tap`] drives any [`Engine`].
//!
//! The first line on stdout is `spotagg tap: attached to NAME (...)`, printed once the engine
//! is built and the device is attached. At exit (`--exit-after-idle`, SIGINT or SIGTERM) the
//! engine's counters and the device's frame counts are printed.

use crate::cmd::switch::print_summary;
use crate::engines::{load_job, EngineKind};
use anyhow::{bail, Context, Result};
use spotagg_driver::Engine;
pub use spotagg_sim::board_model::BoardModel;
use std::fs::{File, OpenOptions};
use std::io::{self, Read, Write};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// Arguments of `spotagg tap`.
#[derive(clap::Args)]
pub struct Args {
    /// The job configuration (TOML).
    #[arg(long, required_unless_present = "jobs")]
    config: Option<PathBuf>,
    /// A switch of several jobs (the `spotagg switch --jobs` file, docs/switch.md §8), on the
    /// board model: a core per job behind the job router, every job in the power-up ROM.
    #[arg(long, conflicts_with = "config", requires = "board_model")]
    jobs: Option<PathBuf>,
    /// Name of an existing TAP device (`ip tuntap add dev NAME mode tap`).
    #[arg(long)]
    tap: String,
    /// The switch implementation attached to the device.
    #[arg(long, value_enum, default_value = "verilator")]
    engine: EngineKind,
    /// Exit after this many seconds without a frame from the device, printing the counters.
    #[arg(long)]
    exit_after_idle: Option<f64>,
    /// Print the final counters as one JSON object.
    #[arg(long)]
    json: bool,
    /// Attach the MAC-level board model (switch fabric with MACs, in Verilator) instead of
    /// `--engine`: frames go in and out through port 0's MAC with preamble and FCS.
    #[arg(long, conflicts_with = "engine")]
    board_model: bool,
    /// Port 1 of the board model on this second TAP device: the board is then a two-port
    /// node (a ring node, with `--eaps`), every frame from either device fed into its port's
    /// GMII receive side and every frame a port's MAC sends written to that port's device.
    #[arg(long, requires = "board_model", conflicts_with = "jobs")]
    tap1: Option<String>,
    /// Configure the board model's EAPS node from a ring file (the format of `spotagg eaps`,
    /// ring ports "0"/"eth0" and "1"/"eth1"), as `spotagg ctl eaps configure` does a board,
    /// and enable it. Its time is the wall clock in µs, the board's unit.
    #[arg(long, requires = "tap1")]
    eaps: Option<PathBuf>,
    /// Port 0's link state is this interface's carrier (`/sys/class/net/IFACE/carrier`, read
    /// every millisecond), as a board reads its PHY's: a loss sends LINK-DOWN. Default: up.
    #[arg(long, requires = "tap1")]
    carrier0: Option<String>,
    /// Port 1's link state is this interface's carrier.
    #[arg(long, requires = "tap1")]
    carrier1: Option<String>,
}

/// The MAC-level board model for `job`: the switch fabric of `spotagg_boards` with a core of
/// width 4 and the job's slots and payload size, in Verilator ([`BoardModel`]).
pub fn board_model(job: &spotagg_driver::JobConfig) -> Result<BoardModel> {
    board_model_jobs(std::slice::from_ref(job))
}

/// The MAC-level board model of a switch of several jobs (docs/switch.md §8; 1 or 2, one core
/// each, every core with the largest job's slots, at least 8, and payloads up to 1024 B). One job is written over the
/// fabric's configuration inputs after power-up ([`BoardModel::configure`]), so that the model,
/// built for the core alone, is compiled once for every job file of its size; two jobs are in
/// the fabric's power-up ROM ([`BoardModel::build_jobs`]).
pub fn board_model_jobs(jobs: &[spotagg_driver::JobConfig]) -> Result<BoardModel> {
    let (verilog, ports, rom) = fabric_of(jobs)?;
    let mut m = BoardModel::build_jobs(&verilog, &ports, jobs.len()).context("building the Verilator board model")?;
    if !rom {
        m.configure(&spotagg_boards::tops::config_loader::jobs_writes(jobs))
            .context("writing the job to the Verilator board model")?;
    }
    Ok(m)
}

/// The switch fabric's Verilog and ports for `jobs` (the board model's hardware, with the
/// EAPS node built in), and whether the jobs are in its ROM (else the fabric is built with
/// `placeholder_job` and the jobs are to be written after power-up).
fn fabric_of(jobs: &[spotagg_driver::JobConfig]) -> Result<(String, Vec<spotagg_sim::verilator::PortSpec>, bool)> {
    use spotagg_boards::tops::switch_fabric::{fabric_verilog_jobs, placeholder_job, SwitchFabric};
    use spotagg_hdl::rust_hdl::prelude::*;
    let max = spotagg_hdl::job_router::MAX_JOBS;
    if !(1..=max).contains(&jobs.len()) {
        bail!("{} jobs: the board model's hardware is built for 1..={max}", jobs.len());
    }
    // The board's core as it ships takes payloads up to 1024 B; at least 8 slots: a job of up to 8
    // slots and one payload size or another runs on one model (built once, then cached).
    let slots = jobs.iter().map(|j| usize::from(j.slots)).max().unwrap_or(1).max(8).next_power_of_two();
    let payload = 1024;
    let core = spotagg_hdl::CoreConfig::new(4, slots, payload, 32)
        .map_err(|e| anyhow::anyhow!("core for the board model: {e}"))?;
    Ok(match jobs.len() {
        1 => {
            let placeholder = [placeholder_job(core)];
            let mut f = SwitchFabric::<1>::with_jobs(core, &placeholder);
            f.connect_all();
            (fabric_verilog_jobs(core, &placeholder), spotagg_sim::verilator::ports_of(&f), false)
        }
        _ => {
            let mut f = SwitchFabric::<2>::with_jobs(core, jobs);
            f.connect_all();
            (fabric_verilog_jobs(core, jobs), spotagg_sim::verilator::ports_of(&f), true)
        }
    })
}

/// `_IOW('T', 202, int)` (linux/if_tun.h), the same on x86 and ARM.
const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
const IFF_TAP: libc::c_short = 0x0002;
const IFF_NO_PI: libc::c_short = 0x1000;
const IFNAMSIZ: usize = 16;

/// `struct ifreq` as TUNSETIFF reads it: the name, then the flags at the start of the union.
#[repr(C)]
struct IfReqFlags {
    name: [libc::c_char; IFNAMSIZ],
    flags: libc::c_short,
    _rest: [u8; 22],
}

/// An open TAP device: one `read` is one frame from the kernel, one `write` one frame to it.
pub struct Tap {
    file: File,
    name: String,
}

impl Tap {
    /// Attaches to the TAP device `name` (which must exist, or the caller must be allowed to
    /// create it) in the caller's network namespace.
    pub fn open(name: &str) -> Result<Tap> {
        if name.is_empty() || name.len() >= IFNAMSIZ || name.contains(['/', ' ']) {
            bail!("--tap {name:?} is not an interface name (1..{} characters)", IFNAMSIZ - 1);
        }
        let file =
            OpenOptions::new().read(true).write(true).open("/dev/net/tun").context("cannot open /dev/net/tun")?;
        let mut req = IfReqFlags { name: [0; IFNAMSIZ], flags: IFF_TAP | IFF_NO_PI, _rest: [0; 22] };
        for (d, s) in req.name.iter_mut().zip(name.bytes()) {
            *d = s as libc::c_char;
        }
        // SAFETY: `req` is a valid, initialised ifreq-sized buffer that outlives the call.
        let rc = unsafe { libc::ioctl(file.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReqFlags) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            bail!("cannot attach to TAP device {name:?} (TUNSETIFF IFF_TAP|IFF_NO_PI): {e}");
        }
        Ok(Tap { file, name: name.to_string() })
    }

    /// The device's name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Waits up to `timeout` for a frame; `Ok(false)` when none came.
    fn wait_readable(&self, timeout: Duration) -> io::Result<bool> {
        let mut p = libc::pollfd { fd: self.file.as_raw_fd(), events: libc::POLLIN, revents: 0 };
        let ms = timeout.as_millis().min(i32::MAX as u128) as libc::c_int;
        // SAFETY: one valid pollfd.
        let rc = unsafe { libc::poll(&mut p, 1, ms) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            return if e.kind() == io::ErrorKind::Interrupted { Ok(false) } else { Err(e) };
        }
        Ok(rc > 0 && p.revents & libc::POLLIN != 0)
    }
}

/// How [`serve_tap`] behaves.
#[derive(Debug, Clone, Default)]
pub struct TapOptions {
    /// Return after this long without a frame from the device.
    pub exit_after_idle: Option<Duration>,
}

/// What [`serve_tap`] did besides the engine's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct TapStats {
    /// Frames read from the device (sent by the kernel).
    pub frames_from_kernel: u64,
    /// Bytes of those frames.
    pub bytes_from_kernel: u64,
    /// Frames written to the device (emitted by the engine).
    pub frames_to_kernel: u64,
    /// Bytes of those frames.
    pub bytes_to_kernel: u64,
    /// Emitted frames the device refused (logged, not fatal).
    pub write_errors: u64,
    /// Seconds from attaching to the exit.
    pub seconds: f64,
}

/// Feeds every frame from `tap` to `engine` and writes what it emits back, until `stop` is
/// set or the idle time passes. Any [`Engine`] can be attached.
pub fn serve_tap(tap: &mut Tap, engine: &mut dyn Engine, opts: &TapOptions, stop: &AtomicBool) -> io::Result<TapStats> {
    let start = Instant::now();
    let mut st = TapStats::default();
    let mut buf = vec![0u8; 65536];
    let mut out: Vec<Vec<u8>> = Vec::new();
    let mut last_rx = Instant::now();
    while !stop.load(Ordering::Relaxed) {
        if !tap.wait_readable(Duration::from_millis(100))? {
            if opts.exit_after_idle.is_some_and(|idle| last_rx.elapsed() >= idle) {
                break;
            }
            continue;
        }
        let len = match tap.file.read(&mut buf) {
            Ok(n) => n,
            Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock) => continue,
            Err(e) => return Err(e),
        };
        if len == 0 {
            continue;
        }
        last_rx = Instant::now();
        st.frames_from_kernel += 1;
        st.bytes_from_kernel += len as u64;
        out.clear();
        engine.process(&buf[..len], &mut out);
        for f in &out {
            // One write is one frame: a TAP device takes it whole or not at all.
            let written = match tap.file.write(f) {
                Ok(n) if n == f.len() => Ok(()),
                Ok(n) => Err(io::Error::other(format!("short write of {n} bytes"))),
                Err(e) => Err(e),
            };
            match written {
                Ok(()) => {
                    st.frames_to_kernel += 1;
                    st.bytes_to_kernel += f.len() as u64;
                }
                Err(e) => {
                    st.write_errors += 1;
                    if st.write_errors <= 10 {
                        eprintln!("spotagg tap: writing a {}-byte frame to {}: {e}", f.len(), tap.name);
                    }
                }
            }
        }
    }
    st.seconds = start.elapsed().as_secs_f64();
    Ok(st)
}

static STOP: AtomicBool = AtomicBool::new(false);

extern "C" fn on_signal(_: libc::c_int) {
    STOP.store(true, Ordering::Relaxed);
}

/// Runs the command.
pub fn run(args: Args) -> Result<()> {
    if args.tap1.is_some() {
        return run_two_port(args);
    }
    let (job, mut engine): (_, Box<dyn Engine>) = match (&args.jobs, &args.config) {
        (Some(path), _) => {
            let sw = spotagg_spec::multi_job::MultiSwitch::load(path).map_err(|e| anyhow::anyhow!("{e}"))?;
            let jobs: Vec<_> = sw.jobs().map(|(p, _)| p.job.clone()).collect();
            (sw.addressing_job(), Box::new(board_model_jobs(&jobs)?))
        }
        (None, Some(config)) => {
            let job = load_job(config)?;
            let engine: Box<dyn Engine> =
                if args.board_model { Box::new(board_model(&job)?) } else { args.engine.build(&job)? };
            (job, engine)
        }
        (None, None) => bail!("--config or --jobs is needed"),
    };
    let mut tap = Tap::open(&args.tap)?;
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    println!(
        "spotagg tap: attached to {} ({} engine, switch {} {}, {} workers)",
        tap.name(),
        engine.name(),
        job.switch_ip,
        job.switch_mac,
        job.n()
    );
    io::stdout().flush()?;
    let opts = TapOptions { exit_after_idle: args.exit_after_idle.map(Duration::from_secs_f64) };
    let st =
        serve_tap(&mut tap, engine.as_mut(), &opts, &STOP).with_context(|| format!("on TAP device {}", tap.name()))?;
    let c = engine.counters();
    let line = format!(
        "frames from kernel {} ({} B), to kernel {} ({} B), write errors {}, {:.1} s",
        st.frames_from_kernel,
        st.bytes_from_kernel,
        st.frames_to_kernel,
        st.bytes_to_kernel,
        st.write_errors,
        st.seconds
    );
    print_summary("tap", args.json, &c, ("tap", &st), &line);
    io::stdout().flush()?;
    Ok(())
}

/// A link-state source: an interface's carrier, or always up.
struct Carrier(Option<PathBuf>);

impl Carrier {
    fn new(ifc: &Option<String>) -> Result<Carrier> {
        match ifc {
            None => Ok(Carrier(None)),
            Some(n) => {
                let p = PathBuf::from(format!("/sys/class/net/{n}/carrier"));
                if !PathBuf::from(format!("/sys/class/net/{n}")).exists() {
                    bail!("--carrier {n:?}: no such interface in this network namespace");
                }
                Ok(Carrier(Some(p)))
            }
        }
    }
    /// Up unless the carrier file says 0 (reading it fails while the interface is down).
    fn up(&self) -> bool {
        match &self.0 {
            None => true,
            Some(p) => std::fs::read_to_string(p).map(|s| s.trim() == "1").unwrap_or(false),
        }
    }
}

/// What the two-port board model did, per port.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
struct PortStats {
    frames_from_kernel: u64,
    frames_to_kernel: u64,
    write_errors: u64,
    link_changes: u64,
}

/// `spotagg tap --board-model --tap A --tap1 B [--eaps RING.toml]`: the board model as a
/// two-port node. Each turn waits up to 1 ms for a frame on either device, feeds what came,
/// sets the EAPS node's time (µs since start) and link states, runs the model until it is
/// idle (at least a few clocks, so that a due timer is seen), writes out what the ports sent
/// and prints a line per EAPS transition.
fn run_two_port(args: Args) -> Result<()> {
    use spotagg_driver::control::protocol::eaps as peaps;
    use spotagg_sim::eaps::board_node::BoardNodePins;
    use spotagg_sim::eaps::hdl_node::NodePins;
    let config = args.config.as_ref().context("--config is needed with --tap1")?;
    let job = load_job(config)?;
    let (verilog, ports, rom) = fabric_of(std::slice::from_ref(&job))?;
    let mut board = BoardNodePins::build(&verilog, &ports).context("building the Verilator board model")?;
    if !rom {
        board
            .configure(&spotagg_boards::tops::config_loader::jobs_writes(std::slice::from_ref(&job)))
            .context("writing the job to the Verilator board model")?;
    }
    let mut names = vec![];
    if let Some(ring) = &args.eaps {
        let r = crate::cmd::eaps::config::load(ring)?;
        let domains = crate::cmd::eaps::config::board_settings(&r, peaps::BOARD_DOMAINS)?;
        for (a, v) in peaps::writes(&domains, true) {
            board.write_eaps((a - spotagg_driver::control::protocol::reg::EAPS_CONFIG) as u8, v);
        }
        names = r.domains.iter().map(|d| d.name.clone()).collect();
    }
    let carriers = [Carrier::new(&args.carrier0)?, Carrier::new(&args.carrier1)?];
    let tap1 = args.tap1.clone().expect("two-port mode");
    let mut taps = [Tap::open(&args.tap)?, Tap::open(&tap1)?];
    // SAFETY: the handler only stores to an atomic.
    unsafe {
        libc::signal(libc::SIGINT, on_signal as *const () as libc::sighandler_t);
        libc::signal(libc::SIGTERM, on_signal as *const () as libc::sighandler_t);
    }
    let start = Instant::now();
    let mut links = [carriers[0].up(), carriers[1].up()];
    board.set_links(links);
    board.set_now(0);
    board.run(1, 1_000_000);
    println!(
        "spotagg tap: attached to {} (port 0) and {} (port 1) (verilator board model, switch {} {}, {} workers{})",
        taps[0].name(),
        taps[1].name(),
        job.switch_ip,
        job.switch_mac,
        job.n(),
        if names.is_empty() { String::new() } else { format!(", EAPS domains {}", names.join(", ")) }
    );
    io::stdout().flush()?;
    let mut st = [PortStats::default(); 2];
    let mut state: Vec<u32> = names.iter().enumerate().map(|(d, _)| board.status((16 * d) as u8)).collect();
    let mut buf = vec![0u8; 65536];
    let mut last_rx = Instant::now();
    while !STOP.load(Ordering::Relaxed) {
        let mut fds = [0, 1].map(|p| libc::pollfd { fd: taps[p].file.as_raw_fd(), events: libc::POLLIN, revents: 0 });
        // SAFETY: two valid pollfds.
        let rc = unsafe { libc::poll(fds.as_mut_ptr(), 2, 1) };
        if rc < 0 {
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e).context("poll on the TAP devices");
            }
        }
        let mut fed = false;
        for p in 0..2 {
            if rc > 0 && fds[p].revents & libc::POLLIN != 0 {
                match taps[p].file.read(&mut buf) {
                    Ok(n) if n > 0 => {
                        board.feed(p, &buf[..n]);
                        st[p].frames_from_kernel += 1;
                        fed = true;
                    }
                    Ok(_) => {}
                    Err(e) if matches!(e.kind(), io::ErrorKind::Interrupted | io::ErrorKind::WouldBlock) => {}
                    Err(e) => return Err(e).with_context(|| format!("reading {}", taps[p].name())),
                }
            }
        }
        if fed {
            last_rx = Instant::now();
        } else if args.exit_after_idle.is_some_and(|idle| last_rx.elapsed().as_secs_f64() >= idle) {
            break;
        }
        let now = start.elapsed();
        board.set_now(now.as_micros() as u32);
        let l = [carriers[0].up(), carriers[1].up()];
        for p in 0..2 {
            if l[p] != links[p] {
                st[p].link_changes += 1;
                println!(
                    "spotagg tap: port {p} link {} at {:.3} s",
                    if l[p] { "up" } else { "down" },
                    now.as_secs_f64()
                );
            }
        }
        links = l;
        board.set_links(links);
        for (p, f) in board.run(8, 5_000_000) {
            match taps[p].file.write(&f) {
                Ok(n) if n == f.len() => st[p].frames_to_kernel += 1,
                _ => st[p].write_errors += 1,
            }
        }
        for (d, name) in names.iter().enumerate() {
            let w = board.status((16 * d) as u8);
            if w & 0x3f != state[d] & 0x3f {
                let cause = board.status((16 * d + 6) as u8) as usize;
                let name_of = |w: u32| peaps::STATE_NAMES.get((w & 0xf) as usize).copied().unwrap_or("?");
                let change = if w & 0xf == state[d] & 0xf {
                    name_of(w).to_string()
                } else {
                    format!("{} -> {}", name_of(state[d]), name_of(w))
                };
                println!(
                    "spotagg tap: eaps {name}: {change} ({}), forwarding port 0 {} port 1 {}, at {:.3} s",
                    peaps::CAUSE_NAMES.get(cause).unwrap_or(&"?"),
                    w >> 4 & 1,
                    w >> 5 & 1,
                    now.as_secs_f64()
                );
                io::stdout().flush()?;
            }
            state[d] = w;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    for (d, name) in names.iter().enumerate() {
        let mut s = |r: usize| board.status((16 * d + r) as u8);
        println!(
            "spotagg tap: eaps {name}: {}, PDUs sent {}, received {}, forwarded {}, dropped {}",
            peaps::STATE_NAMES.get((s(0) & 0xf) as usize).unwrap_or(&"?"),
            s(1),
            s(2),
            s(3),
            s(4)
        );
    }
    let line = format!(
        "port 0: {} frames in, {} out; port 1: {} in, {} out; {} write errors, {} bad frames; {} clocks in {secs:.1} s",
        st[0].frames_from_kernel,
        st[0].frames_to_kernel,
        st[1].frames_from_kernel,
        st[1].frames_to_kernel,
        st[0].write_errors + st[1].write_errors,
        board.bad_frames,
        board.cycles
    );
    if args.json {
        println!("{}", serde_json::json!({ "ports": st, "cycles": board.cycles, "seconds": secs }));
    } else {
        println!("spotagg tap: {line}");
    }
    io::stdout().flush()?;
    Ok(())
}
