//! [`StreamCrossing`]: a valid/ready stream of `N`-bit words from one clock to another, one
//! word in flight (a held word buffer and a toggle handshake; no RAM).
//!
//! The source side takes a word while `up.ready` (its hold register is free: the previous
//! word's acknowledge has come back) and toggles the request; the destination copies the held
//! word into its output register once it sees the request and the register is free, and
//! acknowledges. Words arrive whole, in order, none lost or repeated; one word per round of
//! about three clocks of each side (the destination's copy lets the next round overlap the
//! reader's use of the word).
//!
//! Paths between the clocks: the toggles into their first flip-flops, and the hold register
//! into the output register (stable from two destination clocks before it is copied until the
//! acknowledge has crossed back).

use crate::ethernet::stream::{ValidReadySink, ValidReadySource};
use rust_hdl::prelude::*;

/// A stream crossing with one word in flight.
#[derive(LogicBlock, Default)]
pub struct StreamCrossing<const N: usize> {
    /// Source clock.
    pub src_clock: Signal<In, Clock>,
    /// The words in (source clock; `ready` from registers).
    pub up: ValidReadySink<N>,
    /// Destination clock.
    pub dst_clock: Signal<In, Clock>,
    /// The words out (destination clock; `valid` and `data` registers).
    pub down: ValidReadySource<N>,
    /// Nothing in flight: the hold register is free and no word waits at the destination
    /// (source clock, from registers; the destination's part a few clocks late).
    pub src_idle: Signal<Out, Bit>,
    hold: DFF<Bits<N>>,
    req: DFF<Bit>,
    ack_s1: DFF<Bit>,
    ack_s2: DFF<Bit>,
    req_d1: DFF<Bit>,
    req_d2: DFF<Bit>,
    ack: DFF<Bit>,
    out: DFF<Bits<N>>,
    full: DFF<Bit>,
    full_s1: DFF<Bit>,
    full_s2: DFF<Bit>,
    take: Signal<Local, Bit>,
}

impl<const N: usize> Logic for StreamCrossing<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, src_clock, hold, req, ack_s1, ack_s2, full_s1, full_s2);
        dff_setup!(self, dst_clock, req_d1, req_d2, ack, out, full);
        // Source.
        self.ack_s1.d.next = self.ack.q.val();
        self.ack_s2.d.next = self.ack_s1.q.val();
        self.up.ready.next = self.req.q.val() == self.ack_s2.q.val();
        if self.up.valid.val() & self.up.ready.val() {
            self.hold.d.next = self.up.data.val();
            self.req.d.next = !self.req.q.val();
        }
        self.full_s1.d.next = self.full.q.val();
        self.full_s2.d.next = self.full_s1.q.val();
        self.src_idle.next = self.up.ready.val() & !self.full_s2.q.val();
        // Destination: the output register is free once its word is taken (in the same clock).
        self.req_d1.d.next = self.req.q.val();
        self.req_d2.d.next = self.req_d1.q.val();
        self.down.valid.next = self.full.q.val();
        self.down.data.next = self.out.q.val();
        if self.full.q.val() & self.down.ready.val() {
            self.full.d.next = false;
        }
        self.take.next = (self.req_d2.q.val() != self.ack.q.val()) & (!self.full.q.val() | self.down.ready.val());
        if self.take.val() {
            self.out.d.next = self.hold.q.val();
            self.full.d.next = true;
            self.ack.d.next = self.req_d2.q.val();
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cdc::two_clocks::{lint, Rng, TwoClocks, PERIODS};

    /// Numbered words with random gaps in, a reader that stalls at random: every word comes out
    /// once, in order; the hold register is stable for a destination period before each edge
    /// that copies it (what keeps its bits together on the chip).
    #[test]
    fn words_arrive_whole_in_order_once() {
        for periods in PERIODS {
            let mut b = StreamCrossing::<38>::default();
            b.connect_all();
            let mut clocks = TwoClocks::new(periods);
            let mut rng = Rng(42);
            let word = |i: u64| (i * 0x009e_3779_b97f) & ((1 << 38) - 1);
            let (mut sent, mut got) = (0u64, vec![]);
            let (mut hold_changed, mut hold) = (0u64, b.hold.q.val());
            while got.len() < 500 {
                let e = clocks.next_edge();
                if e.clock == 1 && e.rising && b.take.val() {
                    assert!(clocks.now - hold_changed >= periods[1], "periods {periods:?}: hold changed too late");
                }
                if e.clock == 0 {
                    b.src_clock.next = e.rising.into();
                    assert!(simulate(&mut b, 100));
                    if e.rising {
                        if b.hold.q.val() != hold {
                            hold = b.hold.q.val();
                            hold_changed = clocks.now;
                        }
                        let offer = !rng.one_in(4);
                        b.up.valid.next = offer;
                        b.up.data.next = word(sent).into();
                        assert!(simulate(&mut b, 100));
                    }
                } else {
                    // Taken at this rising edge?
                    let taken = e.rising && b.down.valid.val() && b.down.ready.val();
                    if taken {
                        got.push(b.down.data.val().to_u64());
                    }
                    b.dst_clock.next = e.rising.into();
                    assert!(simulate(&mut b, 100));
                    if e.rising {
                        b.down.ready.next = !rng.one_in(3);
                        assert!(simulate(&mut b, 100));
                    }
                }
                if clocks.now > 2_000_000_000 {
                    panic!("periods {periods:?}: stuck at {} words", got.len());
                }
                // A word offered while the hold register is free moves at the next source rising
                // edge (`up.ready` comes from source registers): count it at the falling edge.
                if e.clock == 0 && !e.rising && b.up.valid.val() && b.up.ready.val() {
                    sent += 1;
                }
            }
            let expect: Vec<u64> = (0..got.len() as u64).map(word).collect();
            assert_eq!(got, expect, "periods {periods:?}");
            assert!(sent >= got.len() as u64);
        }
    }

    #[test]
    fn lints_clean() {
        let mut b = StreamCrossing::<38>::default();
        b.connect_all();
        lint("StreamCrossing<38>", &generate_verilog(&b));
    }
}
