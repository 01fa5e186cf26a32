//! The frame parser: receives Ethernet frames into a two-frame buffer and classifies each one
//! exactly as docs/switch.md §1 says, in that order.
//!
//! Frame layout of the fields it reads (32-bit word `hJ` holds bytes 4J..4J+4, first byte on top):
//!
//! | bytes | field | word |
//! |---|---|---|
//! | 0..6 | destination MAC | h0, h1\[31:16\] |
//! | 6..12 | source MAC | h1\[15:0\], h2 |
//! | 12..14 | EtherType | h3\[31:16\] |
//! | 14..22 | ARP htype, ptype, hlen, plen, oper | h3\[15:0\], h4, h5\[31:16\] |
//! | 38..42 | ARP target protocol address | h9\[15:0\], h10\[31:16\] |
//! | 14..34 | IPv4 header (version/IHL, total length, flags, protocol, checksum, addresses) | h3\[15:0\]..h8\[31:16\] |
//! | 34..36 | ICMP type, code / UDP source port | h8\[15:0\] |
//! | 36..40 | UDP destination port, length | h9 |
//! | 42..52 | SwitchML header and exponents | h10\[15:0\], h11, h12 |
//!
//! Timing and guarantees:
//! - Store and forward: each word is written to the frame buffer half being filled (frames up to
//!   2048 bytes are stored whole) while the header words are captured and the IPv4 header
//!   checksum is summed on the fly. The worker table (a block RAM of source addresses) is
//!   searched one entry a cycle from the moment the source address has arrived (word 7).
//! - The decision is taken in the fourth cycle after the last word (every check is a registered
//!   flag, some from registered parts (T - 20, T + 14, address halves), the header checksum is
//!   summed, folded and verified in registered steps, the priority chain over the flags is
//!   registered a cycle ahead, and the decision picks among registers), or later when the
//!   frame gets as far as the source check and the worker search is still running (at most n + 3 cycles after word 7: an entry
//!   is read, compared into a register, then acted on).
//! - Timing: the frame buffer is a block RAM with registered output, read latency 2.
//! - The decision and the header words are handed over in a descriptor (`desc`, a [`DescriptorSource`]), held until
//!   `desc.done` (a new one is loaded from the cycle after, so `desc.done` drives no load
//!   enable); the next frame is received into the other half meanwhile. The parser takes
//!   no word (`word.ready` low) only while a decided frame waits for the descriptor register.
//! - Nothing here touches slot state: a malformed or truncated frame only yields a drop kind.
//!
//! Descriptor kinds: 0..=15 the drop reasons in `DropReason` order (the parser never yields 15,
//! `stale_session`: the aggregator decides it from the session state), 16 a valid contribution,
//! 17 an ICMP echo request to answer, 18 an ARP request to answer (the aggregator tells the two
//! replies apart by bit 0: ARP's kind is even, ICMP's odd), 19 a valid session message
//! (`msg_type` 8, docs/switch.md §2.1: the contribution's size, length and slot checks). `wrong_src_port` (docs/switch.md §1 7.5) is checked after
//! the worker search found the sender and before the SwitchML checks.

use crate::block_ram::PipelinedRam;
use crate::config_registers::{JobSettings, WorkerTableWrite};
use crate::frame_checks::FrameChecks;
use crate::parse::kind::kind;
use crate::parse::received_header::{HeaderWords, HeaderWordsSource};
use crate::word_stream::WordSink;
use crate::worker_search::WorkerSearch;
use rust_hdl::prelude::*;
use spotagg_driver::DropReason;

// The descriptor kinds, at their old paths too.
pub use crate::parse::kind::{KIND_ARP, KIND_CONTRIBUTION, KIND_ICMP, KIND_PARENT, KIND_SESSION};

interface_pair! {
    /// The parser's end of the descriptor: a decided frame handed to the aggregator.
    pub struct DescriptorSource join "DescriptorSink";
    /// The aggregator's end of the descriptor.
    pub struct DescriptorSink join "DescriptorSource";
    {
        /// A decided frame is described here (held until `done`).
        valid: Out Bit,
        /// Pulse: the descriptor and its buffer half are free again.
        done: In Bit,
        /// What the frame is (parser module doc: 0..=14 a drop reason, `KIND_*`).
        kind: Out Bits<5>,
        /// The sender's rank (contributions).
        rank: Out Bits<5>,
        /// Slot (contributions).
        slot: Out Bits<15>,
        /// Set (contributions).
        set: Out Bit,
        /// Frame buffer half holding the frame.
        half: Out Bit,
        /// IPv4 total length T.
        ip_len: Out Bits<16>,
        /// The frame was let through by the zero-checksum exception (docs/switch.md §1 6.4: the
        /// job takes zero checksums, the field is 0 and does not verify).
        zero_checksum: Out Bit,
    }
    nested {
        /// Header words 1..=12 of the frame.
        header: HeaderWordsSource => HeaderWords,
    }
}

/// The frame parser and receive buffer.
#[derive(LogicBlock)]
pub struct FrameParser {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The received frame, one word a cycle.
    pub word: WordSink,
    /// With the frame's last word: its job tag was taken out (`vlan::VlanUntag`).
    pub tag_stripped: Signal<In, Bit>,
    /// With the frame's last word: too short for the tag check (counted as truncated).
    pub tag_short: Signal<In, Bit>,
    /// With the frame's last word: not the job's tag (counted as wrong_vlan).
    pub tag_mismatch: Signal<In, Bit>,
    /// The job's settings.
    pub job: JobSettings,
    /// Worker table writes (the parser keeps the workers' IPv4 addresses).
    pub wt: WorkerTableWrite,
    /// Frame buffer read address (bit 9: half, bits 8..0: word).
    pub buf_read_address: Signal<In, Bits<10>>,
    /// Frame buffer word at the address of two cycles before (read latency 2).
    pub buf_read_data: Signal<Out, Bits<32>>,
    /// The decided frame, held until `desc.done`.
    pub desc: DescriptorSource,
    /// A frame is being received, decided or waits in the descriptor.
    pub busy: Signal<Out, Bit>,
    rx_buf: PipelinedRam<10, 32>,
    search: WorkerSearch,
    /// The checks of docs/switch.md §1 and their priority chains.
    checks: FrameChecks,
    accept: Signal<Local, Bit>,
    cls: Signal<Local, Bits<5>>,
    drop_ip_checksum: Constant<Bits<5>>,
    drop_unknown_source: Constant<Bits<5>>,
    needs_rank: Signal<Local, Bit>,
    total_len: Signal<Local, Bits<16>>,
    /// The tag flags of the frame being decided, taken with its last word.
    fl_tag_stripped: DFF<Bit>,
    fl_tag_short: DFF<Bit>,
    fl_tag_mismatch: DFF<Bit>,
    dstage: DFF<Bits<2>>,
    deciding: DFF<Bit>,
    wr_half: DFF<Bit>,
    j: DFF<Bits<14>>,
    j_sat: DFF<Bit>,
    j_ge13: DFF<Bit>,
    j_ge512: DFF<Bit>,
    j_eq7: DFF<Bit>,
    len: DFF<Bits<16>>,
    csum_hi: DFF<Bits<20>>,
    csum_lo: DFF<Bits<20>>,
    /// Words 0..=12 of the frame as they come.
    h: [DFF<Bits<32>>; 13],
    d_valid: DFF<Bit>,
    d_kind: DFF<Bits<5>>,
    d_rank: DFF<Bits<5>>,
    d_slot: DFF<Bits<15>>,
    d_set: DFF<Bit>,
    d_half: DFF<Bit>,
    d_len: DFF<Bits<16>>,
    d_zck: DFF<Bit>,
    zck_taken: Signal<Local, Bit>,
    /// The descriptor's header words 1..=12.
    d: [DFF<Bits<32>>; 12],
}

impl Default for FrameParser {
    fn default() -> Self {
        Self::new()
    }
}

impl FrameParser {
    /// A parser with a two-frame buffer of 2 × 2048 bytes and a 32-entry worker table.
    pub fn new() -> Self {
        Self {
            clock: Default::default(),
            word: Default::default(),
            tag_stripped: Default::default(),
            tag_short: Default::default(),
            tag_mismatch: Default::default(),
            job: Default::default(),
            wt: Default::default(),
            buf_read_address: Default::default(),
            buf_read_data: Default::default(),
            desc: Default::default(),
            busy: Default::default(),
            rx_buf: PipelinedRam::new(1024),
            search: Default::default(),
            checks: Default::default(),
            accept: Default::default(),
            cls: Default::default(),
            drop_ip_checksum: kind(DropReason::IpChecksum as u64),
            drop_unknown_source: kind(DropReason::UnknownSource as u64),
            needs_rank: Default::default(),
            total_len: Default::default(),
            fl_tag_stripped: Default::default(),
            fl_tag_short: Default::default(),
            fl_tag_mismatch: Default::default(),
            dstage: Default::default(),
            deciding: Default::default(),
            wr_half: Default::default(),
            j: Default::default(),
            j_sat: Default::default(),
            j_ge13: Default::default(),
            j_ge512: Default::default(),
            j_eq7: Default::default(),
            len: Default::default(),
            csum_hi: Default::default(),
            csum_lo: Default::default(),
            h: Default::default(),
            d_valid: Default::default(),
            d_kind: Default::default(),
            d_rank: Default::default(),
            d_slot: Default::default(),
            d_set: Default::default(),
            d_half: Default::default(),
            d_len: Default::default(),
            d_zck: Default::default(),
            zck_taken: Default::default(),
            d: Default::default(),
        }
    }
}

impl Logic for FrameParser {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            fl_tag_stripped,
            fl_tag_short,
            fl_tag_mismatch,
            dstage,
            deciding,
            wr_half,
            j,
            j_sat,
            j_ge13,
            j_ge512,
            j_eq7,
            len,
            csum_hi,
            csum_lo,
            d_valid,
            d_kind,
            d_rank,
            d_slot,
            d_set,
            d_half,
            d_len,
            d_zck
        );
        for i in 0..13 {
            self.h[i].clock.next = self.clock.val();
            self.h[i].d.next = self.h[i].q.val();
        }
        for i in 0..12 {
            self.d[i].clock.next = self.clock.val();
            self.d[i].d.next = self.d[i].q.val();
        }
        clock!(self, clock, rx_buf, search, checks);
        // Worker table writes and the buffer read port.
        self.search.write_address.next = self.wt.address.val();
        self.search.write_data.next = self.wt.data.val();
        self.search.write_enable.next = self.wt.write_ip.val();
        self.rx_buf.read_address.next = self.buf_read_address.val();
        self.rx_buf.read_enable.next = true;
        self.buf_read_data.next = self.rx_buf.read_data.val();
        // Descriptor outputs.
        self.desc.valid.next = self.d_valid.q.val();
        self.desc.kind.next = self.d_kind.q.val();
        self.desc.rank.next = self.d_rank.q.val();
        self.desc.slot.next = self.d_slot.q.val();
        self.desc.set.next = self.d_set.q.val();
        self.desc.half.next = self.d_half.q.val();
        self.desc.ip_len.next = self.d_len.q.val();
        self.desc.zero_checksum.next = self.d_zck.q.val();
        self.desc.header.h1.next = self.d[0].q.val();
        self.desc.header.h2.next = self.d[1].q.val();
        self.desc.header.h3.next = self.d[2].q.val();
        self.desc.header.h4.next = self.d[3].q.val();
        self.desc.header.h5.next = self.d[4].q.val();
        self.desc.header.h6.next = self.d[5].q.val();
        self.desc.header.h7.next = self.d[6].q.val();
        self.desc.header.h8.next = self.d[7].q.val();
        self.desc.header.h9.next = self.d[8].q.val();
        self.desc.header.h10.next = self.d[9].q.val();
        self.desc.header.h11.next = self.d[10].q.val();
        self.desc.header.h12.next = self.d[11].q.val();
        self.busy.next = self.deciding.q.val() | (self.j.q.val() != 0) | self.d_valid.q.val();
        // Receive.
        self.word.ready.next = !self.deciding.q.val();
        self.accept.next = self.word.valid.val() & !self.deciding.q.val();
        self.rx_buf.write_enable.next = false;
        self.rx_buf.write_data.next = self.word.data.val();
        self.rx_buf.write_address.next = bit_cast::<10, 14>(self.j.q.val());
        if self.wr_half.q.val() {
            self.rx_buf.write_address.next = bit_cast::<10, 14>(self.j.q.val()) | 512;
        }
        if self.accept.val() {
            if !self.j_ge512.q.val() {
                self.rx_buf.write_enable.next = true;
            }
            // `j_sat`: j is at its largest value; `j_ge13`, `j_ge512`, `j_eq7` compare j with the
            // constants the receive logic needs (all registered one count ahead).
            if !self.j_sat.q.val() {
                self.j.d.next = self.j.q.val() + 1;
                self.j_sat.d.next = self.j.q.val() == 0x3ffe;
                self.j_ge13.d.next = self.j.q.val() >= 12;
                self.j_ge512.d.next = self.j.q.val() >= 511;
                self.j_eq7.d.next = self.j.q.val() == 6;
            }
            if self.word.last.val() {
                self.len.d.next = self.len.q.val() + bit_cast::<16, 3>(self.word.bytes.val());
                self.deciding.d.next = true;
                self.fl_tag_stripped.d.next = self.tag_stripped.val();
                self.fl_tag_short.d.next = self.tag_short.val();
                self.fl_tag_mismatch.d.next = self.tag_mismatch.val();
            } else {
                self.len.d.next = self.len.q.val() + 4;
            }
            if !self.j_ge13.q.val() {
                for i in 0..13 {
                    if self.j.q.val().get_bits::<4>(0).index() == i {
                        self.h[i].d.next = self.word.data.val();
                    }
                }
                // The IPv4 header's checksum: the low halves of words 3..=7, the high halves of 4..=8.
                if (self.j.q.val().get_bits::<4>(0) >= 3) & (self.j.q.val().get_bits::<4>(0) <= 7) {
                    self.csum_lo.d.next = self.csum_lo.q.val() + bit_cast::<20, 32>(self.word.data.val() & 0xffff);
                }
                if (self.j.q.val().get_bits::<4>(0) >= 4) & (self.j.q.val().get_bits::<4>(0) <= 8) {
                    self.csum_hi.d.next = self.csum_hi.q.val() + bit_cast::<20, 32>(self.word.data.val() >> 16);
                }
            }
        }
        // Worker search: from word 7 on (the source address is complete), one entry a cycle.
        self.search.workers.next = self.job.workers.val();
        self.search.source.next = (self.h[6].q.val() << 16) | (self.h[7].q.val() >> 16);
        self.search.start.next = self.accept.val() & self.j_eq7.q.val();
        self.search.stop.next = false;
        // Decide (docs/switch.md §1, in order): the checks and their priority chains are
        // FrameChecks; the decision is taken in the fourth deciding cycle, when every check
        // describes the frame, and picks among its registers (the checksum's verdict and the
        // worker search's result are the late inputs).
        self.total_len.next = self.h[4].q.val().get_bits::<16>(16);
        for i in 0..13 {
            self.checks.h[i].next = self.h[i].q.val();
        }
        self.checks.len.next = self.len.q.val();
        self.checks.csum_hi.next = self.csum_hi.q.val();
        self.checks.csum_lo.next = self.csum_lo.q.val();
        self.checks.tag_stripped.next = self.fl_tag_stripped.q.val();
        self.checks.tag_short.next = self.fl_tag_short.q.val();
        self.checks.tag_mismatch.next = self.fl_tag_mismatch.q.val();
        JobSettings::link(&mut self.job, &mut self.checks.job);
        self.cls.next = 0.into();
        self.needs_rank.next = false;
        if self.desc.done.val() {
            self.d_valid.d.next = false;
        }
        if self.deciding.q.val() & (self.dstage.q.val() != 3) {
            self.dstage.d.next = self.dstage.q.val() + 1;
        }
        // The zero-checksum exception (docs/switch.md §1 6.4): the field (word 6, bits 31..16) is
        // 0, the sum does not verify, and the job takes it.
        self.zck_taken.next = self.checks.reaches_checksum.val()
            & self.checks.checksum_bad.val()
            & self.job.zero_checksum.val()
            & (self.h[6].q.val().get_bits::<16>(16) == 0);
        if self.deciding.q.val() & (self.dstage.q.val() == 3) {
            if self.checks.reaches_checksum.val() & self.checks.checksum_bad.val() & !self.zck_taken.val() {
                self.cls.next = self.drop_ip_checksum.val();
            } else if self.checks.to_sender.val() & self.checks.from_parent.val() {
                self.cls.next = self.checks.parent_kind.val();
            } else if self.checks.to_sender.val() {
                self.needs_rank.next = true;
                if !self.search.found.val() {
                    self.cls.next = self.drop_unknown_source.val();
                } else {
                    self.cls.next = self.checks.sender_kind.val();
                }
            } else {
                self.cls.next = self.checks.kind.val();
            }
            if (!self.needs_rank.val() | self.search.done.val()) & !self.d_valid.q.val() {
                self.d_valid.d.next = true;
                self.d_kind.d.next = self.cls.val();
                self.d_rank.d.next = self.search.rank.val();
                self.d_slot.d.next = self.h[12].q.val().get_bits::<15>(16);
                self.d_set.d.next = self.h[12].q.val().get_bit(31);
                self.d_half.d.next = self.wr_half.q.val();
                self.d_len.d.next = self.total_len.val();
                self.d_zck.d.next = self.zck_taken.val();
                for i in 0..12 {
                    self.d[i].d.next = self.h[i + 1].q.val();
                }
                self.wr_half.d.next = !self.wr_half.q.val();
                self.deciding.d.next = false;
                self.dstage.d.next = 0.into();
                self.j.d.next = 0.into();
                self.j_sat.d.next = false;
                self.j_ge13.d.next = false;
                self.j_ge512.d.next = false;
                self.j_eq7.d.next = false;
                self.len.d.next = 0.into();
                self.csum_hi.d.next = 0.into();
                self.csum_lo.d.next = 0.into();
                self.search.stop.next = true;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::frame_words;
    use crate::step::settle;
    use spotagg_driver::wire::checksum;
    use DropReason::*;

    const SWITCH_MAC: [u8; 6] = [0x02, 0x00, 0x5a, 0x00, 0x00, 0x01];
    const SWITCH_IP: [u8; 4] = [192, 0, 2, 1];
    const WORKERS: usize = 4;
    const SLOTS: u64 = 4;
    /// 256-byte payloads: size code 1, k = 64 words.
    const SIZE_CODE: u8 = 1;
    const PAYLOAD: usize = 256;
    /// The job's worker port: the contribution's source port.
    const WORKER_PORT: u64 = 0xbee3;

    fn worker_ip(rank: u8) -> [u8; 4] {
        [192, 0, 2, 10 + rank]
    }

    /// A valid contribution from rank 1 to slot 2, set 1 (no preamble, no FCS).
    fn contribution() -> Vec<u8> {
        let udp_len = 8 + 10 + PAYLOAD;
        let total = 20 + udp_len;
        let mut f = vec![];
        f.extend(SWITCH_MAC);
        f.extend([0x02, 0x00, 0x5a, 0x00, 0x01, 0x01]);
        f.extend([0x08, 0x00]);
        f.extend([0x45, 0x00]);
        f.extend((total as u16).to_be_bytes());
        f.extend([0, 0, 0, 0, 64, 17, 0, 0]);
        f.extend(worker_ip(1));
        f.extend(SWITCH_IP);
        f.extend([0xbe, 0xe3, 0xbe, 0xe0]);
        f.extend((udp_len as u16).to_be_bytes());
        f.extend([0, 0]);
        // SwitchML: msg type 1 and size code, a byte of flags, pool index (set bit 15, slot 2),
        // exponents.
        f.extend([0x10 | SIZE_CODE, 0x00, 0, 0, 0, 0, 0x80, 0x02, 0x00, 0x00]);
        f.extend((0..PAYLOAD).map(|i| i as u8));
        seal(&mut f);
        f
    }

    /// The IPv4 header checksum made right (over 20 bytes, whatever the IHL says).
    fn seal(f: &mut [u8]) {
        f[24] = 0;
        f[25] = 0;
        let c = checksum::compute(&f[14..34]);
        f[24..26].copy_from_slice(&c.to_be_bytes());
    }

    /// One fault of each check of docs/switch.md §1 that leaves the other checks' fields alone,
    /// in the order the checks are made (the contract under test), with the drop reason it gives.
    /// Each fault but the checksum's reseals the header checksum.
    #[allow(clippy::type_complexity)]
    fn faults() -> Vec<(&'static str, fn(&mut Vec<u8>), DropReason)> {
        vec![
            ("destination MAC", |f| f[0] = 0x04, WrongDstMac),
            ("EtherType", |f| f[12..14].copy_from_slice(&[0x86, 0xdd]), NotIpv4Udp),
            ("IHL", |f| f[14] = 0x46, IpOptions),
            ("header checksum", |f| f[25] ^= 0x01, IpChecksum),
            (
                "total length",
                |f| {
                    let t = (f.len() - 14 + 1) as u16;
                    f[16..18].copy_from_slice(&t.to_be_bytes())
                },
                BadLength,
            ),
            ("fragment", |f| f[20] |= 0x20, IpFragment),
            ("destination IP", |f| f[33] = 99, WrongDstIp),
            ("protocol", |f| f[23] = 6, NotIpv4Udp),
            ("destination port", |f| f[36..38].copy_from_slice(&[0x12, 0x34]), BadPort),
            ("source IP", |f| f[29] = 99, UnknownSource),
            ("source port", |f| f[34..36].copy_from_slice(&[0xc0, 0x00]), WrongSrcPort),
            ("message type", |f| f[42] = (f[42] & 0x0f) | 0x20, BadMsgType),
            ("size", |f| f[42] = (f[42] & 0xf8) | (SIZE_CODE + 1), BadSize),
            ("slot", |f| f[49] = SLOTS as u8, BadSlot),
        ]
    }

    fn with_faults(which: &[usize]) -> Vec<u8> {
        let all = faults();
        let mut f = contribution();
        for &i in which {
            (all[i].1)(&mut f);
        }
        if !which.iter().any(|&i| all[i].2 == IpChecksum) {
            seal(&mut f);
        }
        f
    }

    struct Bench {
        uut: FrameParser,
    }

    impl Bench {
        fn new() -> Bench {
            let mut uut = FrameParser::new();
            uut.connect_all();
            uut.job.set_switch(SWITCH_MAC, SWITCH_IP);
            uut.job.workers.next = (WORKERS as u64).into();
            uut.job.size_code.next = u64::from(SIZE_CODE).into();
            uut.job.payload_words.next = ((PAYLOAD / 4) as u64).into();
            uut.job.slots_in_use.next = SLOTS.into();
            uut.job.worker_port.next = WORKER_PORT.into();
            let mut b = Bench { uut };
            for rank in 0..WORKERS as u8 {
                b.uut.wt.offer(rank, u64::from(u32::from_be_bytes(worker_ip(rank))), [true, false, false]);
                b.cycle();
            }
            b.uut.wt.offer(0, 0, [false; 3]);
            b
        }

        fn cycle(&mut self) {
            tick!(&mut self.uut);
        }

        /// Sends `frame` and returns the descriptor's (kind, rank), then frees it.
        fn classify(&mut self, frame: &[u8]) -> (u64, u64) {
            let (kind, rank, _) = self.classify_zck(frame);
            (kind, rank)
        }

        /// [`Bench::classify`] with the descriptor's `zero_checksum`.
        fn classify_zck(&mut self, frame: &[u8]) -> (u64, u64, bool) {
            let words = frame_words(frame);
            let mut sent = 0;
            for _ in 0..10 * words.len() + 200 {
                self.uut.word.offer(sent < words.len(), words.get(sent).copied().unwrap_or_default());
                settle(&mut self.uut);
                if self.uut.word.moves() {
                    sent += 1;
                }
                if self.uut.desc.valid.val() {
                    let got = (
                        self.uut.desc.kind.val().index() as u64,
                        self.uut.desc.rank.val().index() as u64,
                        self.uut.desc.zero_checksum.val(),
                    );
                    self.uut.desc.done.next = true;
                    self.cycle();
                    self.uut.desc.done.next = false;
                    self.cycle();
                    assert_eq!(sent, words.len(), "decided before the frame's last word");
                    return got;
                }
                self.cycle();
            }
            panic!("no descriptor for a frame of {} bytes", frame.len());
        }
    }

    /// A valid contribution is one, from the rank whose address sent it; each fault alone gives
    /// its reason; and of every pair of faults the check made first decides, as the model (the
    /// list in contract order) says.
    #[test]
    fn classification_follows_the_order_of_the_checks() {
        let mut b = Bench::new();
        assert_eq!(b.classify(&contribution()), (KIND_CONTRIBUTION, 1));
        // The same frame as a session message (msg_type 8): a session message, and every fault
        // after the source port still decides it (a session message has the same checks).
        let session = |f: &mut Vec<u8>| f[42] = (f[42] & 0x0f) | 0x80;
        let mut s = contribution();
        session(&mut s);
        seal(&mut s);
        assert_eq!(b.classify(&s), (KIND_SESSION, 1));
        for i in faults().len() - 3..faults().len() {
            let (name, fault, reason) = faults()[i];
            let mut f = s.clone();
            fault(&mut f);
            if name == "message type" {
                // msg_type 2 in place of 8.
                assert_eq!(f[42] >> 4, 2);
            }
            seal(&mut f);
            assert_eq!(b.classify(&f).0, reason as u64, "session message, {name}");
        }
        let n = faults().len();
        for i in 0..n {
            let (name, _, reason) = faults()[i];
            assert_eq!(b.classify(&with_faults(&[i])).0, reason as u64, "{name} alone");
            for j in i + 1..n {
                let (later, _, _) = faults()[j];
                assert_eq!(b.classify(&with_faults(&[i, j])).0, reason as u64, "{name} with {later}");
            }
        }
        // A frame that ends inside the Ethernet header, and one inside the IPv4 header.
        assert_eq!(b.classify(&contribution()[..13]).0, Truncated as u64);
        assert_eq!(b.classify(&contribution()[..30]).0, Truncated as u64);
    }

    /// docs/switch.md §1 6.4: a checksum field of 0 that does not verify is `ip_checksum`
    /// unless the job takes zero checksums; then the frame goes on to the later checks, marked
    /// `zero_checksum`. A wrong non-zero checksum is `ip_checksum` either way, and a good one is
    /// never marked.
    #[test]
    fn a_zero_checksum_is_taken_only_when_the_job_says_so() {
        let mut b = Bench::new();
        let mut zero = contribution();
        zero[24..26].copy_from_slice(&[0, 0]);
        assert!(!checksum::verify(&zero[14..34]), "the test frame's sum must not verify");
        let mut wrong = contribution();
        wrong[25] ^= 0x01;
        let mut zero_bad_ip = zero.clone();
        zero_bad_ip[33] = 99;
        let (kind, _, zck) = b.classify_zck(&zero);
        assert_eq!((kind, zck), (IpChecksum as u64, false));
        b.uut.job.zero_checksum.next = true;
        assert_eq!(b.classify_zck(&zero), (KIND_CONTRIBUTION, 1, true));
        assert_eq!(b.classify_zck(&wrong).0, IpChecksum as u64);
        assert_eq!(b.classify_zck(&contribution()), (KIND_CONTRIBUTION, 1, false));
        // Taken by the exception, then dropped by a later check: the later check decides.
        assert_eq!(b.classify_zck(&zero_bad_ip).0, WrongDstIp as u64);
    }
}
