//! Avro binary encoding primitives: a bounds-checked reader over a byte slice and the matching
//! encoders. Every read checks the remaining length first, so hostile input yields
//! `Error::CorruptFile` instead of a panic or an oversized allocation.

use crate::{Error, Result};

/// A cursor over Avro-encoded bytes. Errors carry no file name; callers add it with `context`.
#[derive(Clone)]
pub struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    pub fn new(buf: &'a [u8]) -> Self {
        Reader { buf, pos: 0 }
    }

    /// Bytes not read yet.
    #[inline]
    pub fn remaining(&self) -> usize {
        self.buf.len() - self.pos
    }

    /// Offset of the next byte.
    #[inline]
    pub fn position(&self) -> usize {
        self.pos
    }

    /// Moves to byte `pos` (at most the end of the input).
    pub fn seek(&mut self, pos: usize) -> Result<()> {
        if pos > self.buf.len() {
            return Err(Error::corrupt(format!(
                "offset {pos} is past the end of {} bytes",
                self.buf.len()
            )));
        }
        self.pos = pos;
        Ok(())
    }

    /// A zigzag varint long (at most 10 bytes).
    #[inline(always)]
    pub fn long(&mut self) -> Result<i64> {
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                let v = b as u64;
                return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
            }
        }
        self.long_multi()
    }

    /// A varint of two or more bytes: with eight bytes left, the groups of seven bits are
    /// gathered from one little-endian word without a loop.
    #[inline]
    fn long_multi(&mut self) -> Result<i64> {
        if let Some(w) = self.buf.get(self.pos..self.pos + 8) {
            let word = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            let stops = !word & 0x8080_8080_8080_8080;
            if stops != 0 {
                let len = (stops.trailing_zeros() / 8 + 1) as usize;
                let mut x = if len == 8 {
                    word
                } else {
                    word & ((1u64 << (8 * len)) - 1)
                };
                x &= 0x7f7f_7f7f_7f7f_7f7f;
                x = ((x & 0x7f00_7f00_7f00_7f00) >> 1) | (x & 0x007f_007f_007f_007f);
                x = ((x & 0x3fff_0000_3fff_0000) >> 2) | (x & 0x0000_3fff_0000_3fff);
                x = ((x & 0x0fff_ffff_0000_0000) >> 4) | (x & 0x0000_0000_0fff_ffff);
                self.pos += len;
                return Ok(((x >> 1) as i64) ^ -((x & 1) as i64));
            }
        }
        self.long_slow()
    }

    #[cold]
    fn long_slow(&mut self) -> Result<i64> {
        let mut value: u64 = 0;
        let mut shift = 0u32;
        loop {
            let Some(&b) = self.buf.get(self.pos) else {
                return Err(Error::corrupt(format!(
                    "truncated varint at offset {}",
                    self.pos
                )));
            };
            self.pos += 1;
            if shift == 63 && b > 1 {
                return Err(Error::corrupt(format!(
                    "varint longer than 64 bits at offset {}",
                    self.pos - 1
                )));
            }
            value |= ((b & 0x7f) as u64) << shift;
            if b < 0x80 {
                break;
            }
            shift += 7;
        }
        Ok(((value >> 1) as i64) ^ -((value & 1) as i64))
    }

    /// A one-byte zigzag int key followed by a long, both read from one 16-byte window (one
    /// bounds check for the pair; the metric maps of manifests). Falls back to [`Reader::int`]
    /// and [`Reader::long`] near the end of the buffer, for wider keys and for values of nine
    /// or ten bytes, so it accepts and rejects exactly what they do.
    #[inline(always)]
    pub fn int_long(&mut self) -> Result<(i32, i64)> {
        if let Some(w) = self.buf.get(self.pos..self.pos + 16) {
            let lo = u64::from_le_bytes([w[0], w[1], w[2], w[3], w[4], w[5], w[6], w[7]]);
            let hi = u64::from_le_bytes([w[8], w[9], w[10], w[11], w[12], w[13], w[14], w[15]]);
            let k = lo as u8;
            if k < 0x80 {
                let v = (lo >> 8) as u8;
                if v < 0x80 {
                    // one-byte values (null and NaN counts) without the word decode
                    self.pos += 2;
                    return Ok((zigzag32(k), zigzag32(v) as i64));
                }
                if let Some((v, len)) = varint_in_word((lo >> 8) | (hi << 56)) {
                    self.pos += 1 + len;
                    return Ok((zigzag32(k), v));
                }
            }
        }
        let k = self.int()?;
        Ok((k, self.long()?))
    }

    /// A one-byte zigzag int key followed by length-prefixed bytes, read from one 16-byte
    /// window when the key, the length and the bytes all fit in it (the bounds of manifests);
    /// otherwise [`Reader::int`] then [`Reader::bytes`].
    #[inline(always)]
    pub fn int_bytes(&mut self) -> Result<(i32, &'a [u8])> {
        if let Some(w) = self.buf.get(self.pos..self.pos + 16) {
            let (k, l) = (w[0], w[1]);
            // a one-byte key, a one-byte non-negative length, and the bytes within the window
            if k < 0x80 && l < 0x80 && l & 1 == 0 && (l >> 1) <= 14 {
                let n = (l >> 1) as usize;
                self.pos += 2 + n;
                return Ok((zigzag32(k), &w[2..2 + n]));
            }
        }
        let k = self.int()?;
        Ok((k, self.bytes()?))
    }

    /// A zigzag varint int; values outside the i32 range are corrupt.
    #[inline(always)]
    pub fn int(&mut self) -> Result<i32> {
        let v = self.long()?;
        i32::try_from(v).map_err(|_| Error::corrupt(format!("int value {v} out of range")))
    }

    /// A non-negative length that fits in the remaining bytes.
    #[inline(always)]
    pub fn length(&mut self) -> Result<usize> {
        let n = self.long()?;
        if n < 0 || n as u64 > self.remaining() as u64 {
            return Err(Error::corrupt(format!(
                "length {n} at offset {} exceeds the {} remaining bytes",
                self.pos,
                self.remaining()
            )));
        }
        Ok(n as usize)
    }

    /// Exactly `n` raw bytes.
    #[inline(always)]
    pub fn fixed(&mut self, n: usize) -> Result<&'a [u8]> {
        if n > self.remaining() {
            return Err(Error::corrupt(format!(
                "{n} bytes needed at offset {} but only {} remain",
                self.pos,
                self.remaining()
            )));
        }
        let s = &self.buf[self.pos..self.pos + n];
        self.pos += n;
        Ok(s)
    }

    /// Length-prefixed bytes (also the encoding of strings).
    #[inline(always)]
    pub fn bytes(&mut self) -> Result<&'a [u8]> {
        let n = self.length()?;
        self.fixed(n)
    }

    pub fn string(&mut self) -> Result<&'a str> {
        let b = self.bytes()?;
        std::str::from_utf8(b).map_err(|_| Error::corrupt("string is not valid UTF-8"))
    }

    pub fn boolean(&mut self) -> Result<bool> {
        match self.fixed(1)?[0] {
            0 => Ok(false),
            1 => Ok(true),
            b => Err(Error::corrupt(format!("invalid boolean byte {b}"))),
        }
    }

    pub fn float(&mut self) -> Result<f32> {
        let b = self.fixed(4)?;
        Ok(f32::from_le_bytes([b[0], b[1], b[2], b[3]]))
    }

    pub fn double(&mut self) -> Result<f64> {
        let b = self.fixed(8)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(f64::from_le_bytes(a))
    }

    /// The item count of the next array or map block; reads and discards the byte size of a
    /// negative-count block. `min_item` is the smallest encoded size of one item: counts that
    /// cannot fit in the remaining bytes are rejected (items of size 0 are capped instead).
    #[inline(always)]
    pub fn block_count(&mut self, min_item: usize) -> Result<usize> {
        // A non-negative one-byte count (below 64: the end marker 0 and the blocks of small
        // arrays and maps) inline; everything else through the general path.
        if let Some(&b) = self.buf.get(self.pos) {
            if b & 0x81 == 0 {
                let n = (b >> 1) as usize;
                if n * min_item < self.buf.len() - self.pos {
                    self.pos += 1;
                    return Ok(n);
                }
            }
        }
        self.block_count_general(min_item)
    }

    #[inline(never)]
    fn block_count_general(&mut self, min_item: usize) -> Result<usize> {
        let c = self.long()?;
        let n = if c < 0 {
            self.long()?; // byte size of the block
            c.unsigned_abs()
        } else {
            c as u64
        };
        // n * min_item > remaining, without a division (items of size 0: at most 2^24)
        let too_many = if min_item == 0 {
            n > 1 << 24
        } else {
            n.saturating_mul(min_item as u64) > self.remaining() as u64
        };
        if too_many {
            return Err(Error::corrupt(format!(
                "block count {n} at offset {} cannot fit in the {} remaining bytes",
                self.pos,
                self.remaining()
            )));
        }
        Ok(n as usize)
    }

    /// Skips a negative-count block by its byte size, or returns false for a positive count.
    pub fn skip_sized_block(&mut self) -> Result<Option<usize>> {
        let start = self.pos;
        let c = self.long()?;
        if c < 0 {
            let size = self.length()?;
            self.pos += size;
            Ok(Some(c.unsigned_abs() as usize))
        } else {
            self.pos = start;
            Ok(None)
        }
    }
}

/// The zigzag-decoded value of a one-byte varint.
#[inline(always)]
fn zigzag32(b: u8) -> i32 {
    ((b >> 1) as i32) ^ -((b & 1) as i32)
}

/// A varint of at most eight bytes at the start of `word` (little-endian): its zigzag-decoded
/// value and length; `None` if its eighth byte still has the continuation bit.
#[inline(always)]
fn varint_in_word(word: u64) -> Option<(i64, usize)> {
    let stops = !word & 0x8080_8080_8080_8080;
    if stops == 0 {
        return None;
    }
    let len = (stops.trailing_zeros() / 8 + 1) as usize;
    // keep the bytes up to and including the stop byte (the shift is < 64: len >= 1)
    let mut x = word & (u64::MAX >> (64 - 8 * len));
    x &= 0x7f7f_7f7f_7f7f_7f7f;
    x = ((x & 0x7f00_7f00_7f00_7f00) >> 1) | (x & 0x007f_007f_007f_007f);
    x = ((x & 0x3fff_0000_3fff_0000) >> 2) | (x & 0x0000_3fff_0000_3fff);
    x = ((x & 0x0fff_ffff_0000_0000) >> 4) | (x & 0x0000_0000_0fff_ffff);
    Some((((x >> 1) as i64) ^ -((x & 1) as i64), len))
}

/// Appends a zigzag varint long. Varints of two to eight bytes are spread into one
/// little-endian word (seven bits per byte, continuation bits set) and appended as a fixed
/// eight-byte copy then truncated: no loop, no capacity check per byte, no memcpy call.
#[inline(always)]
pub fn put_long(out: &mut Vec<u8>, v: i64) {
    let z = ((v << 1) ^ (v >> 63)) as u64;
    if z < 0x80 {
        out.push(z as u8);
        return;
    }
    if z < 1 << 56 {
        let n = ((64 - z.leading_zeros()) as usize).div_ceil(7); // 2..=8 bytes
        let mut x = (z & 0x0fff_ffff) | ((z & 0x00ff_ffff_f000_0000) << 4);
        x = (x & 0x0000_3fff_0000_3fff) | ((x & 0x0fff_c000_0fff_c000) << 2);
        x = (x & 0x007f_007f_007f_007f) | ((x & 0x3f80_3f80_3f80_3f80) << 1);
        x |= 0x8080_8080_8080_8080 & ((1u64 << (8 * (n - 1))) - 1);
        let len = out.len();
        out.extend_from_slice(&x.to_le_bytes());
        out.truncate(len + n);
        return;
    }
    put_long_wide(out, z)
}

/// A zigzagged value of nine or ten varint bytes.
#[cold]
fn put_long_wide(out: &mut Vec<u8>, mut z: u64) {
    while z >= 0x80 {
        out.push((z as u8) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

#[inline]
pub fn put_int(out: &mut Vec<u8>, v: i32) {
    put_long(out, v as i64)
}

/// Appends length-prefixed bytes (or a string); the 4- and 8-byte values of bounds are copied
/// without a memcpy call.
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_long(out, b.len() as i64);
    if let Ok(a) = <[u8; 8]>::try_from(b) {
        out.extend_from_slice(&a);
    } else if let Ok(a) = <[u8; 4]>::try_from(b) {
        out.extend_from_slice(&a);
    } else {
        out.extend_from_slice(b);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn varint_round_trip() {
        for v in [
            0i64,
            1,
            -1,
            63,
            -64,
            64,
            300,
            i32::MAX as i64,
            i64::MAX,
            i64::MIN,
        ] {
            let mut b = Vec::new();
            put_long(&mut b, v);
            let mut r = Reader::new(&b);
            assert_eq!(r.long().unwrap(), v);
            assert_eq!(r.remaining(), 0);
        }
    }

    #[test]
    fn put_long_matches_the_byte_loop() {
        let reference = |v: i64| {
            let mut z = ((v << 1) ^ (v >> 63)) as u64;
            let mut out = vec![];
            while z >= 0x80 {
                out.push((z as u8) | 0x80);
                z >>= 7;
            }
            out.push(z as u8);
            out
        };
        for bits in 0..64 {
            let p = 1i64 << bits;
            for v in [p, p.wrapping_sub(1), p.wrapping_neg(), !p] {
                let mut b = vec![7u8];
                put_long(&mut b, v);
                assert_eq!(b[1..], reference(v)[..], "{v}");
            }
        }
    }

    #[test]
    fn varints_of_every_length_and_position() {
        // Every length from 1 to 10 bytes, with and without padding after it (the word path
        // needs eight bytes left; the byte loop handles the tail of a buffer).
        let mut vals: Vec<i64> = vec![0, -1, i64::MAX, i64::MIN];
        for bits in 0..63 {
            vals.extend([1i64 << bits, -(1i64 << bits), (1i64 << bits) - 1]);
        }
        let mut all = Vec::new();
        for &v in &vals {
            put_long(&mut all, v);
        }
        let mut r = Reader::new(&all);
        for &v in &vals {
            assert_eq!(r.long().unwrap(), v);
        }
        assert_eq!(r.remaining(), 0);
        for &v in &vals {
            let mut b = Vec::new();
            put_long(&mut b, v);
            for pad in 0..10 {
                let mut p = b.clone();
                p.extend(std::iter::repeat_n(0x55u8, pad));
                let mut r = Reader::new(&p);
                assert_eq!(r.long().unwrap(), v, "{v} with {pad} bytes after");
                assert_eq!(r.position(), b.len());
            }
        }
    }

    /// The one-window pair reads agree with the separate reads they replace (the oracle) on
    /// valid pairs of every varint length, on random bytes and at every buffer tail: same
    /// values, same position, errors where those give errors.
    #[test]
    fn pair_reads_match_separate_reads() {
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let mut bufs: Vec<Vec<u8>> = Vec::new();
        for bits in 0..64 {
            for key in [0i64, 1, -1, 10, 63, -64, 64, 1 << 31, -(1 << 40)] {
                let v = (1i64 << bits).wrapping_sub((next() % 3) as i64);
                let mut b = Vec::new();
                put_long(&mut b, key);
                put_long(&mut b, v);
                let n = (next() % 20) as usize;
                put_long(&mut b, key);
                put_bytes(&mut b, &vec![0xab; n]);
                bufs.push(b);
            }
        }
        for _ in 0..3000 {
            let n = (next() % 24) as usize;
            bufs.push(
                (0..n)
                    .map(|_| (next() as u8) & if n.is_multiple_of(2) { 0xff } else { 0x9f })
                    .collect(),
            );
        }
        for b in &bufs {
            for start in 0..b.len() {
                let tail = &b[start..];
                let mut fast = Reader::new(tail);
                let mut slow = Reader::new(tail);
                let f = fast.int_long();
                let s = slow.int().and_then(|k| Ok((k, slow.long()?)));
                assert_eq!(f.is_ok(), s.is_ok(), "{tail:?}");
                if let (Ok(f), Ok(s)) = (f, s) {
                    assert_eq!((f, fast.position()), (s, slow.position()), "{tail:?}");
                }
                let mut fast = Reader::new(tail);
                let mut slow = Reader::new(tail);
                let f = fast.int_bytes();
                let s = slow.int().and_then(|k| Ok((k, slow.bytes()?)));
                assert_eq!(f.is_ok(), s.is_ok(), "{tail:?}");
                if let (Ok(f), Ok(s)) = (f, s) {
                    assert_eq!((f, fast.position()), (s, slow.position()), "{tail:?}");
                }
            }
        }
    }

    #[test]
    fn hostile_inputs_are_corrupt() {
        assert!(Reader::new(&[0x80, 0x80]).long().is_err());
        assert!(Reader::new(&[0xff; 11]).long().is_err());
        assert!(Reader::new(&[0x10, 1, 2]).bytes().is_err());
        assert!(Reader::new(&[0x01]).bytes().is_err()); // negative length
        assert!(Reader::new(&[2]).boolean().is_err());
        let mut b = Vec::new();
        put_long(&mut b, 1 << 40);
        assert!(Reader::new(&b).int().is_err());
        assert!(Reader::new(&b).block_count(1).is_err());
    }
}
