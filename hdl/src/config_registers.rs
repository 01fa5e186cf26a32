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
//! | 0x08 | the workers' UDP source port, `worker_port` (low 16 bits; 0xBEE0 after reset) |
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
    let m = job.switch_mac.0;
    let mut v = vec![
        (0x00, u32::from(u16::from_be_bytes([m[0], m[1]]))),
        (0x01, u32::from_be_bytes([m[2], m[3], m[4], m[5]])),
        (0x02, u32::from(job.switch_ip)),
        (0x03, job.n() as u32),
        (0x04, u32::from(job.payload.code())),
        (0x05, u32::from(job.slots)),
        (0x07, spotagg_driver::JobVlan::register(job.vlan)),
        (0x08, u32::from(job.worker_port)),
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
