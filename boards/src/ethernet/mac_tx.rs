//! Gigabit MAC transmitter at the GMII byte interface.
//!
//! In: a frame without preamble and FCS as a byte stream (`up`) in the transmit clock domain.
//! Out: `gmii_txd`, `gmii_tx_en`, `gmii_tx_er`, registered.
//!
//! - A frame starts when `up.valid` is high in the idle state: 7 bytes of preamble (0x55) and
//!   the SFD (0xD5), then the frame bytes, one a clock with `up.ready` high, then zero padding
//!   up to 60 bytes, then the FCS (CRC-32, least significant byte first), then at least 12
//!   idle clocks (the inter-frame gap) before the next preamble.
//! - The upstream must deliver the frame's bytes without gaps once started (a store-and-
//!   forward FIFO does); a missing byte is sent as a zero with `gmii_tx_er` high, which the
//!   link partner drops.
//! - `frames_sent` counts frames (wrapping, 32 bits).
//!
//! Timing: the CRC is updated a clock after its byte is sent, from registers (`crc_byte`,
//! `crc_step`): no path runs from the stream's `valid` and the state through the byte's mux
//! into the CRC. The FCS's first byte is taken from the update of the frame's last byte
//! (`crc.out`), the others from `crc_reg`.

use crate::ethernet::crc32::Crc32;
use rust_hdl::prelude::*;
use spotagg_hdl::byte_stream::ByteSink;

/// Transmit MAC.
#[derive(LogicBlock, Default)]
pub struct MacTx {
    /// Transmit clock (125 MHz).
    pub clock: Signal<In, Clock>,
    /// The frame's bytes (`ready` while the MAC sends data).
    pub up: ByteSink,
    /// GMII transmit data.
    pub gmii_txd: Signal<Out, Bits<8>>,
    /// GMII transmit enable.
    pub gmii_tx_en: Signal<Out, Bit>,
    /// GMII transmit error.
    pub gmii_tx_er: Signal<Out, Bit>,
    /// Frames sent.
    pub frames_sent: Signal<Out, Bits<32>>,
    crc: Crc32,
    /// A frame is under way (from its preamble to the end of its gap); then one-hot: preamble,
    /// data, padding, FCS, gap (flip-flops, so no state is decoded on the way to the CRC).
    active: DFF<Bit>,
    s_pre: DFF<Bit>,
    s_data: DFF<Bit>,
    s_pad: DFF<Bit>,
    s_fcs: DFF<Bit>,
    s_gap: DFF<Bit>,
    count: DFF<Bits<4>>,
    /// Frame bytes so far (saturating at 127), and `length` ≥ 59 in a flip-flop.
    length: DFF<Bits<7>>,
    long: DFF<Bit>,
    crc_reg: DFF<Bits<32>>,
    /// The byte sent in the clock before, and whether it counts in the CRC (a data or pad byte).
    crc_byte: DFF<Bits<8>>,
    crc_step: DFF<Bit>,
    /// The CRC of the frame so far, with the last byte sent.
    crc_now: Signal<Local, Bits<32>>,
    txd: DFF<Bits<8>>,
    en: DFF<Bit>,
    er: DFF<Bit>,
    sent: DFF<Bits<32>>,
    tx_byte: Signal<Local, Bits<8>>,
}

impl Logic for MacTx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, active, s_pre, s_data, s_pad, s_fcs, s_gap, count, length, long, crc_reg, crc_byte, crc_step,
            txd, en, er, sent
        );
        self.gmii_txd.next = self.txd.q.val();
        self.gmii_tx_en.next = self.en.q.val();
        self.gmii_tx_er.next = self.er.q.val();
        self.frames_sent.next = self.sent.q.val();
        self.up.ready.next = self.s_data.q.val();
        self.en.d.next = false;
        self.er.d.next = false;
        self.txd.d.next = 0.into();
        self.tx_byte.next = 0.into();
        // The CRC runs a clock behind the bytes.
        self.crc.crc.next = self.crc_reg.q.val();
        self.crc.data.next = self.crc_byte.q.val();
        self.crc_now.next = self.crc_reg.q.val();
        if self.crc_step.q.val() {
            self.crc_now.next = self.crc.out.val();
            self.crc_reg.d.next = self.crc.out.val();
        }
        if !self.active.q.val() & self.up.valid.val() {
            self.active.d.next = true;
            self.s_pre.d.next = true;
            self.count.d.next = 0.into();
        }
        if self.s_pre.q.val() {
            self.en.d.next = true;
            self.count.d.next = self.count.q.val() + 1;
            if self.count.q.val() == 7 {
                self.txd.d.next = 0xD5.into();
                self.s_pre.d.next = false;
                self.s_data.d.next = true;
                self.crc_reg.d.next = 0xFFFF_FFFF_u64.into();
                self.length.d.next = 0.into();
                self.long.d.next = false;
            } else {
                self.txd.d.next = 0x55.into();
            }
        }
        if self.s_data.q.val() {
            self.en.d.next = true;
            if self.up.valid.val() {
                self.tx_byte.next = self.up.data.val();
                self.txd.d.next = self.up.data.val();
                if self.length.q.val() != 127 {
                    self.length.d.next = self.length.q.val() + 1;
                }
                if self.length.q.val() == 58 {
                    self.long.d.next = true;
                }
                if self.up.last.val() {
                    self.count.d.next = 0.into();
                    self.s_data.d.next = false;
                    // Fewer than 59 bytes before this last one: pad up to 60.
                    self.s_pad.d.next = !self.long.q.val();
                    self.s_fcs.d.next = self.long.q.val();
                }
            } else {
                self.er.d.next = true;
            }
        }
        if self.s_pad.q.val() {
            self.en.d.next = true;
            self.length.d.next = self.length.q.val() + 1;
            if self.length.q.val() == 58 {
                self.long.d.next = true;
            }
            // This zero byte is the 60th.
            if self.long.q.val() {
                self.s_pad.d.next = false;
                self.s_fcs.d.next = true;
            }
        }
        if self.s_fcs.q.val() {
            self.en.d.next = true;
            self.txd.d.next = !self.crc_now.val().get_bits::<8>(0);
            self.crc_reg.d.next = self.crc_now.val() >> 8;
            self.count.d.next = self.count.q.val() + 1;
            if self.count.q.val() == 3 {
                self.s_fcs.d.next = false;
                self.s_gap.d.next = true;
                self.count.d.next = 0.into();
                self.sent.d.next = self.sent.q.val() + 1;
            }
        }
        if self.s_gap.q.val() {
            // 11 clocks here and at least one idle: a gap of 12 bytes or more.
            self.count.d.next = self.count.q.val() + 1;
            if self.count.q.val() == 10 {
                self.s_gap.d.next = false;
                self.active.d.next = false;
            }
        }
        // The byte chosen, into the CRC a clock later (a pad byte is a zero).
        self.crc_byte.d.next = self.tx_byte.val();
        self.crc_step.d.next = (self.s_data.q.val() & self.up.valid.val()) | self.s_pad.q.val();
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::ethernet::crc32::fcs;
    use crate::ethernet::mac_rx::MacRx;

    /// A MAC transmitter looped into a receiver.
    #[derive(LogicBlock, Default)]
    struct Loop {
        clock: Signal<In, Clock>,
        up: ByteSink,
        tx_en: Signal<Out, Bit>,
        txd: Signal<Out, Bits<8>>,
        corrupt: Signal<In, Bits<8>>,
        out_valid: Signal<Out, Bit>,
        out_data: Signal<Out, Bits<8>>,
        out_last: Signal<Out, Bit>,
        out_good: Signal<Out, Bit>,
        bad: Signal<Out, Bits<32>>,
        tx: MacTx,
        rx: MacRx,
    }

    impl Logic for Loop {
        #[hdl_gen]
        fn update(&mut self) {
            clock!(self, clock, tx, rx);
            ByteSink::link(&mut self.up, &mut self.tx.up);
            self.tx_en.next = self.tx.gmii_tx_en.val();
            self.txd.next = self.tx.gmii_txd.val();
            self.rx.gmii_rxd.next = self.tx.gmii_txd.val() ^ self.corrupt.val();
            self.rx.gmii_rx_dv.next = self.tx.gmii_tx_en.val();
            self.rx.gmii_rx_er.next = self.tx.gmii_tx_er.val();
            self.out_valid.next = self.rx.out_valid.val();
            self.out_data.next = self.rx.out_data.val();
            self.out_last.next = self.rx.out_last.val();
            self.out_good.next = self.rx.out_good.val();
            self.bad.next = self.rx.frames[1].val();
        }
    }

    /// Sends `frames`; returns the wire bytes of each frame, the received frames with their
    /// good flags, and the idle clocks between frames on the wire.
    /// Wire bytes of each frame, received frames with their good flags, idle clocks between
    /// frames, bad-FCS count.
    type Run = (Vec<Vec<u8>>, Vec<(Vec<u8>, bool)>, Vec<usize>, u32);

    fn run(frames: &[Vec<u8>], corrupt_at: Option<usize>) -> Run {
        let mut uut = Loop::default();
        uut.connect_all();
        let (mut f, mut i) = (0, 0);
        let (mut wire, mut cur, mut got, mut rx, mut gaps) = (vec![], vec![], vec![], vec![], vec![]);
        let (mut idle, mut wire_pos) = (0usize, 0usize);
        for _ in 0..(frames.iter().map(|f| f.len() + 40).sum::<usize>() + 100) {
            let feeding = f < frames.len();
            uut.up.valid.next = feeding;
            if feeding {
                uut.up.data.next = u64::from(frames[f][i]).into();
                uut.up.last.next = i + 1 == frames[f].len();
            }
            uut.corrupt.next = if corrupt_at == Some(wire_pos) && uut.tx_en.val() { 0x01.into() } else { 0.into() };
            uut.clock.next = false.into();
            assert!(simulate(&mut uut, 1000));
            uut.corrupt.next = if corrupt_at == Some(wire_pos) && uut.tx_en.val() { 0x01.into() } else { 0.into() };
            assert!(simulate(&mut uut, 1000));
            if uut.tx_en.val() {
                if idle > 0 && (!wire.is_empty() || !cur.is_empty()) {
                    gaps.push(idle);
                }
                idle = 0;
                cur.push(uut.txd.val().to_u8());
                wire_pos += 1;
            } else {
                if !cur.is_empty() {
                    wire.push(std::mem::take(&mut cur));
                }
                idle += 1;
            }
            if uut.out_valid.val() {
                rx.push(uut.out_data.val().to_u8());
                if uut.out_last.val() {
                    got.push((std::mem::take(&mut rx), uut.out_good.val()));
                }
            }
            if feeding && uut.up.ready.val() {
                i += 1;
                if i == frames[f].len() {
                    f += 1;
                    i = 0;
                }
            }
            uut.clock.next = true.into();
            assert!(simulate(&mut uut, 1000));
        }
        (wire, got, gaps, uut.bad.val().to_u32())
    }

    #[test]
    fn preamble_padding_fcs_and_gap() {
        let short: Vec<u8> = (0..42u8).collect();
        let long: Vec<u8> = (0..200u32).map(|x| (x * 7) as u8).collect();
        let (wire, got, gaps, bad) = run(&[short.clone(), long.clone(), short.clone()], None);
        assert_eq!(wire.len(), 3);
        let mut padded = short.clone();
        padded.resize(60, 0);
        let mut expect = vec![0x55; 7];
        expect.push(0xD5);
        expect.extend_from_slice(&padded);
        expect.extend_from_slice(&fcs(&padded));
        assert_eq!(wire[0], expect);
        assert_eq!(wire[1].len(), 8 + 200 + 4);
        assert_eq!(&wire[1][208..], &fcs(&long));
        assert!(gaps.iter().all(|&g| g == 12), "gaps {gaps:?}");
        assert_eq!(got, vec![(padded.clone(), true), (long, true), (padded, true)]);
        assert_eq!(bad, 0);
    }

    /// Around the 60-byte minimum: 1, 58, 59, 60, 61 and 200 bytes (saturating length) each
    /// leave exactly as long as they must (padded to 60), with their FCS, 12 idle clocks apart.
    #[test]
    fn padding_bounds() {
        let lens = [59usize, 60, 1, 58, 61, 200, 59];
        let frames: Vec<Vec<u8>> = lens.iter().map(|&n| (0..n).map(|x| (x * 3 + n) as u8 | 1).collect()).collect();
        let (wire, got, gaps, bad) = run(&frames, None);
        assert_eq!(wire.len(), frames.len());
        for (w, f) in wire.iter().zip(&frames) {
            let mut p = f.clone();
            if p.len() < 60 {
                p.resize(60, 0);
            }
            let mut expect = vec![0x55; 7];
            expect.push(0xD5);
            expect.extend_from_slice(&p);
            expect.extend_from_slice(&fcs(&p));
            assert_eq!(w, &expect, "a frame of {} bytes", f.len());
        }
        assert!(gaps.iter().all(|&g| g == 12), "gaps {gaps:?}");
        assert!(got.iter().all(|g| g.1));
        assert_eq!(bad, 0);
    }

    #[test]
    fn a_flipped_bit_fails_the_fcs() {
        let frame: Vec<u8> = (0..100u8).collect();
        let (_, got, _, bad) = run(&[frame.clone(), frame.clone()], Some(30));
        assert_eq!(got.len(), 2);
        assert!(!got[0].1);
        assert_eq!(got[1], (frame, true));
        assert_eq!(bad, 1);
    }
}
