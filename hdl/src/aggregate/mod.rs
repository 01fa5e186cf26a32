//! The aggregation of docs/switch.md §2: [`aggregator::Aggregator`], the entry point, takes the
//! parser's decided frames one at a time; the scoreboard ([`scoreboard::Scoreboard`]), the
//! session state ([`session::Session`]), the slot memory ([`slot_memory::SlotMemory`]) and the
//! lane adders ([`lane_adders::LaneAdders`]) it drives are blocks of the core beside it, the
//! element pass ([`element_pass::ElementPass`]) a block inside it. The straggler counters
//! ([`straggler::Stragglers`], §7) watch the scoreboard's commits.

pub mod aggregator;
pub mod element_pass;
pub mod lane_adders;
pub mod scoreboard;
pub mod session;
pub mod slot_memory;
pub mod straggler;
