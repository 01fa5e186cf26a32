//! Frames as a MAC puts them on GMII: preamble, SFD, the frame padded to the 60-byte minimum,
//! FCS. The one wrapping the board-level harnesses (`spotagg tap --board-model`, the board
//! simulation, the control-link test) use to feed the MACs and to read what they send.

use spotagg_driver::wire::ethernet::MIN_FRAME_LEN;
use spotagg_driver::wire::fcs::{fcs, FCS_LEN};

/// Seven preamble bytes and the start-of-frame delimiter.
pub const PREAMBLE: [u8; 8] = [0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xD5];

/// Why GMII bytes are not a frame.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum GmiiError {
    /// Shorter than preamble, SFD and FCS.
    #[error("{0} bytes: shorter than preamble, SFD and FCS")]
    Short(usize),
    /// The first eight bytes are not the preamble and SFD.
    #[error("bad preamble or SFD: {0:02x?}")]
    Preamble([u8; 8]),
    /// The FCS does not match the frame.
    #[error("bad FCS: {got:02x?}, the frame's is {want:02x?}")]
    Fcs {
        /// The FCS received.
        got: [u8; 4],
        /// The frame's FCS.
        want: [u8; 4],
    },
}

/// `frame` padded with zeros to the 60-byte minimum, as a MAC sends it.
pub fn padded(frame: &[u8]) -> Vec<u8> {
    let mut f = frame.to_vec();
    if f.len() < MIN_FRAME_LEN {
        f.resize(MIN_FRAME_LEN, 0);
    }
    f
}

/// The GMII bytes of `frame`: preamble, SFD, the padded frame, its FCS.
pub fn wrap(frame: &[u8]) -> Vec<u8> {
    let f = padded(frame);
    let mut w = Vec::with_capacity(PREAMBLE.len() + f.len() + FCS_LEN);
    w.extend_from_slice(&PREAMBLE);
    w.extend_from_slice(&f);
    w.extend_from_slice(&fcs(&f));
    w
}

/// The frame inside GMII bytes (padding kept), once preamble, SFD and FCS are checked.
pub fn unwrap(w: &[u8]) -> Result<&[u8], GmiiError> {
    if w.len() < PREAMBLE.len() + FCS_LEN {
        return Err(GmiiError::Short(w.len()));
    }
    if w[..8] != PREAMBLE {
        return Err(GmiiError::Preamble(w[..8].try_into().unwrap()));
    }
    let f = &w[8..w.len() - FCS_LEN];
    let got: [u8; 4] = w[w.len() - FCS_LEN..].try_into().unwrap();
    let want = fcs(f);
    if got != want {
        return Err(GmiiError::Fcs { got, want });
    }
    Ok(f)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn wrap_pads_and_unwrap_checks() {
        let w = wrap(&[1, 2, 3]);
        assert_eq!(w.len(), 8 + 60 + 4);
        assert_eq!(&w[..8], &[0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0x55, 0xD5]);
        assert_eq!(&unwrap(&w).unwrap()[..4], &[1, 2, 3, 0]);
        let mut bad = w.clone();
        bad[20] ^= 1;
        assert!(matches!(unwrap(&bad), Err(GmiiError::Fcs { .. })));
        bad = w.clone();
        bad[7] = 0x55;
        assert!(matches!(unwrap(&bad), Err(GmiiError::Preamble(_))));
        assert_eq!(unwrap(&w[..11]), Err(GmiiError::Short(11)));
    }
}
