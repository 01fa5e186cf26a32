//! The controller's messages: SwitchML's `switchml_proto` (p4lang/p4app-switchML,
//! `protos/switchml.proto`) field for field, with spotagg's extensions numbered from 100
//! (docs/controller.md §6), which a reader built from SwitchML's file skips.
//!
//! Encodings (docs/controller.md §2): `mac` is the MAC's six bytes as a 48-bit big-endian
//! number, `ipv4` the address as a number (`a.b.c.d` is `a << 24 | b << 16 | c << 8 | d`).
//! Fields named as in SwitchML's file are documented there and on docs/controller.md's page.
#![allow(missing_docs)]

use spotagg_driver::wire::{Ipv4Addr, MacAddr, PayloadSize};

/// SwitchML's `PacketSize`: the payload bytes of a packet (not a frame length).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, prost::Enumeration)]
#[repr(i32)]
pub enum PacketSize {
    /// 128 B of payload.
    Mtu128 = 0,
    /// 256 B.
    Mtu256 = 1,
    /// 512 B.
    Mtu512 = 2,
    /// 1024 B.
    Mtu1024 = 3,
}

impl PacketSize {
    /// The payload size it names.
    pub fn payload(self) -> PayloadSize {
        match self {
            PacketSize::Mtu128 => PayloadSize::B128,
            PacketSize::Mtu256 => PayloadSize::B256,
            PacketSize::Mtu512 => PayloadSize::B512,
            PacketSize::Mtu1024 => PayloadSize::B1024,
        }
    }

    /// The code of a payload size.
    pub fn of(p: PayloadSize) -> PacketSize {
        match p {
            PayloadSize::B128 => PacketSize::Mtu128,
            PayloadSize::B256 => PacketSize::Mtu256,
            PayloadSize::B512 => PacketSize::Mtu512,
            PayloadSize::B1024 => PacketSize::Mtu1024,
        }
    }
}

/// `RdmaSessionRequest` (answered `UNIMPLEMENTED`: spotagg serves the UDP protocol only).
#[derive(Clone, PartialEq, prost::Message)]
pub struct RdmaSessionRequest {
    #[prost(uint32, tag = "1")]
    pub session_id: u32,
    #[prost(uint32, tag = "2")]
    pub rank: u32,
    #[prost(uint32, tag = "3")]
    pub num_workers: u32,
    #[prost(uint64, tag = "4")]
    pub mac: u64,
    #[prost(uint32, tag = "5")]
    pub ipv4: u32,
    #[prost(uint32, tag = "6")]
    pub rkey: u32,
    #[prost(enumeration = "PacketSize", tag = "7")]
    pub packet_size: i32,
    #[prost(uint32, tag = "8")]
    pub message_size: u32,
    #[prost(uint32, repeated, tag = "9")]
    pub qpns: Vec<u32>,
    #[prost(uint32, repeated, tag = "10")]
    pub psns: Vec<u32>,
}

/// `RdmaSessionResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct RdmaSessionResponse {
    #[prost(uint64, tag = "1")]
    pub session_id: u64,
    #[prost(uint64, tag = "2")]
    pub mac: u64,
    #[prost(uint32, tag = "3")]
    pub ipv4: u32,
    #[prost(uint32, tag = "4")]
    pub rkey: u32,
    #[prost(uint32, repeated, tag = "5")]
    pub qpns: Vec<u32>,
    #[prost(uint32, repeated, tag = "6")]
    pub psns: Vec<u32>,
}

/// `UdpSessionRequest`: a worker registers its rank of a session.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UdpSessionRequest {
    #[prost(uint64, tag = "1")]
    pub session_id: u64,
    #[prost(uint32, tag = "2")]
    pub rank: u32,
    #[prost(uint32, tag = "3")]
    pub num_workers: u32,
    #[prost(uint64, tag = "4")]
    pub mac: u64,
    #[prost(uint32, tag = "5")]
    pub ipv4: u32,
    #[prost(enumeration = "PacketSize", tag = "7")]
    pub packet_size: i32,
    /// spotagg: the worker's first UDP source port (0: the controller's default).
    #[prost(uint32, tag = "100")]
    pub worker_port: u32,
    /// spotagg: ports from `worker_port` it may send from (0: the controller's default).
    #[prost(uint32, tag = "101")]
    pub worker_ports: u32,
    /// spotagg: the job takes 16-bit lanes (docs/switch.md §9); every rank must agree.
    #[prost(bool, tag = "102")]
    pub lanes16: bool,
}

/// `UdpSessionResponse`: the switch's addresses.
#[derive(Clone, PartialEq, prost::Message)]
pub struct UdpSessionResponse {
    #[prost(uint64, tag = "1")]
    pub session_id: u64,
    #[prost(uint64, tag = "2")]
    pub mac: u64,
    #[prost(uint32, tag = "3")]
    pub ipv4: u32,
    /// spotagg: the switch's first UDP port.
    #[prost(uint32, tag = "100")]
    pub switch_port: u32,
    /// spotagg: the completed job as a job file's text (empty before the session completes).
    #[prost(string, tag = "101")]
    pub job_toml: String,
}

/// `BarrierRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BarrierRequest {
    #[prost(uint32, tag = "1")]
    pub num_workers: u32,
    /// spotagg: scope the barrier to a session (0: global, as SwitchML's).
    #[prost(uint64, tag = "100")]
    pub session_id: u64,
}

/// `BarrierResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BarrierResponse {}

/// `BroadcastRequest`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BroadcastRequest {
    #[prost(uint64, tag = "1")]
    pub value: u64,
    #[prost(uint32, tag = "2")]
    pub rank: u32,
    #[prost(uint32, tag = "3")]
    pub num_workers: u32,
    #[prost(uint32, tag = "4")]
    pub root: u32,
    /// spotagg: scope the broadcast to a session (0: global).
    #[prost(uint64, tag = "100")]
    pub session_id: u64,
}

/// `BroadcastResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct BroadcastResponse {
    #[prost(uint64, tag = "1")]
    pub value: u64,
}

/// `spotagg_proto.EndSessionRequest`: a rank ends its session.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EndSessionRequest {
    #[prost(uint64, tag = "1")]
    pub session_id: u64,
    #[prost(uint32, tag = "2")]
    pub rank: u32,
}

/// `spotagg_proto.EndSessionResponse`.
#[derive(Clone, PartialEq, prost::Message)]
pub struct EndSessionResponse {}

/// A MAC as SwitchML's `mac` field carries it.
pub fn mac_to_u64(m: MacAddr) -> u64 {
    m.0.iter().fold(0, |a, &b| a << 8 | u64::from(b))
}

/// The MAC of a `mac` field (its low 48 bits).
pub fn mac_from_u64(v: u64) -> MacAddr {
    let b = v.to_be_bytes();
    MacAddr([b[2], b[3], b[4], b[5], b[6], b[7]])
}

/// An IPv4 address as SwitchML's `ipv4` field carries it.
pub fn ipv4_to_u32(a: Ipv4Addr) -> u32 {
    u32::from_be_bytes(a.octets())
}

/// The address of an `ipv4` field.
pub fn ipv4_from_u32(v: u32) -> Ipv4Addr {
    Ipv4Addr::from(v.to_be_bytes())
}
