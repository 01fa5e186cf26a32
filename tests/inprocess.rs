//! The worker library through the reference switch, in process: N worker threads over
//! [`InProcessSwitch`] transports, each wrapped in a seeded [`FaultInjector`] (loss,
//! duplication, reordering), f32 and i32, n = 1 and 4. i32 sums must be exact (wrap-around),
//! f32 sums within the documented bound.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::fixedpoint;
use spotagg_driver::transport::{FaultInjector, Faults, InProcessSwitch};
use spotagg_driver::wire::{Lanes, PayloadSize};
use spotagg_driver::{Error, JobConfig, Worker};
use spotagg_spec::reference::RefSwitch;
use std::time::Duration;

fn job(n: usize, payload: PayloadSize, slots: u16) -> JobConfig {
    let mut j = JobConfig::example(n, payload, slots);
    j.timeout = Duration::from_millis(3);
    j.max_retries = 30;
    j
}

const FAULTS: Faults = Faults { loss: 0.03, duplicate: 0.03, reorder: 0.05 };

/// Runs `f(rank, worker, transport)` on n threads through one reference switch.
fn run<R: Send + 'static>(
    job: &JobConfig,
    faults: Faults,
    seed: u64,
    f: impl Fn(usize, &mut Worker, &mut dyn spotagg_driver::Transport) -> R + Send + Sync + Copy + 'static,
) -> (Vec<R>, spotagg_driver::Counters) {
    let hub = InProcessSwitch::new(Box::new(RefSwitch::new(job.clone())), job.clone());
    let handles: Vec<_> = (0..job.n())
        .map(|r| {
            let mut t = FaultInjector::new(hub.endpoint(r), faults, seed * 100 + r as u64);
            let mut w = Worker::new(job.clone(), r).unwrap();
            std::thread::spawn(move || f(r, &mut w, &mut t))
        })
        .collect();
    let out = handles.into_iter().map(|h| h.join().unwrap()).collect();
    let c = hub.counters();
    assert!(c.is_consistent(), "{c:?}");
    assert_eq!(hub.unrouted(), 0);
    (out, c)
}

fn i32_tensor(seed: u64, rank: usize, len: usize) -> Vec<i32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed * 31 + rank as u64);
    (0..len).map(|_| rng.gen()).collect()
}

fn f32_tensor(seed: u64, rank: usize, len: usize) -> Vec<f32> {
    let mut rng = ChaCha8Rng::seed_from_u64(seed * 37 + rank as u64);
    (0..len).map(|i| (rng.gen::<f32>() * 2.0 - 1.0) * 2f32.powi((i / 700) as i32 % 20 - 10)).collect()
}

fn check_i32(n: usize, payload: PayloadSize, slots: u16, len: usize, seed: u64) {
    let j = job(n, payload, slots);
    let inputs: Vec<Vec<i32>> = (0..n).map(|r| i32_tensor(seed, r, len)).collect();
    let want: Vec<i32> = (0..len).map(|i| inputs.iter().fold(0i32, |a, x| a.wrapping_add(x[i]))).collect();
    let (res, c) = run(&j, FAULTS, seed, move |r, w, t| {
        let mut d = i32_tensor(seed, r, len);
        let s = w.allreduce_i32(t, &mut d).unwrap();
        (d, s)
    });
    for (r, (d, s)) in res.iter().enumerate() {
        assert!(d == &want, "rank {r}: wrong i32 sum (n {n})");
        assert_eq!(s.chunks, len.div_ceil(payload.elements()));
    }
    assert!(c.duplicates > 0, "the faults must have caused retransmissions: {c:?}");
}

fn check_f32(n: usize, payload: PayloadSize, slots: u16, len: usize, seed: u64) {
    check_f32_lanes(n, payload, slots, len, seed, Lanes::I32);
}

/// f32 in 16-bit lanes (docs/switch.md §9): 2k elements a packet, within the 16-bit bound.
fn check_f16(n: usize, payload: PayloadSize, slots: u16, len: usize, seed: u64) {
    check_f32_lanes(n, payload, slots, len, seed, Lanes::I16);
}

fn check_f32_lanes(n: usize, payload: PayloadSize, slots: u16, len: usize, seed: u64, lanes: Lanes) {
    let j = JobConfig { lanes16: lanes == Lanes::I16, ..job(n, payload, slots) };
    let k = lanes.coordinates(payload);
    let inputs: Vec<Vec<f32>> = (0..n).map(|r| f32_tensor(seed, r, len)).collect();
    let (res, c) = run(&j, FAULTS, seed, move |r, w, t| {
        let mut d = f32_tensor(seed, r, len);
        let s = w.allreduce_f32_lanes(t, &mut d, lanes).unwrap();
        assert_eq!(s.chunks, len.div_ceil(k));
        d
    });
    assert_eq!(c.dropped_total(), 0, "no frame of the job is dropped: {c:?}");
    for (r, d) in res.iter().enumerate() {
        assert_eq!(d, &res[0], "rank {r} differs from rank 0");
        for (c, out) in d.chunks(k).enumerate() {
            let e_max =
                inputs.iter().map(|x| fixedpoint::exponent(&x[c * k..c * k + out.len()]).unwrap()).max().unwrap();
            for (i, &y) in out.iter().enumerate() {
                let exact: f64 = inputs.iter().map(|x| f64::from(x[c * k + i])).sum();
                let b = match lanes {
                    Lanes::I32 => fixedpoint::error_bound(n, e_max, y),
                    Lanes::I16 => fixedpoint::Scale::new16(n, e_max).bound(y),
                };
                assert!((f64::from(y) - exact).abs() <= b, "element {}: {y} vs {exact} (bound {b})", c * k + i);
            }
        }
    }
}

/// Each case: the check (i32: exact wrap-around sums, f32: within the error bound), n, payload,
/// slots, elements, seed.
type SumCase = (fn(usize, PayloadSize, u16, usize, u64), usize, PayloadSize, u16, usize, u64);

#[test]
fn sums_with_one_and_four_workers() {
    let cases: [SumCase; 8] = [
        (check_i32, 1, PayloadSize::B256, 8, 10_000, 1),
        (check_i32, 4, PayloadSize::B256, 16, 20_000, 2),
        (check_i32, 4, PayloadSize::B1024, 4, 20_003, 3),
        (check_f32, 1, PayloadSize::B1024, 8, 10_000, 4),
        (check_f32, 4, PayloadSize::B256, 16, 20_000, 5),
        (check_f32, 4, PayloadSize::B1024, 32, 30_001, 6),
        (check_f16, 1, PayloadSize::B256, 8, 10_000, 7),
        (check_f16, 4, PayloadSize::B1024, 16, 30_001, 8),
    ];
    for (check, n, payload, slots, len, seed) in cases {
        check(n, payload, slots, len, seed);
    }
}

#[test]
fn many_operations_on_one_job() {
    // 16-bit and 32-bit operations in turn on the same slots: each round takes the width of its
    // first contribution (docs/switch.md §9).
    let j = JobConfig { lanes16: true, ..job(4, PayloadSize::B256, 8) };
    let (res, _) = run(&j, FAULTS, 7, |r, w, t| {
        let mut out = Vec::new();
        for (op, len) in [100usize, 64 * 8, 3, 5000].into_iter().enumerate() {
            let mut d: Vec<i32> = (0..len).map(|i| (i * (r + 1) + op) as i32).collect();
            w.allreduce_i32(t, &mut d).unwrap();
            out.push(d);
            let mut f = vec![0.5f32 * (r as f32 + 1.0); len];
            w.allreduce_f32(t, &mut f).unwrap();
            assert!(f.iter().all(|x| (x - 5.0).abs() < 1e-5), "op {op}");
            let mut h = vec![0.5f32 * (r as f32 + 1.0); len];
            w.allreduce_f32_lanes(t, &mut h, Lanes::I16).unwrap();
            assert!(h.iter().all(|x| (x - 5.0).abs() < 1e-3), "op {op}, 16-bit: {:?}", &h[..3.min(len)]);
        }
        out
    });
    for d in res {
        for (op, v) in d.iter().enumerate() {
            assert!(v.iter().enumerate().all(|(i, &x)| x == (i * 10 + 4 * op) as i32), "op {op}");
        }
    }
}

#[test]
fn a_switch_that_drops_everything_is_an_error() {
    let mut j = job(2, PayloadSize::B256, 4);
    j.max_retries = 3;
    // Rank 1 never runs: rank 0's packets stay unanswered.
    let hub = InProcessSwitch::new(Box::new(RefSwitch::new(j.clone())), j.clone());
    let mut t = hub.endpoint(0);
    let mut d = vec![1.0f32; 1000];
    let e = spotagg_driver::allreduce_f32(&mut t, &j, 0, &mut d).unwrap_err();
    assert!(matches!(e, Error::Timeout { attempts: 4, chunk: None, .. }), "{e}");
    assert!(e.to_string().contains("priming packet"), "{e}");
}
