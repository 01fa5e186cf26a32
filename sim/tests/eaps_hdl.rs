//! The hardware EAPS node (`spotagg_hdl::eaps_node`) against the reference node
//! (`spotagg_spec::eaps::EapsNode`), in rust-hdl's simulation (and Verilator): one node against
//! the reference on seeded random event sequences (every action compared after every event);
//! and rings of mixed reference and hardware nodes against all-reference rings on the ring
//! simulator's scenarios (every control frame sent, with its time, and every port-state change
//! identical). The node's blocks are tested alone, against the wire format and the reference
//! node's rules, in their own modules (`spotagg_hdl::eaps_pdu`, `spotagg_hdl::eaps_esl`).

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::wire::eaps::{emit_frame, parse_edp, parse_frame, Edp};
use spotagg_driver::wire::esl::{self, EslRepr, EslRole, EslState};
use spotagg_driver::wire::MacAddr;
use spotagg_hdl::rust_hdl::prelude::*;
use spotagg_sim::eaps::differential::{compare_placements, reference};
use spotagg_sim::eaps::hdl_node::HdlEapsNode;
use spotagg_sim::eaps::EapsEngine;
use spotagg_spec::eaps::{
    random_repr, Action, Alert, Cause, DomainConfig, EapsNode, FailAction, Nanos, Role, State, MS, US,
};
use std::collections::BTreeMap;

fn settle<B: Block>(b: &mut B) {
    assert!(simulate(b, 10_000), "did not settle");
}

/// An action list in a form whose order does not depend on which of a step's actions the
/// hardware shows first: the frames per port in order, and per domain the port states per
/// port in order, the transitions in order, the flush count and the alerts in order.
#[derive(Debug, Default, PartialEq, Eq)]
struct Norm {
    sends: [Vec<Vec<u8>>; 2],
    ports: BTreeMap<(usize, usize), Vec<bool>>,
    transitions: BTreeMap<usize, Vec<(State, State, Cause)>>,
    flushes: BTreeMap<usize, usize>,
    alerts: BTreeMap<usize, Vec<Alert>>,
}

fn norm(actions: &[Action]) -> Norm {
    let mut n = Norm::default();
    for a in actions {
        match a {
            Action::Send { port, frame } => n.sends[*port].push(frame.clone()),
            Action::PortState { domain, port, forwarding } => {
                n.ports.entry((*domain, *port)).or_default().push(*forwarding)
            }
            Action::Transition { domain, from, to, cause } => {
                n.transitions.entry(*domain).or_default().push((*from, *to, *cause))
            }
            Action::FlushFdb { domain } => *n.flushes.entry(*domain).or_default() += 1,
            Action::Alert { domain, alert } => n.alerts.entry(*domain).or_default().push(*alert),
        }
    }
    n
}

fn domain(role: Role, primary: usize, vlan: u16, fail_action: FailAction) -> DomainConfig {
    DomainConfig {
        role,
        primary,
        control_vlan: vlan,
        protected: vec![100 + vlan, 101 + vlan],
        hello: MS,
        fail: 3 * MS,
        pre_forwarding: 3 * MS,
        fail_action,
    }
}

/// A PDU another node might send.
fn peer_pdu(rng: &mut ChaCha8Rng, me: MacAddr, vlans: &[u16]) -> Vec<u8> {
    let mut r = random_repr(rng);
    r.control_vlan = if rng.gen_bool(0.9) { vlans[rng.gen_range(0..vlans.len())] } else { rng.gen_range(1..4095) };
    if rng.gen_bool(0.4) {
        r.system_mac = me; // our own HEALTH coming back, or a flush we sent
    } else if rng.gen_bool(0.5) {
        r.system_mac = MacAddr([2, 0, 0, 0, 0, 9]);
    }
    let mut f = emit_frame(&r, MacAddr([2, 0, 0, 0, 0, rng.gen()]), 7);
    if rng.gen_bool(0.25) {
        // Another EDP frame: an ESL segment health PDU (docs/eaps.md §11), passed on unchanged
        // (by a master only if valid and newer than its sender's last, §2): from one of six
        // senders, with a sequence near the last (older, the same, newer), sometimes damaged.
        let k: u8 = rng.gen_range(0..6);
        let esl = EslRepr {
            edp_sequence: (u16::from(k) << 12) + rng.gen_range(0..6),
            control_vlan: r.control_vlan,
            system_mac: MacAddr([2, 0, 0, 1, 0, k]),
            state: EslState::from(rng.gen_range(1..4)),
            role: EslRole::from(rng.gen_range(1..3)),
            link_id: rng.gen(),
            failed_link: rng.gen(),
            rb_id: rng.gen(),
        };
        f = esl::emit_frame(&esl, MacAddr([2, 0, 0, 0, 0, rng.gen()]), rng.gen_range(0..8));
        if rng.gen_bool(0.2) {
            let i = rng.gen_range(18..f.len());
            f[i] ^= 1 << rng.gen_range(0..8);
        }
    } else if rng.gen_bool(0.05) {
        // Tag VID and control VLAN field disagree.
        f[15] ^= 1;
        f[30..32].copy_from_slice(&[0, 0]);
        let c = spotagg_driver::wire::checksum::compute(&f[26..110]);
        f[30..32].copy_from_slice(&c.to_be_bytes());
    } else if rng.gen_bool(0.05) {
        f[50] ^= 0x40; // damaged: bad checksum
    } else if rng.gen_bool(0.15) {
        f = other_tlv_list(rng, &f);
    }
    f
}

/// The PDU of `f` in another TLV list, as other equipment may send it, or malformed
/// (docs/eaps.md §1.1): 80 bytes without the null TLV, an unknown TLV before the EAPS TLV,
/// bytes after the null TLV; truncated, EAPS version 2, zeros in place of the null TLV, a
/// second EAPS TLV, an EDP length past the frame; or another EDP frame (no EAPS TLV).
fn other_tlv_list(rng: &mut ChaCha8Rng, f: &[u8]) -> Vec<u8> {
    let mut edp = f[26..110].to_vec();
    match rng.gen_range(0..10) {
        0 => edp.truncate(80),
        8 | 9 => edp[17] = 0x0d, // no EAPS TLV (an ELRP one): another EDP frame
        1 => {
            edp.splice(16..16, [0x99, 0x15, 0, 8, 1, 2, 3, 4]);
        }
        2 => edp.extend_from_slice(&[0xde, 0xad]),
        3 => return f[..rng.gen_range(26..f.len())].to_vec(),
        4 => edp[20] = 2,
        5 => edp[80..84].fill(0),
        6 => {
            let tlv = edp[16..80].to_vec();
            edp.splice(80..80, tlv);
        }
        _ => {
            let mut g = f.to_vec();
            g[29] = g[29].wrapping_add(rng.gen_range(1..9));
            return g;
        }
    }
    let n = edp.len() as u16;
    edp[2..4].copy_from_slice(&n.to_be_bytes());
    edp[4..6].fill(0);
    let c = spotagg_driver::wire::checksum::compute(&edp);
    edp[4..6].copy_from_slice(&c.to_be_bytes());
    let mut g = f[..26].to_vec();
    g[16..18].copy_from_slice(&(8 + n).to_be_bytes());
    g.extend_from_slice(&edp);
    g
}

/// Counts the kinds of action in `a`.
fn record(a: &[Action], seen: &mut BTreeMap<String, usize>) {
    for x in a {
        let key = match x {
            Action::Transition { to, cause, .. } => format!("{to:?} by {cause:?}"),
            Action::Alert { alert: Alert::SecondMaster(_), .. } => "second master".into(),
            Action::Alert { .. } => "fail timer alert".into(),
            Action::FlushFdb { .. } => "flush".into(),
            Action::Send { frame, .. } => match parse_frame(frame) {
                Ok((_, _, pdu)) => format!("send {:?}", pdu.eaps_type),
                Err(_) if esl::parse_frame(frame).is_ok() => "pass ESL".into(),
                Err(_) => "pass other EDP".into(),
            },
            Action::PortState { .. } => continue,
        };
        *seen.entry(key).or_default() += 1;
    }
}

/// One node, reference and hardware, driven by the same seeded random events; every call's
/// actions, the states, port states, counters and next deadline compared after each.
fn node_vs_reference<H: EapsEngine>(
    seed: u64,
    domains: Vec<DomainConfig>,
    events: usize,
    seen: &mut BTreeMap<String, usize>,
    make: impl Fn(MacAddr, Vec<DomainConfig>) -> H,
) -> usize {
    let mut rng = ChaCha8Rng::seed_from_u64(seed);
    let me = MacAddr([2, 0, 0, 0, 0, 1]);
    let mut r = EapsNode::new(me, domains.clone(), [true, true]);
    let mut h = make(me, domains.clone());
    let vlans: Vec<u16> = domains.iter().map(|d| d.control_vlan).collect();
    let mut now: Nanos = rng.gen_range(0..1000);
    let mut compared = 0;
    let (a, b) = (r.enable(now), h.enable(now));
    assert_eq!(norm(&a), norm(&b), "seed {seed}: enable");
    for ev in 0..events {
        now += rng.gen_range(1..if seed.is_multiple_of(2) { 200 * US } else { 2 * MS });
        let what = rng.gen_range(0..10);
        // Timers due by then first, in both.
        while let Some(t) = r.poll_timeout().filter(|&t| t <= now) {
            assert_eq!(h.poll_timeout(), Some(t), "seed {seed} event {ev}: next deadline");
            let (a, b) = (r.handle_timeout(t), h.handle_timeout(t));
            assert_eq!(norm(&a), norm(&b), "seed {seed} event {ev}: timers at {t}");
            record(&a, seen);
            compared += 1;
        }
        let port = rng.gen_range(0..2);
        let (a, b) = match what {
            0 => (r.link_down(now, port), h.link_down(now, port)),
            1 => (r.link_up(now, port), h.link_up(now, port)),
            _ => {
                let f = peer_pdu(&mut rng, me, &vlans);
                match parse_edp(&f) {
                    Some(Edp::Malformed { reason, .. }) => {
                        *seen.entry(format!("malformed {reason:?}")).or_default() += 1
                    }
                    Some(Edp::Eaps { .. }) if f.len() != 110 => {
                        *seen.entry("PDU in another TLV list".into()).or_default() += 1
                    }
                    _ => {}
                }
                let dropped: u64 = (0..domains.len()).map(|d| r.counters(d).dropped).sum();
                let a = r.handle_frame(now, port, &f).unwrap_or_default();
                if parse_frame(&f).is_err() && (0..domains.len()).map(|d| r.counters(d).dropped).sum::<u64>() > dropped
                {
                    let key =
                        if esl::parse_frame(&f).is_ok() { "master drops valid ESL" } else { "master drops other EDP" };
                    *seen.entry(key.into()).or_default() += 1;
                }
                (a, h.handle_frame(now, port, &f).unwrap())
            }
        };
        assert_eq!(norm(&a), norm(&b), "seed {seed} event {ev} ({what}, port {port}) at {now}");
        compared += 1;
        record(&a, seen);
        for d in 0..domains.len() {
            let ctx = format!("seed {seed} event {ev} domain {d}");
            assert_eq!(r.state(d), h.state(d), "{ctx}: state");
            assert_eq!([r.forwarding(d, 0), r.forwarding(d, 1)], [h.forwarding(d, 0), h.forwarding(d, 1)], "{ctx}");
            assert_eq!(r.counters(d), h.counters(d), "{ctx}: counters");
            assert_eq!(r.last_transition(d), h.last_transition(d), "{ctx}: last transition");
        }
        assert_eq!(r.poll_timeout(), h.poll_timeout(), "seed {seed} event {ev}: next deadline");
    }
    compared
}

#[test]
fn node_master_and_transit_vs_reference() {
    random_events_vs_reference(8, |mac, doms| HdlEapsNode::new(mac, doms, [true, true]));
}

/// The same 8 seeds with the node in Verilator.
#[test]
fn verilated_node_vs_reference() {
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
        return;
    }
    random_events_vs_reference(8, |mac, doms| {
        HdlEapsNode::verilated(mac, doms, [true, true]).expect("Verilator model of the EAPS node")
    });
}

/// Seeds: 4 reach every key below (3 miss the fail timer's transition); the planted faults of
/// tests/faults/eaps-*.patch fail at seeds 0 and 1; the tests run 8, twice the 4 (12 until
/// 2026-12-05; docs/performance.md, "Test suite").
fn random_events_vs_reference<H: EapsEngine>(seeds: u64, make: impl Fn(MacAddr, Vec<DomainConfig>) -> H) {
    let mut calls = 0;
    let mut seen = BTreeMap::new();
    for seed in 0..seeds {
        let fa = if seed % 3 == 2 { FailAction::SendAlert } else { FailAction::OpenSecondary };
        let doms = match seed % 3 {
            0 => vec![domain(Role::Master, 1, 10, fa)],
            1 => vec![domain(Role::Transit, 0, 10, fa)],
            _ => vec![domain(Role::Master, 0, 10, fa), domain(Role::Transit, 1, 20, fa)],
        };
        calls += node_vs_reference(seed, doms, 150, &mut seen, &make);
    }
    eprintln!("{calls} calls compared; actions seen: {seen:?}");
    // The random events reach every transition and PDU the spec has.
    for key in [
        "Complete by HealthReturned",
        "Failed by LinkDownPdu",
        "Failed by LocalLinkDown(0)",
        "Failed by LocalLinkDown(1)",
        "Failed by FailTimer",
        "LinksDown by LocalLinkDown(0)",
        "PreForwarding by LocalLinkUp(1)",
        "LinksUp by RingUpFlush",
        "LinksUp by HealthComplete",
        "second master",
        "fail timer alert",
        "send Health",
        "send RingUpFlushFdb",
        "send RingDownFlushFdb",
        "send LinkDown",
        "pass ESL",
        "pass other EDP",
        "master drops other EDP",
        "master drops valid ESL",
        "malformed Length",
        "malformed Version",
        "malformed Checksum",
        "malformed TlvList",
        "PDU in another TLV list",
    ] {
        assert!(seen.contains_key(key), "no {key} in the random events: {seen:?}");
    }
}

/// Rings of mixed nodes against all-reference rings: every control frame (time, node, port,
/// bytes), every port-state change and every transition and alert identical.
fn mixed_rings(n: usize, placements: &[(Vec<usize>, Vec<usize>)]) {
    let (cases, _) = compare_placements(n, placements, |(hw, vl), i, mac, domains| -> Box<dyn EapsEngine> {
        if vl.contains(&i) {
            Box::new(HdlEapsNode::verilated(mac, domains, [true, true]).expect("Verilator model of the EAPS node"))
        } else if hw.contains(&i) {
            Box::new(HdlEapsNode::new(mac, domains, [true, true]))
        } else {
            reference(i, mac, domains)
        }
    });
    eprintln!("{n} nodes: {cases} mixed rings identical to the reference ring (rust-hdl, Verilator) = {placements:?}");
}

#[test]
fn mixed_ring_of_4() {
    // The master alone, a transit alone, and every node in hardware.
    mixed_rings(4, &[(vec![0], vec![]), (vec![2], vec![]), (vec![0, 1, 2, 3], vec![])]);
}

#[test]
fn mixed_ring_of_8() {
    // Master and its neighbours; the second domain's master (node 4) and the far side.
    mixed_rings(8, &[(vec![0, 1, 7], vec![]), (vec![3, 4, 5], vec![])]);
}

/// The Verilator model of the node (the Verilog the board is built from) in rings with
/// reference and rust-hdl nodes: master in Verilator, a transit in rust-hdl, and the other way
/// round, and a whole 4-node ring in Verilator.
#[test]
fn mixed_ring_with_verilator() {
    if !spotagg_testkit::require_tool(spotagg_testkit::Tool::Verilator) {
        return;
    }
    mixed_rings(4, &[(vec![2], vec![0]), (vec![0], vec![1, 3]), (vec![], vec![0, 1, 2, 3])]);
}

/// The data plane's VLAN gate against the ring simulator's rule on the reference node's port
/// states: a protected VLAN passes a port only where its domain forwards; others always.
#[test]
fn vlan_gate_matches_the_reference_port_states() {
    use spotagg_hdl::eaps_gate::EapsVlanGate;
    let mut rng = ChaCha8Rng::seed_from_u64(19);
    let mut gate = EapsVlanGate::<2>::default();
    gate.connect_all();
    let me = MacAddr([2, 0, 0, 0, 0, 1]);
    let (mut blocked, mut checked) = (0, 0);
    for case in 0..20 {
        let lo0 = rng.gen_range(2..2000u16);
        let lo1 = rng.gen_range(2..2000u16);
        let mut d0 = domain(Role::Master, rng.gen_range(0..2), 10, FailAction::OpenSecondary);
        d0.protected = (lo0..lo0 + rng.gen_range(1..50)).collect();
        let mut d1 = domain(Role::Transit, rng.gen_range(0..2), 20, FailAction::OpenSecondary);
        d1.protected = (lo1..lo1 + rng.gen_range(1..50)).collect();
        let doms = vec![d0, d1];
        for (i, d) in doms.iter().enumerate() {
            let c = &mut gate.cfg[i];
            c.active.next = true;
            c.protected_lo.next = u64::from(*d.protected.first().unwrap()).into();
            c.protected_hi.next = u64::from(*d.protected.last().unwrap()).into();
        }
        let mut r = EapsNode::new(me, doms.clone(), [true, true]);
        r.enable(0);
        let mut now = 0;
        for _ in 0..30 {
            now += rng.gen_range(1..MS);
            let p = rng.gen_range(0..2);
            match rng.gen_range(0..3) {
                0 => drop(r.link_down(now, p)),
                1 => drop(r.link_up(now, p)),
                _ => drop(r.handle_timeout(now)),
            }
            let mut fwd = 0u64;
            for d in 0..2 {
                for p in 0..2 {
                    fwd |= u64::from(r.forwarding(d, p)) << (2 * d + p);
                }
            }
            gate.forwarding.next = fwd.into();
            for _ in 0..20 {
                let vid = if rng.gen_bool(0.5) { lo0 + rng.gen_range(0..60) } else { lo1 + rng.gen_range(0..60) };
                let tagged = rng.gen_bool(0.9);
                let port = rng.gen_range(0..2);
                gate.vid.next = u64::from(vid).into();
                gate.has_tag.next = tagged;
                gate.port.next = port == 1;
                settle(&mut gate);
                let want = !tagged || r.domain_of_vlan(vid).is_none_or(|d| r.forwarding(d, port));
                assert_eq!(gate.pass.val(), want, "case {case}: VLAN {vid} tagged {tagged} port {port}");
                if tagged {
                    assert_eq!(gate.is_protected.val(), r.domain_of_vlan(vid).is_some(), "case {case}: VLAN {vid}");
                }
                blocked += usize::from(!want);
                checked += 1;
            }
        }
    }
    assert!(blocked > 100, "{blocked} of {checked} lookups blocked: the cases do not reach blocked ports");
}
