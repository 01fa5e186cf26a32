//! Gigabit MAC receiver at the GMII byte interface.
//!
//! In: one byte a clock (`gmii_rxd`, `gmii_rx_dv`, `gmii_rx_er`) in the receive clock domain.
//! Out: the frame without preamble, SFD and FCS as a byte stream (`out_valid`, `out_data`,
//! `out_last`), with `out_good` on the last byte saying whether the frame may be kept.
//!
//! - The inputs are registered once; a frame starts at the SFD (0xD5) after any number of
//!   preamble bytes (0x55), or at a 0xD5 first byte; anything else while `rx_dv` is high is
//!   ignored until `rx_dv` falls.
//! - The last four bytes are held back (a five-byte delay line): a byte leaves when the fifth
//!   byte after it arrives, and the last data byte leaves, with `out_last`, one clock after
//!   `rx_dv` falls; the outputs are registered. So the output is at most one byte a clock,
//!   seven clocks behind the wire,
//!   and never needs back-pressure (there is none: Ethernet does not wait).
//! - `out_good` is high when the CRC-32 register over the frame and its FCS ends at the
//!   residue, no `rx_er` was seen, and the length with FCS is 64..=1522 bytes (VLAN-tagged
//!   maximum). A frame of four bytes or fewer emits nothing.
//! - Counters (wrapping, 32 bits): good frames, bad FCS (or `rx_er`) among frames of legal
//!   length, runts (< 64 bytes with FCS), giants (> 1522 bytes).

use crate::ethernet::crc32::Crc32;
use rust_hdl::prelude::*;

/// Smallest frame with FCS.
pub const MIN_FRAME: u64 = 64;
/// Largest frame with FCS (a VLAN-tagged 1518-byte frame).
pub const MAX_FRAME: u64 = 1522;

/// Indices of [`MacRx::frames`].
pub mod counter {
    /// Frames received good.
    pub const GOOD: usize = 0;
    /// Frames of legal length with a bad FCS or a receive error.
    pub const BAD_FCS: usize = 1;
    /// Frames shorter than 64 bytes.
    pub const RUNT: usize = 2;
    /// Frames longer than 1522 bytes.
    pub const GIANT: usize = 3;
}

/// Receive MAC.
#[derive(LogicBlock, Default)]
pub struct MacRx {
    /// Receive clock (125 MHz from the PHY).
    pub clock: Signal<In, Clock>,
    /// GMII receive data.
    pub gmii_rxd: Signal<In, Bits<8>>,
    /// GMII receive data valid.
    pub gmii_rx_dv: Signal<In, Bit>,
    /// GMII receive error.
    pub gmii_rx_er: Signal<In, Bit>,
    /// A frame byte is out.
    pub out_valid: Signal<Out, Bit>,
    /// The byte.
    pub out_data: Signal<Out, Bits<8>>,
    /// Last byte of the frame.
    pub out_last: Signal<Out, Bit>,
    /// With `out_last`: the frame passed the FCS and length checks.
    pub out_good: Signal<Out, Bit>,
    /// The frame counters, by [`counter`] index.
    pub frames: [Signal<Out, Bits<32>>; 4],
    crc: Crc32,
    rxd: DFF<Bits<8>>,
    /// The registered byte is the SFD / a preamble byte (compared before the register).
    sfd: DFF<Bit>,
    pre: DFF<Bit>,
    dv: DFF<Bit>,
    er: DFF<Bit>,
    /// 0: wait for rx_dv low, 1: idle, 2: preamble, 3: data.
    state: DFF<Bits<2>>,
    line: DFF<Bits<40>>,
    count: DFF<Bits<12>>,
    /// `count` ≥ 5, ≥ 64 and > 1522, kept in flip-flops as `count` steps past each bound (an
    /// equality a clock ahead instead of a 12-bit magnitude compare on the way to the verdict).
    ge5: DFF<Bit>,
    ge64: DFF<Bit>,
    gt1522: DFF<Bit>,
    crc_reg: DFF<Bits<32>>,
    err: DFF<Bit>,
    /// The counters, and the verdict that steps one of them (registered: a clock after the
    /// frame's end).
    tally: [DFF<Bits<32>>; 4],
    bump: [DFF<Bit>; 4],
    length_ok: Signal<Local, Bit>,
    o_valid: DFF<Bit>,
    o_data: DFF<Bits<8>>,
    o_last: DFF<Bit>,
    o_good: DFF<Bit>,
    valid: Signal<Local, Bit>,
    last: Signal<Local, Bit>,
    good_now: Signal<Local, Bit>,
}

impl Logic for MacRx {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, rxd, sfd, pre, dv, er, state, line, count, ge5, ge64, gt1522, crc_reg, err, o_valid, o_data,
            o_last, o_good
        );
        // The counters count a clock after the frame's end, from registered verdicts.
        for i in 0..4 {
            self.tally[i].clock.next = self.clock.val();
            self.bump[i].clock.next = self.clock.val();
            self.tally[i].d.next = self.tally[i].q.val();
            if self.bump[i].q.val() {
                self.tally[i].d.next = self.tally[i].q.val() + 1;
            }
            self.bump[i].d.next = false;
            self.frames[i].next = self.tally[i].q.val();
        }
        self.out_valid.next = self.o_valid.q.val();
        self.out_data.next = self.o_data.q.val();
        self.out_last.next = self.o_last.q.val();
        self.out_good.next = self.o_good.q.val();
        self.rxd.d.next = self.gmii_rxd.val();
        self.sfd.d.next = self.gmii_rxd.val() == 0xD5;
        self.pre.d.next = self.gmii_rxd.val() == 0x55;
        self.dv.d.next = self.gmii_rx_dv.val();
        self.er.d.next = self.gmii_rx_er.val();
        self.crc.crc.next = self.crc_reg.q.val();
        self.crc.data.next = self.rxd.q.val();
        self.valid.next = false;
        self.o_data.d.next = self.line.q.val().get_bits::<8>(32);
        self.last.next = false;
        self.length_ok.next = self.ge64.q.val() & !self.gt1522.q.val();
        self.good_now.next = self.length_ok.val() & !self.err.q.val() & self.crc.residue.val();
        if self.state.q.val() == 0 {
            if !self.dv.q.val() {
                self.state.d.next = 1.into();
            }
        } else if (self.state.q.val() != 3) & self.dv.q.val() {
            // (The delay line needs no clearing: nothing leaves it before five bytes are in.)
            if self.sfd.q.val() {
                self.state.d.next = 3.into();
                self.crc_reg.d.next = 0xFFFF_FFFF_u64.into();
                self.count.d.next = 0.into();
                self.ge5.d.next = false;
                self.ge64.d.next = false;
                self.gt1522.d.next = false;
                self.err.d.next = false;
            } else if self.pre.q.val() {
                self.state.d.next = 2.into();
            } else {
                self.state.d.next = 0.into();
            }
        } else if self.state.q.val() != 3 {
            self.state.d.next = 1.into();
        } else if self.dv.q.val() {
            self.line.d.next = (self.line.q.val() << 8) | bit_cast::<40, 8>(self.rxd.q.val());
            self.crc_reg.d.next = self.crc.out.val();
            if self.count.q.val() != 0xFFF {
                self.count.d.next = self.count.q.val() + 1;
            }
            if self.count.q.val() == 4 {
                self.ge5.d.next = true;
            }
            if self.count.q.val() == 63 {
                self.ge64.d.next = true;
            }
            if self.count.q.val() == 1522 {
                self.gt1522.d.next = true;
            }
            self.err.d.next = self.err.q.val() | self.er.q.val();
            self.valid.next = self.ge5.q.val();
        } else {
            self.state.d.next = 1.into();
            if self.ge5.q.val() {
                self.valid.next = true;
                self.last.next = true;
            }
            // By `counter` index: runt, giant, good, bad FCS.
            if !self.ge64.q.val() {
                self.bump[2].d.next = true;
            } else if self.gt1522.q.val() {
                self.bump[3].d.next = true;
            } else if self.good_now.val() {
                self.bump[0].d.next = true;
            } else {
                self.bump[1].d.next = true;
            }
        }
        // The outputs are registered (one clock later than the byte leaves the delay line).
        self.o_valid.d.next = self.valid.val();
        self.o_last.d.next = self.last.val();
        self.o_good.d.next = self.good_now.val();
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::ethernet::crc32::fcs;

    /// Feeds wire frames (frame + FCS, after a preamble) with 12 idle clocks between them;
    /// returns the frames put out with their `good` flags.
    fn receive(uut: &mut MacRx, frames: &[(Vec<u8>, bool)]) -> Vec<(Vec<u8>, bool)> {
        let mut wire: Vec<(bool, bool, u8)> = vec![(false, false, 0); 4];
        for (f, er) in frames {
            let mut w = vec![0x55; 7];
            w.push(0xD5);
            w.extend_from_slice(f);
            w.extend_from_slice(&fcs(f));
            let mid = w.len() / 2;
            wire.extend(w.iter().enumerate().map(|(i, &b)| (true, *er && i == mid, b)));
            wire.extend(std::iter::repeat_n((false, false, 0), 12));
        }
        let (mut got, mut cur) = (vec![], vec![]);
        for (dv, er, d) in wire {
            uut.gmii_rx_dv.next = dv;
            uut.gmii_rx_er.next = er;
            uut.gmii_rxd.next = u64::from(d).into();
            uut.clock.next = false.into();
            assert!(simulate(uut, 1000));
            if uut.out_valid.val() {
                cur.push(uut.out_data.val().to_u8());
                if uut.out_last.val() {
                    got.push((std::mem::take(&mut cur), uut.out_good.val()));
                }
            }
            uut.clock.next = true.into();
            assert!(simulate(uut, 1000));
        }
        got
    }

    #[test]
    fn runts_giants_and_errors_are_counted_and_not_good() {
        let mut uut = MacRx::default();
        uut.connect_all();
        let ok: Vec<u8> = (0..60u8).collect();
        let runt: Vec<u8> = (0..40u8).collect();
        let giant: Vec<u8> = (0..1600u32).map(|x| x as u8).collect();
        let got = receive(
            &mut uut,
            &[(ok.clone(), false), (runt.clone(), false), (giant, false), (ok.clone(), true), (ok.clone(), false)],
        );
        let flags: Vec<bool> = got.iter().map(|g| g.1).collect();
        assert_eq!(flags, vec![true, false, false, false, true]);
        assert_eq!(got[0].0, ok);
        assert_eq!(got[1].0, runt);
        assert_eq!(uut.frames[counter::GOOD].val().to_u32(), 2);
        assert_eq!(uut.frames[counter::RUNT].val().to_u32(), 1);
        assert_eq!(uut.frames[counter::GIANT].val().to_u32(), 1);
        assert_eq!(uut.frames[counter::BAD_FCS].val().to_u32(), 1);
    }

    /// The length bounds exactly: 63 and 1523 bytes with FCS are a runt and a giant, 64 and
    /// 1522 are good; every frame comes out whole.
    #[test]
    fn length_bounds_are_exact() {
        let mut uut = MacRx::default();
        uut.connect_all();
        let frame = |n: usize| -> Vec<u8> { (0..n).map(|x| (x * 7 + n) as u8).collect() };
        let lens = [59, 60, 1518, 1519, 60];
        let got = receive(&mut uut, &lens.map(|n| (frame(n), false)));
        let flags: Vec<bool> = got.iter().map(|g| g.1).collect();
        assert_eq!(flags, vec![false, true, true, false, true]);
        for (g, &n) in got.iter().zip(&lens) {
            assert_eq!(g.0, frame(n));
        }
        assert_eq!(uut.frames[counter::GOOD].val().to_u32(), 3);
        assert_eq!(uut.frames[counter::RUNT].val().to_u32(), 1);
        assert_eq!(uut.frames[counter::GIANT].val().to_u32(), 1);
        assert_eq!(uut.frames[counter::BAD_FCS].val().to_u32(), 0);
    }
}
