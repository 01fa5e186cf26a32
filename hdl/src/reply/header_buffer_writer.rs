//! The header buffer writer: a reply's header words (0..=12) into the result builder's header
//! buffer, each the word source's answer to an index (the aggregator's
//! [`crate::reply::header_composer::ReplyHeader`]) or a word copied from the frame.
//!
//! Contract:
//! - `restart` (held as long as wanted; no step or copy meanwhile) begins a reply: the next
//!   step writes word 0.
//! - Each cycle with `step` high writes the next word, 0, 1, …, `last`; a step after `last`
//!   writes nothing. `index` is the word the next step writes: the word source gives it on
//!   `word` one cycle later. `at_last` is high while the next step writes word `last` (a
//!   register: `last` ≥ 1, held from the first step on).
//! - `copy` writes `copy_data` as word `copy_index` if that is a header word (< 13); a copy
//!   and a step never come in the same cycle.
//! - Every write lands two cycles after its step or copy, registered: `hdr_write_enable`, the
//!   word at `hdr_write_address` (bit 4: `half` of the step or copy, bits 3..0: the word) and
//!   `hdr_write_data` (the result builder reads a header word many cycles after its load).

use rust_hdl::prelude::*;

/// The header words of one reply, written two cycles after they are chosen.
#[derive(LogicBlock, Default)]
pub struct HeaderWriter {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Begin a reply: the next step writes word 0.
    pub restart: Signal<In, Bit>,
    /// The reply's last header word.
    pub last: Signal<In, Bits<4>>,
    /// Write the next word.
    pub step: Signal<In, Bit>,
    /// The word the next step writes (to the word source).
    pub index: Signal<Out, Bits<4>>,
    /// The word source's word for `index` of one cycle earlier.
    pub word: Signal<In, Bits<32>>,
    /// The next step writes word `last`.
    pub at_last: Signal<Out, Bit>,
    /// Write `copy_data` as word `copy_index` instead.
    pub copy: Signal<In, Bit>,
    /// The word a copy writes (written only below 13).
    pub copy_index: Signal<In, Bits<10>>,
    /// The word a copy writes.
    pub copy_data: Signal<In, Bits<32>>,
    /// The header buffer's half.
    pub half: Signal<In, Bit>,
    /// Header buffer write address (bit 4: half, bits 3..0: word 0..12).
    pub hdr_write_address: Signal<Out, Bits<5>>,
    /// Header buffer write data.
    pub hdr_write_data: Signal<Out, Bits<32>>,
    /// Header buffer write strobe.
    pub hdr_write_enable: Signal<Out, Bit>,
    /// The word the next step writes.
    next_index: DFF<Bits<4>>,
    /// `next_index == last`.
    next_is_last: DFF<Bit>,
    /// Word `last` has been written: steps write nothing.
    finished: DFF<Bit>,
    /// Stage 1: the address and strobe of the word chosen, and the copied word.
    address: DFF<Bits<5>>,
    enable: DFF<Bit>,
    copied: DFF<Bits<32>>,
    from_copy: DFF<Bit>,
    /// Stage 2: the write.
    address_d2: DFF<Bits<5>>,
    enable_d2: DFF<Bit>,
    data: DFF<Bits<32>>,
    stepped: Signal<Local, Bits<4>>,
}

impl Logic for HeaderWriter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            next_index,
            next_is_last,
            finished,
            address,
            enable,
            copied,
            from_copy,
            address_d2,
            enable_d2,
            data
        );
        self.index.next = self.next_index.q.val();
        self.at_last.next = self.next_is_last.q.val();
        self.hdr_write_address.next = self.address_d2.q.val();
        self.hdr_write_data.next = self.data.q.val();
        self.hdr_write_enable.next = self.enable_d2.q.val();
        self.address_d2.d.next = self.address.q.val();
        self.enable_d2.d.next = self.enable.q.val();
        self.data.d.next = self.word.val();
        if self.from_copy.q.val() {
            self.data.d.next = self.copied.q.val();
        }
        self.copied.d.next = self.copy_data.val();
        self.from_copy.d.next = false;
        self.address.d.next = bit_cast::<5, 4>(self.next_index.q.val());
        if self.half.val() {
            self.address.d.next = bit_cast::<5, 4>(self.next_index.q.val()) | 16;
        }
        self.enable.d.next = false;
        self.stepped.next = self.next_index.q.val() + 1;
        if self.step.val() & !self.finished.q.val() {
            self.enable.d.next = true;
            self.next_index.d.next = self.stepped.val();
            self.next_is_last.d.next = self.stepped.val() == self.last.val();
            self.finished.d.next = self.next_is_last.q.val();
        }
        if self.copy.val() & (self.copy_index.val() < 13) {
            self.address.d.next = bit_cast::<5, 10>(self.copy_index.val()) & 15;
            if self.half.val() {
                self.address.d.next = (bit_cast::<5, 10>(self.copy_index.val()) & 15) | 16;
            }
            self.from_copy.d.next = true;
            self.enable.d.next = true;
        }
        if self.restart.val() {
            self.next_index.d.next = 0.into();
            self.next_is_last.d.next = false;
            self.finished.d.next = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::step::settle;
    use std::collections::BTreeMap;

    /// The word source's answer to `index` asked in cycle `c` (given in cycle `c + 1`).
    fn source(index: usize, c: u64) -> u32 {
        Rng(0x51ed_270b_0000_0000 ^ (c << 4) ^ index as u64).next() as u32
    }

    /// The edge that ends cycle `c`; the source answers this cycle's index in the next.
    fn edge(b: &mut HeaderWriter, c: &mut u64) {
        let index = b.index.val().index();
        tick!(&mut *b);
        b.word.next = u64::from(source(index, *c)).into();
        *c += 1;
    }

    /// Checks cycle `c`'s header buffer write against the one promised for it, if any.
    fn check_write(b: &HeaderWriter, writes: &mut BTreeMap<u64, (usize, u32)>, c: u64, what: &str) {
        match writes.remove(&c) {
            Some((address, data)) => {
                assert!(b.hdr_write_enable.val(), "{what}: no write");
                assert_eq!(b.hdr_write_address.val().index(), address, "{what}: address");
                assert_eq!(b.hdr_write_data.val().index() as u32, data, "{what}: data");
            }
            None => assert!(!b.hdr_write_enable.val(), "{what}: a write nobody asked for"),
        }
    }

    /// Replies with `last` from 1 to 12, steps at random (a third of the cycles without),
    /// copies of random words 0..=19 in between (those below 13 written), the half changing
    /// at random, restarts of 1 to 3 cycles, steps after the last word: every cycle's
    /// `index`, `at_last` and header buffer write (strobe, address, data) are those of a model
    /// that writes the next word (the source's answer to it) or the copy two cycles after the
    /// step or copy, and stops after word `last`.
    #[test]
    fn writes_follow_the_model_of_the_contract() {
        let mut rng = Rng(0xdead_beef_cafe_f00d);
        let mut b = HeaderWriter::default();
        b.connect_all();
        // Writes promised, by cycle: (address, data).
        let mut writes: BTreeMap<u64, (usize, u32)> = BTreeMap::new();
        let mut c = 0u64;
        let (mut stepped, mut copied, mut late_steps) = (0, 0, 0);
        for reply in 0..300 {
            let last = 1 + rng.below(12) as usize;
            for _ in 0..1 + rng.below(3) {
                b.restart.next = true;
                b.step.next = false;
                b.copy.next = false;
                b.half.next = rng.one_in(2);
                b.last.next = rng.below(16).into();
                settle(&mut b);
                check_write(&b, &mut writes, c, &format!("cycle {c}, restart before reply {reply}"));
                edge(&mut b, &mut c);
            }
            b.restart.next = false;
            b.last.next = (last as u64).into();
            let (mut next, mut finished) = (0usize, false);
            let mut extra = rng.below(4);
            while !finished || extra > 0 {
                let step = !rng.one_in(3);
                let copy = !step && rng.one_in(3);
                let half = rng.one_in(2);
                let copy_index = rng.below(20) as usize;
                let copy_data = rng.next() as u32;
                b.step.next = step;
                b.copy.next = copy;
                b.half.next = half;
                b.copy_index.next = (copy_index as u64).into();
                b.copy_data.next = u64::from(copy_data).into();
                settle(&mut b);
                let what = format!("cycle {c}, reply {reply} (last {last}), word {next}");
                assert_eq!(b.index.val().index(), next, "{what}: index");
                assert_eq!(b.at_last.val(), next == last, "{what}: at_last");
                let h = usize::from(half) << 4;
                if step && !finished {
                    writes.insert(c + 2, (h | next, source(next, c)));
                    finished = next == last;
                    next += 1;
                    stepped += 1;
                } else if step {
                    late_steps += 1;
                    extra -= 1;
                }
                if copy && copy_index < 13 {
                    writes.insert(c + 2, (h | copy_index, copy_data));
                    copied += 1;
                }
                check_write(&b, &mut writes, c, &what);
                edge(&mut b, &mut c);
            }
        }
        assert!(stepped > 2_000 && copied > 200 && late_steps > 200, "{stepped} {copied} {late_steps}");
    }
}
