//! `spotagg eaps --config RING.toml`: an EAPS node daemon for a Linux bridge.
//!
//! Every protocol decision is the reference node's ([`spotagg_spec::eaps::EapsNode`]) or, with a
//! `[shared_port]`, the shared port's ([`spotagg_spec::eaps::shared::SharedPort`]); this module
//! only carries out their actions and feeds them events (docs/eaps.md §9):
//! - link up and down from rtnetlink (RTNLGRP_LINK: IFF_UP and IFF_LOWER_UP);
//! - PDUs received on AF_PACKET sockets, one per ring port, and sent out of them;
//! - per-VLAN gates in an nftables table of the bridge family ([`gates`], docs/eaps.md §9.1),
//!   or whole-port forwarding and blocking through rtnetlink ([`os`]); FDB flushes through
//!   rtnetlink.
//!
//! Domains are grouped by their pair of ring ports; each pair is one `EapsNode` (its ports 0
//! and 1 are the pair in first-use order), so a machine runs any number of domains on any
//! number of ring ports. A ring port drops a domain's protected VLANs while that domain blocks it
//! (and untagged frames while any domain, or the shared port, blocks it); with whole ports it
//! forwards (is a port of the bridge) while every domain that uses it, and the shared port, say
//! so, and is otherwise taken out of the bridge.
//!
//! A line is printed per transition. The status (JSON) is written to the ring file's status
//! file on every change and every second; `spotagg eaps status --config RING.toml` prints it.
//! With `--metrics ADDR` the same counters, malformed PDUs by reason among them (docs/eaps.md
//! §1.1), are served in the Prometheus text format on `http://ADDR/metrics`.
//! SIGINT or SIGTERM stops the daemon: each ring port goes back into the bridge with the
//! bridge-port state it had at start, and the EAPS MAC's local FDB entry is removed.

pub mod config;
pub mod gates;
pub mod os;
pub mod report;

use anyhow::{bail, Context, Result};
use config::{Blocking, Ring, Role};
use gates::{Gates, PortGate};
use os::{LinkEvents, PduSocket, Rtnl, Signals};
use report::Report;
use serde_json::json;
use spotagg_driver::metrics::{Family, Kind};
use spotagg_driver::wire::eaps::Malformed;
use spotagg_driver::wire::MacAddr;
use spotagg_spec::eaps::shared::{SegmentTimeoutAction, SharedAction, SharedConfig, SharedPort, SharedRole, Where};
use spotagg_spec::eaps::{Action, DomainConfig, EapsNode, FailAction, Role as NodeRole};
use spotagg_spec::metrics_http::{serve_http, MetricsBoard};
use std::net::{SocketAddr, TcpListener};
use std::os::fd::AsRawFd;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Instant;

/// Bridge port state forwarding (linux/if_bridge.h), assumed where the dump does not say.
const BR_STATE_FORWARDING: u8 = 3;

/// Arguments of `spotagg eaps`.
#[derive(clap::Args)]
#[command(args_conflicts_with_subcommands = true)]
pub struct Args {
    #[command(subcommand)]
    command: Option<Sub>,
    /// The ring file (TOML): bridge, ring ports, domains.
    #[arg(long)]
    config: Option<PathBuf>,
    /// Check the ring file and the bridge, print what would run, and exit.
    #[arg(long)]
    check: bool,
    /// Run the protocol loop under SCHED_FIFO at this priority (1..=99), as ptp4l and
    /// keepalived are run, so that no ordinary process can delay a PDU or a timer past the fail
    /// timer (the log and status thread stays at normal priority). 0, the default, leaves the
    /// scheduling alone.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u8).range(0..=99))]
    rt_priority: u8,
    /// Serve the domains' counters (PDUs, malformed PDUs by reason) in the Prometheus text
    /// format on http://ADDR/metrics (e.g. 127.0.0.1:9466).
    #[arg(long)]
    metrics: Option<SocketAddr>,
}

#[derive(clap::Subcommand)]
enum Sub {
    /// Print the running daemon's status as JSON.
    Status {
        /// The ring file the daemon runs (its status file is found from it).
        #[arg(long)]
        config: PathBuf,
    },
}

/// Runs `spotagg eaps`.
pub fn run(args: Args) -> Result<()> {
    match args.command {
        Some(Sub::Status { config }) => status(&config),
        None => {
            let Some(path) = args.config else {
                bail!("spotagg eaps needs --config RING.toml (or: spotagg eaps status)")
            };
            let ring = config::load(&path)?;
            if args.check {
                println!(
                    "{}: {} domain(s) on bridge {}, ring ports {:?}",
                    path.display(),
                    ring.domains.len(),
                    ring.bridge,
                    ring.ports()
                );
                return Ok(());
            }
            let mut daemon = Daemon::start(ring)?;
            let http = match args.metrics {
                Some(a) => {
                    let l = TcpListener::bind(a).with_context(|| format!("--metrics {a}: cannot listen"))?;
                    println!("spotagg eaps: metrics on http://{}/metrics", l.local_addr()?);
                    Some(l)
                }
                None => None,
            };
            let board = Arc::new(MetricsBoard::new(1));
            daemon.metrics = http.as_ref().map(|_| board.clone());
            let stop = Arc::new(AtomicBool::new(false));
            let server = http.map(|l| {
                let (board, stop) = (board.clone(), stop.clone());
                std::thread::spawn(move || serve_http(&l, &board, &stop))
            });
            if args.rt_priority > 0 {
                realtime(args.rt_priority)?;
            }
            let result = daemon.run();
            stop.store(true, Ordering::Relaxed);
            if let Some(h) = server {
                if let Ok(Err(e)) = h.join() {
                    eprintln!("spotagg eaps: metrics server: {e}");
                }
            }
            result
        }
    }
}

/// Puts the calling thread (the protocol loop: the report thread is already running) under
/// SCHED_FIFO at `priority`.
fn realtime(priority: u8) -> Result<()> {
    let param = libc::sched_param { sched_priority: i32::from(priority) };
    // SAFETY: pid 0 is the calling thread; `param` outlives the call.
    if unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &param) } != 0 {
        let e = std::io::Error::last_os_error();
        bail!("--rt-priority {priority}: cannot run under SCHED_FIFO: {e} (needs root or CAP_SYS_NICE)");
    }
    Ok(())
}

fn status(config: &std::path::Path) -> Result<()> {
    let ring = config::load(config)?;
    let text = std::fs::read_to_string(&ring.status_file).with_context(|| {
        format!("{}: no status (is `spotagg eaps --config {}` running?)", ring.status_file.display(), config.display())
    })?;
    let v: serde_json::Value =
        serde_json::from_str(&text).with_context(|| format!("{}: not a status file", ring.status_file.display()))?;
    let pid = v["pid"].as_i64().unwrap_or(0);
    // SAFETY: kill with signal 0 only checks that the process exists.
    let alive = pid > 0 && unsafe { libc::kill(pid as i32, 0) } == 0;
    let mut v = v;
    v["running"] = json!(alive && v["stopped"] != json!(true));
    println!("{}", serde_json::to_string_pretty(&v)?);
    Ok(())
}

struct PortIo {
    name: String,
    index: u32,
    sock: PduSocket,
    link: bool,
    saved_state: u8,
    /// Some(true): a bridge port (forwarding); Some(false): out of the bridge (blocked).
    applied: Option<bool>,
    pdus_tx: u64,
    pdus_rx: u64,
}

struct Group {
    /// Physical port of the node's port 0 and 1.
    ports: [usize; 2],
    node: EapsNode,
    /// Ring-file domain index of each node domain.
    domains: Vec<usize>,
}

/// The shared port, its physical port and its segment ports.
struct Shared {
    port: usize,
    segments: Vec<usize>,
    node: SharedPort,
}

struct Daemon {
    ring: Ring,
    shared: Option<Shared>,
    rtnl: Rtnl,
    events: LinkEvents,
    signals: Signals,
    bridge_index: u32,
    mac: MacAddr,
    ports: Vec<PortIo>,
    groups: Vec<Group>,
    start: Instant,
    transitions: u64,
    report: Report,
    latency: Latency,
    /// Where `--metrics` publishes (the status's counters as metric families).
    metrics: Option<Arc<MetricsBoard>>,
    /// The per-VLAN gates; None: whole ports.
    gates: Option<Gates>,
    /// Why whole ports where the ring file asked for per-VLAN gates.
    whole_ports_why: Option<String>,
}

/// How late the loop woke for a timer and how long one pass over its events took, beyond
/// [`SLOW_NS`] (docs/eaps.md §9): a daemon that stalls longer than its fail timer lets an
/// intact ring be opened.
#[derive(Default)]
struct Latency {
    late_wakeups: u64,
    worst_late_ns: u64,
    slow_passes: u64,
    worst_pass_ns: u64,
}

/// A wake-up this late, or a pass this long, is logged and counted (20 ms).
const SLOW_NS: u64 = 20_000_000;

fn ns(ms: u64) -> u64 {
    ms * 1_000_000
}

impl Daemon {
    fn start(ring: Ring) -> Result<Daemon> {
        let mut rtnl = Rtnl::open()?;
        let links = rtnl.links()?;
        let file = ring.path.display().to_string();
        let Some(bridge) = links.iter().find(|l| l.name == ring.bridge) else {
            bail!("{file}: bridge = {:?}: no such interface", ring.bridge);
        };
        let bridge_index = bridge.index;
        let mac = ring.system_mac.or(bridge.mac.map(MacAddr)).unwrap_or(MacAddr([2, 0, 0, 0, 0, 1]));
        let mut ports = Vec::new();
        for name in ring.ports() {
            let Some(l) = links.iter().find(|l| l.name == name) else {
                bail!("{file}: ring port {name:?}: no such interface");
            };
            if l.master != Some(bridge_index) {
                bail!("{file}: ring port {name:?}: not a port of bridge {:?}", ring.bridge);
            }
            ports.push(PortIo {
                name: name.clone(),
                index: l.index,
                sock: PduSocket::open(l.index).with_context(|| format!("ring port {name}"))?,
                link: l.up,
                saved_state: l.port_state.unwrap_or(BR_STATE_FORWARDING),
                applied: None,
                pdus_tx: 0,
                pdus_rx: 0,
            });
        }
        let port_of = |n: &str| ports.iter().position(|p| p.name == n).unwrap();
        let mut groups: Vec<Group> = Vec::new();
        for (i, d) in ring.domains.iter().enumerate() {
            let (p, s) = (port_of(&d.primary), port_of(&d.secondary));
            let g = match groups.iter().position(|g| g.ports == [p, s] || g.ports == [s, p]) {
                Some(g) => g,
                None => {
                    groups.push(Group { ports: [p, s], node: EapsNode::new(mac, vec![], [false; 2]), domains: vec![] });
                    groups.len() - 1
                }
            };
            groups[g].domains.push(i);
        }
        for g in &mut groups {
            let cfgs = g
                .domains
                .iter()
                .map(|&i| {
                    let d = &ring.domains[i];
                    DomainConfig {
                        role: if d.role == Role::Master { NodeRole::Master } else { NodeRole::Transit },
                        primary: if ports[g.ports[0]].name == d.primary { 0 } else { 1 },
                        control_vlan: d.control_vlan,
                        protected: d.protected_vlans.clone(),
                        hello: ns(d.hello_ms),
                        fail: ns(d.fail_ms),
                        pre_forwarding: ns(d.pre_forwarding_ms),
                        fail_action: if d.open_secondary { FailAction::OpenSecondary } else { FailAction::SendAlert },
                    }
                })
                .collect();
            g.node = EapsNode::new(mac, cfgs, [ports[g.ports[0]].link, ports[g.ports[1]].link]);
        }
        let shared = ring.shared.as_ref().map(|sc| {
            let port = port_of(&sc.port);
            let mut segments = Vec::new();
            let mut segment_vlans = Vec::new();
            let mut hold = 0;
            for d in &ring.domains {
                let other = if d.primary == sc.port {
                    &d.secondary
                } else if d.secondary == sc.port {
                    &d.primary
                } else {
                    continue;
                };
                hold = hold.max(d.pre_forwarding_ms);
                let o = port_of(other);
                if !segments.contains(&o) {
                    segments.push(o);
                    segment_vlans.push(d.control_vlan);
                }
            }
            let cfg = SharedConfig {
                role: if sc.mode == config::SharedMode::Controller {
                    SharedRole::Controller
                } else {
                    SharedRole::Partner
                },
                link_id: sc.link_id,
                shared_vlan: segment_vlans[0],
                segment_vlans,
                hello: ns(sc.segment_hello_ms),
                timeout: ns(sc.segment_timeout_ms),
                timeout_action: if sc.timeout_segment_down {
                    SegmentTimeoutAction::SegmentDown
                } else {
                    SegmentTimeoutAction::SendAlert
                },
                hold: ns(hold),
                root_blocker: true,
                rb_relay: true,
            };
            let links = segments.iter().map(|&x| ports[x].link).collect();
            Shared { port, node: SharedPort::new(mac, cfg, ports[port].link, links), segments }
        });
        let (gates, whole_ports_why) = match ring.blocking {
            Blocking::Port => (None, None),
            Blocking::Vlan => match Gates::probe(&ring.bridge) {
                Ok(g) => (Some(g), None),
                Err(e) => (None, Some(format!("nftables' bridge family is not usable: {e:#}"))),
            },
        };
        let events = LinkEvents::open()?;
        let signals = Signals::open()?;
        rtnl.add_eaps_local(bridge_index).context("adding the EAPS MAC's local FDB entry")?;
        let ring_status_file = ring.status_file.clone();
        // The status is written by another thread from here on: check its folder now.
        let probe = {
            let mut s = ring_status_file.as_os_str().to_owned();
            s.push(".tmp");
            PathBuf::from(s)
        };
        std::fs::write(&probe, b"")
            .with_context(|| format!("{file}: status file: cannot write {}", probe.display()))?;
        let _ = std::fs::remove_file(&probe);
        Ok(Daemon {
            ring,
            shared,
            rtnl,
            events,
            signals,
            bridge_index,
            mac,
            ports,
            groups,
            start: Instant::now(),
            transitions: 0,
            report: Report::start(ring_status_file),
            latency: Latency::default(),
            metrics: None,
            gates,
            whole_ports_why,
        })
    }

    fn now(&self) -> u64 {
        self.start.elapsed().as_nanos() as u64
    }

    fn run(mut self) -> Result<()> {
        self.report.line(format!(
            "spotagg eaps: bridge {} mac {} ports {} domains {} (pid {})",
            self.ring.bridge,
            self.mac,
            self.ports
                .iter()
                .map(|p| format!("{}({})", p.name, if p.link { "up" } else { "down" }))
                .collect::<Vec<_>>()
                .join(","),
            self.ring.domains.iter().map(|d| d.name.as_str()).collect::<Vec<_>>().join(","),
            std::process::id()
        ));
        self.report.line(match (&self.gates, &self.whole_ports_why) {
            (Some(g), _) => {
                format!("spotagg eaps: per-VLAN gates in nftables table bridge {} (through {})", g.table(), g.via())
            }
            (None, Some(why)) => format!("spotagg eaps: blocking whole ports: {why}"),
            (None, None) => "spotagg eaps: blocking whole ports (blocking = \"port\")".to_string(),
        });
        let result = self.serve();
        let restored = self.restore();
        let reported = self.report.finish();
        result.and(restored).and(reported)
    }

    fn serve(&mut self) -> Result<()> {
        let now = self.now();
        for g in 0..self.groups.len() {
            let a = self.groups[g].node.enable(now);
            self.apply(g, a)?;
        }
        if let Some(sh) = self.shared.as_mut() {
            let a = sh.node.enable(now);
            self.apply_shared(a)?;
        }
        self.apply_port_states(true)?;
        self.write_status(false)?;
        let mut last_status = Instant::now();
        loop {
            let now = self.now();
            let next = self
                .groups
                .iter()
                .filter_map(|g| g.node.poll_timeout())
                .chain(self.shared.as_ref().and_then(|s| s.node.poll_timeout()))
                .min();
            let mut timeout = match next {
                Some(t) if t <= now => 0,
                Some(t) => (t - now).div_ceil(1_000_000).min(1000) as i32,
                None => 1000,
            };
            timeout = timeout.min(1000);
            let mut fds = vec![self.signals.as_raw_fd(), self.events.as_raw_fd()];
            fds.extend(self.ports.iter().map(|p| p.sock.as_raw_fd()));
            let asleep = Instant::now();
            let ready = os::poll(&fds, timeout)?;
            let woke = Instant::now();
            if !ready.iter().any(|&r| r) {
                let late = (woke - asleep).as_nanos() as u64;
                self.latency(true, late.saturating_sub(timeout as u64 * 1_000_000));
            }
            if ready[0] {
                if let Some(sig) = self.signals.take() {
                    self.report.line(format!("spotagg eaps: signal {sig}, stopping"));
                    return Ok(());
                }
            }
            if ready[1] {
                for l in self.events.drain()? {
                    self.link_event(l.index, l.up)?;
                }
            }
            for p in 0..self.ports.len() {
                if !ready[2 + p] {
                    continue;
                }
                while let Some(frame) = self.ports[p].sock.recv()? {
                    self.ports[p].pdus_rx += 1;
                    self.pdu(p, &frame)?;
                }
            }
            let now = self.now();
            for g in 0..self.groups.len() {
                if self.groups[g].node.poll_timeout().is_some_and(|t| t <= now) {
                    let a = self.groups[g].node.handle_timeout(now);
                    self.apply(g, a)?;
                }
            }
            if self.shared.as_ref().and_then(|s| s.node.poll_timeout()).is_some_and(|t| t <= now) {
                let a = self.shared.as_mut().unwrap().node.handle_timeout(now);
                self.apply_shared(a)?;
            }
            if last_status.elapsed().as_secs() >= 1 {
                self.write_status(false)?;
                last_status = Instant::now();
            }
            self.latency(false, woke.elapsed().as_nanos() as u64);
        }
    }

    /// Counts and logs a wake-up `late` (true) or a pass (false) of `ns` beyond [`SLOW_NS`].
    fn latency(&mut self, late: bool, ns: u64) {
        let l = &mut self.latency;
        let (count, worst, what) = if late {
            (&mut l.late_wakeups, &mut l.worst_late_ns, "woke this long after a timer")
        } else {
            (&mut l.slow_passes, &mut l.worst_pass_ns, "one pass over the events took")
        };
        *worst = (*worst).max(ns);
        if ns > SLOW_NS {
            *count += 1;
            let t = self.now() as f64 / 1e6;
            self.report.line(format!("eaps: t={t:.3} ms slow: {what} {:.1} ms", ns as f64 / 1e6));
        }
    }

    fn link_event(&mut self, index: u32, up: bool) -> Result<()> {
        let Some(p) = self.ports.iter().position(|x| x.index == index) else { return Ok(()) };
        if self.ports[p].link != up {
            self.ports[p].link = up;
            self.report.line(format!(
                "eaps: t={:.3} ms port {} link {}",
                self.now() as f64 / 1e6,
                self.ports[p].name,
                if up { "up" } else { "down" }
            ));
            let now = self.now();
            for g in 0..self.groups.len() {
                if let Some(local) = self.groups[g].ports.iter().position(|&x| x == p) {
                    let a = if up {
                        self.groups[g].node.link_up(now, local)
                    } else {
                        self.groups[g].node.link_down(now, local)
                    };
                    self.apply(g, a)?;
                }
            }
            if let Some(w) = self.where_shared(p) {
                let sh = self.shared.as_mut().unwrap();
                let a = match w {
                    Where::Shared => sh.node.shared_link(now, up),
                    Where::Segment(i) => sh.node.segment_link(now, i, up),
                };
                self.apply_shared(a)?;
            }
        }
        self.apply_port_states(false)?;
        self.write_status(false)
    }

    /// Where physical port `p` is for the shared port, if it is one of its ports.
    fn where_shared(&self, p: usize) -> Option<Where> {
        let sh = self.shared.as_ref()?;
        if sh.port == p {
            return Some(Where::Shared);
        }
        sh.segments.iter().position(|&x| x == p).map(Where::Segment)
    }

    /// As [`Self::apply`], for the shared port: segment port states first, then its PDUs.
    fn apply_shared(&mut self, actions: Vec<SharedAction>) -> Result<()> {
        let mut changed = false;
        let mut sends = Vec::new();
        for a in actions {
            let sh = self.shared.as_ref().unwrap();
            match a {
                SharedAction::Send { to, frame } => {
                    let p = match to {
                        Where::Shared => sh.port,
                        Where::Segment(i) => sh.segments[i],
                    };
                    sends.push((p, frame));
                }
                SharedAction::SegmentPort { segment, forwarding } => {
                    changed = true;
                    self.report.line(format!(
                        "eaps: t={:.3} ms shared port {}: segment port {} {}",
                        self.now() as f64 / 1e6,
                        self.ports[sh.port].name,
                        self.ports[sh.segments[segment]].name,
                        if forwarding { "forwarding" } else { "blocked" }
                    ));
                }
                SharedAction::Transition { from, to, cause } => {
                    changed = true;
                    self.transitions += 1;
                    self.report.line(format!(
                        "eaps: t={:.3} ms shared port {}: {:?} -> {:?} ({:?})",
                        self.now() as f64 / 1e6,
                        self.ports[sh.port].name,
                        from,
                        to,
                        cause
                    ));
                }
                SharedAction::Alert { at } => {
                    self.report.line(format!("eaps: t={:.3} ms shared port: alert at {at:?}", self.now() as f64 / 1e6));
                }
                SharedAction::PassOn { .. } => {}
            }
        }
        if changed {
            self.apply_port_states(false)?;
        }
        for (p, frame) in sends {
            if self.ports[p].link {
                self.ports[p].sock.send(&frame)?;
                self.ports[p].pdus_tx += 1;
            }
        }
        if changed {
            self.write_status(false)?;
        }
        Ok(())
    }

    fn pdu(&mut self, p: usize, frame: &[u8]) -> Result<()> {
        let now = self.now();
        if let Some(w) = self.where_shared(p) {
            if let Ok(a) = self.shared.as_mut().unwrap().node.handle_frame(now, w, frame) {
                // Another common link's PDU goes on through the ring node below.
                let pass_on = a.iter().any(|x| matches!(x, SharedAction::PassOn { .. }));
                self.apply_shared(a)?;
                if !pass_on {
                    return Ok(());
                }
            }
        }
        for g in 0..self.groups.len() {
            let Some(local) = self.groups[g].ports.iter().position(|&x| x == p) else { continue };
            match self.groups[g].node.handle_frame(now, local, frame) {
                Ok(a) => return self.apply(g, a),
                Err(spotagg_spec::eaps::FrameError::UnknownDomain(_)) => continue,
                Err(_) => return Ok(()),
            }
        }
        Ok(())
    }

    /// Carries out one decision of the node: its port states and FDB flush first, then its
    /// PDUs (docs/eaps.md §9). The order matters: a master that sent RING-UP-FLUSH-FDB before
    /// it had blocked its secondary (an `nft` run, milliseconds on a loaded machine) let a
    /// frame cross the secondary after a transit had flushed; that transit learnt the sender
    /// behind the blocked port, and the stream stopped until the entry aged out.
    fn apply(&mut self, g: usize, actions: Vec<Action>) -> Result<()> {
        let mut flush = false;
        let mut changed = false;
        let mut sends = Vec::new();
        for a in actions {
            match a {
                Action::Send { port, frame } => sends.push((port, frame)),
                Action::PortState { .. } => changed = true,
                Action::FlushFdb { .. } => flush = true,
                Action::Transition { domain, from, to, cause } => {
                    self.transitions += 1;
                    changed = true;
                    let d = &self.ring.domains[self.groups[g].domains[domain]];
                    let ports = self.groups[g].ports.map(|p| {
                        let f = self.groups[g]
                            .node
                            .forwarding(domain, self.groups[g].ports.iter().position(|&x| x == p).unwrap());
                        format!("{} {}", self.ports[p].name, if f { "forwarding" } else { "blocked" })
                    });
                    self.report.line(format!(
                        "eaps: t={:.3} ms domain {}: {:?} -> {:?} ({:?}); {}, {}",
                        self.now() as f64 / 1e6,
                        d.name,
                        from,
                        to,
                        cause,
                        ports[0],
                        ports[1]
                    ));
                }
                Action::Alert { domain, alert } => {
                    let d = &self.ring.domains[self.groups[g].domains[domain]];
                    self.report.line(format!(
                        "eaps: t={:.3} ms domain {}: alert {:?}",
                        self.now() as f64 / 1e6,
                        d.name,
                        alert
                    ));
                }
            }
        }
        if changed {
            self.apply_port_states(false)?;
        }
        if flush {
            // A port out of the bridge has no entries: leaving the bridge flushed them.
            let gated = self.gates.is_some();
            for p in self.groups[g].ports.into_iter().filter(|&p| gated || self.ports[p].applied == Some(true)) {
                if let Err(e) = self.rtnl.flush_port(self.ports[p].index) {
                    // EOPNOTSUPP: not (or no longer) a bridge port, so nothing to flush.
                    if e.downcast_ref::<std::io::Error>().and_then(|e| e.raw_os_error()) != Some(libc::EOPNOTSUPP) {
                        return Err(e).with_context(|| format!("flushing {}", self.ports[p].name));
                    }
                }
            }
        }
        for (port, frame) in sends {
            let p = self.groups[g].ports[port];
            if self.ports[p].link {
                self.ports[p].sock.send(&frame)?;
                self.ports[p].pdus_tx += 1;
            }
        }
        if changed {
            self.write_status(false)?;
        }
        Ok(())
    }

    /// Whether every domain using physical port `p` lets it forward.
    fn wanted_forwarding(&self, p: usize) -> bool {
        let shared_ok = match (self.where_shared(p), self.shared.as_ref()) {
            (Some(Where::Segment(i)), Some(sh)) => sh.node.forwarding(i),
            _ => true,
        };
        shared_ok
            && self.groups.iter().all(|g| match g.ports.iter().position(|&x| x == p) {
                None => true,
                Some(local) => (0..g.node.domain_count()).all(|d| g.node.forwarding(d, local)),
            })
    }

    /// What each port blocks, for the gates: the protected VLANs of every domain that blocks
    /// it (of every domain on it where the shared port blocks it), and untagged frames where
    /// any does.
    fn port_gates(&self) -> Vec<PortGate> {
        (0..self.ports.len())
            .map(|p| {
                let mut vlans = Vec::new();
                let mut by = Vec::new();
                for g in &self.groups {
                    let Some(local) = g.ports.iter().position(|&x| x == p) else { continue };
                    for (d, &i) in g.domains.iter().enumerate() {
                        if !g.node.forwarding(d, local) {
                            vlans.extend(&self.ring.domains[i].protected_vlans);
                            by.push(self.ring.domains[i].name.clone());
                        }
                    }
                }
                if let (Some(Where::Segment(i)), Some(sh)) = (self.where_shared(p), self.shared.as_ref()) {
                    if !sh.node.forwarding(i) {
                        for d in self
                            .ring
                            .domains
                            .iter()
                            .filter(|d| d.primary == self.ports[p].name || d.secondary == self.ports[p].name)
                        {
                            vlans.extend(&d.protected_vlans);
                        }
                        by.push("shared-port".to_string());
                    }
                }
                vlans.sort_unstable();
                vlans.dedup();
                PortGate { port: self.ports[p].name.clone(), vlans, untagged: !self.wanted_forwarding(p), by }
            })
            .collect()
    }

    fn apply_port_states(&mut self, force: bool) -> Result<()> {
        if self.gates.is_some() {
            let want = self.port_gates();
            if let Some(g) = self.gates.as_mut() {
                g.apply(&want, force)?;
            }
            if force {
                // The gates are written: the ports may forward (the deployment rule has them
                // disabled before the daemon starts).
                for p in 0..self.ports.len() {
                    if self.ports[p].link {
                        if let Err(e) = self.rtnl.set_port_state(self.ports[p].index, BR_STATE_FORWARDING) {
                            if e.downcast_ref::<std::io::Error>().and_then(|e| e.raw_os_error()) != Some(libc::ENETDOWN)
                            {
                                return Err(e).with_context(|| format!("setting {} forwarding", self.ports[p].name));
                            }
                        }
                    }
                    self.ports[p].applied = Some(true);
                }
            }
            return Ok(());
        }
        for p in 0..self.ports.len() {
            let want = self.wanted_forwarding(p);
            if force || self.ports[p].applied != Some(want) {
                let (index, name) = (self.ports[p].index, self.ports[p].name.clone());
                let master = if want { self.bridge_index } else { 0 };
                self.rtnl.set_master(index, master).with_context(|| {
                    format!(
                        "{} {name} {} bridge {}",
                        if want { "adding" } else { "taking" },
                        if want { "to" } else { "out of" },
                        self.ring.bridge
                    )
                })?;
                // A port that was a bridge port already keeps its state (disabled at start): forward.
                if want && self.ports[p].link {
                    if let Err(e) = self.rtnl.set_port_state(index, BR_STATE_FORWARDING) {
                        if e.downcast_ref::<std::io::Error>().and_then(|e| e.raw_os_error()) != Some(libc::ENETDOWN) {
                            return Err(e).with_context(|| format!("setting {name} forwarding"));
                        }
                    }
                }
                self.ports[p].applied = Some(want);
            }
        }
        Ok(())
    }

    fn write_status(&self, stopped: bool) -> Result<()> {
        let gates = self.port_gates();
        let ports: Vec<_> = self
            .ports
            .iter()
            .enumerate()
            .map(|(i, p)| {
                json!({
                    "name": p.name, "link": if p.link { "up" } else { "down" },
                    "forwarding": self.wanted_forwarding(i), "pdus_tx": p.pdus_tx, "pdus_rx": p.pdus_rx,
                    "blocked_vlans": gates::ranges(&gates[i].vlans).replace(' ', ""), "untagged_blocked": gates[i].untagged,
                })
            })
            .collect();
        let blocking = match (&self.gates, &self.whole_ports_why) {
            (Some(g), _) => json!({ "mode": "vlan", "table": format!("bridge {}", g.table()) }),
            (None, why) => {
                json!({ "mode": "port", "why": why.clone().unwrap_or_else(|| "blocking = \"port\"".into()) })
            }
        };
        let mut domains = Vec::new();
        let mut pdus = Family::new(
            "spotagg_eaps_pdus_total",
            "EAPS PDUs per domain: sent, received, forwarded, dropped",
            Kind::Counter,
        );
        let mut malformed = Family::new(
            "spotagg_eaps_malformed_total",
            "Malformed EDP frames on the domain's control VLAN, dropped, by reason (docs/eaps.md 1.1)",
            Kind::Counter,
        );
        for g in &self.groups {
            for (d, &i) in g.domains.iter().enumerate() {
                let c = &self.ring.domains[i];
                let k = g.node.counters(d);
                domains.push(json!({
                    "name": c.name, "role": c.role, "control_vlan": c.control_vlan, "protected_vlans": c.protected_vlans,
                    "state": format!("{:?}", g.node.state(d)),
                    "primary": { "port": c.primary, "forwarding": g.node.forwarding(d, g.ports.iter().position(|&x| self.ports[x].name == c.primary).unwrap()) },
                    "secondary": { "port": c.secondary, "forwarding": g.node.forwarding(d, g.ports.iter().position(|&x| self.ports[x].name == c.secondary).unwrap()) },
                    "pdus": { "tx": k.tx, "rx": k.rx, "forwarded": k.forwarded, "dropped": k.dropped },
                    "malformed": Malformed::ALL.iter().map(|&r| (r.name().to_string(), json!(k.malformed(r)))).collect::<serde_json::Map<_, _>>(),
                    "last_transition": g.node.last_transition(d).map(|(t, cause)| json!({ "at_ms": t as f64 / 1e6, "cause": format!("{cause:?}") })),
                }));
                for (dir, v) in [("tx", k.tx), ("rx", k.rx), ("forwarded", k.forwarded), ("dropped", k.dropped)] {
                    pdus = pdus.sample(&[("domain", c.name.clone()), ("dir", dir.into())], v as f64);
                }
                for r in Malformed::ALL {
                    malformed = malformed
                        .sample(&[("domain", c.name.clone()), ("reason", r.name().into())], k.malformed(r) as f64);
                }
            }
        }
        let shared = self.shared.as_ref().map(|sh| {
            json!({
                "port": self.ports[sh.port].name, "role": format!("{:?}", sh.node.config().role),
                "link_id": sh.node.config().link_id, "state": format!("{:?}", sh.node.state()),
                "common_link_up": sh.node.common_link_up(),
                "segments": sh.segments.iter().enumerate().map(|(i, &p)| json!({
                    "port": self.ports[p].name, "intact": sh.node.segment_intact(i), "forwarding": sh.node.forwarding(i),
                })).collect::<Vec<_>>(),
                "pdus": { "tx": sh.node.tx, "rx": sh.node.rx },
            })
        });
        let v = json!({
            "shared_port": shared,
            "pid": std::process::id(), "ring_file": self.ring.path, "bridge": self.ring.bridge,
            "system_mac": self.mac.to_string(), "uptime_ms": self.now() as f64 / 1e6, "transitions": self.transitions,
            "stopped": stopped, "blocking": blocking, "ports": ports, "domains": domains,
            "latency": {
                "late_wakeups": self.latency.late_wakeups, "worst_late_ms": self.latency.worst_late_ns as f64 / 1e6,
                "slow_passes": self.latency.slow_passes, "worst_pass_ms": self.latency.worst_pass_ns as f64 / 1e6,
            },
        });
        self.report.status(serde_json::to_vec_pretty(&v)?);
        if let Some(m) = &self.metrics {
            m.publish(0, vec![pdus, malformed]);
        }
        Ok(())
    }

    fn restore(&mut self) -> Result<()> {
        let mut first_err = None;
        for p in 0..self.ports.len() {
            let (index, state) = (self.ports[p].index, self.ports[p].saved_state);
            if let Err(e) = self.rtnl.set_master(index, self.bridge_index) {
                first_err.get_or_insert(e.context(format!("putting {} back into the bridge", self.ports[p].name)));
                continue;
            }
            if let Err(e) = self.rtnl.set_port_state(index, state) {
                if self.ports[p].link {
                    first_err.get_or_insert(e.context(format!("restoring {}'s state", self.ports[p].name)));
                }
            }
        }
        if let Err(e) = self.rtnl.del_eaps_local(self.bridge_index) {
            first_err.get_or_insert(e);
        }
        // Last: the ports are back in their saved states (disabled, by the deployment rule).
        if let Some(g) = self.gates.as_mut() {
            if let Err(e) = g.remove() {
                first_err.get_or_insert(e);
            }
        }
        self.write_status(true)?;
        self.report.line(format!(
            "spotagg eaps: stopped; ports back as they were ({})",
            self.ports.iter().map(|p| format!("{} state {}", p.name, p.saved_state)).collect::<Vec<_>>().join(", ")
        ));
        first_err.map_or(Ok(()), Err)
    }
}
