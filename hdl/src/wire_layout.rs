//! The wire layout the blocks are written against, checked at compile time against the one
//! definition in `spotagg_driver::wire` (its field tables, and `spotagg_driver::wire::layout`
//! for where each header begins).
//!
//! rust-hdl kernels (`#[hdl_gen]`) cannot name Rust constants, so the parser, the aggregator
//! and the result builder use numbers: word `J` of a frame holds bytes `4J..4J+4`. Every
//! number they rely on is asserted here equal to the literal the kernels use; a change of the
//! wire format fails the build of this crate. What only the HDL needs (a count of 32-bit
//! words) is derived here.

use spotagg_driver::counters::DropReason;
use spotagg_driver::wire::layout::{ARP_FRAME_LEN, L4_OFFSET, PAYLOAD_OFFSET, SWITCHML_OFFSET};
use spotagg_driver::wire::{arp, icmp, ipv4, switchml, EtherType, IpProtocol};

/// 32-bit words before the payload (captured header words h0..h12).
pub const HEADER_WORDS: usize = PAYLOAD_OFFSET / 4;

const fn check(ok: bool) {
    assert!(ok, "the HDL's wire layout no longer matches spotagg_driver::wire");
}

const _: () = {
    check(PAYLOAD_OFFSET == 52 && PAYLOAD_OFFSET.is_multiple_of(4) && HEADER_WORDS == 13);
    check(ARP_FRAME_LEN == 42); // 11 words, 2 bytes in the last
    check(L4_OFFSET == 34 && SWITCHML_OFFSET == 42);
    check(EtherType::IPV4.0 == 0x0800 && EtherType::ARP.0 == 0x0806);
    check(ipv4::field::DST_ADDR.start == 16 && ipv4::field::SRC_ADDR.start == 12);
    check(ipv4::DEFAULT_TTL == 0x40);
    check(IpProtocol::UDP.0 == 17 && IpProtocol::ICMP.0 == 1);
    check(ipv4::FLAG_MF | ipv4::FRAG_OFFSET_MASK == 0x3fff);
    check(icmp::ECHO_REQUEST == 8 && icmp::ECHO_REPLY == 0 && icmp::field::CHECKSUM.start == 2);
    check(arp::field::TPA.start == 24 && arp::field::SHA.start == 8 && arp::field::SPA.start == 14);
    check(switchml::UDP_PORT_BASE == 0xBEE0 && switchml::UDP_PORT_MASK == 0xFFF0);
    check(switchml::MSG_TYPE_CONTRIBUTION == 1 && switchml::POOL_SET_BIT == 0x8000);
    // Session messages (docs/switch.md §2.1): msg_type 8, the epoch in `job_number` (byte 43).
    check(switchml::MSG_TYPE_SESSION == 8 && switchml::field::JOB == 1);
    check(switchml::field::E0 == 8 && switchml::field::E1 == 9 && switchml::field::POOL_INDEX.start == 6);
    // Descriptor kinds 0..=15 are the drop reasons, in counter order (15, stale_session, is
    // filed by the aggregator from the session state, never by the parser).
    check(DropReason::CORE_COUNT == 16);
    check(DropReason::Truncated as usize == 0 && DropReason::WrongDstMac as usize == 1);
    check(DropReason::WrongVlan as usize == 2 && DropReason::NotIpv4Udp as usize == 3);
    check(DropReason::IpOptions as usize == 4 && DropReason::IpChecksum as usize == 5);
    check(DropReason::BadLength as usize == 6 && DropReason::IpFragment as usize == 7);
    check(DropReason::WrongDstIp as usize == 8 && DropReason::BadPort as usize == 9);
    check(DropReason::UnknownSource as usize == 10 && DropReason::BadMsgType as usize == 11);
    check(DropReason::BadSize as usize == 12 && DropReason::BadSlot as usize == 13);
    check(DropReason::WrongSrcPort as usize == 14 && DropReason::StaleSession as usize == 15);
};
