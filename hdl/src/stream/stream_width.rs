//! Width adapters between the core's external Ethernet streams (`W` bytes a beat, `D = 8·W`
//! bits) and its internal 32-bit word streams.
//!
//! Beat layout: the first byte of the beat is in the most significant lane (network order);
//! `bytes` (1..=W) counts the valid bytes of the last beat, which are the leading lanes; a lone
//! last beat with `bytes` = 0 carries an empty frame (counted as truncated). At width 1 every
//! beat carries `bytes` = 1.
//! Internal words carry 4 bytes the same way, `bytes` 1..=4 on the last word.
//!
//! Timing: width 4 is a wire (no latency). Width 1 gathers 4 bytes into a word (a word
//! leaves with the beat that completes it, no added latency) and spreads a word over 4 beats.
//! Width 8 splits a beat into two words (the upstream beat is held with `ready` low for one
//! cycle) and packs two words into a beat. Handshakes follow AXI-Stream: a transfer happens
//! on a rising edge with `valid` and `ready` both high; no combinational path from `ready`
//! to `valid`.

use crate::word_stream::{WordSink, WordSource};
use rust_hdl::prelude::*;

/// Ethernet beats in, 32-bit words out.
#[derive(LogicBlock)]
pub struct RxWidth<const D: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Beat valid.
    pub in_valid: Signal<In, Bit>,
    /// Beat data, first byte in the top lane.
    pub in_data: Signal<In, Bits<D>>,
    /// Last beat of the frame.
    pub in_last: Signal<In, Bit>,
    /// Valid bytes in the last beat (1..=W).
    pub in_bytes: Signal<In, Bits<4>>,
    /// The adapter takes the beat.
    pub in_ready: Signal<Out, Bit>,
    /// The words, one a cycle.
    pub word: WordSource,
    lanes: Constant<Bits<4>>,
    merged: Signal<Local, Bits<32>>,
    acc: DFF<Bits<32>>,
    fill: DFF<Bits<2>>,
    phase: DFF<Bit>,
}

impl<const D: usize> Default for RxWidth<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const D: usize> RxWidth<D> {
    /// An adapter for `D / 8` byte beats.
    pub fn new() -> Self {
        assert!(D == 8 || D == 32 || D == 64, "RxWidth: D = {D} bits is not 8, 32 or 64");
        Self {
            clock: Default::default(),
            in_valid: Default::default(),
            in_data: Default::default(),
            in_last: Default::default(),
            in_bytes: Default::default(),
            in_ready: Default::default(),
            word: Default::default(),
            lanes: Constant::new(((D / 8) as u64).into()),
            merged: Default::default(),
            acc: Default::default(),
            fill: Default::default(),
            phase: Default::default(),
        }
    }
}

impl<const D: usize> Logic for RxWidth<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, acc, fill, phase);
        self.word.valid.next = false;
        self.word.data.next = 0.into();
        self.word.last.next = false;
        self.word.bytes.next = 4.into();
        self.in_ready.next = false;
        self.merged.next = 0.into();
        if self.lanes.val() == 4 {
            self.word.valid.next = self.in_valid.val();
            self.word.data.next = bit_cast::<32, D>(self.in_data.val());
            self.word.last.next = self.in_last.val();
            if self.in_last.val() {
                self.word.bytes.next = bit_cast::<3, 4>(self.in_bytes.val());
            }
            self.in_ready.next = self.word.ready.val();
        } else if self.lanes.val() == 1 {
            if self.in_valid.val() {
                match self.fill.q.val().index() {
                    0 => {
                        self.merged.next = bit_cast::<32, D>(self.in_data.val()) << 24;
                    }
                    1 => {
                        self.merged.next = self.acc.q.val() | (bit_cast::<32, D>(self.in_data.val()) << 16);
                    }
                    2 => {
                        self.merged.next = self.acc.q.val() | (bit_cast::<32, D>(self.in_data.val()) << 8);
                    }
                    _ => {
                        self.merged.next = self.acc.q.val() | bit_cast::<32, D>(self.in_data.val());
                    }
                }
                if self.in_last.val() | (self.fill.q.val() == 3) {
                    self.word.valid.next = true;
                    self.word.data.next = self.merged.val();
                    self.word.last.next = self.in_last.val();
                    self.word.bytes.next = bit_cast::<3, 2>(self.fill.q.val()) + bit_cast::<3, 4>(self.in_bytes.val());
                    self.in_ready.next = self.word.ready.val();
                    if self.word.ready.val() {
                        self.fill.d.next = 0.into();
                        self.acc.d.next = 0.into();
                    }
                } else {
                    self.in_ready.next = true;
                    self.acc.d.next = self.merged.val();
                    self.fill.d.next = self.fill.q.val() + 1;
                }
            }
        } else {
            if !self.phase.q.val() {
                self.word.valid.next = self.in_valid.val();
                self.word.data.next = bit_cast::<32, D>(self.in_data.val() >> 32);
                if self.in_last.val() & (self.in_bytes.val() <= 4) {
                    self.word.last.next = true;
                    self.word.bytes.next = bit_cast::<3, 4>(self.in_bytes.val());
                    self.in_ready.next = self.word.ready.val();
                } else if self.in_valid.val() & self.word.ready.val() {
                    self.phase.d.next = true;
                }
            } else {
                self.word.valid.next = self.in_valid.val();
                self.word.data.next = bit_cast::<32, D>(self.in_data.val());
                self.word.last.next = self.in_last.val();
                if self.in_last.val() {
                    self.word.bytes.next = bit_cast::<3, 4>(self.in_bytes.val() - 4);
                }
                self.in_ready.next = self.word.ready.val();
                if self.in_valid.val() & self.word.ready.val() {
                    self.phase.d.next = false;
                }
            }
        }
    }
}

/// 32-bit words in, Ethernet beats out.
#[derive(LogicBlock)]
pub struct TxWidth<const D: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The words, one a cycle.
    pub word: WordSink,
    /// Beat valid.
    pub out_valid: Signal<Out, Bit>,
    /// Beat data, first byte in the top lane.
    pub out_data: Signal<Out, Bits<D>>,
    /// Last beat of the frame.
    pub out_last: Signal<Out, Bit>,
    /// Valid bytes in the last beat (1..=W).
    pub out_bytes: Signal<Out, Bits<4>>,
    /// Downstream takes the beat.
    pub out_ready: Signal<In, Bit>,
    lanes: Constant<Bits<4>>,
    idx: DFF<Bits<2>>,
    hold: DFF<Bits<32>>,
    have: DFF<Bit>,
}

impl<const D: usize> Default for TxWidth<D> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const D: usize> TxWidth<D> {
    /// An adapter for `D / 8` byte beats.
    pub fn new() -> Self {
        assert!(D == 8 || D == 32 || D == 64, "TxWidth: D = {D} bits is not 8, 32 or 64");
        Self {
            clock: Default::default(),
            word: Default::default(),
            out_valid: Default::default(),
            out_data: Default::default(),
            out_last: Default::default(),
            out_bytes: Default::default(),
            out_ready: Default::default(),
            lanes: Constant::new(((D / 8) as u64).into()),
            idx: Default::default(),
            hold: Default::default(),
            have: Default::default(),
        }
    }
}

impl<const D: usize> Logic for TxWidth<D> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, idx, hold, have);
        self.out_valid.next = false;
        self.out_data.next = 0.into();
        self.out_last.next = false;
        self.out_bytes.next = 1.into();
        self.word.ready.next = false;
        if self.lanes.val() == 4 {
            self.out_valid.next = self.word.valid.val();
            self.out_data.next = bit_cast::<D, 32>(self.word.data.val());
            self.out_last.next = self.word.last.val();
            self.out_bytes.next = 4.into();
            if self.word.last.val() {
                self.out_bytes.next = bit_cast::<4, 3>(self.word.bytes.val());
            }
            self.word.ready.next = self.out_ready.val();
        } else if self.lanes.val() == 1 {
            self.out_valid.next = self.word.valid.val();
            if self.word.valid.val() {
                match self.idx.q.val().index() {
                    0 => {
                        self.out_data.next = bit_cast::<D, 32>(self.word.data.val() >> 24);
                    }
                    1 => {
                        self.out_data.next = bit_cast::<D, 32>(self.word.data.val() >> 16);
                    }
                    2 => {
                        self.out_data.next = bit_cast::<D, 32>(self.word.data.val() >> 8);
                    }
                    _ => {
                        self.out_data.next = bit_cast::<D, 32>(self.word.data.val());
                    }
                }
                if self.word.last.val() & (bit_cast::<3, 2>(self.idx.q.val()) + 1 == self.word.bytes.val()) {
                    self.out_last.next = true;
                    self.word.ready.next = self.out_ready.val();
                    if self.out_ready.val() {
                        self.idx.d.next = 0.into();
                    }
                } else if self.idx.q.val() == 3 {
                    self.word.ready.next = self.out_ready.val();
                    if self.out_ready.val() {
                        self.idx.d.next = 0.into();
                    }
                } else if self.out_ready.val() {
                    self.idx.d.next = self.idx.q.val() + 1;
                }
            }
        } else {
            if !self.have.q.val() {
                if self.word.valid.val() {
                    if self.word.last.val() {
                        self.out_valid.next = true;
                        self.out_data.next = bit_cast::<D, 32>(self.word.data.val()) << 32;
                        self.out_last.next = true;
                        self.out_bytes.next = bit_cast::<4, 3>(self.word.bytes.val());
                        self.word.ready.next = self.out_ready.val();
                    } else {
                        self.word.ready.next = true;
                        self.hold.d.next = self.word.data.val();
                        self.have.d.next = true;
                    }
                }
            } else {
                self.out_valid.next = self.word.valid.val();
                self.out_data.next =
                    (bit_cast::<D, 32>(self.hold.q.val()) << 32) | bit_cast::<D, 32>(self.word.data.val());
                self.out_last.next = self.word.last.val();
                self.out_bytes.next = 4.into();
                if self.word.last.val() {
                    self.out_bytes.next = bit_cast::<4, 3>(self.word.bytes.val()) + 4;
                }
                self.word.ready.next = self.out_ready.val();
                if self.word.valid.val() & self.out_ready.val() {
                    self.have.d.next = false;
                }
            }
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::step::settle;

    fn tick<B: Block>(b: &mut B, clock: fn(&mut B) -> &mut Signal<In, Clock>) {
        clock(b).next = true.into();
        settle(b);
        clock(b).next = false.into();
        settle(b);
    }

    /// Bytes through RxWidth then TxWidth at a width come out unchanged, with the same ends.
    fn round_trip<const D: usize>(frame: &[u8]) -> Vec<u8> {
        let w = D / 8;
        let mut rx = RxWidth::<D>::new();
        let mut tx = TxWidth::<D>::new();
        rx.connect_all();
        tx.connect_all();
        let mut out = vec![];
        let mut beat = 0;
        let mut guard = 0;
        while out.len() < frame.len() {
            let start = beat * w;
            let end = (start + w).min(frame.len());
            let mut data = 0u64;
            for i in 0..w {
                data <<= 8;
                if start + i < end {
                    data |= u64::from(frame[start + i]);
                }
            }
            let offering = start < frame.len();
            rx.in_valid.next = offering;
            rx.in_data.next = data.into();
            rx.in_last.next = end == frame.len();
            rx.in_bytes.next = ((end.saturating_sub(start)) as u64).into();
            rx.word.ready.next = tx.word.ready.val();
            settle(&mut rx);
            tx.word.valid.next = rx.word.valid.val();
            tx.word.data.next = rx.word.data.val();
            tx.word.last.next = rx.word.last.val();
            tx.word.bytes.next = rx.word.bytes.val();
            tx.out_ready.next = true;
            settle(&mut tx);
            rx.word.ready.next = tx.word.ready.val();
            settle(&mut rx);
            if tx.out_valid.val() {
                let n = if tx.out_last.val() { tx.out_bytes.val().index() } else { w };
                let d = tx.out_data.val().to_u64();
                for i in 0..n {
                    out.push((d >> (8 * (w - 1 - i))) as u8);
                }
            }
            if offering && rx.in_ready.val() {
                beat += 1;
            }
            tick(&mut rx, |b| &mut b.clock);
            tick(&mut tx, |b| &mut b.clock);
            guard += 1;
            assert!(guard < 10 * frame.len() + 10, "stuck");
        }
        out
    }

    #[test]
    fn bytes_survive_every_width() {
        for len in [1usize, 5, 42, 60, 63] {
            let frame: Vec<u8> = (0..len).map(|i| (i * 7 + 1) as u8).collect();
            assert_eq!(round_trip::<8>(&frame), frame, "width 1, {len} bytes");
            assert_eq!(round_trip::<32>(&frame), frame, "width 4, {len} bytes");
            assert_eq!(round_trip::<64>(&frame), frame, "width 8, {len} bytes");
        }
    }
}
