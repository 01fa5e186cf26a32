//! IPv4 headers (RFC 791). spotagg handles IHL 5 only; options are reported, not parsed.
//!
//! | bytes  | field |
//! |--------|-------|
//! | 0      | version (high 4 bits), IHL (low 4 bits, 32-bit words) |
//! | 1      | DSCP / ECN |
//! | 2..4   | total length |
//! | 4..6   | identification |
//! | 6..8   | flags (bit 14 DF, bit 13 MF) and fragment offset (low 13 bits) |
//! | 8      | TTL |
//! | 9      | protocol |
//! | 10..12 | header checksum |
//! | 12..16 | source address |
//! | 16..20 | destination address |

use super::{be16, checksum, Error, Result};
pub use std::net::Ipv4Addr;

/// Byte ranges of the IPv4 header.
pub mod field {
    use core::ops::Range;
    /// Version and IHL.
    pub const VER_IHL: usize = 0;
    /// DSCP and ECN.
    pub const DSCP_ECN: usize = 1;
    /// Total length.
    pub const LENGTH: Range<usize> = 2..4;
    /// Identification.
    pub const IDENT: Range<usize> = 4..6;
    /// Flags and fragment offset.
    pub const FLAGS_FRAG: Range<usize> = 6..8;
    /// Time to live.
    pub const TTL: usize = 8;
    /// Protocol.
    pub const PROTOCOL: usize = 9;
    /// Header checksum.
    pub const CHECKSUM: Range<usize> = 10..12;
    /// Source address.
    pub const SRC_ADDR: Range<usize> = 12..16;
    /// Destination address.
    pub const DST_ADDR: Range<usize> = 16..20;
}

/// Length of a header without options (IHL 5).
pub const HEADER_LEN: usize = 20;
/// TTL of every IPv4 header the switch builds.
pub const DEFAULT_TTL: u8 = 64;
/// The "more fragments" flag in the flags/fragment-offset word.
pub const FLAG_MF: u16 = 0x2000;
/// The "don't fragment" flag.
pub const FLAG_DF: u16 = 0x4000;
/// Mask of the fragment offset.
pub const FRAG_OFFSET_MASK: u16 = 0x1fff;

/// An IP protocol number; unknown values are kept.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct IpProtocol(pub u8);

impl IpProtocol {
    /// ICMP.
    pub const ICMP: IpProtocol = IpProtocol(1);
    /// UDP.
    pub const UDP: IpProtocol = IpProtocol(17);
}

packet_view!(
    /// A read/write view of an IPv4 packet.
    Ipv4Packet
);

impl<T: AsRef<[u8]>> Ipv4Packet<T> {
    /// Wraps a buffer whose fixed header is present, whose IHL covers at least the fixed
    /// header and fits, and whose total length covers the header and fits in the buffer
    /// (bytes past the total length are link padding and are ignored).
    pub fn new_checked(buffer: T) -> Result<Self> {
        let p = Self::with_len(buffer, HEADER_LEN)?;
        let len = p.buffer.as_ref().len();
        let hl = p.header_len();
        if hl < HEADER_LEN {
            return Err(Error::BadLength);
        }
        if hl > len {
            return Err(Error::Truncated);
        }
        let total = usize::from(p.total_len());
        if total < hl || total > len {
            return Err(Error::BadLength);
        }
        Ok(p)
    }

    /// Version field (4 for IPv4).
    pub fn version(&self) -> u8 {
        self.buffer.as_ref()[field::VER_IHL] >> 4
    }
    /// Header length in bytes (IHL × 4).
    pub fn header_len(&self) -> usize {
        usize::from(self.buffer.as_ref()[field::VER_IHL] & 0x0f) * 4
    }
    /// DSCP/ECN byte.
    pub fn dscp_ecn(&self) -> u8 {
        self.buffer.as_ref()[field::DSCP_ECN]
    }
    /// Total length (header and payload).
    pub fn total_len(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::LENGTH])
    }
    /// Identification.
    pub fn ident(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::IDENT])
    }
    /// Flags and fragment offset as one word.
    pub fn flags_frag(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::FLAGS_FRAG])
    }
    /// True when this is a fragment (MF set or a non-zero offset).
    pub fn is_fragment(&self) -> bool {
        self.flags_frag() & (FLAG_MF | FRAG_OFFSET_MASK) != 0
    }
    /// TTL.
    pub fn ttl(&self) -> u8 {
        self.buffer.as_ref()[field::TTL]
    }
    /// Protocol.
    pub fn protocol(&self) -> IpProtocol {
        IpProtocol(self.buffer.as_ref()[field::PROTOCOL])
    }
    /// Header checksum field.
    pub fn checksum(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::CHECKSUM])
    }
    /// Source address.
    pub fn src_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::SRC_ADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }
    /// Destination address.
    pub fn dst_addr(&self) -> Ipv4Addr {
        let b = &self.buffer.as_ref()[field::DST_ADDR];
        Ipv4Addr::new(b[0], b[1], b[2], b[3])
    }
    /// True when the header checksum verifies (over IHL × 4 bytes).
    pub fn verify_checksum(&self) -> bool {
        checksum::verify(&self.buffer.as_ref()[..self.header_len()])
    }
    /// The payload: from the end of the header to the total length.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[self.header_len()..usize::from(self.total_len())]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> Ipv4Packet<T> {
    /// Sets version 4 and the IHL for a header of `len` bytes.
    pub fn set_version_header_len(&mut self, len: usize) {
        self.buffer.as_mut()[field::VER_IHL] = 0x40 | (len / 4) as u8;
    }
    /// Sets DSCP/ECN.
    pub fn set_dscp_ecn(&mut self, v: u8) {
        self.buffer.as_mut()[field::DSCP_ECN] = v;
    }
    /// Sets the total length.
    pub fn set_total_len(&mut self, v: u16) {
        self.buffer.as_mut()[field::LENGTH].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets the identification.
    pub fn set_ident(&mut self, v: u16) {
        self.buffer.as_mut()[field::IDENT].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets flags and fragment offset.
    pub fn set_flags_frag(&mut self, v: u16) {
        self.buffer.as_mut()[field::FLAGS_FRAG].copy_from_slice(&v.to_be_bytes());
    }
    /// Sets the TTL.
    pub fn set_ttl(&mut self, v: u8) {
        self.buffer.as_mut()[field::TTL] = v;
    }
    /// Sets the protocol.
    pub fn set_protocol(&mut self, v: IpProtocol) {
        self.buffer.as_mut()[field::PROTOCOL] = v.0;
    }
    /// Sets the source address.
    pub fn set_src_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::SRC_ADDR].copy_from_slice(&a.octets());
    }
    /// Sets the destination address.
    pub fn set_dst_addr(&mut self, a: Ipv4Addr) {
        self.buffer.as_mut()[field::DST_ADDR].copy_from_slice(&a.octets());
    }
    /// Computes and stores the header checksum.
    pub fn fill_checksum(&mut self) {
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&[0, 0]);
        let hl = self.header_len();
        let c = checksum::compute(&self.buffer.as_ref()[..hl]);
        self.buffer.as_mut()[field::CHECKSUM].copy_from_slice(&c.to_be_bytes());
    }
    /// Mutable payload (header end to total length).
    pub fn payload_mut(&mut self) -> &mut [u8] {
        let (hl, tl) = (self.header_len(), usize::from(self.total_len()));
        &mut self.buffer.as_mut()[hl..tl]
    }
}

/// The meaning of an IPv4 header without options, as spotagg builds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Ipv4Repr {
    /// Source address.
    pub src: Ipv4Addr,
    /// Destination address.
    pub dst: Ipv4Addr,
    /// Protocol.
    pub protocol: IpProtocol,
    /// Payload length in bytes.
    pub payload_len: usize,
    /// TTL.
    pub ttl: u8,
}

impl Ipv4Repr {
    /// Reads a checked packet: version 4, IHL 5, verified checksum, not a fragment.
    pub fn parse<T: AsRef<[u8]>>(p: &Ipv4Packet<T>) -> Result<Ipv4Repr> {
        if p.version() != 4 || p.header_len() != HEADER_LEN || p.is_fragment() {
            return Err(Error::Unsupported);
        }
        if !p.verify_checksum() {
            return Err(Error::Checksum);
        }
        Ok(Ipv4Repr {
            src: p.src_addr(),
            dst: p.dst_addr(),
            protocol: p.protocol(),
            payload_len: usize::from(p.total_len()) - HEADER_LEN,
            ttl: p.ttl(),
        })
    }

    /// Length of the header this emits.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }

    /// Writes the header: IHL 5, DSCP/ECN 0, identification 0, no flags, checksum filled.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut Ipv4Packet<T>) {
        p.set_version_header_len(HEADER_LEN);
        p.set_dscp_ecn(0);
        p.set_total_len((HEADER_LEN + self.payload_len) as u16);
        p.set_ident(0);
        p.set_flags_frag(0);
        p.set_ttl(self.ttl);
        p.set_protocol(self.protocol);
        p.set_src_addr(self.src);
        p.set_dst_addr(self.dst);
        p.fill_checksum();
    }
}

#[cfg(test)]
mod test {
    use super::*;

    // 20-byte header: total length 30, ident 0, no flags, TTL 64, UDP,
    // 192.0.2.10 -> 192.0.2.1, checksum 0xf6c3.
    static HEADER: [u8; 30] = [
        0x45, 0x00, 0x00, 0x1e, 0x00, 0x00, 0x00, 0x00, 0x40, 0x11, 0xf6, 0xc3, //
        0xc0, 0x00, 0x02, 0x0a, 0xc0, 0x00, 0x02, 0x01, //
        0, 1, 2, 3, 4, 5, 6, 7, 8, 9,
    ];

    #[test]
    fn parse() {
        let p = Ipv4Packet::new_checked(&HEADER[..]).unwrap();
        assert!(p.verify_checksum());
        let r = Ipv4Repr::parse(&p).unwrap();
        assert_eq!(r.src, Ipv4Addr::new(192, 0, 2, 10));
        assert_eq!(r.dst, Ipv4Addr::new(192, 0, 2, 1));
        assert_eq!(r.protocol, IpProtocol::UDP);
        assert_eq!(r.payload_len, 10);
        assert_eq!(p.payload(), &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
    }

    #[test]
    fn emit() {
        let r = Ipv4Repr {
            src: Ipv4Addr::new(192, 0, 2, 10),
            dst: Ipv4Addr::new(192, 0, 2, 1),
            protocol: IpProtocol::UDP,
            payload_len: 10,
            ttl: 64,
        };
        let mut buf = [0xa5u8; 30];
        r.emit(&mut Ipv4Packet::new_unchecked(&mut buf[..]));
        assert_eq!(&buf[..20], &HEADER[..20]);
    }

    #[test]
    fn malformed() {
        let mut b = HEADER;
        b[11] ^= 1;
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p).unwrap_err(), Error::Checksum);
        assert_eq!(Ipv4Packet::new_checked(&HEADER[..19]).unwrap_err(), Error::Truncated);
        assert_eq!(Ipv4Packet::new_checked(&HEADER[..29]).unwrap_err(), Error::BadLength);
        let mut b = HEADER;
        b[0] = 0x46; // IHL 6
        let p = Ipv4Packet::new_checked(&b[..]).unwrap();
        assert_eq!(Ipv4Repr::parse(&p).unwrap_err(), Error::Unsupported);
        let mut b = HEADER;
        b[6] = 0x20; // MF
        assert!(Ipv4Packet::new_checked(&b[..]).unwrap().is_fragment());
        let mut b = HEADER;
        b[0] = 0x44; // IHL 4
        assert_eq!(Ipv4Packet::new_checked(&b[..]).unwrap_err(), Error::BadLength);
    }
}
