//! Eight ASCII bytes at a time in a `u64` (little-endian: byte `k` of the text is byte `k` of
//! the word): the letters and digits of a text, without a branch per byte.

const ONES: u64 = 0x0101_0101_0101_0101;
/// The high bit of every byte.
pub(crate) const HIGH: u64 = 0x8080_8080_8080_8080;

/// Up to eight bytes as a word, zeros after the last (a zero byte is neither letter nor digit).
pub(crate) fn load(bytes: &[u8]) -> u64 {
    match bytes.first_chunk::<8>() {
        Some(word) => u64::from_le_bytes(*word),
        // Byte by byte: a copy of a length unknown here would be a call.
        None => bytes.iter().rev().fold(0, |word, &b| (word << 8) | u64::from(b)),
    }
}

/// The high bit of each byte of `x` (every byte below 0x80) that is in `lo..=hi` (`lo >= 1`).
pub(crate) fn in_range(x: u64, lo: u8, hi: u8) -> u64 {
    // Per byte b < 0x80 and c < 0x80: b + (0x7f - c) has its high bit set iff b > c, and no
    // byte carries into the next.
    let above = |c: u8| x.wrapping_add(ONES * u64::from(0x7f - c)) & HIGH;
    above(lo - 1) & !above(hi)
}

/// The high bits of the upper-case letters, and of the letters and digits, of ASCII `x`.
pub(crate) fn upper_and_alnum(x: u64) -> (u64, u64) {
    let upper = in_range(x, b'A', b'Z');
    (upper, upper | in_range(x, b'a', b'z') | in_range(x, b'0', b'9'))
}

/// The high bits of `x` gathered into one bit per byte (bit `k` for byte `k`).
pub(crate) fn bits(high: u64) -> u8 {
    // Each flag (a 1 in bit 8k after the shift) lands on bit 56 + k of the product, no two
    // partial products on one bit (those past bit 63 are dropped).
    ((high >> 7).wrapping_mul(0x0102_0408_1020_4080) >> 56) as u8
}

#[cfg(test)]
mod tests {
    use super::*;

    proptest::proptest! {
        #[test]
        fn classes_are_the_bytes_classes(bytes in proptest::collection::vec(0u8..0x80, 0..9)) {
            let (upper, alnum) = upper_and_alnum(load(&bytes));
            for k in 0..8 {
                let b = bytes.get(k).copied().unwrap_or(0);
                proptest::prop_assert_eq!((upper >> (8 * k + 7)) & 1 == 1, b.is_ascii_uppercase());
                proptest::prop_assert_eq!((alnum >> (8 * k + 7)) & 1 == 1, b.is_ascii_alphanumeric());
                proptest::prop_assert_eq!((bits(alnum) >> k) & 1 == 1, b.is_ascii_alphanumeric());
            }
        }
    }
}
