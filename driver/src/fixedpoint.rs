//! SwitchML block floating point: f32 tensors to the switch's int32 and back.
//!
//! A chunk of k elements shares one exponent. Its exponent is the smallest integer `e` with
//! `max |x| < 2^e` ([`exponent`]); the workers agree on the largest exponent of a chunk over all
//! of them, `e_max` (the switch returns the max of the exponents the workers send), and every
//! worker scales the chunk by the same factor
//!
//! ```text
//! f = (2^31 − 1) / (n · 2^e_max)
//! ```
//!
//! so that each quantized element is at most `(2^31 − 1)/n` in magnitude and the sum of the n
//! contributions can never overflow the switch's 32-bit adders (see [`Scale::new`] for the
//! margin that makes this hold after rounding, for n ≤ 32).
//!
//! Numbers at the boundary are [`fixed`] types: an element on the wire is a
//! [`Quantized`] (`I32F0`, a 32-bit integer with no fractional bits). The scalar
//! [`Scale::quantize_one`] / [`Scale::dequantize_one`] are the definition and go through the
//! `fixed` crate (`I32F0::saturating_from_num`, round to nearest, ties to even); the slice
//! functions [`quantize`], [`quantize_be`], [`dequantize`] and [`dequantize_be`] are the fast
//! path, equal to the definition bit for bit (tested), written so that they vectorize: no
//! branches or allocation in the loop, the product `x · f` is formed in f64 (exact to 2^-53) and
//! rounded to an integer with the 1.5·2^52 trick. On x86-64 each loop is also compiled for AVX2
//! and picked at run time when the CPU has it.
//!
//! # Error bound
//!
//! For every element, with `Σ` the exact sum of the n workers' values and `Σ̂` the f32 result,
//!
//! ```text
//! |Σ̂ − Σ| ≤ n/(2f) · (1 + 2^-20) + 2^-23 · |Σ̂| + 2^-149
//! ```
//!
//! The first term is the rounding of each contribution to an integer (≤ 1/2 each, plus 2^-22 for
//! the f64 product); the second covers the f32 rounding of the result (half an ulp, relative
//! 2^-24, doubled for the f64 steps); the last the f32 subnormal spacing. [`error_bound`] returns
//! it.
//!
//! # 16-bit lanes
//!
//! A chunk sent in 16-bit lanes (docs/switch.md §9) is scaled by [`Scale::new16`],
//! `f = (2^15 − 1 − n) / (n · 2^e_max)`, and written by [`quantize16_be`] as int16 big-endian;
//! [`dequantize16_be`] reads the lane sums back. The bound above holds with that f: about
//! `n² · 2^e_max / 2^16` an element, 2^16/n² times the 32-bit one (for n = 4, 2^-12 of the
//! chunk's largest magnitude).
//!
//! # Exponent range
//!
//! An all-zero chunk has exponent [`E_ZERO`] (`i8::MIN`), which loses every max. Exponents are
//! clamped below at [`E_MIN`] (−96) so that the scale stays a normal number (tiny values are
//! then quantized with the scale of 2^-96, still within the bound). The largest exponent, 127,
//! is [`E_NOT_FINITE`]: the chunk holds a NaN or an infinity (docs/switch.md §2.0), which
//! [`exponent`] reports as an error and [`exponent_or_marker`] as the marker; values with
//! `|x| ≥ 2^126` (exponent 127 is the marker) are an error.

use fixed::types::I32F0;

/// The number type of one element on the wire: a 32-bit integer, no fractional bits.
pub type Quantized = I32F0;

/// Exponent of an all-zero chunk: smaller than any other, so it never wins the max.
pub const E_ZERO: i8 = i8::MIN;
/// Smallest exponent of a non-zero chunk (smaller ones are clamped to it).
pub const E_MIN: i8 = -96;
/// Largest exponent of a finite chunk: values must satisfy `|x| < 2^126`.
pub const E_MAX: i8 = 126;
/// The exponent of a chunk that holds a NaN or an infinity (docs/switch.md §2.0): the largest
/// int8, so that the switch's maximum carries it to every worker, which then writes NaN into
/// the whole chunk.
pub const E_NOT_FINITE: i8 = 127;

/// Why a value cannot be converted.
#[derive(Debug, Clone, Copy, PartialEq, thiserror::Error)]
pub enum ConversionError {
    /// A NaN or an infinity.
    #[error("element {index} is {value}: NaN and infinities cannot be aggregated")]
    NotFinite {
        /// Index of the element in the slice given.
        index: usize,
        /// The value.
        value: f32,
    },
    /// A value with `|x| ≥ 2^126`, whose exponent would be the marker 127 or not fit an int8.
    #[error("element {index} = {value:e} is too large: block floating point needs |x| < 2^126")]
    TooLarge {
        /// Index of the element in the slice given.
        index: usize,
        /// The value.
        value: f32,
    },
}

/// Bits of an f32 with |x| ≥ 2^126 (biased exponent 253 or more, including inf and NaN).
const TOO_LARGE_BITS: u32 = 253 << 23;
/// Bits of +inf; anything above is a NaN.
const INF_BITS: u32 = 0x7f80_0000;

/// Defines `$generic`, an `#[inline(always)]` function of `$body`, and `$name`, which calls it
/// compiled twice: for the build's target and, on x86-64, with AVX2 enabled (`$avx2`), chosen at
/// run time (the detection is cached by std).
macro_rules! multiversion {
    ($(#[$m:meta])* $vis:vis fn $name:ident / $avx2:ident / $generic:ident ($($arg:ident: $ty:ty),*) $(-> $ret:ty)? $body:block) => {
        $(#[$m])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[cfg(target_arch = "x86_64")]
            if std::arch::is_x86_feature_detected!("avx2") {
                // SAFETY: the CPU has AVX2.
                return unsafe { $avx2($($arg),*) };
            }
            $generic($($arg),*)
        }
        #[cfg(target_arch = "x86_64")]
        #[target_feature(enable = "avx2")]
        unsafe fn $avx2($($arg: $ty),*) $(-> $ret)? {
            $generic($($arg),*)
        }
        #[inline(always)]
        fn $generic($($arg: $ty),*) $(-> $ret)? $body
    };
}

multiversion!(
    /// The largest `|x|` of a slice as f32 bits with the sign cleared (0 for an empty slice).
    /// Integer max of the bit patterns orders finite values by magnitude and puts inf and NaN
    /// above them, and vectorizes well.
    fn max_abs_bits / max_abs_bits_avx2 / max_abs_bits_generic(xs: &[f32]) -> u32 {
        const LANES: usize = 16;
        let mut acc = [0u32; LANES];
        let mut blocks = xs.chunks_exact(LANES);
        for b in &mut blocks {
            for i in 0..LANES {
                acc[i] = acc[i].max(b[i].to_bits() & 0x7fff_ffff);
            }
        }
        let mut m = blocks.remainder().iter().fold(0, |m, x| m.max(x.to_bits() & 0x7fff_ffff));
        for a in acc {
            m = m.max(a);
        }
        m
    }
);

/// The block exponent of a chunk: the smallest `e` with `max |x| < 2^e`, clamped below at
/// [`E_MIN`]; [`E_ZERO`] for an all-zero (or empty) chunk.
pub fn exponent(chunk: &[f32]) -> Result<i8, ConversionError> {
    let m = max_abs_bits(chunk);
    if m == 0 {
        return Ok(E_ZERO);
    }
    if m >= TOO_LARGE_BITS {
        let index = chunk.iter().position(|x| x.to_bits() & 0x7fff_ffff == m).unwrap_or(0);
        let value = chunk[index];
        return Err(if m >= INF_BITS {
            ConversionError::NotFinite { index, value }
        } else {
            ConversionError::TooLarge { index, value }
        });
    }
    // A normal m lies in [2^(b-127), 2^(b-126)) for biased exponent b: the smallest e with
    // m < 2^e is b - 126. Subnormals (b = 0) give -126, below E_MIN anyway.
    let e = (m >> 23) as i32 - 126;
    Ok(e.max(i32::from(E_MIN)) as i8)
}

/// [`exponent`], with [`E_NOT_FINITE`] for a chunk that holds a NaN or an infinity.
pub fn exponent_or_marker(chunk: &[f32]) -> Result<i8, ConversionError> {
    match exponent(chunk) {
        Err(ConversionError::NotFinite { .. }) => Ok(E_NOT_FINITE),
        other => other,
    }
}

/// [`exponents`], with [`E_NOT_FINITE`] for each chunk that holds a NaN or an infinity.
pub fn exponents_or_markers(data: &[f32], k: usize) -> Result<Vec<i8>, ConversionError> {
    assert!(k > 0, "chunk size k must be positive");
    data.chunks(k)
        .enumerate()
        .map(|(c, chunk)| {
            exponent_or_marker(chunk).map_err(|e| match e {
                ConversionError::TooLarge { index, value } => ConversionError::TooLarge { index: c * k + index, value },
                other => other,
            })
        })
        .collect()
}

/// The exponents of consecutive chunks of `k` elements (the last one may be shorter).
pub fn exponents(data: &[f32], k: usize) -> Result<Vec<i8>, ConversionError> {
    assert!(k > 0, "chunk size k must be positive");
    data.chunks(k)
        .enumerate()
        .map(|(c, chunk)| {
            exponent(chunk).map_err(|e| match e {
                ConversionError::NotFinite { index, value } => {
                    ConversionError::NotFinite { index: c * k + index, value }
                }
                ConversionError::TooLarge { index, value } => ConversionError::TooLarge { index: c * k + index, value },
            })
        })
        .collect()
}

/// The scale shared by all n workers for a chunk whose largest exponent is `e_max`: of 32-bit
/// lanes ([`Scale::new`]) or of 16-bit lanes ([`Scale::new16`], docs/switch.md §9).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scale {
    /// `f = (2^31 − 1) / (n · 2^e)`, with `e` = `e_max` clamped to `E_MIN..=E_MAX`.
    factor: f64,
    /// `1 / f`.
    inverse: f64,
    /// Workers.
    n: u32,
    /// The exponent the scale was made for (unclamped).
    e_max: i8,
}

impl Scale {
    /// The scale for n workers (1..=2^20: the workers of a whole aggregation tree) and the
    /// largest exponent of the chunk.
    ///
    /// Overflow is impossible: `|x| < 2^e_max` means `|x| ≤ 2^e_max (1 − 2^-24)`, so
    /// `|x · f| ≤ (2^31 − 1)/n − 128/n` before rounding, at least 4 below `(2^31 − 1)/n` for
    /// n ≤ 32; the rounded contributions are then each ≤ ⌊(2^31 − 1)/n⌋ and their sum ≤ 2^31 − 1.
    /// For n > 32 (a tree) the numerator is `2^31 − 1 − n`: `|x · f| < (2^31 − 1)/n − 1`, so the
    /// rounded contributions are again each ≤ ⌊(2^31 − 1)/n⌋.
    pub fn new(n: usize, e_max: i8) -> Scale {
        assert!(
            (1..=crate::config::MAX_TREE_WORKERS).contains(&n),
            "n = {n} workers is outside 1..={}",
            crate::config::MAX_TREE_WORKERS
        );
        let e = e_max.max(E_MIN);
        let top = if n > crate::config::MAX_WORKERS { f64::from(i32::MAX) - n as f64 } else { f64::from(i32::MAX) };
        let factor = (top / n as f64) * 2f64.powi(-i32::from(e));
        Scale { factor, inverse: 1.0 / factor, n: n as u32, e_max }
    }

    /// The scale of a chunk of 16-bit lanes (docs/switch.md §9) for n workers (1..=
    /// [`crate::config::MAX_LANES16_WORKERS`]): `f = (2^15 − 1 − n) / (n · 2^e)`.
    ///
    /// Overflow is impossible: `|x| < 2^e_max` gives `|x · f| < (2^15 − 1)/n − 1`, so each
    /// contribution rounded to the nearest integer is at most `⌊(2^15 − 1)/n⌋` and the sum of
    /// n of them at most `2^15 − 1`. (Without the `− n` the margin below the bound would be
    /// `(2^15 − 1) · 2^-24 / n`, and rounding could go over: for n = 9, nine times 3641.)
    pub fn new16(n: usize, e_max: i8) -> Scale {
        assert!(
            (1..=crate::config::MAX_LANES16_WORKERS).contains(&n),
            "n = {n} workers is outside 1..={} for 16-bit lanes",
            crate::config::MAX_LANES16_WORKERS
        );
        let e = e_max.max(E_MIN);
        let top = f64::from(i16::MAX) - n as f64;
        let factor = (top / n as f64) * 2f64.powi(-i32::from(e));
        Scale { factor, inverse: 1.0 / factor, n: n as u32, e_max }
    }
    /// The scale of a chunk in lanes of `lanes` bits: [`Scale::new`] or [`Scale::new16`].
    pub fn of_lanes(lanes: crate::wire::Lanes, n: usize, e_max: i8) -> Scale {
        match lanes {
            crate::wire::Lanes::I32 => Scale::new(n, e_max),
            crate::wire::Lanes::I16 => Scale::new16(n, e_max),
        }
    }
    /// The factor f.
    pub fn factor(&self) -> f64 {
        self.factor
    }
    /// The exponent the scale was made for.
    pub fn e_max(&self) -> i8 {
        self.e_max
    }
    /// Workers.
    pub fn n(&self) -> usize {
        self.n as usize
    }
    /// One element to the wire type (the definition the fast path follows): `x · f` in f64,
    /// rounded to the nearest integer, ties to even, by the `fixed` crate.
    pub fn quantize_one(&self, x: f32) -> Quantized {
        Quantized::saturating_from_num(f64::from(x) * self.factor)
    }
    /// A sum from the wire back to f32: `q / f`.
    pub fn dequantize_one(&self, q: Quantized) -> f32 {
        (q.to_num::<f64>() * self.inverse) as f32
    }
    /// The error bound of one element whose f32 result is `sum` (see the module doc).
    pub fn bound(&self, sum: f32) -> f64 {
        const SLACK: f64 = 1.0 + 1.0 / (1u64 << 20) as f64;
        f64::from(self.n) * 0.5 * self.inverse * SLACK
            + f64::from(sum.abs()) / (1u64 << 23) as f64
            + f64::from(f32::from_bits(1))
    }
}

/// The error bound of one element: n workers, the chunk's largest exponent, the f32 result.
/// `|Σ̂ − Σ| ≤ n/(2f) · (1 + 2^-20) + 2^-23 · |Σ̂| + 2^-149`.
pub fn error_bound(n: usize, e_max: i8, sum: f32) -> f64 {
    Scale::new(n, e_max).bound(sum)
}

/// 1.5 · 2^52: adding it to an f64 of magnitude below 2^51 rounds it to an integer (ties to
/// even) held in the low bits of the mantissa.
const ROUND_MAGIC: f64 = 6_755_399_441_055_744.0;

#[inline(always)]
fn q(x: f32, f: f64) -> i32 {
    (f64::from(x) * f + ROUND_MAGIC).to_bits() as i32
}

/// `dst[i] = f(src[i])` over two slices of the same length (`what` names the caller on a panic).
#[inline(always)]
fn map_same<S: Copy, D>(what: &str, src: &[S], dst: &mut [D], f: impl Fn(S) -> D) {
    assert_eq!(src.len(), dst.len(), "{what}: slices of different lengths");
    for (d, &x) in dst.iter_mut().zip(src) {
        *d = f(x);
    }
}

multiversion!(
    /// Quantizes `src` into `dst` (same length): `dst[i] = round(src[i] · f)`.
    pub fn quantize / quantize_avx2 / quantize_generic(src: &[f32], scale: &Scale, dst: &mut [i32]) {
        let f = scale.factor;
        map_same("quantize", src, dst, |x| q(x, f));
    }
);

multiversion!(
    /// Quantizes `src` into a SwitchML payload (int32 big-endian); elements of `dst` beyond
    /// `src.len()` are zero (the padding of a last, short chunk).
    pub fn quantize_be / quantize_be_avx2 / quantize_be_generic(src: &[f32], scale: &Scale, dst: &mut [u8]) {
        assert!(dst.len().is_multiple_of(4) && dst.len() / 4 >= src.len(), "quantize_be: payload too small");
        let (head, tail) = dst.split_at_mut(src.len() * 4);
        let f = scale.factor;
        for (d, &x) in head.chunks_exact_mut(4).zip(src) {
            d.copy_from_slice(&q(x, f).to_be_bytes());
        }
        tail.fill(0);
    }
);

multiversion!(
    /// Quantizes `src` into a payload of 16-bit lanes (int16 big-endian, docs/switch.md §9)
    /// with a scale of [`Scale::new16`]; lanes of `dst` beyond `src.len()` are zero.
    pub fn quantize16_be / quantize16_be_avx2 / quantize16_be_generic(src: &[f32], scale: &Scale, dst: &mut [u8]) {
        assert!(dst.len().is_multiple_of(4) && dst.len() / 2 >= src.len(), "quantize16_be: payload too small");
        let (head, tail) = dst.split_at_mut(src.len() * 2);
        let f = scale.factor;
        for (d, &x) in head.chunks_exact_mut(2).zip(src) {
            d.copy_from_slice(&(q(x, f) as i16).to_be_bytes());
        }
        tail.fill(0);
    }
);

multiversion!(
    /// Dequantizes the first `dst.len()` lane sums of a payload of 16-bit lanes.
    pub fn dequantize16_be / dequantize16_be_avx2 / dequantize16_be_generic(src: &[u8], scale: &Scale, dst: &mut [f32]) {
        assert!(src.len() / 2 >= dst.len(), "dequantize16_be: payload too small");
        let inv = scale.inverse;
        for (d, b) in dst.iter_mut().zip(src.chunks_exact(2)) {
            *d = (f64::from(i16::from_be_bytes([b[0], b[1]])) * inv) as f32;
        }
    }
);

multiversion!(
    /// Dequantizes sums: `dst[i] = src[i] / f`.
    pub fn dequantize / dequantize_avx2 / dequantize_generic(src: &[i32], scale: &Scale, dst: &mut [f32]) {
        let inv = scale.inverse;
        map_same("dequantize", src, dst, |s| (f64::from(s) * inv) as f32);
    }
);

multiversion!(
    /// Dequantizes the first `dst.len()` sums of a SwitchML payload (int32 big-endian).
    pub fn dequantize_be / dequantize_be_avx2 / dequantize_be_generic(src: &[u8], scale: &Scale, dst: &mut [f32]) {
        assert!(src.len() / 4 >= dst.len(), "dequantize_be: payload too small");
        let inv = scale.inverse;
        for (d, b) in dst.iter_mut().zip(src.chunks_exact(4)) {
            let s = i32::from_be_bytes([b[0], b[1], b[2], b[3]]);
            *d = (f64::from(s) * inv) as f32;
        }
    }
);

#[cfg(test)]
mod test {
    use super::*;
    use rand::{Rng, SeedableRng};
    use rand_chacha::ChaCha8Rng;

    #[test]
    fn exponents_of_powers_of_two() {
        assert_eq!(exponent(&[1.0]), Ok(1));
        assert_eq!(exponent(&[0.999]), Ok(0));
        assert_eq!(exponent(&[-1.0, 0.5]), Ok(1));
        assert_eq!(exponent(&[1.5]), Ok(1));
        assert_eq!(exponent(&[2.0]), Ok(2));
        assert_eq!(exponent(&[0.25]), Ok(-1));
        assert_eq!(exponent(&[0.0, -0.0]), Ok(E_ZERO));
        assert_eq!(exponent(&[]), Ok(E_ZERO));
        assert_eq!(exponent(&[1e-40]), Ok(E_MIN));
        assert_eq!(exponent(&[f32::MAX / 4.0 - 1e30]), Ok(126));
        assert!(matches!(exponent(&[f32::MAX / 2.0 - 1e30]), Err(ConversionError::TooLarge { index: 0, .. })));
        assert!(matches!(exponent(&[0.0, f32::MAX]), Err(ConversionError::TooLarge { index: 1, .. })));
        assert!(matches!(exponent(&[1.0, 2.0, f32::NAN]), Err(ConversionError::NotFinite { index: 2, .. })));
        assert!(matches!(exponent(&[f32::NEG_INFINITY]), Err(ConversionError::NotFinite { index: 0, .. })));
        let mut long = vec![0.5f32; 100];
        long[77] = -3.0;
        assert_eq!(exponent(&long), Ok(2));
        assert!(matches!(exponents(&long, 64), Ok(v) if v == vec![0, 2]));
        long[70] = f32::INFINITY;
        assert!(matches!(exponents(&long, 64), Err(ConversionError::NotFinite { index: 70, .. })));
        // The marker: a chunk with an inf or a NaN, the others as before; too large stays an error.
        assert_eq!(exponents_or_markers(&long, 64), Ok(vec![0, E_NOT_FINITE]));
        long[3] = f32::NAN;
        long[70] = 1.0;
        assert_eq!(exponents_or_markers(&long, 64), Ok(vec![E_NOT_FINITE, 2]));
        long[90] = f32::MAX;
        assert!(matches!(exponents_or_markers(&long, 64), Err(ConversionError::TooLarge { index: 90, .. })));
        assert_eq!(exponent_or_marker(&[0.0, 1.0]), Ok(1));
    }

    #[test]
    fn exponent_is_the_smallest() {
        let mut rng = ChaCha8Rng::seed_from_u64(1);
        for _ in 0..10_000 {
            let x: f32 = f32::from_bits(rng.gen_range(0x0080_0000..0x7e80_0000u32));
            let e = exponent(&[x]).unwrap();
            if e > E_MIN {
                assert!((x as f64) < 2f64.powi(e.into()) && (x as f64) >= 2f64.powi(i32::from(e) - 1), "{x} {e}");
            }
        }
    }

    #[test]
    fn fast_path_equals_the_fixed_definition() {
        let mut rng = ChaCha8Rng::seed_from_u64(2);
        for n in [1usize, 3, 4, 7, 32] {
            for e in [-100i8, -20, 0, 3, 31, 100, 127, E_ZERO] {
                let s = Scale::new(n, e);
                let lim = 2f64.powi(i32::from(e.max(E_MIN))) as f32;
                let mut xs: Vec<f32> = (0..1000).map(|_| (rng.gen::<f32>() * 2.0 - 1.0) * lim).collect();
                // Ties: values whose product with f is exactly k + 1/2.
                xs.extend([0.5f64, 1.5, 2.5, -0.5, -1.5].iter().map(|t| (t / s.factor()) as f32));
                xs.push(0.0);
                let mut fast = vec![0i32; xs.len()];
                quantize(&xs, &s, &mut fast);
                // The portable loop and the one picked at run time (AVX2 here, if present) agree.
                let mut portable = vec![0i32; xs.len()];
                quantize_generic(&xs, &s, &mut portable);
                assert_eq!(portable, fast);
                assert_eq!(max_abs_bits_generic(&xs), max_abs_bits(&xs));
                let mut be = vec![0xa5u8; xs.len() * 4 + 8];
                quantize_be(&xs, &s, &mut be);
                for (i, &x) in xs.iter().enumerate() {
                    let def = s.quantize_one(x);
                    assert_eq!(fast[i], def.to_bits(), "n {n} e {e} x {x}");
                    assert_eq!(&be[4 * i..4 * i + 4], &def.to_bits().to_be_bytes());
                    assert!(i64::from(fast[i]).abs() * n as i64 <= i64::from(i32::MAX));
                }
                assert_eq!(&be[xs.len() * 4..], &[0; 8]);
                let mut back = vec![0f32; xs.len()];
                dequantize(&fast, &s, &mut back);
                let mut back_be = vec![0f32; xs.len()];
                dequantize_be(&be, &s, &mut back_be);
                for i in 0..xs.len() {
                    assert_eq!(back[i], s.dequantize_one(Quantized::from_bits(fast[i])));
                    assert_eq!(back[i].to_bits(), back_be[i].to_bits());
                }
            }
        }
    }

    #[test]
    fn ties_round_to_even() {
        let s = Scale::new(1, 31); // f = (2^31-1)/2^31, so not exactly 1; use the exact ties.
        for (t, want) in [(0.5f64, 0), (1.5, 2), (2.5, 2), (-0.5, 0), (-1.5, -2)] {
            let x = (t / s.factor()) as f32;
            let exact = f64::from(x) * s.factor();
            if exact == t {
                assert_eq!(s.quantize_one(x).to_bits(), want);
            }
        }
        let s = Scale::new(1, 1);
        let mut d = [0i32; 1];
        quantize(&[(2.5 / s.factor()) as f32], &s, &mut d);
        assert!(d[0] == 2 || d[0] == 3);
    }

    /// 16-bit lanes (docs/switch.md §9): the slice functions equal the definition (the 32-bit
    /// quantizer with the 16-bit scale, which never leaves the int16 range), every value at the
    /// top of the range included, and n contributions of the largest value sum without
    /// overflow, for every n up to the limit; the sums stay within the error bound.
    #[test]
    fn sixteen_bit_lanes_never_overflow_and_keep_the_bound() {
        let mut rng = ChaCha8Rng::seed_from_u64(4);
        let top = 1.0 - f32::EPSILON / 2.0; // the largest f32 below 1
        for n in 1..=crate::config::MAX_LANES16_WORKERS {
            let s = Scale::new16(n, 0);
            let q = s.quantize_one(top).to_bits();
            assert!(q > 0 && i64::from(q) * n as i64 <= i64::from(i16::MAX), "n {n}: {q}");
            assert_eq!(s.quantize_one(-top).to_bits(), -q);
        }
        // With (2^15 − 1)/n as the numerator, n = 9 would round 0.99999994 · 3640.78 up to 3641.
        assert_eq!((f64::from(i16::MAX) / 9.0 * f64::from(top)).round(), 3641.0);
        for n in [1usize, 2, 4, 8, 9, 32, 100, 1024] {
            for _ in 0..50 {
                let e_true: i32 = rng.gen_range(-30..30);
                let k = 128;
                let xs: Vec<Vec<f32>> = (0..n.min(64))
                    .map(|_| {
                        (0..k)
                            .map(|_| {
                                let u: f32 = if rng.gen_bool(0.05) { top } else { rng.gen() };
                                if rng.gen_bool(0.5) {
                                    u
                                } else {
                                    -u
                                }
                            })
                            .map(|u| u * 2f32.powi(e_true))
                            .collect()
                    })
                    .collect();
                let e_max = xs.iter().map(|x| exponent(x).unwrap()).max().unwrap();
                let s = Scale::new16(n, e_max);
                let mut acc = vec![0i64; k];
                let mut be = vec![0xa5u8; k * 2 + 4];
                for x in &xs {
                    quantize16_be(x, &s, &mut be);
                    let mut portable = vec![0u8; be.len()];
                    quantize16_be_generic(x, &s, &mut portable);
                    assert_eq!(portable, be);
                    assert_eq!(&be[k * 2..], &[0; 4]);
                    for (i, a) in acc.iter_mut().enumerate() {
                        let lane = i16::from_be_bytes([be[2 * i], be[2 * i + 1]]);
                        assert_eq!(i32::from(lane), s.quantize_one(x[i]).to_bits());
                        *a += i64::from(lane);
                    }
                }
                // The remaining n − 64 ranks (for n > 64) send zeros: the bound is for n.
                let sums: Vec<u8> = acc
                    .iter()
                    .flat_map(|&a| {
                        assert!(a.abs() <= i64::from(i16::MAX), "overflow n {n}");
                        (a as i16).to_be_bytes()
                    })
                    .collect();
                let mut back = vec![0f32; k];
                dequantize16_be(&sums, &s, &mut back);
                for i in 0..k {
                    let exact: f64 = xs.iter().map(|x| f64::from(x[i])).sum();
                    let err = (f64::from(back[i]) - exact).abs();
                    assert!(err <= s.bound(back[i]), "n {n} e {e_max}: {err} > {}", s.bound(back[i]));
                }
            }
        }
    }

    #[test]
    fn sums_stay_within_the_bound_and_never_overflow() {
        let mut rng = ChaCha8Rng::seed_from_u64(3);
        for n in [1usize, 2, 3, 4, 5, 31, 32] {
            for _ in 0..200 {
                let e_true: i32 = rng.gen_range(-30..30);
                let k = 64;
                let xs: Vec<Vec<f32>> = (0..n)
                    .map(|_| {
                        (0..k)
                            .map(|_| {
                                // Include values at the very top of the range.
                                let u: f32 = if rng.gen_bool(0.05) { 1.0 - f32::EPSILON / 2.0 } else { rng.gen() };
                                let sign = if rng.gen_bool(0.5) { 1.0 } else { -1.0 };
                                sign * u * 2f32.powi(e_true)
                            })
                            .collect()
                    })
                    .collect();
                let e_max = xs.iter().map(|x| exponent(x).unwrap()).max().unwrap();
                let s = Scale::new(n, e_max);
                let mut acc = vec![0i64; k];
                for x in &xs {
                    let mut qv = vec![0i32; k];
                    quantize(x, &s, &mut qv);
                    for (a, q) in acc.iter_mut().zip(&qv) {
                        *a += i64::from(*q);
                    }
                }
                for (i, &a) in acc.iter().enumerate() {
                    assert!(a.abs() <= i64::from(i32::MAX), "overflow n {n}");
                    let sum = s.dequantize_one(Quantized::from_bits(a as i32));
                    let exact: f64 = xs.iter().map(|x| f64::from(x[i])).sum();
                    let err = (f64::from(sum) - exact).abs();
                    assert!(err <= s.bound(sum), "n {n} e {e_max}: {err} > {}", s.bound(sum));
                }
            }
        }
    }
}
