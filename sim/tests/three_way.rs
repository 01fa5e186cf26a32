//! Three-way differential tests: the reference switch, the rust-hdl core in simulation and the
//! core's generated Verilog in Verilator get the same seeded traces and must send the same
//! frames, frame for frame, and count the same.
//!
//! Without Verilator these tests print `NOT RUN` and fail unless `SPOTAGG_SKIP_VERILATOR=1` says
//! that skipping is intended: a machine without Verilator never passes them silently.

use spotagg_driver::engine::Engine;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::{JobConfig, JobVlan};
use spotagg_hdl::CoreConfig;
use spotagg_sim::rtl::RtlEngine;
use spotagg_sim::trace::{self, Reorder, TraceSpec};
use spotagg_sim::verilator_engine::verilator_engine;
use spotagg_spec::reference::RefSwitch;

#[path = "common/tree_trace.rs"]
mod tree_trace;

/// One core build per width serves every job (the commands' Verilator engine uses the same), so
/// that the suite verilates two designs, not one per job.
fn core(width: usize) -> CoreConfig {
    spotagg_sim::verilator_engine::shared_core(width).unwrap()
}

fn verilator_or_skip() -> bool {
    spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator)
}

fn hex(f: &[u8]) -> String {
    f.iter().map(|b| format!("{b:02x}")).collect()
}

fn compare(job: &JobConfig, frames: &[Vec<u8>], width: usize, what: &str) {
    let mut model = RefSwitch::new(job.clone());
    let mut rtl = RtlEngine::new(job, core(width)).expect("rust-hdl core for the job");
    let mut vl = verilator_engine(job, core(width), None).expect("Verilator core for the job");
    for (i, f) in frames.iter().enumerate() {
        let (mut want, mut a, mut b) = (vec![], vec![], vec![]);
        rtl.process(f, &mut a);
        vl.process(f, &mut b);
        // The reference's straggler clock: the core's cycle at the frame's last beat.
        model.set_clock(rtl.rx_end_cycle());
        model.process(f, &mut want);
        for (name, got) in [("rtl", &a), ("verilator", &b)] {
            if &want != got {
                panic!(
                    "{what}, width {width}: frame {i} in = {}\nmodel sent {} frames, {name} sent {}\nmodel: {:?}\n{name}: {:?}",
                    hex(f),
                    want.len(),
                    got.len(),
                    want.iter().map(|x| hex(x)).collect::<Vec<_>>(),
                    got.iter().map(|x| hex(x)).collect::<Vec<_>>()
                );
            }
        }
    }
    let c = model.counters();
    assert_eq!(c, rtl.counters(), "{what}, width {width}: rtl counters");
    assert_eq!(c, vl.counters(), "{what}, width {width}: verilator counters");
    let t = Some(model.tree_counters());
    assert_eq!(t, rtl.tree_counters(), "{what}, width {width}: rtl tree counters");
    assert_eq!(t, vl.tree_counters(), "{what}, width {width}: verilator tree counters");
    assert_eq!(rtl.cycles(), vl.cycles(), "{what}, width {width}: rust-hdl and Verilator took different cycle counts");
    let n = job.n();
    let (s_rtl, s_vl) =
        (rtl.stragglers(n).expect("rust-hdl stragglers"), vl.stragglers(n).expect("Verilator stragglers"));
    assert_eq!(model.stragglers(), &s_rtl[..], "{what}, width {width}: rtl straggler counters (cycles)");
    assert_eq!(model.stragglers(), &s_vl[..], "{what}, width {width}: verilator straggler counters (cycles)");
}

fn run(spec: &TraceSpec, width: usize, what: &str) {
    let t = trace::generate(spec);
    compare(&t.job, &t.frames, width, what);
}

#[test]
fn malformed_arp_ping_every_reason_widths_1_and_4() {
    if !verilator_or_skip() {
        return;
    }
    for width in [1, 4] {
        for payload in [PayloadSize::B256, PayloadSize::B1024] {
            let job = JobConfig::example(3, payload, 4);
            let frames: Vec<Vec<u8>> = trace::malformed_frames(&job, 11).into_iter().map(|(_, f)| f).collect();
            compare(&job, &frames, width, &format!("malformed {payload:?}"));
        }
    }
}

#[test]
fn loss_duplication_reordering_n_1_to_32() {
    if !verilator_or_skip() {
        return;
    }
    for (n, payload, slots, width, seed) in [
        (1, PayloadSize::B256, 2, 4, 1u64),
        (2, PayloadSize::B1024, 3, 4, 2),
        (3, PayloadSize::B256, 8, 1, 3),
        (5, PayloadSize::B1024, 4, 1, 4),
        (32, PayloadSize::B256, 2, 4, 5),
    ] {
        // (Two rounds at n = 32, four until 2026-12-05: every rank's bit and the 32-frame
        // multicast are in the first; it was a third of the test's time.)
        let rounds = if n == 32 { 2 } else { 4 };
        let spec = TraceSpec::new(n, payload, slots, rounds, seed).troubled(0.15);
        run(&spec, width, &format!("troubled n={n} {payload:?} S={slots}"));
    }
    let mut spec = TraceSpec::new(3, PayloadSize::B256, 2, 4, 6).troubled(0.2);
    spec.reorder = Reorder::Any;
    run(&spec, 4, "reorder any");
    let vlan = JobVlan { id: 100, priority: 3 };
    for width in [1, 4] {
        run(&TraceSpec::new(4, PayloadSize::B256, 3, 4, 7).troubled(0.2).tagged(vlan), width, "tagged job");
    }
    let job = TraceSpec::new(3, PayloadSize::B1024, 4, 1, 8).tagged(vlan).job();
    let frames: Vec<Vec<u8>> = trace::malformed_frames(&job, 13).into_iter().map(|(_, f)| f).collect();
    compare(&job, &frames, 4, "malformed, tagged job");
}

/// Sessions (docs/switch.md §2.1) back to back on one running core, widths 1 and 4: the
/// handshakes (probes, repeated joins, joins of other epochs, of the wrong size or slot), late
/// frames of earlier sessions (stale once the next one opens) and rounds with trouble.
#[test]
fn sessions_back_to_back_widths_1_and_4() {
    if !verilator_or_skip() {
        return;
    }
    for (width, n, payload, slots, sessions, seed) in [
        (1, 2, PayloadSize::B256, 2, 2, 71u64),
        (4, 3, PayloadSize::B1024, 3, 3, 72),
        (4, 1, PayloadSize::B256, 2, 2, 73),
    ] {
        let spec = TraceSpec::new(n, payload, slots, 4, seed).troubled(0.15);
        let (job, frames) = trace::session_trace(&spec, sessions);
        compare(&job, &frames, width, &format!("{sessions} sessions n={n} {payload:?}"));
    }
}

/// A leaf of a parent switch (docs/switch.md §6): seeded tree traces (partials up and resent,
/// parent results fresh, late, duplicated, stale and malformed, the workers' trouble) at widths
/// 1 and 4: the same frames, counters and tree counters in all three engines.
#[test]
fn tree_leaf_widths_1_and_4() {
    if !verilator_or_skip() {
        return;
    }
    for (width, n, payload, seed) in [(4, 3, PayloadSize::B256, 81u64), (1, 2, PayloadSize::B1024, 82)] {
        let (job, frames, mix) = tree_trace::tree_trace(n, payload, 3, 5, seed, 0.15);
        compare(&job, &frames, width, &format!("tree n={n} {payload:?} ({mix:?})"));
    }
}
