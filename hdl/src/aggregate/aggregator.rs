//! The aggregator: takes the parser's decided frames one at a time and applies
//! docs/switch.md §2 and §3 — scoreboard update, read-modify-write of the slot memory through
//! the lane adders, and the reply frame written into the result builder's buffer.
//!
//! Timing contract and guarantees:
//! - A dropped frame takes one cycle. A contribution takes 3 cycles of scoreboard lookup (RAM
//!   read, registered lookup with the exponent maxima, commit), then a pass of its elements
//!   through the read-modify-write pipeline ([`ElementPass`]): they are issued one a cycle and
//!   each is written 6 cycles after its issue (frame buffer read, 2 cycles, then 3 delay
//!   registers, and slot memory read, 5 cycles, meet at the registered lane adder, whose output
//!   register drives the slot memory and the result builder's buffer). So k + 6 cycles of
//!   read-modify-write, and the pass ends only when the pipeline is empty (no read of a later
//!   frame can overtake a write of this one).
//! - The reply's header words are chosen and written by a [`HeaderWriter`]: with a result's
//!   first 13 issues, word by word in Header for ARP and ICMP replies.
//! - The sequencer's state is one-hot in flip-flops, and a pass's last element index is a
//!   register (`k_minus_1`, `copy_last`) when the pass starts.
//! - The exponent RAM's read data is registered (`ex_word`, and the descriptor's set's half in
//!   `ex_half`) before the exponent maxima and the exponent write-back: the RAM is read from
//!   Idle on (its address is the descriptor's slot), so the word reaches the compare in Decide
//!   with no change in cycles; only the set's 2-to-1 mux lies between the RAM's output and a
//!   register.
//! - Only a valid contribution reaches the scoreboard and the slot memory, and only after the
//!   whole frame has been received and checked.
//! - The last contribution of a round writes the sums into the result builder's buffer during
//!   its read-modify-write (no second pass); a retransmission to a complete round copies the
//!   stored values through the same pipeline (k + 6 cycles). ICMP echo replies copy the frame
//!   body through it too.
//! - Header buffer writes are registered in two stages (they land two cycles after the word is
//!   chosen; the result builder reads a header word many cycles after its load); the
//!   reply checksums are computed from the descriptor in four registered steps (in
//!   [`ReplyHeader`], which also chooses each header word), ready long
//!   before the header word that carries them (word 6 at the earliest, 7 cycles after the
//!   descriptor is loaded).
//! - A reply header is written in 10 to 13 cycles; then the result builder is loaded with the
//!   frame (rank range for results). When the result builder's buffer half is still busy, the
//!   aggregator waits (and so does the parser: back-pressure, never a drop).
//! - Sessions (docs/switch.md §2.1, the state in [`crate::session::Session`]): once a session
//!   is open, a contribution whose `job_number` is not the epoch is filed as `stale_session` in
//!   one cycle, before the scoreboard is looked up. A session message takes a cycle for the
//!   session block's registered verdict and one to apply it (`ss_commit`); a reply (the
//!   opening multicast, or the current epoch to the sender) is the copy pass of a
//!   retransmission with the slot memory's data replaced by zeros, exponents zero and byte 43
//!   the epoch after the update. The opening also clears every slot (the scoreboard's clear
//!   pass): the next descriptor waits in Idle until it is done, as after a reconfiguration.
//! - Trees (docs/switch.md §6, with a parent in the job): the last contribution of a round
//!   writes its sums into the reply buffer as for a multicast, but the frame is loaded once,
//!   addressed to the parent (`replies.parent`, UDP destination `PP`), and the scoreboard sets
//!   `waiting`; a duplicate to a waiting round from rank 0 resends it (the copy pass of a
//!   retransmission), from another rank does nothing. A parent result (`KIND_PARENT`, not
//!   filed in a counter bucket) looks up the scoreboard as a contribution does; to a waiting,
//!   complete round it commits (clearing `waiting` only), writes its exponents and values as a
//!   first contribution's (the read-modify-write pass with nothing added) and multicasts them
//!   with UDP destination `worker_port`; otherwise it is stale. Each of these is a tree event
//!   (`events.tree`, `events.tree_index`: 0 partial up, 1 partial resent, 2 parent result, 3
//!   stale parent result).

use crate::block_ram::RamClient;
use crate::config_registers::JobSettings;
use crate::counters::{CounterEventSource, BUCKET_ARP_REPLY, BUCKET_CONTRIBUTION, BUCKET_DUPLICATE, BUCKET_ICMP_REPLY};
use crate::element_pass::ElementPass;
use crate::frame_parser::DescriptorSink;
use crate::lane_adders::LaneAdderClient;
use crate::parse::kind::{KIND_ARP, KIND_CONTRIBUTION, KIND_PARENT, KIND_SESSION};
use crate::parse::received_header::HeaderWords;
use crate::reply::header_buffer_writer::HeaderWriter;
use crate::reply::header_composer::ReplyHeader;
use crate::result_builder::{ReplyKind, ReplyQueueClient};
use crate::scoreboard::ScoreboardClient;
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
    /// The job's settings (switch addresses, n, k).
    pub job: JobSettings,
    /// The scoreboard.
    pub sb: ScoreboardClient,
    /// The slot memory's values.
    pub sm: RamClient<16, 32>,
    /// The slot memory's exponents.
    pub ex: RamClient<6, 32>,
    /// The lane adders.
    pub la: LaneAdderClient,
    /// The result builder's queue of frames to send.
    pub replies: ReplyQueueClient,
    /// Events for the counters.
    pub events: CounterEventSource,
    /// Session state: a session is open (contributions must carry the epoch).
    pub ss_open: Signal<In, Bit>,
    /// Session state: the current epoch E.
    pub ss_epoch: Signal<In, Bits<8>>,
    /// Session verdict: a counted join.
    pub ss_counted: Signal<In, Bit>,
    /// Session verdict: a join already counted (silent).
    pub ss_silent: Signal<In, Bit>,
    /// Session verdict: the join opens the session.
    pub ss_opens: Signal<In, Bit>,
    /// The session message's `job_number` (the rank and the set bit are `sb.rank`, `sb.set`).
    pub ss_proposal: Signal<Out, Bits<8>>,
    /// Apply the session verdict.
    pub ss_commit: Signal<Out, Bit>,
    /// Nothing in progress.
    pub idle: Signal<Out, Bit>,
    elements_log2: Constant<Bits<5>>,
    kind_contribution: Constant<Bits<5>>,
    kind_arp: Constant<Bits<5>>,
    kind_session: Constant<Bits<5>>,
    kind_parent: Constant<Bits<5>>,
    /// The descriptor is a parent result (docs/switch.md §6).
    is_parent: DFF<Bit>,
    /// The reply goes up to the parent (a partial frame).
    up: DFF<Bit>,
    /// The partial frame is a resend.
    resend: DFF<Bit>,
    /// The results are triggered by a parent result (UDP destination `worker_port`).
    down: DFF<Bit>,
    bucket_stale: Constant<Bits<5>>,
    bucket_contribution: Constant<Bits<5>>,
    bucket_duplicate: Constant<Bits<5>>,
    bucket_arp_reply: Constant<Bits<5>>,
    bucket_icmp_reply: Constant<Bits<5>>,
    s_active: DFF<Bit>,
    s_lookup: DFF<Bit>,
    s_decide: DFF<Bit>,
    s_commit: DFF<Bit>,
    s_rmw: DFF<Bit>,
    s_copy_slot: DFF<Bit>,
    s_header: DFF<Bit>,
    s_copy_frame: DFF<Bit>,
    s_load: DFF<Bit>,
    s_sess_lookup: DFF<Bit>,
    s_sess_decide: DFF<Bit>,
    session_reply: DFF<Bit>,
    first_of_round: DFF<Bit>,
    last_of_round: DFF<Bit>,
    retransmit: DFF<Bit>,
    reply_exps: DFF<Bits<16>>,
    exp_max: DFF<Bits<16>>,
    /// The exponent RAM's word, registered (a register between the RAM and the compare).
    ex_word: DFF<Bits<32>>,
    /// The descriptor's set's half of the exponent RAM's word, registered.
    ex_half: DFF<Bits<16>>,
    k_minus_1: DFF<Bits<10>>,
    slot_base: DFF<Bits<16>>,
    nwords: DFF<Bits<10>>,
    reply_kind: DFF<ReplyKind>,
    ex_write_pending: DFF<Bit>,
    ex_write_word: DFF<Bits<32>>,
    header: ReplyHeader,
    /// The passes of elements through the read-modify-write pipeline.
    pass: ElementPass,
    /// The reply's header words into the header buffer.
    words: HeaderWriter,
    /// The last element of an echo reply's copy of the frame (word 10 is its first).
    copy_last: DFF<Bits<10>>,
    exp_new: Signal<Local, Bits<16>>,
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
            job: Default::default(),
            sb: Default::default(),
            sm: Default::default(),
            ex: Default::default(),
            la: Default::default(),
            replies: Default::default(),
            events: Default::default(),
            ss_open: Default::default(),
            ss_epoch: Default::default(),
            ss_counted: Default::default(),
            ss_silent: Default::default(),
            ss_opens: Default::default(),
            ss_proposal: Default::default(),
            ss_commit: Default::default(),
            idle: Default::default(),
            elements_log2: Constant::new((max_elements.trailing_zeros() as u64).into()),
            kind_contribution: Constant::new(KIND_CONTRIBUTION.into()),
            kind_arp: Constant::new(KIND_ARP.into()),
            kind_session: Constant::new(KIND_SESSION.into()),
            kind_parent: Constant::new(KIND_PARENT.into()),
            is_parent: Default::default(),
            up: Default::default(),
            resend: Default::default(),
            down: Default::default(),
            bucket_stale: Constant::new((spotagg_driver::DropReason::StaleSession as u64).into()),
            bucket_contribution: Constant::new(BUCKET_CONTRIBUTION.into()),
            bucket_duplicate: Constant::new(BUCKET_DUPLICATE.into()),
            bucket_arp_reply: Constant::new(BUCKET_ARP_REPLY.into()),
            bucket_icmp_reply: Constant::new(BUCKET_ICMP_REPLY.into()),
            s_active: Default::default(),
            s_lookup: Default::default(),
            s_decide: Default::default(),
            s_commit: Default::default(),
            s_rmw: Default::default(),
            s_copy_slot: Default::default(),
            s_header: Default::default(),
            s_copy_frame: Default::default(),
            s_load: Default::default(),
            s_sess_lookup: Default::default(),
            s_sess_decide: Default::default(),
            session_reply: Default::default(),
            first_of_round: Default::default(),
            last_of_round: Default::default(),
            retransmit: Default::default(),
            reply_exps: Default::default(),
            exp_max: Default::default(),
            ex_word: Default::default(),
            ex_half: Default::default(),
            k_minus_1: Default::default(),
            slot_base: Default::default(),
            nwords: Default::default(),
            reply_kind: Default::default(),
            ex_write_pending: Default::default(),
            ex_write_word: Default::default(),
            header: Default::default(),
            pass: Default::default(),
            words: Default::default(),
            copy_last: Default::default(),
            exp_new: Default::default(),
        }
    }
}

impl Logic for Aggregator {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            s_active,
            s_lookup,
            s_decide,
            s_commit,
            s_rmw,
            s_copy_slot,
            s_header,
            s_copy_frame,
            s_load,
            s_sess_lookup,
            s_sess_decide,
            session_reply,
            is_parent,
            up,
            resend,
            down,
            first_of_round,
            last_of_round,
            retransmit,
            reply_exps,
            exp_max,
            ex_word,
            ex_half,
            k_minus_1,
            slot_base,
            nwords,
            reply_kind,
            ex_write_pending,
            ex_write_word,
            copy_last
        );
        clock!(self, clock, header, pass, words);
        // Defaults.
        self.desc.done.next = false;
        self.sb.slot.next = bit_cast::<6, 15>(self.desc.slot.val());
        self.sb.set.next = self.desc.set.val();
        self.sb.rank.next = self.desc.rank.val();
        self.sb.active.next = false;
        self.sb.commit.next = false;
        self.sb.parent.next = self.is_parent.q.val();
        self.events.tree.next = false;
        self.events.tree_index.next = 0.into();
        self.replies.parent.next = false;
        self.ex.read_address.next = bit_cast::<6, 15>(self.desc.slot.val());
        self.ex.write_address.next = bit_cast::<6, 15>(self.desc.slot.val());
        // The exponent write is registered: it lands one edge after Commit, long before the
        // next descriptor's Idle, whose read feeds its Decide (a write is followed by a pass of
        // k + 6 cycles at the least).
        self.ex.write_data.next = self.ex_write_word.q.val();
        self.ex.write_enable.next = self.ex_write_pending.q.val();
        self.ex_write_pending.d.next = false;
        // The exponent RAM's read data, registered every cycle (its address, the descriptor's
        // slot, holds from Idle on, so in Decide and Commit these hold the slot's word).
        self.ex_word.d.next = self.ex.read_data.val();
        self.ex_half.d.next = bit_cast::<16, 32>(self.ex.read_data.val());
        if self.desc.set.val() {
            self.ex_half.d.next = self.ex.read_data.val().get_bits::<16>(16);
        }
        // The element passes (ElementPass): a contribution's read-modify-write (`s_rmw`), a copy
        // of the stored values (`s_copy_slot`: a retransmission, a resent partial, a session
        // reply with zeros) and an echo reply's copy of the frame (`s_copy_frame`, from word 10).
        // A pass is started in the transition into its state; its modes follow the state, which
        // holds for the whole pass.
        self.pass.start.next = false;
        self.pass.last.next = self.k_minus_1.q.val();
        self.pass.offset.next = 13.into();
        self.pass.advance.next = (self.s_rmw.q.val() & (!self.last_of_round.q.val() | self.replies.free.val()))
            | (self.s_copy_slot.q.val() & self.replies.free.val())
            | self.s_copy_frame.q.val();
        // (`first_of_round` is cleared in Idle, so the exponent maxima in Decide are taken as not first.)
        self.pass.overwrite.next =
            (self.first_of_round.q.val() & !self.s_copy_slot.q.val()) | self.s_copy_frame.q.val();
        self.pass.copy_stored.next = self.s_copy_slot.q.val();
        // A session reply carries no values.
        self.pass.zero_stored.next = self.session_reply.q.val();
        self.pass.to_slot.next = self.s_rmw.q.val();
        self.pass.to_reply.next =
            (self.s_rmw.q.val() & self.last_of_round.q.val()) | self.s_copy_slot.q.val() | self.s_copy_frame.q.val();
        self.pass.slot_base.next = self.slot_base.q.val();
        self.pass.frame_half.next = self.desc.half.val();
        self.pass.reply_half.next = self.replies.half.val();
        self.buf_read_address.next = self.pass.frame_address.val();
        self.pass.frame_data.next = self.buf_read_data.val();
        RamClient::<16, 32>::link(&mut self.sm, &mut self.pass.sm);
        self.la.stored.next = self.pass.adder_stored.val();
        self.la.incoming.next = self.pass.adder_incoming.val();
        self.la.first.next = self.pass.adder_first.val();
        self.pass.adder_sum.next = self.la.sum.val();
        self.replies.buf_write_address.next = self.pass.reply_address.val();
        self.replies.buf_write_data.next = self.pass.reply_data.val();
        self.replies.buf_write_enable.next = self.pass.reply_enable.val();
        self.ss_proposal.next = bit_cast::<8, 32>(self.desc.header.h10.val());
        self.ss_commit.next = false;
        self.la.exp_stored.next = 0.into();
        self.la.exp_incoming.next = 0.into();
        self.la.exp_active.next = false;
        // Last element indices, registered.
        self.k_minus_1.d.next = bit_cast::<10, 9>(self.job.payload_words.val()) - 1;
        self.copy_last.d.next = self.nwords.q.val() - 11;
        self.replies.load.next = false;
        self.replies.kind.next = self.reply_kind.q.val();
        self.replies.first.next = 0.into();
        self.replies.last.next = 0.into();
        self.replies.nwords.next = self.nwords.q.val();
        self.replies.last_bytes.next = 4.into();
        self.events.bucket.next = false;
        self.events.bucket_index.next = 0.into();
        self.events.checksum_zero.next = self.desc.zero_checksum.val();
        self.events.multicast.next = false;
        self.events.retransmit.next = false;
        self.idle.next = !self.s_active.q.val();
        self.exp_new.next = 0.into();
        // Header words of the reply (HeaderWriter): a result's words 0..=12 step with its pass's
        // first 13 issues; an ARP or echo reply's are stepped in Header (0..=10, 0..=9), and an echo
        // reply's words 10..=12 are copied from the frame as its pass writes them. Each is
        // written two register stages after it is chosen (the reply header block answers a word
        // index a cycle after it is asked).
        self.header.kind.next = self.reply_kind.q.val();
        self.header.index.next = self.words.index.val();
        HeaderWords::link(&mut self.desc.header, &mut self.header.request);
        // A session reply: byte 43 (`job_number`) is the epoch after the update.
        self.header.session.next = self.session_reply.q.val();
        self.header.epoch.next = self.ss_epoch.val();
        JobSettings::link(&mut self.job, &mut self.header.job);
        self.header.exponents.next = self.reply_exps.q.val();
        self.header.dst_port_on.next = (self.up.q.val() | self.down.q.val()) & self.job.parent_on.val();
        self.header.dst_port.next = self.job.worker_port.val();
        if self.up.q.val() {
            self.header.dst_port.next = self.job.parent_port.val();
        }
        self.words.word.next = self.header.word.val();
        self.words.half.next = self.replies.half.val();
        self.words.restart.next = !self.s_active.q.val();
        self.words.last.next = 12.into();
        if self.s_header.q.val() {
            // ARP: words 0..=10; ICMP: 0..=9, then 10..=12 copied from the frame.
            self.words.last.next = 10.into();
            if self.reply_kind.q.val() == ReplyKind::EchoReply {
                self.words.last.next = 9.into();
            }
        }
        self.words.step.next = (self.pass.issue.val()
            & ((self.s_rmw.q.val() & self.last_of_round.q.val()) | self.s_copy_slot.q.val()))
            | (self.s_header.q.val() & self.replies.free.val());
        self.words.copy.next = self.s_copy_frame.q.val() & self.pass.write.val();
        self.words.copy_index.next = self.pass.write_word.val();
        self.words.copy_data.next = self.la.sum.val();
        self.replies.hdr_write_address.next = self.words.hdr_write_address.val();
        self.replies.hdr_write_data.next = self.words.hdr_write_data.val();
        self.replies.hdr_write_enable.next = self.words.hdr_write_enable.val();
        // The sequencer's state, one-hot in flip-flops (`s_active` low is Idle): every branch below
        // is entered on one registered flag, and a transition clears the current flag and sets
        // the next one; a transition into a pass starts it (`pass.start`).
        if !self.s_active.q.val() {
            self.first_of_round.d.next = false;
            self.session_reply.d.next = false;
            self.is_parent.d.next = false;
            self.up.d.next = false;
            self.resend.d.next = false;
            self.down.d.next = false;
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
            if self.desc.valid.val() & !self.sb.clearing.val() {
                if self.desc.kind.val() < self.kind_contribution.val() {
                    self.events.bucket.next = true;
                    self.events.bucket_index.next = self.desc.kind.val();
                    self.desc.done.next = true;
                } else if (self.desc.kind.val() == self.kind_contribution.val())
                    & self.ss_open.val()
                    & (bit_cast::<8, 32>(self.desc.header.h10.val()) != self.ss_epoch.val())
                {
                    self.events.bucket.next = true;
                    self.events.bucket_index.next = self.bucket_stale.val();
                    self.desc.done.next = true;
                } else if self.desc.kind.val() == self.kind_contribution.val() {
                    self.slot_base.d.next = ((bit_cast::<16, 15>(self.desc.slot.val()) << 1)
                        | bit_cast::<16, 1>(self.desc.set.val().into()))
                        << self.elements_log2.val();
                    self.s_active.d.next = true;
                    self.s_lookup.d.next = true;
                } else if self.desc.kind.val() == self.kind_parent.val() {
                    self.slot_base.d.next = ((bit_cast::<16, 15>(self.desc.slot.val()) << 1)
                        | bit_cast::<16, 1>(self.desc.set.val().into()))
                        << self.elements_log2.val();
                    // (The parser yields this kind only with a parent; `parent_on` is a constant 0
                    // in a core built without the tree leaf, so synthesis removes its logic.)
                    self.is_parent.d.next = self.job.parent_on.val();
                    self.s_active.d.next = true;
                    self.s_lookup.d.next = true;
                } else if self.desc.kind.val() == self.kind_arp.val() {
                    self.reply_kind.d.next = ReplyKind::ArpReply;
                    self.s_active.d.next = true;
                    self.s_header.d.next = true;
                } else if self.desc.kind.val() == self.kind_session.val() {
                    self.s_active.d.next = true;
                    self.s_sess_lookup.d.next = true;
                } else {
                    self.reply_kind.d.next = ReplyKind::EchoReply;
                    self.s_active.d.next = true;
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
            self.sb.active.next = true;
            self.la.exp_active.next = true;
            self.la.exp_incoming.next = bit_cast::<16, 32>(self.desc.header.h12.val());
            self.la.exp_stored.next = self.ex_half.q.val();
            self.exp_max.d.next = self.la.exp_out.val();
            self.s_decide.d.next = false;
            self.s_commit.d.next = true;
        }
        if self.s_commit.q.val() {
            self.exp_new.next = self.exp_max.q.val();
            if self.sb.first.val() | self.is_parent.q.val() {
                self.exp_new.next = bit_cast::<16, 32>(self.desc.header.h12.val());
            }
            self.la.exp_stored.next = self.ex_half.q.val();
            self.events.bucket.next = true;
            self.reply_kind.d.next = ReplyKind::Result;
            self.nwords.d.next = bit_cast::<10, 9>(self.job.payload_words.val()) + 13;
            self.s_commit.d.next = false;
            if self.is_parent.q.val() {
                // A parent result: a tree event, in no counter bucket (docs/switch.md §6).
                self.events.bucket.next = false;
                self.events.tree.next = true;
                if self.sb.waiting.val() & self.sb.complete.val() {
                    self.events.tree_index.next = 2.into();
                    self.sb.commit.next = true;
                    self.ex_write_pending.d.next = true;
                    if self.desc.set.val() {
                        self.ex_write_word.d.next =
                            (bit_cast::<32, 16>(self.exp_new.val()) << 16) | (self.ex_word.q.val() & 0xffff);
                    } else {
                        self.ex_write_word.d.next =
                            (self.ex_word.q.val() & 0xffff_0000_u64) | bit_cast::<32, 16>(self.exp_new.val());
                    }
                    self.first_of_round.d.next = true;
                    self.last_of_round.d.next = true;
                    self.retransmit.d.next = false;
                    self.reply_exps.d.next = self.exp_new.val();
                    self.down.d.next = true;
                    self.pass.start.next = true;
                    self.s_rmw.d.next = true;
                } else {
                    self.events.tree_index.next = 3.into();
                    self.desc.done.next = true;
                    self.s_active.d.next = false;
                }
            } else if self.sb.is_new.val() {
                self.sb.commit.next = true;
                self.up.d.next = self.sb.last.val() & self.job.parent_on.val();
                self.events.bucket_index.next = self.bucket_contribution.val();
                self.ex_write_pending.d.next = true;
                if self.desc.set.val() {
                    self.ex_write_word.d.next =
                        (bit_cast::<32, 16>(self.exp_new.val()) << 16) | (self.ex_word.q.val() & 0xffff);
                } else {
                    self.ex_write_word.d.next =
                        (self.ex_word.q.val() & 0xffff_0000_u64) | bit_cast::<32, 16>(self.exp_new.val());
                }
                self.first_of_round.d.next = self.sb.first.val();
                self.last_of_round.d.next = self.sb.last.val();
                self.retransmit.d.next = false;
                self.reply_exps.d.next = self.exp_new.val();
                self.pass.start.next = true;
                self.s_rmw.d.next = true;
            } else {
                self.events.bucket_index.next = self.bucket_duplicate.val();
                self.reply_exps.d.next = self.la.exp_stored.val();
                if self.sb.complete.val() & self.sb.waiting.val() {
                    // Waiting for the parent: rank 0's retransmission resends the partial.
                    if self.desc.rank.val() == 0 {
                        self.up.d.next = true;
                        self.resend.d.next = true;
                        self.pass.start.next = true;
                        self.s_copy_slot.d.next = true;
                    } else {
                        self.desc.done.next = true;
                        self.s_active.d.next = false;
                    }
                } else if self.sb.complete.val() {
                    self.retransmit.d.next = true;
                    self.pass.start.next = true;
                    self.s_copy_slot.d.next = true;
                } else {
                    self.desc.done.next = true;
                    self.s_active.d.next = false;
                }
            }
        }
        if self.s_sess_lookup.q.val() {
            // The session block registers its verdict.
            self.s_sess_lookup.d.next = false;
            self.s_sess_decide.d.next = true;
        }
        if self.s_sess_decide.q.val() {
            // Filed as a contribution (a counted join) or a duplicate; a reply is the copy pass
            // of a retransmission with zeros for the values.
            self.events.bucket.next = true;
            self.events.bucket_index.next = self.bucket_duplicate.val();
            self.reply_kind.d.next = ReplyKind::Result;
            self.nwords.d.next = bit_cast::<10, 9>(self.job.payload_words.val()) + 13;
            self.reply_exps.d.next = 0.into();
            self.retransmit.d.next = true;
            self.s_sess_decide.d.next = false;
            if self.ss_counted.val() {
                self.events.bucket_index.next = self.bucket_contribution.val();
                self.ss_commit.next = true;
            }
            if self.ss_opens.val() {
                self.retransmit.d.next = false;
                self.session_reply.d.next = true;
                self.pass.start.next = true;
                self.s_copy_slot.d.next = true;
            } else if self.ss_counted.val() | self.ss_silent.val() {
                self.desc.done.next = true;
                self.s_active.d.next = false;
            } else {
                self.session_reply.d.next = true;
                self.pass.start.next = true;
                self.s_copy_slot.d.next = true;
            }
        }
        if self.s_rmw.q.val() & self.pass.done.val() {
            self.s_rmw.d.next = false;
            if self.last_of_round.q.val() {
                self.s_load.d.next = true;
            } else {
                self.desc.done.next = true;
                self.s_active.d.next = false;
            }
        }
        if self.s_copy_slot.q.val() & self.pass.done.val() {
            self.s_copy_slot.d.next = false;
            self.s_load.d.next = true;
        }
        if self.s_header.q.val() & self.replies.free.val() & self.words.at_last.val() {
            // ARP and ICMP replies (a result's header is written during its body pass); an
            // echo reply's body is a copy of the frame's, words 10..nwords.
            self.s_header.d.next = false;
            if self.reply_kind.q.val() == ReplyKind::EchoReply {
                self.pass.start.next = true;
                self.pass.last.next = self.copy_last.q.val();
                self.pass.offset.next = 10.into();
                self.s_copy_frame.d.next = true;
            } else {
                self.s_load.d.next = true;
            }
        }
        if self.s_copy_frame.q.val() & self.pass.done.val() {
            self.s_copy_frame.d.next = false;
            self.s_load.d.next = true;
        }
        if self.s_load.q.val() {
            self.replies.load.next = true;
            self.desc.done.next = true;
            self.s_load.d.next = false;
            self.s_active.d.next = false;
            if self.reply_kind.q.val() == ReplyKind::Result {
                if self.up.q.val() & self.job.parent_on.val() {
                    // One partial frame to the parent (rank range 0..=0, addresses patched).
                    self.replies.parent.next = true;
                    self.events.tree.next = true;
                    self.events.tree_index.next = bit_cast::<2, 1>(self.resend.q.val().into());
                } else if self.retransmit.q.val() {
                    self.events.retransmit.next = true;
                    self.replies.first.next = self.desc.rank.val();
                    self.replies.last.next = self.desc.rank.val();
                } else {
                    self.events.multicast.next = true;
                    self.replies.last.next = bit_cast::<5, 6>(self.job.workers.val() - 1);
                }
            } else if self.reply_kind.q.val() == ReplyKind::ArpReply {
                self.events.bucket.next = true;
                self.events.bucket_index.next = self.bucket_arp_reply.val();
                self.replies.last_bytes.next = 2.into();
            } else {
                self.events.bucket.next = true;
                self.events.bucket_index.next = self.bucket_icmp_reply.val();
                self.replies.last_bytes.next = (bit_cast::<3, 16>(self.desc.ip_len.val() + 1) & 3) + 1;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse::kind::{KIND_ICMP, KIND_SESSION};
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

    /// One clock edge; whether `desc.done` was high before it.
    fn edge(agg: &mut Aggregator) -> bool {
        let done = agg.desc.done.val();
        tick!(&mut *agg);
        done
    }

    /// After `desc.done`: the descriptor withdrawn, the header buffer writes that trail by two
    /// register stages (their addresses), and the aggregator idle.
    fn finish(agg: &mut Aggregator) -> Vec<u64> {
        agg.desc.valid.next = false;
        let mut written = vec![];
        for _ in 0..3 {
            settle(agg);
            if agg.replies.hdr_write_enable.val() {
                written.push(agg.replies.hdr_write_address.val().index() as u64);
            }
            tick!(&mut *agg);
        }
        assert!(agg.idle.val(), "not idle after done");
        written
    }

    fn run(agg: &mut Aggregator, kind: u64, ip_len: u64) -> Effect {
        agg.desc.valid.next = true;
        agg.desc.kind.next = kind.into();
        agg.desc.ip_len.next = ip_len.into();
        let mut e = Effect::default();
        for c in 1..200 {
            settle(agg);
            if agg.events.bucket.val() {
                e.buckets.push(agg.events.bucket_index.val().index() as u64);
            }
            if agg.replies.hdr_write_enable.val() {
                e.header_words.push(agg.replies.hdr_write_address.val().index() as u64 & 15);
            }
            if agg.replies.load.val() {
                e.load = Some((
                    agg.replies.kind.val(),
                    agg.replies.nwords.val().index() as u64,
                    agg.replies.last_bytes.val().index() as u64,
                ));
            }
            if edge(agg) {
                e.cycles = c;
                e.header_words.extend(finish(agg).into_iter().map(|a| a & 15));
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
        agg.replies.free.next = true;
        agg.job.payload_words.next = 64.into();
        agg.job.workers.next = 4.into();
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

    /// Sessions against the contract: once a session is open, a contribution whose
    /// `job_number` is not the epoch is filed as `stale_session` in one cycle (nothing looked
    /// up), one with the epoch goes on to the scoreboard; a session message is filed after the
    /// two cycles of the session verdict — a counted join as a contribution with `ss_commit`, a
    /// silent one as a duplicate, neither loading a reply — and a reply (a probe: to the
    /// sender; the opening: to every rank) is a result of k + 13 words whose body is zeros and
    /// whose header word 10 carries the epoch in its low byte.
    #[test]
    fn sessions_are_sequenced_as_specified() {
        use crate::counters::BUCKET_CONTRIBUTION;
        let k = 32u64;
        let mut agg = Aggregator::new(256);
        agg.connect_all();
        agg.replies.free.next = true;
        agg.job.payload_words.next = k.into();
        agg.job.workers.next = 3.into();
        agg.ss_open.next = true;
        agg.ss_epoch.next = 5.into();
        agg.desc.rank.next = 2.into();
        // A stale contribution: job 4.
        agg.desc.header.h10.next = 0x0000_1104_u64.into();
        let stale = run(&mut agg, KIND_CONTRIBUTION, 0);
        assert_eq!(
            stale,
            Effect { cycles: 1, buckets: vec![spotagg_driver::DropReason::StaleSession as u64], ..Default::default() }
        );
        // Session messages: (counted, silent, opens) -> bucket, commit, reply to (first, last).
        for (verdict, bucket, commit, reply) in [
            ((true, false, false), BUCKET_CONTRIBUTION, true, None),
            ((false, true, false), BUCKET_DUPLICATE, false, None),
            ((false, false, false), BUCKET_DUPLICATE, false, Some((2, 2))),
            ((true, false, true), BUCKET_CONTRIBUTION, true, Some((0, 2))),
        ] {
            agg.ss_counted.next = verdict.0;
            agg.ss_silent.next = verdict.1;
            agg.ss_opens.next = verdict.2;
            agg.desc.valid.next = true;
            agg.desc.kind.next = KIND_SESSION.into();
            agg.desc.header.h10.next = 0x0000_8106_u64.into();
            let (mut buckets, mut commits, mut load, mut zeros, mut word10) = (vec![], 0, None, 0, None);
            let mut cycles = 0;
            for c in 1..400 {
                settle(&mut agg);
                // The lane adders' registered sum: stored + incoming (the stored values here are
                // garbage, which a reply must not carry).
                agg.sm.read_data.next = 0xdead_beef_u64.into();
                settle(&mut agg);
                if agg.events.bucket.val() {
                    buckets.push(agg.events.bucket_index.val().index() as u64);
                }
                commits += usize::from(agg.ss_commit.val());
                if agg.replies.buf_write_enable.val() {
                    zeros += usize::from(agg.replies.buf_write_data.val().index() == 0);
                }
                if agg.replies.hdr_write_enable.val() && agg.replies.hdr_write_address.val().index() & 15 == 10 {
                    word10 = Some(agg.replies.hdr_write_data.val().index() as u64);
                }
                if agg.replies.load.val() {
                    load = Some((
                        agg.replies.kind.val(),
                        agg.replies.nwords.val().index() as u64,
                        agg.replies.first.val().index() as u64,
                        agg.replies.last.val().index() as u64,
                    ));
                }
                let (stored, inc) = (agg.la.stored.val().index() as u32, agg.la.incoming.val().index() as u32);
                let sum = if agg.la.first.val() { inc } else { stored.wrapping_add(inc) };
                if edge(&mut agg) {
                    cycles = c;
                    break;
                }
                agg.la.sum.next = u64::from(sum).into();
            }
            let late = finish(&mut agg);
            let what = format!("verdict {verdict:?}");
            assert_eq!(buckets, vec![bucket], "{what}");
            assert_eq!(commits, usize::from(commit), "{what}");
            match reply {
                None => {
                    assert_eq!(cycles, 3, "{what}: Idle, verdict, decide");
                    assert!(load.is_none() && late.is_empty() && zeros == 0, "{what}");
                }
                Some((first, last)) => {
                    assert_eq!(load, Some((ReplyKind::Result, k + 13, first, last)), "{what}");
                    assert_eq!(zeros, k as usize, "{what}: a body of zeros");
                    assert_eq!(word10.map(|w| w & 0xffff), Some(0x8105), "{what}: msg_type, size and the epoch");
                }
            }
        }
    }

    /// The aggregator's neighbours, each a model of its own contract: the parser's frame buffer
    /// (read latency 2), the slot memory (values: latency 5; exponents: 1), the lane adders
    /// (registered sum, combinational exponent maxima), a scoreboard that answers a lookup
    /// the cycle after `sb_active` with the case's verdict (zeros otherwise), and the result
    /// builder's buffers, recorded.
    struct Neighbours {
        frame: Vec<u32>,
        frame_reads: [usize; 2],
        values: Vec<u32>,
        value_reads: [usize; 5],
        exponents: [u32; 64],
        exponent_read: u32,
        sum: u32,
        verdict: [bool; 4],
        answer: Option<[bool; 4]>,
        tx_words: std::collections::BTreeMap<u64, u32>,
        header_words: Vec<u64>,
        tx_free_after: usize,
    }

    /// What a contribution made the aggregator do.
    #[derive(Debug, Default, PartialEq)]
    struct Pass {
        cycles: usize,
        buckets: Vec<u64>,
        value_writes: Vec<(usize, u32)>,
        load: Option<(ReplyKind, u64, u64, u64)>,
        multicast: bool,
        retransmit: bool,
    }

    fn exp_max(stored: u16, incoming: u16) -> u16 {
        let m = |s: u16, i: u16| (s as u8 as i8).max(i as u8 as i8) as u8 as u16;
        (m(stored >> 8, incoming >> 8) << 8) | m(stored & 0xff, incoming & 0xff)
    }

    /// Presents a contribution of `rank` to (`slot`, `set`) with `incoming` values and
    /// exponents `exps`, the scoreboard answering `verdict` (new, first, last, complete).
    fn contribute(
        agg: &mut Aggregator,
        nb: &mut Neighbours,
        (rank, slot, set): (u64, u64, bool),
        incoming: &[u32],
        exps: u16,
        verdict: [bool; 4],
    ) -> Pass {
        for (j, v) in incoming.iter().enumerate() {
            nb.frame[512 + 13 + j] = *v;
        }
        nb.verdict = verdict;
        agg.desc.valid.next = true;
        agg.desc.kind.next = KIND_CONTRIBUTION.into();
        agg.desc.rank.next = rank.into();
        agg.desc.slot.next = slot.into();
        agg.desc.set.next = set;
        agg.desc.half.next = true;
        agg.desc.header.h12.next = ((u64::from(set) << 31) | (slot << 16) | u64::from(exps)).into();
        let mut pass = Pass::default();
        for c in 1..2000 {
            agg.replies.free.next = c > nb.tx_free_after;
            agg.buf_read_data.next = u64::from(nb.frame[nb.frame_reads[1]]).into();
            agg.sm.read_data.next = u64::from(nb.values[nb.value_reads[4]]).into();
            agg.ex.read_data.next = u64::from(nb.exponent_read).into();
            agg.la.sum.next = u64::from(nb.sum).into();
            let [new, first, last, complete] = nb.answer.unwrap_or_default();
            agg.sb.is_new.next = new;
            agg.sb.first.next = first;
            agg.sb.last.next = last;
            agg.sb.complete.next = complete;
            settle(agg);
            let (es, ei) = (agg.la.exp_stored.val().index() as u16, agg.la.exp_incoming.val().index() as u16);
            let exp_out = match (agg.la.exp_active.val(), agg.la.first.val()) {
                (false, _) => 0,
                (true, true) => ei,
                (true, false) => exp_max(es, ei),
            };
            agg.la.exp_out.next = u64::from(exp_out).into();
            settle(agg);
            if agg.events.bucket.val() {
                pass.buckets.push(agg.events.bucket_index.val().index() as u64);
            }
            pass.multicast |= agg.events.multicast.val();
            pass.retransmit |= agg.events.retransmit.val();
            if agg.sm.write_enable.val() {
                let a = agg.sm.write_address.val().index();
                let d = agg.sm.write_data.val().index() as u32;
                pass.value_writes.push((a, d));
                nb.values[a] = d;
            }
            if agg.replies.buf_write_enable.val() {
                nb.tx_words.insert(
                    agg.replies.buf_write_address.val().index() as u64,
                    agg.replies.buf_write_data.val().index() as u32,
                );
            }
            if agg.replies.hdr_write_enable.val() {
                nb.header_words.push(agg.replies.hdr_write_address.val().index() as u64);
            }
            if agg.replies.load.val() {
                assert!(c > nb.tx_free_after, "loaded while the result builder's half was busy");
                pass.load = Some((
                    agg.replies.kind.val(),
                    agg.replies.nwords.val().index() as u64,
                    agg.replies.first.val().index() as u64,
                    agg.replies.last.val().index() as u64,
                ));
            }
            if agg.ex.write_enable.val() {
                nb.exponents[agg.ex.write_address.val().index()] = agg.ex.write_data.val().index() as u32;
            }
            // The edge, for the neighbours and then the aggregator.
            nb.frame_reads = [agg.buf_read_address.val().index(), nb.frame_reads[0]];
            nb.value_reads.rotate_right(1);
            nb.value_reads[0] = agg.sm.read_address.val().index();
            nb.exponent_read = nb.exponents[agg.ex.read_address.val().index()];
            let (stored, inc) = (agg.la.stored.val().index() as u32, agg.la.incoming.val().index() as u32);
            nb.sum = if agg.la.first.val() { inc } else { stored.wrapping_add(inc) };
            nb.answer = agg.sb.active.val().then_some(nb.verdict);
            if edge(agg) {
                pass.cycles = c;
                nb.header_words.extend(finish(agg));
                return pass;
            }
        }
        panic!("no desc.done for the contribution of rank {rank}");
    }

    /// The sequencing of contributions against the contract, with k = 32 elements (the
    /// smallest payload: a result's header words are written during its body pass), n = 3
    /// workers, slot 5 set 1 (values at (5 · 2 + 1) · 256 + j): a first contribution writes
    /// its values and exponents as they are; a second adds them (wrapping) and takes the
    /// exponent maxima, nothing sent; the last adds, writes the sums to result buffer words
    /// 13.. of the builder's half and header words 0..=12, and loads one result to ranks
    /// 0..=2 (k + 13 words) — waiting while that half is busy, never dropping; a duplicate of
    /// an incomplete round is only filed; a duplicate of a complete round copies the stored
    /// sums and loads a result for its sender alone; slot memory unchanged. Cycles: 3 of
    /// lookup, then k + 6 of read-modify-write, plus Idle and Load.
    #[test]
    fn contributions_are_sequenced_as_specified() {
        let (k, n) = (32usize, 3u64);
        let mut agg = Aggregator::new(256);
        agg.connect_all();
        agg.job.payload_words.next = (k as u64).into();
        agg.job.workers.next = n.into();
        agg.replies.half.next = true;
        let mut nb = Neighbours {
            frame: vec![0; 1024],
            frame_reads: [0; 2],
            values: vec![0xdead_beef; 64 * 2 * 256],
            value_reads: [0; 5],
            exponents: [0; 64],
            exponent_read: 0,
            sum: 0,
            verdict: [false; 4],
            answer: None,
            tx_words: Default::default(),
            header_words: vec![],
            tx_free_after: 0,
        };
        let base = (5 * 2 + 1) * 256;
        // Values that wrap, and ones that do not.
        let contributions: Vec<Vec<u32>> = (0..3u32)
            .map(|r| (0..k as u32).map(|j| (j + 1).wrapping_mul(0x3fff_ffff_u32.wrapping_add(r * 977))).collect())
            .collect();
        let exps = [0x05fd_u16, 0x0380, 0xfa7f];
        let mut want = vec![0u32; k];
        let mut want_exps = 0u16;
        // new, first, last, complete
        let verdicts = [[true, true, false, false], [true, false, false, false], [true, false, true, false]];
        for (r, (values, verdict)) in contributions.iter().zip(verdicts).enumerate() {
            nb.tx_free_after = if r == 2 { 40 } else { 0 };
            nb.header_words.clear();
            let pass = contribute(&mut agg, &mut nb, (r as u64, 5, true), values, exps[r], verdict);
            for (w, v) in want.iter_mut().zip(values) {
                *w = if r == 0 { *v } else { w.wrapping_add(*v) };
            }
            want_exps = if r == 0 { exps[0] } else { exp_max(want_exps, exps[r]) };
            let writes: Vec<_> = (0..k).map(|j| (base + j, want[j])).collect();
            assert_eq!(pass.value_writes, writes, "rank {r}: slot memory writes");
            assert_eq!(nb.exponents[5] >> 16, u32::from(want_exps), "rank {r}: set 1's exponents");
            assert_eq!(nb.exponents[5] & 0xffff, 0, "rank {r}: set 0's exponents untouched");
            assert_eq!(pass.buckets, vec![BUCKET_CONTRIBUTION], "rank {r}");
            assert!(!pass.retransmit, "rank {r}");
            if r < 2 {
                assert_eq!(pass.cycles, 1 + 3 + k + 6, "rank {r}: cycles");
                assert_eq!((pass.load, pass.multicast), (None, false), "rank {r}: nothing sent");
                assert!(nb.tx_words.is_empty() && nb.header_words.is_empty(), "rank {r}: nothing written");
            } else {
                assert!(pass.cycles > 40 + k + 6, "the last waits for the busy half: {} cycles", pass.cycles);
                assert_eq!(pass.load, Some((ReplyKind::Result, k as u64 + 13, 0, n - 1)));
                assert!(pass.multicast);
                let sums: Vec<_> = (0..k).map(|j| (512 + 13 + j as u64, want[j])).collect();
                assert_eq!(nb.tx_words.iter().map(|(a, d)| (*a, *d)).collect::<Vec<_>>(), sums, "result body");
                assert_eq!(nb.header_words, (16..=28).collect::<Vec<_>>(), "header words 0..=12 of half 1");
            }
        }
        // Duplicates: of an incomplete round (filed, nothing else), of a complete one (resent).
        nb.tx_words.clear();
        nb.header_words.clear();
        let again = contribute(&mut agg, &mut nb, (1, 5, true), &[9; 32], 0, [false, false, false, false]);
        assert_eq!(again, Pass { cycles: 1 + 3, buckets: vec![BUCKET_DUPLICATE], ..Default::default() });
        assert!(nb.tx_words.is_empty() && nb.header_words.is_empty());
        let resend = contribute(&mut agg, &mut nb, (1, 5, true), &[9; 32], 0, [false, false, false, true]);
        assert_eq!(resend.buckets, vec![BUCKET_DUPLICATE]);
        assert!(resend.value_writes.is_empty(), "slot memory unchanged");
        assert_eq!(resend.load, Some((ReplyKind::Result, k as u64 + 13, 1, 1)), "to its sender alone");
        assert!(resend.retransmit && !resend.multicast);
        let sums: Vec<_> = (0..k).map(|j| (512 + 13 + j as u64, want[j])).collect();
        assert_eq!(nb.tx_words.iter().map(|(a, d)| (*a, *d)).collect::<Vec<_>>(), sums, "the stored sums");
        assert_eq!(nb.header_words, (16..=28).collect::<Vec<_>>());
        assert_eq!(nb.values[base..base + k], want, "slot memory holds the sums");
    }
}
