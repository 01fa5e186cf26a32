//! The cluster-scale simulator: discrete events in virtual time over links with bandwidth,
//! latency and loss, running the sans-I/O workers ([`spotagg_driver::worker::AllReduce`]) and
//! the reference switches ([`RefSwitch`], [`MultiSwitch`]) unchanged, and a ring all-reduce
//! over the same links as the peer to compare with.
//!
//! # Model
//!
//! - **Topology**: a tree. Workers hang off leaf switches ("racks"); leaf switches off inner
//!   switches, and so on up to one root ([`Topology::tree`]). Each node but the root has one
//!   full-duplex link to its parent: two directed links, each with the same [`LinkParams`].
//! - **Links** are store-and-forward FIFOs without a buffer limit: a frame of L bytes takes
//!   `(L + 24) · 8 / rate` on the wire (preamble, FCS and inter-frame gap: 24 bytes), starts
//!   when the link is free, and arrives `latency` after its last bit. Each directed link loses
//!   each frame with probability `loss` (the frame still used the wire), from its own seeded
//!   generator.
//! - **Switches** forward frames that are not for them along the tree (ring traffic, and
//!   frames between a leaf and its parent pass only the links between them) at no cost beyond
//!   the links. Frames to a switch's own address go to its engine, which takes
//!   `switch_frame_time` per frame (0: infinitely fast), one frame at a time in arrival order.
//! - **Aggregation**: every switch runs a [`RefSwitch`] for the job of its children (docs/
//!   switch.md §6: a switch with a parent sends its completed rounds up). Workers run
//!   [`Worker`]/[`AllReduce`] with the job of their leaf, `tree_workers` = every worker.
//!   Virtual time is handed to them as `Instant`s from one origin.
//! - **Ring**: the textbook bandwidth-optimal ring (reduce-scatter then all-gather, 2(n − 1)
//!   steps of M/n per node), pipelined per packet of k elements: a node sends packet j of step
//!   s + 1 as soon as it has packet j of step s. Node i sends to node i + 1 in worker order, so
//!   that neighbours share a rack where they can. Packets carry the same 52 bytes of headers as
//!   a SwitchML frame. The ring has no retransmission: it runs on lossless links only (an ideal
//!   ring, in its favour).
//!
//! Everything is seeded: a run is a pure function of its configuration.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::config::{JobConfig, ParentConfig, WorkerEntry};
use spotagg_driver::engine::Engine;
use spotagg_driver::fixedpoint;
use spotagg_driver::wire::frame::{self, Endpoint};
use spotagg_driver::wire::{switchml, Ipv4Addr, MacAddr, PayloadSize};
use spotagg_driver::worker::{self, AllReduce, Worker};
use spotagg_spec::multi_job::{JobPlacement, MultiSwitch};
use spotagg_spec::reference::RefSwitch;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::time::{Duration, Instant};

/// Bytes a frame costs on the wire beyond its own: preamble and SFD (8), FCS (4), gap (12).
pub const WIRE_OVERHEAD: usize = 24;
/// Headers of a SwitchML frame (Ethernet, IPv4, UDP, SwitchML, exponents), also charged to
/// every ring packet.
pub const HEADERS: usize = 52;

/// One direction of a link.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkParams {
    /// Rate, Gb/s.
    pub gbps: f64,
    /// Propagation (and switching) delay.
    pub latency: Duration,
    /// Probability that a frame is lost.
    pub loss: f64,
}

/// Picoseconds: the simulator's clock.
type Ps = u64;

fn ps(d: Duration) -> Ps {
    d.as_nanos() as u64 * 1000
}

/// A node of the tree.
#[derive(Debug, Clone)]
struct Node {
    ip: Ipv4Addr,
    mac: MacAddr,
    parent: Option<usize>,
    children: Vec<usize>,
    /// Worker index (in worker order), for a worker.
    worker: Option<usize>,
}

/// A tree of switches with workers at the leaves.
#[derive(Debug, Clone)]
pub struct Topology {
    nodes: Vec<Node>,
    /// Node ids of the workers, in worker order.
    workers: Vec<usize>,
    /// Node ids of the switches, the root first.
    switches: Vec<usize>,
    /// Fan-out of each level, root first.
    fanout: Vec<usize>,
}

impl Topology {
    /// A tree with `fanout[0]` children at the root, `fanout[1]` under each of those, ...; the
    /// children of the last level are the workers. Every fan-out must be 1..=32 (the worker
    /// bitmap of one switch).
    pub fn tree(fanout: &[usize]) -> Topology {
        assert!(!fanout.is_empty(), "a tree needs at least one switch");
        assert!(fanout.iter().all(|f| (1..=32).contains(f)), "fan-outs must be 1..=32: {fanout:?}");
        let mut t = Topology { nodes: Vec::new(), workers: Vec::new(), switches: Vec::new(), fanout: fanout.to_vec() };
        t.add(None, 0);
        t
    }

    /// Racks of `rack` workers, and above them as few levels of switches with at most `fan`
    /// children as hold `n` workers: `n ≤ rack` is one switch, 256 = 16 × 16 two levels,
    /// 1024 = 4 × 16 × 16 three levels (rack = fan = 16). `n` must be a multiple of `rack`
    /// when larger than it, and the number of racks a product of fan-outs ≤ `fan`.
    pub fn racks(n: usize, rack: usize, fan: usize) -> Topology {
        if n <= rack {
            return Topology::tree(&[n]);
        }
        assert!(n.is_multiple_of(rack), "{n} workers are not whole racks of {rack}");
        let mut levels = vec![rack];
        let mut above = n / rack;
        while above > fan {
            assert!(above.is_multiple_of(fan), "{} racks do not divide into groups of {fan}", n / rack);
            levels.push(fan);
            above /= fan;
        }
        levels.push(above);
        levels.reverse();
        Topology::tree(&levels)
    }

    fn add(&mut self, parent: Option<usize>, level: usize) -> usize {
        let id = self.nodes.len();
        // 10.0.0.0/8, one address a node; locally administered MACs.
        let a = (id + 1) as u32;
        let ip = Ipv4Addr::new(10, (a >> 16) as u8, (a >> 8) as u8, a as u8);
        let mac = MacAddr([0x02, 0x00, 0x0a, (a >> 16) as u8, (a >> 8) as u8, a as u8]);
        self.nodes.push(Node { ip, mac, parent, children: Vec::new(), worker: None });
        if level == self.fanout.len() {
            self.nodes[id].worker = Some(self.workers.len());
            self.workers.push(id);
        } else {
            self.switches.push(id);
            for _ in 0..self.fanout[level] {
                let c = self.add(Some(id), level + 1);
                self.nodes[id].children.push(c);
            }
        }
        id
    }

    /// Number of workers.
    pub fn n(&self) -> usize {
        self.workers.len()
    }

    /// Levels of switches.
    pub fn levels(&self) -> usize {
        self.fanout.len()
    }

    /// Fan-out of each level, root first.
    pub fn fanout(&self) -> &[usize] {
        &self.fanout
    }

    /// The node with IPv4 address `ip` (node id + 1 in the low 24 bits of 10.0.0.0/8).
    fn node_of(&self, ip: Ipv4Addr) -> Option<usize> {
        let o = ip.octets();
        let a = (usize::from(o[1]) << 16 | usize::from(o[2]) << 8 | usize::from(o[3])).checked_sub(1)?;
        (o[0] == 10 && a < self.nodes.len()).then_some(a)
    }

    /// The next node from `from` towards `to` (`from` ≠ `to`).
    fn next_hop(&self, from: usize, to: usize) -> usize {
        // Walk up from `to`: if `from` is an ancestor, the child on the way is the next hop.
        let mut c = to;
        while let Some(p) = self.nodes[c].parent {
            if p == from {
                return c;
            }
            c = p;
        }
        self.nodes[from].parent.expect("the root is an ancestor of every node")
    }

    fn entry(&self, id: usize) -> WorkerEntry {
        WorkerEntry { ip: self.nodes[id].ip, mac: self.nodes[id].mac }
    }
}

/// What a tree run aggregates, and how.
#[derive(Debug, Clone)]
pub struct TreeConfig {
    /// Links, every one alike.
    pub link: LinkParams,
    /// Elements of each worker's tensor.
    pub elements: usize,
    /// f32 tensors (scaled by the tree's workers) instead of i32.
    pub float: bool,
    /// Payload of a packet.
    pub payload: PayloadSize,
    /// Slots of every switch's job, and the workers' window.
    pub slots: u16,
    /// The workers' first retransmission timeout and its floor.
    pub timeout: Duration,
    /// Time a switch's engine takes per frame (0: none).
    pub switch_frame_time: Duration,
    /// Seed of the data and of every link's losses.
    pub seed: u64,
    /// A worker slowed on purpose: (worker, factor): its link to its switch runs at `factor`
    /// times the others' rate, both ways.
    pub slow_worker: Option<(usize, f64)>,
}

impl TreeConfig {
    /// Defaults for a link: 1024-byte payloads, 128 slots, no switch processing time, i32
    /// data, and a timeout floor of 200 µs or twice the time a window of frames takes on the
    /// link, whichever is longer (so that a window queued on a worker's link does not time
    /// out: 2.2 ms at 1 Gb/s).
    pub fn new(link: LinkParams, elements: usize, seed: u64) -> TreeConfig {
        let slots = 128u16;
        let window_ps =
            2.0 * f64::from(slots) * (PayloadSize::B1024.bytes() + HEADERS + WIRE_OVERHEAD) as f64 * 8000.0 / link.gbps;
        TreeConfig {
            link,
            elements,
            float: false,
            payload: PayloadSize::B1024,
            slots,
            timeout: Duration::from_micros(200).max(Duration::from_nanos((window_ps / 1000.0) as u64)),
            switch_frame_time: Duration::ZERO,
            seed,
            slow_worker: None,
        }
    }
}

/// One rank's straggler counters: rounds it was last, lag µs total, lag µs max.
pub type RankLag = (u64, u64, u64);

/// The outcome of an all-reduce on the simulated cluster.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RunResult {
    /// Workers.
    pub n: usize,
    /// Virtual time from the start to the last worker's last result, seconds.
    pub seconds: f64,
    /// Workers whose result differs from the exact sum (i32), or is outside the fixed-point
    /// bound (f32).
    pub wrong_workers: usize,
    /// Frames sent on every link (each hop counts).
    pub link_frames: u64,
    /// Frames lost on the links.
    pub link_lost: u64,
    /// Retransmissions of all workers.
    pub retransmissions: u64,
    /// The largest retransmission timeout a worker ended with, seconds (its adaptive timeout
    /// with backoff carried over: driver/src/worker.rs).
    pub max_rto_seconds: f64,
    /// Events processed.
    pub events: u64,
    /// Each worker's time to its last result, seconds (worker order).
    pub finish: Vec<f64>,
    /// The straggler counters of every switch (docs/switch.md §7), read from its Prometheus
    /// families: (switch index, root first; per rank: rounds last, lag µs total, lag µs max).
    pub stragglers: Vec<(usize, Vec<RankLag>)>,
}

impl RunResult {
    /// Payload throughput of one worker, Gb/s: 4 bytes an element over the run's time.
    pub fn gbps(&self, elements: usize) -> f64 {
        elements as f64 * 32.0 / self.seconds / 1e9
    }
}

/// Why a run failed.
#[derive(Debug, thiserror::Error)]
pub enum ClusterError {
    /// A worker failed (its switch stopped answering, ...).
    #[error("worker {worker}: {source}")]
    Worker {
        /// The worker.
        worker: usize,
        /// Its error.
        source: worker::Error,
    },
    /// The events ran out with workers not done.
    #[error("the simulation stalled at {at_us:.1} µs with {pending} workers not done")]
    Stalled {
        /// Virtual time.
        at_us: f64,
        /// Workers not done.
        pending: usize,
    },
}

enum Body {
    Frame(Vec<u8>),
    Ring { step: u32, seg: u32, pkt: u32, values: Vec<i32> },
}

struct Packet {
    dst: usize,
    bytes: usize,
    body: Body,
}

enum What {
    /// A packet reaches a node at the end of a link.
    Arrive { node: usize, pkt: Packet },
    /// A switch's engine takes a frame (after its processing time).
    Process { node: usize, frame: Vec<u8> },
    /// A worker's timer.
    Timer { worker: usize },
}

struct Ev {
    t: Ps,
    seq: u64,
    what: What,
}

ord_by_key!(Ev, |e: &Ev| (e.t, e.seq));

struct LinkState {
    free_at: Ps,
    rng: ChaCha8Rng,
    /// Picoseconds per byte on the wire.
    ps_per_byte: f64,
}

/// The links and the event queue.
struct Net<'t> {
    topo: &'t Topology,
    params: LinkParams,
    /// Per node: the link up to its parent (index 2 id) and down from it (2 id + 1).
    links: Vec<LinkState>,
    queue: BinaryHeap<Reverse<Ev>>,
    seq: u64,
    frames: u64,
    lost: u64,
    events: u64,
}

impl<'t> Net<'t> {
    fn new(topo: &'t Topology, params: LinkParams, seed: u64) -> Net<'t> {
        let links = (0..2 * topo.nodes.len())
            .map(|i| LinkState {
                free_at: 0,
                rng: ChaCha8Rng::seed_from_u64(seed ^ (0x9e37_79b9_7f4a_7c15 ^ i as u64)),
                ps_per_byte: 8000.0 / params.gbps,
            })
            .collect();
        Net { topo, params, links, queue: BinaryHeap::new(), seq: 0, frames: 0, lost: 0, events: 0 }
    }

    /// Makes the two links of `node` `factor` times as fast.
    fn scale_links(&mut self, node: usize, factor: f64) {
        for l in [2 * node, 2 * node + 1] {
            self.links[l].ps_per_byte /= factor;
        }
    }

    fn schedule(&mut self, t: Ps, what: What) {
        self.seq += 1;
        self.queue.push(Reverse(Ev { t, seq: self.seq, what }));
    }

    /// Sends `pkt` one hop from `from` towards its destination at time `now`.
    fn transmit(&mut self, now: Ps, from: usize, pkt: Packet) {
        let to = self.topo.next_hop(from, pkt.dst);
        let link = if self.topo.nodes[from].parent == Some(to) { 2 * from } else { 2 * to + 1 };
        let l = &mut self.links[link];
        let start = now.max(l.free_at);
        let wire = ((pkt.bytes.max(60) + WIRE_OVERHEAD) as f64 * l.ps_per_byte).round() as Ps;
        l.free_at = start + wire;
        self.frames += 1;
        if self.params.loss > 0.0 && l.rng.gen_bool(self.params.loss) {
            self.lost += 1;
            return;
        }
        let at = l.free_at + ps(self.params.latency);
        self.schedule(at, What::Arrive { node: to, pkt });
    }

    fn pop(&mut self) -> Option<Ev> {
        self.events += 1;
        self.queue.pop().map(|Reverse(e)| e)
    }
}

/// The job of switch `s`'s children: `tree_workers` = every worker of the tree.
fn switch_job(topo: &Topology, s: usize, cfg: &TreeConfig, job_number: u8) -> JobConfig {
    let node = &topo.nodes[s];
    let mut job = JobConfig::example(1, cfg.payload, cfg.slots);
    job.switch_mac = node.mac;
    job.switch_ip = node.ip;
    job.workers = node.children.iter().map(|&c| topo.entry(c)).collect();
    job.window = cfg.slots;
    job.timeout = cfg.timeout;
    job.max_retries = 40;
    job.job_number = job_number;
    // One run on freshly configured switches: no session handshake (docs/switch.md §2.1), so the
    // times are the all-reduce's alone, as the ring's are.
    job.sessions = false;
    job.tree_workers = topo.n();
    job.parent = node.parent.map(|p| ParentConfig {
        ip: topo.nodes[p].ip,
        mac: topo.nodes[p].mac,
        port: switchml::UDP_PORT_BASE,
        rank: topo.nodes[p].children.iter().position(|&c| c == s).unwrap(),
    });
    job
}

/// A worker's tensor, from the seed: i32 over the whole range (sums wrap around), or f32 of
/// magnitudes that vary by chunk.
fn tensor_i32(seed: u64, w: usize, elements: usize) -> Vec<i32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x1000_0001).wrapping_add(w as u64));
    (0..elements).map(|_| rng.gen()).collect()
}

fn tensor_f32(seed: u64, w: usize, elements: usize) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(0x1000_0001).wrapping_add(w as u64));
    (0..elements).map(|i| (rng.gen::<f32>() - 0.5) * 2f32.powi((i / 700 % 9) as i32 - 4)).collect()
}

enum Tensors {
    I32(Vec<Vec<i32>>),
    F32(Vec<Vec<f32>>),
}

/// What each worker runs: its job and rank, or nothing (idle).
type Assignment = Vec<Option<(JobConfig, usize)>>;

/// Runs the workers' all-reduce on `topo` with `engines` in the switches (by node id).
fn run_workers(
    topo: &Topology,
    engines: &mut [Option<Box<dyn Engine>>],
    assign: &Assignment,
    tensors: &mut Tensors,
    cfg: &TreeConfig,
) -> Result<RunResult, ClusterError> {
    let t0 = Instant::now();
    let at = |t: Ps| t0 + Duration::from_nanos(t / 1000);
    let back = |i: Instant| (i.saturating_duration_since(t0).as_nanos() as u64) * 1000;
    let mut net = Net::new(topo, cfg.link, cfg.seed);
    if let Some((w, factor)) = cfg.slow_worker {
        net.scale_links(topo.workers[w], factor);
    }
    let n = topo.n();
    let mut workers: Vec<Option<Worker>> = assign
        .iter()
        .map(|a| a.as_ref().map(|(job, rank)| Worker::new(job.clone(), *rank).expect("rank in the job")))
        .collect();
    let mut ops: Vec<Option<AllReduce<'_>>> = Vec::with_capacity(n);
    match tensors {
        Tensors::I32(ts) => {
            for (w, t) in workers.iter_mut().zip(ts.iter_mut()) {
                ops.push(w.as_mut().map(|w| w.start_i32(t, at(0)).expect("an i32 start cannot fail")));
            }
        }
        Tensors::F32(ts) => {
            for (i, (w, t)) in workers.iter_mut().zip(ts.iter_mut()).enumerate() {
                ops.push(match w.as_mut() {
                    Some(w) => Some(w.start_f32(t, at(0)).map_err(|e| ClusterError::Worker { worker: i, source: e })?),
                    None => None,
                });
            }
        }
    }
    let mut timer: Vec<Option<Ps>> = vec![None; n];
    let mut finish: Vec<f64> = vec![0.0; n];
    let mut busy: Vec<Ps> = vec![0; topo.nodes.len()];
    let mut pending = ops.iter().filter(|o| o.as_ref().is_some_and(|o| !o.is_done())).count();
    let mut out = Vec::new();
    let mut buf = Vec::new();
    // Sends what worker w has to send and re-arms its timer.
    macro_rules! flush {
        ($w:expr, $now:expr) => {{
            let w: usize = $w;
            let now: Ps = $now;
            let node = topo.workers[w];
            let job = assign[w].as_ref().unwrap().0.clone();
            let me = Endpoint { mac: topo.nodes[node].mac, ip: topo.nodes[node].ip, port: job.worker_port };
            let sw = Endpoint { mac: job.switch_mac, ip: job.switch_ip, port: job.switch_port };
            let parent = topo.nodes[node].parent.unwrap();
            let op = ops[w].as_mut().unwrap();
            while let Some(m) = op.poll_transmit() {
                let to = Endpoint { port: m.lanes.port(sw.port), ..sw };
                frame::encapsulate(me, to, m.contents, &mut buf);
                let pkt = Packet { dst: parent, bytes: buf.len(), body: Body::Frame(buf.clone()) };
                net.transmit(now, node, pkt);
            }
            if op.is_done() {
                if finish[w] == 0.0 {
                    finish[w] = now as f64 * 1e-12;
                    pending -= 1;
                }
            } else if let Some(t) = op.poll_timeout().map(back) {
                if timer[w].is_none_or(|s| t < s) {
                    timer[w] = Some(t);
                    net.schedule(t, What::Timer { worker: w });
                }
            }
        }};
    }
    for w in 0..n {
        if ops[w].is_some() {
            flush!(w, 0);
        }
    }
    let mut now: Ps = 0;
    while pending > 0 {
        let Some(ev) = net.pop() else {
            return Err(ClusterError::Stalled { at_us: now as f64 * 1e-6, pending });
        };
        now = ev.t;
        match ev.what {
            What::Timer { worker: w } => {
                if timer[w] != Some(now) {
                    continue;
                }
                timer[w] = None;
                let op = ops[w].as_mut().unwrap();
                op.handle_timeout(at(now)).map_err(|e| ClusterError::Worker { worker: w, source: e })?;
                flush!(w, now);
            }
            What::Arrive { node, pkt } if pkt.dst != node => net.transmit(now, node, pkt),
            What::Arrive { node, pkt } => {
                let Body::Frame(f) = pkt.body else { unreachable!("ring packets in a tree run") };
                if let Some(w) = topo.nodes[node].worker {
                    let Some(op) = ops[w].as_mut() else { continue };
                    let Some(d) = frame::decapsulate(&f) else { continue };
                    op.handle_message(at(now), d.payload).map_err(|e| ClusterError::Worker { worker: w, source: e })?;
                    flush!(w, now);
                } else if cfg.switch_frame_time.is_zero() {
                    net.schedule(now, What::Process { node, frame: f });
                } else {
                    let t = now.max(busy[node]) + ps(cfg.switch_frame_time);
                    busy[node] = t;
                    net.schedule(t, What::Process { node, frame: f });
                }
            }
            What::Process { node, frame: f } => {
                let engine = engines[node].as_mut().expect("a switch has an engine");
                engine.set_clock(now / 1_000_000);
                out.clear();
                engine.process(&f, &mut out);
                for o in out.drain(..) {
                    let Some(d) = frame::decapsulate(&o) else { continue };
                    let Some(dst) = topo.node_of(d.dst.ip) else { continue };
                    net.transmit(now, node, Packet { dst, bytes: o.len(), body: Body::Frame(o) });
                }
            }
        }
    }
    let retransmissions = ops.iter().flatten().map(|o| o.stats().retransmissions).sum();
    let max_rto_seconds = ops.iter().flatten().map(|o| o.stats().rto_seconds).fold(0.0, f64::max);
    let seconds = finish.iter().copied().fold(0.0, f64::max);
    drop(ops);
    let stragglers = topo
        .switches
        .iter()
        .enumerate()
        .filter_map(|(i, &s)| engines[s].as_ref().map(|e| (i, stragglers_of(&e.metrics()))))
        .collect();
    Ok(RunResult {
        n,
        seconds,
        wrong_workers: 0,
        link_frames: net.frames,
        link_lost: net.lost,
        retransmissions,
        max_rto_seconds,
        events: net.events,
        finish,
        stragglers,
    })
}

/// Per rank (rounds last, lag µs total, lag µs max) from an engine's Prometheus families.
fn stragglers_of(families: &[spotagg_driver::metrics::Family]) -> Vec<RankLag> {
    let get = |name: &str| -> Vec<(usize, u64)> {
        families
            .iter()
            .filter(|f| f.name == name)
            .flat_map(|f| &f.samples)
            .filter_map(|(l, v)| {
                let r = l.iter().find(|(k, _)| k == "rank")?.1.parse().ok()?;
                Some((r, *v as u64))
            })
            .collect()
    };
    let last = get("spotagg_switch_straggler_rounds_last_total");
    let total = get("spotagg_switch_straggler_behind_microseconds_total");
    let max = get("spotagg_switch_straggler_behind_microseconds_max");
    let mut out = vec![(0, 0, 0); last.iter().map(|x| x.0 + 1).max().unwrap_or(0)];
    for (r, v) in last {
        out[r].0 = v;
    }
    for (r, v) in total {
        out[r].1 = v;
    }
    for (r, v) in max {
        out[r].2 = v;
    }
    out
}

/// Checks every worker's result against the exact sum: wrapping i32, or f64 within the
/// fixed-point bound for `scale` workers. Returns the number of wrong workers.
fn check(tensors: &Tensors, inputs: &Tensors, members: &[usize], scale: usize, k: usize) -> usize {
    match (tensors, inputs) {
        (Tensors::I32(got), Tensors::I32(inp)) => {
            let m = inp[members[0]].len();
            let mut want = vec![0i32; m];
            for &w in members {
                for (a, b) in want.iter_mut().zip(&inp[w]) {
                    *a = a.wrapping_add(*b);
                }
            }
            members.iter().filter(|&&w| got[w] != want).count()
        }
        (Tensors::F32(got), Tensors::F32(inp)) => {
            let m = inp[members[0]].len();
            let mut exact = vec![0f64; m];
            let mut e_max = vec![fixedpoint::E_ZERO; m.div_ceil(k)];
            for &w in members {
                for (a, b) in exact.iter_mut().zip(&inp[w]) {
                    *a += f64::from(*b);
                }
                for (c, e) in e_max.iter_mut().enumerate() {
                    let x = fixedpoint::exponent(&inp[w][c * k..((c + 1) * k).min(m)]).unwrap();
                    *e = (*e).max(x);
                }
            }
            members
                .iter()
                .filter(|&&w| {
                    (0..m).any(|i| {
                        let g = got[w][i];
                        (f64::from(g) - exact[i]).abs() > fixedpoint::error_bound(scale, e_max[i / k], g)
                    })
                })
                .count()
        }
        _ => unreachable!("inputs and results of one type"),
    }
}

/// The engines of a run, by node id (`None` for a worker).
pub type SwitchEngines = Vec<Option<Box<dyn Engine>>>;

/// An all-reduce through the aggregation tree `topo`: a [`RefSwitch`] in every switch.
pub fn tree_allreduce(topo: &Topology, cfg: &TreeConfig) -> Result<RunResult, ClusterError> {
    tree_allreduce_with(topo, cfg, &mut |_, job| Box::new(RefSwitch::new(job.clone()))).map(|(r, _)| r)
}

/// As [`tree_allreduce`], with the engine of switch node `s` (its job: `job`) made by
/// `make(s, job)` (the HDL core as a leaf, `sim/tests/rtl_tree.rs`); returns the engines too,
/// by node id, so that the caller reads their counters and metrics.
pub fn tree_allreduce_with(
    topo: &Topology,
    cfg: &TreeConfig,
    make: &mut dyn FnMut(usize, &JobConfig) -> Box<dyn Engine>,
) -> Result<(RunResult, SwitchEngines), ClusterError> {
    let n = topo.n();
    let mut engines: Vec<Option<Box<dyn Engine>>> = (0..topo.nodes.len()).map(|_| None).collect();
    for &s in &topo.switches {
        engines[s] = Some(make(s, &switch_job(topo, s, cfg, 0)));
    }
    let assign: Assignment = topo
        .workers
        .iter()
        .map(|&w| {
            let p = topo.nodes[w].parent.unwrap();
            let rank = topo.nodes[p].children.iter().position(|&c| c == w).unwrap();
            Some((switch_job(topo, p, cfg, 0), rank))
        })
        .collect();
    let inputs = make_tensors(cfg, n);
    let mut tensors = clone_tensors(&inputs);
    let mut r = run_workers(topo, &mut engines, &assign, &mut tensors, cfg)?;
    let all: Vec<usize> = (0..n).collect();
    r.wrong_workers = check(&tensors, &inputs, &all, n, cfg.payload.elements());
    Ok((r, engines))
}

fn make_tensors(cfg: &TreeConfig, n: usize) -> Tensors {
    if cfg.float {
        Tensors::F32((0..n).map(|w| tensor_f32(cfg.seed, w, cfg.elements)).collect())
    } else {
        Tensors::I32((0..n).map(|w| tensor_i32(cfg.seed, w, cfg.elements)).collect())
    }
}

fn clone_tensors(t: &Tensors) -> Tensors {
    match t {
        Tensors::I32(v) => Tensors::I32(v.clone()),
        Tensors::F32(v) => Tensors::F32(v.clone()),
    }
}

/// Two jobs on one switch ([`MultiSwitch`]): the first `a` workers are job 0 (`job_number` 0,
/// slots 0..S), the next `b` job 1 (`job_number` 1, slots S..2S). `active` says which jobs
/// run. Returns each job's time (seconds; 0 for a job that did not run) and the run.
pub fn two_jobs(
    a: usize,
    b: usize,
    active: [bool; 2],
    cfg: &TreeConfig,
) -> Result<([f64; 2], RunResult), ClusterError> {
    let topo = Topology::tree(&[a + b]);
    let root = topo.switches[0];
    let full = switch_job(&topo, root, cfg, 0);
    let mut jobs = [full.clone(), full.clone()];
    jobs[0].workers = full.workers[..a].to_vec();
    jobs[0].tree_workers = a;
    jobs[1].workers = full.workers[a..].to_vec();
    jobs[1].tree_workers = b;
    jobs[1].job_number = 1;
    let s = u32::from(cfg.slots);
    let placements =
        vec![JobPlacement { job: jobs[0].clone(), slot_base: 0 }, JobPlacement { job: jobs[1].clone(), slot_base: s }];
    let multi = MultiSwitch::new(placements, 2 * s).expect("two disjoint jobs");
    let mut engines: Vec<Option<Box<dyn Engine>>> = (0..topo.nodes.len()).map(|_| None).collect();
    engines[root] = Some(Box::new(multi));
    let assign: Assignment = (0..a + b)
        .map(|w| {
            let j = usize::from(w >= a);
            active[j].then(|| (jobs[j].clone(), if j == 0 { w } else { w - a }))
        })
        .collect();
    let inputs = make_tensors(cfg, a + b);
    let mut tensors = clone_tensors(&inputs);
    let mut r = run_workers(&topo, &mut engines, &assign, &mut tensors, cfg)?;
    let members = [(0..a).collect::<Vec<_>>(), (a..a + b).collect::<Vec<_>>()];
    let mut times = [0.0; 2];
    for j in 0..2 {
        if active[j] {
            r.wrong_workers += check(&tensors, &inputs, &members[j], members[j].len(), cfg.payload.elements());
            times[j] = members[j].iter().map(|&w| r.finish[w]).fold(0.0, f64::max);
        }
    }
    Ok((times, r))
}

/// The ring all-reduce of i32 tensors of `elements` on the links of `topo`, packets of
/// `payload` (lossless links only).
pub fn ring_allreduce(
    topo: &Topology,
    link: LinkParams,
    elements: usize,
    payload: PayloadSize,
    seed: u64,
) -> RunResult {
    assert!(link.loss == 0.0, "the ring has no retransmission: run it on lossless links");
    let n = topo.n();
    let k = payload.elements();
    let inputs: Vec<Vec<i32>> = (0..n).map(|w| tensor_i32(seed, w, elements)).collect();
    let mut data = inputs.clone();
    let mut net = Net::new(topo, link, seed);
    let seg = |j: usize| (j * elements / n)..((j + 1) * elements / n);
    let steps = 2 * (n - 1) as u32;
    let mut finish = vec![0.0f64; n];
    if n == 1 {
        return RunResult { n, finish, ..RunResult::default() };
    }
    let send = |net: &mut Net, now: Ps, from: usize, step: u32, j: usize, p: usize, values: Vec<i32>| {
        let to = topo.workers[(from + 1) % n];
        let pkt = Packet {
            dst: to,
            bytes: HEADERS + 4 * values.len(),
            body: Body::Ring { step, seg: j as u32, pkt: p as u32, values },
        };
        net.transmit(now, topo.workers[from], pkt);
    };
    let mut expected = 0u64;
    for (i, d) in data.iter().enumerate() {
        for (p, c) in d[seg(i)].chunks(k).enumerate() {
            send(&mut net, 0, i, 0, i, p, c.to_vec());
        }
    }
    for j in 0..n {
        expected += seg(j).len().div_ceil(k) as u64;
    }
    expected *= u64::from(steps);
    let mut received = 0u64;
    while let Some(ev) = net.pop() {
        let now = ev.t;
        let What::Arrive { node, pkt } = ev.what else { unreachable!("only arrivals in a ring run") };
        if pkt.dst != node {
            net.transmit(now, node, pkt);
            continue;
        }
        let Body::Ring { step, seg: j, pkt: p, values } = pkt.body else { unreachable!("ring packets only") };
        let i = topo.nodes[node].worker.unwrap();
        let r = seg(j as usize);
        let at = r.start + p as usize * k;
        let dst = &mut data[i][at..at + values.len()];
        if step < n as u32 - 1 {
            for (a, b) in dst.iter_mut().zip(&values) {
                *a = a.wrapping_add(*b);
            }
        } else {
            dst.copy_from_slice(&values);
        }
        received += 1;
        finish[i] = now as f64 * 1e-12;
        if step + 1 < steps {
            let v = dst.to_vec();
            send(&mut net, now, i, step + 1, j as usize, p as usize, v);
        }
    }
    assert_eq!(received, expected, "every ring packet arrives on lossless links");
    let stragglers = Vec::new();
    let mut want = vec![0i32; elements];
    for t in &inputs {
        for (a, b) in want.iter_mut().zip(t) {
            *a = a.wrapping_add(*b);
        }
    }
    RunResult {
        n,
        seconds: finish.iter().copied().fold(0.0, f64::max),
        wrong_workers: data.iter().filter(|d| **d != want).count(),
        link_frames: net.frames,
        link_lost: 0,
        retransmissions: 0,
        max_rto_seconds: 0.0,
        events: net.events,
        finish,
        stragglers,
    }
}
