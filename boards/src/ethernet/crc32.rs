//! CRC-32 of IEEE 802.3 (the Ethernet FCS), one byte per clock, as a combinational block.
//!
//! `out` is the CRC register after shifting in `data` (least significant bit first, the order
//! the bits are sent on the wire) from `crc`, with the reflected polynomial 0xEDB88320. The
//! register starts at 0xFFFF_FFFF; the FCS sent is `!crc` after the last byte, least significant
//! byte first. A receiver that runs the register over the frame *and* its FCS ends at
//! [`CRC32_RESIDUE`] when the frame is intact.
//!
//! `residue` says whether `crc` is that residue (the receiver's check, next to the register).
//!
//! Timing: purely combinational (an XOR tree per output bit, at most 40 inputs deep-one, which
//! Yosys maps to about three LUT levels); the user registers `out`.
//!
//! The Verilog is generated from the same bitwise definition the simulation model runs
//! ([`crc32_byte`]): each output bit is the parity of a mask of `crc` and a mask of `data`.

use rust_hdl::prelude::*;

/// The software definition, in the wire format's one place.
pub use spotagg_driver::wire::fcs::{crc32_byte, fcs, CRC32_POLY, CRC32_RESIDUE};

/// Combinational CRC-32 update by one byte.
#[derive(LogicBlock, Default)]
pub struct Crc32 {
    /// CRC register before the byte.
    pub crc: Signal<In, Bits<32>>,
    /// The byte (bit 0 is sent first).
    pub data: Signal<In, Bits<8>>,
    /// CRC register after the byte.
    pub out: Signal<Out, Bits<32>>,
    /// The register before the byte is [`CRC32_RESIDUE`] (a receiver's check, run over a frame
    /// and its FCS).
    pub residue: Signal<Out, Bit>,
}

impl Logic for Crc32 {
    fn update(&mut self) {
        let c = self.crc.val().to_u32();
        let d = self.data.val().to_u8();
        self.out.next = u64::from(crc32_byte(c, d)).into();
        self.residue.next = c == CRC32_RESIDUE;
    }

    fn connect(&mut self) {
        self.out.connect();
        self.residue.connect();
    }

    fn hdl(&self) -> Verilog {
        // The map is linear: output bit i is the XOR of the input bits whose unit vector sets it.
        let mut s = format!("assign residue = crc == 32'h{CRC32_RESIDUE:08x};\n");
        for i in 0..32 {
            let mut cm = 0u32;
            for j in 0..32 {
                if crc32_byte(1 << j, 0) & (1 << i) != 0 {
                    cm |= 1 << j;
                }
            }
            let mut dm = 0u8;
            for j in 0..8 {
                if crc32_byte(0, 1 << j) & (1 << i) != 0 {
                    dm |= 1 << j;
                }
            }
            s += &format!("assign out[{i}] = (^(crc & 32'h{cm:08x})) ^ (^(data & 8'h{dm:02x}));\n");
        }
        Verilog::Custom(s)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    /// The textbook check value: CRC-32 of "123456789" is 0xCBF43926.
    #[test]
    fn check_value_and_residue() {
        let crc = b"123456789".iter().fold(0xFFFF_FFFFu32, |c, &b| crc32_byte(c, b));
        assert_eq!(!crc, 0xCBF4_3926);
        let mut f = b"123456789".to_vec();
        f.extend_from_slice(&fcs(b"123456789"));
        assert_eq!(f.iter().fold(0xFFFF_FFFFu32, |c, &b| crc32_byte(c, b)), CRC32_RESIDUE);
    }

    /// A minimal Ethernet frame (broadcast ARP request, padded to 60 bytes): its FCS against
    /// a second, independent definition (MSB-first register over bit-reversed bytes).
    #[test]
    fn fcs_of_a_known_ethernet_frame() {
        let mut frame: Vec<u8> = vec![
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0x08, 0x06, // Ethernet
            0x00, 0x01, 0x08, 0x00, 0x06, 0x04, 0x00, 0x01, // ARP request
            0x00, 0x11, 0x22, 0x33, 0x44, 0x55, 0xc0, 0xa8, 0x01, 0x02, // sender
            0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0xc0, 0xa8, 0x01, 0x01, // target
        ];
        frame.resize(60, 0);
        // Reference by a plain bitwise loop over the MSB-first polynomial, independent of
        // `crc32_byte`: reflect the bytes in, reflect the result out.
        let mut r: u32 = 0xFFFF_FFFF;
        for &b in &frame {
            r ^= u32::from(b.reverse_bits()) << 24;
            for _ in 0..8 {
                r = if r & 0x8000_0000 != 0 { (r << 1) ^ 0x04C1_1DB7 } else { r << 1 };
            }
        }
        let reference = (!r).reverse_bits().to_le_bytes();
        assert_eq!(fcs(&frame), reference);
    }

    #[test]
    fn block_matches_definition() {
        let mut uut = Crc32::default();
        uut.connect_all();
        for (c, d) in [(0xFFFF_FFFFu32, 0x55u8), (0x1234_5678, 0xD5), (0, 0x80), (0xDEAD_BEEF, 0)] {
            uut.crc.next = u64::from(c).into();
            uut.data.next = u64::from(d).into();
            assert!(simulate(&mut uut, 100));
            assert_eq!(uut.out.val().to_u32(), crc32_byte(c, d));
            assert!(!uut.residue.val());
        }
        uut.crc.next = u64::from(CRC32_RESIDUE).into();
        assert!(simulate(&mut uut, 100));
        assert!(uut.residue.val());
        let v = generate_verilog(&uut);
        assert!(v.contains("assign out[31]"));
    }
}
