//! The result builder: sends the frames the aggregator prepared, from a two-half buffer.
//!
//! Each buffer half holds one frame image — words 0..13 in a small header buffer (so that the
//! aggregator writes a result's header while it writes the sums), the rest in the frame
//! buffer — and a small descriptor: the kind
//! (result, ARP reply, ICMP echo reply), a rank range, the word count and the bytes of the last
//! word. ARP and ICMP replies leave as written. A result is sent once per rank of the range, in
//! rank order; for each, the per-rank fields are patched in on the way out:
//! destination MAC (words 0, 1), IPv4 header checksum (word 6) and destination address
//! (words 7, 8), read from the worker table — so the payload is stored once and sent n times.
//!
//! Timing contract: a read pipeline of four stages with one enable (`go`: the output register
//! is empty or taken this cycle), so a low `word.ready` stalls every stage and nothing is lost.
//! Stage 1: header buffer and worker table read (one cycle, LUT RAM; their addresses are held
//! while stalled); stage 2: frame buffer read (block RAM, two cycles, read enable), the per-rank
//! checksum's first sum; stage 3: header or frame word selected, checksum folded; stage 4 (the
//! output register, `word_*` come straight from flip-flops): per-rank fields patched in. One word
//! a cycle while `word.ready` is high; the frames of a multicast follow each other with no gap;
//! the first word of a half leaves 5 cycles after the half is loaded. A half is freed once its
//! last word has left the buffers (stage 3), so the aggregator may refill it while the tail is
//! still in the pipeline.
//!
//! A half loaded with `parent` (docs/switch.md §6: a partial frame) is a result sent once, with
//! the parent's MAC and IPv4 address (the job's settings) patched in instead of a rank's (in
//! stage 3, so the worker table read path is unchanged); it does not pulse `frame_sent` (a
//! partial frame is outside the counters of §4).

use crate::block_ram::{BlockRam, PipelinedRam};
use crate::config_registers::{JobSettings, WorkerTableWrite};
use crate::word_stream::WordSource;
use rust_hdl::prelude::*;

/// What a frame of the buffer is: it decides which header words are patched per rank.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
pub enum ReplyKind {
    /// A result (multicast to a rank range, or one retransmission).
    Result,
    /// An ARP reply.
    ArpReply,
    /// An ICMP echo reply.
    EchoReply,
}

#[derive(Copy, Clone, PartialEq, Debug, LogicState)]
enum TxState {
    Idle,
    Send,
}

interface_pair! {
    /// The frames to send, written into the builder's buffers and loaded one a half, the
    /// builder's end.
    pub struct ReplyQueue join "ReplyQueueClient";
    /// The frames to send, the aggregator's end.
    pub struct ReplyQueueClient join "ReplyQueue";
    {
        /// Buffer write address (bit 9: half).
        buf_write_address: In Bits<10>,
        /// Buffer write data.
        buf_write_data: In Bits<32>,
        /// Buffer write strobe.
        buf_write_enable: In Bit,
        /// Header buffer write address (bit 4: half, bits 3..0: word 0..12).
        hdr_write_address: In Bits<5>,
        /// Header buffer write data.
        hdr_write_data: In Bits<32>,
        /// Header buffer write strobe.
        hdr_write_enable: In Bit,
        /// Pulse: the half `half` holds a frame to send.
        load: In Bit,
        /// What the frame is.
        kind: In ReplyKind,
        /// First rank.
        first: In Bits<5>,
        /// Last rank.
        last: In Bits<5>,
        /// Words in the frame.
        nwords: In Bits<10>,
        /// Valid bytes of the last word.
        last_bytes: In Bits<3>,
        /// The frame is a partial frame to the parent (docs/switch.md §6).
        parent: In Bit,
        /// The half to fill next.
        half: Out Bit,
        /// That half is free.
        free: Out Bit,
    }
}

/// The result builder.
#[derive(LogicBlock)]
pub struct ResultBuilder {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The frames to send.
    pub queue: ReplyQueue,
    /// The job's settings (switch IP, k).
    pub job: JobSettings,
    /// Worker table writes (the builder keeps addresses and MACs).
    pub wt: WorkerTableWrite,
    /// The frames sent, one word a cycle.
    pub word: WordSource,
    /// Pulse: a frame's last word left.
    pub frame_sent: Signal<Out, Bit>,
    /// Frames are queued or being sent.
    pub busy: Signal<Out, Bit>,
    tx_buf: PipelinedRam<10, 32>,
    hdr_buf: BlockRam<5, 32>,
    wt_ip: BlockRam<5, 32>,
    wt_mac_hi: BlockRam<5, 16>,
    wt_mac_lo: BlockRam<5, 32>,
    full0: DFF<Bit>,
    full1: DFF<Bit>,
    lhalf: DFF<Bit>,
    free: DFF<Bit>,
    shalf: DFF<Bit>,
    k0: DFF<ReplyKind>,
    f0: DFF<Bits<5>>,
    l0: DFF<Bits<5>>,
    e0: DFF<Bits<10>>,
    e0m1: DFF<Bits<10>>,
    b0: DFF<Bits<3>>,
    k1: DFF<ReplyKind>,
    f1: DFF<Bits<5>>,
    l1: DFF<Bits<5>>,
    e1: DFF<Bits<10>>,
    e1m1: DFF<Bits<10>>,
    b1: DFF<Bits<3>>,
    p0: DFF<Bit>,
    p1: DFF<Bit>,
    par1: DFF<Bit>,
    par2: DFF<Bit>,
    par3: DFF<Bit>,
    par4: DFF<Bit>,
    ck_parent: DFF<Bits<20>>,
    parent_cur: Signal<Local, Bit>,
    sum_sel: Signal<Local, Bits<20>>,
    state: DFF<TxState>,
    cur: DFF<Bits<5>>,
    w: DFF<Bits<10>>,
    wend: DFF<Bit>,
    more: DFF<Bit>,
    ck_base_a: DFF<Bits<20>>,
    ck_base_b: DFF<Bits<20>>,
    ck_base: DFF<Bits<20>>,
    hold_hdr: DFF<Bits<5>>,
    hold_wt: DFF<Bits<5>>,
    v1: DFF<Bit>,
    hdr1: DFF<Bit>,
    last1: DFF<Bit>,
    bytes1: DFF<Bits<3>>,
    patch1: DFF<Bits<3>>,
    end1: DFF<Bit>,
    half1: DFF<Bit>,
    v2: DFF<Bit>,
    hdr2: DFF<Bit>,
    last2: DFF<Bit>,
    bytes2: DFF<Bits<3>>,
    patch2: DFF<Bits<3>>,
    end2: DFF<Bit>,
    half2: DFF<Bit>,
    hword2: DFF<Bits<32>>,
    mac_hi2: DFF<Bits<16>>,
    mac_lo2: DFF<Bits<32>>,
    ip2: DFF<Bits<32>>,
    sum2: DFF<Bits<20>>,
    v3: DFF<Bit>,
    last3: DFF<Bit>,
    bytes3: DFF<Bits<3>>,
    patch3: DFF<Bits<3>>,
    raw3: DFF<Bits<32>>,
    mac_hi3: DFF<Bits<16>>,
    mac_lo3: DFF<Bits<32>>,
    ip3: DFF<Bits<32>>,
    fold3: DFF<Bits<17>>,
    v4: DFF<Bit>,
    last4: DFF<Bit>,
    bytes4: DFF<Bits<3>>,
    data4: DFF<Bits<32>>,
    kind: Signal<Local, ReplyKind>,
    last_rank_m1: Signal<Local, Bits<5>>,
    l0m1: DFF<Bits<5>>,
    l1m1: DFF<Bits<5>>,
    last_word: Signal<Local, Bits<10>>,
    last_word_m1: Signal<Local, Bits<10>>,
    last_bytes: Signal<Local, Bits<3>>,
    go: Signal<Local, Bit>,
    issue: Signal<Local, Bit>,
    raw: Signal<Local, Bits<32>>,
    ck: Signal<Local, Bits<16>>,
    hdr_idx: Signal<Local, Bits<5>>,
}

impl Default for ResultBuilder {
    fn default() -> Self {
        Self::new()
    }
}

impl ResultBuilder {
    /// A result builder with a 2 × 2048-byte buffer and a 32-entry worker table.
    pub fn new() -> Self {
        Self {
            clock: Default::default(),
            queue: Default::default(),
            job: Default::default(),
            wt: Default::default(),
            word: Default::default(),
            frame_sent: Default::default(),
            busy: Default::default(),
            tx_buf: PipelinedRam::new(1024),
            hdr_buf: BlockRam::new(32),
            wt_ip: BlockRam::new(32),
            wt_mac_hi: BlockRam::new(32),
            wt_mac_lo: BlockRam::new(32),
            full0: Default::default(),
            full1: Default::default(),
            lhalf: Default::default(),
            free: Default::default(),
            shalf: Default::default(),
            k0: Default::default(),
            f0: Default::default(),
            l0: Default::default(),
            e0: Default::default(),
            e0m1: Default::default(),
            b0: Default::default(),
            k1: Default::default(),
            f1: Default::default(),
            l1: Default::default(),
            e1: Default::default(),
            e1m1: Default::default(),
            b1: Default::default(),
            p0: Default::default(),
            p1: Default::default(),
            par1: Default::default(),
            par2: Default::default(),
            par3: Default::default(),
            par4: Default::default(),
            ck_parent: Default::default(),
            parent_cur: Default::default(),
            sum_sel: Default::default(),
            state: Default::default(),
            cur: Default::default(),
            w: Default::default(),
            wend: Default::default(),
            more: Default::default(),
            ck_base_a: Default::default(),
            ck_base_b: Default::default(),
            ck_base: Default::default(),
            hold_hdr: Default::default(),
            hold_wt: Default::default(),
            v1: Default::default(),
            hdr1: Default::default(),
            last1: Default::default(),
            bytes1: Default::default(),
            patch1: Default::default(),
            end1: Default::default(),
            half1: Default::default(),
            v2: Default::default(),
            hdr2: Default::default(),
            last2: Default::default(),
            bytes2: Default::default(),
            patch2: Default::default(),
            end2: Default::default(),
            half2: Default::default(),
            hword2: Default::default(),
            mac_hi2: Default::default(),
            mac_lo2: Default::default(),
            ip2: Default::default(),
            sum2: Default::default(),
            v3: Default::default(),
            last3: Default::default(),
            bytes3: Default::default(),
            patch3: Default::default(),
            raw3: Default::default(),
            mac_hi3: Default::default(),
            mac_lo3: Default::default(),
            ip3: Default::default(),
            fold3: Default::default(),
            v4: Default::default(),
            last4: Default::default(),
            bytes4: Default::default(),
            data4: Default::default(),
            kind: Default::default(),
            last_rank_m1: Default::default(),
            l0m1: Default::default(),
            l1m1: Default::default(),
            last_word: Default::default(),
            last_word_m1: Default::default(),
            last_bytes: Default::default(),
            go: Default::default(),
            issue: Default::default(),
            raw: Default::default(),
            ck: Default::default(),
            hdr_idx: Default::default(),
        }
    }
}

impl Logic for ResultBuilder {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, full0, full1, lhalf, free, shalf, k0, f0, l0, l0m1, l1m1, e0, e0m1, b0, k1, f1, l1, e1, e1m1,
            b1, state, cur, w, wend, more, ck_base_a, ck_base_b, ck_base, hold_hdr, hold_wt, v1, hdr1, last1, bytes1,
            patch1, end1, half1, v2, hdr2, last2, bytes2, patch2, end2, half2, hword2, mac_hi2, mac_lo2, ip2, sum2, v3,
            last3, bytes3, patch3, raw3, mac_hi3, mac_lo3, ip3, fold3, v4, last4, bytes4, data4, p0, p1, par1, par2,
            par3, par4, ck_parent
        );
        clock!(self, clock, tx_buf, hdr_buf, wt_ip, wt_mac_hi, wt_mac_lo);
        self.hdr_buf.write_address.next = self.queue.hdr_write_address.val();
        self.hdr_buf.write_data.next = self.queue.hdr_write_data.val();
        self.hdr_buf.write_enable.next = self.queue.hdr_write_enable.val();
        self.tx_buf.write_address.next = self.queue.buf_write_address.val();
        self.tx_buf.write_data.next = self.queue.buf_write_data.val();
        self.tx_buf.write_enable.next = self.queue.buf_write_enable.val();
        self.wt_ip.write_address.next = self.wt.address.val();
        self.wt_ip.write_data.next = self.wt.data.val();
        self.wt_ip.write_enable.next = self.wt.write_ip.val();
        self.wt_mac_hi.write_address.next = self.wt.address.val();
        self.wt_mac_hi.write_data.next = bit_cast::<16, 32>(self.wt.data.val());
        self.wt_mac_hi.write_enable.next = self.wt.write_mac_hi.val();
        self.wt_mac_lo.write_address.next = self.wt.address.val();
        self.wt_mac_lo.write_data.next = self.wt.data.val();
        self.wt_mac_lo.write_enable.next = self.wt.write_mac_lo.val();
        // Loading (aggregator side).
        self.queue.half.next = self.lhalf.q.val();
        // `load_free` from a flip-flop holding the next cycle's `!full[lhalf]` (set below).
        self.queue.free.next = self.free.q.val();
        self.busy.next = self.full0.q.val()
            | self.full1.q.val()
            | (self.state.q.val() != TxState::Idle)
            | self.v1.q.val()
            | self.v2.q.val()
            | self.v3.q.val()
            | self.v4.q.val();
        // The checksum's fixed part (configuration only), in two registered steps.
        self.ck_base_a.d.next =
            bit_cast::<20, 32>((bit_cast::<32, 9>(self.job.payload_words.val()) << 2) + 38) + 0x4500 + 0x4011;
        self.ck_base_b.d.next =
            bit_cast::<20, 32>(self.job.switch_ip.val() >> 16) + bit_cast::<20, 32>(self.job.switch_ip.val() & 0xffff);
        self.ck_base.d.next = self.ck_base_a.q.val() + self.ck_base_b.q.val();
        // The half being issued.
        if self.shalf.q.val() {
            self.kind.next = self.k1.q.val();
            self.last_rank_m1.next = self.l1m1.q.val();
            self.last_word.next = self.e1.q.val();
            self.last_word_m1.next = self.e1m1.q.val();
            self.last_bytes.next = self.b1.q.val();
            self.parent_cur.next = self.p1.q.val();
        } else {
            self.kind.next = self.k0.q.val();
            self.last_rank_m1.next = self.l0m1.q.val();
            self.last_word.next = self.e0.q.val();
            self.last_word_m1.next = self.e0m1.q.val();
            self.last_bytes.next = self.b0.q.val();
            self.parent_cur.next = self.p0.q.val();
        }
        // Output register and pipeline enable.
        self.word.valid.next = self.v4.q.val();
        self.word.data.next = self.data4.q.val();
        self.word.last.next = self.last4.q.val();
        self.word.bytes.next = self.bytes4.q.val();
        self.frame_sent.next = self.v4.q.val() & self.word.ready.val() & self.last4.q.val() & !self.par4.q.val();
        // The parent's checksum part (configuration only), registered after the fixed part.
        self.ck_parent.d.next = self.ck_base.q.val()
            + bit_cast::<20, 32>(self.job.parent_ip.val() >> 16)
            + bit_cast::<20, 32>(self.job.parent_ip.val() & 0xffff);
        self.go.next = !self.v4.q.val() | self.word.ready.val();
        self.issue.next = false;
        // `wend`: `w` is the half's last word index; `more`: a result whose rank is not the last
        // (another rank follows). Both registered one cycle ahead, so the issue decision is a few gates.
        match self.state.q.val() {
            TxState::Idle => {
                self.w.d.next = 0.into();
                self.wend.d.next = self.last_word.val() == 0;
                if self.shalf.q.val() {
                    if self.full1.q.val() {
                        self.cur.d.next = self.f1.q.val();
                        self.more.d.next =
                            (self.k1.q.val() == ReplyKind::Result) & (self.f1.q.val() != self.l1.q.val());
                        self.state.d.next = TxState::Send;
                    }
                } else if self.full0.q.val() {
                    self.cur.d.next = self.f0.q.val();
                    self.more.d.next = (self.k0.q.val() == ReplyKind::Result) & (self.f0.q.val() != self.l0.q.val());
                    self.state.d.next = TxState::Send;
                }
            }
            _ => {
                if self.go.val() {
                    self.issue.next = true;
                    if self.wend.q.val() {
                        self.w.d.next = 0.into();
                        self.wend.d.next = self.last_word.val() == 0;
                        if self.more.q.val() {
                            // Next rank: its first word is issued next cycle.
                            self.cur.d.next = self.cur.q.val() + 1;
                            // cur + 1 != last, as an equality against last - 1 registered at the load.
                            self.more.d.next = self.cur.q.val() != self.last_rank_m1.val();
                        } else {
                            self.shalf.d.next = !self.shalf.q.val();
                            self.state.d.next = TxState::Idle;
                        }
                    } else {
                        self.w.d.next = self.w.q.val() + 1;
                        self.wend.d.next = self.w.q.val() == self.last_word_m1.val();
                    }
                }
            }
        }
        // Stage 1: the issued word's header buffer and worker table reads (addresses held while
        // stalled, so the read data stays that of the word in stage 1).
        self.hdr_idx.next = bit_cast::<5, 10>(self.w.q.val()) & 15;
        if self.shalf.q.val() {
            self.hdr_idx.next = (bit_cast::<5, 10>(self.w.q.val()) & 15) | 16;
        }
        self.hdr_buf.read_address.next = self.hold_hdr.q.val();
        self.wt_ip.read_address.next = self.hold_wt.q.val();
        self.wt_mac_hi.read_address.next = self.hold_wt.q.val();
        self.wt_mac_lo.read_address.next = self.hold_wt.q.val();
        self.tx_buf.read_address.next = self.w.q.val();
        if self.shalf.q.val() {
            self.tx_buf.read_address.next = self.w.q.val() | 512;
        }
        self.tx_buf.read_enable.next = self.go.val();
        self.raw.next = self.tx_buf.read_data.val();
        if self.hdr2.q.val() {
            self.raw.next = self.hword2.q.val();
        }
        self.ck.next = !(bit_cast::<16, 17>(self.fold3.q.val()) + bit_cast::<16, 17>(self.fold3.q.val() >> 16));
        self.sum_sel.next = self.sum2.q.val();
        if self.go.val() {
            self.hdr_buf.read_address.next = self.hdr_idx.val();
            self.wt_ip.read_address.next = self.cur.q.val();
            self.wt_mac_hi.read_address.next = self.cur.q.val();
            self.wt_mac_lo.read_address.next = self.cur.q.val();
            self.hold_hdr.d.next = self.hdr_idx.val();
            self.hold_wt.d.next = self.cur.q.val();
            // Into stage 1.
            self.v1.d.next = self.issue.val();
            self.hdr1.d.next = self.w.q.val() < 13;
            self.last1.d.next = self.wend.q.val();
            self.bytes1.d.next = 4.into();
            if self.wend.q.val() {
                self.bytes1.d.next = self.last_bytes.val();
            }
            self.end1.d.next = self.wend.q.val() & !self.more.q.val();
            self.half1.d.next = self.shalf.q.val();
            self.par1.d.next = self.parent_cur.val();
            self.patch1.d.next = 0.into();
            if self.kind.val() == ReplyKind::Result {
                match self.w.q.val().index() {
                    0 => {
                        self.patch1.d.next = 1.into();
                    }
                    1 => {
                        self.patch1.d.next = 2.into();
                    }
                    6 => {
                        self.patch1.d.next = 3.into();
                    }
                    7 => {
                        self.patch1.d.next = 4.into();
                    }
                    8 => {
                        self.patch1.d.next = 5.into();
                    }
                    _ => {}
                }
            }
            // Into stage 2.
            self.v2.d.next = self.v1.q.val();
            self.hdr2.d.next = self.hdr1.q.val();
            self.last2.d.next = self.last1.q.val();
            self.bytes2.d.next = self.bytes1.q.val();
            self.patch2.d.next = self.patch1.q.val();
            self.end2.d.next = self.end1.q.val();
            self.half2.d.next = self.half1.q.val();
            self.par2.d.next = self.par1.q.val();
            self.hword2.d.next = self.hdr_buf.read_data.val();
            self.mac_hi2.d.next = self.wt_mac_hi.read_data.val();
            self.mac_lo2.d.next = self.wt_mac_lo.read_data.val();
            self.ip2.d.next = self.wt_ip.read_data.val();
            self.sum2.d.next = self.ck_base.q.val()
                + bit_cast::<20, 32>(self.wt_ip.read_data.val() >> 16)
                + bit_cast::<20, 32>(self.wt_ip.read_data.val() & 0xffff);
            // Into stage 3: the buffers are read, the half is free once its last word is here.
            self.v3.d.next = self.v2.q.val();
            self.last3.d.next = self.last2.q.val();
            self.bytes3.d.next = self.bytes2.q.val();
            self.patch3.d.next = self.patch2.q.val();
            self.raw3.d.next = self.raw.val();
            self.mac_hi3.d.next = self.mac_hi2.q.val();
            self.mac_lo3.d.next = self.mac_lo2.q.val();
            self.ip3.d.next = self.ip2.q.val();
            self.sum_sel.next = self.sum2.q.val();
            if self.par2.q.val() & self.job.parent_on.val() {
                self.mac_hi3.d.next = self.job.parent_mac_hi.val();
                self.mac_lo3.d.next = self.job.parent_mac_lo.val();
                self.ip3.d.next = self.job.parent_ip.val();
                self.sum_sel.next = self.ck_parent.q.val();
            }
            self.par3.d.next = self.par2.q.val();
            self.fold3.d.next =
                bit_cast::<17, 20>(self.sum_sel.val() & 0xffff) + bit_cast::<17, 20>(self.sum_sel.val() >> 16);
            if self.v2.q.val() & self.end2.q.val() {
                if self.half2.q.val() {
                    self.full1.d.next = false;
                } else {
                    self.full0.d.next = false;
                }
            }
            // Into stage 4 (the output register): the rank's fields patched in.
            self.v4.d.next = self.v3.q.val();
            self.last4.d.next = self.last3.q.val();
            self.bytes4.d.next = self.bytes3.q.val();
            self.par4.d.next = self.par3.q.val();
            match self.patch3.q.val().index() {
                1 => {
                    self.data4.d.next = (bit_cast::<32, 16>(self.mac_hi3.q.val()) << 16) | (self.mac_lo3.q.val() >> 16);
                }
                2 => {
                    self.data4.d.next = (self.mac_lo3.q.val() << 16) | (self.raw3.q.val() & 0xffff);
                }
                3 => {
                    self.data4.d.next = (bit_cast::<32, 16>(self.ck.val()) << 16) | (self.raw3.q.val() & 0xffff);
                }
                4 => {
                    self.data4.d.next = (self.raw3.q.val() & 0xffff_0000_u64) | (self.ip3.q.val() >> 16);
                }
                5 => {
                    self.data4.d.next = (self.ip3.q.val() << 16) | (self.raw3.q.val() & 0xffff);
                }
                _ => {
                    self.data4.d.next = self.raw3.q.val();
                }
            }
        }
        if self.queue.load.val() {
            if self.lhalf.q.val() {
                self.full1.d.next = true;
                self.k1.d.next = self.queue.kind.val();
                self.f1.d.next = self.queue.first.val();
                self.l1.d.next = self.queue.last.val();
                self.l1m1.d.next = self.queue.last.val() - 1;
                self.e1.d.next = self.queue.nwords.val() - 1;
                self.e1m1.d.next = self.queue.nwords.val() - 2;
                self.b1.d.next = self.queue.last_bytes.val();
                self.p1.d.next = self.queue.parent.val();
            } else {
                self.full0.d.next = true;
                self.k0.d.next = self.queue.kind.val();
                self.f0.d.next = self.queue.first.val();
                self.l0.d.next = self.queue.last.val();
                self.l0m1.d.next = self.queue.last.val() - 1;
                self.e0.d.next = self.queue.nwords.val() - 1;
                self.e0m1.d.next = self.queue.nwords.val() - 2;
                self.b0.d.next = self.queue.last_bytes.val();
                self.p0.d.next = self.queue.parent.val();
            }
            self.lhalf.d.next = !self.lhalf.q.val();
        }
        self.free.d.next = !self.full0.d.val();
        if self.lhalf.d.val() {
            self.free.d.next = !self.full1.d.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::frame_words;
    use crate::step::settle;
    use spotagg_driver::wire::checksum;

    const SWITCH_IP: [u8; 4] = [192, 0, 2, 1];
    const K: usize = 8;

    fn mac(rank: u8) -> [u8; 6] {
        [0x02, 0x00, 0x5a, 0x00, 0x01, rank]
    }

    fn ip(rank: u8) -> [u8; 4] {
        [192, 0, 2, 10 + rank]
    }

    /// A result frame image as the aggregator writes it: destination MAC, checksum and
    /// destination IPv4 left zero (patched per rank), k = 8 elements.
    fn result_image() -> Vec<u8> {
        let mut f = vec![0u8; 6];
        f.extend([0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, 0x08, 0x00, 0x45, 0x00]);
        f.extend(((4 * K + 38) as u16).to_be_bytes());
        f.extend([0, 0, 0, 0, 0x40, 0x11, 0, 0]);
        f.extend(SWITCH_IP);
        f.extend([0; 4]);
        f.extend([0xbe, 0xe0, 0xbe, 0xe3]);
        f.extend(((4 * K + 18) as u16).to_be_bytes());
        f.extend([0, 0, 0x11, 0x00, 0, 0, 0, 0, 0x80, 0x02, 0x12, 0x34]);
        f.extend((0..4 * K).map(|i| (i * 7 + 3) as u8));
        f
    }

    struct Bench {
        uut: ResultBuilder,
        cycles: usize,
    }

    impl Bench {
        fn new() -> Bench {
            let mut uut = ResultBuilder::new();
            uut.connect_all();
            uut.job.switch_ip.next = u64::from(u32::from_be_bytes(SWITCH_IP)).into();
            uut.job.payload_words.next = (K as u64).into();
            let mut b = Bench { uut, cycles: 0 };
            for rank in 0..4u8 {
                let m = mac(rank);
                for (what, data) in [
                    (0, u64::from(u32::from_be_bytes(ip(rank)))),
                    (1, u64::from(u16::from_be_bytes([m[0], m[1]]))),
                    (2, u64::from(u32::from_be_bytes(m[2..6].try_into().unwrap()))),
                ] {
                    b.uut.wt.offer(rank, data, [what == 0, what == 1, what == 2]);
                    b.cycle();
                }
            }
            b.uut.wt.offer(0, 0, [false; 3]);
            b
        }

        fn cycle(&mut self) {
            tick!(&mut self.uut);
            self.cycles += 1;
        }

        /// Writes `image` into the free half and loads it as `kind` for ranks `first..=last`.
        fn load(&mut self, image: &[u8], kind: ReplyKind, first: u8, last: u8) {
            settle(&mut self.uut);
            assert!(self.uut.queue.free.val(), "no free half");
            let half = u64::from(self.uut.queue.half.val());
            let words: Vec<u64> = frame_words(image).iter().map(|w| w.0).collect();
            for (i, w) in words.iter().enumerate() {
                self.uut.queue.buf_write_address.next = ((half << 9) | i as u64).into();
                self.uut.queue.buf_write_data.next = (*w).into();
                self.uut.queue.buf_write_enable.next = true;
                self.uut.queue.hdr_write_enable.next = i < 13;
                self.uut.queue.hdr_write_address.next = ((half << 4) | (i as u64 & 15)).into();
                self.uut.queue.hdr_write_data.next = (*w).into();
                self.cycle();
            }
            self.uut.queue.buf_write_enable.next = false;
            self.uut.queue.hdr_write_enable.next = false;
            self.uut.queue.load.next = true;
            self.uut.queue.kind.next = kind;
            self.uut.queue.first.next = u64::from(first).into();
            self.uut.queue.last.next = u64::from(last).into();
            self.uut.queue.nwords.next = (words.len() as u64).into();
            let last_bytes = (image.len() - 1) % 4 + 1;
            self.uut.queue.last_bytes.next = (last_bytes as u64).into();
            self.cycle();
            self.uut.queue.load.next = false;
        }

        /// The frames that leave within `cycles`, taken with `ready` low one cycle in three.
        fn collect(&mut self, cycles: usize) -> Vec<Vec<u8>> {
            let (mut frames, mut cur) = (vec![], vec![]);
            for c in 0..cycles {
                self.uut.word.ready.next = c % 3 != 2;
                settle(&mut self.uut);
                if self.uut.word.valid.val() && self.uut.word.ready.val() {
                    let w = (self.uut.word.data.val().index() as u32).to_be_bytes();
                    if self.uut.word.last.val() {
                        let n = self.uut.word.bytes.val().index();
                        assert!((1..=4).contains(&n), "last word with {n} bytes");
                        cur.extend(&w[..n]);
                        frames.push(std::mem::take(&mut cur));
                    } else {
                        cur.extend(w);
                    }
                }
                self.cycle();
            }
            assert!(cur.is_empty(), "a frame left unfinished");
            frames
        }
    }

    /// The builder's framing contract, against a model of it: a result goes out once per rank
    /// of its range in rank order, each a copy of the image with that rank's MAC and IPv4
    /// address patched in and a good header checksum, nothing else changed; an echo reply goes
    /// out once as written, its last word cut to its byte count.
    #[test]
    fn results_once_per_rank_and_replies_as_written() {
        let mut b = Bench::new();
        let image = result_image();
        b.load(&image, ReplyKind::Result, 1, 3);
        let mut reply = image.clone();
        reply.truncate(image.len() - 3);
        reply[0] = 0x0a;
        b.load(&reply, ReplyKind::EchoReply, 0, 0);
        let frames = b.collect(600);
        assert_eq!(frames.len(), 4, "frames of lengths {:?}", frames.iter().map(Vec::len).collect::<Vec<_>>());
        for (f, rank) in frames[..3].iter().zip(1u8..) {
            let mut want = image.clone();
            want[0..6].copy_from_slice(&mac(rank));
            want[30..34].copy_from_slice(&ip(rank));
            want[24..26].copy_from_slice(&f[24..26]);
            assert_eq!(f, &want, "rank {rank}");
            assert!(checksum::verify(&f[14..34]), "rank {rank}: header checksum {:02x?}", &f[24..26]);
        }
        assert_eq!(frames[3], reply);
    }
}
