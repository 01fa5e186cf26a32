//! The counters of docs/switch.md §4, 32 bits each (wrapping), readable by index.
//!
//! | index | counter |
//! |---|---|
//! | 0 | `frames_in` |
//! | 1 | `frames_out` |
//! | 2 | `contributions` |
//! | 3 | `duplicates` |
//! | 4 | `results_multicast` |
//! | 5 | `results_retransmitted` |
//! | 6 | `arp_replies` |
//! | 7 | `icmp_replies` |
//! | 8 | `truncated` |
//! | 9 | `wrong_dst_mac` |
//! | 10 | `wrong_vlan` |
//! | 11 | `not_ipv4_udp` |
//! | 12 | `ip_options` |
//! | 13 | `ip_checksum` |
//! | 14 | `bad_length` |
//! | 15 | `ip_fragment` |
//! | 16 | `wrong_dst_ip` |
//! | 17 | `bad_port` |
//! | 18 | `unknown_source` |
//! | 19 | `bad_msg_type` |
//! | 20 | `bad_size` |
//! | 21 | `bad_slot` |
//! | 22 | `wrong_src_port` |
//! | 23 | `stale_session` |
//! | 24 | tree: `partials_up` (docs/switch.md §6) |
//! | 25 | tree: `partials_resent` |
//! | 26 | tree: `parent_results` |
//! | 27 | tree: `parent_results_stale` |
//! | 29 | `ip_checksum_zero` (docs/switch.md §1 6.4; 28 is the switch's `unknown_source_job` on a [`crate::multi_core::MultiCore`]) |
//!
//! Timing: events are registered first and counted one rising edge after the one where they are
//! high (`pending` is high meanwhile); several different events may come in one cycle. `bucket` files a received frame under `bucket_index`
//! (0..=15 the drop reasons, 16 contributions, 17 duplicates, 18 ARP replies, 19 ICMP replies)
//! and counts it in `frames_in`. `tree` counts the tree counter 24 + `tree_index` (no `frames_in`). `read.data` is combinational from `read.address`.
//! `ip_checksum_zero` counts a frame the parser let through by the zero-checksum exception
//! (`checksum_zero`, with the event) when it is handled: filed as a contribution, a duplicate
//! or a reply, or a parent result (tree events 2 and 3); not when it is dropped later.
//! `clear` zeroes every counter at its rising edge, the events of the cycle before it included
//! (they would be counted at that edge).

use rust_hdl::prelude::*;
use spotagg_driver::counters::{Counters as CounterWords, DropReason};

/// Counter index (read address) of `ip_checksum_zero`.
pub const IP_CHECKSUM_ZERO_COUNTER: u8 = 29;

/// `bucket_index` of a contribution (the indices below it are the drop reasons).
pub const BUCKET_CONTRIBUTION: u64 = DropReason::CORE_COUNT as u64;
/// `bucket_index` of a duplicate contribution.
pub const BUCKET_DUPLICATE: u64 = BUCKET_CONTRIBUTION + 1;
/// `bucket_index` of an answered ARP request.
pub const BUCKET_ARP_REPLY: u64 = BUCKET_CONTRIBUTION + 2;
/// `bucket_index` of an answered ICMP echo request.
pub const BUCKET_ICMP_REPLY: u64 = BUCKET_CONTRIBUTION + 3;

// The match on `bucket_index` below is written for these values; so is the counter count.
const _: () = assert!(DropReason::CORE_COUNT == 16 && CounterWords::WORDS == 24 && BUCKET_ICMP_REPLY < 32);

interface_pair! {
    /// A counter read port, reading end: `data` is the counter `address` names (combinationally
    /// for the core's [`Counters`]).
    pub struct CounterPort<const A: usize> join "CounterPortDriver";
    /// A counter read port, addressing end (the control link).
    pub struct CounterPortDriver join "CounterPort";
    {
        /// Counter index.
        address: In Bits<A>,
        /// Counter value.
        data: Out Bits<32>,
    }
}

interface_pair! {
    /// The aggregator's events, the counters' end.
    pub struct CounterEvents join "CounterEventSource";
    /// The aggregator's events, the aggregator's end.
    pub struct CounterEventSource join "CounterEvents";
    {
        /// A received frame is filed.
        bucket: In Bit,
        /// Where it is filed.
        bucket_index: In Bits<5>,
        /// Result frames of a completed round are queued.
        multicast: In Bit,
        /// A result frame is queued for a retransmitting worker.
        retransmit: In Bit,
        /// A tree event (docs/switch.md §6): counter 24 + `tree_index`.
        tree: In Bit,
        /// Which tree counter (0 partials up, 1 partials resent, 2 parent results, 3 stale ones).
        tree_index: In Bits<2>,
        /// The frame of this cycle's event came through the zero-checksum exception.
        checksum_zero: In Bit,
    }
}

/// Counter bank.
#[derive(LogicBlock, Default)]
pub struct Counters {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Zero every counter.
    pub clear: Signal<In, Bit>,
    /// The aggregator's events.
    pub events: CounterEvents,
    /// How many (n).
    pub multicast_count: Signal<In, Bits<6>>,
    /// A frame left the core.
    pub frame_out: Signal<In, Bit>,
    /// The counters, read by index.
    pub read: CounterPort<5>,
    /// Registered events not counted yet.
    pub pending: Signal<Out, Bit>,
    r_bucket: DFF<Bit>,
    r_index: DFF<Bits<5>>,
    r_multicast: DFF<Bit>,
    r_count: DFF<Bits<6>>,
    r_retransmit: DFF<Bit>,
    r_frame_out: DFF<Bit>,
    r_tree: DFF<Bit>,
    r_tree_index: DFF<Bits<2>>,
    r_zck: DFF<Bit>,
    /// The counters, by index (24..28 the tree counters; 28 is `ip_checksum_zero`, read at
    /// address 29).
    c: [DFF<Bits<32>>; 29],
    group0: Signal<Local, Bits<32>>,
    group1: Signal<Local, Bits<32>>,
    group2: Signal<Local, Bits<32>>,
    group3: Signal<Local, Bits<32>>,
}

impl Logic for Counters {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            r_bucket,
            r_index,
            r_multicast,
            r_count,
            r_retransmit,
            r_frame_out,
            r_tree,
            r_tree_index,
            r_zck
        );
        for i in 0..29 {
            self.c[i].clock.next = self.clock.val();
            self.c[i].d.next = self.c[i].q.val();
        }
        self.r_bucket.d.next = self.events.bucket.val();
        self.r_index.d.next = self.events.bucket_index.val();
        self.r_multicast.d.next = self.events.multicast.val();
        self.r_count.d.next = self.multicast_count.val();
        self.r_retransmit.d.next = self.events.retransmit.val();
        self.r_frame_out.d.next = self.frame_out.val();
        self.r_tree.d.next = self.events.tree.val();
        self.r_tree_index.d.next = self.events.tree_index.val();
        self.r_zck.d.next = self.events.checksum_zero.val();
        // Handled (docs/switch.md §1 6.4): a contribution, a duplicate, an ARP or echo reply, or
        // a parent result.
        if self.r_zck.q.val()
            & ((self.r_bucket.q.val() & self.r_index.q.val().get_bit(4))
                | (self.r_tree.q.val() & self.r_tree_index.q.val().get_bit(1)))
        {
            self.c[28].d.next = self.c[28].q.val() + 1;
        }
        self.pending.next = self.r_bucket.q.val()
            | self.r_multicast.q.val()
            | self.r_retransmit.q.val()
            | self.r_frame_out.q.val()
            | self.r_tree.q.val();
        if self.r_tree.q.val() {
            for i in 0..4 {
                if self.r_tree_index.q.val().index() == i {
                    self.c[24 + i].d.next = self.c[24 + i].q.val() + 1;
                }
            }
        }
        if self.r_bucket.q.val() {
            self.c[0].d.next = self.c[0].q.val() + 1;
            // The drop reasons 0..=15 are counters 8..=23.
            for i in 0..16 {
                if self.r_index.q.val().index() == i {
                    self.c[8 + i].d.next = self.c[8 + i].q.val() + 1;
                }
            }
            match self.r_index.q.val().index() {
                16 => {
                    self.c[2].d.next = self.c[2].q.val() + 1;
                }
                17 => {
                    self.c[3].d.next = self.c[3].q.val() + 1;
                }
                18 => {
                    self.c[6].d.next = self.c[6].q.val() + 1;
                }
                19 => {
                    self.c[7].d.next = self.c[7].q.val() + 1;
                }
                _ => {}
            }
        }
        if self.r_frame_out.q.val() {
            self.c[1].d.next = self.c[1].q.val() + 1;
        }
        if self.r_multicast.q.val() {
            self.c[4].d.next = self.c[4].q.val() + bit_cast::<32, 6>(self.r_count.q.val());
        }
        if self.r_retransmit.q.val() {
            self.c[5].d.next = self.c[5].q.val() + 1;
        }
        if self.clear.val() {
            for i in 0..29 {
                self.c[i].d.next = 0.into();
            }
        }
        // The read mux in two levels: three 8:1 groups and a 4:1 (tree) by the low address bits, then a 4:1
        // by the high bits (addresses above 27 read 0). A match, not a loop of ifs: Yosys makes
        // a parallel mux of a case and a priority chain of the ifs (244 LUT4 more).
        self.group0.next = self.c[0].q.val();
        self.group1.next = self.c[8].q.val();
        self.group2.next = self.c[16].q.val();
        self.group3.next = 0.into();
        match self.read.address.val().get_bits::<3>(0).index() {
            0 => {
                self.group3.next = self.c[24].q.val();
            }
            1 => {
                self.group3.next = self.c[25].q.val();
            }
            2 => {
                self.group3.next = self.c[26].q.val();
            }
            3 => {
                self.group3.next = self.c[27].q.val();
            }
            5 => {
                self.group3.next = self.c[28].q.val();
            }
            _ => {}
        }
        match self.read.address.val().get_bits::<3>(0).index() {
            0 => {
                self.group0.next = self.c[0].q.val();
                self.group1.next = self.c[8].q.val();
                self.group2.next = self.c[16].q.val();
            }
            1 => {
                self.group0.next = self.c[1].q.val();
                self.group1.next = self.c[9].q.val();
                self.group2.next = self.c[17].q.val();
            }
            2 => {
                self.group0.next = self.c[2].q.val();
                self.group1.next = self.c[10].q.val();
                self.group2.next = self.c[18].q.val();
            }
            3 => {
                self.group0.next = self.c[3].q.val();
                self.group1.next = self.c[11].q.val();
                self.group2.next = self.c[19].q.val();
            }
            4 => {
                self.group0.next = self.c[4].q.val();
                self.group1.next = self.c[12].q.val();
                self.group2.next = self.c[20].q.val();
            }
            5 => {
                self.group0.next = self.c[5].q.val();
                self.group1.next = self.c[13].q.val();
                self.group2.next = self.c[21].q.val();
            }
            6 => {
                self.group0.next = self.c[6].q.val();
                self.group1.next = self.c[14].q.val();
                self.group2.next = self.c[22].q.val();
            }
            _ => {
                self.group0.next = self.c[7].q.val();
                self.group1.next = self.c[15].q.val();
                self.group2.next = self.c[23].q.val();
            }
        }
        match self.read.address.val().get_bits::<2>(3).index() {
            0 => {
                self.read.data.next = self.group0.val();
            }
            1 => {
                self.read.data.next = self.group1.val();
            }
            2 => {
                self.read.data.next = self.group2.val();
            }
            _ => {
                self.read.data.next = self.group3.val();
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::step::settle;

    /// One cycle's events: the bucket index filed, the multicast count, a retransmission, a
    /// frame out, the tree index.
    #[derive(Clone, Copy, Debug, Default)]
    struct Events {
        bucket: Option<usize>,
        multicast: Option<u32>,
        retransmit: bool,
        frame_out: bool,
        tree: Option<usize>,
    }

    impl Events {
        /// Each event with probability 1 in `one_in`, indices and counts uniform.
        fn random(rng: &mut Rng, one_in: u64) -> Self {
            Events {
                bucket: rng.one_in(one_in).then(|| rng.below(BUCKET_ICMP_REPLY + 1) as usize),
                multicast: rng.one_in(one_in).then(|| rng.below(64) as u32),
                retransmit: rng.one_in(one_in),
                frame_out: rng.one_in(one_in),
                tree: rng.one_in(one_in).then(|| rng.below(4) as usize),
            }
        }

        fn any(&self) -> bool {
            self.bucket.is_some()
                || self.multicast.is_some()
                || self.retransmit
                || self.frame_out
                || self.tree.is_some()
        }

        /// The contract's table: counts the events into `m`.
        fn count(&self, m: &mut [u32; 28]) {
            let mut add = |i: usize, n: u32| m[i] = m[i].wrapping_add(n);
            if let Some(i) = self.bucket {
                add(0, 1);
                add(
                    match i {
                        0..=15 => 8 + i,
                        16 => 2,
                        17 => 3,
                        18 => 6,
                        19 => 7,
                        _ => unreachable!(),
                    },
                    1,
                );
            }
            if self.frame_out {
                add(1, 1);
            }
            if let Some(n) = self.multicast {
                add(4, n);
            }
            if self.retransmit {
                add(5, 1);
            }
            if let Some(i) = self.tree {
                add(24 + i, 1);
            }
        }

        /// Presents the events (the index and count inputs of absent ones random).
        fn drive(&self, b: &mut Counters, rng: &mut Rng) {
            b.events.bucket.next = self.bucket.is_some();
            b.events.bucket_index.next = self.bucket.map_or(rng.below(32), |i| i as u64).into();
            b.events.multicast.next = self.multicast.is_some();
            b.multicast_count.next = self.multicast.map_or(rng.below(64), u64::from).into();
            b.events.retransmit.next = self.retransmit;
            b.frame_out.next = self.frame_out;
            b.events.tree.next = self.tree.is_some();
            b.events.tree_index.next = self.tree.map_or(rng.below(4), |i| i as u64).into();
        }
    }

    /// The model's counter at read address `a` (addresses above 27 read 0).
    fn model_read(m: &[u32; 28], a: usize) -> u32 {
        m.get(a).copied().unwrap_or(0)
    }

    /// Runs `cycles` cycles of random events (each with probability 1 in `one_in`) and a
    /// `clear` one cycle in `clear_one_in` (0: never) from counters holding `preload`, reading
    /// a random address every cycle, then two quiet cycles and every address. Each cycle
    /// `read.data` (combinational) must be the model's counter and `pending` high iff the
    /// previous cycle had an event: the model counts a cycle's events at the second rising
    /// edge after them, and a clear zeroes every counter at its edge (the events counted at
    /// that edge with them). Returns the model's counters at the end and how many events each
    /// counted in all.
    fn run(seed: u64, cycles: u64, one_in: u64, clear_one_in: u64, preload: [u32; 28]) -> ([u32; 28], [u32; 28]) {
        let mut rng = Rng(seed);
        let mut b = Counters::default();
        b.connect_all();
        for (c, &v) in b.c.iter_mut().zip(&preload) {
            c.q.next = u64::from(v).into();
        }
        // The counters as read this cycle, and the events registered at the last edge.
        let mut m = preload;
        let mut registered = Events::default();
        let mut events = [0; 28];
        let quiet = Events::default();
        let mut clears = 0;
        for c in 0..cycles + 2 + 32 {
            let e = if c < cycles { Events::random(&mut rng, one_in) } else { quiet };
            let clear = c < cycles && clear_one_in > 0 && rng.one_in(clear_one_in);
            let address = if c < cycles + 2 { rng.below(32) as usize } else { (c - cycles - 2) as usize };
            e.drive(&mut b, &mut rng);
            b.clear.next = clear;
            b.read.address.next = (address as u64).into();
            settle(&mut b);
            assert_eq!(
                b.read.data.val().index() as u32,
                model_read(&m, address),
                "cycle {c}: counter {address} (events registered {registered:?})"
            );
            assert_eq!(b.pending.val(), registered.any(), "cycle {c}: pending (events registered {registered:?})");
            tick!(&mut b);
            if clear {
                m = [0; 28];
                clears += 1;
            } else {
                registered.count(&mut m);
            }
            Events { multicast: e.multicast.map(|_| 1), ..e }.count(&mut events);
            registered = e;
        }
        assert!(clear_one_in == 0 || clears > 2, "{clears} clears");
        (m, events)
    }

    /// 20000 cycles of random events (each kind in half the cycles, so usually several in one
    /// cycle) and a clear every 2000 cycles or so, from power-up: every counter read each cycle
    /// at random and all at the end is the contract's.
    #[test]
    fn counts_follow_the_model_of_the_contract() {
        let (_, events) = run(0x0c0f_fee0_1234_5678, 20_000, 2, 2000, [0; 28]);
        assert!(events.iter().all(|&n| n > 100), "a counter counted few events: {events:?}");
    }

    /// Counters preloaded (through their registers) a few counts below 2^32, then 1000 cycles of
    /// random events: every one wraps to the contract's value (32 bits, wrapping; the multicast
    /// count adds up to 63 at a time).
    #[test]
    fn counters_wrap_at_32_bits() {
        let mut rng = Rng(0x7777_0000_abcd_0001);
        let preload: [u32; 28] = std::array::from_fn(|i| u32::MAX - rng.below(if i == 4 { 200 } else { 3 }) as u32);
        let (m, _) = run(0x5eed_0000_0000_0042, 1000, 2, 0, preload);
        for (i, (&v, &p)) in m.iter().zip(&preload).enumerate() {
            assert!(v < p, "counter {i} did not wrap: {p:#x} then {v:#x}");
        }
    }
}
