//! Issue 17 item 7: an all-reduce through the reference switch on a 16-node EAPS ring while a
//! link on the path between the switch and a worker fails and is restored. The result must be
//! exact, nothing may loop; the stall is the extra time over the same run without the failure.

use spotagg_sim::eaps::allreduce::run;
use spotagg_sim::eaps::ring::MS;

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
