//! Seeded traces for a switch that is a leaf of a parent (docs/switch.md §6), shared by the
//! differential tests (`rtl_vs_reference`, `three_way`).
//!
//! The workers' frames are those of `trace::generate` (rounds, duplicates, reordering,
//! malformed frames, ARP, ping). Between them the generator adds what the parent link brings,
//! driven by the reference switch's own output (the engines under test must send the same): for
//! each partial frame the reference sends up, a parent result after 0..4 frames (sometimes none,
//! sometimes a second, stale copy, from the parent's port or another), and right after the
//! partial, retransmissions to the waiting round from rank 0 (a partial resent) and from another
//! rank (nothing sent). At the end: the parent results still due, stale results to rounds that
//! do not wait, and malformed frames from the parent's address.

use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use spotagg_driver::config::ParentConfig;
use spotagg_driver::engine::Engine;
use spotagg_driver::wire::layout::{IP_OFFSET, L4_OFFSET};
use spotagg_driver::wire::{Ipv4Packet, MacAddr, PayloadSize};
use spotagg_driver::JobConfig;
use spotagg_sim::trace::{self, TraceSpec};
use spotagg_spec::reference::{classify, Classification, RefSwitch};
use std::collections::HashMap;
use std::net::Ipv4Addr;

/// The parent switch of every tree trace.
pub fn parent() -> ParentConfig {
    ParentConfig {
        ip: Ipv4Addr::new(192, 0, 2, 200),
        mac: MacAddr([0x02, 0x00, 0x5a, 0x00, 0x0f, 0x01]),
        port: 0xBEE5,
        rank: 3,
    }
}

/// What a tree trace holds, counted as it was generated.
#[derive(Debug, Default, Clone, Copy)]
pub struct TreeMix {
    /// Parent results added (fresh or stale).
    pub parent_results: usize,
    /// Retransmissions to a waiting round added, from rank 0.
    pub rank0_resends: usize,
    /// Retransmissions to a waiting round added, from another rank.
    pub other_resends: usize,
    /// Malformed frames from the parent's address.
    pub parent_malformed: usize,
}

/// The parent's result for the partial frame `partial`: to the leaf from the parent, the leaf's
/// port as destination, the partial's SwitchML header, other exponents and a larger sum.
fn parent_result(job: &JobConfig, partial: &[u8], rng: &mut ChaCha8Rng, from_port: u16) -> Vec<u8> {
    let p = job.parent.expect("tree job");
    let mut f = partial.to_vec();
    f[0..6].copy_from_slice(&job.switch_mac.0);
    f[6..12].copy_from_slice(&p.mac.0);
    f[26..30].copy_from_slice(&p.ip.octets());
    f[30..34].copy_from_slice(&job.switch_ip.octets());
    Ipv4Packet::new_unchecked(&mut f[IP_OFFSET..L4_OFFSET]).fill_checksum();
    let leaf_port = [partial[34], partial[35]];
    f[34..36].copy_from_slice(&from_port.to_be_bytes());
    f[36..38].copy_from_slice(&leaf_port);
    f[50] = f[50].wrapping_add(rng.gen_range(0..3));
    f[51] = rng.gen();
    for w in f[52..].chunks_exact_mut(4) {
        let v = i32::from_be_bytes([w[0], w[1], w[2], w[3]]).wrapping_add(rng.gen_range(-1000..1000));
        w.copy_from_slice(&v.to_be_bytes());
    }
    f
}

/// A tree trace: `trace::generate` of these parameters with `trouble`, the job with [`parent`],
/// and the parent link's frames woven in (module doc).
pub fn tree_trace(
    n: usize,
    payload: PayloadSize,
    slots: u16,
    chunks: usize,
    seed: u64,
    trouble: f64,
) -> (JobConfig, Vec<Vec<u8>>, TreeMix) {
    let spec = TraceSpec::new(n, payload, slots, chunks, seed).troubled(trouble);
    let t = trace::generate(&spec);
    let job = JobConfig { parent: Some(parent()), ..t.job.clone() };
    let p = parent();
    let mut rng = ChaCha8Rng::seed_from_u64(seed ^ 0x7ee);
    let mut model = RefSwitch::new(job.clone());
    let mut frames = vec![];
    let mut mix = TreeMix::default();
    // The last contribution of each (slot, set, rank) seen, to retransmit.
    let mut sent: HashMap<(u16, u8, usize), Vec<u8>> = HashMap::new();
    // Parent results due at a frame index.
    let mut due: Vec<(usize, Vec<u8>)> = vec![];
    let mut partials: Vec<Vec<u8>> = vec![];
    let mut queue: std::collections::VecDeque<Vec<u8>> = t.frames.into_iter().collect();
    let mut injected: std::collections::VecDeque<(Vec<u8>, bool)> = Default::default();
    loop {
        let (f, may_resend) = if let Some(x) = injected.pop_front() {
            x
        } else if let Some(i) = due.iter().position(|(at, _)| *at <= frames.len()) {
            (due.remove(i).1, false)
        } else if let Some(f) = queue.pop_front() {
            (f, true)
        } else if !due.is_empty() {
            (due.remove(0).1, false)
        } else {
            break;
        };
        if let Classification::Contribution { rank, pool } = classify(&job, &f) {
            sent.insert((pool.slot, pool.set, rank), f.clone());
        }
        let mut out = vec![];
        model.process(&f, &mut out);
        frames.push(f);
        for o in out.into_iter().filter(|o| o[30..34] == p.ip.octets()) {
            let pool = u16::from_be_bytes([o[48], o[49]]);
            let (slot, set) = (pool & 0x7fff, (pool >> 15) as u8);
            partials.push(o.clone());
            if may_resend {
                if rng.gen_bool(0.35) {
                    if let Some(r0) = sent.get(&(slot, set, 0)) {
                        injected.push_back((r0.clone(), false));
                        mix.rank0_resends += 1;
                    }
                }
                if n > 1 && rng.gen_bool(0.35) {
                    if let Some(r) = sent.get(&(slot, set, rng.gen_range(1..n))) {
                        injected.push_back((r.clone(), false));
                        mix.other_resends += 1;
                    }
                }
            }
            let copies = if rng.gen_bool(0.1) {
                0
            } else if rng.gen_bool(0.25) {
                2
            } else {
                1
            };
            for _ in 0..copies {
                let port = if rng.gen_bool(0.8) { p.port } else { 0xBEE9 };
                let r = parent_result(&job, &o, &mut rng, port);
                due.push((frames.len() + rng.gen_range(0..5), r));
                mix.parent_results += 1;
            }
        }
    }
    // Stale results (their rounds no longer wait) and malformed frames from the parent.
    for o in partials.iter().take(3) {
        frames.push(parent_result(&job, o, &mut rng, p.port));
        mix.parent_results += 1;
    }
    if let Some(o) = partials.first() {
        let good = parent_result(&job, o, &mut rng, p.port);
        let mut bad_size = good.clone();
        bad_size[42] ^= 0x01;
        let mut bad_slot = good.clone();
        bad_slot[49] = 0x7f;
        bad_slot[48] = 0x7f;
        let short = good[..good.len() - 4].to_vec();
        let mut bad_msg = good;
        bad_msg[42] = (bad_msg[42] & 0x0f) | 0x20;
        for m in [bad_size, bad_slot, short, bad_msg] {
            frames.push(m);
            mix.parent_malformed += 1;
        }
    }
    (job, frames, mix)
}
