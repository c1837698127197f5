//! Murmur3 x86_32 with seed 0, specialised for the inputs of Iceberg's bucket transform
//! (spec Appendix B). `hash_long` is the 8-byte little-endian form every integer-like value is
//! hashed as; `hash_bytes` is the general form for strings, binary, fixed, uuid and decimals.
//! The tests check both against the `murmur3` crate, which serves as the oracle.

const C1: u32 = 0xcc9e_2d51;
const C2: u32 = 0x1b87_3593;

#[inline(always)]
fn mix_k1(k: u32) -> u32 {
    k.wrapping_mul(C1).rotate_left(15).wrapping_mul(C2)
}

#[inline(always)]
fn mix_h1(h: u32, k: u32) -> u32 {
    (h ^ mix_k1(k))
        .rotate_left(13)
        .wrapping_mul(5)
        .wrapping_add(0xe654_6b64)
}

#[inline(always)]
fn fmix(mut h: u32, len: u32) -> u32 {
    h ^= len;
    h ^= h >> 16;
    h = h.wrapping_mul(0x85eb_ca6b);
    h ^= h >> 13;
    h = h.wrapping_mul(0xc2b2_ae35);
    h ^ (h >> 16)
}

/// Hash of a long as its 8 little-endian bytes (Java `BucketUtil.hash(long)`).
#[inline(always)]
pub fn hash_long(v: i64) -> i32 {
    let v = v as u64;
    let h = mix_h1(0, v as u32);
    let h = mix_h1(h, (v >> 32) as u32);
    fmix(h, 8) as i32
}

/// Hash of a byte string.
#[inline]
pub fn hash_bytes(data: &[u8]) -> i32 {
    let mut h = 0u32;
    let mut chunks = data.chunks_exact(4);
    for c in &mut chunks {
        h = mix_h1(h, u32::from_le_bytes([c[0], c[1], c[2], c[3]]));
    }
    let tail = chunks.remainder();
    if !tail.is_empty() {
        let mut k = 0u32;
        for (i, b) in tail.iter().enumerate() {
            k |= (*b as u32) << (8 * i);
        }
        h ^= mix_k1(k);
    }
    fmix(h, data.len() as u32) as i32
}

/// Hash of a double after the spec's canonicalisation: -0.0 hashes as 0.0 and every NaN as
/// the canonical NaN `0x7ff8000000000000` (Java `Double.doubleToLongBits`).
#[inline(always)]
pub fn hash_double(v: f64) -> i32 {
    let bits = if v == 0.0 {
        0u64
    } else if v.is_nan() {
        0x7ff8_0000_0000_0000
    } else {
        v.to_bits()
    };
    hash_long(bits as i64)
}

/// The minimal two's-complement big-endian bytes of `be` (Java `BigInteger.toByteArray()`):
/// leading sign-extension bytes are dropped while the next byte keeps the sign bit.
#[inline]
pub fn minimal_twos_complement(be: &[u8]) -> &[u8] {
    let mut i = 0;
    while i + 1 < be.len() {
        let (b, next) = (be[i], be[i + 1]);
        if (b == 0x00 && next & 0x80 == 0) || (b == 0xff && next & 0x80 != 0) {
            i += 1;
        } else {
            break;
        }
    }
    &be[i..]
}

/// Hash of a decimal's unscaled value, as its minimal two's-complement big-endian bytes.
#[inline]
pub fn hash_i128(v: i128) -> i32 {
    let be = v.to_be_bytes();
    hash_bytes(minimal_twos_complement(&be))
}

/// Bucket number from a hash: `(hash & Integer.MAX_VALUE) % n`.
#[inline(always)]
pub fn bucket_of(hash: i32, n: u32) -> i32 {
    ((hash as u32 & 0x7fff_ffff) % n) as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    fn oracle(data: &[u8]) -> i32 {
        murmur3::murmur3_32(&mut std::io::Cursor::new(data), 0).unwrap() as i32
    }

    #[test]
    fn matches_oracle_for_every_tail_length() {
        let data: Vec<u8> = (0u8..=40).map(|i| i.wrapping_mul(37) ^ 0x5a).collect();
        for n in 0..data.len() {
            assert_eq!(hash_bytes(&data[..n]), oracle(&data[..n]), "length {n}");
        }
    }

    #[test]
    fn long_matches_oracle() {
        for v in [
            0i64,
            1,
            -1,
            34,
            i64::MIN,
            i64::MAX,
            1_510_871_468_000_000,
            -987_654_321,
        ] {
            assert_eq!(hash_long(v), oracle(&v.to_le_bytes()), "value {v}");
        }
    }

    #[test]
    fn spec_vectors() {
        // spec Appendix B and spec-facts.md 3.1
        assert_eq!(hash_long(34), 2017239379);
        assert_eq!(hash_long(1), 1392991556); // true
        assert_eq!(hash_long(17486), -653330422); // date 2017-11-16
        assert_eq!(hash_long(81_068_000_000), -662762989); // time 22:31:08
        assert_eq!(hash_long(1_510_871_468_000_000), -2047944441);
        assert_eq!(hash_long(1_510_871_468_000_001), -1207196810);
        assert_eq!(hash_bytes(b"iceberg"), 1210000089);
        assert_eq!(hash_bytes(&[0, 1, 2, 3]), -188683207);
        assert_eq!(hash_i128(1420), -500754589);
        assert_eq!(hash_i128(-128), 267099677);
        assert_eq!(hash_double(1.0), -142385009);
        assert_eq!(hash_double(0.0), 1669671676);
        assert_eq!(hash_double(-0.0), 1669671676);
        assert_eq!(hash_double(f64::NAN), 1428788237);
        assert_eq!(
            hash_double(f64::from_bits(0x7ff0_0000_0000_0001)),
            1428788237
        );
        assert_eq!(hash_double(-f64::NAN), 1428788237);
        let uuid = [
            0xF7, 0x9C, 0x3E, 0x09, 0x67, 0x7C, 0x4B, 0xBD, 0xA4, 0x79, 0x3F, 0x34, 0x9C, 0xB7,
            0x85, 0xE7,
        ];
        assert_eq!(hash_bytes(&uuid), 1488055340);
    }

    #[test]
    fn minimal_bytes() {
        let m = |v: i128| minimal_twos_complement(&v.to_be_bytes()).to_vec();
        assert_eq!(m(-128), vec![0x80]);
        assert_eq!(m(128), vec![0x00, 0x80]);
        assert_eq!(m(-129), vec![0xff, 0x7f]);
        assert_eq!(m(0), vec![0x00]);
        assert_eq!(m(-1), vec![0xff]);
        assert_eq!(m(1420), vec![0x05, 0x8c]);
        assert_eq!(m(i128::MIN).len(), 16);
    }

    #[test]
    fn buckets() {
        assert_eq!(bucket_of(hash_long(34), 100), 79);
        assert_eq!(bucket_of(hash_long(0), 2), 0);
        assert_eq!(bucket_of(hash_long(34), 16), 3);
        assert_eq!(bucket_of(hash_bytes(b"iceberg"), 16), 9);
        assert_eq!(bucket_of(hash_i128(-128), 16), 13);
        assert_eq!(bucket_of(hash_bytes(b"foo"), 128), 32);
        assert_eq!(bucket_of(hash_bytes(&[0, 1, 2, 3]), 128), 57);
    }
}
