//! Loads the job's configuration into the core's registers after power-up.
//!
//! The register writes ([`config_writes`]: switch MAC and IP, n, payload size, slots in use,
//! VLAN, worker port, the worker table, then a slot-state clear) are baked into a ROM at build time. Once
//! `start` is high (the PLL has locked) the loader plays one write a clock on the core's
//! `cfg_*` bus (from registers), then raises `done` and stays idle. A control link written later can take the
//! bus over after `done`.

use rust_hdl::prelude::*;
use spotagg_driver::JobConfig;
use std::collections::BTreeMap;

/// The register writes that configure the core for `job`, in order (the sequence every loader
/// uses, `spotagg_hdl::config_registers::job_writes`).
pub use spotagg_hdl::config_registers::job_writes as config_writes;

/// The register writes that configure `jobs` (one core each; see [`ConfigLoader::for_jobs`]).
pub fn jobs_writes(jobs: &[JobConfig]) -> Vec<(u8, u32)> {
    use spotagg_hdl::multi_core::JOB_SELECT;
    if let [job] = jobs {
        return config_writes(job);
    }
    let mut w = Vec::new();
    for (i, job) in jobs.iter().enumerate() {
        w.push((JOB_SELECT, i as u32));
        w.extend(config_writes(job));
    }
    w.push((JOB_SELECT, 0));
    w
}

/// The configuration loader.
#[derive(LogicBlock)]
pub struct ConfigLoader {
    /// Core clock.
    pub clock: Signal<In, Clock>,
    /// Begin (held high).
    pub start: Signal<In, Bit>,
    /// Register write strobe.
    pub cfg_write: Signal<Out, Bit>,
    /// Register address.
    pub cfg_address: Signal<Out, Bits<8>>,
    /// Register data.
    pub cfg_data: Signal<Out, Bits<32>>,
    /// Every write has been made.
    pub done: Signal<Out, Bit>,
    rom: ROM<Bits<40>, 8>,
    last: Constant<Bits<8>>,
    index: DFF<Bits<8>>,
    finished: DFF<Bit>,
    o_write: DFF<Bit>,
    o_address: DFF<Bits<8>>,
    o_data: DFF<Bits<32>>,
    o_done: DFF<Bit>,
}

impl ConfigLoader {
    /// A loader for `job` (at most 256 writes: 32 workers need 103).
    pub fn new(job: &JobConfig) -> Self {
        ConfigLoader::for_jobs(std::slice::from_ref(job))
    }

    /// A loader for `jobs` on one core each (`spotagg_hdl::multi_core::MultiCore`): each job's
    /// writes after a write of its index to the job select, then job 0 selected again; a single
    /// job's writes alone.
    pub fn for_jobs(jobs: &[JobConfig]) -> Self {
        let writes = jobs_writes(jobs);
        assert!(writes.len() <= 256, "{} configuration writes do not fit the loader's ROM", writes.len());
        let rom: BTreeMap<Bits<8>, Bits<40>> = writes
            .iter()
            .enumerate()
            .map(|(i, &(a, d))| ((i as u64).into(), ((u64::from(a) << 32) | u64::from(d)).into()))
            .collect();
        Self {
            clock: Default::default(),
            start: Default::default(),
            cfg_write: Default::default(),
            cfg_address: Default::default(),
            cfg_data: Default::default(),
            done: Default::default(),
            rom: ROM::new(rom),
            last: Constant::new(((writes.len() - 1) as u64).into()),
            index: Default::default(),
            finished: Default::default(),
            o_write: Default::default(),
            o_address: Default::default(),
            o_data: Default::default(),
            o_done: Default::default(),
        }
    }
}

impl Logic for ConfigLoader {
    #[hdl_gen]
    fn update(&mut self) {
        dff_setup!(self, clock, index, finished, o_write, o_address, o_data, o_done);
        // The bus is driven from registers (the ROM's read is logic): a write a clock later
        // than its ROM address, `done` after the last write.
        self.rom.address.next = self.index.q.val();
        self.o_address.d.next = self.rom.data.val().get_bits::<8>(32);
        self.o_data.d.next = self.rom.data.val().get_bits::<32>(0);
        self.o_write.d.next = self.start.val() & !self.finished.q.val();
        self.o_done.d.next = self.finished.q.val();
        self.cfg_address.next = self.o_address.q.val();
        self.cfg_data.next = self.o_data.q.val();
        self.cfg_write.next = self.o_write.q.val();
        self.done.next = self.o_done.q.val();
        if self.start.val() & !self.finished.q.val() {
            self.index.d.next = self.index.q.val() + 1;
            if self.index.q.val() == self.last.val() {
                self.finished.d.next = true;
            }
        }
    }
}
