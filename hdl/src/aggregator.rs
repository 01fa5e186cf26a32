//! The aggregator: takes the parser's decided frames one at a time and applies
//! docs/switch.md §2 and §3 — scoreboard update, read-modify-write of the slot memory through
//! the lane adders, and the reply frame written into the result builder's buffer.
//!
//! Timing contract and guarantees:
//! - A dropped frame takes one cycle. A contribution takes 3 cycles of scoreboard lookup (RAM
//!   read, registered lookup with the exponent maxima, commit), then
//!   its elements are issued one a cycle and each is written 6 cycles after its issue: frame
//!   buffer read (2 cycles, then 3 delay registers) and slot memory read (5 cycles) meet at the
//!   registered lane adder (1 cycle), whose output register drives the slot memory and the
//!   result builder's buffer. So k + 6 cycles of read-modify-write, and the pass ends only when
//!   the pipeline is empty (no read of a later frame can overtake a write of this one). Issue
//!   counters stop on an equality (they count up by one from below the end), not a comparison;
//!   the equality is itself registered one count ahead (`i_end`, `wi_last`, against end - 1 and
//!   end - 2 registers), and the frame buffer and result buffer addresses (`i + 13`, `wi + 13`)
//!   come from their own counters (`i_plus13`, `wi_plus13`), not from an adder.
//! - The sequencer's state is one-hot in flip-flops, and the issue counters' end indices are
//!   registered at the transition into a pass (`i_stop`, `wi_stop`).
//! - Only a valid contribution reaches the scoreboard and the slot memory, and only after the
//!   whole frame has been received and checked.
//! - The last contribution of a round writes the sums into the result builder's buffer during
//!   its read-modify-write (no second pass); a retransmission to a complete round copies the
//!   stored values through the same pipeline (k + 6 cycles). ICMP echo replies copy the frame
//!   body through it too.
//! - Header buffer writes are registered in two stages (they land two cycles after the word is
//!   chosen; the result builder reads a header word many cycles after its load); the
//!   reply checksums are computed from the descriptor in four registered steps, ready long
//!   before the header word that carries them (word 6 at the earliest, 7 cycles after the
//!   descriptor is loaded).
//! - A reply header is written in 10 to 13 cycles; then the result builder is loaded with the
//!   frame (rank range for results). When the result builder's buffer half is still busy, the
//!   aggregator waits (and so does the parser: back-pressure, never a drop).

use crate::counters::{BUCKET_ARP_REPLY, BUCKET_CONTRIBUTION, BUCKET_DUPLICATE, BUCKET_ICMP_REPLY};
use crate::frame_parser::{DescriptorSink, KIND_ARP, KIND_CONTRIBUTION};
use crate::result_builder::ReplyKind;
use rust_hdl::prelude::*;

/// The aggregation sequencer.
#[derive(LogicBlock)]
pub struct Aggregator {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The decided frame to apply.
    pub desc: DescriptorSink,
    /// Frame buffer read address.
    pub buf_read_address: Signal<Out, Bits<10>>,
    /// Frame buffer data.
    pub buf_read_data: Signal<In, Bits<32>>,
    /// Switch MAC, bytes 0..2.
    pub switch_mac_hi: Signal<In, Bits<16>>,
    /// Switch MAC, bytes 2..6.
    pub switch_mac_lo: Signal<In, Bits<32>>,
    /// Switch IPv4 address.
    pub switch_ip: Signal<In, Bits<32>>,
    /// Number of workers n.
    pub workers: Signal<In, Bits<6>>,
    /// Elements per payload k.
    pub payload_words: Signal<In, Bits<9>>,
    /// The scoreboard is being cleared: wait.
    pub clearing: Signal<In, Bit>,
    /// Scoreboard slot.
    pub sb_slot: Signal<Out, Bits<6>>,
    /// Scoreboard set.
    pub sb_set: Signal<Out, Bit>,
    /// Scoreboard rank.
    pub sb_rank: Signal<Out, Bits<5>>,
    /// Scoreboard outputs wanted.
    pub sb_active: Signal<Out, Bit>,
    /// Scoreboard commit.
    pub sb_commit: Signal<Out, Bit>,
    /// New contribution.
    pub sb_new: Signal<In, Bit>,
    /// First of its round.
    pub sb_first: Signal<In, Bit>,
    /// Last of its round.
    pub sb_last: Signal<In, Bit>,
    /// Round complete.
    pub sb_complete: Signal<In, Bit>,
    /// Slot memory read address.
    pub sm_read_address: Signal<Out, Bits<16>>,
    /// Slot memory read data.
    pub sm_read_data: Signal<In, Bits<32>>,
    /// Slot memory write address.
    pub sm_write_address: Signal<Out, Bits<16>>,
    /// Slot memory write data.
    pub sm_write_data: Signal<Out, Bits<32>>,
    /// Slot memory write strobe.
    pub sm_write_enable: Signal<Out, Bit>,
    /// Exponent read address.
    pub ex_read_address: Signal<Out, Bits<6>>,
    /// Exponent read data.
    pub ex_read_data: Signal<In, Bits<32>>,
    /// Exponent write address.
    pub ex_write_address: Signal<Out, Bits<6>>,
    /// Exponent write data.
    pub ex_write_data: Signal<Out, Bits<32>>,
    /// Exponent write strobe.
    pub ex_write_enable: Signal<Out, Bit>,
    /// Lane adder: stored value.
    pub la_stored: Signal<Out, Bits<32>>,
    /// Lane adder: incoming value.
    pub la_incoming: Signal<Out, Bits<32>>,
    /// Lane adder: first.
    pub la_first: Signal<Out, Bit>,
    /// Lane adder: sum.
    pub la_sum: Signal<In, Bits<32>>,
    /// Lane adder: stored exponents.
    pub la_exp_stored: Signal<Out, Bits<16>>,
    /// Lane adder: incoming exponents.
    pub la_exp_incoming: Signal<Out, Bits<16>>,
    /// Lane adder: exponents wanted.
    pub la_exp_active: Signal<Out, Bit>,
    /// Lane adder: new exponents.
    pub la_exp_out: Signal<In, Bits<16>>,
    /// Result builder buffer write address.
    pub tx_write_address: Signal<Out, Bits<10>>,
    /// Result builder buffer write data.
    pub tx_write_data: Signal<Out, Bits<32>>,
    /// Result builder buffer write strobe.
    pub tx_write_enable: Signal<Out, Bit>,
    /// Result builder header buffer write address (bit 4: half, bits 3..0: word 0..12).
    pub hdr_write_address: Signal<Out, Bits<5>>,
    /// Header buffer write data.
    pub hdr_write_data: Signal<Out, Bits<32>>,
    /// Header buffer write strobe.
    pub hdr_write_enable: Signal<Out, Bit>,
    /// The result builder half to fill.
    pub tx_half: Signal<In, Bit>,
    /// That half is free.
    pub tx_free: Signal<In, Bit>,
    /// Pulse: the half holds a frame to send.
    pub tx_load: Signal<Out, Bit>,
    /// 0 result, 1 ARP reply, 2 ICMP echo reply.
    pub tx_kind: Signal<Out, ReplyKind>,
    /// First rank to send a result to.
    pub tx_first: Signal<Out, Bits<5>>,
    /// Last rank to send a result to.
    pub tx_last: Signal<Out, Bits<5>>,
    /// Words in the frame.
    pub tx_nwords: Signal<Out, Bits<10>>,
    /// Valid bytes of its last word.
    pub tx_last_bytes: Signal<Out, Bits<3>>,
    /// Counter event: a received frame is filed.
    pub ev_bucket: Signal<Out, Bit>,
    /// Counter event: where.
    pub ev_bucket_index: Signal<Out, Bits<5>>,
    /// Counter event: n results queued.
    pub ev_multicast: Signal<Out, Bit>,
    /// Counter event: a retransmitted result queued.
    pub ev_retransmit: Signal<Out, Bit>,
    /// Nothing in progress.
    pub idle: Signal<Out, Bit>,
    elements_log2: Constant<Bits<5>>,
    kind_contribution: Constant<Bits<5>>,
    kind_arp: Constant<Bits<5>>,
    bucket_contribution: Constant<Bits<5>>,
    bucket_duplicate: Constant<Bits<5>>,
    bucket_arp_reply: Constant<Bits<5>>,
    bucket_icmp_reply: Constant<Bits<5>>,
    s_act: DFF<Bit>,
    s_lookup: DFF<Bit>,
    s_decide: DFF<Bit>,
    s_commit: DFF<Bit>,
    s_rmw: DFF<Bit>,
    s_copyslot: DFF<Bit>,
    s_header: DFF<Bit>,
    s_copyrx: DFF<Bit>,
    s_load: DFF<Bit>,
    i_stop: DFF<Bits<10>>,
    nwords_eq10: DFF<Bit>,
    nwords_eq11: DFF<Bit>,
    k_eq1: DFF<Bit>,
    wi_stop: DFF<Bits<10>>,
    adder_first: DFF<Bit>,
    i: DFF<Bits<10>>,
    wi: DFF<Bits<10>>,
    i_end: DFF<Bit>,
    wi_last: DFF<Bit>,
    i_plus13: DFF<Bits<10>>,
    wi_plus13: DFF<Bits<10>>,
    k_m2: DFF<Bits<10>>,
    nwords_m2: DFF<Bits<10>>,
    issued: DFF<Bits<6>>,
    incoming_d1: DFF<Bits<32>>,
    incoming_d2: DFF<Bits<32>>,
    incoming_d3: DFF<Bits<32>>,
    first_of_round: DFF<Bit>,
    last_of_round: DFF<Bit>,
    retransmit: DFF<Bit>,
    reply_exps: DFF<Bits<16>>,
    exp_max: DFF<Bits<16>>,
    k_m1: DFF<Bits<10>>,
    len_ip: DFF<Bits<32>>,
    len_udp: DFF<Bits<32>>,
    nwords_m1: DFF<Bits<10>>,
    base: DFF<Bits<16>>,
    nwords: DFF<Bits<10>>,
    reply: DFF<ReplyKind>,
    hw_address: DFF<Bits<5>>,
    hw_data: DFF<Bits<32>>,
    hw_enable: DFF<Bit>,
    hw_sum: DFF<Bits<32>>,
    hw_from_sum: DFF<Bit>,
    ipck_part1: DFF<Bits<20>>,
    ipck_part2: DFF<Bits<20>>,
    ipck_part3: DFF<Bits<20>>,
    ipck_sum: DFF<Bits<20>>,
    ipck_folded: DFF<Bits<17>>,
    ip_checksum: DFF<Bits<16>>,
    icmpck_folded: DFF<Bits<17>>,
    icmp_checksum: DFF<Bits<16>>,
    ex_write_pending: DFF<Bit>,
    ex_write_word: DFF<Bits<32>>,
    hdr_lo_r: Signal<Local, Bits<32>>,
    hdr_hi_r: Signal<Local, Bits<32>>,
    hdr_lo_a: Signal<Local, Bits<32>>,
    hdr_hi_a: Signal<Local, Bits<32>>,
    hdr_lo_i: Signal<Local, Bits<32>>,
    hdr_hi_i: Signal<Local, Bits<32>>,
    hw_lo_r: DFF<Bits<32>>,
    hw_hi_r: DFF<Bits<32>>,
    hw_lo_a: DFF<Bits<32>>,
    hw_hi_a: DFF<Bits<32>>,
    hw_lo_i: DFF<Bits<32>>,
    hw_hi_i: DFF<Bits<32>>,
    hw_sel_hi: DFF<Bit>,
    hw_address2: DFF<Bits<5>>,
    hw_enable2: DFF<Bit>,
    exp_new: Signal<Local, Bits<16>>,
    i4: Signal<Local, Bits<4>>,
    issue: Signal<Local, Bit>,
    write: Signal<Local, Bit>,
}

impl Aggregator {
    /// An aggregator for slots of `max_elements` (a power of two) words per set.
    pub fn new(max_elements: usize) -> Self {
        assert!(max_elements.is_power_of_two(), "max_elements = {max_elements} is not a power of two");
        Self {
            clock: Default::default(),
            desc: Default::default(),
            buf_read_address: Default::default(),
            buf_read_data: Default::default(),
            switch_mac_hi: Default::default(),
            switch_mac_lo: Default::default(),
            switch_ip: Default::default(),
            workers: Default::default(),
            payload_words: Default::default(),
            clearing: Default::default(),
            sb_slot: Default::default(),
            sb_set: Default::default(),
            sb_rank: Default::default(),
            sb_active: Default::default(),
            sb_commit: Default::default(),
            sb_new: Default::default(),
            sb_first: Default::default(),
            sb_last: Default::default(),
            sb_complete: Default::default(),
            sm_read_address: Default::default(),
            sm_read_data: Default::default(),
            sm_write_address: Default::default(),
            sm_write_data: Default::default(),
            sm_write_enable: Default::default(),
            ex_read_address: Default::default(),
            ex_read_data: Default::default(),
            ex_write_address: Default::default(),
            ex_write_data: Default::default(),
            ex_write_enable: Default::default(),
            la_stored: Default::default(),
            la_incoming: Default::default(),
            la_first: Default::default(),
            la_sum: Default::default(),
            la_exp_stored: Default::default(),
            la_exp_incoming: Default::default(),
            la_exp_active: Default::default(),
            la_exp_out: Default::default(),
            tx_write_address: Default::default(),
            tx_write_data: Default::default(),
            tx_write_enable: Default::default(),
            hdr_write_address: Default::default(),
            hdr_write_data: Default::default(),
            hdr_write_enable: Default::default(),
            tx_half: Default::default(),
            tx_free: Default::default(),
            tx_load: Default::default(),
            tx_kind: Default::default(),
            tx_first: Default::default(),
            tx_last: Default::default(),
            tx_nwords: Default::default(),
            tx_last_bytes: Default::default(),
            ev_bucket: Default::default(),
            ev_bucket_index: Default::default(),
            ev_multicast: Default::default(),
            ev_retransmit: Default::default(),
            idle: Default::default(),
            elements_log2: Constant::new((max_elements.trailing_zeros() as u64).into()),
            kind_contribution: Constant::new(KIND_CONTRIBUTION.into()),
            kind_arp: Constant::new(KIND_ARP.into()),
            bucket_contribution: Constant::new(BUCKET_CONTRIBUTION.into()),
            bucket_duplicate: Constant::new(BUCKET_DUPLICATE.into()),
            bucket_arp_reply: Constant::new(BUCKET_ARP_REPLY.into()),
            bucket_icmp_reply: Constant::new(BUCKET_ICMP_REPLY.into()),
            s_act: Default::default(),
            s_lookup: Default::default(),
            s_decide: Default::default(),
            s_commit: Default::default(),
            s_rmw: Default::default(),
            s_copyslot: Default::default(),
            s_header: Default::default(),
            s_copyrx: Default::default(),
            s_load: Default::default(),
            i_stop: Default::default(),
            nwords_eq10: Default::default(),
            nwords_eq11: Default::default(),
            k_eq1: Default::default(),
            wi_stop: Default::default(),
            adder_first: Default::default(),
            i: Default::default(),
            wi: Default::default(),
            i_end: Default::default(),
            wi_last: Default::default(),
            i_plus13: Default::default(),
            wi_plus13: Default::default(),
            k_m2: Default::default(),
            nwords_m2: Default::default(),
            issued: Default::default(),
            incoming_d1: Default::default(),
            incoming_d2: Default::default(),
            incoming_d3: Default::default(),
            first_of_round: Default::default(),
            last_of_round: Default::default(),
            retransmit: Default::default(),
            reply_exps: Default::default(),
            exp_max: Default::default(),
            k_m1: Default::default(),
            len_ip: Default::default(),
            len_udp: Default::default(),
            nwords_m1: Default::default(),
            base: Default::default(),
            nwords: Default::default(),
            reply: Default::default(),
            hw_address: Default::default(),
            hw_data: Default::default(),
            hw_enable: Default::default(),
            hw_sum: Default::default(),
            hw_from_sum: Default::default(),
            ipck_part1: Default::default(),
            ipck_part2: Default::default(),
            ipck_part3: Default::default(),
            ipck_sum: Default::default(),
            ipck_folded: Default::default(),
            ip_checksum: Default::default(),
            icmpck_folded: Default::default(),
            icmp_checksum: Default::default(),
            ex_write_pending: Default::default(),
            ex_write_word: Default::default(),
            hdr_lo_r: Default::default(),
            hdr_hi_r: Default::default(),
            hdr_lo_a: Default::default(),
            hdr_hi_a: Default::default(),
            hdr_lo_i: Default::default(),
            hdr_hi_i: Default::default(),
            hw_lo_r: Default::default(),
            hw_hi_r: Default::default(),
            hw_lo_a: Default::default(),
            hw_hi_a: Default::default(),
            hw_lo_i: Default::default(),
            hw_hi_i: Default::default(),
            hw_sel_hi: Default::default(),
            hw_address2: Default::default(),
            hw_enable2: Default::default(),
            exp_new: Default::default(),
            i4: Default::default(),
            issue: Default::default(),
            write: Default::default(),
        }
    }
}

impl Logic for Aggregator {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            s_act,
            s_lookup,
            s_decide,
            s_commit,
            s_rmw,
            s_copyslot,
            s_header,
            s_copyrx,
            s_load,
            i_stop,
            nwords_eq10,
            nwords_eq11,
            k_eq1,
            wi_stop,
            adder_first,
            i,
            wi,
            i_end,
            wi_last,
            i_plus13,
            wi_plus13,
            k_m2,
            nwords_m2,
            issued,
            incoming_d1,
            incoming_d2,
            incoming_d3,
            first_of_round,
            last_of_round,
            retransmit,
            reply_exps,
            exp_max,
            k_m1,
            len_ip,
            len_udp,
            nwords_m1,
            base,
            nwords,
            reply,
            hw_address,
            hw_data,
            hw_enable,
            hw_sum,
            hw_from_sum,
            ipck_part1,
            ipck_part2,
            ipck_part3,
            ipck_sum,
            ipck_folded,
            ip_checksum,
            icmpck_folded,
            icmp_checksum,
            ex_write_pending,
            ex_write_word,
            hw_lo_r,
            hw_hi_r,
            hw_lo_a,
            hw_hi_a,
            hw_lo_i,
            hw_hi_i,
            hw_sel_hi,
            hw_address2,
            hw_enable2
        );
        // Defaults.
        self.desc.done.next = false;
        self.buf_read_address.next = bit_cast::<10, 10>(self.i.q.val());
        if self.desc.half.val() {
            self.buf_read_address.next = bit_cast::<10, 10>(self.i.q.val()) | 512;
        }
        self.sb_slot.next = bit_cast::<6, 15>(self.desc.slot.val());
        self.sb_set.next = self.desc.set.val();
        self.sb_rank.next = self.desc.rank.val();
        self.sb_active.next = false;
        self.sb_commit.next = false;
        self.sm_read_address.next = self.base.q.val() + bit_cast::<16, 10>(self.i.q.val());
        self.sm_write_address.next = self.base.q.val() + bit_cast::<16, 10>(self.wi.q.val());
        self.sm_write_data.next = self.la_sum.val();
        self.sm_write_enable.next = false;
        self.ex_read_address.next = bit_cast::<6, 15>(self.desc.slot.val());
        self.ex_write_address.next = bit_cast::<6, 15>(self.desc.slot.val());
        // The exponent write is registered: it lands one edge after Commit, long before the
        // next Decide reads the exponents (Commit, then Idle and Lookup at the least).
        self.ex_write_data.next = self.ex_write_word.q.val();
        self.ex_write_enable.next = self.ex_write_pending.q.val();
        self.ex_write_pending.d.next = false;
        // The element pipeline: frame buffer data (2 cycles) delayed 3 more to meet the slot
        // memory data (5 cycles), then the registered lane adder: written 6 cycles after issue.
        self.incoming_d1.d.next = self.buf_read_data.val();
        self.incoming_d2.d.next = self.incoming_d1.q.val();
        // A copy of the stored values adds nothing; the adder's controls are registered (the
        // state they follow lasts the whole pass, and nothing is written in its first 6 cycles).
        self.incoming_d3.d.next = self.incoming_d2.q.val();
        if self.s_copyslot.q.val() {
            self.incoming_d3.d.next = 0.into();
        }
        self.adder_first.d.next = self.first_of_round.q.val();
        if self.s_copyslot.q.val() {
            self.adder_first.d.next = false;
        }
        if self.s_copyrx.q.val() {
            self.adder_first.d.next = true;
        }
        self.la_stored.next = self.sm_read_data.val();
        self.la_incoming.next = self.incoming_d3.q.val();
        // (`first_of_round` is cleared in Idle, so the exponent maxima in Decide are taken as not first.)
        self.la_first.next = self.adder_first.q.val();
        self.nwords_eq10.d.next = self.nwords.q.val() == 10;
        self.nwords_eq11.d.next = self.nwords.q.val() == 11;
        self.k_eq1.d.next = self.k_m1.q.val() == 0;
        self.la_exp_stored.next = 0.into();
        self.la_exp_incoming.next = 0.into();
        self.la_exp_active.next = false;
        self.issue.next = false;
        self.write.next = self.issued.q.val().get_bit(5);
        // Last element indices, registered (the pass ends on an equality, no adder before it).
        self.k_m1.d.next = bit_cast::<10, 9>(self.payload_words.val()) - 1;
        self.nwords_m1.d.next = self.nwords.q.val() - 1;
        self.k_m2.d.next = bit_cast::<10, 9>(self.payload_words.val()) - 2;
        self.nwords_m2.d.next = self.nwords.q.val() - 2;
        // A result's IPv4 and UDP lengths, registered from the configuration.
        self.len_ip.d.next = (bit_cast::<32, 9>(self.payload_words.val()) << 2) + 38;
        self.len_udp.d.next = (bit_cast::<32, 9>(self.payload_words.val()) << 2) + 18;
        self.tx_write_address.next = bit_cast::<10, 10>(self.wi.q.val());
        if self.tx_half.val() {
            self.tx_write_address.next = bit_cast::<10, 10>(self.wi.q.val()) | 512;
        }
        self.tx_write_data.next = self.la_sum.val();
        self.tx_write_enable.next = false;
        self.tx_load.next = false;
        self.tx_kind.next = self.reply.q.val();
        self.tx_first.next = 0.into();
        self.tx_last.next = 0.into();
        self.tx_nwords.next = self.nwords.q.val();
        self.tx_last_bytes.next = 4.into();
        self.ev_bucket.next = false;
        self.ev_bucket_index.next = 0.into();
        self.ev_multicast.next = false;
        self.ev_retransmit.next = false;
        self.idle.next = !self.s_act.q.val();
        // Reply checksums, registered in stages from the descriptor (stable for many cycles
        // before a header word needs them: at least 7 cycles after the descriptor is loaded).
        self.ipck_part1.d.next = bit_cast::<20, 32>(self.desc.h3.val() & 0xffff)
            + bit_cast::<20, 32>(self.desc.h4.val() >> 16)
            + bit_cast::<20, 32>(self.desc.h4.val() & 0xffff);
        self.ipck_part2.d.next = bit_cast::<20, 32>(self.desc.h5.val() >> 16)
            + bit_cast::<20, 32>((self.desc.h5.val() & 0xff) | 0x4000)
            + bit_cast::<20, 32>(self.switch_ip.val() >> 16);
        self.ipck_part3.d.next = bit_cast::<20, 32>(self.switch_ip.val() & 0xffff)
            + bit_cast::<20, 32>(self.desc.h6.val() & 0xffff)
            + bit_cast::<20, 32>(self.desc.h7.val() >> 16);
        self.ipck_sum.d.next = self.ipck_part1.q.val() + self.ipck_part2.q.val() + self.ipck_part3.q.val();
        self.ipck_folded.d.next =
            bit_cast::<17, 20>(self.ipck_sum.q.val() & 0xffff) + bit_cast::<17, 20>(self.ipck_sum.q.val() >> 16);
        self.ip_checksum.d.next =
            !(bit_cast::<16, 17>(self.ipck_folded.q.val()) + bit_cast::<16, 17>(self.ipck_folded.q.val() >> 16));
        // The 16-bit complement as an XOR: a `!` inside a widening bit_cast becomes a
        // 32-bit `~` in the generated Verilog, which sets bit 16 (found by Verilator).
        self.icmpck_folded.d.next = bit_cast::<17, 32>((self.desc.h9.val() >> 16) ^ 0xffff) + 0xF7FF;
        self.icmp_checksum.d.next =
            !(bit_cast::<16, 17>(self.icmpck_folded.q.val()) + bit_cast::<16, 17>(self.icmpck_folded.q.val() >> 16));
        self.hdr_lo_r.next = 0.into();
        self.hdr_hi_r.next = 0.into();
        self.hdr_lo_a.next = 0.into();
        self.hdr_hi_a.next = 0.into();
        self.hdr_lo_i.next = 0.into();
        self.hdr_hi_i.next = 0.into();
        self.exp_new.next = 0.into();
        // Header words are chosen by the low 4 bits of `i` only (they are written for i < 13).
        self.i4.next = bit_cast::<4, 10>(self.i.q.val());
        // Header words of the reply, word `i` (results: during the body pass, i < 13); the
        // header buffer write is registered (it lands one cycle later).
        // Two register stages: words 0..7 and 8..12 of the reply chosen by i's low 3 bits
        // (hw_lo_*, hw_hi_*, one pair per reply kind), then one of them or the adder's output (hw_data, with the address
        // and strobe delayed to match).
        self.hdr_write_address.next = self.hw_address2.q.val();
        self.hdr_write_data.next = self.hw_data.q.val();
        self.hdr_write_enable.next = self.hw_enable2.q.val();
        self.hw_address2.d.next = self.hw_address.q.val();
        self.hw_enable2.d.next = self.hw_enable.q.val();
        if self.reply.q.val() == ReplyKind::Result {
            self.hw_data.d.next = self.hw_lo_r.q.val();
            if self.hw_sel_hi.q.val() {
                self.hw_data.d.next = self.hw_hi_r.q.val();
            }
        } else if self.reply.q.val() == ReplyKind::ArpReply {
            self.hw_data.d.next = self.hw_lo_a.q.val();
            if self.hw_sel_hi.q.val() {
                self.hw_data.d.next = self.hw_hi_a.q.val();
            }
        } else {
            self.hw_data.d.next = self.hw_lo_i.q.val();
            if self.hw_sel_hi.q.val() {
                self.hw_data.d.next = self.hw_hi_i.q.val();
            }
        }
        if self.hw_from_sum.q.val() {
            self.hw_data.d.next = self.hw_sum.q.val();
        }
        self.hw_sel_hi.d.next = self.i4.val().get_bit(3);
        self.hw_sum.d.next = self.la_sum.val();
        self.hw_from_sum.d.next = false;
        self.hw_address.d.next = bit_cast::<5, 10>(self.i.q.val()) & 15;
        if self.tx_half.val() {
            self.hw_address.d.next = (bit_cast::<5, 10>(self.i.q.val()) & 15) | 16;
        }
        self.hw_enable.d.next = false;
        // Each reply kind's candidates, registered separately (a mux on i's low 3 bits each); the
        // kind is chosen in the next stage.
        // Result.
        match self.i4.val().get_bits::<3>(0).index() {
            0 => {
                self.hdr_lo_r.next = 0.into();
            }
            1 => {
                self.hdr_lo_r.next = bit_cast::<32, 16>(self.switch_mac_hi.val());
            }
            2 => {
                self.hdr_lo_r.next = self.switch_mac_lo.val();
            }
            3 => {
                self.hdr_lo_r.next = 0x0800_4500.into();
            }
            4 => {
                self.hdr_lo_r.next = self.len_ip.q.val() << 16;
            }
            5 => {
                self.hdr_lo_r.next = 0x0000_4011.into();
            }
            6 => {
                self.hdr_lo_r.next = self.switch_ip.val() >> 16;
            }
            _ => {
                self.hdr_lo_r.next = self.switch_ip.val() << 16;
            }
        }
        match self.i4.val().get_bits::<3>(0).index() {
            0 => {
                self.hdr_hi_r.next = self.desc.h9.val() >> 16;
            }
            1 => {
                self.hdr_hi_r.next = (self.desc.h8.val() << 16) | self.len_udp.q.val();
            }
            2 => {
                self.hdr_hi_r.next = self.desc.h10.val() & 0xffff;
            }
            3 => {
                self.hdr_hi_r.next = self.desc.h11.val();
            }
            _ => {
                self.hdr_hi_r.next =
                    (self.desc.h12.val() & 0xffff_0000_u64) | bit_cast::<32, 16>(self.reply_exps.q.val());
            }
        }
        // ARP reply.
        match self.i4.val().get_bits::<3>(0).index() {
            0 => {
                self.hdr_lo_a.next = (self.desc.h5.val() << 16) | (self.desc.h6.val() >> 16);
            }
            1 => {
                self.hdr_lo_a.next = (self.desc.h6.val() << 16) | bit_cast::<32, 16>(self.switch_mac_hi.val());
            }
            2 => {
                self.hdr_lo_a.next = self.switch_mac_lo.val();
            }
            3 => {
                self.hdr_lo_a.next = 0x0806_0001.into();
            }
            4 => {
                self.hdr_lo_a.next = 0x0800_0604.into();
            }
            5 => {
                self.hdr_lo_a.next = 0x0002_0000 | bit_cast::<32, 16>(self.switch_mac_hi.val());
            }
            6 => {
                self.hdr_lo_a.next = self.switch_mac_lo.val();
            }
            _ => {
                self.hdr_lo_a.next = self.switch_ip.val();
            }
        }
        match self.i4.val().get_bits::<3>(0).index() {
            0 => {
                self.hdr_hi_a.next = (self.desc.h5.val() << 16) | (self.desc.h6.val() >> 16);
            }
            1 => {
                self.hdr_hi_a.next = (self.desc.h6.val() << 16) | (self.desc.h7.val() >> 16);
            }
            _ => {
                self.hdr_hi_a.next = self.desc.h7.val() << 16;
            }
        }
        // ICMP echo reply.
        match self.i4.val().get_bits::<3>(0).index() {
            0 => {
                self.hdr_lo_i.next = (self.desc.h1.val() << 16) | (self.desc.h2.val() >> 16);
            }
            1 => {
                self.hdr_lo_i.next = (self.desc.h2.val() << 16) | bit_cast::<32, 16>(self.switch_mac_hi.val());
            }
            2 => {
                self.hdr_lo_i.next = self.switch_mac_lo.val();
            }
            3 => {
                self.hdr_lo_i.next = 0x0800_0000 | (self.desc.h3.val() & 0xffff);
            }
            4 => {
                self.hdr_lo_i.next = self.desc.h4.val();
            }
            5 => {
                self.hdr_lo_i.next = (self.desc.h5.val() & 0xffff_00ff_u64) | 0x4000;
            }
            6 => {
                self.hdr_lo_i.next =
                    (bit_cast::<32, 16>(self.ip_checksum.q.val()) << 16) | (self.switch_ip.val() >> 16);
            }
            _ => {
                self.hdr_lo_i.next = (self.switch_ip.val() << 16) | (self.desc.h6.val() & 0xffff);
            }
        }
        match self.i4.val().get_bits::<3>(0).index() {
            0 => {
                self.hdr_hi_i.next = self.desc.h7.val() & 0xffff_0000_u64;
            }
            _ => {
                self.hdr_hi_i.next =
                    (bit_cast::<32, 16>(self.icmp_checksum.q.val()) << 16) | (self.desc.h9.val() & 0xffff);
            }
        }
        self.hw_lo_r.d.next = self.hdr_lo_r.val();
        self.hw_hi_r.d.next = self.hdr_hi_r.val();
        self.hw_lo_a.d.next = self.hdr_lo_a.val();
        self.hw_hi_a.d.next = self.hdr_hi_a.val();
        self.hw_lo_i.d.next = self.hdr_lo_i.val();
        self.hw_hi_i.d.next = self.hdr_hi_i.val();
        // The sequencer's state, one-hot in flip-flops (`s_act` low is Idle): every branch below
        // is entered on one registered flag, and a transition clears the current flag and sets
        // the next one. The end index of the issue counter for the coming pass (`i_stop`) is
        // registered at the transition into it, so `i_end` is an equality of two registers.
        if !self.s_act.q.val() {
            self.first_of_round.d.next = false;
            // Header's last index (ARP, an even kind: word 9; ICMP, odd: word 8); a contribution
            // sets its own in Commit.
            self.i_stop.d.next = 9.into();
            if self.desc.kind.val().get_bit(0) {
                self.i_stop.d.next = 8.into();
            }
            // A reply's word count, chosen from the kind alone (used only after Header; a
            // contribution sets its own in Commit).
            self.nwords.d.next = 11.into();
            if self.desc.kind.val().get_bit(0) {
                if self.desc.ip_len.val() > 2030 {
                    self.nwords.d.next = 511.into();
                } else {
                    self.nwords.d.next = bit_cast::<10, 16>((self.desc.ip_len.val() + 17) >> 2);
                }
            }
            self.i.d.next = 0.into();
            self.i_plus13.d.next = 13.into();
            self.i_end.d.next = false;
            if self.desc.valid.val() & !self.clearing.val() {
                if self.desc.kind.val() < self.kind_contribution.val() {
                    self.ev_bucket.next = true;
                    self.ev_bucket_index.next = self.desc.kind.val();
                    self.desc.done.next = true;
                } else if self.desc.kind.val() == self.kind_contribution.val() {
                    self.base.d.next = ((bit_cast::<16, 15>(self.desc.slot.val()) << 1)
                        | bit_cast::<16, 1>(self.desc.set.val().into()))
                        << self.elements_log2.val();
                    self.s_act.d.next = true;
                    self.s_lookup.d.next = true;
                } else if self.desc.kind.val() == self.kind_arp.val() {
                    self.reply.d.next = ReplyKind::ArpReply;
                    self.s_act.d.next = true;
                    self.s_header.d.next = true;
                } else {
                    self.reply.d.next = ReplyKind::EchoReply;
                    self.s_act.d.next = true;
                    self.s_header.d.next = true;
                }
            }
        }
        if self.s_lookup.q.val() {
            self.s_lookup.d.next = false;
            self.s_decide.d.next = true;
        }
        if self.s_decide.q.val() {
            // The scoreboard registers its lookup; the exponent maxima are registered too
            // (as if not first: the first contribution's own exponents are chosen next cycle).
            self.sb_active.next = true;
            self.la_exp_active.next = true;
            self.la_exp_incoming.next = bit_cast::<16, 32>(self.desc.h12.val());
            if self.desc.set.val() {
                self.la_exp_stored.next = self.ex_read_data.val().get_bits::<16>(16);
            } else {
                self.la_exp_stored.next = bit_cast::<16, 32>(self.ex_read_data.val());
            }
            self.exp_max.d.next = self.la_exp_out.val();
            self.s_decide.d.next = false;
            self.s_commit.d.next = true;
        }
        if self.s_commit.q.val() {
            self.exp_new.next = self.exp_max.q.val();
            if self.sb_first.val() {
                self.exp_new.next = bit_cast::<16, 32>(self.desc.h12.val());
            }
            if self.desc.set.val() {
                self.la_exp_stored.next = self.ex_read_data.val().get_bits::<16>(16);
            } else {
                self.la_exp_stored.next = bit_cast::<16, 32>(self.ex_read_data.val());
            }
            self.ev_bucket.next = true;
            self.i.d.next = 0.into();
            self.i_plus13.d.next = 13.into();
            self.i_end.d.next = false;
            self.i_stop.d.next = self.k_m1.q.val();
            self.wi.d.next = 0.into();
            self.wi_plus13.d.next = 13.into();
            self.wi_last.d.next = self.k_eq1.q.val();
            self.wi_stop.d.next = self.k_m2.q.val();
            self.reply.d.next = ReplyKind::Result;
            self.nwords.d.next = bit_cast::<10, 9>(self.payload_words.val()) + 13;
            self.s_commit.d.next = false;
            if self.sb_new.val() {
                self.sb_commit.next = true;
                self.ev_bucket_index.next = self.bucket_contribution.val();
                self.ex_write_pending.d.next = true;
                if self.desc.set.val() {
                    self.ex_write_word.d.next =
                        (bit_cast::<32, 16>(self.exp_new.val()) << 16) | (self.ex_read_data.val() & 0xffff);
                } else {
                    self.ex_write_word.d.next =
                        (self.ex_read_data.val() & 0xffff_0000_u64) | bit_cast::<32, 16>(self.exp_new.val());
                }
                self.first_of_round.d.next = self.sb_first.val();
                self.last_of_round.d.next = self.sb_last.val();
                self.retransmit.d.next = false;
                self.reply_exps.d.next = self.exp_new.val();
                self.s_rmw.d.next = true;
            } else {
                self.ev_bucket_index.next = self.bucket_duplicate.val();
                self.reply_exps.d.next = self.la_exp_stored.val();
                if self.sb_complete.val() {
                    self.retransmit.d.next = true;
                    self.s_copyslot.d.next = true;
                } else {
                    self.desc.done.next = true;
                    self.s_act.d.next = false;
                }
            }
        }
        if self.s_rmw.q.val() {
            self.buf_read_address.next = self.i_plus13.q.val();
            if self.desc.half.val() {
                self.buf_read_address.next = self.i_plus13.q.val() | 512;
            }
            self.tx_write_address.next = self.wi_plus13.q.val();
            if self.tx_half.val() {
                self.tx_write_address.next = self.wi_plus13.q.val() | 512;
            }
            if (!self.last_of_round.q.val() | self.tx_free.val()) & !self.i_end.q.val() {
                self.issue.next = true;
                self.i.d.next = self.i.q.val() + 1;
                self.i_plus13.d.next = self.i_plus13.q.val() + 1;
                self.i_end.d.next = self.i.q.val() == self.i_stop.q.val();
                self.hw_enable.d.next = self.last_of_round.q.val() & (self.i.q.val() < 13);
            }
            if self.write.val() {
                self.sm_write_enable.next = true;
                self.tx_write_enable.next = self.last_of_round.q.val();
                self.wi.d.next = self.wi.q.val() + 1;
                self.wi_plus13.d.next = self.wi_plus13.q.val() + 1;
                self.wi_last.d.next = self.wi.q.val() == self.wi_stop.q.val();
                if self.wi_last.q.val() {
                    // (`i` is left as it is: Load does not use it and Idle resets it.)
                    self.s_rmw.d.next = false;
                    if self.last_of_round.q.val() {
                        self.s_load.d.next = true;
                    } else {
                        self.desc.done.next = true;
                        self.s_act.d.next = false;
                    }
                }
            }
        }
        if self.s_copyslot.q.val() {
            // The stored values through the adder unchanged (not first, nothing added).
            self.tx_write_address.next = self.wi_plus13.q.val();
            if self.tx_half.val() {
                self.tx_write_address.next = self.wi_plus13.q.val() | 512;
            }
            if self.tx_free.val() & !self.i_end.q.val() {
                self.issue.next = true;
                self.i.d.next = self.i.q.val() + 1;
                self.i_plus13.d.next = self.i_plus13.q.val() + 1;
                self.i_end.d.next = self.i.q.val() == self.i_stop.q.val();
                self.hw_enable.d.next = self.i.q.val() < 13;
            }
            if self.write.val() {
                self.tx_write_enable.next = true;
                self.wi.d.next = self.wi.q.val() + 1;
                self.wi_plus13.d.next = self.wi_plus13.q.val() + 1;
                self.wi_last.d.next = self.wi.q.val() == self.wi_stop.q.val();
                if self.wi_last.q.val() {
                    // (`i` is left as it is: Load does not use it and Idle resets it.)
                    self.s_copyslot.d.next = false;
                    self.s_load.d.next = true;
                }
            }
        }
        if self.s_header.q.val() {
            // ARP and ICMP replies (a result's header is written during its body pass).
            if self.tx_free.val() {
                self.hw_enable.d.next = true;
                self.i.d.next = self.i.q.val() + 1;
                self.i_plus13.d.next = self.i_plus13.q.val() + 1;
                self.i_end.d.next = self.i.q.val() == self.i_stop.q.val();
                if self.i_end.q.val() {
                    self.s_header.d.next = false;
                    if self.reply.q.val() == ReplyKind::EchoReply {
                        self.i.d.next = 10.into();
                        self.i_plus13.d.next = 23.into();
                        self.i_end.d.next = self.nwords_eq10.q.val();
                        self.i_stop.d.next = self.nwords_m1.q.val();
                        self.wi.d.next = 10.into();
                        self.wi_plus13.d.next = 23.into();
                        self.wi_last.d.next = self.nwords_eq11.q.val();
                        self.wi_stop.d.next = self.nwords_m2.q.val();
                        self.s_copyrx.d.next = true;
                    } else {
                        self.s_load.d.next = true;
                    }
                }
            }
        }
        if self.s_copyrx.q.val() {
            // The frame's words through the adder unchanged (first: written as they are).
            if !self.i_end.q.val() {
                self.issue.next = true;
                self.i.d.next = self.i.q.val() + 1;
                self.i_plus13.d.next = self.i_plus13.q.val() + 1;
                self.i_end.d.next = self.i.q.val() == self.i_stop.q.val();
            }
            if self.write.val() {
                self.tx_write_enable.next = true;
                if self.wi.q.val() < 13 {
                    self.hw_address.d.next = bit_cast::<5, 10>(self.wi.q.val()) & 15;
                    if self.tx_half.val() {
                        self.hw_address.d.next = (bit_cast::<5, 10>(self.wi.q.val()) & 15) | 16;
                    }
                    self.hw_from_sum.d.next = true;
                    self.hw_enable.d.next = true;
                }
                self.wi.d.next = self.wi.q.val() + 1;
                self.wi_plus13.d.next = self.wi_plus13.q.val() + 1;
                self.wi_last.d.next = self.wi.q.val() == self.wi_stop.q.val();
                if self.wi_last.q.val() {
                    self.s_copyrx.d.next = false;
                    self.s_load.d.next = true;
                }
            }
        }
        if self.s_load.q.val() {
            self.tx_load.next = true;
            self.desc.done.next = true;
            self.s_load.d.next = false;
            self.s_act.d.next = false;
            if self.reply.q.val() == ReplyKind::Result {
                if self.retransmit.q.val() {
                    self.ev_retransmit.next = true;
                    self.tx_first.next = self.desc.rank.val();
                    self.tx_last.next = self.desc.rank.val();
                } else {
                    self.ev_multicast.next = true;
                    self.tx_last.next = bit_cast::<5, 6>(self.workers.val() - 1);
                }
            } else if self.reply.q.val() == ReplyKind::ArpReply {
                self.ev_bucket.next = true;
                self.ev_bucket_index.next = self.bucket_arp_reply.val();
                self.tx_last_bytes.next = 2.into();
            } else {
                self.ev_bucket.next = true;
                self.ev_bucket_index.next = self.bucket_icmp_reply.val();
                self.tx_last_bytes.next = (bit_cast::<3, 16>(self.desc.ip_len.val() + 1) & 3) + 1;
            }
        }
        self.issued.d.next = (self.issued.q.val() << 1) | bit_cast::<6, 1>(self.issue.val().into());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::frame_parser::KIND_ICMP;
    use crate::step::settle;

    /// What one descriptor made the aggregator do, as its contract names it.
    #[derive(Debug, Default, PartialEq)]
    struct Effect {
        /// Cycles from the descriptor to `desc.done`.
        cycles: usize,
        /// Counter buckets filed.
        buckets: Vec<u64>,
        /// Header buffer words written (address low 4 bits).
        header_words: Vec<u64>,
        /// `tx_load`: (kind, words, last bytes), if loaded.
        load: Option<(ReplyKind, u64, u64)>,
    }

    fn run(agg: &mut Aggregator, kind: u64, ip_len: u64) -> Effect {
        agg.desc.valid.next = true;
        agg.desc.kind.next = kind.into();
        agg.desc.ip_len.next = ip_len.into();
        let mut e = Effect::default();
        for c in 1..200 {
            settle(agg);
            if agg.ev_bucket.val() {
                e.buckets.push(agg.ev_bucket_index.val().index() as u64);
            }
            if agg.hdr_write_enable.val() {
                e.header_words.push(agg.hdr_write_address.val().index() as u64 & 15);
            }
            if agg.tx_load.val() {
                e.load = Some((
                    agg.tx_kind.val(),
                    agg.tx_nwords.val().index() as u64,
                    agg.tx_last_bytes.val().index() as u64,
                ));
            }
            let done = agg.desc.done.val();
            agg.clock.next = true.into();
            settle(agg);
            agg.clock.next = false.into();
            settle(agg);
            if done {
                e.cycles = c;
                agg.desc.valid.next = false;
                // The header writes trail by two register stages.
                for _ in 0..3 {
                    settle(agg);
                    if agg.hdr_write_enable.val() {
                        e.header_words.push(agg.hdr_write_address.val().index() as u64 & 15);
                    }
                    agg.clock.next = true.into();
                    settle(agg);
                    agg.clock.next = false.into();
                    settle(agg);
                }
                assert!(agg.idle.val(), "not idle after done");
                return e;
            }
        }
        panic!("no desc.done for kind {kind}");
    }

    /// The sequencing of the frames that need neither the scoreboard nor the slot memory,
    /// against the contract: a drop is done in one cycle, filed under its reason, nothing
    /// written; an ARP request writes the reply's words 0..=10 into the header buffer and loads
    /// an 11-word ARP reply (2 bytes in its last word), filed under ARP replies when loaded; an
    /// ICMP echo request writes header words 0..=9, copies the frame's words from 10 on
    /// (those below 13 into the header buffer too) and loads `(T + 17) / 4` words, filed under
    /// ICMP replies.
    #[test]
    fn drops_arp_and_echo_are_sequenced_as_specified() {
        let mut agg = Aggregator::new(256);
        agg.connect_all();
        agg.tx_free.next = true;
        agg.payload_words.next = 64.into();
        agg.workers.next = 4.into();
        for reason in [0, 4, 12] {
            let e = run(&mut agg, reason, 0);
            assert_eq!(e, Effect { cycles: 1, buckets: vec![reason], ..Default::default() }, "drop {reason}");
        }
        let arp = run(&mut agg, KIND_ARP, 0);
        assert_eq!(arp.buckets, vec![BUCKET_ARP_REPLY]);
        assert_eq!(arp.header_words, (0..=10).collect::<Vec<_>>(), "the whole 42-byte reply");
        assert_eq!(arp.load, Some((ReplyKind::ArpReply, 11, 2)));
        // An echo request of T = 60: a 74-byte reply, 19 words, 2 bytes in the last.
        let echo = run(&mut agg, KIND_ICMP, 60);
        assert_eq!(echo.buckets, vec![BUCKET_ICMP_REPLY]);
        assert_eq!(echo.load, Some((ReplyKind::EchoReply, 19, 2)));
        assert_eq!(echo.header_words, (0..=12).collect::<Vec<_>>(), "{echo:?}");
    }
}
