//! A register slice for a valid/ready stream of `W`-bit words: the output and the input's `ready` come
//! from flip-flops, so no combinational path runs through the slice in either direction (a
//! combinational `ready` or `valid` of one block no longer meets the other's logic). One clock
//! of latency, a word a clock at full rate (a skid register takes the word that arrives in the
//! cycle the output stalls), words in order, none lost or duplicated.

use crate::ethernet::stream::{ValidReadySink, ValidReadySource};
use rust_hdl::prelude::*;

/// The register slice.
#[derive(LogicBlock, Default)]
pub struct StreamSlice<const W: usize> {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The words in (`ready` from a register).
    pub up: ValidReadySink<W>,
    /// The words out (`valid` and `data` from registers).
    pub down: ValidReadySource<W>,
    /// Nothing held.
    pub empty: Signal<Out, Bit>,
    o_valid: DFF<Bit>,
    o_data: DFF<Bits<W>>,
    s_valid: DFF<Bit>,
    s_data: DFF<Bits<W>>,
}

impl<const W: usize> Logic for StreamSlice<W> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, o_valid, o_data, s_valid, s_data);
        self.up.ready.next = !self.s_valid.q.val();
        self.down.valid.next = self.o_valid.q.val();
        self.down.data.next = self.o_data.q.val();
        self.empty.next = !self.o_valid.q.val() & !self.s_valid.q.val();
        if !self.o_valid.q.val() | self.down.ready.val() {
            // The output register is free at the edge: refill it, skid word first.
            if self.s_valid.q.val() {
                self.o_data.d.next = self.s_data.q.val();
                self.s_valid.d.next = false;
            } else {
                self.o_valid.d.next = self.up.valid.val();
                self.o_data.d.next = self.up.data.val();
            }
        } else if self.up.valid.val() & !self.s_valid.q.val() {
            // The output stalls: the word taken this cycle waits in the skid register.
            self.s_valid.d.next = true;
            self.s_data.d.next = self.up.data.val();
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn settle<T: Block>(b: &mut T) {
        for _ in 0..8 {
            b.update_all();
            if !b.has_changed() {
                return;
            }
        }
        panic!("no settle");
    }

    /// Random valid and ready: every word comes out once, in order; at full rate when both
    /// sides are always ready.
    #[test]
    fn words_in_order_at_full_rate() {
        let mut s = StreamSlice::<16>::default();
        s.connect_all();
        let mut rng = 0x1234_5678_u32;
        let mut next = || {
            rng ^= rng << 13;
            rng ^= rng >> 17;
            rng ^= rng << 5;
            rng
        };
        for bursty in [false, true] {
            let (mut sent, mut got) = (0u64, 0u64);
            for cycle in 0..6000 {
                let v = !bursty || next() % 3 != 0;
                let r = !bursty || next() % 4 != 0;
                s.up.valid.next = v && sent < 3000;
                s.up.data.next = (sent & 0xffff).into();
                s.down.ready.next = r;
                settle(&mut s);
                if s.up.valid.val() && s.up.ready.val() {
                    sent += 1;
                }
                if s.down.valid.val() && s.down.ready.val() {
                    assert_eq!(s.down.data.val().index() as u64, got & 0xffff, "cycle {cycle}");
                    got += 1;
                }
                s.clock.next = true.into();
                settle(&mut s);
                s.clock.next = false.into();
                settle(&mut s);
                if !bursty && cycle == 100 {
                    assert_eq!((sent, got), (101, 100), "a word a clock, one clock of latency");
                }
            }
            assert_eq!((sent, got), (3000, 3000));
            assert!(s.empty.val());
        }
    }
}
