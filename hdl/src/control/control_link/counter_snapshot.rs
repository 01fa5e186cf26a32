//! The control link's counter snapshot: the core's input held, then every counter and the
//! straggler scan copied into the link's shadow RAM (docs/control.md, "Counter snapshot").
//!
//! Inputs: `start` (one cycle, while no snapshot is under way), `core_idle`, the counter port's
//! `data` (the counter `counter.address` named a cycle earlier: the owner registers it) and the
//! straggler scan. Outputs: `pause`, the counter port's `address`, the shadow RAM's write port
//! (`shadow`), `done`, `late` and `idle_sampled` (`core_idle` a cycle late, for the status
//! register).
//!
//! Contract: `start` raises `pause` from the next cycle. The copy waits until `core_idle` is
//! high, using samples from `pause`'s fourth cycle on (so a core may start a frame up to the
//! third cycle of `pause`, or up to the second when its owner passes `idle` through a register
//! of its own), or until 2^16 cycles have passed, in which case `late` says so until the next
//! snapshot. Then counter i (i = 0..C) is read, one a cycle, at `counter.address`, and written
//! to shadow word i two cycles after its address. In a block built with straggler counters,
//! the next 128 words the straggler scan presents (`straggler.valid`) are then written to
//! shadow words 0x80 + index. `done` pulses in the cycle the last shadow word is written, and
//! `pause` drops in the next. Nothing is written to the shadow outside a snapshot.
//!
//! Timing: every output comes from registers (`done` from the state and registered flags).

use crate::counters::CounterPortDriver;
use crate::straggler::StragglerReader;
use rust_hdl::prelude::*;

interface_pair! {
    /// A write port of the link's shadow RAM, the writer's end.
    pub struct ShadowWriter join "ShadowWrite";
    /// A write port of the link's shadow RAM, the RAM's end.
    pub struct ShadowWrite join "ShadowWriter";
    {
        /// Write `data` at `address`.
        write: Out Bit,
        /// Shadow word.
        address: Out Bits<8>,
        /// Its value.
        data: Out Bits<32>,
    }
}

/// Where the snapshot is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
enum SnapshotState {
    /// No snapshot under way.
    Idle,
    /// The core's input held until nothing is in flight.
    Wait,
    /// The counters copied.
    Copy,
    /// The straggler scan copied (a link built with straggler counters).
    Stragglers,
}

/// The counter snapshot.
#[derive(LogicBlock)]
pub struct CounterSnapshot {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Take a snapshot (one cycle, while none is under way).
    pub start: Signal<In, Bit>,
    /// The core has nothing in flight (directly or through one register of the owner's).
    pub core_idle: Signal<In, Bit>,
    /// `core_idle` through this block's register.
    pub idle_sampled: Signal<Out, Bit>,
    /// Hold the core's input at the next frame boundary.
    pub pause: Signal<Out, Bit>,
    /// The counters (`data`: the counter `address` named a cycle earlier).
    pub counter: CounterPortDriver<6>,
    /// The core's straggler scan.
    pub straggler: StragglerReader,
    /// The shadow RAM's write port.
    pub shadow: ShadowWriter,
    /// The last shadow word is written in this cycle: the snapshot is complete.
    pub done: Signal<Out, Bit>,
    /// The last snapshot was taken without the core becoming idle.
    pub late: Signal<Out, Bit>,
    state: DFF<SnapshotState>,
    pausing: DFF<Bit>,
    core_idle_q: DFF<Bit>,
    wait_cycles: DFF<Bits<17>>,
    idle_counts: DFF<Bit>,
    not_quiescent: DFF<Bit>,
    counter_index: DFF<Bits<8>>,
    index_is_counter: DFF<Bit>,
    copy_complete: DFF<Bit>,
    counter_value: DFF<Bits<32>>,
    copy_index_1: DFF<Bits<6>>,
    copy_index_2: DFF<Bits<6>>,
    copy_valid: DFF<Bits<2>>,
    scan_write: DFF<Bit>,
    scan_index: DFF<Bits<7>>,
    scan_data: DFF<Bits<32>>,
    scan_words: DFF<Bits<8>>,
    counter_last: Constant<Bits<8>>,
    counter_n: Constant<Bits<8>>,
    has_stragglers: Constant<Bit>,
}

impl CounterSnapshot {
    /// A snapshot of `counters` counters (1..=64), and of the straggler scan when `stragglers`.
    pub fn new(counters: usize, stragglers: bool) -> Self {
        assert!((1..=64).contains(&counters), "{counters} counters: 1..=64");
        Self {
            clock: Default::default(),
            start: Default::default(),
            core_idle: Default::default(),
            idle_sampled: Default::default(),
            pause: Default::default(),
            counter: Default::default(),
            straggler: Default::default(),
            shadow: Default::default(),
            done: Default::default(),
            late: Default::default(),
            state: Default::default(),
            pausing: Default::default(),
            core_idle_q: Default::default(),
            wait_cycles: Default::default(),
            idle_counts: Default::default(),
            not_quiescent: Default::default(),
            counter_index: Default::default(),
            index_is_counter: Default::default(),
            copy_complete: Default::default(),
            counter_value: Default::default(),
            copy_index_1: Default::default(),
            copy_index_2: Default::default(),
            copy_valid: Default::default(),
            scan_write: Default::default(),
            scan_index: Default::default(),
            scan_data: Default::default(),
            scan_words: Default::default(),
            counter_last: Constant::new(((counters - 1) as u64).into()),
            counter_n: Constant::new((counters as u64).into()),
            has_stragglers: Constant::new(stragglers),
        }
    }
}

impl Logic for CounterSnapshot {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            pausing,
            core_idle_q,
            wait_cycles,
            idle_counts,
            not_quiescent,
            counter_index,
            index_is_counter,
            copy_complete,
            counter_value,
            copy_index_1,
            copy_index_2,
            copy_valid,
            scan_write,
            scan_index,
            scan_data,
            scan_words
        );
        self.pause.next = self.pausing.q.val();
        self.late.next = self.not_quiescent.q.val();
        self.core_idle_q.d.next = self.core_idle.val();
        self.idle_sampled.next = self.core_idle_q.q.val();
        // The copy pipeline: counter.address (counter_index, a register) → the owner's register
        // → counter_value → the shadow RAM, two cycles after the address.
        self.counter.address.next = bit_cast::<6, 8>(self.counter_index.q.val());
        self.counter_value.d.next = self.counter.data.val();
        self.copy_index_1.d.next = bit_cast::<6, 8>(self.counter_index.q.val());
        self.copy_index_2.d.next = self.copy_index_1.q.val();
        self.copy_valid.d.next = self.copy_valid.q.val() << 1;
        // The straggler scan, registered on its way into the shadow.
        self.scan_write.d.next = false;
        self.scan_index.d.next = self.straggler.index.val();
        self.scan_data.d.next = self.straggler.data.val();
        self.shadow.address.next = bit_cast::<8, 6>(self.copy_index_2.q.val());
        self.shadow.data.next = self.counter_value.q.val();
        self.shadow.write.next = self.copy_valid.q.val().get_bit(1);
        if self.scan_write.q.val() {
            // STRAGGLER_BASE
            self.shadow.address.next = bit_cast::<8, 7>(self.scan_index.q.val()) | 0x80;
            self.shadow.data.next = self.scan_data.q.val();
            self.shadow.write.next = true;
        }
        // Flags for the states below, each from registers a cycle ahead: the wait has lasted
        // four cycles; the index is a counter's; the index is two past the last counter's.
        self.idle_counts.d.next = (self.state.q.val() == SnapshotState::Wait) && (self.wait_cycles.q.val() >= 3);
        self.index_is_counter.d.next = true;
        self.copy_complete.d.next = false;
        if self.state.q.val() == SnapshotState::Copy {
            self.index_is_counter.d.next = self.counter_index.q.val() < self.counter_last.val();
            self.copy_complete.d.next = self.counter_index.q.val() == self.counter_n.val();
        }

        self.done.next = false;
        match self.state.q.val() {
            SnapshotState::Idle => {
                if self.start.val() {
                    self.counter_index.d.next = 0.into();
                    self.wait_cycles.d.next = 0.into();
                    self.pausing.d.next = true;
                    self.state.d.next = SnapshotState::Wait;
                }
            }
            SnapshotState::Wait => {
                self.wait_cycles.d.next = self.wait_cycles.q.val() + 1;
                if self.idle_counts.q.val() && (self.core_idle_q.q.val() || self.wait_cycles.q.val().get_bit(16)) {
                    self.not_quiescent.d.next = !self.core_idle_q.q.val();
                    self.state.d.next = SnapshotState::Copy;
                }
            }
            SnapshotState::Copy => {
                // Counter counter_index is addressed; its copy is written two cycles later, so
                // the state ends two cycles after the last address.
                self.counter_index.d.next = self.counter_index.q.val() + 1;
                if self.index_is_counter.q.val() {
                    self.copy_valid.d.next = (self.copy_valid.q.val() << 1) | 1;
                }
                if self.copy_complete.q.val() {
                    self.scan_words.d.next = 0.into();
                    if self.has_stragglers.val() {
                        self.state.d.next = SnapshotState::Stragglers;
                    } else {
                        self.done.next = true;
                        self.pausing.d.next = false;
                        self.state.d.next = SnapshotState::Idle;
                    }
                }
            }
            SnapshotState::Stragglers => {
                // Each scan word into the shadow until 128 (bit 7 of scan_words) are written;
                // the last lands in the cycle the state ends.
                if self.straggler.valid.val() & !self.scan_words.q.val().get_bit(7) {
                    self.scan_write.d.next = true;
                    self.scan_words.d.next = self.scan_words.q.val() + 1;
                }
                if self.scan_words.q.val().get_bit(7) {
                    self.done.next = true;
                    self.pausing.d.next = false;
                    self.state.d.next = SnapshotState::Idle;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;

    /// A value that depends on `index` and on the frames a fake core has processed.
    fn value(index: u64, frames: u64) -> u32 {
        let x = (index << 40 ^ frames).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        (x >> 32) as u32
    }

    /// A fake core and its owner: frames start at random unless the core's input is held (it
    /// sees `pause` three cycles late, the most the contract allows: a frame may still start in
    /// the third cycle of `pause`); each takes a few cycles (a test makes one take more than
    /// 2^16); counter i reads `value(i, frames)`, the
    /// straggler scan word j `value(0x100 + j, frames)`, one a cycle but one in seven.
    struct Core {
        rng: Rng,
        in_flight: u64,
        frames: u64,
        /// `pause` of the two cycles before.
        pause_seen: [bool; 2],
        idle_q: bool,
        scan: u64,
    }

    impl Core {
        fn idle(&self) -> bool {
            self.in_flight == 0
        }

        /// The core's next cycle, after one with `pause`.
        fn step(&mut self, pause: bool) {
            if self.in_flight > 0 {
                self.in_flight -= 1;
                self.frames += u64::from(self.in_flight == 0);
            }
            if !self.pause_seen[0] && self.rng.one_in(3) {
                self.in_flight += 1 + self.rng.below(12);
            }
            self.pause_seen = [self.pause_seen[1], pause];
        }
    }

    /// Snapshots of a core that keeps processing frames until its input is held, with and
    /// without the owner's register on `core_idle`, with and without the straggler scan, some
    /// of a core that does not become idle in time: the shadow holds every counter and scan
    /// word as they were with the core held and idle (or, late, held), `pause` is up from the
    /// cycle after `start` to the cycle of `done`, which comes with the last shadow write;
    /// `late` says whether the core was idle.
    #[test]
    fn copies_a_quiescent_core_as_the_model() {
        for (counters, stragglers, owner_register) in [(24usize, false, false), (46, true, true)] {
            let mut b = CounterSnapshot::new(counters, stragglers);
            b.connect_all();
            let mut rng = Rng(0x5a_9507 + counters as u64);
            let mut core =
                Core { rng: Rng(rng.next()), in_flight: 0, frames: 0, pause_seen: [false; 2], idle_q: true, scan: 0 };
            let mut shadow = [None::<u32>; 256];
            let mut idle_before = false;
            let mut lates = 0;
            for case in 0..120 {
                let late = case % 50 == 49;
                let quiet_cycles = rng.below(40);
                let mut start = None;
                let mut done_at = None;
                let mut cycle = 0u64;
                let mut last_write = 0;
                loop {
                    b.start.next = cycle == quiet_cycles;
                    if cycle == quiet_cycles {
                        start = Some(cycle);
                        if late {
                            core.in_flight += 70_000;
                        }
                    }
                    b.core_idle.next = if owner_register { core.idle_q } else { core.idle() };
                    let valid = !rng.one_in(7);
                    b.straggler.valid.next = valid;
                    b.straggler.index.next = core.scan.into();
                    b.straggler.data.next = u64::from(value(0x100 + core.scan, core.frames)).into();
                    crate::step::settle(&mut b);
                    let in_snapshot = start.is_some_and(|s| cycle > s) && done_at.is_none();
                    assert_eq!(b.pause.val(), in_snapshot, "case {case}: cycle {cycle}");
                    assert_eq!(b.idle_sampled.val(), idle_before, "case {case}: cycle {cycle}");
                    idle_before = b.core_idle.val();
                    if b.shadow.write.val() {
                        let a = b.shadow.address.val().index();
                        assert!(in_snapshot && (a < counters || (stragglers && a >= 0x80)), "case {case}: word {a:#x}");
                        shadow[a] = Some(b.shadow.data.val().index() as u32);
                        last_write = cycle;
                    }
                    if b.done.val() {
                        assert_eq!(done_at, None, "case {case}: done once");
                        done_at = Some(cycle);
                    }
                    let counter_address = b.counter.address.val().index() as u64;
                    let pause = b.pause.val();
                    tick!(&mut b);
                    // The owner's register on the counter port and on idle, then the core's cycle.
                    b.counter.data.next = u64::from(value(counter_address, core.frames)).into();
                    core.idle_q = core.idle();
                    core.step(pause);
                    if valid {
                        core.scan = (core.scan + 1) % 128;
                    }
                    cycle += 1;
                    if done_at.is_some() && !b.pause.val() {
                        break;
                    }
                    assert!(cycle < 80_000, "case {case}: no end");
                }
                assert_eq!(done_at, Some(last_write), "case {case}: done with the last write");
                assert_eq!(b.late.val(), late, "case {case}");
                lates += usize::from(b.late.val());
                // The frames are those of the held core: the snapshot's values are today's.
                let want = |i: u64| Some(value(i, core.frames));
                for (i, &word) in shadow.iter().enumerate().take(counters) {
                    assert_eq!(word, want(i as u64), "case {case}: counter {i}");
                }
                let scan = if stragglers { &shadow[0x80..] } else { &[] };
                for (j, &word) in scan.iter().enumerate() {
                    assert_eq!(word, want(0x100 + j as u64), "case {case}: scan word {j}");
                }
                shadow = [None; 256];
            }
            assert_eq!(lates, 2);
        }
    }
}
