//! Ethernet II frames (no preamble, no FCS: the MAC strips and adds those).
//!
//! | bytes  | field      |
//! |--------|------------|
//! | 0..6   | destination MAC |
//! | 6..12  | source MAC |
//! | 12..14 | EtherType  |
//! | 14..   | payload    |

use super::{Error, Result};
use core::fmt;
use core::str::FromStr;

/// Byte ranges of the Ethernet II header.
pub mod field {
    use core::ops::{Range, RangeFrom};
    /// Destination MAC address.
    pub const DESTINATION: Range<usize> = 0..6;
    /// Source MAC address.
    pub const SOURCE: Range<usize> = 6..12;
    /// EtherType.
    pub const ETHERTYPE: Range<usize> = 12..14;
    /// Payload.
    pub const PAYLOAD: RangeFrom<usize> = 14..;
}

/// Length of the Ethernet II header.
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// Shortest frame on the wire without FCS; shorter frames are padded by the MAC.
pub const MIN_FRAME_LEN: usize = 60;

/// A 48-bit MAC address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct MacAddr(pub [u8; 6]);

impl MacAddr {
    /// ff:ff:ff:ff:ff:ff.
    pub const BROADCAST: MacAddr = MacAddr([0xff; 6]);

    /// Reads an address from the first six bytes of `bytes`.
    pub fn from_bytes(bytes: &[u8]) -> MacAddr {
        let mut a = [0; 6];
        a.copy_from_slice(&bytes[..6]);
        MacAddr(a)
    }

    /// The address as a 48-bit number (first byte most significant), as the HDL holds it.
    pub fn to_u64(self) -> u64 {
        self.0.iter().fold(0, |acc, &b| (acc << 8) | u64::from(b))
    }
}

impl fmt::Display for MacAddr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let b = self.0;
        write!(f, "{:02x}:{:02x}:{:02x}:{:02x}:{:02x}:{:02x}", b[0], b[1], b[2], b[3], b[4], b[5])
    }
}

/// Error parsing a MAC address from text.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("not a MAC address (expected six hex bytes separated by ':', like 02:00:5a:00:00:01)")]
pub struct ParseMacError;

impl FromStr for MacAddr {
    type Err = ParseMacError;
    fn from_str(s: &str) -> core::result::Result<Self, Self::Err> {
        let mut a = [0u8; 6];
        let mut parts = s.split([':', '-']);
        for byte in &mut a {
            let p = parts.next().ok_or(ParseMacError)?;
            if p.len() != 2 {
                return Err(ParseMacError);
            }
            *byte = u8::from_str_radix(p, 16).map_err(|_| ParseMacError)?;
        }
        if parts.next().is_some() {
            return Err(ParseMacError);
        }
        Ok(MacAddr(a))
    }
}

/// An EtherType; unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct EtherType(pub u16);

impl EtherType {
    /// IPv4.
    pub const IPV4: EtherType = EtherType(0x0800);
    /// ARP.
    pub const ARP: EtherType = EtherType(0x0806);
}

packet_view!(
    /// A read/write view of an Ethernet II frame.
    EthernetFrame,
    min_len = HEADER_LEN,
    "Wraps a buffer that holds at least the header."
);

impl<T: AsRef<[u8]>> EthernetFrame<T> {
    /// Destination MAC.
    pub fn dst(&self) -> MacAddr {
        MacAddr::from_bytes(&self.buffer.as_ref()[field::DESTINATION])
    }

    /// Source MAC.
    pub fn src(&self) -> MacAddr {
        MacAddr::from_bytes(&self.buffer.as_ref()[field::SOURCE])
    }

    /// EtherType.
    pub fn ethertype(&self) -> EtherType {
        let b = &self.buffer.as_ref()[field::ETHERTYPE];
        EtherType(u16::from_be_bytes([b[0], b[1]]))
    }

    /// Payload (everything after the header, padding included).
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> EthernetFrame<T> {
    /// Sets the destination MAC.
    pub fn set_dst(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::DESTINATION].copy_from_slice(&a.0);
    }
    /// Sets the source MAC.
    pub fn set_src(&mut self, a: MacAddr) {
        self.buffer.as_mut()[field::SOURCE].copy_from_slice(&a.0);
    }
    /// Sets the EtherType.
    pub fn set_ethertype(&mut self, t: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.0.to_be_bytes());
    }
    /// Mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The meaning of an Ethernet II header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EthernetRepr {
    /// Destination MAC.
    pub dst: MacAddr,
    /// Source MAC.
    pub src: MacAddr,
    /// EtherType.
    pub ethertype: EtherType,
}

impl EthernetRepr {
    /// Reads the header of a checked frame.
    pub fn parse<T: AsRef<[u8]>>(frame: &EthernetFrame<T>) -> EthernetRepr {
        EthernetRepr { dst: frame.dst(), src: frame.src(), ethertype: frame.ethertype() }
    }

    /// Length of the header this emits.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, frame: &mut EthernetFrame<T>) {
        frame.set_dst(self.dst);
        frame.set_src(self.src);
        frame.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    static FRAME: [u8; 16] = [
        0x02, 0x00, 0x5a, 0x00, 0x00, 0x01, // dst
        0x02, 0x00, 0x5a, 0x00, 0x01, 0x00, // src
        0x08, 0x00, // IPv4
        0xaa, 0xbb,
    ];

    #[test]
    fn parse_and_emit() {
        let f = EthernetFrame::new_checked(&FRAME[..]).unwrap();
        let r = EthernetRepr::parse(&f);
        assert_eq!(r.dst, "02:00:5a:00:00:01".parse().unwrap());
        assert_eq!(r.src, MacAddr([0x02, 0x00, 0x5a, 0x00, 0x01, 0x00]));
        assert_eq!(r.ethertype, EtherType::IPV4);
        assert_eq!(f.payload(), &[0xaa, 0xbb]);
        let mut buf = [0xa5u8; 16];
        let mut g = EthernetFrame::new_unchecked(&mut buf[..]);
        r.emit(&mut g);
        g.payload_mut().copy_from_slice(&[0xaa, 0xbb]);
        assert_eq!(buf, FRAME);
    }

    #[test]
    fn short_and_unknown() {
        assert_eq!(EthernetFrame::new_checked(&FRAME[..13]).unwrap_err(), Error::Truncated);
        let mut b = FRAME;
        b[12] = 0x86;
        b[13] = 0xdd;
        assert_eq!(EthernetFrame::new_checked(&b[..]).unwrap().ethertype(), EtherType(0x86dd));
    }

    #[test]
    fn mac_text() {
        let m: MacAddr = "02:00:5A:00:01:ff".parse().unwrap();
        assert_eq!(m.to_string(), "02:00:5a:00:01:ff");
        assert_eq!(m.to_u64(), 0x02005a0001ff);
        for bad in ["", "02:00:5a:00:01", "02:00:5a:00:01:ff:00", "02:00:5a:00:01:fg", "2:0:5a:0:1:ff"] {
            assert!(bad.parse::<MacAddr>().is_err(), "{bad}");
        }
    }
}
