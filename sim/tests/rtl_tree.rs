//! A two-level aggregation tree through the HDL core (issue 20, docs/switch.md §6): the leaves
//! are the rust-hdl core (and, with Verilator, its generated Verilog), the root the reference
//! switch, the workers the driver's sans-I/O state machine, on the cluster simulator's links
//! with seeded loss on every link. The all-reduce is exact; the leaves' tree counters, read from
//! the cores' counter registers, show partials sent up, resent and the parent's results taken.

use spotagg_driver::engine::Engine;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::JobConfig;
use spotagg_sim::cluster::{tree_allreduce_with, LinkParams, RunResult, Topology, TreeConfig};
use spotagg_sim::rtl::RtlEngine;
use spotagg_spec::reference::RefSwitch;
use std::time::Duration;

/// A tree counter from an engine's metrics (the reference switch's names).
fn tree_counter(e: &dyn Engine, name: &str) -> u64 {
    let full = format!("spotagg_switch_tree_{name}_total");
    e.metrics()
        .iter()
        .find(|f| f.name == full)
        .unwrap_or_else(|| panic!("{} has no {full}", e.name()))
        .samples
        .iter()
        .map(|s| s.1 as u64)
        .sum()
}

/// Runs `fanout` (root first) with the leaves from `leaf`, the root a reference switch, 1 %
/// loss on every link; checks the sums and returns the run and each leaf's tree counters
/// (partials up, resent, parent results, stale).
fn run_tree(
    fanout: &[usize],
    seed: u64,
    leaf: &mut dyn FnMut(&JobConfig) -> Box<dyn Engine>,
) -> (RunResult, Vec<(&'static str, [u64; 4])>) {
    let topo = Topology::tree(fanout);
    let link = LinkParams { gbps: 1.0, latency: Duration::from_micros(2), loss: 0.01 };
    let mut cfg = TreeConfig::new(link, 64 * 40 + 7, seed);
    cfg.payload = PayloadSize::B256;
    cfg.slots = 8;
    let (r, engines) = tree_allreduce_with(&topo, &cfg, &mut |_, job| {
        if job.parent.is_some() {
            leaf(job)
        } else {
            Box::new(RefSwitch::new(job.clone()))
        }
    })
    .expect("the tree all-reduce runs");
    assert_eq!(r.wrong_workers, 0, "{fanout:?}: every worker has the exact sum: {r:?}");
    assert!(r.link_lost > 0 && r.retransmissions > 0, "the loss must have struck: {r:?}");
    let leaves: Vec<_> = engines
        .iter()
        .flatten()
        .filter(|e| matches!(e.name(), "rtl" | "verilator"))
        .map(|e| {
            let names = ["partials_up", "partials_resent", "parent_results", "parent_results_stale"];
            (e.name(), names.map(|n| tree_counter(e.as_ref(), n)))
        })
        .collect();
    assert_eq!(leaves.len(), fanout[0], "every leaf is an HDL engine");
    for (name, t) in &leaves {
        eprintln!(
            "{fanout:?} leaf {name}: partials up {}, resent {}, parent results {}, stale {}",
            t[0], t[1], t[2], t[3]
        );
        // 41 chunks a worker: every round went up at least once and came back down.
        assert!(t[0] >= 41 && t[2] >= 41, "{name}: {t:?}");
        assert!(t[0] + t[1] >= t[2], "{name}: {t:?}");
    }
    assert!(leaves.iter().any(|(_, t)| t[1] > 0), "a lost partial or result made a leaf resend: {leaves:?}");
    eprintln!(
        "{fanout:?}: n {}, {:.0} µs virtual, {} link frames, {} lost, {} retransmissions",
        r.n,
        r.seconds * 1e6,
        r.link_frames,
        r.link_lost,
        r.retransmissions
    );
    (r, leaves)
}

#[test]
fn two_rust_hdl_leaves_under_a_reference_root_are_exact_under_loss() {
    let mut leaf =
        |job: &JobConfig| -> Box<dyn Engine> { Box::new(RtlEngine::for_job(job, 4).expect("core for the leaf")) };
    run_tree(&[2, 4], 11, &mut leaf);
    run_tree(&[3, 3], 12, &mut leaf);
}

#[test]
fn two_verilator_leaves_under_a_reference_root_are_exact_under_loss() {
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
        return;
    }
    let mut leaf = |job: &JobConfig| -> Box<dyn Engine> {
        let core = spotagg_sim::verilator_engine::shared_core(4).unwrap();
        Box::new(spotagg_sim::verilator_engine::verilator_engine(job, core, None).expect("Verilator core for the leaf"))
    };
    run_tree(&[2, 4], 13, &mut leaf);
}
