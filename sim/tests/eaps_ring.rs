//! The ring simulator's scenarios at 4, 16 and 50 nodes: the states each one must reach (checked
//! inside `scenarios`), no frame ever looped, and the convergence figures the timers imply.

use spotagg_driver::wire::eaps::EapsType;
use spotagg_sim::eaps::ring::{Flow, Ring, RingConfig};
use spotagg_sim::eaps::scenarios::{self, Row};
use spotagg_spec::eaps::{State, MS};

fn row<'a>(rows: &'a [Row], scenario: &str, event: &str) -> &'a Row {
    rows.iter().find(|r| r.scenario == scenario && r.event == event).unwrap_or_else(|| panic!("no row {scenario}"))
}

fn check(n: usize) {
    let rows = scenarios::all(n).unwrap_or_else(|e| panic!("{n} nodes: {e}"));
    for r in &rows {
        eprintln!("{r}");
        assert_eq!(r.looped, 0, "{r}");
    }
    let down = row(&rows, "each link broken in turn", "down");
    assert_eq!(down.events, n);
    // Hardware link-down detection (100 us) + LINK-DOWN to the master + RING-DOWN back.
    let c = down.convergence.expect("every link failure recovers");
    assert!(c < MS, "{n} nodes: link-down convergence {c} ns");
    assert!(down.lost > 0 && down.flushes >= n as u64, "{down}");
    // Without LINK-DOWN, the fail timer (3 ms after the last HEALTH came back) decides.
    let c = row(&rows, "LINK-DOWN lost (fail timer)", "down").convergence.unwrap();
    assert!((2 * MS..3 * MS + MS / 2).contains(&c), "fail timer path took {c} ns");
    // The restored link's ends open on the first HEALTH-Complete after their 3 ms hold.
    let c = row(&rows, "RING-UP flush lost at the restored link (pre-forwarding)", "up").convergence.unwrap();
    assert!((3 * MS..4 * MS + MS / 2).contains(&c), "pre-forwarding path took {c} ns");
    // Two masters: each keeps its secondary blocked, so the flows that cross are cut, not looped.
    assert!(row(&rows, "two masters in one domain", "start").lost > 0);
    assert!(row(&rows, "two domains on one ring", "down").convergence.is_some());
}

#[test]
fn ring_of_4() {
    check(4);
}

#[test]
fn ring_of_16() {
    check(16);
}

#[test]
fn ring_of_50() {
    check(50);
}

/// The loop detector sees loops: frames to an address nobody has are flooded; with VLAN 100
/// protected they stop at the master's secondary port, unprotected they circle.
#[test]
fn flooded_frames_loop_only_when_unprotected() {
    let mut cfg = RingConfig::standard(4);
    cfg.flows.push(Flow { src: 1, dst: 99, vlan: 100 });
    let mut ring = Ring::new(cfg.clone(), MS, 2 * MS);
    ring.run_until(3 * MS);
    assert_eq!(ring.report(MS, 2 * MS).looped, 0);
    cfg.domains[0].protected = vec![999];
    let mut ring = Ring::new(cfg, MS, 2 * MS);
    ring.run_until(3 * MS);
    assert!(ring.report(MS, 2 * MS).looped > 0);
}

/// A damaged PDU and an ESL PDU of a common link with no end on the ring, injected at node 2
/// (port 0) of a complete ring: the damaged PDU is dropped at node 2 (malformed, docs/eaps.md
/// §1.1). Without the master's pass rule (§2) the ESL PDU circles until the run ends; with it the ESL PDU
/// passes it once, makes one trip, and dies there when it comes back with the same EDP
/// sequence: it crosses nodes 2..N-1's links twice (before and after its trip), N + N-2
/// crossings in all.
#[test]
fn stray_control_frames_make_at_most_one_trip() {
    for n in [4, 16] {
        for rule in [false, true] {
            let rows = scenarios::stray_control_frames(n, rule).unwrap_or_else(|e| panic!("{n} nodes: {e}"));
            for r in &rows {
                eprintln!("{r}");
                assert_eq!(r.data_looped, 0, "{r}");
            }
            let (damaged, esl) = (&rows[0], &rows[1]);
            // A malformed PDU is dropped by the first node it reaches (docs/eaps.md §1.1), rule or
            // not: it crosses no link.
            assert_eq!((damaged.crossings, damaged.looped, damaged.master_passes), (0, 0, 0), "{damaged}");
            if rule {
                let n = n as u64;
                assert_eq!((esl.crossings, esl.looped, esl.master_passes), (2 * n - 2, n - 2, 1), "{esl}");
            } else {
                assert!(esl.looped > 100 && esl.master_passes > 100, "without the rule the frame circles: {esl}");
            }
        }
    }
}

/// The silent master (issue 41; docs/eaps.md §4, §6.13): link n/2 fails, the master enters
/// Failed and opens its secondary; its HEALTH stops (a stalled control plane: every HEALTH is
/// lost from 15 ms); the link comes back at 20 ms. The restored link's ends must stay blocked
/// while the master is silent, so that nothing loops; a flow to an address nobody has (flooded,
/// as broadcasts are) would circle through the open secondary otherwise. When HEALTH resumes at
/// 40 ms the master closes its secondary and RING-UP opens the ports. On the rule before issue
/// 41 (the hold's expiry opened the port) this test fails: the restored ends open while the
/// master is silent.
#[test]
fn silent_master_keeps_restored_ports_blocked() {
    for n in [4, 16] {
        let (fail, stall, restore, resume, end) = (10 * MS, 15 * MS, 20 * MS, 40 * MS, 50 * MS);
        let link = n / 2;
        let mut cfg = RingConfig::standard(n);
        cfg.flows.push(Flow { src: 1, dst: 99, vlan: 100 });
        let mut ring = Ring::new(cfg, 4 * MS, end);
        ring.fail_link(link, fail);
        ring.drop_pdus(EapsType::Health, None, stall, resume);
        ring.restore_link(link, restore);
        ring.run_until(resume);
        let master = (ring.nodes()[0].state(0), ring.nodes()[0].forwarding(0, 0));
        let ends = [(link, 1), (link + 1, 0)];
        let waiting: Vec<_> = ends
            .iter()
            .map(|&(node, port)| (ring.nodes()[node].state(0), ring.nodes()[node].forwarding(0, port)))
            .collect();
        let silent = ring.report(restore, resume);
        ring.run_until(end + 2 * MS);
        let after = ring.report(resume, end);
        eprintln!(
            "{n} nodes, silent master: {} frames looped while silent, {} after HEALTH resumed; restored ends {waiting:?}",
            silent.looped, after.looped
        );
        assert_eq!(silent.looped, 0, "{n} nodes: a frame looped while the master was silent");
        assert_eq!(after.looped, 0, "{n} nodes: a frame looped after HEALTH resumed");
        assert_eq!(master, (State::Failed, true), "{n} nodes: the master stays Failed, its secondary open");
        for &(st, fwd) in &waiting {
            assert_eq!(
                (st, fwd),
                (State::PreForwarding, false),
                "{n} nodes: a restored end opened while the master was silent"
            );
        }
        assert_eq!(ring.nodes()[0].state(0), State::Complete, "{n} nodes: the ring heals when HEALTH resumes");
        for (node, port) in ends {
            assert!(ring.nodes()[node].forwarding(0, port), "{n} nodes: node {node}'s port {port} opened by RING-UP");
        }
    }
}
