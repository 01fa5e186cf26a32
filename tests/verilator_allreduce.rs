//! The worker library all-reduces 2^20 f32 elements across 4 workers through the core's generated
//! Verilog in Verilator, and the result must equal, bit for bit, the same all-reduce through the
//! reference switch (same seeded tensors, same fixed-point conversion: the only difference is
//! the engine), and be within the documented fixed-point bound of the exact sum.
//!
//! Without Verilator the test fails with a message, unless `SPOTAGG_SKIP_VERILATOR=1` says that
//! skipping it is intended.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::fixedpoint::{error_bound, exponent};
use spotagg_driver::transport::{allreduce_f32, InProcessSwitch};
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::{Engine, JobConfig};
use spotagg_sim::verilator_engine::verilator_engine_for_job;
use spotagg_spec::reference::RefSwitch;
use std::time::{Duration, Instant};

const N: usize = 4;
const ELEMENTS: usize = 1 << 20;

fn tensors() -> Vec<Vec<f32>> {
    (0..N)
        .map(|r| {
            let mut rng = ChaCha8Rng::seed_from_u64(1000 + r as u64);
            (0..ELEMENTS).map(|_| rng.gen_range(-1.0f32..1.0) * 2f32.powi(rng.gen_range(-8..8))).collect()
        })
        .collect()
}

fn allreduce(engine: Box<dyn Engine>, job: &JobConfig, inputs: &[Vec<f32>]) -> (Vec<Vec<f32>>, u64, f64) {
    let hub = InProcessSwitch::new(engine, job.clone());
    let start = Instant::now();
    let results: Vec<(Vec<f32>, u64)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..N)
            .map(|r| {
                let mut t = hub.endpoint(r);
                let mut data = inputs[r].clone();
                s.spawn(move || {
                    let stats = allreduce_f32(&mut t, job, r, &mut data).expect("all-reduce");
                    (data, stats.retransmissions)
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let secs = start.elapsed().as_secs_f64();
    let c = hub.counters();
    assert!(c.is_consistent(), "{c:?}");
    (results.iter().map(|r| r.0.clone()).collect(), results.iter().map(|r| r.1).sum(), secs)
}

#[test]
fn million_elements_four_workers_through_verilator() {
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
        return;
    }
    let mut job = JobConfig::example(N, PayloadSize::B1024, 8);
    // Every worker's frames queue for one simulator: allow for it before retransmitting.
    job.timeout = Duration::from_millis(500);
    job.max_retries = 20;
    // Sessions on (the default): every worker opens one on the core first (docs/switch.md §2.1).
    assert!(job.sessions);
    let inputs = tensors();
    let vl = verilator_engine_for_job(&job, 4, None).expect("Verilator core");
    let (got, retx, secs) = allreduce(Box::new(vl), &job, &inputs);
    let (want, _, _) = allreduce(Box::new(RefSwitch::new(job.clone())), &job, &inputs);
    for r in 0..N {
        assert_eq!(got[r].len(), ELEMENTS);
        let diff = got[r].iter().zip(&want[r]).position(|(a, b)| a.to_bits() != b.to_bits());
        assert_eq!(diff, None, "rank {r}: element {diff:?} differs between Verilator and the reference switch");
        assert_eq!(
            got[r].iter().map(|x| x.to_bits()).collect::<Vec<_>>(),
            got[0].iter().map(|x| x.to_bits()).collect::<Vec<_>>()
        );
    }
    // Within the documented bound of the exact sum, chunk by chunk (k = 256).
    let k = job.payload.elements();
    let mut worst = 0f64;
    for c in 0..ELEMENTS / k {
        let e_max = (0..N).map(|r| exponent(&inputs[r][c * k..(c + 1) * k]).unwrap()).max().unwrap();
        for i in c * k..(c + 1) * k {
            let exact: f64 = inputs.iter().map(|t| f64::from(t[i])).sum();
            let err = (f64::from(got[0][i]) - exact).abs();
            assert!(err <= error_bound(N, e_max, got[0][i]), "element {i}: {} vs exact {exact}", got[0][i]);
            worst = worst.max(err);
        }
    }
    eprintln!(
        "verilator all-reduce: {N} workers x {ELEMENTS} f32 in {secs:.1} s ({:.3} Gb/s of payload per worker), {retx} retransmissions, max error {worst:.2e}",
        ELEMENTS as f64 * 32.0 / secs / 1e9
    );
}
