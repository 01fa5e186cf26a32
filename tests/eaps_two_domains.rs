//! Two EAPS domains on one ring of `spotagg eaps` nodes, each on its own path through the
//! per-VLAN gates (docs/eaps.md §9.1, issue 41): `scripts/eaps_two_domains.sh` with this
//! build's `spotagg`. Domain A (VLANs 100-199) has its master on n1, domain B (200-299) on n3;
//! h2 streams VLAN 150 and VLAN 250 frames to h4 every 2 ms. This test checks what the script
//! reports:
//!
//! - the paths: A's frames leave only by n2's p23 and n3's p34 (n2-n3-n4), B's only by n2's
//!   p21 and n1's p14 (n2-n1-n4), counted by nftables in each node;
//! - 12 link events (each ring link down and up from one end, two of them from the other end
//!   too): no frame looped and both streams flow again after each;
//! - a failure moves only the VLANs that must move: a link on A's path (n3-n4) loses no B
//!   frame, a link on B's path (n1-n2, n1-n4) no A frame.
//!
//! The frames lost and the time until each stream flowed again are printed, not bounded: they
//! are wall-clock figures on a shared 2-core machine (docs/eaps.md §10 has them).
//! Without namespaces or nftables the test fails with `NOT RUN:` unless `SPOTAGG_SKIP_NETNS=1`.

use spotagg_testkit::{require_tool, ring_script, Tool};

const BIN: &str = env!("CARGO_BIN_EXE_spotagg");

/// `paths VLAN… n1:p12 N …` as (port, frames) pairs.
fn path(run: &ring_script::RingRun, vlan: &str) -> Vec<(String, u64)> {
    let lines = run.lines_after(&format!("paths {vlan} "));
    let w = lines.first().unwrap_or_else(|| panic!("no `paths {vlan}` line"));
    w.chunks(2).map(|c| (c[0].to_string(), c[1].parse().unwrap())).collect()
}

/// The value of `key` (a comma-separated pair) on the event line of `name`.
fn each(run: &ring_script::RingRun, name: &str, key: &str) -> [u64; 2] {
    let line = run.stderr.lines().find(|l| l.starts_with(&format!("event {name} "))).expect("the event's line");
    let w: Vec<&str> = line.split_whitespace().collect();
    let i = w.iter().position(|x| *x == key).unwrap_or_else(|| panic!("no {key} in {line}"));
    let v: Vec<u64> = w[i + 1].split(',').map(|x| x.parse().unwrap()).collect();
    [v[0], v[1]]
}

#[test]
fn two_domains_each_on_its_own_path() {
    if !require_tool(Tool::Netns) {
        return;
    }
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/scripts/eaps_two_domains.sh");
    let run = ring_script::run(BIN, script, 300, "eaps_two_domains: done");

    for (vlan, on) in [("VLAN150", ["n2:p23", "n3:p34"]), ("VLAN250", ["n1:p14", "n2:p21"])] {
        let p = path(&run, vlan);
        assert_eq!(p.len(), 8, "{p:?}");
        for (port, frames) in &p {
            if on.contains(&port.as_str()) {
                // (one second of a frame every 2 ms)
                assert!(*frames > 100, "{vlan}: {port} carried {frames} frames, expected its path: {p:?}");
            } else {
                assert_eq!(*frames, 0, "{vlan}: {port} is off its path and carried frames: {p:?}");
            }
        }
    }

    let events = &run.events;
    assert_eq!(events.len(), 12, "expected 12 link events: {events:?}");
    for e in events {
        assert!(e.offered > 0, "{}: no traffic offered", e.name);
        assert_eq!(e.looped, 0, "{}: {} frames looped", e.name, e.looped);
        assert_eq!(e.flowing, [true, true], "{}: a stream did not flow again", e.name);
    }
    for name in ["down-p43", "up-p43", "down-p34", "up-p34"] {
        assert_eq!(each(&run, name, "lost_each")[1], 0, "{name}: a link on A's path only lost B frames");
    }
    for name in ["down-p12", "up-p12", "down-p14", "up-p14"] {
        assert_eq!(each(&run, name, "lost_each")[0], 0, "{name}: a link on B's path only lost A frames");
    }
    for e in events {
        let [la, lb] = each(&run, &e.name, "lost_each");
        let [ga, gb] = each(&run, &e.name, "flow_again_each");
        println!(
            "eaps_two_domains: {:<9} A lost {la:>3} again after {ga:>3} ms, B lost {lb:>3} again after {gb:>3} ms",
            e.name
        );
    }
}
