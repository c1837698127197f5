//! The CRC-32 of a page, put into its Thrift compact `PageHeader` (field 4), which the
//! `parquet` crate does not write.

use crate::{Error, Result};

pub(super) const DICTIONARY_PAGE: i32 = 2;
pub(super) const DATA_PAGE_V2: i32 = 3;
const T_I32: u8 = 5;
const CRC_FIELD: i16 = 4;

fn read_varint(data: &[u8], pos: &mut usize) -> Result<u64> {
    let mut out = 0u64;
    for shift in (0..64).step_by(7) {
        let b = *data
            .get(*pos)
            .ok_or_else(|| Error::internal("page header ends inside a varint"))?;
        *pos += 1;
        out |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Ok(out);
        }
    }
    Err(Error::internal("page header varint too long"))
}

fn write_varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn zigzag(v: i32) -> u64 {
    u64::from(((v << 1) ^ (v >> 31)) as u32)
}

/// A Thrift compact `PageHeader` with field 4 (`crc`) set to `crc` and, when given, field 3
/// (`compressed_page_size`) set to `compressed_size`; and the page type. The header's leading
/// fields are 1-3 (type, sizes: all i32, in short form), which the `parquet` crate always
/// writes first; anything else is refused.
pub(super) fn header_with_crc(
    header: &[u8],
    crc: u32,
    compressed_size: Option<i32>,
) -> Result<(Vec<u8>, i32)> {
    let bad = || Error::internal("unexpected page header layout");
    let mut out = Vec::with_capacity(header.len() + 8);
    let mut pos = 0usize;
    let mut last: i16 = 0;
    let mut page_type = -1;
    loop {
        let b = *header.get(pos).ok_or_else(bad)?;
        let delta = (b >> 4) as i16;
        let ftype = b & 0x0f;
        if b == 0 || (delta != 0 && last + delta > CRC_FIELD) {
            // insert the crc before this field (or the stop byte)
            out.push((((CRC_FIELD - last) as u8) << 4) | T_I32);
            write_varint(zigzag(crc as i32), &mut out);
            if b == 0 {
                out.extend_from_slice(&header[pos..]);
            } else {
                let next = last + delta - CRC_FIELD;
                out.push(((next as u8) << 4) | ftype);
                out.extend_from_slice(&header[pos + 1..]);
            }
            return Ok((out, page_type));
        }
        if delta == 0 || ftype != T_I32 || last + delta == CRC_FIELD {
            return Err(bad());
        }
        out.push(b);
        pos += 1;
        last += delta;
        let from = pos;
        let v = read_varint(header, &mut pos)?;
        if last == 1 {
            page_type = ((v >> 1) as i64 ^ -((v & 1) as i64)) as i32;
        }
        match compressed_size {
            Some(size) if last == 3 => write_varint(zigzag(size), &mut out),
            _ => out.extend_from_slice(&header[from..pos]),
        }
    }
}
