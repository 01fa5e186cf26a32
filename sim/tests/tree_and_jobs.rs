//! docs/switch.md §6–§8 on the reference switch, frame by frame: a leaf's partial sum, its resend
//! on a worker retransmission, the parent's result stored and multicast; straggler counters;
//! several jobs on one switch, isolated, an unknown (source, job) dropped and counted.

use spotagg_driver::config::ParentConfig;
use spotagg_driver::counters::DropReason;
use spotagg_driver::wire::frame::{decapsulate, encapsulate, Endpoint};
use spotagg_driver::wire::{Ipv4Addr, MacAddr, PayloadSize, PoolIndex, SwitchmlPacket, SwitchmlRepr};
use spotagg_driver::{Engine, JobConfig};
use spotagg_spec::multi_job::{JobPlacement, MultiSwitch};
use spotagg_spec::reference::RefSwitch;

const PARENT_IP: Ipv4Addr = Ipv4Addr::new(192, 0, 2, 100);
const PARENT_MAC: MacAddr = MacAddr([0x02, 0x00, 0x5a, 0x00, 0x00, 0x64]);

fn leaf_job() -> JobConfig {
    let mut j = JobConfig::example(2, PayloadSize::B256, 4);
    j.parent = Some(ParentConfig { ip: PARENT_IP, mac: PARENT_MAC, port: 0xbee3, rank: 1 });
    j.tree_workers = 6;
    j
}

fn message(job_number: u8, tsi: u32, slot: u16, set: u8, e: (i8, i8), values: &[i32]) -> Vec<u8> {
    let mut m = vec![0u8; 10 + 256];
    let mut p = SwitchmlPacket::new_unchecked(&mut m[..]);
    SwitchmlRepr { msg_type: 1, size_code: 1, job: job_number, tsi, pool: PoolIndex { slot, set }, e0: e.0, e1: e.1 }
        .emit(&mut p);
    for (i, v) in values.iter().enumerate() {
        p.set_element(i, *v);
    }
    m
}

fn frame(job: &JobConfig, from: (Ipv4Addr, MacAddr, u16), msg: &[u8]) -> Vec<u8> {
    let mut f = Vec::new();
    let sw = Endpoint { mac: job.switch_mac, ip: job.switch_ip, port: job.switch_port };
    encapsulate(Endpoint { ip: from.0, mac: from.1, port: from.2 }, sw, msg, &mut f);
    f
}

fn worker(job: &JobConfig, r: usize) -> (Ipv4Addr, MacAddr, u16) {
    (job.workers[r].ip, job.workers[r].mac, job.worker_port)
}

fn run(sw: &mut dyn Engine, f: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    sw.process(f, &mut out);
    assert!(sw.counters().is_consistent());
    out
}

fn elements(f: &[u8]) -> Vec<i32> {
    let d = decapsulate(f).unwrap();
    SwitchmlPacket::new_checked(d.payload).unwrap().elements().collect()
}

#[test]
fn a_leaf_sends_its_partial_up_resends_it_and_multicasts_the_parents_result() {
    let job = leaf_job();
    let mut sw = RefSwitch::new(job.clone());
    let a: Vec<i32> = (0..64).map(|i| i * 3 - 50).collect();
    let b: Vec<i32> = (0..64).map(|i| i32::MAX - i).collect();
    let c0 = frame(&job, worker(&job, 0), &message(7, 0x11, 2, 1, (3, -2), &a));
    let c1 = frame(&job, worker(&job, 1), &message(7, 0x11, 2, 1, (-4, 5), &b));
    sw.set_clock(1000);
    assert!(run(&mut sw, &c0).is_empty());
    sw.set_clock(1250);
    // The round completes: one partial frame to the parent, nothing to the workers.
    let up = run(&mut sw, &c1);
    assert_eq!(up.len(), 1);
    let d = decapsulate(&up[0]).unwrap();
    assert_eq!((d.dst.ip, d.dst.mac, d.dst.port), (PARENT_IP, PARENT_MAC, 0xbee3));
    assert_eq!((d.src.ip, d.src.mac, d.src.port), (job.switch_ip, job.switch_mac, job.switch_port));
    let r = SwitchmlRepr::parse(&SwitchmlPacket::new_checked(d.payload).unwrap());
    assert_eq!((r.msg_type, r.job, r.tsi, r.pool, r.e0, r.e1), (1, 7, 0x11, PoolIndex { slot: 2, set: 1 }, 3, 5));
    let sum: Vec<i32> = a.iter().zip(&b).map(|(x, y)| x.wrapping_add(*y)).collect();
    assert_eq!(elements(&up[0]), sum);
    // Retransmissions while the round waits: rank 1's is only counted; rank 0's sends the same
    // partial again, upward (§6: one resend a retransmission round, not n).
    assert!(run(&mut sw, &c1).is_empty());
    let again = run(&mut sw, &c0);
    assert_eq!(again.len(), 1);
    assert_eq!(elements(&again[0]), sum);
    assert_eq!(decapsulate(&again[0]).unwrap().dst.ip, PARENT_IP);
    // A frame from the parent is its result: stored and multicast in rank order.
    let total: Vec<i32> = sum.iter().map(|x| x.wrapping_mul(3)).collect();
    let parent = (PARENT_IP, PARENT_MAC, 0xbee3);
    let res = frame(&job, parent, &message(7, 0x11, 2, 1, (9, 8), &total));
    let down = run(&mut sw, &res);
    assert_eq!(down.len(), 2);
    for (rank, f) in down.iter().enumerate() {
        let d = decapsulate(f).unwrap();
        assert_eq!((d.dst.ip, d.dst.port, d.src.port), (job.workers[rank].ip, job.worker_port, job.switch_port));
        let r = SwitchmlRepr::parse(&SwitchmlPacket::new_checked(d.payload).unwrap());
        assert_eq!((r.tsi, r.e0, r.e1), (0x11, 9, 8));
        assert_eq!(elements(f), total);
    }
    // A second copy of the parent's result is stale; a worker's retransmission now gets the
    // stored (parent's) result, to it alone.
    assert!(run(&mut sw, &res).is_empty());
    let back = run(&mut sw, &c1);
    assert_eq!(back.len(), 1);
    assert_eq!(decapsulate(&back[0]).unwrap().dst.ip, job.workers[1].ip);
    assert_eq!(elements(&back[0]), total);
    let t = sw.tree_counters();
    assert_eq!((t.partials_up, t.partials_resent, t.parent_results, t.parent_results_stale), (1, 1, 1, 1));
    let c = sw.counters();
    // Parent frames are outside frames_in / frames_out (§6).
    assert_eq!((c.frames_in, c.contributions, c.duplicates), (5, 2, 3));
    assert_eq!((c.frames_out, c.results_multicast, c.results_retransmitted), (3, 2, 1));
    // Rank 1 was last, 250 µs behind rank 0.
    let s = sw.stragglers();
    assert_eq!((s[0].rounds_last, s[1].rounds_last, s[1].behind_us_total, s[1].behind_us_max), (0, 1, 250, 250));
}

#[test]
fn a_switch_without_parent_treats_the_parent_address_as_unknown() {
    let job = JobConfig::example(2, PayloadSize::B256, 4);
    let mut sw = RefSwitch::new(job.clone());
    let f = frame(&job, (PARENT_IP, PARENT_MAC, 0xbee0), &message(0, 1, 0, 0, (0, 0), &[1; 64]));
    assert!(run(&mut sw, &f).is_empty());
    assert_eq!(sw.counters().drops[DropReason::UnknownSource.index()], 1);
}

fn two_jobs() -> (JobConfig, JobConfig, MultiSwitch) {
    let a = JobConfig::example(2, PayloadSize::B256, 4);
    let mut b = JobConfig::example(3, PayloadSize::B256, 8);
    b.job_number = 5;
    // A host in two jobs sends each job's frames from that job's port (docs/switch.md §8).
    b.worker_port = a.worker_port + 1;
    // Job b's rank 0 is also job a's rank 1 (one host in two jobs); its other ranks are its own.
    b.workers[0] = a.workers[1];
    b.workers[1].ip = Ipv4Addr::new(192, 0, 2, 50);
    b.workers[2].ip = Ipv4Addr::new(192, 0, 2, 51);
    let sw = MultiSwitch::new(
        vec![JobPlacement { job: a.clone(), slot_base: 0 }, JobPlacement { job: b.clone(), slot_base: 4 }],
        12,
    )
    .unwrap();
    (a, b, sw)
}

#[test]
fn jobs_on_one_switch_are_isolated_and_unknown_pairs_are_counted() {
    let (a, b, mut sw) = two_jobs();
    // Job a round on slot 1 and a job b round on slot 1: the same pool index, separate slots.
    let fa: Vec<Vec<u8>> =
        (0..2).map(|r| frame(&a, worker(&a, r), &message(0, 9, 1, 0, (0, 0), &[r as i32 + 1; 64]))).collect();
    let fb: Vec<Vec<u8>> =
        (0..3).map(|r| frame(&b, worker(&b, r), &message(5, 9, 1, 0, (0, 0), &[10 * (r as i32 + 1); 64]))).collect();
    assert!(run(&mut sw, &fa[0]).is_empty());
    assert!(run(&mut sw, &fb[0]).is_empty());
    assert!(run(&mut sw, &fb[1]).is_empty());
    let ra = run(&mut sw, &fa[1]);
    assert_eq!(ra.len(), 2);
    assert!(ra.iter().all(|f| elements(f) == vec![3; 64]));
    let rb = run(&mut sw, &fb[2]);
    assert_eq!(rb.len(), 3);
    assert!(rb.iter().all(|f| elements(f) == vec![60; 64]));
    // Slot 6 is outside job a (S = 4) but inside job b (S = 8): each job checks its own S.
    let bad = frame(&a, worker(&a, 0), &message(0, 9, 6, 0, (0, 0), &[1; 64]));
    assert!(run(&mut sw, &bad).is_empty());
    assert!(run(&mut sw, &frame(&b, worker(&b, 1), &message(5, 9, 6, 0, (0, 0), &[1; 64]))).is_empty());
    // Unknown pairs: job a's rank 0 from job b's port (it is not in job b); a stranger from
    // job a's port. The job_number picks no job (docs/switch.md §8).
    let before = (sw.job(0).counters(), sw.job(1).counters());
    let (ip0, mac0, _) = worker(&a, 0);
    assert!(run(&mut sw, &frame(&a, (ip0, mac0, b.worker_port), &message(0, 9, 1, 1, (0, 0), &[1; 64]))).is_empty());
    let stranger = (Ipv4Addr::new(192, 0, 2, 99), MacAddr([2, 0, 0, 0, 0, 99]), 0xbee0);
    assert!(run(&mut sw, &frame(&a, stranger, &message(0, 9, 1, 1, (0, 0), &[1; 64]))).is_empty());
    assert_eq!((sw.job(0).counters(), sw.job(1).counters()), before);
    assert_eq!(sw.unknown_source_job(), 2);
    let c0 = sw.job(0).counters();
    let c1 = sw.job(1).counters();
    assert_eq!((c0.contributions, c0.results_multicast, c0.drops[DropReason::BadSlot.index()]), (2, 2, 1));
    assert_eq!((c1.contributions, c1.results_multicast), (4, 3));
    let total = sw.counters();
    assert_eq!(total.frames_in, c0.frames_in + c1.frames_in + 2);
    assert_eq!(total.drops[DropReason::UnknownSource.index()], 2);
    // ARP goes to the first job (the switch's shared address).
    let mut arp = vec![0xffu8; 6];
    arp.extend_from_slice(&[2, 0, 0, 0, 0, 1, 0x08, 0x06, 0, 1, 8, 0, 6, 4, 0, 1, 2, 0, 0, 0, 0, 1, 192, 0, 2, 10]);
    arp.extend_from_slice(&[0; 6]);
    arp.extend_from_slice(&[192, 0, 2, 1]);
    assert_eq!(run(&mut sw, &arp).len(), 1);
    assert_eq!(sw.job(0).counters().arp_replies, 1);
}

#[test]
fn bad_job_layouts_are_refused_with_the_reason() {
    let (a, b, _) = two_jobs();
    let e = MultiSwitch::new(
        vec![JobPlacement { job: a.clone(), slot_base: 0 }, JobPlacement { job: b.clone(), slot_base: 3 }],
        12,
    )
    .unwrap_err();
    assert!(e.0.contains("overlap") && e.0.contains("0..4") && e.0.contains("3..11"), "{e}");
    let e = MultiSwitch::new(vec![JobPlacement { job: b.clone(), slot_base: 8 }], 12).unwrap_err();
    assert!(e.0.contains("8..16") && e.0.contains("12 slots"), "{e}");
    let mut b0 = b.clone();
    b0.worker_port = a.worker_port;
    let e = MultiSwitch::new(
        vec![JobPlacement { job: a.clone(), slot_base: 0 }, JobPlacement { job: b0, slot_base: 4 }],
        12,
    )
    .unwrap_err();
    assert!(e.0.contains("worker ports 48864..48865") && e.0.contains("192.0.2.11"), "{e}");
    // Port ranges (SwitchML's worker threads): overlapping ones are refused, adjacent ones not.
    let mut a4 = a.clone();
    a4.worker_ports = 4;
    let mut b1 = b.clone();
    b1.worker_port = a.worker_port + 3;
    let e = MultiSwitch::new(
        vec![JobPlacement { job: a4.clone(), slot_base: 0 }, JobPlacement { job: b1.clone(), slot_base: 4 }],
        12,
    )
    .unwrap_err();
    assert!(e.0.contains("48864..48868 and 48867..48868"), "{e}");
    b1.worker_port = a.worker_port + 4;
    MultiSwitch::new(vec![JobPlacement { job: a4, slot_base: 0 }, JobPlacement { job: b1, slot_base: 4 }], 12).unwrap();
}
