//! Failover to a standby switch (issue 19), property-tested over the reference switch on a
//! virtual clock: n = 1..=32 workers (the driver's sans-I/O core) run a sequence of i32 and f32
//! all-reduces through a primary and a standby `RefSwitch`, with loss and duplication each way;
//! the primary dies after a random number of frames, possibly in the middle of a multicast (only
//! the first j of the frames it emits for its last input get out). Every rank's result must be
//! exact and bit for bit the one of the same run without a failure, every rank must end on the
//! same switch, and a rank must never go back to the switch it left.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::wire::frame::{self, Endpoint};
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::worker::{AllReduce, Stats, Worker};
use spotagg_driver::{Engine, JobConfig};
use spotagg_spec::reference::RefSwitch;
use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

/// Cases in which a rank failed over during its operations.
static FAILED_OVER: AtomicU32 = AtomicU32::new(0);

#[derive(Debug, Clone)]
enum Tensor {
    I32(Vec<i32>),
    F32(Vec<f32>),
}

/// One test case.
#[derive(Debug, Clone)]
struct Case {
    n: usize,
    slots: u16,
    payload: PayloadSize,
    /// Per operation: f32 or not, elements.
    ops: Vec<(bool, usize)>,
    loss: f64,
    dup: f64,
    /// The primary dies after this fraction of the frames it handles in the run without failure
    /// (> 1: never) ...
    kill_at: f64,
    /// ... and of the frames it emits for the last one, only this many get out.
    kill_keep: usize,
    seed: u64,
}

/// What one rank ended with.
struct Outcome {
    tensors: Vec<Tensor>,
    stats: Vec<Stats>,
    active: usize,
    /// The switch each message of the rank went to, in order of sending.
    went_back: bool,
}

struct Run {
    ranks: Vec<Outcome>,
    primary_frames: u64,
    /// The primary died before any rank had finished its operations.
    died_early: bool,
}

fn job(case: &Case) -> JobConfig {
    let mut j = JobConfig::example(case.n, case.payload, case.slots);
    j.timeout = Duration::from_millis(1);
    j.max_retries = 40;
    j.switches = vec!["127.0.0.1:48864".parse().unwrap(), "127.0.0.2:48864".parse().unwrap()];
    j
}

fn tensors(case: &Case, rank: usize) -> Vec<Tensor> {
    let mut rng = ChaCha8Rng::seed_from_u64(case.seed ^ (rank as u64) << 32);
    case.ops
        .iter()
        .map(|&(f, len)| {
            if f {
                Tensor::F32((0..len).map(|i| (rng.gen::<f32>() - 0.5) * 2f32.powi((i % 7) as i32 - 3)).collect())
            } else {
                Tensor::I32((0..len).map(|_| rng.gen()).collect())
            }
        })
        .collect()
}

/// Events of the virtual network, by time then sequence number.
#[derive(PartialEq, Eq, PartialOrd, Ord)]
enum Where {
    /// To switch `.0` from rank `.1`.
    Switch(usize, usize),
    /// To rank `.0` from switch `.1`.
    Rank(usize, usize),
}

/// A message on the virtual network: arrival, sequence number, destination, bytes.
type Event = (Instant, u64, Where, Vec<u8>);

/// Runs the case; `kill_after` frames handled by the primary (`None`: it never dies).
fn run(case: &Case, kill_after: Option<u64>) -> Run {
    let job = job(case);
    let n = case.n;
    let mut switches = [RefSwitch::new(job.clone()), RefSwitch::new(job.clone())];
    let mut dead = false;
    let mut primary_frames = 0u64;
    let mut rng = ChaCha8Rng::seed_from_u64(case.seed.wrapping_mul(31).wrapping_add(7));
    let mut workers: Vec<Worker> = (0..n).map(|r| Worker::new(job.clone(), r).unwrap()).collect();
    let mut data: Vec<Vec<Tensor>> = (0..n).map(|r| tensors(case, r)).collect();
    let mut stats: Vec<Vec<Stats>> = vec![Vec::new(); n];
    let mut went_back = vec![false; n];
    let mut highest = vec![0usize; n];
    let t0 = Instant::now();
    let mut now = t0;
    // The operation in progress of each rank and its index. SAFETY: each rank's worker and
    // tensors are borrowed by at most one operation at a time (the previous one is dropped
    // before the next is made), and `workers`/`data` are neither moved nor touched otherwise
    // until every operation is dropped.
    let wp: Vec<*mut Worker> = workers.iter_mut().map(|w| w as *mut Worker).collect();
    let dp: Vec<*mut Vec<Tensor>> = data.iter_mut().map(|d| d as *mut Vec<Tensor>).collect();
    // After its operations a rank goes on with padding operations (training goes on), so that a
    // rank left behind by a failover finds the others on the standby.
    let mut pad: Vec<Vec<i32>> = vec![vec![0; 64]; n];
    let pp: Vec<*mut Vec<i32>> = pad.iter_mut().map(|d| d as *mut Vec<i32>).collect();
    let start = |r: usize, i: usize, now: Instant| -> Option<AllReduce<'static>> {
        let (pw, pd, ppad) = (wp[r], dp[r], pp[r]);
        let (w, d, pad) = unsafe { (&mut *pw, &mut *pd, &mut *ppad) };
        match d.get_mut(i) {
            Some(Tensor::I32(v)) => Some(w.start_i32(v, now).unwrap()),
            Some(Tensor::F32(v)) => Some(w.start_f32(v, now).unwrap()),
            None => Some(w.start_i32(pad, now).unwrap()),
        }
    };
    let real = case.ops.len();
    let (mut any_done, mut died_early) = (false, false);
    let mut ops: Vec<(usize, Option<AllReduce<'static>>)> = (0..n).map(|r| (0, start(r, 0, now))).collect();
    let mut net: BinaryHeap<Reverse<Event>> = BinaryHeap::new();
    let mut seq = 0u64;
    let mut fifo = vec![vec![t0; usize::from(case.slots)]; n];
    let mut frame_buf = Vec::new();
    let mut out = Vec::new();
    let delay = |rng: &mut ChaCha8Rng| Duration::from_micros(rng.gen_range(5..60));
    for _ in 0..20_000_000u64 {
        // Sends, and operations that finished start the next one.
        for r in 0..n {
            loop {
                let (i, op) = &mut ops[r];
                let Some(o) = op.as_mut() else { break };
                let sw = o.switch_index();
                went_back[r] |= sw < highest[r];
                highest[r] = highest[r].max(sw);
                while let Some(m) = o.poll_transmit() {
                    if rng.gen_bool(case.loss) {
                        continue;
                    }
                    let copies = if rng.gen_bool(case.dup) { 2 } else { 1 };
                    // A rank's messages of one slot arrive in the order sent (the protocol's,
                    // and SwitchML's, assumption: a late copy of set v behind set 1 − v would be
                    // new again), those of different slots in any order.
                    let slot = usize::from(u16::from_be_bytes([m[6], m[7]]) & 0x7fff);
                    for _ in 0..copies {
                        seq += 1;
                        let last = &mut fifo[r][slot];
                        let at = (now + delay(&mut rng)).max(*last + Duration::from_nanos(1));
                        *last = at;
                        net.push(Reverse((at, seq, Where::Switch(sw, r), m.to_vec())));
                    }
                }
                if !o.is_done() {
                    break;
                }
                if *i < real {
                    stats[r].push(o.stats());
                    if *i + 1 == real && !any_done {
                        any_done = true;
                        died_early = dead;
                    }
                }
                *op = None;
                *i += 1;
                *op = start(r, *i, now);
            }
        }
        let sw = |o: &Option<AllReduce<'static>>| o.as_ref().map(|o| o.switch_index());
        if ops.iter().all(|(i, o)| *i >= real && sw(o) == sw(&ops[0].1)) {
            break;
        }
        let timer = ops.iter().filter_map(|(_, o)| o.as_ref().and_then(|o| o.poll_timeout())).min();
        let arrival = net.peek().map(|e| e.0 .0);
        match (arrival, timer) {
            (Some(a), t) if t.is_none_or(|t| a <= t) => {
                let Reverse((at, _, to, msg)) = net.pop().unwrap();
                now = at;
                match to {
                    Where::Switch(s, r) => {
                        if s == 0 && dead {
                            continue;
                        }
                        let w = job.workers[r];
                        frame::encapsulate(
                            Endpoint { mac: w.mac, ip: w.ip, port: job.worker_port },
                            Endpoint { mac: job.switch_mac, ip: job.switch_ip, port: job.switch_port },
                            &msg,
                            &mut frame_buf,
                        );
                        out.clear();
                        switches[s].process(&frame_buf, &mut out);
                        let mut keep = out.len();
                        if s == 0 {
                            primary_frames += 1;
                            if kill_after == Some(primary_frames) {
                                dead = true;
                                keep = keep.min(case.kill_keep);
                            }
                        }
                        for f in &out[..keep] {
                            let d = frame::decapsulate(f).expect("UDP out");
                            let dst = job.rank_of(d.dst.ip).expect("to a rank");
                            if rng.gen_bool(case.loss) {
                                continue;
                            }
                            let copies = if rng.gen_bool(case.dup) { 2 } else { 1 };
                            for _ in 0..copies {
                                seq += 1;
                                net.push(Reverse((
                                    now + delay(&mut rng),
                                    seq,
                                    Where::Rank(dst, s),
                                    d.payload.to_vec(),
                                )));
                            }
                        }
                    }
                    Where::Rank(r, s) => {
                        // The transport hands out only what comes from the active switch.
                        if let Some(o) = ops[r].1.as_mut() {
                            if o.switch_index() == s {
                                o.handle_message(now, &msg).unwrap();
                            }
                        }
                    }
                }
            }
            (_, Some(t)) => {
                now = t;
                for (_, o) in ops.iter_mut() {
                    if let Some(o) = o.as_mut() {
                        if o.poll_timeout().is_some_and(|d| d <= now) {
                            o.handle_timeout(now).unwrap();
                        }
                    }
                }
            }
            (_, None) => panic!("nothing in flight and not done"),
        }
    }
    assert!(ops.iter().all(|(i, _)| *i >= real), "the simulation did not end");
    drop(ops);
    drop(pad);
    let ranks = workers
        .iter()
        .zip(data)
        .zip(stats)
        .zip(went_back)
        .map(|(((w, t), s), b)| Outcome { tensors: t, stats: s, active: w.active_switch(), went_back: b })
        .collect();
    Run { ranks, primary_frames, died_early }
}

fn exact_i32(case: &Case, op: usize) -> Vec<i32> {
    let all: Vec<Vec<Tensor>> = (0..case.n).map(|r| tensors(case, r)).collect();
    let len = case.ops[op].1;
    (0..len)
        .map(|i| {
            all.iter().fold(0i32, |a, t| match &t[op] {
                Tensor::I32(v) => a.wrapping_add(v[i]),
                Tensor::F32(_) => unreachable!(),
            })
        })
        .collect()
}

fn check(case: &Case) -> Result<(), TestCaseError> {
    let base = run(case, None);
    let total = base.primary_frames;
    let kill = (case.kill_at <= 1.0).then(|| ((case.kill_at * total as f64) as u64).max(1));
    let got = run(case, kill);
    for (r, (a, b)) in base.ranks.iter().zip(&got.ranks).enumerate() {
        prop_assert!(!b.went_back, "rank {r} went back to a switch it left");
        for (i, (x, y)) in a.tensors.iter().zip(&b.tensors).enumerate() {
            match (x, y) {
                (Tensor::I32(x), Tensor::I32(y)) => {
                    prop_assert_eq!(x, &exact_i32(case, i), "rank {} op {}: the run without failure", r, i);
                    prop_assert_eq!(x, y, "rank {} op {}: i32 after the failover", r, i);
                }
                (Tensor::F32(x), Tensor::F32(y)) => {
                    let (xb, yb): (Vec<u32>, Vec<u32>) =
                        (x.iter().map(|v| v.to_bits()).collect(), y.iter().map(|v| v.to_bits()).collect());
                    prop_assert_eq!(xb, yb, "rank {} op {}: f32 bits after the failover", r, i);
                }
                _ => unreachable!(),
            }
        }
    }
    let active: Vec<usize> = got.ranks.iter().map(|o| o.active).collect();
    prop_assert!(active.iter().all(|a| *a == active[0]), "ranks end on different switches: {:?}", active);
    if got.died_early && active[0] == 1 {
        prop_assert!(got.ranks.iter().any(|o| o.stats.iter().any(|s| !s.failovers.is_empty())), "no failover reported");
    }
    if got.ranks.iter().any(|o| o.stats.iter().any(|s| !s.failovers.is_empty())) {
        FAILED_OVER.fetch_add(1, Ordering::Relaxed);
    }
    Ok(())
}

fn cases() -> impl Strategy<Value = Case> {
    (
        1usize..=32,
        prop_oneof![Just(2u16), Just(4), Just(8)],
        prop_oneof![Just(PayloadSize::B128), Just(PayloadSize::B256)],
        prop::collection::vec((any::<bool>(), 1usize..=700), 1..=3),
        0.0f64..0.1,
        0.0f64..0.1,
        0.0f64..1.2,
        0usize..=32,
        any::<u64>(),
    )
        .prop_map(|(n, slots, payload, ops, loss, dup, kill_at, kill_keep, seed)| Case {
            n,
            slots,
            payload,
            ops,
            loss,
            dup,
            kill_at,
            kill_keep,
            seed,
        })
}

/// Cases run (a fixed seed: the same cases every run).
const CASES: u32 = 256;

#[test]
fn a_killed_primary_gives_the_exact_result_of_the_run_without_failure() {
    let config = Config { cases: CASES, failure_persistence: None, ..Config::default() };
    let mut runner = TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &[19; 32]));
    runner.run(&cases(), |c| check(&c)).unwrap();
    let f = FAILED_OVER.load(Ordering::Relaxed);
    println!("{CASES} cases, {f} with a failover during the operations");
    assert!(f >= CASES / 4, "only {f} of {CASES} cases failed over: the kill points miss the operations");
}
