//! Several jobs on one switch in the HDL (docs/switch.md §8): the rust-hdl `MultiCore` (the job
//! router and one core per job) against the reference `MultiSwitch`, frame for frame, on two
//! seeded troubled traces interleaved at random, with frames of unknown (source, job) pairs
//! mixed in. Each job's counters, the switch's total and the unknown count must be the
//! reference's, and every frame sent the same.

use spotagg_driver::engine::Engine;
use spotagg_driver::wire::PayloadSize;
use spotagg_driver::{DropReason, JobVlan};
use spotagg_hdl::CoreConfig;
use spotagg_sim::rtl::RtlEngine;
use spotagg_sim::trace::{self, TraceSpec};
use spotagg_spec::multi_job::{JobPlacement, MultiSwitch};

fn hex(f: &[u8]) -> String {
    f.iter().map(|b| format!("{b:02x}")).collect::<Vec<_>>().join("")
}

fn compare(a: &TraceSpec, b: &TraceSpec, seed: u64, what: &str) -> (MultiSwitch, RtlEngine) {
    let t = trace::two_jobs(a, b, seed);
    let (ja, jb, frames, unknown) = (t.a.job, t.b.job, t.frames, t.unknown);
    assert!(unknown > 0, "{what}: the trace has no unknown pair");
    let mut model = MultiSwitch::new(
        vec![
            JobPlacement { job: ja.clone(), slot_base: 0 },
            JobPlacement { job: jb.clone(), slot_base: u32::from(ja.slots) },
        ],
        u32::from(ja.slots + jb.slots),
    )
    .expect("two jobs on one switch");
    let slots = usize::from(ja.slots.max(jb.slots));
    let core = CoreConfig::new(4, slots, 1024, 32).unwrap();
    let mut rtl = RtlEngine::multi(&[ja.clone(), jb.clone()], core).expect("two jobs in the hardware");
    for (i, f) in frames.iter().enumerate() {
        let (mut want, mut got) = (vec![], vec![]);
        rtl.process(f, &mut got);
        model.process(f, &mut want);
        if want != got {
            panic!(
                "{what}: frame {i} ({} bytes) in = {}\nmodel sent {:?}\nrtl sent   {:?}",
                f.len(),
                hex(f),
                want.iter().map(|x| hex(x)).collect::<Vec<_>>(),
                got.iter().map(|x| hex(x)).collect::<Vec<_>>()
            );
        }
    }
    for j in 0..2 {
        assert_eq!(rtl.job_counters(j), model.job(j).counters(), "{what}: job {j}'s counters");
    }
    assert_eq!(rtl.unknown_source_job(), model.unknown_source_job(), "{what}: unknown (source, job) pairs");
    assert!(model.unknown_source_job() >= unknown as u64, "{what}: the unknown pairs were counted");
    assert_eq!(rtl.counters(), model.counters(), "{what}: the switch's total");
    assert!(rtl.counters().is_consistent());
    (model, rtl)
}

#[test]
fn two_jobs_match_the_reference_frame_for_frame() {
    for (seed, pa, pb) in [(1u64, PayloadSize::B256, PayloadSize::B1024), (2, PayloadSize::B1024, PayloadSize::B256)] {
        let a = TraceSpec::new(3, pa, 4, 6, seed).troubled(0.1);
        let b = TraceSpec::new(2, pb, 3, 6, seed + 100).troubled(0.1).other_job(0xBEE1, 50);
        let (model, rtl) = compare(&a, &b, seed, &format!("seed {seed}"));
        let (c0, c1) = (rtl.job_counters(0), rtl.job_counters(1));
        // Both jobs aggregated: their rounds completed, each in its own core.
        assert!(c0.contributions > 0 && c1.contributions > 0, "{c0:?} {c1:?}");
        assert!(c0.results_multicast > 0 && c1.results_multicast > 0);
        // Every non-SwitchML frame (ARP, ping, malformed before the source) is job 0's.
        assert_eq!(c1.arp_replies, 0);
        println!(
            "seed {seed}: job 0 {} contributions / {} multicast, job 1 {} / {}, unknown {}",
            c0.contributions,
            c0.results_multicast,
            c1.contributions,
            c1.results_multicast,
            model.unknown_source_job()
        );
    }
}

/// A tagged job beside an untagged one (docs/switch.md §8: the router looks past one 802.1Q
/// tag, each job checks its VLAN): job b on VLAN 7 with its troubled trace (frames without the
/// tag, on another VID, among them), and the other way round.
#[test]
fn a_tagged_job_and_an_untagged_one_match_the_reference() {
    let vlan = JobVlan { id: 7, priority: 3 };
    for (seed, tag_a) in [(5u64, false), (6, true)] {
        let mut a = TraceSpec::new(3, PayloadSize::B256, 4, 6, seed).troubled(0.1);
        let mut b = TraceSpec::new(2, PayloadSize::B256, 3, 6, seed + 100).troubled(0.1).other_job(0xBEE1, 50);
        if tag_a {
            a = a.tagged(vlan);
        } else {
            b = b.tagged(vlan);
        }
        let (_, rtl) = compare(&a, &b, seed, &format!("seed {seed}, job {} tagged", u8::from(!tag_a)));
        let tagged = rtl.job_counters(usize::from(!tag_a));
        assert!(tagged.contributions > 0 && tagged.results_multicast > 0, "the tagged job aggregated: {tagged:?}");
    }
}

#[test]
fn a_job_in_the_hardware_never_sees_the_other_jobs_frames() {
    // The same host in both jobs (job b's rank 0 is job a's rank 0's address) sends on each
    // job's port: each frame reaches only its job. Job b alone has slot 5.
    let a = TraceSpec::new(2, PayloadSize::B256, 2, 1, 7);
    let b = TraceSpec::new(2, PayloadSize::B256, 6, 1, 8).other_job(0xBEE1, 10);
    let (ja, jb) = (a.job(), b.job());
    let core = CoreConfig::new(4, 6, 256, 32).unwrap();
    let mut rtl = RtlEngine::multi(&[ja.clone(), jb.clone()], core).unwrap();
    let mut out = vec![];
    rtl.process(&trace::contribution_from_port(&jb, 0, 0xBEE1, 5), &mut out);
    rtl.process(&trace::contribution_from_port(&ja, 0, 0xBEE0, 5), &mut out);
    assert!(out.is_empty());
    let (c0, c1) = (rtl.job_counters(0), rtl.job_counters(1));
    assert_eq!((c0.frames_in, c0.drops[DropReason::BadSlot.index()], c0.contributions), (1, 1, 0), "{c0:?}");
    assert_eq!((c1.frames_in, c1.contributions), (1, 1), "{c1:?}");
    assert_eq!(rtl.unknown_source_job(), 0);
    // Rank 1 of job b from job a's port: its address is job a's rank 1, so it is job a's.
    rtl.process(&trace::contribution_from_port(&jb, 1, 0xBEE0, 1), &mut out);
    assert_eq!(rtl.job_counters(0).contributions, 1);
    // From a port of neither job: unknown, counted by the router, in no job.
    rtl.process(&trace::contribution_from_port(&jb, 1, 0xBEE5, 1), &mut out);
    assert_eq!(rtl.unknown_source_job(), 1);
    assert_eq!(rtl.job_counters(0).frames_in + rtl.job_counters(1).frames_in, 3);
    assert!(RtlEngine::multi(&[ja.clone(), jb.clone(), ja], core).is_err());
}
