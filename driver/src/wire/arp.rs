//! ARP for IPv4 over Ethernet (RFC 826).
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0..2   | hardware type (1: Ethernet) |
//! | 2..4   | protocol type (0x0800: IPv4) |
//! | 4      | hardware address length (6) |
//! | 5      | protocol address length (4) |
//! | 6..8   | operation (1 request, 2 reply) |
//! | 8..14  | sender hardware address |
//! | 14..18 | sender protocol address |
//! | 18..24 | target hardware address |
//! | 24..28 | target protocol address |

use super::ethernet::MacAddr;
use super::{be16, Error, Result};
use std::net::Ipv4Addr;

/// Byte ranges of an Ethernet/IPv4 ARP packet.
pub mod field {
    use core::ops::Range;
    /// Hardware type.
    pub const HTYPE: Range<usize> = 0..2;
    /// Protocol type.
    pub const PTYPE: Range<usize> = 2..4;
    /// Hardware address length.
    pub const HLEN: usize = 4;
    /// Protocol address length.
    pub const PLEN: usize = 5;
    /// Operation.
    pub const OPER: Range<usize> = 6..8;
    /// Sender hardware address.
    pub const SHA: Range<usize> = 8..14;
    /// Sender protocol address.
    pub const SPA: Range<usize> = 14..18;
    /// Target hardware address.
    pub const THA: Range<usize> = 18..24;
    /// Target protocol address.
    pub const TPA: Range<usize> = 24..28;
}

/// Length of an Ethernet/IPv4 ARP packet.
pub const PACKET_LEN: usize = 28;

/// An ARP operation; unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpOperation(pub u16);

impl ArpOperation {
    /// Request.
    pub const REQUEST: ArpOperation = ArpOperation(1);
    /// Reply.
    pub const REPLY: ArpOperation = ArpOperation(2);
}

packet_view!(
    /// A read/write view of an ARP packet.
    ArpPacket,
    min_len = PACKET_LEN,
    "Wraps a buffer of at least 28 bytes (Ethernet padding may follow)."
);

fn ip(b: &[u8]) -> Ipv4Addr {
    Ipv4Addr::new(b[0], b[1], b[2], b[3])
}

impl<T: AsRef<[u8]>> ArpPacket<T> {
    /// Hardware type.
    pub fn htype(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::HTYPE])
    }
    /// Protocol type.
    pub fn ptype(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::PTYPE])
    }
    /// Hardware address length.
    pub fn hlen(&self) -> u8 {
        self.buffer.as_ref()[field::HLEN]
    }
    /// Protocol address length.
    pub fn plen(&self) -> u8 {
        self.buffer.as_ref()[field::PLEN]
    }
    /// Operation.
    pub fn operation(&self) -> ArpOperation {
        ArpOperation(be16(&self.buffer.as_ref()[field::OPER]))
    }
    /// Sender hardware address.
    pub fn sha(&self) -> MacAddr {
        MacAddr::from_bytes(&self.buffer.as_ref()[field::SHA])
    }
    /// Sender protocol address.
    pub fn spa(&self) -> Ipv4Addr {
        ip(&self.buffer.as_ref()[field::SPA])
    }
    /// Target hardware address.
    pub fn tha(&self) -> MacAddr {
        MacAddr::from_bytes(&self.buffer.as_ref()[field::THA])
    }
    /// Target protocol address.
    pub fn tpa(&self) -> Ipv4Addr {
        ip(&self.buffer.as_ref()[field::TPA])
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> ArpPacket<T> {
    fn put(&mut self, r: core::ops::Range<usize>, v: &[u8]) {
        self.buffer.as_mut()[r].copy_from_slice(v);
    }
    /// Sets hardware type, protocol type and address lengths for Ethernet/IPv4.
    pub fn set_ethernet_ipv4(&mut self) {
        self.put(field::HTYPE, &1u16.to_be_bytes());
        self.put(field::PTYPE, &0x0800u16.to_be_bytes());
        self.buffer.as_mut()[field::HLEN] = 6;
        self.buffer.as_mut()[field::PLEN] = 4;
    }
    /// Sets the operation.
    pub fn set_operation(&mut self, op: ArpOperation) {
        self.put(field::OPER, &op.0.to_be_bytes());
    }
    /// Sets the sender addresses.
    pub fn set_sender(&mut self, mac: MacAddr, ip: Ipv4Addr) {
        self.put(field::SHA, &mac.0);
        self.put(field::SPA, &ip.octets());
    }
    /// Sets the target addresses.
    pub fn set_target(&mut self, mac: MacAddr, ip: Ipv4Addr) {
        self.put(field::THA, &mac.0);
        self.put(field::TPA, &ip.octets());
    }
}

/// The meaning of an Ethernet/IPv4 ARP packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ArpRepr {
    /// Operation.
    pub operation: ArpOperation,
    /// Sender MAC.
    pub sha: MacAddr,
    /// Sender IPv4.
    pub spa: Ipv4Addr,
    /// Target MAC.
    pub tha: MacAddr,
    /// Target IPv4.
    pub tpa: Ipv4Addr,
}

impl ArpRepr {
    /// Reads a checked packet; anything but Ethernet/IPv4 addresses is `Unsupported`.
    pub fn parse<T: AsRef<[u8]>>(p: &ArpPacket<T>) -> Result<ArpRepr> {
        if p.htype() != 1 || p.ptype() != 0x0800 || p.hlen() != 6 || p.plen() != 4 {
            return Err(Error::Unsupported);
        }
        Ok(ArpRepr { operation: p.operation(), sha: p.sha(), spa: p.spa(), tha: p.tha(), tpa: p.tpa() })
    }
    /// Length of the packet.
    pub const fn buffer_len(&self) -> usize {
        PACKET_LEN
    }
    /// Writes the packet.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut ArpPacket<T>) {
        p.set_ethernet_ipv4();
        p.set_operation(self.operation);
        p.set_sender(self.sha, self.spa);
        p.set_target(self.tha, self.tpa);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    static REQUEST: [u8; 28] = [
        0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, //
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x00, 0xc0, 0x00, 0x02, 0x0a, //
        0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0x00, 0x02, 0x01,
    ];

    #[test]
    fn parse_emit() {
        let p = ArpPacket::new_checked(&REQUEST[..]).unwrap();
        let r = ArpRepr::parse(&p).unwrap();
        assert_eq!(r.operation, ArpOperation::REQUEST);
        assert_eq!(r.sha, "02:00:5a:00:01:00".parse().unwrap());
        assert_eq!(r.spa, Ipv4Addr::new(192, 0, 2, 10));
        assert_eq!(r.tha, MacAddr([0; 6]));
        assert_eq!(r.tpa, Ipv4Addr::new(192, 0, 2, 1));
        let mut buf = [0xa5u8; 28];
        r.emit(&mut ArpPacket::new_unchecked(&mut buf[..]));
        assert_eq!(buf, REQUEST);
    }

    #[test]
    fn unsupported_and_short() {
        assert_eq!(ArpPacket::new_checked(&REQUEST[..27]).unwrap_err(), Error::Truncated);
        let mut b = REQUEST;
        b[1] = 6; // IEEE 802 hardware
        assert_eq!(ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()).unwrap_err(), Error::Unsupported);
        let mut b = REQUEST;
        b[7] = 9;
        let r = ArpRepr::parse(&ArpPacket::new_checked(&b[..]).unwrap()).unwrap();
        assert_eq!(r.operation, ArpOperation(9));
    }
}
