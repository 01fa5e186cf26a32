//! The Ethernet frame check sequence: CRC-32 of IEEE 802.3, the one software definition that
//! the MAC blocks in `boards/` (generated from [`crc32_byte`]), the board-level simulations and
//! the GMII wrapping of `sim::gmii` use.
//!
//! The register starts at 0xFFFF_FFFF and takes each byte least significant bit first (the order
//! the bits are sent), with the reflected polynomial 0xEDB88320; the FCS sent is `!crc` after the
//! last byte, least significant byte first. A receiver that runs the register over the frame
//! *and* its FCS ends at [`CRC32_RESIDUE`] when the frame is intact.

/// Reflected CRC-32 polynomial of IEEE 802.3.
pub const CRC32_POLY: u32 = 0xEDB8_8320;
/// Register value after a good frame followed by its FCS has been shifted in.
pub const CRC32_RESIDUE: u32 = 0xDEBB_20E3;
/// Bytes of the FCS.
pub const FCS_LEN: usize = 4;

/// One byte through the CRC register, bit by bit (the definition).
pub const fn crc32_byte(mut crc: u32, data: u8) -> u32 {
    let mut i = 0;
    crc ^= data as u32;
    while i < 8 {
        crc = if crc & 1 != 0 { (crc >> 1) ^ CRC32_POLY } else { crc >> 1 };
        i += 1;
    }
    crc
}

/// The FCS of `frame` (the four bytes to append, in wire order).
pub fn fcs(frame: &[u8]) -> [u8; FCS_LEN] {
    let crc = frame.iter().fold(0xFFFF_FFFFu32, |c, &b| crc32_byte(c, b));
    (!crc).to_le_bytes()
}

#[cfg(test)]
mod test {
    use super::*;

    /// The textbook check value: CRC-32 of "123456789" is 0xCBF43926; frame + FCS leaves the
    /// residue.
    #[test]
    fn check_value_and_residue() {
        assert_eq!(fcs(b"123456789"), 0xCBF4_3926u32.to_le_bytes());
        let mut f = b"123456789".to_vec();
        f.extend_from_slice(&fcs(b"123456789"));
        assert_eq!(f.iter().fold(0xFFFF_FFFFu32, |c, &b| crc32_byte(c, b)), CRC32_RESIDUE);
    }
}
