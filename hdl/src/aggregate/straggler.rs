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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::step::settle;
    use std::collections::VecDeque;

    /// The contract (docs/switch.md §7) in plain Rust: the first contribution's time per
    /// `2·slot + set`, the rank words per `4·rank + j`.
    #[derive(Clone)]
    struct Model {
        first: [u32; 128],
        words: [u32; 128],
        /// Additions to a rounds count or a total that wrapped.
        wraps: usize,
    }

    impl Model {
        /// A new contribution of `rank` to `pair` (`2·slot + set`) committed at time `t`.
        fn contribute(&mut self, t: u32, rank: usize, pair: usize, first: bool, last: bool) {
            if first {
                self.first[pair] = t;
            }
            if last && !first {
                let lag = t.wrapping_sub(self.first[pair]);
                let w = &mut self.words[WORDS_PER_RANK * rank..];
                self.wraps += usize::from(w[0].checked_add(1).is_none()) + usize::from(w[1].checked_add(lag).is_none());
                w[0] = w[0].wrapping_add(1);
                w[1] = w[1].wrapping_add(lag);
                w[2] = w[2].max(lag);
            }
        }
    }

    /// An open round: its `2·slot + set`, its members in the order they contribute, how many
    /// have.
    struct Round {
        pair: usize,
        members: Vec<usize>,
        done: usize,
    }

    /// One cycle as the model sees it: `reading` (the RAM's read port is the update's or the
    /// clear's, so no scan read), the scan's word, the rank words before the cycle's edge.
    struct Cycle {
        reading: bool,
        scan: usize,
        words: [u32; 128],
    }

    /// Runs `cycles` cycles of rounds from the block's state `m` (at time `t0`, with `open`
    /// rounds already begun), then a quiet stretch in which the scan shows every word. Commits
    /// come at most one every 6 cycles and never while `busy` (the aggregator's k + 6): a new
    /// contribution to an open round (the first when none has, the last when all members
    /// have), a new round of 1 to 8 ranks on a free slot and set, or a duplicate (`is_new` low)
    /// with random flags; the event inputs are random when `commit` is low. `clear` comes one
    /// cycle in `clear_one_in` (0: never) when not busy and not with a commit.
    ///
    /// Each cycle: `busy` is high in the five cycles after a last contribution's commit and the
    /// 128 after a clear; `read.valid` is high two cycles after each cycle that is neither a
    /// last one's commit nor busy, and then `read.index` is the scan's word (one further after
    /// each such cycle, from 0) and `read.data` that word in the model as it was in that cycle.
    /// Returns how many last contributions updated the counters, and the model.
    fn run(
        b: &mut Stragglers,
        rng: &mut Rng,
        t0: u32,
        mut m: Model,
        mut open: Vec<Round>,
        cycles: u64,
        clear_one_in: u64,
    ) -> (usize, Model) {
        let mut history: VecDeque<Cycle> = VecDeque::new();
        let mut scan = 0usize;
        // Busy cycles: `busy_from..=busy_to`; the next cycle a commit may come in.
        let (mut busy_from, mut busy_to, mut next_commit) = (1u64, 0u64, 0u64);
        let (mut updates, mut clears, mut checked) = (0, 0, [0u32; 128]);
        let quiet = cycles + 200;
        for c in 0..quiet {
            let t = t0.wrapping_add(c as u32);
            let busy = (busy_from..=busy_to).contains(&c);
            let free = c < cycles && !busy && c >= next_commit;
            // Noise: the event inputs random, commit low.
            b.events.commit.next = false;
            b.events.is_new.next = rng.one_in(2);
            b.events.first.next = rng.one_in(2);
            b.events.last.next = rng.one_in(2);
            b.events.rank.next = rng.below(32).into();
            b.events.slot.next = rng.below(64).into();
            b.events.set.next = rng.one_in(2);
            b.clear.next = false;
            let mut start = false;
            let mut contribution = None;
            let (mut commit, mut clear) = (false, false);
            if free && rng.one_in(3) {
                let choice = rng.below(8);
                if choice == 0 {
                    // A duplicate: the flags random, ignored.
                    commit = true;
                    b.events.commit.next = true;
                    b.events.is_new.next = false;
                } else if choice < 3 && open.len() < 8 {
                    // A new round on a free slot and set.
                    let pair = loop {
                        let p = rng.below(128) as usize;
                        if open.iter().all(|r| r.pair != p) {
                            break p;
                        }
                    };
                    let mut members: Vec<usize> = (0..32).collect();
                    for i in 0..31 {
                        members.swap(i, i + rng.below(32 - i as u64) as usize);
                    }
                    members.truncate(1 + rng.below(8) as usize);
                    open.push(Round { pair, members, done: 0 });
                    contribution = Some(open.len() - 1);
                } else if !open.is_empty() {
                    contribution = Some(rng.below(open.len() as u64) as usize);
                }
                if let Some(i) = contribution {
                    let r = &mut open[i];
                    let (rank, first, last) = (r.members[r.done], r.done == 0, r.done + 1 == r.members.len());
                    r.done += 1;
                    let pair = r.pair;
                    if last {
                        open.swap_remove(i);
                    }
                    commit = true;
                    b.events.commit.next = true;
                    b.events.is_new.next = true;
                    b.events.first.next = first;
                    b.events.last.next = last;
                    b.events.rank.next = (rank as u64).into();
                    b.events.slot.next = (pair as u64 >> 1).into();
                    b.events.set.next = pair & 1 == 1;
                    m.contribute(t, rank, pair, first, last);
                    if last && !first {
                        start = true;
                        updates += 1;
                        (busy_from, busy_to) = (c + 1, c + 5);
                    }
                }
                if commit {
                    next_commit = c + 6;
                }
            } else if free && clear_one_in > 0 && rng.one_in(clear_one_in) {
                clear = true;
                b.clear.next = true;
                (busy_from, busy_to) = (c + 1, c + 128);
                next_commit = c + 129;
                clears += 1;
            }
            settle(&mut *b);
            assert_eq!(b.busy.val(), busy, "cycle {c}: busy");
            // The scan word read two cycles ago, if any.
            if c >= 2 {
                let h = history.pop_front().unwrap();
                assert_eq!(b.read.valid.val(), !h.reading, "cycle {c}: read.valid");
                if !h.reading {
                    let i = b.read.index.val().index();
                    assert_eq!(i, h.scan, "cycle {c}: read.index");
                    let (rank, j) = (i / WORDS_PER_RANK, i % WORDS_PER_RANK);
                    assert_eq!(
                        b.read.data.val().index() as u32,
                        h.words[i],
                        "cycle {c}: word {i} (rank {rank}, j {j}) read in cycle {}",
                        c - 2
                    );
                    if c >= cycles + 2 {
                        checked[i] += 1;
                    }
                }
            } else {
                assert!(!b.read.valid.val(), "cycle {c}: read.valid before any scan read");
            }
            let reading = start || busy;
            history.push_back(Cycle { reading, scan, words: m.words });
            if !reading {
                scan = (scan + 1) % 128;
            }
            if clear {
                m.words = [0; 128];
            }
            tick!(&mut *b);
        }
        assert!(checked.iter().all(|&n| n > 0), "words not scanned at the end: {checked:?}");
        assert!(clear_one_in == 0 || clears > 1, "{clears} clears");
        (updates, m)
    }

    /// From power-up (every word zero, time 0): 10000 cycles of rounds of 1 to 8 ranks on random
    /// slots and sets, up to 8 open at once, duplicates, a clear every 1000 cycles or so:
    /// `busy`, the scan's timing and order and every word it shows (each cycle, and all 128 at
    /// the end) are the contract's.
    #[test]
    fn counters_follow_the_model_of_the_contract() {
        let mut rng = Rng(0x5a5a_1234_9876_0001);
        let mut b = Stragglers::new(true);
        b.connect_all();
        let m = Model { first: [0; 128], words: [0; 128], wraps: 0 };
        let (updates, _) = run(&mut b, &mut rng, 0, m, vec![], 10_000, 200);
        assert!(updates > 150, "{updates} updates");
    }

    /// Large lags and wrapping: the time counter starts (through its register) 1000 cycles
    /// before it wraps, the RAM (through its initial contents) holds random first times for
    /// every slot and set and random rank words, the rounds counts a few below 2^32, and 16
    /// rounds are open with their first contribution at those times: lags of any 32 bits,
    /// totals and rounds that wrap, maxima compared unsigned, as the contract says.
    #[test]
    fn counters_wrap_at_32_bits() {
        let mut rng = Rng(0x0bad_cafe_0000_7777);
        let t0 = u32::MAX - 1000;
        let m = Model {
            first: std::array::from_fn(|_| rng.next() as u32),
            words: std::array::from_fn(|i| {
                if i % WORDS_PER_RANK == 0 {
                    u32::MAX - rng.below(3) as u32
                } else {
                    rng.next() as u32
                }
            }),
            wraps: 0,
        };
        let mut init: Vec<u64> = m.words.iter().map(|&w| u64::from(w)).collect();
        init.extend(m.first.iter().map(|&w| u64::from(w)));
        let mut b = Stragglers::new(true);
        b.mem = BlockRam::new(256).without_collision_check().with_contents(0, &init);
        b.connect_all();
        b.now.q.next = u64::from(t0).into();
        let mut open = vec![];
        while open.len() < 16 {
            let pair = rng.below(128) as usize;
            if open.iter().any(|r: &Round| r.pair == pair) {
                continue;
            }
            let members: Vec<usize> = (0..2 + rng.below(3)).map(|_| rng.below(32) as usize).collect();
            if (1..members.len()).any(|i| members[..i].contains(&members[i])) {
                continue;
            }
            open.push(Round { pair, members, done: 1 });
        }
        let (updates, m) = run(&mut b, &mut rng, t0, m, open, 3000, 0);
        assert!(updates > 40 && m.wraps > 20, "{updates} updates, {} wrapping", m.wraps);
    }
}
