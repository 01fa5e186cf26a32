//! The control link's register writer: an accepted write request applied one register a clock,
//! to the core's configuration bus or to the EAPS node's registers, and the job registers the
//! link keeps to read back (0x0100..=0x0109).
//!
//! Inputs: `start` (one cycle, while no write is under way) with the request's first register
//! `address` and `last_index` (count − 1), both held until `done`; `data_word`, the word of the
//! request `data_address` named a cycle earlier. Outputs: the core's configuration bus `cfg`,
//! the EAPS port (`eaps_write`, `eaps_address`, `eaps_data`), `done`, and the job registers
//! read back (`job`).
//!
//! Contract: `address` lies in 0x0100..=0x01FF or 0x0700..=0x07FF and the request stays in its
//! region (the request parser lets no other write through). The writer reads word i of the
//! request at `data_address` and writes it to register `address` + i, in order, one a cycle
//! from the third cycle after `start`: with `cfg.write` (the core's register: the low byte of
//! the address), or, in 0x0700..=0x07FF, with `eaps_write` (the offset in the low byte). `done`
//! pulses in the cycle before the last write's strobe. The job registers (`job`) read back the
//! last value written to 0x0100..=0x0109 under the core's masks (switch MAC bytes 0..2 and the
//! VLAN, worker port and slots 16 bits, n 6 bits, the size code 3, the job number 8), or their
//! power-up value; `enabled` is set by a write of the control register (0x0106) with bit 0 and
//! cleared by a write of any other job register (0x0100..=0x0105, 0x0107..=0x010D), as the
//! core's are.
//!
//! Timing: every output is a register; a job register changes in the cycle of its write's
//! strobe.

use crate::config_registers::ConfigBusDriver;
use rust_hdl::prelude::*;

interface_pair! {
    /// The job registers as the link keeps them, the writer's end.
    pub struct JobReadbackSource join "JobReadback";
    /// The job registers as the link keeps them, the reader's end.
    pub struct JobReadback join "JobReadbackSource";
    {
        /// Switch MAC bytes 0..2 (0x0100).
        switch_mac_hi: Out Bits<16>,
        /// Switch MAC bytes 2..6 (0x0101).
        switch_mac_lo: Out Bits<32>,
        /// Switch IPv4 (0x0102).
        switch_ip: Out Bits<32>,
        /// Number of workers n (0x0103).
        workers: Out Bits<6>,
        /// Payload size code (0x0104).
        size_code: Out Bits<3>,
        /// Slots in use S (0x0105).
        slots_in_use: Out Bits<16>,
        /// A job was enabled and no job register written since (0x0106 bit 0).
        enabled: Out Bit,
        /// VLAN TCI, 0 untagged (0x0107).
        vlan: Out Bits<16>,
        /// The workers' UDP source ports and the zero-checksum bit (0x0108, bits 24..0).
        worker_port: Out Bits<25>,
        /// The job number (0x0109).
        job_number: Out Bits<8>,
    }
}

/// Where the writer is in a request.
#[derive(Copy, Clone, Debug, PartialEq, Eq, LogicState)]
enum WriterState {
    /// No write under way.
    Idle,
    /// The first word read; the first register decoded.
    Prepare,
    /// One register a cycle.
    Write,
}

/// The register writer.
#[derive(LogicBlock)]
pub struct RegisterWriter {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// Apply the request (one cycle).
    pub start: Signal<In, Bit>,
    /// Its first register.
    pub address: Signal<In, Bits<16>>,
    /// Its last word's index (count − 1).
    pub last_index: Signal<In, Bits<8>>,
    /// The index of the request's word to read.
    pub data_address: Signal<Out, Bits<5>>,
    /// The word `data_address` named a cycle earlier.
    pub data_word: Signal<In, Bits<32>>,
    /// The last register is written in the next cycle: the response may start.
    pub done: Signal<Out, Bit>,
    /// The core's configuration bus.
    pub cfg: ConfigBusDriver,
    /// Write an EAPS register (`eaps_address`, `eaps_data`).
    pub eaps_write: Signal<Out, Bit>,
    /// Its offset in 0x0700..
    pub eaps_address: Signal<Out, Bits<8>>,
    /// Its data.
    pub eaps_data: Signal<Out, Bits<32>>,
    /// The job registers read back.
    pub job: JobReadbackSource,
    state: DFF<WriterState>,
    word_index: DFF<Bits<5>>,
    word_offset: DFF<Bits<8>>,
    to_eaps: DFF<Bit>,
    job_register_select: DFF<Bits<10>>,
    clears_enabled: DFF<Bit>,
    cfg_strobe: DFF<Bit>,
    eaps_strobe: DFF<Bit>,
    bus_address: DFF<Bits<8>>,
    bus_data: DFF<Bits<32>>,
    switch_mac_hi: DFFWithInit<Bits<16>>,
    switch_mac_lo: DFFWithInit<Bits<32>>,
    switch_ip: DFFWithInit<Bits<32>>,
    workers: DFFWithInit<Bits<6>>,
    size_code: DFFWithInit<Bits<3>>,
    slots_in_use: DFFWithInit<Bits<16>>,
    enabled: DFFWithInit<Bit>,
    vlan: DFFWithInit<Bits<16>>,
    worker_port: DFFWithInit<Bits<25>>,
    job_number: DFFWithInit<Bits<8>>,
}

/// Widths of the job registers 0x00..=0x09 as the link keeps them (0: the control register).
const JOB_REGISTER_BITS: [u32; 10] = [16, 32, 32, 6, 3, 16, 0, 16, 25, 8];

impl RegisterWriter {
    /// A writer whose job registers read `job` after power-up (indexed by core register;
    /// entry 6, the control register, is not kept) with `enabled`: the writes another master
    /// (the board's power-up loader) made before the link is used. Each value must fit its
    /// register.
    pub fn new(job: [u32; 10], enabled: bool) -> Self {
        for (r, (&v, &bits)) in job.iter().zip(&JOB_REGISTER_BITS).enumerate() {
            assert!(
                r == 6 || bits == 32 || v >> bits == 0,
                "job register {r:#04x} at power-up: {v:#x} does not fit its {bits} bits"
            );
        }
        Self {
            clock: Default::default(),
            start: Default::default(),
            address: Default::default(),
            last_index: Default::default(),
            data_address: Default::default(),
            data_word: Default::default(),
            done: Default::default(),
            cfg: Default::default(),
            eaps_write: Default::default(),
            eaps_address: Default::default(),
            eaps_data: Default::default(),
            job: Default::default(),
            state: Default::default(),
            word_index: Default::default(),
            word_offset: Default::default(),
            to_eaps: Default::default(),
            job_register_select: Default::default(),
            clears_enabled: Default::default(),
            cfg_strobe: Default::default(),
            eaps_strobe: Default::default(),
            bus_address: Default::default(),
            bus_data: Default::default(),
            switch_mac_hi: DFFWithInit::new(u64::from(job[0]).into()),
            switch_mac_lo: DFFWithInit::new(u64::from(job[1]).into()),
            switch_ip: DFFWithInit::new(u64::from(job[2]).into()),
            workers: DFFWithInit::new(u64::from(job[3]).into()),
            size_code: DFFWithInit::new(u64::from(job[4]).into()),
            slots_in_use: DFFWithInit::new(u64::from(job[5]).into()),
            enabled: DFFWithInit::new(enabled),
            vlan: DFFWithInit::new(u64::from(job[7]).into()),
            worker_port: DFFWithInit::new(u64::from(job[8]).into()),
            job_number: DFFWithInit::new(u64::from(job[9]).into()),
        }
    }
}

impl Logic for RegisterWriter {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            state,
            word_index,
            word_offset,
            to_eaps,
            job_register_select,
            clears_enabled,
            cfg_strobe,
            eaps_strobe,
            bus_address,
            bus_data,
            switch_mac_hi,
            switch_mac_lo,
            switch_ip,
            workers,
            size_code,
            slots_in_use,
            enabled,
            vlan,
            worker_port,
            job_number
        );
        // The buses from registers: a write leaves a cycle after its word is read.
        self.cfg.write.next = self.cfg_strobe.q.val();
        self.cfg.address.next = self.bus_address.q.val();
        self.cfg.data.next = self.bus_data.q.val();
        self.eaps_write.next = self.eaps_strobe.q.val();
        self.eaps_address.next = self.bus_address.q.val();
        self.eaps_data.next = self.bus_data.q.val();
        self.job.switch_mac_hi.next = self.switch_mac_hi.q.val();
        self.job.switch_mac_lo.next = self.switch_mac_lo.q.val();
        self.job.switch_ip.next = self.switch_ip.q.val();
        self.job.workers.next = self.workers.q.val();
        self.job.size_code.next = self.size_code.q.val();
        self.job.slots_in_use.next = self.slots_in_use.q.val();
        self.job.enabled.next = self.enabled.q.val();
        self.job.vlan.next = self.vlan.q.val();
        self.job.worker_port.next = self.worker_port.q.val();
        self.job.job_number.next = self.job_number.q.val();

        self.cfg_strobe.d.next = false;
        self.eaps_strobe.d.next = false;
        self.done.next = false;
        // Word i + 1 is read while word i is written.
        self.data_address.next = self.word_index.q.val() + 1;
        // The one-hot select follows the register offset; the next register clears `enabled`
        // when it is a job register: a successor of 0..=9 other than the control register 6.
        self.job_register_select.d.next = self.job_register_select.q.val() << 1;
        self.clears_enabled.d.next = (self.job_register_select.q.val() & 0x3df) != 0;
        match self.state.q.val() {
            WriterState::Idle => {
                if self.start.val() {
                    self.state.d.next = WriterState::Prepare;
                }
            }
            WriterState::Prepare => {
                // Word 0 presented; the first register's offset (a request stays within one
                // region, so the low byte does not carry) and what writing it does.
                self.data_address.next = 0.into();
                self.word_index.d.next = 0.into();
                self.word_offset.d.next = bit_cast::<8, 16>(self.address.val());
                self.job_register_select.d.next = 0.into();
                match bit_cast::<8, 16>(self.address.val()).index() {
                    0 => {
                        self.job_register_select.d.next = 1.into();
                    }
                    1 => {
                        self.job_register_select.d.next = 2.into();
                    }
                    2 => {
                        self.job_register_select.d.next = 4.into();
                    }
                    3 => {
                        self.job_register_select.d.next = 8.into();
                    }
                    4 => {
                        self.job_register_select.d.next = 16.into();
                    }
                    5 => {
                        self.job_register_select.d.next = 32.into();
                    }
                    6 => {
                        self.job_register_select.d.next = 64.into();
                    }
                    7 => {
                        self.job_register_select.d.next = 128.into();
                    }
                    8 => {
                        self.job_register_select.d.next = 256.into();
                    }
                    9 => {
                        self.job_register_select.d.next = 512.into();
                    }
                    _ => {}
                }
                // (The parent registers 0x0A..=0x0D, docs/switch.md §6, are job registers too.)
                self.clears_enabled.d.next =
                    (bit_cast::<8, 16>(self.address.val()) <= 13) & (bit_cast::<8, 16>(self.address.val()) != 6);
                // A write to the EAPS region goes to the EAPS port, not to the core's bus nor
                // the job registers.
                self.to_eaps.d.next = (self.address.val() >> 8) == 7;
                if (self.address.val() >> 8) == 7 {
                    self.job_register_select.d.next = 0.into();
                    self.clears_enabled.d.next = false;
                }
                self.state.d.next = WriterState::Write;
            }
            WriterState::Write => {
                // Word i's data is on data_word.
                self.cfg_strobe.d.next = !self.to_eaps.q.val();
                self.eaps_strobe.d.next = self.to_eaps.q.val();
                self.bus_address.d.next = self.word_offset.q.val();
                self.word_offset.d.next = self.word_offset.q.val() + 1;
                self.bus_data.d.next = self.data_word.val();
                if self.clears_enabled.q.val() {
                    self.enabled.d.next = false;
                }
                if self.job_register_select.q.val().get_bit(0) {
                    self.switch_mac_hi.d.next = bit_cast::<16, 32>(self.data_word.val());
                }
                if self.job_register_select.q.val().get_bit(1) {
                    self.switch_mac_lo.d.next = self.data_word.val();
                }
                if self.job_register_select.q.val().get_bit(2) {
                    self.switch_ip.d.next = self.data_word.val();
                }
                if self.job_register_select.q.val().get_bit(3) {
                    self.workers.d.next = bit_cast::<6, 32>(self.data_word.val());
                }
                if self.job_register_select.q.val().get_bit(4) {
                    self.size_code.d.next = bit_cast::<3, 32>(self.data_word.val());
                }
                if self.job_register_select.q.val().get_bit(5) {
                    self.slots_in_use.d.next = bit_cast::<16, 32>(self.data_word.val());
                }
                if self.job_register_select.q.val().get_bit(6) {
                    self.enabled.d.next = self.enabled.q.val() || self.data_word.val().get_bit(0);
                }
                if self.job_register_select.q.val().get_bit(7) {
                    self.vlan.d.next = bit_cast::<16, 32>(self.data_word.val());
                }
                if self.job_register_select.q.val().get_bit(8) {
                    self.worker_port.d.next = bit_cast::<25, 32>(self.data_word.val());
                }
                if self.job_register_select.q.val().get_bit(9) {
                    self.job_number.d.next = bit_cast::<8, 32>(self.data_word.val());
                }
                self.word_index.d.next = self.word_index.q.val() + 1;
                if bit_cast::<8, 5>(self.word_index.q.val()) == self.last_index.val() {
                    self.done.next = true;
                    self.state.d.next = WriterState::Idle;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;

    /// The job registers as the contract keeps them: each core register's mask, the control
    /// register (6) not kept.
    const MASKS: [u32; 10] = [0xFFFF, !0, !0, 0x3F, 0x7, 0xFFFF, 0, 0xFFFF, 0x1FF_FFFF, 0xFF];

    /// The contract's effect of a write of `data` to register `address` on the job registers
    /// and `enabled`.
    fn apply(job: &mut [u32; 10], enabled: &mut bool, address: u16, data: u32) {
        let r = usize::from(address & 0xFF);
        match (address >> 8, r) {
            (1, 6) => *enabled |= data & 1 == 1,
            (1, 0..=13) => {
                *enabled = false;
                if r < 10 {
                    job[r] = data & MASKS[r];
                }
            }
            _ => {}
        }
    }

    /// The job registers as the writer shows them.
    fn readback(b: &RegisterWriter) -> ([u32; 10], bool) {
        let j = &b.job;
        let v = |x: u64| x as u32;
        let job = [
            v(j.switch_mac_hi.val().index() as u64),
            v(j.switch_mac_lo.val().index() as u64),
            v(j.switch_ip.val().index() as u64),
            v(j.workers.val().index() as u64),
            v(j.size_code.val().index() as u64),
            v(j.slots_in_use.val().index() as u64),
            0,
            v(j.vlan.val().index() as u64),
            v(j.worker_port.val().index() as u64),
            v(j.job_number.val().index() as u64),
        ];
        (job, j.enabled.val())
    }

    /// A write the request parser lets through: job and parent registers, the job select, the
    /// worker table, the EAPS region; within one region.
    fn request(rng: &mut Rng) -> (u16, Vec<u32>) {
        let (first, room) = match rng.below(6) {
            0 | 1 => (0x0100 + rng.below(10) as u16, 0x010E),
            2 => (0x0106, 0x010E),
            3 => (0x0180 + rng.below(0x70) as u16, 0x200),
            4 => (0x0700 + rng.below(0x100) as u16, 0x800),
            _ => (0x010F, 0x110),
        };
        let most = u64::from(room - first).min(32);
        // A job enabled now and then (bit 0 of the control register).
        let words = (0..1 + rng.below(most))
            .map(|_| rng.next() as u32 | u32::from(first == 0x0106 && !rng.one_in(4)))
            .collect();
        (first, words)
    }

    /// Writes of 1..=32 words to every kind of register, with idle gaps between them: each
    /// register written once, in order, one a clock from the third cycle after `start`, on the
    /// configuration bus or the EAPS port; `done` in the cycle before the last; the job
    /// registers and `enabled` read back as the model keeps them, in every cycle.
    #[test]
    fn writes_in_order_and_keeps_the_job_registers_as_the_model() {
        let mut rng = Rng(0x3717_e5e5);
        let mut job = [0u32; 10];
        for (r, j) in job.iter_mut().enumerate() {
            *j = rng.next() as u32 & MASKS[r];
        }
        let mut enabled = true;
        let mut b = RegisterWriter::new(job, enabled);
        b.connect_all();
        let mut seen = [0usize; 3];
        for case in 0..400 {
            let (first, words) = request(&mut rng);
            b.address.next = u64::from(first).into();
            b.last_index.next = (words.len() as u64 - 1).into();
            // The parser's word buffer: the word at `data_address` a cycle later (any value
            // beyond the request's words).
            let mut bus = vec![];
            let mut done_at = vec![];
            let start = 0;
            for cycle in 0..words.len() + 8 {
                b.start.next = cycle == start;
                crate::step::settle(&mut b);
                let read = b.data_address.val().index();
                if b.done.val() {
                    done_at.push(cycle);
                }
                if b.cfg.write.val() {
                    bus.push((cycle, false, b.cfg.address.val().index() as u16, b.cfg.data.val().index() as u32));
                }
                if b.eaps_write.val() {
                    bus.push((cycle, true, b.eaps_address.val().index() as u16, b.eaps_data.val().index() as u32));
                }
                if b.cfg.write.val() || b.eaps_write.val() {
                    let (_, eaps, offset, data) = *bus.last().unwrap();
                    let region = if eaps { 0x0700 } else { first & 0xFF00 };
                    apply(&mut job, &mut enabled, region | offset, data);
                }
                assert_eq!(readback(&b), (job, enabled), "case {case}: cycle {cycle}");
                tick!(&mut b);
                let word = words.get(read).copied().unwrap_or(rng.next() as u32);
                b.data_word.next = u64::from(word).into();
            }
            let eaps = first >> 8 == 7;
            let want: Vec<_> = words
                .iter()
                .enumerate()
                .map(|(i, &w)| (start + 3 + i, eaps, (first as usize + i) as u16 & 0xFF, w))
                .collect();
            assert_eq!(bus, want, "case {case}: {first:#06x} + {}", words.len());
            assert_eq!(done_at, vec![start + 1 + words.len()], "case {case}");
            seen[if eaps { 2 } else { usize::from(first < 0x0180) }] += 1;
            for _ in 0..rng.below(4) {
                tick!(&mut b);
            }
        }
        assert!(seen.iter().all(|&n| n > 50), "every region written: {seen:?}");
    }

    #[test]
    #[should_panic(expected = "does not fit its 6 bits")]
    fn refuses_a_power_up_value_that_does_not_fit() {
        let _ = RegisterWriter::new([0, 0, 0, 64, 0, 0, 0, 0, 0, 0], false);
    }
}
