//! The cluster simulator at small sizes (the full sizes are `cargo run --release -p
//! spotagg-sim --example cluster`): trees exact under loss, i32 and f32, the ring exact, the
//! tree against the ring, two jobs on one switch.

use spotagg_sim::cluster::{ring_allreduce, tree_allreduce, two_jobs, LinkParams, Topology, TreeConfig};
use std::time::Duration;

fn link(gbps: f64, loss: f64) -> LinkParams {
    LinkParams { gbps, latency: Duration::from_micros(1), loss }
}

#[test]
fn trees_of_two_and_three_levels_are_exact_under_loss() {
    for (fanout, seed) in [(vec![4, 16], 1u64), (vec![2, 3, 5], 2)] {
        let topo = Topology::tree(&fanout);
        let mut cfg = TreeConfig::new(link(10.0, 0.001), 256 * 40 + 17, seed);
        cfg.slots = 16;
        let r = tree_allreduce(&topo, &cfg).unwrap();
        assert_eq!(r.wrong_workers, 0, "{fanout:?}: {r:?}");
        assert!(r.link_lost > 0 && r.retransmissions > 0, "{fanout:?}: the loss must have struck: {r:?}");
        eprintln!(
            "{fanout:?}: n {} {:.1} µs, {} frames, {} lost, {} retransmissions",
            r.n,
            r.seconds * 1e6,
            r.link_frames,
            r.link_lost,
            r.retransmissions
        );
    }
}

#[test]
fn f32_through_a_tree_is_within_the_bound_of_all_its_workers() {
    // 64 workers: each scales by 64, not by its leaf's 16 (a leaf's scale would overflow).
    let topo = Topology::tree(&[4, 16]);
    let mut cfg = TreeConfig::new(link(10.0, 0.002), 256 * 12, 3);
    cfg.float = true;
    cfg.slots = 8;
    let r = tree_allreduce(&topo, &cfg).unwrap();
    assert_eq!((r.n, r.wrong_workers), (64, 0), "{r:?}");
}

#[test]
fn the_ring_is_exact_and_slower_than_the_tree_on_the_same_links() {
    let topo = Topology::racks(64, 16, 16);
    assert_eq!(topo.fanout(), &[4, 16]);
    let elements = 256 * 64;
    let ring = ring_allreduce(&topo, link(10.0, 0.0), elements, spotagg_driver::wire::PayloadSize::B1024, 4);
    assert_eq!(ring.wrong_workers, 0);
    let tree = tree_allreduce(&topo, &TreeConfig::new(link(10.0, 0.0), elements, 4)).unwrap();
    assert_eq!((tree.wrong_workers, tree.retransmissions), (0, 0));
    // Per worker the tree moves M each way, the ring 2 (n - 1) / n M, plus 2 (n - 1) latencies.
    let m_time = (elements * 4 + elements / 256 * 76) as f64 * 8.0 / 10e9;
    assert!(tree.seconds > m_time && tree.seconds < 1.2 * m_time, "tree {} vs M/B {m_time}", tree.seconds);
    assert!(ring.seconds > 1.9 * m_time, "ring {} vs M/B {m_time}", ring.seconds);
}

#[test]
fn racks_shapes() {
    assert_eq!(Topology::racks(8, 16, 16).fanout(), &[8]);
    assert_eq!(Topology::racks(256, 16, 16).fanout(), &[16, 16]);
    assert_eq!(Topology::racks(1024, 16, 16).fanout(), &[4, 16, 16]);
    assert_eq!(Topology::racks(1024, 16, 16).n(), 1024);
}

#[test]
fn two_jobs_share_a_switch_with_a_limited_engine() {
    // 4 workers a job, 10 Gb/s links; the switch's engine takes 200 ns a frame (5 M frames/s):
    // one job alone offers 4 × 1.2 M frames/s, two jobs twice that.
    let mut cfg = TreeConfig::new(link(10.0, 0.0), 256 * 200, 5);
    cfg.slots = 32;
    cfg.switch_frame_time = Duration::from_nanos(200);
    let (alone_a, ra) = two_jobs(4, 4, [true, false], &cfg).unwrap();
    let (alone_b, rb) = two_jobs(4, 4, [false, true], &cfg).unwrap();
    let (both, rt) = two_jobs(4, 4, [true, true], &cfg).unwrap();
    assert_eq!((ra.wrong_workers, rb.wrong_workers, rt.wrong_workers), (0, 0, 0));
    assert!((alone_a[0] - alone_b[1]).abs() < 0.02 * alone_a[0], "{alone_a:?} {alone_b:?}");
    // Together the engine is the bottleneck: each job slower than alone, the two within 10 %.
    assert!(both[0] > 1.3 * alone_a[0] && both[1] > 1.3 * alone_b[1], "{both:?} vs {alone_a:?} {alone_b:?}");
    assert!((both[0] - both[1]).abs() < 0.1 * both[0], "{both:?}");
}

#[test]
fn a_slowed_worker_is_named_by_its_leaf_and_its_rack_by_the_root() {
    // 4 racks of 8; worker 13 (rack 1, rank 5) on a link at half the rate.
    let topo = Topology::tree(&[4, 8]);
    let mut cfg = TreeConfig::new(link(10.0, 0.0), 256 * 60, 6);
    cfg.slots = 16;
    cfg.slow_worker = Some((13, 0.5));
    let r = tree_allreduce(&topo, &cfg).unwrap();
    assert_eq!(r.wrong_workers, 0);
    let rounds = 60;
    // Switch 0 is the root, 1..=4 the racks.
    let (_, root) = &r.stragglers[0];
    let (_, rack1) = &r.stragglers[2];
    assert_eq!(root.iter().map(|x| x.0).sum::<u64>(), rounds);
    assert!(rack1[5].0 >= rounds * 9 / 10, "rack 1: {rack1:?}");
    assert!(root[1].0 >= rounds * 9 / 10, "root: {root:?}");
    assert!(rack1[5].1 / rack1[5].0 >= 1, "rank 5 lags by at least 1 µs a round: {rack1:?}");
    eprintln!("rack 1 (rounds last, lag µs total, max): {rack1:?}\nroot: {root:?}");
}
