//! IEEE 802.1Q VLAN tags: the four bytes after the source MAC address of a tagged frame.
//!
//! The view covers the tag and what follows it, i.e. the Ethernet payload of a frame whose
//! EtherType is [`TPID`] (0x8100).
//!
//! | bytes | field |
//! |-------|-------|
//! | 0..2  | TCI: PCP (bits 15..13), DEI (bit 12), VID (bits 11..0) |
//! | 2..4  | the inner EtherType, or an 802.3 length (<= 1500) when LLC follows |
//! | 4..   | payload |
//!
//! VID 0 (priority tag) and 0xFFF (reserved) are kept as read; [`VlanRepr::parse`] refuses
//! 0xFFF with [`Error::Unsupported`].

use super::{be16, Error, EtherType, Result};

/// The EtherType that announces an 802.1Q tag (Tag Protocol Identifier).
pub const TPID: EtherType = EtherType(0x8100);

/// Byte ranges of the 802.1Q tag, counted from the end of the source MAC address.
pub mod field {
    use core::ops::{Range, RangeFrom};
    /// Tag Control Information: PCP, DEI, VID.
    pub const TCI: Range<usize> = 0..2;
    /// The EtherType (or 802.3 length) of the tagged frame.
    pub const ETHERTYPE: Range<usize> = 2..4;
    /// What the tag carries.
    pub const PAYLOAD: RangeFrom<usize> = 4..;
}

/// Length of the tag (TCI and inner EtherType).
pub const HEADER_LEN: usize = field::PAYLOAD.start;
/// The largest VLAN identifier a frame may carry (0xFFF is reserved).
pub const MAX_VID: u16 = 0xffe;

packet_view!(
    /// A read/write view of an 802.1Q tag and its payload.
    VlanPacket,
    min_len = HEADER_LEN,
    "Wraps a buffer at least as long as the tag."
);

impl<T: AsRef<[u8]>> VlanPacket<T> {
    /// The whole TCI word.
    pub fn tci(&self) -> u16 {
        be16(&self.buffer.as_ref()[field::TCI])
    }
    /// Priority Code Point (0..=7).
    pub fn pcp(&self) -> u8 {
        (self.tci() >> 13) as u8
    }
    /// Drop Eligible Indicator.
    pub fn dei(&self) -> bool {
        self.tci() & 0x1000 != 0
    }
    /// VLAN identifier (0..=4095).
    pub fn vid(&self) -> u16 {
        self.tci() & 0x0fff
    }
    /// The inner EtherType (or 802.3 length).
    pub fn ethertype(&self) -> EtherType {
        EtherType(be16(&self.buffer.as_ref()[field::ETHERTYPE]))
    }
    /// What the tag carries.
    pub fn payload(&self) -> &[u8] {
        &self.buffer.as_ref()[field::PAYLOAD]
    }
}

impl<T: AsRef<[u8]> + AsMut<[u8]>> VlanPacket<T> {
    /// Sets the TCI from its three fields (PCP masked to 3 bits, VID to 12).
    pub fn set_tci(&mut self, pcp: u8, dei: bool, vid: u16) {
        let tci = (u16::from(pcp & 7) << 13) | (u16::from(dei) << 12) | (vid & 0x0fff);
        self.buffer.as_mut()[field::TCI].copy_from_slice(&tci.to_be_bytes());
    }
    /// Sets the inner EtherType (or 802.3 length).
    pub fn set_ethertype(&mut self, t: EtherType) {
        self.buffer.as_mut()[field::ETHERTYPE].copy_from_slice(&t.0.to_be_bytes());
    }
    /// Mutable payload.
    pub fn payload_mut(&mut self) -> &mut [u8] {
        &mut self.buffer.as_mut()[field::PAYLOAD]
    }
}

/// The meaning of an 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VlanRepr {
    /// Priority Code Point (0..=7).
    pub pcp: u8,
    /// Drop Eligible Indicator.
    pub dei: bool,
    /// VLAN identifier (0: priority tag only; at most [`MAX_VID`]).
    pub vid: u16,
    /// The inner EtherType (or 802.3 length).
    pub ethertype: EtherType,
}

impl VlanRepr {
    /// Reads a checked tag; VID 0xFFF (reserved) is [`Error::Unsupported`].
    pub fn parse<T: AsRef<[u8]>>(p: &VlanPacket<T>) -> Result<VlanRepr> {
        if p.vid() > MAX_VID {
            return Err(Error::Unsupported);
        }
        Ok(VlanRepr { pcp: p.pcp(), dei: p.dei(), vid: p.vid(), ethertype: p.ethertype() })
    }
    /// Length of the tag.
    pub const fn header_len(&self) -> usize {
        HEADER_LEN
    }
    /// Writes the tag.
    pub fn emit<T: AsRef<[u8]> + AsMut<[u8]>>(&self, p: &mut VlanPacket<T>) {
        p.set_tci(self.pcp, self.dei, self.vid);
        p.set_ethertype(self.ethertype);
    }
}

#[cfg(test)]
mod test {
    use super::*;

    // PCP 5, DEI 1, VID 0x123; inner EtherType IPv4; two payload bytes.
    static TAG: [u8; 6] = [0xb1, 0x23, 0x08, 0x00, 0xaa, 0xbb];

    #[test]
    fn parse_emit() {
        let p = VlanPacket::new_checked(&TAG[..]).unwrap();
        let r = VlanRepr::parse(&p).unwrap();
        assert_eq!(r, VlanRepr { pcp: 5, dei: true, vid: 0x123, ethertype: EtherType::IPV4 });
        assert_eq!(p.payload(), &[0xaa, 0xbb]);
        let mut buf = [0u8; 6];
        let mut q = VlanPacket::new_unchecked(&mut buf[..]);
        r.emit(&mut q);
        q.payload_mut().copy_from_slice(&[0xaa, 0xbb]);
        assert_eq!(buf, TAG);
    }

    #[test]
    fn bad_input() {
        assert_eq!(VlanPacket::new_checked(&TAG[..3]).unwrap_err(), Error::Truncated);
        let p = VlanPacket::new_checked(&[0x0f, 0xff, 0x08, 0x00][..]).unwrap();
        assert_eq!(p.vid(), 0xfff);
        assert_eq!(VlanRepr::parse(&p).unwrap_err(), Error::Unsupported);
    }
}
