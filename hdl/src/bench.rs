//! Helpers of the blocks' own test benches: frames as 32-bit words and the stream interfaces
//! driven and read a beat at a time.

use crate::config_registers::{JobSettings, WorkerTableWrite};
use crate::word_stream::{StreamSink, StreamSource};
use rand::Rng as _;
use rand_chacha::ChaCha8Rng;

/// A seeded xorshift, so the benches need no RNG crate.
pub struct Rng(pub u64);

impl Rng {
    /// The next 64 random bits.
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// A number below `n`.
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }

    /// True once in `n` draws.
    pub fn one_in(&mut self, n: u64) -> bool {
        self.below(n) == 0
    }
}

/// One beat as a test bench sees it: data (first byte on top), last, valid bytes.
pub type Beat = (u64, bool, u64);

/// `frame` as 32-bit words, first byte on top; the last word with its valid byte count.
pub fn frame_words(frame: &[u8]) -> Vec<Beat> {
    let n = frame.len().div_ceil(4);
    (0..n)
        .map(|i| {
            let mut w = [0u8; 4];
            let part = &frame[4 * i..(4 * i + 4).min(frame.len())];
            w[..part.len()].copy_from_slice(part);
            (u64::from(u32::from_be_bytes(w)), i + 1 == n, part.len() as u64)
        })
        .collect()
}

/// The bytes that 32-bit `words` carry.
pub fn word_bytes(words: &[Beat]) -> Vec<u8> {
    words.iter().flat_map(|&(d, _, b)| (d as u32).to_be_bytes()[..b as usize].to_vec()).collect()
}

impl<const D: usize, const B: usize> StreamSink<D, B> {
    /// Presents `beat` to the block (valid when `valid`).
    pub fn offer(&mut self, valid: bool, (data, last, bytes): Beat) {
        self.valid.next = valid;
        self.data.next = data.into();
        self.last.next = last;
        self.bytes.next = bytes.into();
    }

    /// The block takes the presented beat at the next rising edge.
    pub fn moves(&self) -> bool {
        self.valid.val() && self.ready.val()
    }
}

impl<const D: usize, const B: usize> StreamSource<D, B> {
    /// The beat the block hands over at the next rising edge, if any.
    pub fn taken(&self) -> Option<Beat> {
        (self.valid.val() && self.ready.val())
            .then(|| (self.data.val().index() as u64, self.last.val(), self.bytes.val().index() as u64))
    }
}

impl JobSettings {
    /// Sets the switch's MAC (split as the registers hold it) and IPv4 address.
    pub fn set_switch(&mut self, mac: [u8; 6], ip: [u8; 4]) {
        self.switch_mac_hi.next = u64::from(u16::from_be_bytes([mac[0], mac[1]])).into();
        self.switch_mac_lo.next = u64::from(u32::from_be_bytes([mac[2], mac[3], mac[4], mac[5]])).into();
        self.switch_ip.next = u64::from(u32::from_be_bytes(ip)).into();
    }
}

impl WorkerTableWrite {
    /// Presents a write of `data` into entry `entry`: its IPv4 address, MAC bytes 0..2 or MAC
    /// bytes 2..6 as `[ip, mac_hi, mac_lo]` says (all false: no write).
    pub fn offer(&mut self, entry: u8, data: u64, [ip, mac_hi, mac_lo]: [bool; 3]) {
        self.address.next = u64::from(entry).into();
        self.data.next = data.into();
        self.write_ip.next = ip;
        self.write_mac_hi.next = mac_hi;
        self.write_mac_lo.next = mac_lo;
    }
}

/// An EAPS PDU with random fields: the specification crate's generator.
pub use spotagg_spec::eaps::random_repr as random_eaps_repr;

/// The damages both PDU checkers are tested with (`kind` 2..=4, the cases' numbers), applied to
/// a frame whose 802.3 length (bytes 16..18) is `len`: 2 one bit flipped anywhere (a reserved
/// byte's is still a good PDU), 3 truncated, 4 trailing bytes, and sometimes a longer 802.3
/// length that covers some of them.
pub fn damage_edp_frame(rng: &mut ChaCha8Rng, f: &mut Vec<u8>, kind: u32, len: u16) {
    match kind {
        2 => {
            let i = rng.gen_range(0..f.len());
            f[i] ^= 1 << rng.gen_range(0..8);
        }
        3 => {
            let n = rng.gen_range(1..f.len());
            f.truncate(n);
        }
        4 => {
            let extra = rng.gen_range(1..20);
            f.extend((0..extra).map(|_| rng.gen::<u8>()));
            if rng.gen_bool(0.5) {
                let longer = len + rng.gen_range(0..extra + 4) as u16;
                f[16..18].copy_from_slice(&longer.to_be_bytes());
            }
        }
        k => panic!("damage kind {k}"),
    }
}
