//! [`BusSync`]: an `N`-bit value from one clock to another, atomically (a bus synchronizer,
//! free-running on a [`Handshake`]).
//!
//! Guarantee: `dst_value` only ever takes values `src_value` had (all `N` bits from the same
//! source clock edge: never a mix of an old and a new value), in the order the source had
//! them (intermediate ones may be skipped), and follows a value held steady within about two
//! rounds of the handshake (three clocks of each side a round). Its power-up value is the
//! one given to [`BusSync::with_init`] (0 by default) until the first round completes.
//!
//! Paths between the clocks: those of the [`Handshake`], and `hold` into `out`.

use crate::cdc::Handshake;
use rust_hdl::prelude::*;

/// An `N`-bit bus synchronizer.
#[derive(LogicBlock)]
pub struct BusSync<const N: usize> {
    /// Source clock.
    pub src_clock: Signal<In, Clock>,
    /// The value, in the source clock.
    pub src_value: Signal<In, Bits<N>>,
    /// Destination clock.
    pub dst_clock: Signal<In, Clock>,
    /// The value in the destination clock (a register).
    pub dst_value: Signal<Out, Bits<N>>,
    hs: Handshake,
    hold: DFFWithInit<Bits<N>>,
    out: DFFWithInit<Bits<N>>,
}

impl<const N: usize> Default for BusSync<N> {
    fn default() -> Self {
        Self::with_init(Bits::default())
    }
}

impl<const N: usize> BusSync<N> {
    /// A synchronizer whose output is `init` until the first value has crossed.
    pub fn with_init(init: Bits<N>) -> Self {
        Self {
            src_clock: Default::default(),
            src_value: Default::default(),
            dst_clock: Default::default(),
            dst_value: Default::default(),
            hs: Default::default(),
            hold: DFFWithInit::new(init),
            out: DFFWithInit::new(init),
        }
    }
}

impl<const N: usize> Logic for BusSync<N> {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, src_clock, hold);
        dff_setup!(self, dst_clock, out);
        self.hs.src_clock.next = self.src_clock.val();
        self.hs.dst_clock.next = self.dst_clock.val();
        if self.hs.src_load.val() {
            self.hold.d.next = self.src_value.val();
        }
        if self.hs.dst_load.val() {
            self.out.d.next = self.hold.q.val();
        }
        self.dst_value.next = self.out.q.val();
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::cdc::two_clocks::{lint, Rng, TwoClocks, PERIODS};

    /// A 32-bit value whose halves are complements: a mix of two such values (some bits old,
    /// some new) is almost never one.
    fn coded(x: u16) -> u64 {
        (u64::from(x) << 16) | u64::from(!x)
    }

    /// The source changes its value every few clocks (every bit at once); the destination
    /// never shows a value the source did not hold, shows them in order, and ends on the last.
    /// A zero-delay simulation has no skew between bits, so the test also checks what makes a
    /// mix impossible on the chip: the hold register is stable for a whole destination period
    /// before each edge at which the destination loads it, and for a whole source period after.
    #[test]
    fn never_a_mix_of_old_and_new_bits() {
        for periods in PERIODS {
            let mut b = BusSync::<32>::with_init(coded(0).into());
            b.connect_all();
            let mut clocks = TwoClocks::new(periods);
            let mut rng = Rng(0x9e37_79b9);
            let mut held: Vec<u64> = vec![coded(0)];
            let mut seen = vec![coded(0)];
            b.src_value.next = coded(0).into();
            assert!(simulate(&mut b, 100));
            let mut src_edges = 0;
            let (mut hold_changed, mut last_load, mut hold) = (0u64, 0u64, b.hold.q.val());
            while src_edges < 4000 {
                let e = clocks.next_edge();
                if e.clock == 1 && e.rising && b.hs.dst_load.val() {
                    assert!(clocks.now - hold_changed >= periods[1], "periods {periods:?}: hold changed too late");
                    last_load = clocks.now;
                }
                if e.clock == 0 {
                    b.src_clock.next = e.rising.into();
                } else {
                    b.dst_clock.next = e.rising.into();
                }
                assert!(simulate(&mut b, 100));
                if e.rising && e.clock == 0 {
                    src_edges += 1;
                    if b.hold.q.val() != hold {
                        assert!(clocks.now - last_load >= periods[0], "periods {periods:?}: hold changed too early");
                        hold = b.hold.q.val();
                        hold_changed = clocks.now;
                    }
                    // A new value now and then, held at least a clock, the last for good.
                    if src_edges < 3800 && rng.one_in(3) {
                        let v = coded(rng.next() as u16);
                        held.push(v);
                        b.src_value.next = v.into();
                        assert!(simulate(&mut b, 100));
                    }
                }
                if e.rising && e.clock == 1 {
                    let v = b.dst_value.val().to_u64();
                    if *seen.last().unwrap() != v {
                        seen.push(v);
                    }
                }
            }
            // Every value shown was held, in the source's order.
            let mut at = 0;
            for v in &seen {
                let i = held[at..].iter().position(|h| h == v);
                assert!(i.is_some(), "periods {periods:?}: {v:#x} shown, not held (or out of order)");
                at += i.unwrap();
            }
            assert_eq!(seen.last(), held.last(), "periods {periods:?}: the last value crossed");
            assert!(
                seen.len() > held.len() / 8,
                "periods {periods:?}: {} of {} values crossed",
                seen.len(),
                held.len()
            );
        }
    }

    #[test]
    fn lints_clean() {
        let mut b = BusSync::<32>::default();
        b.connect_all();
        lint("BusSync<32>", &generate_verilog(&b));
    }
}
