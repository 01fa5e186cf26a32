//! Differential tests: the rust-hdl core (stepped in simulation) against the reference switch.
//! The same seeded traces through both must give the same frames, frame for frame, and the
//! same counters.

use spotagg_driver::engine::Engine;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::{DropReason, JobConfig, JobVlan};
use spotagg_sim::rtl::RtlEngine;
use spotagg_sim::trace::{self, Reorder, TraceSpec};
use spotagg_spec::reference::RefSwitch;

#[path = "common/tree_trace.rs"]
mod tree_trace;

fn hex(f: &[u8]) -> String {
    f.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join("")
}

/// Feeds `frames` through both engines and compares each step's output and the counters;
/// returns the counters.
fn compare(job: &JobConfig, frames: &[Vec<u8>], width: usize, what: &str) -> spotagg_driver::Counters {
    compare_with(job, frames, width, None, what)
}

fn compare_with(
    job: &JobConfig,
    frames: &[Vec<u8>],
    width: usize,
    tx_stalls: Option<u64>,
    what: &str,
) -> spotagg_driver::Counters {
    let mut model = RefSwitch::new(job.clone());
    let mut rtl = RtlEngine::for_job(job, width).expect("core for the job");
    if let Some(seed) = tx_stalls {
        rtl.stall_tx_randomly(seed);
    }
    for (i, f) in frames.iter().enumerate() {
        let mut want = vec![];
        let mut got = vec![];
        rtl.process(f, &mut got);
        // The reference's clock is the core's cycle count at the frame's last beat, so that
        // its straggler lags (docs/switch.md §7) are the core's, in cycles.
        model.set_clock(rtl.rx_end_cycle());
        model.process(f, &mut want);
        if want != got {
            panic!(
                "{what}, width {width}: frame {i} ({} bytes) in = {}\nmodel sent {} frames, rtl sent {}\nmodel: {:?}\nrtl:   {:?}\ncounters model {:?}\ncounters rtl {:?}",
                f.len(),
                hex(f),
                want.len(),
                got.len(),
                want.iter().map(|x| hex(x)).collect::<Vec<_>>(),
                got.iter().map(|x| hex(x)).collect::<Vec<_>>(),
                model.counters(),
                rtl.counters()
            );
        }
    }
    assert_eq!(model.counters(), rtl.counters(), "{what}, width {width}: counters");
    assert_eq!(
        Some(model.tree_counters()),
        rtl.tree_counters(),
        "{what}, width {width}: tree counters (docs/switch.md §6)"
    );
    assert!(rtl.counters().is_consistent());
    let stragglers = rtl.stragglers(job.n()).expect("the core is built with straggler counters");
    assert_eq!(model.stragglers(), &stragglers[..], "{what}, width {width}: straggler counters (lags in cycles)");
    rtl.counters()
}

fn run(spec: &TraceSpec, width: usize, what: &str) -> spotagg_driver::Counters {
    let t = trace::generate(spec);
    compare(&t.job, &t.frames, width, what)
}

#[test]
fn clean_rounds_n1_n2_n3() {
    for (n, payload) in [(1, PayloadSize::B256), (2, PayloadSize::B256), (3, PayloadSize::B1024)] {
        run(&TraceSpec::new(n, payload, 2, 4, 7), 4, &format!("clean n={n}"));
    }
}

#[test]
fn malformed_frames_every_reason() {
    for width in [1, 4] {
        let job = JobConfig::example(3, PayloadSize::B256, 4);
        let frames: Vec<Vec<u8>> = trace::malformed_frames(&job, 11).into_iter().map(|(_, f)| f).collect();
        compare(&job, &frames, width, "malformed");
    }
}

#[test]
fn troubled_traces_width4() {
    let mut total = spotagg_driver::Counters::default();
    for (n, payload, slots, seed) in
        [(2, PayloadSize::B256, 3, 1u64), (3, PayloadSize::B1024, 2, 2), (4, PayloadSize::B256, 5, 3)]
    {
        let spec = TraceSpec::new(n, payload, slots, 6, seed).troubled(0.15);
        let c = run(&spec, 4, &format!("troubled n={n} S={slots}"));
        total.duplicates += c.duplicates;
        total.results_retransmitted += c.results_retransmitted;
        total.arp_replies += c.arp_replies;
        total.icmp_replies += c.icmp_replies;
        total.frames_in += c.dropped_total();
    }
    // The traces exercised what they are meant to.
    assert!(total.duplicates > 0 && total.results_retransmitted > 0, "{total:?}");
    assert!(total.arp_replies > 0 && total.icmp_replies > 0, "{total:?}");
    assert!(total.frames_in > 0, "no malformed frame: {total:?}");
}

#[test]
fn downstream_back_pressure() {
    let spec = TraceSpec::new(3, PayloadSize::B256, 2, 4, 77).troubled(0.15);
    let t = trace::generate(&spec);
    for width in [1, 4, 8] {
        compare_with(&t.job, &t.frames, width, Some(5), "tx stalls");
    }
}

#[test]
fn troubled_width1_any_reordering_and_thirty_two_workers() {
    let reordered = TraceSpec { reorder: Reorder::Any, ..TraceSpec::new(3, PayloadSize::B256, 2, 5, 5).troubled(0.2) };
    for (spec, width, what) in [
        (TraceSpec::new(3, PayloadSize::B256, 2, 3, 21).troubled(0.2), 1, "troubled width 1"),
        (reordered, 4, "reorder any"),
        (TraceSpec::new(32, PayloadSize::B256, 2, 2, 9).troubled(0.05), 4, "n=32"),
    ] {
        run(&spec, width, what);
    }
}

/// A tagged job (docs/switch.md §1 step 3, §3): tagged traces with trouble, and every drop
/// reason including wrong_vlan, at widths 1, 4 and 8.
#[test]
fn tagged_job_matches_the_reference() {
    let vlan = JobVlan { id: 0xb5a, priority: 5 };
    for (width, seed) in [(1, 41u64), (4, 42), (8, 43)] {
        let spec = TraceSpec::new(3, PayloadSize::B256, 3, 4, seed).troubled(0.2).tagged(vlan);
        let c = run(&spec, width, &format!("tagged width {width}"));
        assert!(c.contributions > 0 && c.results_multicast > 0, "{c:?}");
        let job = spec.job();
        let frames: Vec<Vec<u8>> = trace::malformed_frames(&job, seed).into_iter().map(|(_, f)| f).collect();
        let c = compare(&job, &frames, width, &format!("tagged malformed width {width}"));
        let reasons = DropReason::CORE.into_iter().filter(|&r| r != DropReason::StaleSession);
        assert!(
            reasons.clone().all(|r| c.dropped(r) > 0),
            "every reason but stale_session (session state), wrong_vlan included: {c:?}"
        );
    }
}

#[test]
fn every_reason_is_counted() {
    let job = JobConfig { vlan: Some(JobVlan { id: 7, priority: 0 }), ..JobConfig::example(2, PayloadSize::B256, 2) };
    let frames: Vec<Vec<u8>> = trace::malformed_frames(&job, 3).into_iter().map(|(_, f)| f).collect();
    let mut rtl = RtlEngine::for_job(&job, 4).unwrap();
    let mut out = vec![];
    for f in &frames {
        rtl.process(f, &mut out);
    }
    let c = rtl.counters();
    // `stale_session` needs an open session (`sessions_back_to_back_match_the_reference`).
    for r in DropReason::CORE.into_iter().filter(|r| *r != DropReason::StaleSession) {
        assert!(c.dropped(r) > 0, "no frame dropped as {}", r.name());
    }
}

/// Sessions (docs/switch.md §2.1) on one running core, at widths 1, 4 and 8: a run without
/// sessions cut short, then several sessions back to back, each opened by a handshake with
/// probes, repeated joins, joins of other epochs and of the wrong size or slot, late frames of
/// the earlier session (stale once the next one is open), and its own rounds with loss,
/// duplication and malformed frames. Frame for frame and counter for counter the reference's;
/// the traces reach every branch (checked on the reference's counters and epoch).
#[test]
fn sessions_back_to_back_match_the_reference() {
    for (width, n, payload, slots, sessions, seed) in [
        (4, 3, PayloadSize::B256, 3, 3, 61u64),
        (1, 2, PayloadSize::B256, 2, 2, 62),
        (8, 4, PayloadSize::B1024, 2, 2, 63),
        (4, 1, PayloadSize::B256, 2, 3, 64),
    ] {
        let spec = TraceSpec::new(n, payload, slots, 4, seed).troubled(0.15);
        let (job, frames) = trace::session_trace(&spec, sessions);
        let mut model = RefSwitch::new(job.clone());
        let mut out = vec![];
        let mut opened = 0;
        for f in &frames {
            let before = model.session();
            model.process(f, &mut out);
            opened += usize::from(model.session().epoch != before.epoch);
        }
        let what = format!("{sessions} sessions, n={n}, width {width}");
        assert_eq!(opened, sessions, "{what}: every session opened in the reference");
        let m = model.counters();
        assert!(m.dropped(DropReason::StaleSession) > 0, "{what}: no stale frame: {m:?}");
        assert!(m.results_retransmitted > 0 && m.dropped(DropReason::BadSize) + m.dropped(DropReason::BadSlot) > 0);
        let c = compare(&job, &frames, width, &what);
        assert_eq!(c, m);
    }
}

/// The core's cycles per element and per contribution, for docs/performance.md (a figure, not a
/// check: run it by name).
#[test]
#[ignore = "manual: prints the core's cycle figures (docs/performance.md)"]
fn bench_report_prints() {
    let r = spotagg_sim::rtl::bench_report();
    println!("{r}");
    assert!(r.contains("elements/cyc"));
}

#[test]
fn width8_troubled() {
    let spec = TraceSpec::new(3, PayloadSize::B256, 3, 3, 31).troubled(0.2);
    run(&spec, 8, "troubled width 8");
    let job = JobConfig::example(2, PayloadSize::B1024, 2);
    let frames: Vec<Vec<u8>> = trace::malformed_frames(&job, 12).into_iter().map(|(_, f)| f).collect();
    compare(&job, &frames, 8, "malformed width 8");
}

#[test]
fn slot_counts_and_payloads() {
    for (n, payload, slots, seed) in
        [(1, PayloadSize::B1024, 1, 40u64), (2, PayloadSize::B1024, 7, 41), (5, PayloadSize::B256, 16, 42)]
    {
        let spec = TraceSpec::new(n, payload, slots, 4, seed).troubled(0.1);
        run(&spec, 4, &format!("n={n} S={slots} P={}", payload.bytes()));
    }
}

/// Many small seeded traces, every parameter drawn from the seed. 8 seeds (24 until 2026-12-05):
/// they draw n 1-5, both payloads, slots 1-6, any reordering and width 1, and the planted faults
/// of tests/faults/ that this test catches fail by the third seed (docs/performance.md, "Test
/// suite").
#[test]
fn seed_sweep() {
    for seed in 100..108u64 {
        let n = 1 + (seed % 5) as usize;
        let payload = if seed % 3 == 0 { PayloadSize::B1024 } else { PayloadSize::B256 };
        let slots = 1 + (seed % 6) as u16;
        let mut spec = TraceSpec::new(n, payload, slots, 3, seed).troubled(0.05 + (seed % 4) as f64 * 0.05);
        if seed % 4 == 1 {
            spec.reorder = Reorder::Any;
        }
        let width = if seed % 7 == 0 { 1 } else { 4 };
        run(&spec, width, &format!("seed {seed}: n={n} S={slots} P={}", payload.bytes()));
    }
}

#[test]
fn jobs_beyond_the_build_are_refused_by_name() {
    let job = JobConfig::example(2, PayloadSize::B256, 65);
    let e = RtlEngine::for_job(&job, 4).unwrap_err();
    assert!(e.0.contains("slots = 65"), "{e}");
    let job = JobConfig::example(2, PayloadSize::B1024, 4);
    let core = spotagg_hdl::CoreConfig::new(4, 4, 256, 32).unwrap();
    let e = RtlEngine::new(&job, core).unwrap_err();
    assert!(e.0.contains("payload = 1024"), "{e}");
    let e = RtlEngine::for_job(&JobConfig::example(2, PayloadSize::B256, 4), 3).unwrap_err();
    assert!(e.0.contains("width_bytes = 3"), "{e}");
}

/// The straggler counters (docs/switch.md §7) with one worker slowed on purpose: in every round
/// rank 2 of 4 sends its contribution `delay` cycles after the others (the link idle meanwhile),
/// over seeded payloads and slots. The core's counters equal the reference's given the same
/// clock (cycles): rank 2 is last in every round with a lag of at least `delay`, the others
/// never; then a faster round order (rank 0 last, no delay) moves the counts.
#[test]
fn a_slowed_worker_shows_in_the_straggler_counters() {
    use spotagg_driver::wire::PoolIndex;
    use spotagg_sim::trace::{contribution_frame, Contribution};
    let job = JobConfig::example(4, PayloadSize::B256, 3);
    let mut model = RefSwitch::new(job.clone());
    let mut rtl = RtlEngine::for_job(&job, 4).unwrap();
    let (rounds, delay) = (9usize, 500u64);
    let mut x = 0x5eed_u64;
    let mut out = vec![];
    for round in 0..rounds + 3 {
        let slot = (round % 3) as u16;
        let set = ((round / 3) % 2) as u8;
        let order: Vec<usize> = if round < rounds { vec![0, 1, 3, 2] } else { vec![1, 2, 3, 0] };
        for rank in order {
            let values: Vec<i32> = (0..job.payload.elements())
                .map(|_| {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x as i32
                })
                .collect();
            let c = Contribution {
                rank,
                tsi: round as u32,
                pool: PoolIndex { slot, set },
                e0: 0,
                e1: 0,
                src_port: 0xBEE0,
                dst_port: 0xBEE0,
                values: &values,
            };
            let f = contribution_frame(&job, &c);
            if rank == 2 && round < rounds {
                rtl.idle_for(delay, &mut out);
            }
            let (mut want, mut got) = (vec![], vec![]);
            rtl.process(&f, &mut got);
            model.set_clock(rtl.rx_end_cycle());
            model.process(&f, &mut want);
            assert_eq!(want, got, "round {round} rank {rank}");
        }
    }
    let hw = rtl.stragglers(job.n()).unwrap();
    assert_eq!(model.stragglers(), &hw[..]);
    println!("straggler counters (cycles): {hw:?}");
    assert_eq!(hw[2].rounds_last, rounds as u64);
    assert!(hw[2].behind_us_max >= delay && hw[2].behind_us_total >= rounds as u64 * delay, "{hw:?}");
    assert_eq!(hw[0].rounds_last, 3);
    assert_eq!(hw[1].rounds_last + hw[3].rounds_last, 0);
    // The same figures in the metrics, under the software switch's names, lags in µs at the
    // board's 100 MHz core clock.
    let text = spotagg_driver::metrics::render(&rtl.metrics());
    let max_us = hw[2].behind_us_max as f64 / spotagg_sim::rtl::CORE_CLOCK_MHZ;
    for line in [
        "spotagg_switch_straggler_rounds_last_total{rank=\"2\"} 9".to_string(),
        "spotagg_switch_straggler_rounds_last_total{rank=\"0\"} 3".to_string(),
        format!("spotagg_switch_straggler_behind_microseconds_max{{rank=\"2\"}} {max_us}"),
    ] {
        assert!(text.lines().any(|l| l == line), "{line:?} not in\n{text}");
    }
    // Clearing the counters zeroes the straggler counters too.
    rtl.clear_counters();
    let mut sink = vec![];
    rtl.idle_for(200, &mut sink);
    assert!(rtl.stragglers(job.n()).unwrap().iter().all(|s| *s == Default::default()));
}

/// A leaf of a parent switch (docs/switch.md §6): seeded tree traces (partials up, parent
/// results fresh, late, duplicated and from another port, rank-0 and other ranks'
/// retransmissions to waiting rounds, stale and malformed frames from the parent, the workers'
/// own trouble) through the core and the reference at widths 1, 4 and 8: the same frames, the
/// same counters, the same tree counters, and every tree path taken.
#[test]
fn tree_leaf_matches_the_reference() {
    let mut total = spotagg_spec::reference::TreeCounters::default();
    for (n, payload, slots, seed, width) in [
        (3, PayloadSize::B256, 2, 61u64, 4),
        (4, PayloadSize::B256, 3, 62, 1),
        (2, PayloadSize::B1024, 2, 63, 8),
        (1, PayloadSize::B256, 2, 64, 4),
    ] {
        let (job, frames, mix) = tree_trace::tree_trace(n, payload, slots, 6, seed, 0.15);
        let mut model = RefSwitch::new(job.clone());
        let mut sink = vec![];
        for f in &frames {
            model.process(f, &mut sink);
        }
        let what = format!("tree n={n} {payload:?} seed {seed} ({mix:?}, {} frames)", frames.len());
        compare(&job, &frames, width, &what);
        let t = model.tree_counters();
        eprintln!("{what}: {t:?}");
        total.partials_up += t.partials_up;
        total.partials_resent += t.partials_resent;
        total.parent_results += t.parent_results;
        total.parent_results_stale += t.parent_results_stale;
    }
    assert!(
        total.partials_up > 0
            && total.partials_resent > 0
            && total.parent_results > 0
            && total.parent_results_stale > 0,
        "every tree path taken: {total:?}"
    );
}

/// A core built without the tree leaf (`CoreConfig::tree` false) is the switch of §1–§5: the
/// same frames as the reference on a troubled trace (frames from the would-be parent's address
/// are unknown sources), no tree counters, and a job with a parent refused by name.
#[test]
fn a_core_without_the_tree_leaf() {
    let (tree_job, tree_frames, _) = tree_trace::tree_trace(3, PayloadSize::B256, 2, 4, 65, 0.15);
    let job = JobConfig { parent: None, ..tree_job.clone() };
    let core = RtlEngine::core_for_job(&job, 4).unwrap().with_tree(false);
    let mut rtl = RtlEngine::new(&job, core).unwrap();
    let mut model = RefSwitch::new(job.clone());
    for (i, f) in tree_frames.iter().enumerate() {
        let (mut want, mut got) = (vec![], vec![]);
        rtl.process(f, &mut got);
        model.process(f, &mut want);
        assert_eq!(want, got, "frame {i}");
    }
    assert_eq!(model.counters(), rtl.counters());
    assert!(rtl.counters().dropped(DropReason::UnknownSource) > 0, "the parent's frames are unknown sources");
    assert_eq!(rtl.tree_counters(), None);
    let e = RtlEngine::new(&tree_job, core).unwrap_err();
    assert!(e.0.contains("parent") && e.0.contains("tree"), "{e}");
}
