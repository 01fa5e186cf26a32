//! Build-time parameters of the portable core.
//!
//! A [`CoreConfig`] is checked once, by [`CoreConfig::new`]; every block sizes its memories and
//! constants from it. Bad values are rejected with a message that names the value.

use std::fmt;

/// Build parameters of the core.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CoreConfig {
    /// Bytes per beat of the Ethernet streams: 1, 4 or 8.
    pub width_bytes: usize,
    /// Slots (each with two sets) in the slot memory: 1..=64.
    pub slots: usize,
    /// Largest payload in bytes: 256 or 1024 (the job's payload may be any supported size up to it).
    pub max_payload: usize,
    /// Largest number of workers: 1..=32.
    pub max_workers: usize,
    /// The per-rank straggler counters of docs/switch.md §7 (`crate::straggler`) are built.
    pub stragglers: bool,
    /// The aggregation-tree leaf of docs/switch.md §6 (a parent switch in the job
    /// configuration, partial sums up, the parent's result down) is built. Off, the parent
    /// enable register reads 0 and synthesis removes the tree logic.
    pub tree: bool,
}

/// Why a [`CoreConfig`] was rejected.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError(pub String);

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for ConfigError {}

/// Words (32-bit) of one frame buffer half: frames up to 2048 bytes are stored whole.
pub const FRAME_WORDS: usize = 512;
/// log2 of [`FRAME_WORDS`].
pub const FRAME_WORDS_LOG2: usize = 9;
/// Largest number of slots a core can be built with.
pub const MAX_SLOTS: usize = 64;
/// Width of the worker bitmaps (the largest `max_workers`).
pub const BITMAP_BITS: usize = 32;

impl CoreConfig {
    /// Checks and builds a configuration.
    pub fn new(
        width_bytes: usize,
        slots: usize,
        max_payload: usize,
        max_workers: usize,
    ) -> Result<CoreConfig, ConfigError> {
        if ![1, 4, 8].contains(&width_bytes) {
            return Err(ConfigError(format!("width_bytes = {width_bytes} is not supported (1, 4 or 8)")));
        }
        if slots == 0 || slots > MAX_SLOTS {
            return Err(ConfigError(format!("slots = {slots} is outside 1..={MAX_SLOTS}")));
        }
        if max_payload != 256 && max_payload != 1024 {
            return Err(ConfigError(format!("max_payload = {max_payload} is not supported (256 or 1024)")));
        }
        if max_workers == 0 || max_workers > BITMAP_BITS {
            return Err(ConfigError(format!("max_workers = {max_workers} is outside 1..={BITMAP_BITS}")));
        }
        Ok(CoreConfig { width_bytes, slots, max_payload, max_workers, stragglers: false, tree: true })
    }

    /// The same configuration with the straggler counters built (`on`) or not.
    pub fn with_stragglers(mut self, on: bool) -> CoreConfig {
        self.stragglers = on;
        self
    }

    /// The same configuration with the aggregation-tree leaf built (`on`) or not.
    pub fn with_tree(mut self, on: bool) -> CoreConfig {
        self.tree = on;
        self
    }

    /// Elements per set at the largest payload.
    pub fn max_elements(&self) -> usize {
        self.max_payload / 4
    }

    /// log2 of [`CoreConfig::max_elements`].
    pub fn max_elements_log2(&self) -> usize {
        self.max_elements().trailing_zeros() as usize
    }

    /// Largest `size` code the core accepts (1 for 256 B, 3 for 1024 B).
    pub fn max_size_code(&self) -> u8 {
        if self.max_payload == 1024 {
            3
        } else {
            1
        }
    }

    /// Words of slot memory: slots × 2 sets × max elements.
    pub fn slot_memory_words(&self) -> usize {
        self.slots * 2 * self.max_elements()
    }
}

impl Default for CoreConfig {
    /// Width 4, 16 slots, 1024-byte payloads, 32 workers, no straggler counters, the tree leaf.
    fn default() -> Self {
        CoreConfig { width_bytes: 4, slots: 16, max_payload: 1024, max_workers: 32, stragglers: false, tree: true }
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn rejects_bad_values_by_name() {
        assert!(CoreConfig::new(3, 4, 1024, 32).unwrap_err().0.contains("width_bytes = 3"));
        assert!(CoreConfig::new(4, 0, 1024, 32).unwrap_err().0.contains("slots = 0"));
        assert!(CoreConfig::new(4, 65, 1024, 32).unwrap_err().0.contains("slots = 65"));
        assert!(CoreConfig::new(4, 4, 512, 32).unwrap_err().0.contains("max_payload = 512"));
        assert!(CoreConfig::new(4, 4, 1024, 33).unwrap_err().0.contains("max_workers = 33"));
        assert!(CoreConfig::new(1, 4, 256, 1).is_ok());
    }
}
