//! The worker search: finds the rank of a frame's source IPv4 address in the worker table
//! (a block RAM of the n workers' addresses, written by the configuration), one entry a cycle.
//!
//! Contract: a `start` pulse (the parser's word 7 taken: the source address is complete and
//! stays on `source` until the frame is decided) begins a search of entries 0..n; `done`
//! rises at most n + 3 cycles after it (an entry is read, compared into a register, then acted
//! on), with `found` and `rank` the first entry equal to `source`, or `found` low. `done` and
//! `found` stay until the next `start`; `stop` ends a search early (the frame was decided
//! without needing its rank). n is 1..=32 (config_registers); with n = 0, before a job is
//! configured, entry 0 is still read and compared (then `done`). Table writes (`write_*`) may come at
//! any time; a search sees the entries as they were when it read them.

use crate::block_ram::BlockRam;
use rust_hdl::prelude::*;

/// The search of the worker table.
#[derive(LogicBlock)]
pub struct WorkerSearch {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Number of workers n (entries searched).
    pub workers: Signal<In, Bits<6>>,
    /// Worker table entry to write.
    pub write_address: Signal<In, Bits<5>>,
    /// Worker table data: a worker's IPv4 address.
    pub write_data: Signal<In, Bits<32>>,
    /// Write the entry.
    pub write_enable: Signal<In, Bit>,
    /// Pulse: search for `source`.
    pub start: Signal<In, Bit>,
    /// Pulse: abandon the search.
    pub stop: Signal<In, Bit>,
    /// The address searched for (held from `start` until decided).
    pub source: Signal<In, Bits<32>>,
    /// The search is over.
    pub done: Signal<Out, Bit>,
    /// The address was found at entry `rank`.
    pub found: Signal<Out, Bit>,
    /// The first entry holding the address.
    pub rank: Signal<Out, Bits<5>>,
    worker_ips: BlockRam<5, 32>,
    last_entry: DFF<Bits<6>>,
    no_workers: DFF<Bit>,
    searching: DFF<Bit>,
    next_entry: DFF<Bits<6>>,
    read_pending: DFF<Bit>,
    read_entry: DFF<Bits<5>>,
    compare_pending: DFF<Bit>,
    compare_entry: DFF<Bits<5>>,
    hit: DFF<Bit>,
    found_q: DFF<Bit>,
    rank_q: DFF<Bits<5>>,
    done_q: DFF<Bit>,
}

impl Default for WorkerSearch {
    fn default() -> Self {
        Self {
            clock: Default::default(),
            workers: Default::default(),
            write_address: Default::default(),
            write_data: Default::default(),
            write_enable: Default::default(),
            start: Default::default(),
            stop: Default::default(),
            source: Default::default(),
            done: Default::default(),
            found: Default::default(),
            rank: Default::default(),
            worker_ips: BlockRam::new(32),
            last_entry: Default::default(),
            no_workers: Default::default(),
            searching: Default::default(),
            next_entry: Default::default(),
            read_pending: Default::default(),
            read_entry: Default::default(),
            compare_pending: Default::default(),
            compare_entry: Default::default(),
            hit: Default::default(),
            found_q: Default::default(),
            rank_q: Default::default(),
            done_q: Default::default(),
        }
    }
}

impl Logic for WorkerSearch {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            last_entry,
            no_workers,
            searching,
            next_entry,
            read_pending,
            read_entry,
            compare_pending,
            compare_entry,
            hit,
            found_q,
            rank_q,
            done_q
        );
        clock!(self, clock, worker_ips);
        self.worker_ips.write_address.next = self.write_address.val();
        self.worker_ips.write_data.next = self.write_data.val();
        self.worker_ips.write_enable.next = self.write_enable.val();
        self.worker_ips.read_address.next = bit_cast::<5, 6>(self.next_entry.q.val());
        self.done.next = self.done_q.q.val();
        self.found.next = self.found_q.q.val();
        self.rank.next = self.rank_q.q.val();
        // Worker search: one table entry a cycle, from `start`; it ends at the last rank
        // (n - 1 and n = 0 registered from the configuration: a comparison, no adder before it).
        self.last_entry.d.next = self.workers.val() - 1;
        self.no_workers.d.next = self.workers.val() == 0;
        self.read_pending.d.next = false;
        if self.searching.q.val() {
            self.read_pending.d.next = true;
            self.read_entry.d.next = bit_cast::<5, 6>(self.next_entry.q.val());
            self.next_entry.d.next = self.next_entry.q.val() + 1;
            if (self.next_entry.q.val() >= self.last_entry.q.val()) | self.no_workers.q.val() {
                self.searching.d.next = false;
            }
        }
        // The entry read is compared into a register (hit), acted on one cycle later.
        self.hit.d.next = self.worker_ips.read_data.val() == self.source.val();
        self.compare_pending.d.next = self.read_pending.q.val();
        self.compare_entry.d.next = self.read_entry.q.val();
        if self.compare_pending.q.val() {
            if self.hit.q.val() {
                self.found_q.d.next = true;
                self.rank_q.d.next = self.compare_entry.q.val();
                self.done_q.d.next = true;
                self.searching.d.next = false;
                self.read_pending.d.next = false;
                self.compare_pending.d.next = false;
            } else if (bit_cast::<6, 5>(self.compare_entry.q.val()) >= self.last_entry.q.val())
                | self.no_workers.q.val()
            {
                self.done_q.d.next = true;
            }
        }
        if self.start.val() {
            self.searching.d.next = true;
            self.next_entry.d.next = 0.into();
            self.read_pending.d.next = false;
            self.compare_pending.d.next = false;
            self.found_q.d.next = false;
            self.done_q.d.next = false;
        }
        if self.stop.val() {
            self.searching.d.next = false;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::settle;

    /// The model: the first of the n entries holding `source`.
    fn model(table: &[u32], n: usize, source: u32) -> Option<u64> {
        table[..n].iter().position(|&e| e == source).map(|r| r as u64)
    }

    /// Tables of 32 entries with repeated addresses; for n in 1, 2, 7, 32 and sources at
    /// every entry, repeated, absent, or beyond n: the search is done within n + 3 cycles
    /// of `start` with the model's verdict, and holds it; a `stop` mid-search leaves it
    /// searching no more (not done, nothing found).
    #[test]
    fn finds_the_first_matching_entry_within_n_plus_3_cycles() {
        let mut b = WorkerSearch::default();
        b.connect_all();
        let table: Vec<u32> = (0..32u32).map(|i| 0xc000_0200 + (i * 7) % 29).collect();
        for (i, e) in table.iter().enumerate() {
            b.write_address.next = (i as u64).into();
            b.write_data.next = u64::from(*e).into();
            b.write_enable.next = true;
            tick!(&mut b);
        }
        b.write_enable.next = false;
        for n in [1usize, 2, 7, 32] {
            b.workers.next = (n as u64).into();
            let mut sources: Vec<u32> = table.clone();
            sources.push(0x0a00_0001);
            for source in sources {
                let want = model(&table, n, source);
                b.source.next = u64::from(source).into();
                b.start.next = true;
                tick!(&mut b);
                b.start.next = false;
                let mut cycles = 1;
                settle(&mut b);
                while !b.done.val() {
                    assert!(cycles <= n + 3, "n = {n}, {source:#x}: not done after {cycles} cycles");
                    tick!(&mut b);
                    cycles += 1;
                }
                let got = b.found.val().then(|| b.rank.val().index() as u64);
                assert_eq!(got, want, "n = {n}, source {source:#x}");
                for _ in 0..40 {
                    tick!(&mut b);
                    assert!(b.done.val(), "held");
                    assert_eq!(b.found.val().then(|| b.rank.val().index() as u64), want, "held");
                }
            }
        }
        // Stopped after two cycles, looking for the last entry of 32: never done.
        b.source.next = u64::from(table[31]).into();
        b.start.next = true;
        tick!(&mut b);
        b.start.next = false;
        tick!(&mut b);
        b.stop.next = true;
        tick!(&mut b);
        b.stop.next = false;
        for _ in 0..40 {
            tick!(&mut b);
            assert!(!b.done.val() && !b.found.val(), "stopped");
        }
    }
}
