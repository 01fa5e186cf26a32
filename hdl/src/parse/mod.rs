//! The receive side of a core: a frame's 802.1Q tag taken out ([`vlan::VlanUntag`]), the frame
//! buffered and classified by the checks of docs/switch.md §1 ([`frame_parser::FrameParser`],
//! the entry point, with its [`frame_checks::FrameChecks`] and [`worker_search::WorkerSearch`]),
//! and the decided frame handed to the aggregator as a descriptor: its kind ([`kind`]) and its
//! header words ([`received_header`]). [`vlan::VlanTag`], the untagger's counterpart, tags the
//! frames the core sends.

pub mod frame_checks;
pub mod frame_parser;
pub mod kind;
pub mod received_header;
pub mod vlan;
pub mod worker_search;
