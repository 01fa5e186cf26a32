//! The reference switch (being written).

use spotagg_driver::{Counters, Engine, JobConfig};

/// The reference switch.
pub struct RefSwitch {
    job: JobConfig,
    counters: Counters,
}

impl RefSwitch {
    /// A switch for a job, all state zero.
    pub fn new(job: JobConfig) -> RefSwitch {
        RefSwitch { job, counters: Counters::default() }
    }
    /// The job.
    pub fn job(&self) -> &JobConfig {
        &self.job
    }
}

impl Engine for RefSwitch {
    fn process(&mut self, _frame: &[u8], _out: &mut Vec<Vec<u8>>) {
        self.counters.frames_in += 1;
    }
    fn counters(&self) -> Counters {
        self.counters.clone()
    }
    fn name(&self) -> &'static str {
        "model"
    }
}
