//! One byte of CRC-16/CCITT-FALSE (polynomial 0x1021, MSB first), the control link's frame
//! check, in the byte-wise form: combinational, `updated` is the CRC after `data` is taken into
//! `crc` (the same as `protocol::crc16_update(crc, &[byte])`).

use rust_hdl::prelude::*;

/// A CRC-16/CCITT-FALSE byte step.
#[derive(LogicBlock, Default)]
pub struct Crc16Step {
    /// The CRC so far.
    pub crc: Signal<In, Bits<16>>,
    /// The next byte.
    pub data: Signal<In, Bits<8>>,
    /// The CRC with `data` taken in.
    pub updated: Signal<Out, Bits<16>>,
    x: Signal<Local, Bits<8>>,
    x2: Signal<Local, Bits<8>>,
}

impl Logic for Crc16Step {
    #[hdl_gen]
    fn update(&mut self) {
        self.x.next = bit_cast::<8, 16>(self.crc.val() >> 8) ^ self.data.val();
        self.x2.next = self.x.val() ^ (self.x.val() >> 4);
        self.updated.next = (self.crc.val() << 8)
            ^ (bit_cast::<16, 8>(self.x2.val()) << 12)
            ^ (bit_cast::<16, 8>(self.x2.val()) << 5)
            ^ bit_cast::<16, 8>(self.x2.val());
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::step::settle;
    use spotagg_driver::control::protocol::crc16_update;

    /// Every byte from 64 CRC values (pseudo-random, and 0, 0xffff): the protocol's CRC.
    #[test]
    fn matches_the_protocol_crc() {
        let mut b = Crc16Step::default();
        b.connect_all();
        let mut crc = 0x1d0f_u16;
        let mut crcs = vec![0, 0xffff];
        for _ in 0..62 {
            crc = crc16_update(crc, &[0x5a]);
            crcs.push(crc);
        }
        for c in crcs {
            for byte in 0..=255u8 {
                b.crc.next = u64::from(c).into();
                b.data.next = u64::from(byte).into();
                settle(&mut b);
                let got = b.updated.val().index() as u16;
                assert_eq!(got, crc16_update(c, &[byte]), "crc {c:#06x}, byte {byte:#04x}");
            }
        }
    }
}
