//! Issue 17 item 7: an all-reduce through the reference switch on a 16-node EAPS ring while a
//! link on the path between the switch and a worker fails and is restored. The result must be
//! exact, nothing may loop; the stall is the extra time over the same run without the failure.

use spotagg_sim::eaps::allreduce::run;
use spotagg_spec::eaps::MS;

#[test]
fn allreduce_survives_a_ring_failure() {
    let workers = [0, 7, 10, 13];
    let elements = 1 << 16;
    let calm = run(16, 4, &workers, elements, None).unwrap();
    // Link 5 joins nodes 5 and 6, on the way from the switch (node 4) to the worker at node 7.
    let broken = run(16, 4, &workers, elements, Some((5, MS, 5 * MS))).unwrap();
    let stall = broken.duration as f64 / 1e6 - calm.duration as f64 / 1e6;
    eprintln!(
        "16 nodes, switch at node 4, workers at {workers:?}, {elements} i32 each: {:.3} ms without failure \
         ({} retransmissions), {:.3} ms with link 5 down from 1 ms to 5 ms ({} retransmissions): stall {stall:.3} ms",
        calm.duration as f64 / 1e6,
        calm.retransmissions,
        broken.duration as f64 / 1e6,
        broken.retransmissions
    );
    assert!(calm.exact && broken.exact, "results not exact");
    assert_eq!((calm.looped, broken.looped), (0, 0));
    assert!(broken.duration > 5 * MS, "the failure fell inside the all-reduce");
    assert!(broken.retransmissions > 0, "the failure lost packets");
}

/// Issue 19 through the ring: two aggregation nodes (primary at node 4, standby at node 12);
/// the primary stops 2 ms into the all-reduce; every worker moves to the standby and the result
/// is exact.
#[test]
fn a_standby_aggregation_node_on_the_ring_takes_over() {
    use spotagg_sim::eaps::allreduce::run_failover;
    let workers = [0, 7, 10, 13];
    let elements = 1 << 16;
    let calm = run(16, 4, &workers, elements, None).unwrap();
    let f = run_failover(16, (4, 12), &workers, elements, 2 * MS).unwrap();
    let stalls: Vec<String> = f.stalls.iter().map(|s| format!("{:.3} ms", s.unwrap_or(0.0) * 1e3)).collect();
    eprintln!(
        "16 nodes, primary at node 4 stopped at 2 ms, standby at node 12, workers at {workers:?}, {elements} i32 each: \
         {:.3} ms ({:.3} ms without failure), {} retransmissions; stalls {stalls:?}",
        f.outcome.duration as f64 / 1e6,
        calm.duration as f64 / 1e6,
        f.outcome.retransmissions
    );
    assert!(f.outcome.exact, "result not exact");
    assert_eq!(f.outcome.looped, 0);
    assert_eq!(f.switches, vec![1; 4], "every worker ends on the standby");
    assert!(f.stalls.iter().all(|s| s.is_some_and(|s| s > 0.0)), "{:?}", f.stalls);
    assert!(f.outcome.duration > calm.duration, "the failure fell inside the all-reduce");
}
