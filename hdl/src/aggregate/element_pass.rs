//! The element pass: one pass of a frame's elements through the aggregator's read-modify-write
//! pipeline — frame buffer and slot memory read, lane adder, slot memory and reply buffer write
//! (the read-modify-write of docs/switch.md §2, and the copies that build a reply, §3).
//!
//! Contract:
//! - `start` (one cycle) loads a pass over elements 0..=`last`: element i is word
//!   `slot_base + i` of the slot memory and word `offset + i` of the frame buffer's half
//!   `frame_half` and of the reply buffer's half `reply_half`. `last` and `offset` are taken
//!   at `start`.
//! - From the cycle after `start`, each cycle with `advance` high issues the next element
//!   (`issue` high) until all `last + 1` are issued: its frame buffer and slot memory words are
//!   read in that cycle. `advance` low stalls the issue; nothing else waits. `advance` is low
//!   in a `start` cycle.
//! - The element issued in cycle t is written in cycle t + 6 (`write` high, `write_word` its
//!   word): the frame buffer's word (read latency 2) is delayed 3 cycles to meet the slot
//!   memory's (read latency 5) at the lane adder, whose sum is registered (1 cycle): `incoming`
//!   if `overwrite`, else `stored + incoming`, where incoming is 0 under `copy_stored` and
//!   stored is 0 under `zero_stored`. The sum is written to the slot memory under `to_slot` and
//!   to the reply buffer under `to_reply`. The adder's controls are registered: `adder_first`
//!   is `overwrite` of the cycle before, pass or not (the exponent maxima read it too).
//! - `done` is high in the cycle of the last element's write, `last + 1 + s + 6` cycles after
//!   `start` with s stalled cycles: the pipeline is empty after it, so no read of a later pass
//!   can overtake a write of this one. A new `start` may come from the cycle after `done`, or
//!   before a pass's first issue (it replaces that pass).
//! - The modes (`overwrite`, `copy_stored`, `zero_stored`, `to_slot`, `to_reply`), `slot_base`
//!   and the halves hold while the pass runs.
//!
//! Timing: the issue stops on an equality registered as the last element issues
//! (`issue_left`, against `issue_stop`), and the pass ends with that element's write: its issue
//! goes down a delay line beside the others (`last_issued`), so no adder or comparison lies
//! between the write counter and `done`. The element's word has its own counter
//! (`issue_frame_word`, `write_frame_word`) rather than an adder on the index, and the flag
//! that follows a mode into the adder is registered.

use crate::block_ram::RamClient;
use rust_hdl::prelude::*;

/// Counters, delays and write strobes of one pass of elements.
#[derive(LogicBlock, Default)]
pub struct ElementPass {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Load a pass over elements 0..=`last` (its first element issues in the next cycle at the earliest).
    pub start: Signal<In, Bit>,
    /// The pass's last element index (taken at `start`).
    pub last: Signal<In, Bits<10>>,
    /// The frame (and reply) word of element 0 (taken at `start`).
    pub offset: Signal<In, Bits<10>>,
    /// Issue the next element this cycle, if one is left (low: a stall).
    pub advance: Signal<In, Bit>,
    /// The sum is the incoming value (a round's first contribution, a frame copy), not stored + incoming.
    pub overwrite: Signal<In, Bit>,
    /// The incoming value is 0 (a copy of the stored values).
    pub copy_stored: Signal<In, Bit>,
    /// The stored value is 0 (a reply with no values).
    pub zero_stored: Signal<In, Bit>,
    /// Write the sums into the slot memory.
    pub to_slot: Signal<In, Bit>,
    /// Write the sums into the reply buffer.
    pub to_reply: Signal<In, Bit>,
    /// The slot memory word of element 0 (slot, set).
    pub slot_base: Signal<In, Bits<16>>,
    /// The frame buffer's half (address bit 9).
    pub frame_half: Signal<In, Bit>,
    /// The reply buffer's half (address bit 9).
    pub reply_half: Signal<In, Bit>,
    /// Frame buffer read address.
    pub frame_address: Signal<Out, Bits<10>>,
    /// Frame buffer data (2 cycles after its address).
    pub frame_data: Signal<In, Bits<32>>,
    /// The slot memory's values (read data 5 cycles after its address).
    pub sm: RamClient<16, 32>,
    /// The lane adder's stored operand.
    pub adder_stored: Signal<Out, Bits<32>>,
    /// The lane adder's incoming operand.
    pub adder_incoming: Signal<Out, Bits<32>>,
    /// The lane adder writes the incoming value as it is.
    pub adder_first: Signal<Out, Bit>,
    /// The lane adder's registered sum.
    pub adder_sum: Signal<In, Bits<32>>,
    /// Reply buffer write address.
    pub reply_address: Signal<Out, Bits<10>>,
    /// Reply buffer write data.
    pub reply_data: Signal<Out, Bits<32>>,
    /// Reply buffer write strobe.
    pub reply_enable: Signal<Out, Bit>,
    /// An element is issued this cycle.
    pub issue: Signal<Out, Bit>,
    /// An element is written this cycle.
    pub write: Signal<Out, Bit>,
    /// The word (`offset + i`) of the element written.
    pub write_word: Signal<Out, Bits<10>>,
    /// The pass's last write: the pipeline is empty after this cycle.
    pub done: Signal<Out, Bit>,
    /// The index of the next element to issue.
    issue_index: DFF<Bits<10>>,
    /// Its word (`offset + issue_index`).
    issue_frame_word: DFF<Bits<10>>,
    /// Elements are left to issue.
    issue_left: DFF<Bit>,
    /// The pass's last index.
    issue_stop: DFF<Bits<10>>,
    /// The index of the next element to write.
    write_index: DFF<Bits<10>>,
    /// Its word.
    write_frame_word: DFF<Bits<10>>,
    /// The issues of the last 6 cycles (bit 5: 6 cycles ago).
    issued: DFF<Bits<6>>,
    /// The issue of the pass's last element in the last 6 cycles.
    last_issued: DFF<Bits<6>>,
    /// The frame buffer's word, delayed to meet the slot memory's.
    incoming_d1: DFF<Bits<32>>,
    incoming_d2: DFF<Bits<32>>,
    incoming_d3: DFF<Bits<32>>,
    /// `overwrite`, registered for the adder.
    overwrite_d1: DFF<Bit>,
    /// The element issued this cycle is the pass's last.
    issue_last: Signal<Local, Bit>,
}

impl Logic for ElementPass {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            issue_index,
            issue_frame_word,
            issue_left,
            issue_stop,
            write_index,
            write_frame_word,
            issued,
            last_issued,
            incoming_d1,
            incoming_d2,
            incoming_d3,
            overwrite_d1
        );
        // Issue: the frame buffer and the slot memory are read at the element's addresses.
        self.frame_address.next = self.issue_frame_word.q.val();
        if self.frame_half.val() {
            self.frame_address.next = self.issue_frame_word.q.val() | 512;
        }
        self.sm.read_address.next = self.slot_base.val() + bit_cast::<16, 10>(self.issue_index.q.val());
        self.issue.next = self.advance.val() & self.issue_left.q.val();
        self.issue_last.next = self.issue.val() & (self.issue_index.q.val() == self.issue_stop.q.val());
        if self.issue.val() {
            self.issue_index.d.next = self.issue_index.q.val() + 1;
            self.issue_frame_word.d.next = self.issue_frame_word.q.val() + 1;
            self.issue_left.d.next = !self.issue_last.val();
        }
        self.issued.d.next = (self.issued.q.val() << 1) | bit_cast::<6, 1>(self.issue.val().into());
        self.last_issued.d.next = (self.last_issued.q.val() << 1) | bit_cast::<6, 1>(self.issue_last.val().into());
        // The datapath: frame buffer data (2 cycles) delayed 3 more to meet the slot memory
        // data (5 cycles) at the registered lane adder.
        self.incoming_d1.d.next = self.frame_data.val();
        self.incoming_d2.d.next = self.incoming_d1.q.val();
        self.incoming_d3.d.next = self.incoming_d2.q.val();
        if self.copy_stored.val() {
            self.incoming_d3.d.next = 0.into();
        }
        self.overwrite_d1.d.next = self.overwrite.val();
        self.adder_incoming.next = self.incoming_d3.q.val();
        self.adder_first.next = self.overwrite_d1.q.val();
        self.adder_stored.next = self.sm.read_data.val();
        if self.zero_stored.val() {
            self.adder_stored.next = 0.into();
        }
        // Write, 6 cycles after the issue: the adder's sum into the slot memory and the reply buffer.
        self.write.next = self.issued.q.val().get_bit(5);
        self.write_word.next = self.write_frame_word.q.val();
        self.done.next = self.last_issued.q.val().get_bit(5);
        self.sm.write_address.next = self.slot_base.val() + bit_cast::<16, 10>(self.write_index.q.val());
        self.sm.write_data.next = self.adder_sum.val();
        self.sm.write_enable.next = self.write.val() & self.to_slot.val();
        self.reply_address.next = self.write_frame_word.q.val();
        if self.reply_half.val() {
            self.reply_address.next = self.write_frame_word.q.val() | 512;
        }
        self.reply_data.next = self.adder_sum.val();
        self.reply_enable.next = self.write.val() & self.to_reply.val();
        if self.write.val() {
            self.write_index.d.next = self.write_index.q.val() + 1;
            self.write_frame_word.d.next = self.write_frame_word.q.val() + 1;
        }
        if self.start.val() {
            self.issue_index.d.next = 0.into();
            self.issue_frame_word.d.next = self.offset.val();
            self.issue_left.d.next = true;
            self.issue_stop.d.next = self.last.val();
            self.write_index.d.next = 0.into();
            self.write_frame_word.d.next = self.offset.val();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::step::settle;
    use std::collections::BTreeMap;

    /// One pass as the test asks for it.
    #[derive(Clone, Copy, Debug)]
    struct Pass {
        last: usize,
        offset: usize,
        slot_base: usize,
        frame_half: bool,
        reply_half: bool,
        overwrite: bool,
        copy_stored: bool,
        zero_stored: bool,
        to_slot: bool,
        to_reply: bool,
        /// One cycle in `stall` has `advance` low (0: never).
        stall: u64,
        /// Idle cycles between the previous pass's `done` and this `start`.
        gap: usize,
        /// A `start` with no pass after it comes first (a pass loaded, then replaced).
        dry_start: bool,
    }

    impl Pass {
        fn random(rng: &mut Rng) -> Self {
            let last = match rng.below(6) {
                0 => rng.below(3) as usize,
                1 | 2 => rng.below(64) as usize,
                _ => rng.below(300) as usize,
            };
            Pass {
                last,
                offset: [13, 10, rng.below((512 - last) as u64) as usize][rng.below(3) as usize],
                slot_base: rng.below(65536 - 1024) as usize,
                frame_half: rng.one_in(2),
                reply_half: rng.one_in(2),
                overwrite: rng.one_in(2),
                copy_stored: rng.one_in(3),
                zero_stored: rng.one_in(3),
                to_slot: rng.one_in(2),
                to_reply: !rng.one_in(3),
                stall: [0, 0, 2, 3, 5][rng.below(5) as usize],
                gap: rng.below(4) as usize,
                dry_start: rng.one_in(8),
            }
        }
    }

    /// The block's neighbours, each a model of its own contract: the frame buffer (read
    /// latency 2), the slot memory (the word at the edge after its address, then 4 registers:
    /// latency 5; written at the edge) and the lane adder (registered sum).
    struct Neighbours {
        frame: Vec<u32>,
        frame_pipe: [u32; 2],
        slot: Vec<u32>,
        slot_pipe: [u32; 5],
        sum: u32,
    }

    /// A write the contract promises for one cycle: (element, its word, the sum).
    type Promise = (usize, usize, u32);

    /// What one cycle's outputs are, as the model expects them.
    struct Model {
        /// The slot memory as the promised writes leave it.
        slot: Vec<u32>,
        /// Writes promised, by cycle.
        writes: BTreeMap<u64, Promise>,
    }

    /// One clock edge: the neighbours take the block's outputs, then the block its own.
    fn edge(b: &mut ElementPass, nb: &mut Neighbours) {
        let frame_word = nb.frame[b.frame_address.val().index()];
        nb.frame_pipe = [frame_word, nb.frame_pipe[0]];
        nb.slot_pipe.rotate_right(1);
        nb.slot_pipe[0] = nb.slot[b.sm.read_address.val().index()];
        if b.sm.write_enable.val() {
            nb.slot[b.sm.write_address.val().index()] = b.sm.write_data.val().index() as u32;
        }
        let (stored, incoming) = (b.adder_stored.val().index() as u32, b.adder_incoming.val().index() as u32);
        nb.sum = if b.adder_first.val() { incoming } else { stored.wrapping_add(incoming) };
        tick!(&mut *b);
        b.frame_data.next = u64::from(nb.frame_pipe[1]).into();
        b.sm.read_data.next = u64::from(nb.slot_pipe[4]).into();
        b.adder_sum.next = u64::from(nb.sum).into();
    }

    /// Sets the pass's modes and bases.
    fn hold(b: &mut ElementPass, p: &Pass) {
        b.slot_base.next = (p.slot_base as u64).into();
        b.frame_half.next = p.frame_half;
        b.reply_half.next = p.reply_half;
        b.overwrite.next = p.overwrite;
        b.copy_stored.next = p.copy_stored;
        b.zero_stored.next = p.zero_stored;
        b.to_slot.next = p.to_slot;
        b.to_reply.next = p.to_reply;
    }

    /// Checks the writes of cycle `c` against the promise (none, or one element's).
    fn check_writes(b: &ElementPass, p: &Pass, promise: Option<&Promise>, c: u64) {
        let what = format!("cycle {c}, {p:?}");
        match promise {
            None => {
                assert!(!b.write.val(), "{what}: a write nobody issued");
                assert!(!b.sm.write_enable.val() && !b.reply_enable.val(), "{what}: a write strobe");
            }
            Some(&(i, word, sum)) => {
                assert!(b.write.val(), "{what}: element {i} not written 6 cycles after its issue");
                assert_eq!(b.write_word.val().index(), word, "{what}: element {i}'s word");
                assert_eq!(b.sm.write_enable.val(), p.to_slot, "{what}: element {i}'s slot memory write");
                assert_eq!(b.reply_enable.val(), p.to_reply, "{what}: element {i}'s reply buffer write");
                if p.to_slot {
                    assert_eq!(b.sm.write_address.val().index(), p.slot_base + i, "{what}: element {i}");
                    assert_eq!(b.sm.write_data.val().index() as u32, sum, "{what}: element {i}'s sum");
                }
                if p.to_reply {
                    let address = word | usize::from(p.reply_half) << 9;
                    assert_eq!(b.reply_address.val().index(), address, "{what}: element {i}");
                    assert_eq!(b.reply_data.val().index() as u32, sum, "{what}: element {i}'s sum");
                }
            }
        }
    }

    /// Passes of random length (1 to 300 elements), words, slot bases, halves and modes, with
    /// random stalls (`advance` low), started 0 to 3 cycles after the previous one's `done`,
    /// some after a `start` that no pass followed, with `last` and `offset` given only in the
    /// `start` cycle (garbage in every other): every cycle's issue, read addresses,
    /// writes (strobes, addresses, sums) and `done` are the contract's, and a pass takes
    /// `last + 1 + stalls + 6` cycles from `start` to `done`.
    #[test]
    fn passes_follow_the_model_of_the_contract() {
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut b = ElementPass::default();
        b.connect_all();
        let mut nb = Neighbours {
            frame: (0..1024).map(|_| rng.next() as u32).collect(),
            frame_pipe: [0; 2],
            slot: (0..65536).map(|_| rng.next() as u32).collect(),
            slot_pipe: [0; 5],
            sum: 0,
        };
        let mut model = Model { slot: nb.slot.clone(), writes: BTreeMap::new() };
        let mut c = 0u64;
        let (mut elements, mut stalled, mut stalls_total) = (0usize, 0u64, 0u64);
        let passes: Vec<Pass> = (0..80).map(|_| Pass::random(&mut rng)).collect();
        for (n, p) in passes.iter().enumerate() {
            // Idle cycles (`advance` random, but after a dry start).
            let gap = if p.dry_start { p.gap.max(1) } else { p.gap };
            for g in 0..gap {
                // A dry start: a pass loaded and never advanced, which must issue nothing.
                b.start.next = p.dry_start && g == 0;
                b.advance.next = !p.dry_start && rng.one_in(2);
                b.offset.next = rng.below(1024).into();
                b.last.next = rng.below(1024).into();
                settle(&mut b);
                assert!(!b.issue.val() && !b.done.val(), "cycle {c}: issue or done with no pass");
                check_writes(&b, p, None, c);
                edge(&mut b, &mut nb);
                c += 1;
            }
            // The pass.
            hold(&mut b, p);
            b.start.next = true;
            b.offset.next = (p.offset as u64).into();
            b.last.next = (p.last as u64).into();
            b.advance.next = false;
            settle(&mut b);
            assert!(!b.issue.val() && !b.done.val(), "cycle {c}: issue in the start cycle");
            check_writes(&b, p, None, c);
            edge(&mut b, &mut nb);
            let start = c;
            c += 1;
            b.start.next = false;
            let mut issued = 0usize;
            loop {
                assert!(c < start + 10_000, "pass {n} never ends: {p:?}");
                let advance = p.stall == 0 || !rng.one_in(p.stall);
                b.advance.next = advance;
                b.offset.next = rng.below(1024).into();
                b.last.next = rng.below(1024).into();
                settle(&mut b);
                // Issue: element `issued` if `advance` and one is left.
                let issue = advance && issued <= p.last;
                assert_eq!(b.issue.val(), issue, "cycle {c}, pass {n}: issue, {issued} issued of {p:?}");
                if issue {
                    let (i, word) = (issued, p.offset + issued);
                    assert_eq!(b.frame_address.val().index(), word | usize::from(p.frame_half) << 9, "element {i}");
                    assert_eq!(b.sm.read_address.val().index(), p.slot_base + i, "element {i}");
                    let incoming = if p.copy_stored { 0 } else { nb.frame[word | usize::from(p.frame_half) << 9] };
                    let stored = if p.zero_stored { 0 } else { model.slot[p.slot_base + i] };
                    let sum = if p.overwrite { incoming } else { stored.wrapping_add(incoming) };
                    model.writes.insert(c + 6, (i, word, sum));
                    issued += 1;
                } else if issued <= p.last {
                    stalled += 1;
                }
                let promise = model.writes.remove(&c);
                check_writes(&b, p, promise.as_ref(), c);
                if let Some((i, _, sum)) = promise {
                    if p.to_slot {
                        model.slot[p.slot_base + i] = sum;
                    }
                    elements += 1;
                }
                let last_write = promise.is_some_and(|(i, _, _)| i == p.last);
                assert_eq!(b.done.val(), last_write, "cycle {c}, pass {n}: done");
                if last_write {
                    assert!(model.writes.is_empty());
                    assert_eq!(c - start, p.last as u64 + 1 + stalled + 6, "pass {n}: cycles from start to done");
                    edge(&mut b, &mut nb);
                    c += 1;
                    break;
                }
                edge(&mut b, &mut nb);
                c += 1;
            }
            stalls_total += stalled;
            stalled = 0;
        }
        assert_eq!(nb.slot, model.slot, "the slot memory at the end");
        // The random passes covered what they should.
        assert!(passes.iter().any(|p| p.last == 0) && passes.iter().any(|p| p.gap == 0 && !p.dry_start));
        assert!(passes.iter().any(|p| p.dry_start) && stalls_total > 500, "{stalls_total} stalls");
        assert!(elements > 5_000, "{elements} elements");
    }
}
