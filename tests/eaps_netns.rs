//! A real EAPS ring in network namespaces: `scripts/eaps_ring.sh` run with this build's
//! `spotagg`. Six Linux-bridge nodes, each run by `spotagg eaps`, in two rings that share the
//! link n3-n4 (no shared-port control: `allow_superloop = true`), hosts on n1, n2, n5, n6 and
//! the aggregation switch on n3. The script makes its namespaces and removes them (a trap on
//! exit); see its header for the phases. This test checks what it reports:
//!
//! - every ring link but the common one taken down and brought back with `ip link`, and n2's
//!   daemon stopped and restarted: no frame looped (per link direction, data frames against
//!   the frames the hosts offered, with one broadcast sent in every event window), and the
//!   pings flow again (the stopped daemon's node is healed round by the master's fail timer);
//! - the common link's failure without shared ports: the broadcast loops round both rings (a
//!   superloop), bounded to 0.3 s by bringing the link back, after which the rings recover;
//! - the same failure with a shared port at both ends (n3 controller, n4 partner): no loop;
//! - 4 `spotagg worker --verify` through `spotagg switch`, without and across a failure on a
//!   worker's path: exact both times (the stall is printed);
//! - tshark decodes the PDUs captured on n1's ring port as EAPS HEALTH and RING-UP on control
//!   VLAN 10 with a good EDP checksum.
//!
//! Figures (pings lost, time until they flow again, the all-reduce's stall) are printed, not
//! asserted: they are wall-clock times on a shared 2-core machine.
//! Without namespaces (not root, no `ip`), or without tshark, the test fails with `NOT RUN:`
//! unless `SPOTAGG_SKIP_NETNS=1` (or `SPOTAGG_SKIP_TSHARK=1`) says that skipping is intended.

use spotagg_testkit::{require_tool, ring_script, Tool};

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

#[test]
fn eaps_ring_in_namespaces() {
    if !require_tool(Tool::Netns) || !require_tool(Tool::Tshark) {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/eaps_ring.sh");
    let run = ring_script::run(BIN, script, 170, "eaps_ring: done");
    let events = &run.events;
    assert_eq!(
        events.len(),
        16,
        "expected 12 link events, the daemon stop and start, the common link without and with shared ports"
    );
    for e in events {
        assert!(e.offered > 0, "{}: no traffic offered", e.name);
        if e.name == "common-link-shared-ports" {
            // The controller blocks ring 2's segment port: no loop.
            assert_eq!(e.looped, 0, "{}: {} frames looped with shared ports", e.name, e.looped);
            continue;
        }
        if e.name == "common-link-no-shared-ports" {
            // The superloop forms: the broadcast crosses links many more times than offered.
            assert!(e.looped > e.offered, "{}: no loop seen ({} looped, {} offered)", e.name, e.looped, e.offered);
            continue;
        }
        assert_eq!(e.looped, 0, "{}: {} frames looped", e.name, e.looped);
        // (Pings lost and the time until they flow again are printed, not bounded: a loaded
        // machine stretches them; sim/tests/eaps_ring.rs checks the timers in virtual time.)
        if e.name == "stop-n2-daemon" {
            // The stopped node puts its ports back to disabled: the master heals round it on its
            // fail timer, so h1's pings flow again; h2 hangs off n2 and is cut off.
            assert_eq!(e.flowing, [true, false], "{}: h1's pings flow round n2, h2's do not", e.name);
            assert!(e.lost > 0, "stopping n2's daemon lost nothing: was n2 on the pings' path?");
            continue;
        }
        assert_eq!(e.flowing, [true, true], "{}: the pings did not flow again ({} lost)", e.name, e.lost);
    }

    let allreduce: Vec<(f64, bool)> = run
        .stdout
        .lines()
        .filter(|l| l.starts_with("allreduce "))
        .map(|l| {
            assert!(l.contains(": 4 workers"), "{l}");
            let s = l.split("slowest ").nth(1).unwrap().split(' ').next().unwrap().parse::<f64>().unwrap();
            (s, l.ends_with("True"))
        })
        .collect();
    assert_eq!(allreduce.len(), 2, "two all-reduce runs");
    assert!(allreduce.iter().all(|r| r.1), "an all-reduce was not exact");
    println!(
        "eaps_netns: all-reduce {:.3} s without, {:.3} s across the failure: stall {:.0} ms",
        allreduce[0].0,
        allreduce[1].0,
        (allreduce[1].0 - allreduce[0].0) * 1e3
    );

    let tshark = run.lines_after("tshark p12:");
    // count, VLAN, EAPS type, control VLAN, system MAC, checksum status
    let has =
        |ty: &str| tshark.iter().any(|w| w.len() == 6 && w[1] == "10" && w[2] == ty && w[3] == "10" && w[5] == "1");
    assert!(has("5"), "tshark saw no HEALTH on VLAN 10 with a good checksum: {tshark:?}");
    assert!(tshark.iter().all(|w| w.len() == 6 && w[5] == "1"), "a PDU with a bad checksum: {tshark:?}");
    // count, VLAN, system MAC, state, role, link ID, failed link ID, checksum status
    let esl = run.lines_after("tshark esl p35:");
    let role = |r: &str| esl.iter().any(|w| w.len() == 8 && w[1] == "20" && w[4] == r && w[5] == "34" && w[7] == "1");
    assert!(role("1") && role("2"), "tshark saw no ESL from both the controller and the partner on p35: {esl:?}");
    assert!(
        esl.iter().any(|w| w.len() == 8 && w[3] == "2" && w[6] == "34"),
        "no ESL in Blocking with link 34 failed: {esl:?}"
    );
    assert!(esl.iter().all(|w| w.len() == 8 && w[7] == "1"), "an ESL PDU with a bad checksum: {esl:?}");
}
