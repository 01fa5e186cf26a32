//! The result builder: sends the frames the aggregator prepared, from a two-half buffer.
//!
//! Each buffer half holds one frame image — words 0..13 in a small header buffer (so that the
//! aggregator writes a result's header while it writes the sums), the rest in the frame
//! buffer — and a small descriptor: the kind
//! (result, ARP reply, ICMP echo reply), a rank range, the word count and the bytes of the last
//! word. ARP and ICMP replies leave as written. A result is sent once per rank of the range, in
//! rank order; for each, the per-rank fields are patched in on the way out:
//! destination MAC (words 0, 1), IPv4 header checksum (word 6) and destination address
//! (words 7, 8), read from the worker table (a block RAM) — so the payload is stored once and
//! sent n times.
//!
//! Timing: 2 cycles before the first frame of a half (worker table read, then the header
//! checksum over the fixed fields and the rank's address); the frames of a multicast follow
//! each other with no gap (the next rank's entry is read with the last word, its checksum
//! computed during words 0..5); one word a cycle as long as `word_ready` is high. A half is freed after its last frame; the aggregator fills the other
//! half meanwhile.

use crate::block_ram::BlockRam;
use rust_hdl::prelude::*;

#[derive(Copy, Clone, PartialEq, Debug, LogicState)]
enum TxState {
    Idle,
    Prep1,
    Prep2,
    Send,
}

/// The result builder.
#[derive(LogicBlock)]
pub struct ResultBuilder {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Buffer write address (bit 9: half).
    pub buf_write_address: Signal<In, Bits<10>>,
    /// Buffer write data.
    pub buf_write_data: Signal<In, Bits<32>>,
    /// Buffer write strobe.
    pub buf_write_enable: Signal<In, Bit>,
    /// Header buffer write address (bit 4: half, bits 3..0: word 0..12).
    pub hdr_write_address: Signal<In, Bits<5>>,
    /// Header buffer write data.
    pub hdr_write_data: Signal<In, Bits<32>>,
    /// Header buffer write strobe.
    pub hdr_write_enable: Signal<In, Bit>,
    /// Pulse: the half `load_half` holds a frame to send.
    pub load: Signal<In, Bit>,
    /// 0 result, 1 ARP reply, 2 ICMP echo reply.
    pub load_kind: Signal<In, Bits<2>>,
    /// First rank.
    pub load_first: Signal<In, Bits<5>>,
    /// Last rank.
    pub load_last: Signal<In, Bits<5>>,
    /// Words in the frame.
    pub load_nwords: Signal<In, Bits<10>>,
    /// Valid bytes of the last word.
    pub load_last_bytes: Signal<In, Bits<3>>,
    /// The half to fill next.
    pub load_half: Signal<Out, Bit>,
    /// That half is free.
    pub load_free: Signal<Out, Bit>,
    /// Switch IPv4 address.
    pub switch_ip: Signal<In, Bits<32>>,
    /// Elements per payload k.
    pub payload_words: Signal<In, Bits<9>>,
    /// Worker table entry to write.
    pub wt_address: Signal<In, Bits<5>>,
    /// Worker table data.
    pub wt_data: Signal<In, Bits<32>>,
    /// Write a worker's IPv4 address.
    pub wt_write_ip: Signal<In, Bit>,
    /// Write a worker's MAC bytes 0..2.
    pub wt_write_mac_hi: Signal<In, Bit>,
    /// Write a worker's MAC bytes 2..6.
    pub wt_write_mac_lo: Signal<In, Bit>,
    /// Word valid.
    pub word_valid: Signal<Out, Bit>,
    /// Word data.
    pub word_data: Signal<Out, Bits<32>>,
    /// Last word of the frame.
    pub word_last: Signal<Out, Bit>,
    /// Valid bytes of the last word.
    pub word_bytes: Signal<Out, Bits<3>>,
    /// Downstream takes the word.
    pub word_ready: Signal<In, Bit>,
    /// Pulse: a frame's last word left.
    pub frame_sent: Signal<Out, Bit>,
    /// Frames are queued or being sent.
    pub busy: Signal<Out, Bit>,
    tx_buf: BlockRam<10, 32>,
    hdr_buf: BlockRam<5, 32>,
    wt_ip: BlockRam<5, 32>,
    wt_mac_hi: BlockRam<5, 16>,
    wt_mac_lo: BlockRam<5, 32>,
    full0: DFF<Bit>,
    full1: DFF<Bit>,
    lhalf: DFF<Bit>,
    shalf: DFF<Bit>,
    k0: DFF<Bits<2>>,
    f0: DFF<Bits<5>>,
    l0: DFF<Bits<5>>,
    n0: DFF<Bits<10>>,
    b0: DFF<Bits<3>>,
    k1: DFF<Bits<2>>,
    f1: DFF<Bits<5>>,
    l1: DFF<Bits<5>>,
    n1: DFF<Bits<10>>,
    b1: DFF<Bits<3>>,
    state: DFF<TxState>,
    cur: DFF<Bits<5>>,
    w: DFF<Bits<10>>,
    ck: DFF<Bits<16>>,
    kind: Signal<Local, Bits<2>>,
    last_rank: Signal<Local, Bits<5>>,
    nwords: Signal<Local, Bits<10>>,
    last_bytes: Signal<Local, Bits<3>>,
    advance: Signal<Local, Bit>,
    raw: Signal<Local, Bits<32>>,
    sum: Signal<Local, Bits<20>>,
    fold: Signal<Local, Bits<17>>,
    rd_idx: Signal<Local, Bits<10>>,
    wt_idx: Signal<Local, Bits<5>>,
    next_rank: Signal<Local, Bit>,
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
            buf_write_address: Default::default(),
            buf_write_data: Default::default(),
            buf_write_enable: Default::default(),
            hdr_write_address: Default::default(),
            hdr_write_data: Default::default(),
            hdr_write_enable: Default::default(),
            load: Default::default(),
            load_kind: Default::default(),
            load_first: Default::default(),
            load_last: Default::default(),
            load_nwords: Default::default(),
            load_last_bytes: Default::default(),
            load_half: Default::default(),
            load_free: Default::default(),
            switch_ip: Default::default(),
            payload_words: Default::default(),
            wt_address: Default::default(),
            wt_data: Default::default(),
            wt_write_ip: Default::default(),
            wt_write_mac_hi: Default::default(),
            wt_write_mac_lo: Default::default(),
            word_valid: Default::default(),
            word_data: Default::default(),
            word_last: Default::default(),
            word_bytes: Default::default(),
            word_ready: Default::default(),
            frame_sent: Default::default(),
            busy: Default::default(),
            tx_buf: BlockRam::new(1024),
            hdr_buf: BlockRam::new(32),
            wt_ip: BlockRam::new(32),
            wt_mac_hi: BlockRam::new(32),
            wt_mac_lo: BlockRam::new(32),
            full0: Default::default(),
            full1: Default::default(),
            lhalf: Default::default(),
            shalf: Default::default(),
            k0: Default::default(),
            f0: Default::default(),
            l0: Default::default(),
            n0: Default::default(),
            b0: Default::default(),
            k1: Default::default(),
            f1: Default::default(),
            l1: Default::default(),
            n1: Default::default(),
            b1: Default::default(),
            state: Default::default(),
            cur: Default::default(),
            w: Default::default(),
            ck: Default::default(),
            kind: Default::default(),
            last_rank: Default::default(),
            nwords: Default::default(),
            last_bytes: Default::default(),
            advance: Default::default(),
            raw: Default::default(),
            sum: Default::default(),
            fold: Default::default(),
            rd_idx: Default::default(),
            wt_idx: Default::default(),
            next_rank: Default::default(),
        }
    }
}

impl Logic for ResultBuilder {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, full0, full1, lhalf, shalf, k0, f0, l0, n0, b0, k1, f1, l1, n1, b1, state,
            cur, w, ck
        );
        clock!(self, clock, tx_buf, hdr_buf, wt_ip, wt_mac_hi, wt_mac_lo);
        self.hdr_buf.write_address.next = self.hdr_write_address.val();
        self.hdr_buf.write_data.next = self.hdr_write_data.val();
        self.hdr_buf.write_enable.next = self.hdr_write_enable.val();
        self.tx_buf.write_address.next = self.buf_write_address.val();
        self.tx_buf.write_data.next = self.buf_write_data.val();
        self.tx_buf.write_enable.next = self.buf_write_enable.val();
        self.wt_ip.write_address.next = self.wt_address.val();
        self.wt_ip.write_data.next = self.wt_data.val();
        self.wt_ip.write_enable.next = self.wt_write_ip.val();
        self.wt_mac_hi.write_address.next = self.wt_address.val();
        self.wt_mac_hi.write_data.next = bit_cast::<16, 32>(self.wt_data.val());
        self.wt_mac_hi.write_enable.next = self.wt_write_mac_hi.val();
        self.wt_mac_lo.write_address.next = self.wt_address.val();
        self.wt_mac_lo.write_data.next = self.wt_data.val();
        self.wt_mac_lo.write_enable.next = self.wt_write_mac_lo.val();
        // Loading (aggregator side).
        self.load_half.next = self.lhalf.q.val();
        self.load_free.next = !self.full0.q.val();
        if self.lhalf.q.val() {
            self.load_free.next = !self.full1.q.val();
        }
        self.busy.next =
            self.full0.q.val() | self.full1.q.val() | (self.state.q.val() != TxState::Idle);
        // The half being sent.
        if self.shalf.q.val() {
            self.kind.next = self.k1.q.val();
            self.last_rank.next = self.l1.q.val();
            self.nwords.next = self.n1.q.val();
            self.last_bytes.next = self.b1.q.val();
        } else {
            self.kind.next = self.k0.q.val();
            self.last_rank.next = self.l0.q.val();
            self.nwords.next = self.n0.q.val();
            self.last_bytes.next = self.b0.q.val();
        }
        self.word_valid.next = false;
        self.word_data.next = 0.into();
        self.word_last.next = false;
        self.word_bytes.next = 4.into();
        self.frame_sent.next = false;
        self.advance.next = false;
        self.next_rank.next = false;
        self.raw.next = self.tx_buf.read_data.val();
        if self.w.q.val() < 13 {
            self.raw.next = self.hdr_buf.read_data.val();
        }
        self.sum.next = 0.into();
        self.fold.next = 0.into();
        match self.state.q.val() {
            TxState::Idle => {
                self.w.d.next = 0.into();
                if self.shalf.q.val() {
                    if self.full1.q.val() {
                        self.cur.d.next = self.f1.q.val();
                        self.state.d.next = TxState::Prep1;
                    }
                } else if self.full0.q.val() {
                    self.cur.d.next = self.f0.q.val();
                    self.state.d.next = TxState::Prep1;
                }
            }
            TxState::Prep1 => {
                self.state.d.next = TxState::Prep2;
            }
            TxState::Prep2 => {
                self.sum.next =
                    bit_cast::<20, 32>((bit_cast::<32, 9>(self.payload_words.val()) << 2) + 38)
                        + 0x4500
                        + 0x4011
                        + bit_cast::<20, 32>(self.switch_ip.val() >> 16)
                        + bit_cast::<20, 32>(self.switch_ip.val() & 0xffff)
                        + bit_cast::<20, 32>(self.wt_ip.read_data.val() >> 16)
                        + bit_cast::<20, 32>(self.wt_ip.read_data.val() & 0xffff);
                self.fold.next = bit_cast::<17, 20>(self.sum.val() & 0xffff)
                    + bit_cast::<17, 20>(self.sum.val() >> 16);
                self.ck.d.next = !(bit_cast::<16, 17>(self.fold.val())
                    + bit_cast::<16, 17>(self.fold.val() >> 16));
                self.state.d.next = TxState::Send;
            }
            _ => {
                // The rank's header checksum, registered before word 6 leaves.
                if self.w.q.val() < 6 {
                    self.sum.next =
                        bit_cast::<20, 32>((bit_cast::<32, 9>(self.payload_words.val()) << 2) + 38)
                            + 0x4500
                            + 0x4011
                            + bit_cast::<20, 32>(self.switch_ip.val() >> 16)
                            + bit_cast::<20, 32>(self.switch_ip.val() & 0xffff)
                            + bit_cast::<20, 32>(self.wt_ip.read_data.val() >> 16)
                            + bit_cast::<20, 32>(self.wt_ip.read_data.val() & 0xffff);
                    self.fold.next = bit_cast::<17, 20>(self.sum.val() & 0xffff)
                        + bit_cast::<17, 20>(self.sum.val() >> 16);
                    self.ck.d.next = !(bit_cast::<16, 17>(self.fold.val())
                        + bit_cast::<16, 17>(self.fold.val() >> 16));
                }
                self.word_valid.next = true;
                self.word_data.next = self.raw.val();
                if self.kind.val() == 0 {
                    match self.w.q.val().index() {
                        0 => {
                            self.word_data.next =
                                (bit_cast::<32, 16>(self.wt_mac_hi.read_data.val()) << 16)
                                    | (self.wt_mac_lo.read_data.val() >> 16);
                        }
                        1 => {
                            self.word_data.next =
                                (self.wt_mac_lo.read_data.val() << 16) | (self.raw.val() & 0xffff);
                        }
                        6 => {
                            self.word_data.next = (bit_cast::<32, 16>(self.ck.q.val()) << 16)
                                | (self.raw.val() & 0xffff);
                        }
                        7 => {
                            self.word_data.next = (self.raw.val() & 0xffff_0000_u64)
                                | (self.wt_ip.read_data.val() >> 16);
                        }
                        8 => {
                            self.word_data.next =
                                (self.wt_ip.read_data.val() << 16) | (self.raw.val() & 0xffff);
                        }
                        _ => {}
                    }
                }
                if self.w.q.val() + 1 == self.nwords.val() {
                    self.word_last.next = true;
                    self.word_bytes.next = self.last_bytes.val();
                }
                if self.word_ready.val() {
                    self.advance.next = true;
                    if self.w.q.val() + 1 == self.nwords.val() {
                        self.frame_sent.next = true;
                        self.w.d.next = 0.into();
                        if (self.kind.val() == 0) & (self.cur.q.val() != self.last_rank.val()) {
                            // Next rank: its worker entry is read this cycle, so the
                            // next frame starts at once.
                            self.next_rank.next = true;
                            self.cur.d.next = self.cur.q.val() + 1;
                        } else {
                            if self.shalf.q.val() {
                                self.full1.d.next = false;
                            } else {
                                self.full0.d.next = false;
                            }
                            self.shalf.d.next = !self.shalf.q.val();
                            self.state.d.next = TxState::Idle;
                        }
                    } else {
                        self.w.d.next = self.w.q.val() + 1;
                    }
                }
            }
        }
        // Worker table read address: the rank of the next cycle.
        self.wt_idx.next = self.cur.q.val();
        if self.next_rank.val() {
            self.wt_idx.next = self.cur.q.val() + 1;
        }
        self.wt_ip.read_address.next = self.wt_idx.val();
        self.wt_mac_hi.read_address.next = self.wt_idx.val();
        self.wt_mac_lo.read_address.next = self.wt_idx.val();
        // Buffer read address: the word shown next cycle.
        self.rd_idx.next = self.w.q.val();
        if self.advance.val() & !self.word_last.val() {
            self.rd_idx.next = self.w.q.val() + 1;
        }
        if self.advance.val() & self.word_last.val() {
            self.rd_idx.next = 0.into();
        }
        self.tx_buf.read_address.next = self.rd_idx.val();
        self.hdr_buf.read_address.next = bit_cast::<5, 10>(self.rd_idx.val()) & 15;
        if self.shalf.q.val() {
            self.tx_buf.read_address.next = self.rd_idx.val() | 512;
            self.hdr_buf.read_address.next = (bit_cast::<5, 10>(self.rd_idx.val()) & 15) | 16;
        }
        if self.load.val() {
            if self.lhalf.q.val() {
                self.full1.d.next = true;
                self.k1.d.next = self.load_kind.val();
                self.f1.d.next = self.load_first.val();
                self.l1.d.next = self.load_last.val();
                self.n1.d.next = self.load_nwords.val();
                self.b1.d.next = self.load_last_bytes.val();
            } else {
                self.full0.d.next = true;
                self.k0.d.next = self.load_kind.val();
                self.f0.d.next = self.load_first.val();
                self.l0.d.next = self.load_last.val();
                self.n0.d.next = self.load_nwords.val();
                self.b0.d.next = self.load_last_bytes.val();
            }
            self.lhalf.d.next = !self.lhalf.q.val();
        }
    }
}
