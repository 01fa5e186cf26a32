//! Engine selection shared by the commands (`--engine model|rtl|verilator`).

use anyhow::{Context, Result};
use spotagg_driver::{Engine, JobConfig};
use std::path::Path;

/// Datapath width, in bytes, of the simulated cores the commands build.
pub const SIM_WIDTH_BYTES: usize = 4;

/// Which implementation of the switch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// The reference switch (the executable specification).
    Model,
    /// The rust-hdl core, stepped in rust-hdl's simulation (width 4).
    Rtl,
    /// The core's generated Verilog in Verilator (width 4; needs `verilator` installed).
    Verilator,
}

impl EngineKind {
    /// Builds the engine for a job.
    pub fn build(self, job: &JobConfig) -> Result<Box<dyn Engine>> {
        self.build_traced(job, None)
    }

    /// Builds the engine, writing a VCD waveform to `vcd` (simulated engines only).
    pub fn build_traced(self, job: &JobConfig, vcd: Option<&Path>) -> Result<Box<dyn Engine>> {
        if self != EngineKind::Model {
            if let Some(why) = job.core_unsupported() {
                anyhow::bail!("the {self:?} engine simulates the hardware core: {why}");
            }
        }
        match (self, vcd) {
            (EngineKind::Model, None) => Ok(Box::new(spotagg_spec::reference::RefSwitch::new(job.clone()))),
            (EngineKind::Rtl, None) => Ok(Box::new(
                spotagg_sim::rtl::RtlEngine::for_job(job, SIM_WIDTH_BYTES)
                    .context("building the rust-hdl core for the job")?,
            )),
            (EngineKind::Verilator, vcd) => Ok(Box::new(
                spotagg_sim::verilator_engine::verilator_engine_for_job(job, SIM_WIDTH_BYTES, vcd)
                    .context("building the Verilator model of the core")?,
            )),
            (EngineKind::Rtl, Some(path)) => {
                let core = spotagg_sim::rtl::RtlEngine::core_for_job(job, SIM_WIDTH_BYTES)?;
                Ok(Box::new(
                    spotagg_sim::rtl::RtlEngine::with_vcd(job, core, path)
                        .context("building the rust-hdl core for the job")?,
                ))
            }
            (EngineKind::Model, Some(_)) => {
                anyhow::bail!("--vcd needs a simulated engine (rtl or verilator): the model has no signals")
            }
        }
    }
}

/// Reads a job file, with the file named in any error.
pub fn load_job(path: &Path) -> Result<JobConfig> {
    Ok(JobConfig::load(path)?)
}
