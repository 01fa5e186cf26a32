//! The job's configuration registers, written over a simple register bus.
//!
//! | address | register |
//! |---|---|
//! | 0x00 | switch MAC, bytes 0..2 (low 16 bits) |
//! | 0x01 | switch MAC, bytes 2..6 |
//! | 0x02 | switch IPv4 address |
//! | 0x03 | number of workers n (1..=32) |
//! | 0x04 | payload `size` code (0..=3) |
//! | 0x05 | slots in use S (values above the core's slot count are taken as that count) |
//! | 0x06 | control: writing bit 0 clears the slot state (a new job), bit 1 the counters |
//! | 0x07 | VLAN: 0 for an untagged job, else the TCI of the frames sent (PCP << 13 \| VID), frames taken only with that VID (docs/switch.md §1 step 3) |
//! | 0x08 | bits 15..0: the workers' first UDP source port, `worker_port` (0xBEE0 after reset); bits 23..16: `worker_ports` − 1, the further ports a worker may send from (0 after reset: one port; docs/switch.md §1 7.5); bit 24: `zero_ip_checksum`, take an IPv4 header checksum of 0 that does not verify (docs/switch.md §1 6.4; 0 after reset) |
//! | 0x09 | the job's `job_number` (low 8 bits): the session epoch E after the slot-state clear (docs/switch.md §2.1) |
//! | 0x0A | tree (docs/switch.md §6): the parent switch's IPv4 address `PI` |
//! | 0x0B | the parent's MAC, bytes 0..2 (low 16 bits) |
//! | 0x0C | the parent's MAC, bytes 2..6 |
//! | 0x0D | bit 31: the job has a parent; bits 20..16: this switch's rank in the parent's job; bits 15..0: the parent's UDP port `PP` (0xBEE0 after reset) |
//! | 0x80 + 4r | worker r's IPv4 address |
//! | 0x81 + 4r | worker r's MAC, bytes 0..2 (low 16 bits) |
//! | 0x82 + 4r | worker r's MAC, bytes 2..6 |
//!
//! Timing: a write (`write` high at a rising edge) takes effect at that edge; the worker table
//! lives in block RAMs of the parser and the result builder, which this block's `wt_*` outputs
//! write one cycle later (they come from flip-flops, so the table's write port is driven from
//! registers only). `clear` and `clear_counters` are one-cycle pulses after a control
//! write.

use rust_hdl::prelude::*;

interface_pair! {
    /// The job-configuration bus, taking end: a register write is `write` high at a rising edge
    /// with `address` and `data`. The core and the configuration registers take it.
    pub struct ConfigBus join "ConfigBusDriver";
    /// The job-configuration bus, driving end (the control link, a loader).
    pub struct ConfigBusDriver join "ConfigBus";
    {
        /// Write strobe.
        write: In Bit,
        /// Register address.
        address: In Bits<8>,
        /// Data to write.
        data: In Bits<32>,
    }
}

interface_pair! {
    /// The job's settings as the configuration registers hold them, taking end: what the parser,
    /// the aggregator and the result builder read (each the fields it needs).
    pub struct JobSettings join "JobSettingsSource";
    /// The job's settings, driving end (the configuration registers).
    pub struct JobSettingsSource join "JobSettings";
    {
        /// Switch MAC, bytes 0..2.
        switch_mac_hi: In Bits<16>,
        /// Switch MAC, bytes 2..6.
        switch_mac_lo: In Bits<32>,
        /// Switch IPv4 address.
        switch_ip: In Bits<32>,
        /// Number of workers n.
        workers: In Bits<6>,
        /// `size` code of the job's payload.
        size_code: In Bits<3>,
        /// Elements per payload, k = 32 << size.
        payload_words: In Bits<9>,
        /// Slots in use S.
        slots_in_use: In Bits<16>,
        /// The workers' UDP source port.
        worker_port: In Bits<16>,
        /// `worker_ports` − 1: a worker's frames come from `worker_port ..= worker_port + this`.
        worker_ports_m1: In Bits<8>,
        /// `zero_ip_checksum`: an IPv4 header checksum field of 0 that does not verify is taken
        /// (docs/switch.md §1 6.4).
        zero_checksum: In Bit,
        /// The job's `job_number`: the session epoch after a slot-state clear (docs/switch.md §2.1).
        job_number: In Bits<8>,
        /// The job has a parent switch (docs/switch.md §6; always low in a core built without `tree`).
        parent_on: In Bit,
        /// The parent's IPv4 address `PI`.
        parent_ip: In Bits<32>,
        /// The parent's MAC, bytes 0..2.
        parent_mac_hi: In Bits<16>,
        /// The parent's MAC, bytes 2..6.
        parent_mac_lo: In Bits<32>,
        /// The parent's UDP port `PP`.
        parent_port: In Bits<16>,
    }
}

interface_pair! {
    /// A write into the worker table, taking end: entry `address` takes `data` as the worker's IPv4
    /// address (`write_ip`), MAC bytes 0..2 (`write_mac_hi`, low 16 bits) or MAC bytes 2..6
    /// (`write_mac_lo`). The parser keeps the addresses, the result builder all three.
    pub struct WorkerTableWrite join "WorkerTableWriteSource";
    /// A write into the worker table, driving end (the configuration registers).
    pub struct WorkerTableWriteSource join "WorkerTableWrite";
    {
        /// Worker table entry being written.
        address: In Bits<5>,
        /// Worker table data.
        data: In Bits<32>,
        /// Write a worker's IPv4 address.
        write_ip: In Bit,
        /// Write a worker's MAC bytes 0..2.
        write_mac_hi: In Bit,
        /// Write a worker's MAC bytes 2..6.
        write_mac_lo: In Bit,
    }
}

/// Configuration registers.
#[derive(LogicBlock)]
pub struct ConfigRegisters {
    /// Clock.
    pub clock: Signal<In, Clock>,
    /// The register bus.
    pub bus: ConfigBus,
    /// The job's settings.
    pub job: JobSettingsSource,
    /// One-cycle pulse: clear the slot state.
    pub clear: Signal<Out, Bit>,
    /// One-cycle pulse: clear the counters.
    pub clear_counters: Signal<Out, Bit>,
    /// Worker table writes (from flip-flops, one cycle after the register write).
    pub wt: WorkerTableWriteSource,
    /// The job's VLAN register: the TCI of the frames sent; VID 0 for an untagged job.
    pub vlan_tci: Signal<Out, Bits<16>>,
    mac_hi: DFF<Bits<16>>,
    mac_lo: DFF<Bits<32>>,
    ip: DFF<Bits<32>>,
    n: DFF<Bits<6>>,
    size: DFF<Bits<3>>,
    slots: DFF<Bits<16>>,
    tci: DFF<Bits<16>>,
    wport: DFF<Bits<16>>,
    wports: DFF<Bits<8>>,
    zck: DFF<Bit>,
    jobn: DFF<Bits<8>>,
    p_ip: DFF<Bits<32>>,
    p_mac_hi: DFF<Bits<16>>,
    p_mac_lo: DFF<Bits<32>>,
    /// Register 0x0D as written, the port XOR 0xBEE0.
    p_ctl: DFF<Bits<32>>,
    clear_pulse: DFF<Bit>,
    clear_counters_pulse: DFF<Bit>,
    wt_a: DFF<Bits<5>>,
    wt_d: DFF<Bits<32>>,
    wt_ip: DFF<Bit>,
    wt_mhi: DFF<Bit>,
    wt_mlo: DFF<Bit>,
    built_slots: Constant<Bits<16>>,
    built_tree: Constant<Bit>,
}

impl ConfigRegisters {
    /// Registers of a core built with `slots` slots, and the tree leaf if `tree`.
    pub fn new(slots: usize, tree: bool) -> Self {
        Self {
            clock: Default::default(),
            bus: Default::default(),
            job: Default::default(),
            clear: Default::default(),
            clear_counters: Default::default(),
            wt: Default::default(),
            vlan_tci: Default::default(),
            mac_hi: Default::default(),
            mac_lo: Default::default(),
            ip: Default::default(),
            n: Default::default(),
            size: Default::default(),
            slots: Default::default(),
            tci: Default::default(),
            wport: Default::default(),
            wports: Default::default(),
            zck: Default::default(),
            jobn: Default::default(),
            p_ip: Default::default(),
            p_mac_hi: Default::default(),
            p_mac_lo: Default::default(),
            p_ctl: Default::default(),
            clear_pulse: Default::default(),
            clear_counters_pulse: Default::default(),
            wt_a: Default::default(),
            wt_d: Default::default(),
            wt_ip: Default::default(),
            wt_mhi: Default::default(),
            wt_mlo: Default::default(),
            built_slots: Constant::new((slots as u64).into()),
            built_tree: Constant::new(tree),
        }
    }
}

impl Logic for ConfigRegisters {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(
            self,
            clock,
            mac_hi,
            mac_lo,
            ip,
            n,
            size,
            slots,
            tci,
            wport,
            wports,
            zck,
            jobn,
            p_ip,
            p_mac_hi,
            p_mac_lo,
            p_ctl,
            clear_pulse,
            clear_counters_pulse,
            wt_a,
            wt_d,
            wt_ip,
            wt_mhi,
            wt_mlo
        );
        self.job.switch_mac_hi.next = self.mac_hi.q.val();
        self.job.switch_mac_lo.next = self.mac_lo.q.val();
        self.job.switch_ip.next = self.ip.q.val();
        self.job.workers.next = self.n.q.val();
        self.job.size_code.next = self.size.q.val();
        self.job.slots_in_use.next = self.slots.q.val();
        self.vlan_tci.next = self.tci.q.val();
        // Stored XOR 0xBEE0, so that the register reads 0xBEE0 (the default `worker_port`)
        // after reset and after a control link job write that does not name it.
        self.job.worker_port.next = self.wport.q.val() ^ 0xBEE0;
        self.job.worker_ports_m1.next = self.wports.q.val();
        self.job.zero_checksum.next = self.zck.q.val();
        self.job.job_number.next = self.jobn.q.val();
        self.job.parent_on.next = self.p_ctl.q.val().get_bit(31) & self.built_tree.val();
        self.job.parent_ip.next = self.p_ip.q.val();
        self.job.parent_mac_hi.next = self.p_mac_hi.q.val();
        self.job.parent_mac_lo.next = self.p_mac_lo.q.val();
        self.job.parent_port.next = bit_cast::<16, 32>(self.p_ctl.q.val()) ^ 0xBEE0;
        self.clear.next = self.clear_pulse.q.val();
        self.clear_pulse.d.next = false;
        self.clear_counters.next = self.clear_counters_pulse.q.val();
        self.clear_counters_pulse.d.next = false;
        match self.size.q.val().index() {
            0 => {
                self.job.payload_words.next = 32.into();
            }
            1 => {
                self.job.payload_words.next = 64.into();
            }
            2 => {
                self.job.payload_words.next = 128.into();
            }
            _ => {
                self.job.payload_words.next = 256.into();
            }
        }
        self.wt.address.next = self.wt_a.q.val();
        self.wt.data.next = self.wt_d.q.val();
        self.wt.write_ip.next = self.wt_ip.q.val();
        self.wt.write_mac_hi.next = self.wt_mhi.q.val();
        self.wt.write_mac_lo.next = self.wt_mlo.q.val();
        self.wt_a.d.next = 0.into();
        self.wt_d.d.next = self.bus.data.val();
        self.wt_ip.d.next = false;
        self.wt_mhi.d.next = false;
        self.wt_mlo.d.next = false;
        if self.bus.write.val() {
            if self.bus.address.val().get_bit(7) {
                self.wt_a.d.next = bit_cast::<5, 8>(self.bus.address.val() >> 2);
                match bit_cast::<2, 8>(self.bus.address.val()).index() {
                    0 => {
                        self.wt_ip.d.next = true;
                    }
                    1 => {
                        self.wt_mhi.d.next = true;
                    }
                    2 => {
                        self.wt_mlo.d.next = true;
                    }
                    _ => {}
                }
            } else {
                match self.bus.address.val().index() {
                    0 => {
                        self.mac_hi.d.next = bit_cast::<16, 32>(self.bus.data.val());
                    }
                    1 => {
                        self.mac_lo.d.next = self.bus.data.val();
                    }
                    2 => {
                        self.ip.d.next = self.bus.data.val();
                    }
                    3 => {
                        self.n.d.next = bit_cast::<6, 32>(self.bus.data.val());
                    }
                    4 => {
                        self.size.d.next = bit_cast::<3, 32>(self.bus.data.val());
                    }
                    5 => {
                        if self.bus.data.val() > bit_cast::<32, 16>(self.built_slots.val()) {
                            self.slots.d.next = self.built_slots.val();
                        } else {
                            self.slots.d.next = bit_cast::<16, 32>(self.bus.data.val());
                        }
                    }
                    6 => {
                        self.clear_pulse.d.next = self.bus.data.val().get_bit(0);
                        self.clear_counters_pulse.d.next = self.bus.data.val().get_bit(1);
                    }
                    7 => {
                        self.tci.d.next = bit_cast::<16, 32>(self.bus.data.val());
                    }
                    8 => {
                        self.wport.d.next = bit_cast::<16, 32>(self.bus.data.val()) ^ 0xBEE0;
                        self.wports.d.next = self.bus.data.val().get_bits::<8>(16);
                        self.zck.d.next = self.bus.data.val().get_bit(24);
                    }
                    9 => {
                        self.jobn.d.next = bit_cast::<8, 32>(self.bus.data.val());
                    }
                    10 => {
                        self.p_ip.d.next = self.bus.data.val();
                    }
                    11 => {
                        self.p_mac_hi.d.next = bit_cast::<16, 32>(self.bus.data.val());
                    }
                    12 => {
                        self.p_mac_lo.d.next = self.bus.data.val();
                    }
                    13 => {
                        self.p_ctl.d.next = self.bus.data.val() ^ 0xBEE0;
                    }
                    _ => {}
                }
            }
        }
    }
}

/// The register writes that configure a core for `job`, in order: switch MAC and IP, n, payload
/// size, slots in use, VLAN, worker port, job number, the parent (docs/switch.md §6; register 0x0D is
/// written for every job, so a job without a parent disables a former one), the worker table, then
/// the slot-state clear that enables the job.
/// The one sequence every loader uses: the simulation harnesses and the board's power-up ROM.
pub fn job_writes(job: &spotagg_driver::JobConfig) -> Vec<(u8, u32)> {
    if let Some(why) = job.core_unsupported() {
        panic!("the core cannot be configured for this job: {why}");
    }
    let m = job.switch_mac.0;
    let mut v = vec![
        (0x00, u32::from(u16::from_be_bytes([m[0], m[1]]))),
        (0x01, u32::from_be_bytes([m[2], m[3], m[4], m[5]])),
        (0x02, u32::from(job.switch_ip)),
        (0x03, job.n() as u32),
        (0x04, u32::from(job.payload.code())),
        (0x05, u32::from(job.slots)),
        (0x07, spotagg_driver::JobVlan::register(job.vlan)),
        (0x08, job.worker_port_register()),
        (0x09, u32::from(job.job_number)),
    ];
    v.extend(parent_writes(job.parent.as_ref()));
    for (r, w) in job.workers.iter().enumerate() {
        let base = 0x80 + 4 * r as u8;
        let m = w.mac.0;
        v.push((base, u32::from(w.ip)));
        v.push((base + 1, u32::from(u16::from_be_bytes([m[0], m[1]]))));
        v.push((base + 2, u32::from_be_bytes([m[2], m[3], m[4], m[5]])));
    }
    v.push((0x06, 1));
    v
}

/// The writes of registers 0x0A..=0x0D for `parent` (docs/switch.md §6; all zero for none), the
/// values the control link writes to 0x010A..=0x010D (`spotagg_driver::control::parent_registers`).
pub fn parent_writes(parent: Option<&spotagg_driver::config::ParentConfig>) -> Vec<(u8, u32)> {
    (0x0A..).zip(spotagg_driver::control::parent_registers(parent)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::bench::Rng;
    use crate::step::settle;

    /// The worker-table field a write strobes.
    #[derive(Clone, Copy, Debug, PartialEq, Eq)]
    enum Field {
        Ip,
        MacHi,
        MacLo,
    }

    /// The register map of the module doc (and docs/control.md) in plain Rust: what every output
    /// reads between two rising edges.
    #[derive(Clone, Debug, PartialEq, Eq)]
    struct Model {
        switch_mac_hi: u16,
        switch_mac_lo: u32,
        switch_ip: u32,
        workers: u8,
        size_code: u8,
        slots_in_use: u16,
        vlan_tci: u16,
        worker_port: u16,
        worker_ports_m1: u8,
        zero_checksum: bool,
        job_number: u8,
        parent_on: bool,
        parent_ip: u32,
        parent_mac_hi: u16,
        parent_mac_lo: u32,
        parent_port: u16,
        clear: bool,
        clear_counters: bool,
        /// The worker-table write presented: entry, data, field.
        wt: Option<(u8, u32, Field)>,
    }

    impl Model {
        /// After reset: everything 0 except the two UDP ports, 0xBEE0.
        fn reset() -> Self {
            Model {
                switch_mac_hi: 0,
                switch_mac_lo: 0,
                switch_ip: 0,
                workers: 0,
                size_code: 0,
                slots_in_use: 0,
                vlan_tci: 0,
                worker_port: 0xBEE0,
                worker_ports_m1: 0,
                zero_checksum: false,
                job_number: 0,
                parent_on: false,
                parent_ip: 0,
                parent_mac_hi: 0,
                parent_mac_lo: 0,
                parent_port: 0xBEE0,
                clear: false,
                clear_counters: false,
                wt: None,
            }
        }

        /// One rising edge, with `write` (address, data) if the strobe is high at it, in a core
        /// built with `slots` slots and the tree leaf if `tree`. The pulses and the worker-table
        /// strobes last the one cycle after their write.
        fn edge(&mut self, write: Option<(u8, u32)>, slots: u32, tree: bool) {
            self.clear = false;
            self.clear_counters = false;
            self.wt = None;
            let Some((a, d)) = write else { return };
            match a {
                0x00 => self.switch_mac_hi = d as u16,
                0x01 => self.switch_mac_lo = d,
                0x02 => self.switch_ip = d,
                0x03 => self.workers = (d & 0x3f) as u8,
                0x04 => self.size_code = (d & 7) as u8,
                0x05 => self.slots_in_use = d.min(slots) as u16,
                0x06 => {
                    self.clear = d & 1 != 0;
                    self.clear_counters = d & 2 != 0;
                }
                0x07 => self.vlan_tci = d as u16,
                0x08 => {
                    self.worker_port = d as u16;
                    self.worker_ports_m1 = (d >> 16) as u8;
                    self.zero_checksum = d >> 24 & 1 != 0;
                }
                0x09 => self.job_number = d as u8,
                0x0A => self.parent_ip = d,
                0x0B => self.parent_mac_hi = d as u16,
                0x0C => self.parent_mac_lo = d,
                0x0D => {
                    self.parent_on = tree && d >> 31 != 0;
                    self.parent_port = d as u16;
                }
                0x80..=0xFF => {
                    let field = [Some(Field::Ip), Some(Field::MacHi), Some(Field::MacLo), None][usize::from(a & 3)];
                    self.wt = field.map(|f| ((a - 0x80) / 4, d, f));
                }
                _ => {}
            }
        }
    }

    /// Every output of `b` against `m`; `at` names the write.
    fn check(b: &ConfigRegisters, m: &Model, at: &str) {
        let j = &b.job;
        let v = |x: usize| x as u64;
        let outputs = [
            ("switch_mac_hi", v(j.switch_mac_hi.val().index()), u64::from(m.switch_mac_hi)),
            ("switch_mac_lo", v(j.switch_mac_lo.val().index()), u64::from(m.switch_mac_lo)),
            ("switch_ip", v(j.switch_ip.val().index()), u64::from(m.switch_ip)),
            ("workers", v(j.workers.val().index()), u64::from(m.workers)),
            ("size_code", v(j.size_code.val().index()), u64::from(m.size_code)),
            ("slots_in_use", v(j.slots_in_use.val().index()), u64::from(m.slots_in_use)),
            ("vlan_tci", v(b.vlan_tci.val().index()), u64::from(m.vlan_tci)),
            ("worker_port", v(j.worker_port.val().index()), u64::from(m.worker_port)),
            ("worker_ports_m1", v(j.worker_ports_m1.val().index()), u64::from(m.worker_ports_m1)),
            ("zero_checksum", u64::from(j.zero_checksum.val()), u64::from(m.zero_checksum)),
            ("job_number", v(j.job_number.val().index()), u64::from(m.job_number)),
            ("parent_on", u64::from(j.parent_on.val()), u64::from(m.parent_on)),
            ("parent_ip", v(j.parent_ip.val().index()), u64::from(m.parent_ip)),
            ("parent_mac_hi", v(j.parent_mac_hi.val().index()), u64::from(m.parent_mac_hi)),
            ("parent_mac_lo", v(j.parent_mac_lo.val().index()), u64::from(m.parent_mac_lo)),
            ("parent_port", v(j.parent_port.val().index()), u64::from(m.parent_port)),
            ("clear", u64::from(b.clear.val()), u64::from(m.clear)),
            ("clear_counters", u64::from(b.clear_counters.val()), u64::from(m.clear_counters)),
            ("wt.write_ip", u64::from(b.wt.write_ip.val()), u64::from(m.wt.is_some_and(|w| w.2 == Field::Ip))),
            (
                "wt.write_mac_hi",
                u64::from(b.wt.write_mac_hi.val()),
                u64::from(m.wt.is_some_and(|w| w.2 == Field::MacHi)),
            ),
            (
                "wt.write_mac_lo",
                u64::from(b.wt.write_mac_lo.val()),
                u64::from(m.wt.is_some_and(|w| w.2 == Field::MacLo)),
            ),
        ];
        for (name, got, want) in outputs {
            assert_eq!(got, want, "{at}: {name} is {got:#x}, the register map says {want:#x}");
        }
        // k = 32 << size; the map defines codes 0..=3 only, so a larger code must still give
        // one of the four payload sizes.
        let k = j.payload_words.val().index();
        if m.size_code <= 3 {
            assert_eq!(k, 32 << m.size_code, "{at}: payload_words for size code {}", m.size_code);
        } else {
            assert!([32, 64, 128, 256].contains(&k), "{at}: payload_words {k} for size code {}", m.size_code);
        }
        // A table write's entry and data (MAC bytes 0..2: the low 16 bits are the field).
        if let Some((entry, data, field)) = m.wt {
            let mask = if field == Field::MacHi { 0xFFFF } else { u32::MAX };
            assert_eq!(b.wt.address.val().index(), usize::from(entry), "{at}: wt.address");
            let got = b.wt.data.val().index() as u32 & mask;
            assert_eq!(got, data & mask, "{at}: wt.data ({field:?})");
        }
    }

    /// Data for a write to `a`: all 32 bits random, a small value, or an edge of a field (the
    /// slot count, the 16- and 31-bit boundaries, register 0x0D's layout).
    fn data(rng: &mut Rng, a: u8, slots: u32) -> u32 {
        match rng.below(3) {
            0 => rng.next() as u32,
            1 => rng.below(u64::from(slots) + 3) as u32,
            _ => match rng.below(7) {
                0 => 0,
                1 => u32::MAX,
                2 => slots,
                3 => slots + 1,
                4 => 0x1_0000 | rng.below(u64::from(slots)) as u32,
                5 if a == 0x0D => (rng.next() as u32 & 0x001F_FFFF) | ((rng.one_in(2) as u32) << 31),
                _ => (rng.next() as u32) | 1 << rng.below(32),
            },
        }
    }

    /// Sets the bus, checks that nothing changed before the edge (every output comes from a
    /// flip-flop), clocks, steps the model and checks every output after the edge.
    fn cycle(b: &mut ConfigRegisters, m: &mut Model, write: bool, a: u8, d: u32, built: (u32, bool), at: &str) {
        b.bus.write.next = write;
        b.bus.address.next = u64::from(a).into();
        b.bus.data.next = u64::from(d).into();
        settle(b);
        check(b, m, &format!("{at}, before its edge"));
        tick!(&mut *b);
        m.edge(write.then_some((a, d)), built.0, built.1);
        check(b, m, at);
    }

    /// A core built with `slots` slots (the tree leaf if `tree`): the reset values, then every
    /// address 0x00..=0xFF written once, then `writes` random writes (documented registers,
    /// undocumented 0x0E..=0x7F, the worker table 0x80..=0xFF with the unused 0x83 + 4r), each
    /// followed by 0..=2 cycles with the strobe low and random address and data. Every output
    /// is checked against the model before and after every edge.
    fn run(seed: u64, slots: u32, tree: bool, writes: usize) {
        let mut rng = Rng(seed);
        let mut b = ConfigRegisters::new(slots as usize, tree);
        b.connect_all();
        settle(&mut b);
        let mut m = Model::reset();
        check(&b, &m, "reset, before any edge");
        let built = (slots, tree);
        cycle(&mut b, &mut m, false, 0x03, u32::MAX, built, "reset, an edge without write");
        let mut hits = [0usize; 256];
        for w in 0..256 + writes {
            let a = if w < 256 {
                w as u8
            } else {
                match rng.below(20) {
                    0..=10 => rng.below(0x0E) as u8,
                    11..=13 => 0x0E + rng.below(0x80 - 0x0E) as u8,
                    _ => 0x80 + rng.below(0x80) as u8,
                }
            };
            hits[usize::from(a)] += 1;
            let d = data(&mut rng, a, slots);
            let at = format!("write {w} of {:#04x} = {d:#010x} (slots {slots}, tree {tree})", a);
            cycle(&mut b, &mut m, true, a, d, built, &at);
            for i in 0..rng.below(3) {
                let (qa, qd) = (rng.below(256) as u8, rng.next() as u32);
                cycle(&mut b, &mut m, false, qa, qd, built, &format!("{at}, idle cycle {} after it", i + 1));
            }
        }
        assert!(hits[..0x0E].iter().all(|&n| n > writes / 40), "few writes of a register: {:?}", &hits[..0x0E]);
    }

    /// The register map against its model in two builds: 512 slots with the tree leaf, and 100
    /// slots without it (the parent enable always low), 1500 random writes each.
    #[test]
    fn register_writes_follow_the_model_of_the_register_map() {
        run(0xc0f1_9000_5eed_0001, 512, true, 1500);
        run(0xc0f1_9000_5eed_0002, 100, false, 1500);
    }
}
