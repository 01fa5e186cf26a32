//! The per-rank straggler counters of docs/switch.md §7, in clock cycles: for each completed
//! round, which rank was last and how far behind the round's first contribution it arrived.
//!
//! The block watches the scoreboard's commits (`events`: a new contribution of `rank` to
//! (`slot`, `set`), first and/or last of its round). Time is a free-running 32-bit cycle
//! counter; a contribution's time is the cycle of its commit. One block RAM of 256 words (one
//! DP16KD) holds, at `128 + 2·slot + set`, the time of each round's first contribution (written
//! at the first's commit) and, per rank, three words at `4·rank + j`:
//!
//! | j | counter |
//! |---|---|
//! | 0 | `rounds_last`: rounds this rank's contribution completed (n > 1) |
//! | 1 | `behind_cycles_total`: sum over those rounds of (its commit − the first's commit) |
//! | 2 | `behind_cycles_max`: the largest such lag |
//!
//! 32 bits each, wrapping (the maximum does not wrap). In the core a contribution's commit
//! comes a fixed number of cycles after its frame's last beat when the core is idle at that
//! beat and the frames have one length (store and forward, the worker search done before the
//! frame ends at widths 1 and 4), so these lags are the frames' arrival lags in cycles.
//!
//! Timing: the RAM's read data goes into a register (`rd`) before anything uses it, the
//! update's adders and compare and the scan alike (nothing but a register after the block
//! RAM's output). A last contribution's update takes the five cycles after its commit (the
//! first's time and the rank's three words read in the commit cycle and the three after it,
//! each used a cycle after its read data; the writes in the third to fifth, `busy` high); the
//! aggregator commits at most one contribution every k + 6 cycles, so updates never overlap.
//! `read` scans the rank words, one a cycle (`read.index`, `read.data`, `read.valid`, from
//! registers, two cycles after the scan's read; the scan pauses while an update or a clear runs,
//! so that it shows no word read in the cycle it is written, and an update's reads are of other
//! words than its writes: the RAM needs no collision check, [`BlockRam::without_collision_check`];
//! a clear during an update races with it, as it did before). `clear`
//! zeroes the rank words (128 cycles, `busy` high). Built with `enabled` false the RAM has one
//! word and the events are ignored: synthesis removes the block.

use crate::block_ram::BlockRam;
use rust_hdl::prelude::*;

interface_pair! {
    /// The scoreboard's commits as the straggler counters see them, the counters' end.
    pub struct StragglerEvents join "StragglerEventSource";
    /// The scoreboard's commits, the watched end.
    pub struct StragglerEventSource join "StragglerEvents";
    {
        /// The scoreboard update is written this cycle.
        commit: In Bit,
        /// The contribution is new (its rank's bit was not set).
        is_new: In Bit,
        /// It is the round's first contribution.
        first: In Bit,
        /// It completes the round.
        last: In Bit,
        /// Its rank.
        rank: In Bits<5>,
        /// Its slot.
        slot: In Bits<6>,
        /// Its set.
        set: In Bit,
    }
}

interface_pair! {
    /// The straggler counters' read-out, the counters' end: a scan of every word, one a cycle
    /// (outputs only, so that a top that does not read them leaves nothing open).
    pub struct StragglerRead join "StragglerReader";
    /// The straggler counters' read-out, the reader's end.
    pub struct StragglerReader join "StragglerRead";
    {
        /// Index of the word on `data`, `4·rank + j` (j = 0 rounds last, 1 lag total, 2 lag max).
        index: Out Bits<7>,
        /// The word.
        data: Out Bits<32>,
        /// `index` and `data` are a word of the scan (low in the cycles after an update's reads).
        valid: Out Bit,
    }
}

/// Words of the rank RAM read per rank (`4·rank + j`, j < 3).
pub const WORDS_PER_RANK: usize = 4;

/// The straggler counters.
#[derive(LogicBlock)]
pub struct Stragglers {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Zero every rank's counters.
    pub clear: Signal<In, Bit>,
    /// The scoreboard's commits.
    pub events: StragglerEvents,
    /// The counters, read by word.
    pub read: StragglerRead,
    /// An update or a clear is running.
    pub busy: Signal<Out, Bit>,
    enabled: Constant<Bit>,
    mem: BlockRam<8, 32>,
    now: DFF<Bits<32>>,
    t_last: DFF<Bits<32>>,
    rank_q: DFF<Bits<5>>,
    lag: DFF<Bits<32>>,
    s1: DFF<Bit>,
    s2: DFF<Bit>,
    s3: DFF<Bit>,
    s4: DFF<Bit>,
    clr: DFF<Bit>,
    clr_idx: DFF<Bits<7>>,
    scan: DFF<Bits<7>>,
    scan_q: DFF<Bits<7>>,
    scan_ok: DFF<Bit>,
    /// The RAM's read data, registered.
    rd: DFF<Bits<32>>,
    s5: DFF<Bit>,
    scan_q2: DFF<Bits<7>>,
    scan_ok2: DFF<Bit>,
    index: Signal<Local, Bits<8>>,
    reading: Signal<Local, Bit>,
    commit_new: Signal<Local, Bit>,
    start: Signal<Local, Bit>,
    base: Signal<Local, Bits<8>>,
}

impl Stragglers {
    /// The counters, or (`enabled` false) a block that synthesis removes.
    pub fn new(enabled: bool) -> Self {
        let depth = if enabled { 256 } else { 1 };
        Self {
            clock: Default::default(),
            clear: Default::default(),
            events: Default::default(),
            read: Default::default(),
            busy: Default::default(),
            enabled: Constant::new(enabled),
            mem: BlockRam::new(depth).without_collision_check(),
            now: Default::default(),
            t_last: Default::default(),
            rank_q: Default::default(),
            lag: Default::default(),
            s1: Default::default(),
            s2: Default::default(),
            s3: Default::default(),
            s4: Default::default(),
            clr: Default::default(),
            clr_idx: Default::default(),
            scan: Default::default(),
            scan_q: Default::default(),
            scan_ok: Default::default(),
            rd: Default::default(),
            s5: Default::default(),
            scan_q2: Default::default(),
            scan_ok2: Default::default(),
            index: Default::default(),
            reading: Default::default(),
            commit_new: Default::default(),
            start: Default::default(),
            base: Default::default(),
        }
    }
}

impl Logic for Stragglers {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self, clock, now, t_last, rank_q, lag, s1, s2, s3, s4, s5, clr, clr_idx, scan, scan_q, scan_ok, rd,
            scan_q2, scan_ok2
        );
        clock!(self, clock, mem);
        self.now.d.next = self.now.q.val() + 1;
        self.commit_new.next = self.enabled.val() & self.events.commit.val() & self.events.is_new.val();
        self.start.next = self.commit_new.val() & self.events.last.val() & !self.events.first.val();
        // Word 128 + 2·slot + set: the time of the round's first contribution.
        self.index.next = (bit_cast::<8, 6>(self.events.slot.val()) << 1) | 128;
        if self.events.set.val() {
            self.index.next = (bit_cast::<8, 6>(self.events.slot.val()) << 1) | 129;
        }
        self.base.next = bit_cast::<8, 5>(self.rank_q.q.val()) << 2;
        // The scan of the rank words, one a cycle neither the update nor the clear uses the RAM
        // (so no word of the scan is read in the cycle it is written: the RAM has no collision
        // check).
        self.reading.next = self.start.val()
            | self.s1.q.val()
            | self.s2.q.val()
            | self.s3.q.val()
            | self.s4.q.val()
            | self.s5.q.val()
            | self.clr.q.val();
        self.mem.read_address.next = bit_cast::<8, 7>(self.scan.q.val());
        self.scan_q.d.next = self.scan.q.val();
        self.scan_ok.d.next = !self.reading.val();
        if !self.reading.val() {
            self.scan.d.next = self.scan.q.val() + 1;
        }
        // A first contribution's commit writes its time.
        self.mem.write_address.next = self.index.val();
        self.mem.write_data.next = self.now.q.val();
        self.mem.write_enable.next = self.commit_new.val() & self.events.first.val();
        self.s1.d.next = self.start.val();
        self.s2.d.next = self.s1.q.val();
        self.s3.d.next = self.s2.q.val();
        self.s4.d.next = self.s3.q.val();
        self.s5.d.next = self.s4.q.val();
        self.rd.d.next = self.mem.read_data.val();
        // A last one's: read the first's time and the rank's three words, one a cycle; each
        // word's update a cycle after its read data (from `rd`).
        if self.start.val() {
            self.rank_q.d.next = self.events.rank.val();
            self.t_last.d.next = self.now.q.val();
            self.mem.read_address.next = self.index.val();
        }
        if self.s1.q.val() {
            self.mem.read_address.next = self.base.val();
        }
        if self.s2.q.val() {
            self.lag.d.next = self.t_last.q.val() - self.rd.q.val();
            self.mem.read_address.next = self.base.val() | 1;
        }
        if self.s3.q.val() {
            self.mem.write_address.next = self.base.val();
            self.mem.write_data.next = self.rd.q.val() + 1;
            self.mem.write_enable.next = true;
            self.mem.read_address.next = self.base.val() | 2;
        }
        if self.s4.q.val() {
            self.mem.write_address.next = self.base.val() | 1;
            self.mem.write_data.next = self.rd.q.val() + self.lag.q.val();
            self.mem.write_enable.next = true;
        }
        if self.s5.q.val() {
            self.mem.write_address.next = self.base.val() | 2;
            self.mem.write_data.next = self.lag.q.val();
            self.mem.write_enable.next = self.rd.q.val() < self.lag.q.val();
        }
        // Clear: every rank word zeroed, one a cycle.
        if self.clr.q.val() {
            self.mem.write_address.next = bit_cast::<8, 7>(self.clr_idx.q.val());
            self.mem.write_data.next = 0.into();
            self.mem.write_enable.next = true;
            self.clr_idx.d.next = self.clr_idx.q.val() + 1;
            if self.clr_idx.q.val() == 127 {
                self.clr.d.next = false;
            }
        }
        if self.clear.val() & self.enabled.val() {
            self.clr.d.next = true;
            self.clr_idx.d.next = 0.into();
        }
        self.scan_q2.d.next = self.scan_q.q.val();
        self.scan_ok2.d.next = self.scan_ok.q.val();
        self.read.data.next = self.rd.q.val();
        self.read.index.next = self.scan_q2.q.val();
        self.read.valid.next = self.scan_ok2.q.val() & self.enabled.val();
        self.busy.next =
            self.s1.q.val() | self.s2.q.val() | self.s3.q.val() | self.s4.q.val() | self.s5.q.val() | self.clr.q.val();
    }
}
