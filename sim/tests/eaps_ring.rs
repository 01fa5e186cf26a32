//! The ring simulator's scenarios at 4, 16 and 50 nodes: the states each one must reach (checked
//! inside `scenarios`), no frame ever looped, and the convergence figures the timers imply.

use spotagg_sim::eaps::ring::{Flow, Ring, RingConfig};
use spotagg_sim::eaps::scenarios::{self, Row};
use spotagg_spec::eaps::MS;

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
    // The restored link's ends open when their 3 ms pre-forwarding timer expires.
    let c = row(&rows, "RING-UP flush lost at the restored link (pre-forwarding)", "up").convergence.unwrap();
    assert!((3 * MS..3 * MS + MS / 2).contains(&c), "pre-forwarding path took {c} ns");
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
/// (port 0) of a complete ring: without the master's pass rule (docs/eaps.md §2) both circle
/// until the run ends; with it the damaged PDU dies at the master (node 0) and the ESL PDU
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
                if !rule {
                    assert!(r.looped > 100 && r.master_passes > 100, "without the rule the frame circles: {r}");
                }
            }
            if rule {
                let n = n as u64;
                let (damaged, esl) = (&rows[0], &rows[1]);
                assert_eq!((damaged.crossings, damaged.looped, damaged.master_passes), (n - 2, 0, 0), "{damaged}");
                assert_eq!((esl.crossings, esl.looped, esl.master_passes), (2 * n - 2, n - 2, 1), "{esl}");
            }
        }
    }
}
