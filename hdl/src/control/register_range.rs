//! The control link's register map check: does every register a request names exist for its
//! access (docs/control.md)? Reads: identity 0x0000..=0x000A, the job 0x0100..=0x0109, the
//! counters 0x0200..0x0200 + C, link state 0x0300..=0x0303, status 0x0400..=0x0402, and, when
//! the core has them, the straggler counters 0x0600..0x0600 + W (`with_stragglers`). Writes:
//! the job and the worker table, 0x0100..=0x0109 and 0x0180..=0x01FF, and the tree's parent
//! (docs/switch.md §6), 0x010A..=0x010D (write-only, as the worker table); with several jobs
//! (`with_jobs`, docs/switch.md §8) the job select 0x010F, a write of that one register; with
//! EAPS (`with_eaps`) writes in 0x0700..=0x07FF and reads in 0x0800..=0x08FF. A
//! request may not wrap past 0xFFFF.
//!
//! Timing: `read`, `write` and `snapshot` follow `op` and `address` one cycle late;
//! `range_ok` describes `op`, `address` and `count_m1` of three cycles before (the last
//! address, then one comparison per region, then their combination, each registered). The
//! link has them two bytes (the CRC) after the request's header.

use rust_hdl::prelude::*;

/// The register map check.
#[derive(LogicBlock)]
pub struct RegisterRange {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The request's opcode.
    pub op: Signal<In, Bits<8>>,
    /// Its first register.
    pub address: Signal<In, Bits<16>>,
    /// Its count of registers less one.
    pub count_m1: Signal<In, Bits<8>>,
    /// The opcode is a read.
    pub read: Signal<Out, Bit>,
    /// The opcode is a write.
    pub write: Signal<Out, Bit>,
    /// The first register is the first counter (the read takes a snapshot).
    pub snapshot: Signal<Out, Bit>,
    /// Every register named exists for the access.
    pub range_ok: Signal<Out, Bit>,
    counter_last: Constant<Bits<8>>,
    has_stragglers: Constant<Bit>,
    straggler_last: Constant<Bits<8>>,
    has_jobs: Constant<Bit>,
    has_eaps: Constant<Bit>,
    last_address: DFF<Bits<16>>,
    is_read: DFF<Bit>,
    is_write: DFF<Bit>,
    is_snapshot: DFF<Bit>,
    one_region: DFF<Bit>,
    identity_fits: DFF<Bit>,
    job_fits: DFF<Bit>,
    job_write_fits: DFF<Bit>,
    counters_fit: DFF<Bit>,
    links_fit: DFF<Bit>,
    status_fits: DFF<Bit>,
    stragglers_fit: DFF<Bit>,
    in_worker_table: DFF<Bit>,
    job_select: DFF<Bit>,
    region: DFF<Bits<9>>,
    ok: Signal<Local, Bit>,
    ok_q: DFF<Bit>,
}

impl RegisterRange {
    /// The check for a link reading `counters` (1..=64) counter registers.
    pub fn new(counters: usize) -> Self {
        assert!((1..=64).contains(&counters), "{counters} counters: 1..=64");
        Self {
            clock: Default::default(),
            op: Default::default(),
            address: Default::default(),
            count_m1: Default::default(),
            read: Default::default(),
            write: Default::default(),
            snapshot: Default::default(),
            range_ok: Default::default(),
            counter_last: Constant::new(((counters - 1) as u64).into()),
            has_stragglers: Constant::new(false),
            straggler_last: Constant::new(0.into()),
            has_jobs: Constant::new(false),
            has_eaps: Constant::new(false),
            last_address: Default::default(),
            is_read: Default::default(),
            is_write: Default::default(),
            is_snapshot: Default::default(),
            one_region: Default::default(),
            identity_fits: Default::default(),
            job_fits: Default::default(),
            job_write_fits: Default::default(),
            counters_fit: Default::default(),
            links_fit: Default::default(),
            status_fits: Default::default(),
            stragglers_fit: Default::default(),
            in_worker_table: Default::default(),
            job_select: Default::default(),
            region: Default::default(),
            ok: Default::default(),
            ok_q: Default::default(),
        }
    }
}

impl RegisterRange {
    /// The check with the straggler region 0x0600.. holding `words` (at most 128) registers; 0
    /// (the default): no straggler region.
    pub fn with_stragglers(mut self, words: usize) -> Self {
        assert!(words <= 128, "{words} straggler words: at most 128");
        self.has_stragglers = Constant::new(words > 0);
        self.straggler_last = Constant::new((words.saturating_sub(1) as u64).into());
        self
    }

    /// The check for a link to a switch of `jobs` cores (1..=2): with more than one, the job
    /// select 0x010F is written alone (`spotagg_hdl::multi_core::JOB_SELECT`).
    pub fn with_jobs(mut self, jobs: usize) -> Self {
        assert!((1..=crate::job_router::MAX_JOBS).contains(&jobs), "{jobs} jobs");
        self.has_jobs = Constant::new(jobs > 1);
        self
    }

    /// The check with the EAPS regions (docs/control.md): writes anywhere in 0x0700..=0x07FF,
    /// reads anywhere in 0x0800..=0x08FF.
    pub fn with_eaps(mut self, eaps: bool) -> Self {
        self.has_eaps = Constant::new(eaps);
        self
    }
}

impl Logic for RegisterRange {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            last_address,
            is_read,
            is_write,
            is_snapshot,
            one_region,
            identity_fits,
            job_fits,
            job_write_fits,
            counters_fit,
            links_fit,
            status_fits,
            stragglers_fit,
            in_worker_table,
            job_select,
            region,
            ok_q
        );
        self.read.next = self.is_read.q.val();
        self.write.next = self.is_write.q.val();
        self.snapshot.next = self.is_snapshot.q.val();
        self.range_ok.next = self.ok_q.q.val();
        self.last_address.d.next = self.address.val() + bit_cast::<16, 8>(self.count_m1.val());
        self.is_read.d.next = self.op.val() == 1;
        self.is_write.d.next = self.op.val() == 2;
        self.is_snapshot.d.next = self.address.val() == 0x0200;
        // Comparisons of the first and last address, one per region.
        self.one_region.d.next = (self.last_address.q.val() >= self.address.val())
            && ((self.last_address.q.val() >> 8) == (self.address.val() >> 8));
        self.identity_fits.d.next = bit_cast::<8, 16>(self.last_address.q.val()) <= 10;
        self.job_fits.d.next = bit_cast::<8, 16>(self.last_address.q.val()) <= 9;
        self.job_write_fits.d.next = bit_cast::<8, 16>(self.last_address.q.val()) <= 13;
        self.counters_fit.d.next = bit_cast::<8, 16>(self.last_address.q.val()) <= self.counter_last.val();
        self.links_fit.d.next = bit_cast::<8, 16>(self.last_address.q.val()) <= 3;
        self.status_fits.d.next = bit_cast::<8, 16>(self.last_address.q.val()) <= 2;
        self.stragglers_fit.d.next =
            self.has_stragglers.val() & (bit_cast::<8, 16>(self.last_address.q.val()) <= self.straggler_last.val());
        self.in_worker_table.d.next = bit_cast::<8, 16>(self.address.val()) >= 0x80;
        self.job_select.d.next =
            self.has_jobs.val() & (bit_cast::<8, 16>(self.address.val()) == 15) & (self.count_m1.val() == 0);
        self.region.d.next = 0.into();
        match bit_cast::<8, 16>(self.address.val() >> 8).index() {
            0 => {
                self.region.d.next = 1.into();
            }
            1 => {
                self.region.d.next = 2.into();
            }
            2 => {
                self.region.d.next = 4.into();
            }
            3 => {
                self.region.d.next = 8.into();
            }
            4 => {
                self.region.d.next = 16.into();
            }
            6 => {
                self.region.d.next = 64.into();
            }
            7 => {
                self.region.d.next = 128.into();
            }
            8 => {
                self.region.d.next = 256.into();
            }
            _ => {}
        }
        // Their combination.
        self.ok.next = false;
        if self.one_region.q.val() {
            if self.is_read.q.val() {
                self.ok.next = (self.region.q.val().get_bit(0) && self.identity_fits.q.val())
                    || (self.region.q.val().get_bit(1) && self.job_fits.q.val())
                    || (self.region.q.val().get_bit(2) && self.counters_fit.q.val())
                    || (self.region.q.val().get_bit(3) && self.links_fit.q.val())
                    || (self.region.q.val().get_bit(4) && self.status_fits.q.val())
                    || (self.region.q.val().get_bit(6) && self.stragglers_fit.q.val())
                    || (self.region.q.val().get_bit(8) && self.has_eaps.val());
            } else {
                self.ok.next = (self.region.q.val().get_bit(1)
                    && (self.job_write_fits.q.val() || self.in_worker_table.q.val() || self.job_select.q.val()))
                    || (self.region.q.val().get_bit(7) && self.has_eaps.val());
            }
        }
        self.ok_q.d.next = self.ok.val();
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use spotagg_driver::control::protocol::{reg, OP_READ, OP_WRITE};

    /// docs/control.md's register map: does `address` exist for a read (or a write)?
    pub(crate) fn exists(address: u32, write: bool, counters: u32, stragglers: u32) -> bool {
        let a = address;
        let job = (u32::from(reg::SWITCH_MAC_HI)..=u32::from(reg::JOB_NUMBER)).contains(&a);
        if write {
            let parent = (u32::from(reg::PARENT_IP)..=u32::from(reg::PARENT_CONTROL)).contains(&a);
            return job || parent || (u32::from(reg::WORKER_TABLE)..0x0200).contains(&a);
        }
        (0..u32::from(reg::IDENTITY_COUNT)).contains(&a)
            || job
            || (u32::from(reg::COUNTERS)..u32::from(reg::COUNTERS) + counters).contains(&a)
            || (u32::from(reg::LINK_STATE)..u32::from(reg::LINK_STATE) + u32::from(reg::LINK_PORTS)).contains(&a)
            || (u32::from(reg::STATUS)..=u32::from(reg::UPTIME)).contains(&a)
            || (u32::from(reg::STRAGGLERS)..u32::from(reg::STRAGGLERS) + stragglers).contains(&a)
    }

    /// Requests of 1..=32 registers from every first address near each region's edges (and a
    /// wrap past 0xFFFF), reads and writes, with 22 and 46 counters, 0, 16 and 128 straggler
    /// words, one job and two: `range_ok` is the model's "every register exists" (with two
    /// jobs, also a write of the job select 0x010F alone), three cycles after the request is
    /// presented.
    #[test]
    fn accepts_exactly_the_existing_registers() {
        for (counters, stragglers, jobs) in [(22u32, 0u32, 1), (46, 0, 2), (46, 16, 1), (22, 128, 2)] {
            let mut b = RegisterRange::new(counters as usize).with_stragglers(stragglers as usize).with_jobs(jobs);
            b.connect_all();
            let mut firsts = vec![0xfff0_u32, 0xffff];
            for base in [0x0000_u32, 0x0100, 0x0180, 0x0200, 0x0300, 0x0400, 0x0500, 0x0600, 0x0700] {
                firsts.extend(base.saturating_sub(3)..base + 12);
            }
            firsts.extend(0x01f0..0x0200);
            firsts.extend(0x0200 + counters - 4..0x0200 + counters + 2);
            firsts.extend((0x0600 + stragglers).saturating_sub(4)..0x0600 + stragglers + 2);
            firsts.sort();
            firsts.dedup();
            let mut checked = [0usize; 2];
            for &first in &firsts {
                for count in [1u32, 2, 3, 4, 6, 7, 8, 11, 12, 16, 21, 22, 32] {
                    for (op, write) in [(OP_READ, false), (OP_WRITE, true)] {
                        let select = write && jobs > 1 && first == u32::from(reg::JOB_SELECT) && count == 1;
                        let want = select
                            || (first..first + count).all(|a| a <= 0xffff && exists(a, write, counters, stragglers));
                        checked[want as usize] += 1;
                        b.op.next = u64::from(op).into();
                        b.address.next = u64::from(first).into();
                        b.count_m1.next = u64::from(count - 1).into();
                        for _ in 0..3 {
                            tick!(&mut b);
                        }
                        assert_eq!(b.read.val(), !write);
                        assert_eq!(b.write.val(), write);
                        assert_eq!(b.snapshot.val(), first == 0x0200);
                        assert_eq!(
                            b.range_ok.val(),
                            want,
                            "C = {counters}, W = {stragglers}, op {op}: {first:#06x} + {count}"
                        );
                    }
                }
            }
            assert!(checked[0] > 100 && checked[1] > 100, "both verdicts exercised: {checked:?}");
        }
    }
}
