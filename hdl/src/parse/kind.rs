//! The descriptor kinds, the parser's verdict on a frame as the aggregator takes it: 0..=15 the
//! drop reasons in `DropReason` order, then the frames the aggregator acts on (the
//! [`crate::frame_parser`] module doc says which is which). The frame checks
//! ([`crate::frame_checks::FrameChecks`]) name a frame's kind, the parser hands it over, the
//! aggregator acts on it.

use rust_hdl::prelude::*;
use spotagg_driver::DropReason;

/// Descriptor kind of a valid contribution (the kinds below it are the drop reasons).
pub const KIND_CONTRIBUTION: u64 = DropReason::CORE_COUNT as u64;
/// Descriptor kind of an ARP request for the switch: the even one of the next two kinds.
pub const KIND_ARP: u64 = (KIND_CONTRIBUTION + 2) & !1;
/// Descriptor kind of an ICMP echo request to the switch: the odd one.
pub const KIND_ICMP: u64 = 2 * KIND_CONTRIBUTION + 3 - KIND_ARP;
/// Descriptor kind of a valid session message (docs/switch.md §2.1).
pub const KIND_SESSION: u64 = KIND_ARP + 1;
/// Descriptor kind of a parent result (docs/switch.md §6: from the parent's IPv4 address, the
/// checks of §1 7.1–7.4 and 8.1–8.5 passed; `msg_type` 1 or 8 alike).
pub const KIND_PARENT: u64 = KIND_SESSION + 1;
const _: () = assert!(KIND_ARP.is_multiple_of(2) && !KIND_ICMP.is_multiple_of(2) && KIND_ICMP < 32 && KIND_ARP < 32);
const _: () = assert!(KIND_SESSION < 32 && KIND_SESSION != KIND_ICMP);
const _: () = assert!(KIND_PARENT < 32 && KIND_PARENT != KIND_ICMP && KIND_PARENT != KIND_ARP);

/// A descriptor kind as a 5-bit constant of the generated Verilog.
pub(crate) fn kind(value: u64) -> Constant<Bits<5>> {
    Constant::new(value.into())
}
