//! Properties of the reference switch on seeded closed-loop traces (deterministic: a fixed
//! proptest seed and no failure persistence).
//!
//! - Under any loss and duplication with per-worker-ordered delivery, every worker ends with
//!   the exact wrap-around sum of all workers' chunks and the maxima of their exponents,
//!   computed here independently of the switch.
//! - Counters are consistent, and count exactly n·chunks contributions and n per round.
//! - Malformed frames inserted anywhere change no slot and no output; ARP and ping frames
//!   only add their own replies.
//! - No input panics the switch; a frame it drops leaves the slots as they were.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, RngSeed};
use spotagg_driver::wire::{ArpOperation, EtherType, Ipv4Addr, MacAddr, PayloadSize};
use spotagg_driver::{Counters, DropReason, Engine, JobConfig, JobVlan};
use spotagg_sim::trace::{arp_frame, echo_request, generate, malformed_frames, Reorder, TraceSpec};
use spotagg_spec::reference::{classify, Classification, RefSwitch};

fn config(cases: u32) -> Config {
    Config {
        cases,
        rng_algorithm: RngAlgorithm::ChaCha,
        rng_seed: RngSeed::Fixed(0x5907_a66e),
        failure_persistence: None,
        ..Config::default()
    }
}

fn payload() -> impl Strategy<Value = PayloadSize> {
    prop_oneof![Just(PayloadSize::B128), Just(PayloadSize::B256), Just(PayloadSize::B512), Just(PayloadSize::B1024)]
}

/// n from 1 to 32, small n more often.
fn workers() -> impl Strategy<Value = usize> {
    prop_oneof![3 => 1usize..=4, 2 => 5usize..=12, 1 => 13usize..=32]
}

/// A job's size and its losses: (n, payload, slots in 1..=`max_slots`, chunks in 1..=`max_chunks`,
/// loss and duplication rates below `max_rate`), drawn in that order.
fn traffic(
    max_slots: u16,
    max_chunks: usize,
    max_rate: f64,
) -> impl Strategy<Value = (usize, PayloadSize, u16, usize, f64, f64)> {
    (workers(), payload(), 1u16..=max_slots, 1usize..=max_chunks, 0.0f64..max_rate, 0.0f64..max_rate)
}

/// An untagged job half the time, else a tagged one with any VID and reply priority.
fn vlan() -> impl Strategy<Value = Option<JobVlan>> {
    prop::option::of((1u16..=4094, 0u8..=7).prop_map(|(id, priority)| JobVlan { id, priority }))
}

fn replay(job: &JobConfig, frames: &[Vec<u8>]) -> (RefSwitch, Vec<Vec<u8>>) {
    let mut sw = RefSwitch::new(job.clone());
    let mut out = Vec::new();
    for f in frames {
        sw.process(f, &mut out);
        assert!(sw.counters().is_consistent());
    }
    (sw, out)
}

proptest! {
    #![proptest_config(config(128))]

    #[test]
    fn every_worker_ends_with_the_exact_sum(
        (n, payload, slots, chunks, loss, duplication) in traffic(6, 12, 0.3),
        extras in 0.0f64..0.2,
        vlan in vlan(),
        seed in any::<u64>(),
    ) {
        let spec = TraceSpec {
            loss, duplication, malformed: extras, arp: extras / 2.0, ping: extras / 2.0, quirks: extras, vlan,
            ..TraceSpec::new(n, payload, slots, chunks, seed)
        };
        let t = generate(&spec);
        prop_assert!(t.complete, "incomplete after {} steps", t.steps);
        let k = payload.elements();
        for c in 0..chunks {
            let mut sum = vec![0i32; k];
            let (mut e0, mut e1) = (i8::MIN, i8::MIN);
            for r in 0..n {
                for (s, v) in sum.iter_mut().zip(&t.inputs[r][c]) {
                    *s = (i64::from(*s) + i64::from(*v)) as u32 as i32; // two's-complement wrap
                }
                e0 = e0.max(t.exponents[r][c].0);
                e1 = e1.max(t.exponents[r][c].1);
            }
            for r in 0..n {
                let got = t.results[r][c].as_ref().expect("result received");
                prop_assert_eq!(&got.values, &sum, "rank {} chunk {}", r, c);
                prop_assert_eq!((got.e0, got.e1), (e0, e1), "rank {} chunk {}", r, c);
            }
        }
        let (sw, out) = replay(&t.job, &t.frames);
        let cnt = sw.counters();
        prop_assert!(cnt.is_consistent());
        prop_assert_eq!(cnt.contributions, (n * chunks) as u64);
        prop_assert_eq!(cnt.results_multicast, (n * chunks) as u64);
        prop_assert_eq!(cnt.frames_out, out.len() as u64);
        prop_assert_eq!(cnt.frames_in, t.frames.len() as u64);
    }

    #[test]
    fn malformed_frames_change_no_slot_and_no_output(
        (n, payload, slots, chunks, loss, duplication) in traffic(4, 8, 0.2),
        seed in any::<u64>(),
        vlan in vlan(),
        positions in proptest::collection::vec(any::<prop::sample::Index>(), 1..40),
    ) {
        let spec = TraceSpec { loss, duplication, vlan, ..TraceSpec::new(n, payload, slots, chunks, seed) };
        let t = generate(&spec);
        let job = &t.job;
        let (_, clean_out) = replay(job, &t.frames);
        let bad = malformed_frames(job, seed ^ 0xbad);
        let mut insert_at: Vec<(usize, usize)> =
            positions.iter().enumerate().map(|(i, p)| (p.index(t.frames.len() + 1), i % bad.len())).collect();
        insert_at.sort();
        // Lockstep: `a` sees the clean trace, `b` the same with malformed frames inserted.
        let mut a = RefSwitch::new(job.clone());
        let mut b = RefSwitch::new(job.clone());
        let (mut out_a, mut out_b) = (Vec::new(), Vec::new());
        let mut next = insert_at.iter().peekable();
        for (i, f) in t.frames.iter().enumerate() {
            while let Some(&&(_, j)) = next.peek().filter(|(at, _)| *at == i) {
                next.next();
                let before = out_b.len();
                b.process(&bad[j].1, &mut out_b);
                prop_assert_eq!(out_b.len(), before);
                prop_assert!(b.same_slots(&a), "{:?} frame changed a slot", bad[j].0);
            }
            a.process(f, &mut out_a);
            b.process(f, &mut out_b);
        }
        for &(_, j) in next {
            b.process(&bad[j].1, &mut out_b);
        }
        prop_assert!(out_a == clean_out, "lockstep replay differs");
        prop_assert!(out_b == clean_out, "malformed frames changed the output");
        let (ca, cb) = (a.counters(), b.counters());
        let mut expect = ca.clone();
        expect.frames_in += insert_at.len() as u64;
        for &(_, j) in &insert_at {
            expect.drops[bad[j].0.index()] += 1;
        }
        prop_assert_eq!(cb, expect);
    }

    #[test]
    fn arp_and_pings_only_add_their_replies(
        n in workers(),
        slots in 1u16..=4,
        chunks in 1usize..=6,
        seed in any::<u64>(),
        inserts in proptest::collection::vec((any::<prop::sample::Index>(), 0usize..60, any::<bool>()), 1..20),
    ) {
        let t = generate(&TraceSpec::new(n, PayloadSize::B256, slots, chunks, seed).troubled(0.1));
        let job = &t.job;
        let (_, clean_out) = replay(job, &t.frames);
        let mut frames = t.frames.clone();
        let mut sorted = inserts.clone();
        sorted.sort_by_key(|(p, _, _)| std::cmp::Reverse(p.index(t.frames.len() + 1)));
        for (p, len, is_arp) in &sorted {
            let host = MacAddr([0x02, 0, 0, 0, 0x77, *len as u8]);
            let ip = Ipv4Addr::new(198, 51, 100, *len as u8);
            let f = if *is_arp {
                arp_frame(MacAddr::BROADCAST, ArpOperation::REQUEST, host, ip, MacAddr::default(), job.switch_ip)
            } else {
                echo_request(job, host, ip, 1, *len as u16, &vec![0xab; *len])
            };
            frames.insert(p.index(t.frames.len() + 1), f);
        }
        let (sw, out) = replay(job, &frames);
        let results = |v: &[Vec<u8>]| -> Vec<Vec<u8>> {
            v.iter().filter(|f| !(f[12..14] == EtherType::ARP.0.to_be_bytes() || f[23] == 1)).cloned().collect()
        };
        prop_assert!(results(&out) == results(&clean_out), "results differ");
        let (clean, _) = replay(job, &t.frames);
        let (c, c0): (Counters, Counters) = (sw.counters(), clean.counters());
        prop_assert_eq!(c.arp_replies + c.icmp_replies, inserts.len() as u64 + c0.arp_replies + c0.icmp_replies);
        prop_assert_eq!(out.len() - clean_out.len(), inserts.len());
    }

    #[test]
    fn unordered_delivery_stays_consistent(
        n in 1usize..=8,
        slots in 1u16..=3,
        chunks in 1usize..=10,
        rate in 0.0f64..0.3,
        seed in any::<u64>(),
    ) {
        let spec = TraceSpec { reorder: Reorder::Any, ..TraceSpec::new(n, PayloadSize::B128, slots, chunks, seed).troubled(rate) };
        let t = generate(&spec);
        let (sw, out) = replay(&t.job, &t.frames);
        prop_assert_eq!(sw.counters().frames_out, out.len() as u64);
    }
}

proptest! {
    #![proptest_config(config(1000))]

    /// Any bytes: no panic, consistent counters, and a dropped frame leaves the slots alone.
    #[test]
    fn random_damage_never_panics_and_drops_touch_nothing(
        n in 1usize..=4,
        seed in any::<u64>(),
        flips in proptest::collection::vec((any::<prop::sample::Index>(), any::<u8>()), 0..6),
        cut in any::<prop::sample::Index>(),
        cut_it in any::<bool>(),
        noise in proptest::collection::vec(any::<u8>(), 0..80),
        vlan in vlan(),
    ) {
        let t = generate(&TraceSpec { vlan, ..TraceSpec::new(n, PayloadSize::B128, 2, 3, seed) });
        let job = &t.job;
        let (warm, _) = replay(job, &t.frames[..t.frames.len() / 2]);
        let base = &t.frames[t.frames.len() / 2];
        let mut f = base.clone();
        for (i, x) in &flips {
            let i = i.index(f.len());
            f[i] ^= x;
        }
        if cut_it {
            f.truncate(cut.index(f.len() + 1));
        }
        for frame in [f, noise] {
            let mut sw = warm.clone();
            let mut out = Vec::new();
            let class = classify(job, &frame);
            sw.process(&frame, &mut out);
            prop_assert!(sw.counters().is_consistent());
            if let Classification::Drop(r) = class {
                prop_assert!(sw.same_slots(&warm), "{:?}", r);
                prop_assert!(out.is_empty());
                prop_assert_eq!(sw.counters().dropped(r), warm.counters().dropped(r) + 1);
            }
        }
    }
}

#[test]
fn every_reason_is_generated_for_every_size() {
    for payload in [PayloadSize::B128, PayloadSize::B256, PayloadSize::B512, PayloadSize::B1024] {
        for vlan in [None, Some(JobVlan { id: 4094, priority: 7 })] {
            let job = JobConfig { vlan, ..JobConfig::example(5, payload, 8) };
            let v = malformed_frames(&job, 42);
            for r in DropReason::ALL {
                // An untagged job takes any tag, so nothing is dropped as WrongVlan; stale_session depends on the session state.
                let possible = (vlan.is_some() || r != DropReason::WrongVlan)
                    && r != DropReason::StaleSession
                    && r != DropReason::LaneMismatch;
                assert_eq!(v.iter().any(|(x, _)| *x == r), possible, "{r:?} {vlan:?}");
            }
        }
    }
}
