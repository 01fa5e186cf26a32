//! Engine selection shared by the commands (`--engine model|rtl|verilator`).

use anyhow::Result;
use spotagg_driver::{Engine, JobConfig};

/// Which implementation of the switch runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum EngineKind {
    /// The reference switch (the executable specification).
    Model,
}

impl EngineKind {
    /// Builds the engine for a job.
    pub fn build(self, job: &JobConfig) -> Result<Box<dyn Engine>> {
        match self {
            EngineKind::Model => Ok(Box::new(spotagg_sim::reference::RefSwitch::new(job.clone()))),
        }
    }
}

/// Reads a job file, with the file named in any error.
pub fn load_job(path: &std::path::Path) -> Result<JobConfig> {
    Ok(JobConfig::load(path)?)
}
