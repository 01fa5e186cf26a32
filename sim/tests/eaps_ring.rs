//! The ring simulator's scenarios at 4, 16 and 50 nodes: the states each one must reach (checked
//! inside `scenarios`), no frame ever looped, and the convergence figures the timers imply.

use spotagg_sim::eaps::ring::{Flow, Ring, RingConfig, MS};
use spotagg_sim::eaps::scenarios::{self, Row};

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
