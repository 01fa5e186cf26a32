//! The scoreboard: per slot and set, the worker bitmap `seen[v][s]` and the round counter
//! `count[v][s]` of docs/switch.md §2.
//!
//! Timing contract: `slot`, `set` and `rank` must be stable for a cycle before `active`
//! (block RAM read) and until the commit. `active` high in cycle t registers the lookup: in
//! cycle t + 1, `is_new`, `first`, `last` and `complete` describe a contribution of `rank` to
//! (`slot`, `set`) from flip-flops, and a `commit` pulse in that cycle writes the registered
//! update (`seen[v].rank = 1`, `seen[1-v].rank = 0`, `count[v] = (count[v] + 1) mod n`), visible
//! to the next lookup (`first` and `last` describe the contribution as if new; they matter only
//! when `is_new`). The next `active` may come two cycles after the commit at the earliest.
//!
//! The RAM write itself is registered (a flip-flop to the LUT RAM write enable, nothing from
//! the ports in between): it lands one rising edge after the commit, the same edge that reads
//! the next lookup when `active` follows two cycles after the commit. That read returns the old
//! word (read-first), so a registered hit (`bypass`: the write just landed at the address read)
//! selects the written words instead. `clear` zeroes every slot, one a cycle, with `clearing` high meanwhile.
//! The three RAMs are LUT RAM at any slot count ([`BlockRam::distributed`]: at 64 slots Yosys
//! would take DP16KDs, whose unregistered output, 5.8 ns after the clock, then fed the rank's
//! 32-to-1 mux: 71.95 MHz on the i9).
//! Guarantees: nothing changes without `commit`; a duplicate is detected from the bitmap alone.
//!
//! Trees (docs/switch.md §6): the count word also holds `waiting[v][s]` (bits 10 and 11), read
//! with the lookup (`waiting`). A new contribution's commit writes `waiting[v]` = `last` and
//! `has_parent`. A lookup with `parent` high (a parent result; stable like `rank`) commits no
//! worker bit and no count, only `waiting[v]` = 0. The clear zeroes the waiting bits too.

use crate::block_ram::BlockRam;
use rust_hdl::prelude::*;

interface_pair! {
    /// A scoreboard lookup and update, the scoreboard's end (timing in the module doc).
    pub struct ScoreboardLookup join "ScoreboardClient";
    /// A scoreboard lookup and update, the aggregator's end.
    pub struct ScoreboardClient join "ScoreboardLookup";
    {
        /// Slot looked up.
        slot: In Bits<6>,
        /// Set looked up.
        set: In Bit,
        /// Rank of the contributing worker.
        rank: In Bits<5>,
        /// The lookup outputs are wanted this cycle.
        active: In Bit,
        /// Write the update of a new contribution.
        commit: In Bit,
        /// The worker's bit is not set yet.
        is_new: Out Bit,
        /// The round's count is 0 (first contribution of a round).
        first: Out Bit,
        /// This new contribution completes the round.
        last: Out Bit,
        /// The round is complete (count 0): a duplicate is answered.
        complete: Out Bit,
        /// A clear pass is running.
        clearing: Out Bit,
        /// The lookup is a parent result's (docs/switch.md §6): its commit clears `waiting[v]` only.
        parent: In Bit,
        /// The round waits for the parent's result (`waiting[v][s]`).
        waiting: Out Bit,
    }
}

/// Worker bitmaps and counters of every slot and set.
#[derive(LogicBlock)]
pub struct Scoreboard {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The lookup and update port.
    pub lookup: ScoreboardLookup,
    /// Number of workers n.
    pub workers: Signal<In, Bits<6>>,
    /// Start clearing every slot.
    pub clear: Signal<In, Bit>,
    /// The job has a parent: a round's last contribution sets `waiting`.
    pub has_parent: Signal<In, Bit>,
    seen0: BlockRam<6, 32>,
    seen1: BlockRam<6, 32>,
    count: BlockRam<6, 12>,
    slots: Constant<Bits<7>>,
    bit_mask: Signal<Local, Bits<32>>,
    seen_v: Signal<Local, Bits<32>>,
    cnt_v: Signal<Local, Bits<5>>,
    cnt_next: Signal<Local, Bits<5>>,
    mask_r: DFF<Bits<32>>,
    whit_r: DFF<Bit>,
    rank_r: DFF<Bits<5>>,
    w_sh: Signal<Local, Bits<32>>,
    r_sh: Signal<Local, Bits<32>>,
    r_new: DFF<Bit>,
    r_first: DFF<Bit>,
    r_last: DFF<Bit>,
    r_complete: DFF<Bit>,
    r_waiting: DFF<Bit>,
    parent_r: DFF<Bit>,
    wait_new: Signal<Local, Bit>,
    w_m1: DFF<Bits<6>>,
    w_seen0: DFF<Bits<32>>,
    w_seen1: DFF<Bits<32>>,
    w_count: DFF<Bits<12>>,
    clr: DFF<Bit>,
    clr_idx: DFF<Bits<7>>,
    w_slot: DFF<Bits<6>>,
    w_pending: DFF<Bit>,
    bypass: DFF<Bit>,
    rd_seen0: Signal<Local, Bits<32>>,
    rd_seen1: Signal<Local, Bits<32>>,
    rd_count: Signal<Local, Bits<12>>,
}

impl Scoreboard {
    /// A scoreboard for `slots` slots.
    pub fn new(slots: usize) -> Self {
        Self {
            clock: Default::default(),
            lookup: Default::default(),
            workers: Default::default(),
            clear: Default::default(),
            has_parent: Default::default(),
            seen0: BlockRam::new(slots).distributed(),
            seen1: BlockRam::new(slots).distributed(),
            count: BlockRam::new(slots).distributed(),
            slots: Constant::new((slots as u64).into()),
            bit_mask: Default::default(),
            seen_v: Default::default(),
            cnt_v: Default::default(),
            cnt_next: Default::default(),
            mask_r: Default::default(),
            whit_r: Default::default(),
            rank_r: Default::default(),
            w_sh: Default::default(),
            r_sh: Default::default(),
            r_new: Default::default(),
            r_first: Default::default(),
            r_last: Default::default(),
            r_complete: Default::default(),
            r_waiting: Default::default(),
            parent_r: Default::default(),
            wait_new: Default::default(),
            w_m1: Default::default(),
            w_seen0: Default::default(),
            w_seen1: Default::default(),
            w_count: Default::default(),
            clr: Default::default(),
            clr_idx: Default::default(),
            w_slot: Default::default(),
            w_pending: Default::default(),
            bypass: Default::default(),
            rd_seen0: Default::default(),
            rd_seen1: Default::default(),
            rd_count: Default::default(),
        }
    }
}

impl Logic for Scoreboard {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, mask_r, whit_r, rank_r, r_new, r_first, r_last, r_complete, r_waiting, parent_r, w_m1,
            w_seen0, w_seen1, w_count, clr, clr_idx, w_slot, w_pending, bypass
        );
        clock!(self, clock, seen0, seen1, count);
        self.seen0.read_address.next = self.lookup.slot.val();
        self.seen1.read_address.next = self.lookup.slot.val();
        self.count.read_address.next = self.lookup.slot.val();
        // The write, one edge after the commit, from flip-flops only.
        self.w_pending.d.next = self.lookup.commit.val();
        self.seen0.write_address.next = self.w_slot.q.val();
        self.seen1.write_address.next = self.w_slot.q.val();
        self.count.write_address.next = self.w_slot.q.val();
        self.seen0.write_data.next = self.w_seen0.q.val();
        self.seen1.write_data.next = self.w_seen1.q.val();
        self.count.write_data.next = self.w_count.q.val();
        self.seen0.write_enable.next = self.w_pending.q.val();
        self.seen1.write_enable.next = self.w_pending.q.val();
        self.count.write_enable.next = self.w_pending.q.val();
        // Read-after-write: the read at the edge where the write lands returns the old word.
        self.bypass.d.next =
            self.w_pending.q.val() & !self.clr.q.val() & (self.w_slot.q.val() == self.lookup.slot.val());
        self.rd_seen0.next = self.seen0.read_data.val();
        self.rd_seen1.next = self.seen1.read_data.val();
        self.rd_count.next = self.count.read_data.val();
        if self.bypass.q.val() {
            self.rd_seen0.next = self.w_seen0.q.val();
            self.rd_seen1.next = self.w_seen1.q.val();
            self.rd_count.next = self.w_count.q.val();
        }
        self.lookup.clearing.next = self.clr.q.val();
        self.w_m1.d.next = self.workers.val() - 1;
        self.bit_mask.next = 0.into();
        self.seen_v.next = 0.into();
        self.cnt_v.next = 0.into();
        self.cnt_next.next = 0.into();
        self.lookup.is_new.next = self.r_new.q.val();
        self.lookup.first.next = self.r_first.q.val();
        self.lookup.last.next = self.r_last.q.val();
        self.lookup.complete.next = self.r_complete.q.val();
        // (Gated by `has_parent`, a constant 0 in a core built without the tree leaf, so that
        // synthesis removes the tree logic the aggregator and the result builder hang on it.)
        self.lookup.waiting.next = self.r_waiting.q.val() & self.has_parent.val();
        self.wait_new.next = false;
        // The rank's bit, and whether it is set in the pending write's bitmap of the set looked
        // up, registered every cycle (`rank` and `set` are stable a cycle before `active`, and
        // the write registers change only under `active`, never in two consecutive cycles).
        self.mask_r.d.next = bits::<32>(1) << bit_cast::<32, 5>(self.lookup.rank.val());
        if self.lookup.parent.val() {
            self.mask_r.d.next = 0.into();
        }
        self.parent_r.d.next = self.lookup.parent.val();
        self.rank_r.d.next = self.lookup.rank.val();
        if self.lookup.set.val() {
            self.w_sh.next = self.w_seen1.q.val() >> bit_cast::<32, 5>(self.lookup.rank.val());
        } else {
            self.w_sh.next = self.w_seen0.q.val() >> bit_cast::<32, 5>(self.lookup.rank.val());
        }
        self.whit_r.d.next = self.w_sh.val().get_bit(0);
        // The rank's bit of the word read: a 32-to-1 mux on the registered rank.
        if self.lookup.set.val() {
            self.r_sh.next = self.seen1.read_data.val() >> bit_cast::<32, 5>(self.rank_r.q.val());
        } else {
            self.r_sh.next = self.seen0.read_data.val() >> bit_cast::<32, 5>(self.rank_r.q.val());
        }
        if self.lookup.active.val() {
            self.w_slot.d.next = self.lookup.slot.val();
            self.bit_mask.next = self.mask_r.q.val();
            if self.lookup.set.val() {
                self.seen_v.next = self.rd_seen1.val();
                self.cnt_v.next = bit_cast::<5, 12>(self.rd_count.val() >> 5);
                self.r_waiting.d.next = self.rd_count.val().get_bit(11);
            } else {
                self.seen_v.next = self.rd_seen0.val();
                self.cnt_v.next = bit_cast::<5, 12>(self.rd_count.val());
                self.r_waiting.d.next = self.rd_count.val().get_bit(10);
            }
            // The count's wrap against n - 1 registered (no adder before the compare; with n = 0,
            // n - 1 = 63 is never reached, as count + 1 = 0 was not).
            if bit_cast::<6, 5>(self.cnt_v.val()) == self.w_m1.q.val() {
                self.cnt_next.next = 0.into();
            } else {
                self.cnt_next.next = self.cnt_v.val() + 1;
            }
            if self.parent_r.q.val() {
                self.cnt_next.next = self.cnt_v.val();
            }
            // waiting[v] after a new contribution: set by the last one of a round (with a parent).
            self.wait_new.next = self.has_parent.val()
                & ((bit_cast::<6, 5>(self.cnt_v.val()) == self.w_m1.q.val()) | (self.cnt_v.val() == 31))
                & !self.parent_r.q.val();
            self.r_new.d.next = !self.r_sh.val().get_bit(0);
            if self.bypass.q.val() {
                self.r_new.d.next = !self.whit_r.q.val();
            }
            self.r_first.d.next = self.cnt_v.val() == 0;
            // cnt_next == 0 without the adder: the wrap, or count + 1 overflowing 5 bits.
            self.r_last.d.next = (bit_cast::<6, 5>(self.cnt_v.val()) == self.w_m1.q.val()) | (self.cnt_v.val() == 31);
            self.r_complete.d.next = self.cnt_v.val() == 0;
            if self.lookup.set.val() {
                self.w_seen0.d.next = self.rd_seen0.val() & !self.bit_mask.val();
                self.w_seen1.d.next = self.rd_seen1.val() | self.bit_mask.val();
                self.w_count.d.next = (bit_cast::<12, 1>(self.wait_new.val().into()) << 11)
                    | (self.rd_count.val() & 0x41f)
                    | (bit_cast::<12, 5>(self.cnt_next.val()) << 5);
            } else {
                self.w_seen0.d.next = self.rd_seen0.val() | self.bit_mask.val();
                self.w_seen1.d.next = self.rd_seen1.val() & !self.bit_mask.val();
                self.w_count.d.next = (bit_cast::<12, 1>(self.wait_new.val().into()) << 10)
                    | (self.rd_count.val() & 0xbe0)
                    | bit_cast::<12, 5>(self.cnt_next.val());
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

    /// Looks up (slot, set, rank) right after the previous commit (the earliest `active` the
    /// contract allows: the read at the edge where the registered write lands is bypassed);
    /// commits when new. Returns (new, first, last, complete).
    fn contribute(b: &mut Scoreboard, slot: u64, set: bool, rank: u64) -> (bool, bool, bool, bool) {
        contribute_after(b, 0, slot, set, rank)
    }

    /// As `contribute`, `gap` idle cycles after the previous commit.
    fn contribute_after(b: &mut Scoreboard, gap: usize, slot: u64, set: bool, rank: u64) -> (bool, bool, bool, bool) {
        b.lookup.active.next = false;
        b.lookup.commit.next = false;
        for _ in 0..gap {
            settle(b);
            tick(b);
        }
        b.lookup.slot.next = slot.into();
        b.lookup.set.next = set;
        b.lookup.rank.next = rank.into();
        b.lookup.active.next = false;
        b.lookup.commit.next = false;
        settle(b);
        tick(b);
        b.lookup.active.next = true;
        settle(b);
        tick(b);
        b.lookup.active.next = false;
        settle(b);
        let r = (b.lookup.is_new.val(), b.lookup.first.val(), b.lookup.last.val(), b.lookup.complete.val());
        b.lookup.commit.next = r.0;
        settle(b);
        tick(b);
        b.lookup.active.next = false;
        b.lookup.commit.next = false;
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
        assert_eq!(contribute(&mut b, 1, false, 0), (false, false, true, false), "duplicate, incomplete");
        assert_eq!(contribute(&mut b, 1, false, 1), (true, false, true, false));
        assert_eq!(contribute(&mut b, 1, false, 1), (false, true, false, true), "duplicate, complete");
        // The other set clears the worker's bit in this one.
        assert_eq!(contribute(&mut b, 1, true, 0), (true, true, false, true));
        assert_eq!(contribute(&mut b, 1, false, 0), (true, true, false, true));
        // Other slots are untouched.
        assert_eq!(contribute(&mut b, 2, false, 1), (true, true, false, true));
    }

    /// Read-after-write around the registered write: the next lookup of the same slot and set
    /// sees the commit whatever the gap (the aggregator leaves at least Idle and Lookup between
    /// a Commit and the next Decide), and a lookup of another slot in the landing cycle neither
    /// sees nor disturbs it.
    #[test]
    fn lookup_after_commit_sees_it() {
        for gap in 0..4 {
            let mut b = Scoreboard::new(8);
            b.connect_all();
            b.workers.next = 3u64.into();
            settle(&mut b);
            assert_eq!(contribute_after(&mut b, gap, 5, false, 2), (true, true, false, true), "gap {gap}");
            assert!(!contribute_after(&mut b, gap, 5, false, 2).0, "duplicate seen, gap {gap}");
            assert_eq!(contribute_after(&mut b, gap, 5, false, 1), (true, false, false, false), "gap {gap}");
            // Another slot in the landing cycle: untouched, and slot 5's write still lands.
            assert_eq!(contribute_after(&mut b, gap, 6, false, 1), (true, true, false, true), "gap {gap}");
            assert!(!contribute_after(&mut b, gap, 5, false, 1).0, "gap {gap}");
            assert_eq!(contribute_after(&mut b, gap, 5, false, 0), (true, false, true, false), "gap {gap}");
            assert_eq!(contribute_after(&mut b, gap, 5, false, 0), (false, true, false, true), "gap {gap}");
            // The other set, then back: the bit moved.
            assert_eq!(contribute_after(&mut b, gap, 5, true, 0), (true, true, false, true), "gap {gap}");
            assert!(contribute_after(&mut b, gap, 5, false, 0).0, "gap {gap}");
        }
    }
}
