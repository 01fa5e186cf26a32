//! An all-reduce across a ring failure (issue 17 item 7): workers on several ring nodes run an
//! i32 all-reduce through the reference switch (`spotagg_spec::reference::RefSwitch`) attached to
//! another node, over the ring simulator, while a ring link fails and is restored. The workers
//! are the driver's sans-I/O [`spotagg_driver::AllReduce`]; their SwitchML messages travel as
//! Ethernet/IPv4/UDP frames on protected VLAN 100 through the simulated bridges.
//!
//! Co-simulation: the ring runs in steps of [`STEP`]; after each step the frames delivered to
//! hosts go to the switch or the workers, whose answers enter the ring at the step's end (so
//! each host adds at most one step of latency), and due worker timers run.

use super::ring::{Ring, RingConfig};
use spotagg_driver::transport::frame::{decapsulate, encapsulate, Endpoint};
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::{Engine, JobConfig, Worker};
use spotagg_spec::eaps::{Nanos, MS, US};
use spotagg_spec::reference::RefSwitch;
use std::time::{Duration, Instant};

/// The co-simulation step.
pub const STEP: Nanos = 2 * US;

/// The outcome of one all-reduce.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Outcome {
    /// Time from start to the last worker's last result.
    pub duration: Nanos,
    /// Every worker holds exactly the element-wise sum.
    pub exact: bool,
    /// Retransmissions over all workers.
    pub retransmissions: u64,
    /// Application frames that looped.
    pub looped: u64,
}

/// Runs an all-reduce of `elements` i32 per worker on an `nodes`-node ring ([`RingConfig::standard`]
/// without its host flows), the switch at `switch_node`, worker r at `worker_nodes[r]`; with
/// `failure = Some((link, down, up))` the link fails `down` after the start and is restored
/// `up` after the start. Worker retransmission timeout 1 ms.
pub fn run(
    nodes: usize,
    switch_node: usize,
    worker_nodes: &[usize],
    elements: usize,
    failure: Option<(usize, Nanos, Nanos)>,
) -> Result<Outcome, String> {
    let (mut ring, job) = start(nodes, worker_nodes.len());
    if let Some((link, down, up)) = failure {
        ring.fail_link(link, T0 + down);
        ring.restore_link(link, T0 + up);
    }
    let switches = Switches { jobs: vec![job.clone()], nodes: vec![switch_node], kill_after: None, limit_ms: 2_000 };
    Ok(cosim(&mut ring, &job, &switches, worker_nodes, elements)?.outcome)
}

/// The outcome of [`run_failover`].
#[derive(Debug, Clone, PartialEq)]
pub struct FailoverOutcome {
    /// The all-reduce.
    pub outcome: Outcome,
    /// The switch each worker ended on (0 primary, 1 standby).
    pub switches: Vec<usize>,
    /// Each worker's failover stall (last result of the primary to the first resumed result on
    /// the standby), in seconds; `None` for a worker that did not fail over.
    pub stalls: Vec<Option<f64>>,
}

/// Issue 19 on the ring: the same i32 all-reduce with two aggregation nodes, a primary at
/// `switch_nodes.0` and a standby at `switch_nodes.1` (each a reference switch with a MAC and an
/// IPv4 address of its own, both configured with the job); the primary stops (drops everything)
/// `kill_after` after the start. The workers fail over to the standby (docs/worker.md).
pub fn run_failover(
    nodes: usize,
    switch_nodes: (usize, usize),
    worker_nodes: &[usize],
    elements: usize,
    kill_after: Nanos,
) -> Result<FailoverOutcome, String> {
    let (mut ring, mut job) = start(nodes, worker_nodes.len());
    let mut standby_job = job.clone();
    standby_job.switch_mac.0[5] = 2;
    standby_job.switch_ip = std::net::Ipv4Addr::new(192, 0, 2, 2);
    let jobs = [job.clone(), standby_job];
    job.switches = jobs.iter().map(|j| std::net::SocketAddr::from((j.switch_ip, j.switch_port))).collect();
    let switches = Switches {
        jobs: jobs.to_vec(),
        nodes: vec![switch_nodes.0, switch_nodes.1],
        kill_after: Some(kill_after),
        limit_ms: 20_000,
    };
    cosim(&mut ring, &job, &switches, worker_nodes, elements)
}

/// The start of every run.
const T0: Nanos = 5 * MS;

/// The ring ([`RingConfig::standard`] without its host flows) run to [`T0`], and the job of
/// `workers` workers (256-byte payload, 16 slots, retransmission timeout 1 ms).
fn start(nodes: usize, workers: usize) -> (Ring, JobConfig) {
    let mut cfg = RingConfig::standard(nodes);
    cfg.flows.clear();
    let mut ring = Ring::new(cfg, 0, 0);
    ring.run_until(T0);
    let mut job = JobConfig::example(workers, PayloadSize::B256, 16);
    job.timeout = Duration::from_millis(1);
    (ring, job)
}

/// The aggregation nodes of a run: a reference switch configured with `jobs[s]` at ring node
/// `nodes[s]`; switch 0 stops (drops everything) `kill_after` after the start. The run fails
/// when it has not finished `limit_ms` after the start.
struct Switches {
    jobs: Vec<JobConfig>,
    nodes: Vec<usize>,
    kill_after: Option<Nanos>,
    limit_ms: u64,
}

/// The co-simulation from [`T0`]: worker r of `job` at `worker_nodes[r]` all-reduces `elements`
/// i32 through `switches`, each worker sending to and taking results only from its active
/// switch (as the UDP transport).
fn cosim(
    ring: &mut Ring,
    job: &JobConfig,
    switches: &Switches,
    worker_nodes: &[usize],
    elements: usize,
) -> Result<FailoverOutcome, String> {
    let (jobs, node_of, t0) = (&switches.jobs, &switches.nodes, T0);
    for (j, &node) in jobs.iter().zip(node_of) {
        ring.attach_host_mac(node, j.switch_mac);
    }
    for (r, &node) in worker_nodes.iter().enumerate() {
        ring.attach_host_mac(node, job.workers[r].mac);
    }
    let value = |r: usize, i: usize| ((i * 7919 + r * 104_729) % 200_001) as i32 - 100_000;
    let mut data: Vec<Vec<i32>> =
        (0..worker_nodes.len()).map(|r| (0..elements).map(|i| value(r, i)).collect()).collect();
    let expected: Vec<i32> = (0..elements).map(|i| (0..worker_nodes.len()).map(|r| value(r, i)).sum()).collect();
    let mut workers: Vec<Worker> = (0..worker_nodes.len())
        .map(|r| Worker::new(job.clone(), r).map_err(|e| e.to_string()))
        .collect::<Result<_, _>>()?;
    let base = Instant::now();
    let at = |t: Nanos| base + Duration::from_nanos(t);
    let mut refs: Vec<RefSwitch> = jobs.iter().map(|j| RefSwitch::new(j.clone())).collect();
    let mut ops = Vec::new();
    for (w, d) in workers.iter_mut().zip(data.iter_mut()) {
        ops.push(w.start_i32(d, at(t0)).map_err(|e| e.to_string())?);
    }
    let eps: Vec<Endpoint> =
        jobs.iter().map(|j| Endpoint { mac: j.switch_mac, ip: j.switch_ip, port: j.switch_port }).collect();
    let (mut buf, mut out) = (Vec::new(), Vec::new());
    let mut t = t0;
    let mut done_at = None;
    while done_at.is_none() {
        for (r, op) in ops.iter_mut().enumerate() {
            let me = Endpoint { mac: job.workers[r].mac, ip: job.workers[r].ip, port: job.worker_port };
            let to = eps[op.switch_index()];
            while let Some(m) = op.poll_transmit() {
                encapsulate(me, Endpoint { port: m.lanes.port(to.port), ..to }, m.contents, &mut buf);
                ring.inject(worker_nodes[r], 100, buf.clone());
            }
        }
        t += STEP;
        if t > t0 + switches.limit_ms * MS {
            let limit = switches.limit_ms / 1000;
            return Err(format!("the all-reduce did not finish within {limit} s of virtual time"));
        }
        ring.run_until(t);
        for (node, f) in ring.take_inbox() {
            if let Some(s) = node_of.iter().position(|&n| n == node) {
                if s == 0 && switches.kill_after.is_some_and(|k| t >= t0 + k) {
                    continue;
                }
                refs[s].process(&f, &mut out);
                for o in out.drain(..) {
                    ring.inject(node, 100, o);
                }
            } else if let Some(d) = decapsulate(&f) {
                if let Some(r) = job.rank_of(d.dst.ip) {
                    // Only what comes from the worker's active switch (as the UDP transport).
                    if d.src.ip == jobs[ops[r].switch_index()].switch_ip {
                        ops[r].handle_message(at(t), d.payload).map_err(|e| e.to_string())?;
                    }
                }
            }
        }
        for op in ops.iter_mut() {
            if op.poll_timeout().is_some_and(|d| d <= at(t)) {
                op.handle_timeout(at(t)).map_err(|e| e.to_string())?;
            }
        }
        if ops.iter().all(|o| o.is_done()) {
            done_at = Some(t);
        }
    }
    let retransmissions = ops.iter().map(|o| o.stats().retransmissions).sum();
    let stalls = ops.iter().map(|o| o.stats().failovers.first().map(|f| f.stall_seconds)).collect();
    let switches = ops.iter().map(|o| o.switch_index()).collect();
    drop(ops);
    let exact = data.iter().all(|d| *d == expected);
    let outcome = Outcome { duration: done_at.unwrap() - t0, exact, retransmissions, looped: ring.app_looped };
    Ok(FailoverOutcome { outcome, switches, stalls })
}
