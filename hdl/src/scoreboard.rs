//! The scoreboard: per slot and set, the worker bitmap `seen[v][s]` and the round counter
//! `count[v][s]` of docs/switch.md §2.
//!
//! Timing contract: `slot`, `set` and `rank` must be stable for a cycle before `active`
//! (block RAM read) and until the commit. `active` high in cycle t registers the lookup: in
//! cycle t + 1, `is_new`, `first`, `last` and `complete` describe a contribution of `rank` to
//! (`slot`, `set`) from flip-flops, and a `commit` pulse in that cycle writes the registered
//! update (`seen[v].rank = 1`, `seen[1-v].rank = 0`, `count[v] = (count[v] + 1) mod n`), visible
//! to the next lookup (`first` and `last` describe the contribution as if new; they matter only
//! when `is_new`). `clear` zeroes every slot, one a cycle, with `clearing` high meanwhile.
//! Guarantees: nothing changes without `commit`; a duplicate is detected from the bitmap alone.

use crate::block_ram::BlockRam;
use rust_hdl::prelude::*;

/// Worker bitmaps and counters of every slot and set.
#[derive(LogicBlock)]
pub struct Scoreboard {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Slot looked up.
    pub slot: Signal<In, Bits<6>>,
    /// Set looked up.
    pub set: Signal<In, Bit>,
    /// Rank of the contributing worker.
    pub rank: Signal<In, Bits<5>>,
    /// Number of workers n.
    pub workers: Signal<In, Bits<6>>,
    /// The lookup outputs are wanted this cycle.
    pub active: Signal<In, Bit>,
    /// Write the update of a new contribution.
    pub commit: Signal<In, Bit>,
    /// Start clearing every slot.
    pub clear: Signal<In, Bit>,
    /// The worker's bit is not set yet.
    pub is_new: Signal<Out, Bit>,
    /// The round's count is 0 (first contribution of a round).
    pub first: Signal<Out, Bit>,
    /// This new contribution completes the round.
    pub last: Signal<Out, Bit>,
    /// The round is complete (count 0): a duplicate is answered.
    pub complete: Signal<Out, Bit>,
    /// A clear pass is running.
    pub clearing: Signal<Out, Bit>,
    seen0: BlockRam<6, 32>,
    seen1: BlockRam<6, 32>,
    count: BlockRam<6, 10>,
    slots: Constant<Bits<7>>,
    bit_mask: Signal<Local, Bits<32>>,
    seen_v: Signal<Local, Bits<32>>,
    cnt_v: Signal<Local, Bits<5>>,
    cnt_next: Signal<Local, Bits<5>>,
    r_new: DFF<Bit>,
    r_first: DFF<Bit>,
    r_last: DFF<Bit>,
    r_complete: DFF<Bit>,
    w_seen0: DFF<Bits<32>>,
    w_seen1: DFF<Bits<32>>,
    w_count: DFF<Bits<10>>,
    clr: DFF<Bit>,
    clr_idx: DFF<Bits<7>>,
}

impl Scoreboard {
    /// A scoreboard for `slots` slots.
    pub fn new(slots: usize) -> Self {
        Self {
            clock: Default::default(),
            slot: Default::default(),
            set: Default::default(),
            rank: Default::default(),
            workers: Default::default(),
            active: Default::default(),
            commit: Default::default(),
            clear: Default::default(),
            is_new: Default::default(),
            first: Default::default(),
            last: Default::default(),
            complete: Default::default(),
            clearing: Default::default(),
            seen0: BlockRam::new(slots),
            seen1: BlockRam::new(slots),
            count: BlockRam::new(slots),
            slots: Constant::new((slots as u64).into()),
            bit_mask: Default::default(),
            seen_v: Default::default(),
            cnt_v: Default::default(),
            cnt_next: Default::default(),
            r_new: Default::default(),
            r_first: Default::default(),
            r_last: Default::default(),
            r_complete: Default::default(),
            w_seen0: Default::default(),
            w_seen1: Default::default(),
            w_count: Default::default(),
            clr: Default::default(),
            clr_idx: Default::default(),
        }
    }
}

impl Logic for Scoreboard {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, r_new, r_first, r_last, r_complete, w_seen0, w_seen1, w_count, clr, clr_idx);
        clock!(self, clock, seen0, seen1, count);
        self.seen0.read_address.next = self.slot.val();
        self.seen1.read_address.next = self.slot.val();
        self.count.read_address.next = self.slot.val();
        self.seen0.write_address.next = self.slot.val();
        self.seen1.write_address.next = self.slot.val();
        self.count.write_address.next = self.slot.val();
        self.seen0.write_data.next = self.w_seen0.q.val();
        self.seen1.write_data.next = self.w_seen1.q.val();
        self.count.write_data.next = self.w_count.q.val();
        self.seen0.write_enable.next = self.commit.val();
        self.seen1.write_enable.next = self.commit.val();
        self.count.write_enable.next = self.commit.val();
        self.clearing.next = self.clr.q.val();
        self.bit_mask.next = 0.into();
        self.seen_v.next = 0.into();
        self.cnt_v.next = 0.into();
        self.cnt_next.next = 0.into();
        self.is_new.next = self.r_new.q.val();
        self.first.next = self.r_first.q.val();
        self.last.next = self.r_last.q.val();
        self.complete.next = self.r_complete.q.val();
        if self.active.val() {
            self.bit_mask.next = bits::<32>(1) << bit_cast::<32, 5>(self.rank.val());
            if self.set.val() {
                self.seen_v.next = self.seen1.read_data.val();
                self.cnt_v.next = bit_cast::<5, 10>(self.count.read_data.val() >> 5);
            } else {
                self.seen_v.next = self.seen0.read_data.val();
                self.cnt_v.next = bit_cast::<5, 10>(self.count.read_data.val());
            }
            if bit_cast::<6, 5>(self.cnt_v.val()) + 1 == self.workers.val() {
                self.cnt_next.next = 0.into();
            } else {
                self.cnt_next.next = self.cnt_v.val() + 1;
            }
            self.r_new.d.next = (self.seen_v.val() & self.bit_mask.val()) == 0;
            self.r_first.d.next = self.cnt_v.val() == 0;
            self.r_last.d.next = self.cnt_next.val() == 0;
            self.r_complete.d.next = self.cnt_v.val() == 0;
            if self.set.val() {
                self.w_seen0.d.next = self.seen0.read_data.val() & !self.bit_mask.val();
                self.w_seen1.d.next = self.seen1.read_data.val() | self.bit_mask.val();
                self.w_count.d.next =
                    (bit_cast::<10, 5>(self.cnt_next.val()) << 5) | (self.count.read_data.val() & 0x1f);
            } else {
                self.w_seen0.d.next = self.seen0.read_data.val() | self.bit_mask.val();
                self.w_seen1.d.next = self.seen1.read_data.val() & !self.bit_mask.val();
                self.w_count.d.next = (self.count.read_data.val() & 0x3e0) | bit_cast::<10, 5>(self.cnt_next.val());
            }
        }
        if self.clr.q.val() {
            self.seen0.write_data.next = 0.into();
            self.seen1.write_data.next = 0.into();
            self.count.write_data.next = 0.into();
            self.seen0.write_address.next = bit_cast::<6, 7>(self.clr_idx.q.val());
            self.seen1.write_address.next = bit_cast::<6, 7>(self.clr_idx.q.val());
            self.count.write_address.next = bit_cast::<6, 7>(self.clr_idx.q.val());
            self.seen0.write_enable.next = true;
            self.seen1.write_enable.next = true;
            self.count.write_enable.next = true;
            self.clr_idx.d.next = self.clr_idx.q.val() + 1;
            if self.clr_idx.q.val() + 1 == self.slots.val() {
                self.clr.d.next = false;
            }
        }
        if self.clear.val() {
            self.clr.d.next = true;
            self.clr_idx.d.next = 0.into();
        }
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::step::settle;

    fn tick(b: &mut Scoreboard) {
        b.clock.next = true.into();
        settle(b);
        b.clock.next = false.into();
        settle(b);
    }

    /// Looks up (slot, set, rank); commits when new. Returns (new, first, last, complete).
    fn contribute(b: &mut Scoreboard, slot: u64, set: bool, rank: u64) -> (bool, bool, bool, bool) {
        b.slot.next = slot.into();
        b.set.next = set;
        b.rank.next = rank.into();
        b.active.next = false;
        b.commit.next = false;
        settle(b);
        tick(b);
        b.active.next = true;
        settle(b);
        tick(b);
        b.active.next = false;
        settle(b);
        let r = (b.is_new.val(), b.first.val(), b.last.val(), b.complete.val());
        b.commit.next = r.0;
        settle(b);
        tick(b);
        b.active.next = false;
        b.commit.next = false;
        settle(b);
        r
    }

    #[test]
    fn rounds_of_two_workers() {
        let mut b = Scoreboard::new(4);
        b.connect_all();
        b.workers.next = 2u64.into();
        settle(&mut b);
        assert_eq!(contribute(&mut b, 1, false, 0), (true, true, false, true));
        // (`first` and `last` describe a new contribution only.)
        assert_eq!(
            contribute(&mut b, 1, false, 0),
            (false, false, true, false),
            "duplicate, incomplete"
        );
        assert_eq!(contribute(&mut b, 1, false, 1), (true, false, true, false));
        assert_eq!(
            contribute(&mut b, 1, false, 1),
            (false, true, false, true),
            "duplicate, complete"
        );
        // The other set clears the worker's bit in this one.
        assert_eq!(contribute(&mut b, 1, true, 0), (true, true, false, true));
        assert_eq!(contribute(&mut b, 1, false, 0), (true, true, false, true));
        // Other slots are untouched.
        assert_eq!(contribute(&mut b, 2, false, 1), (true, true, false, true));
    }
}
