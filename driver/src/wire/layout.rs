//! Where each header of a switch's frame begins: the frame layout of docs/switch.md, as byte
//! offsets from the first byte of the Ethernet header (no preamble, no FCS).
//!
//! | frame bytes | header |
//! |-------------|--------|
//! | 0..14       | Ethernet II |
//! | 12..16      | 802.1Q tag of a tagged frame (TPID in the EtherType's place, TCI); all that follows it is 4 bytes later |
//! | 14..42      | ARP (Ethernet/IPv4) |
//! | 14..34      | IPv4, IHL 5 |
//! | 34..42      | ICMP echo header / UDP header |
//! | 42..50      | SwitchML header |
//! | 50, 51      | exponents `e0`, `e1` |
//! | 52..52+P    | payload, k int32 big-endian |
//!
//! Every offset is derived from the header modules' field tables: this is the one definition
//! the reference switch, the simulators and the HDL (`spotagg_hdl::wire_layout`) use.

use super::{arp, ethernet, ipv4, switchml, udp, vlan};

/// Offset of a tagged frame's 802.1Q tag (its TPID takes the place of the EtherType).
pub const TAG_OFFSET: usize = ethernet::field::ETHERTYPE.start;
/// Length of the tag: TPID and TCI.
pub const TAG_LEN: usize = (ethernet::field::ETHERTYPE.end - ethernet::field::ETHERTYPE.start)
    + (vlan::field::TCI.end - vlan::field::TCI.start);
/// Offset of the IPv4 (or ARP) header in a frame.
pub const IP_OFFSET: usize = ethernet::HEADER_LEN;
/// Offset of the UDP (or ICMP) header in a frame.
pub const L4_OFFSET: usize = IP_OFFSET + ipv4::HEADER_LEN;
/// Offset of the SwitchML header in a frame (the UDP payload's).
pub const SWITCHML_OFFSET: usize = L4_OFFSET + udp::HEADER_LEN;
/// Offset of the payload in a contribution or result frame.
pub const PAYLOAD_OFFSET: usize = SWITCHML_OFFSET + switchml::PREAMBLE_LEN;
/// Length of an ARP frame without link padding.
pub const ARP_FRAME_LEN: usize = IP_OFFSET + arp::PACKET_LEN;
/// UDP length of a SwitchML message without payload (UDP header, SwitchML header, exponents).
pub const SWITCHML_MIN_UDP_LEN: usize = udp::HEADER_LEN + switchml::PREAMBLE_LEN;

#[cfg(test)]
mod test {
    use super::*;

    /// The table of the module doc.
    #[test]
    fn offsets_are_those_of_the_table() {
        assert_eq!((TAG_OFFSET, TAG_LEN), (12, 4));
        assert_eq!((IP_OFFSET, L4_OFFSET, SWITCHML_OFFSET, PAYLOAD_OFFSET), (14, 34, 42, 52));
        assert_eq!((ARP_FRAME_LEN, SWITCHML_MIN_UDP_LEN), (42, 18));
    }
}
