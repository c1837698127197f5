//! Avro binary encoding primitives: a bounds-checked reader over a byte slice and the matching
//! encoders. Every read checks the remaining length first, so hostile input yields
//! `Error::CorruptFile` instead of a panic or an oversized allocation.

use crate::{Error, Result};

/// A cursor over Avro-encoded bytes. Errors carry no file name; callers add it with `context`.
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

    /// A zigzag varint long (at most 10 bytes).
    #[inline]
    pub fn long(&mut self) -> Result<i64> {
        if let Some(&b) = self.buf.get(self.pos) {
            if b < 0x80 {
                self.pos += 1;
                let v = b as u64;
                return Ok(((v >> 1) as i64) ^ -((v & 1) as i64));
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

    /// A zigzag varint int; values outside the i32 range are corrupt.
    #[inline]
    pub fn int(&mut self) -> Result<i32> {
        let v = self.long()?;
        i32::try_from(v).map_err(|_| Error::corrupt(format!("int value {v} out of range")))
    }

    /// A non-negative length that fits in the remaining bytes.
    #[inline]
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
    #[inline]
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
    #[inline]
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
    pub fn block_count(&mut self, min_item: usize) -> Result<usize> {
        let c = self.long()?;
        let n = if c < 0 {
            self.long()?; // byte size of the block
            c.unsigned_abs()
        } else {
            c as u64
        };
        let limit = self
            .remaining()
            .checked_div(min_item)
            .map_or(1 << 24, |l| l as u64);
        if n > limit {
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

/// Appends a zigzag varint long.
#[inline]
pub fn put_long(out: &mut Vec<u8>, v: i64) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
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

/// Appends length-prefixed bytes (or a string).
#[inline]
pub fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    put_long(out, b.len() as i64);
    out.extend_from_slice(b);
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
