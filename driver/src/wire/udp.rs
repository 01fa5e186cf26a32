//! UDP headers (RFC 768). The switch sends a zero checksum (allowed over IPv4) and does not
//! check the checksum of what it receives.
//!
//! | bytes | field |
//! |-------|-------|
//! | 0..2  | source port |
//! | 2..4  | destination port |
//! | 4..6  | length (header and payload) |
//! | 6..8  | checksum (0: none) |

use super::{be16, Error, Result};

/// Byte ranges of the UDP header.
pub mod field {
    use core::ops::Range;
    /// Source port.
    pub const SRC_PORT: Range<usize> = 0..2;
    /// Destination port.
    pub const DST_PORT: Range<usize> = 2..4;
    /// Length.
    pub const LENGTH: Range<usize> = 4..6;
    /// Checksum.
    pub const CHECKSUM: Range<usize> = 6..8;
}

/// Length of the UDP header.
pub const HEADER_LEN: usize = 8;

packet_view!(
    /// A read/write view of a UDP datagram.
    UdpPacket
);

impl<T: AsRef<[u8]>> UdpPacket<T> {
    /// Wraps a buffer that holds the header and exactly the length field's bytes
    /// (the buffer is the IPv4 payload, so the two must agree).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::with_len(buffer, HEADER_LEN)?;
        if usize::from(p.len()) != p.buffer.as_ref().len() {
            return Err(Error::BadLength);
        }
        Ok(p)
    }
    /// Source port.
    pub fn src_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::SRC_PORT])
    }
    /// Destination port.
    pub fn dst_port(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::DST_PORT])
    }
    /// Length field.
    pub fn len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }
    /// True when the length field is below the header length.
    pub fn is_empty(&self) -> bool {
        usize::from(self.len()) <= HEADER_LEN
    }
    /// Checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }
    /// Payload.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[HEADER_LEN..usize::from(self.len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> UdpPacket<T> {
    /// Sets the source port.
    pub fn set_src_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::SRC_PORT].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets the destination port.
    pub fn set_dst_port(&mut self, v: u16) {
        self.buffer.as_mut()[field::DST_PORT].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets the length.
    pub fn set_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets the checksum field.
    pub fn set_checksum(&mut self, v: u16) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&v.to_be_bytes());
    }
    /// Mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let l = usize::from(self.len());
        &mut self.buffer.as_mut()[HEADER_LEN..l]
    }
}

/// The meaning of a UDP header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UdpRepr {
    /// Source port.
    pub src_port: u16,
    /// Destination port.
    pub dst_port: u16,
    /// Payload length.
    pub payload_len: usize,
}

impl UdpRepr {
    /// Reads a checked datagram.
    pub fn parse<T: AsRef<[u8]>>(p: &UdpPacket<T>) -> UdpRepr {
        UdpRepr { src_port: p.src_port(), dst_port: p.dst_port(), payload_len: usize::from(p.len()) - HEADER_LEN }
    }
    /// Length of the header.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }
    /// Writes the header with checksum 0 (none).
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut UdpPacket<T>) {
        p.set_src_port(self.src_port);
        p.set_dst_port(self.dst_port);
        p.set_len((HEADER_LEN + self.payload_len) as u16);
        p.set_checksum(0);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    static DGRAM: [u8; 12] = [0xbe, 0xe0, 0xbe, 0xe1, 0x00, 0x0c, 0x00, 0x00, 1, 2, 3, 4];

    #[test]
    fn parse_emit() {
        let p = UdpPacket::new_checked(&DGRAM[..]).unwrap();
        let r = UdpRepr::parse(&p);
        assert_eq!(r, UdpRepr { src_port: 0xbee0, dst_port: 0xbee1, payload_len: 4 });
        assert_eq!(p.payload(), &[1, 2, 3, 4]);
        let mut buf = [0xa5u8; 12];
        let mut q = UdpPacket::new_unchecked(&mut buf[..]);
        r.emit(&mut q);
        q.payload_mut().copy_from_slice(&[1, 2, 3, 4]);
        assert_eq!(buf, DGRAM);
    }

    #[test]
    fn lengths() {
        assert_eq!(UdpPacket::new_checked(&DGRAM[..7]).unwrap_err(), Error::Truncated);
        assert_eq!(UdpPacket::new_checked(&DGRAM[..11]).unwrap_err(), Error::BadLength);
    }
}
