//! The `deletion-vector-v1` blob: a big-endian u32 length `L` (magic + bitmap), the magic
//! `D1 D3 39 64`, the 64-bit Roaring bitmap, and a big-endian CRC-32 of magic + bitmap.
//! Total length `L + 8`.

use super::roaring::PositionBitmap;
use crate::{Error, Result};

/// The blob's magic bytes (`1681511377` written little-endian).
pub const DV_MAGIC: [u8; 4] = [0xD1, 0xD3, 0x39, 0x64];
/// The Puffin blob type of a deletion vector.
pub const DV_BLOB_TYPE: &str = "deletion-vector-v1";

/// Encodes `bitmap` as a `deletion-vector-v1` blob.
pub fn encode_dv(bitmap: &PositionBitmap) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&DV_MAGIC);
    bitmap.serialize_into(&mut out);
    let len = (out.len() - 4) as u32;
    out[..4].copy_from_slice(&len.to_be_bytes());
    let crc = crc32fast::hash(&out[4..]);
    out.extend_from_slice(&crc.to_be_bytes());
    out
}

/// Decodes a `deletion-vector-v1` blob (exactly the `content_size_in_bytes` bytes at
/// `content_offset`), checking length, magic and CRC, and the cardinality against
/// `expected_cardinality` (the delete file's `record_count`) when given.
pub fn decode_dv(blob: &[u8], expected_cardinality: Option<u64>) -> Result<PositionBitmap> {
    if blob.len() < 12 {
        return Err(Error::corrupt(format!(
            "deletion vector truncated: {} bytes, at least 12 needed",
            blob.len()
        )));
    }
    let len = u32::from_be_bytes(blob[..4].try_into().expect("4 bytes")) as u64;
    if len + 8 != blob.len() as u64 {
        return Err(Error::corrupt(format!(
            "invalid deletion vector length {len}: the blob has {} bytes, so it must be {}",
            blob.len(),
            blob.len() - 8
        )));
    }
    let body = &blob[4..blob.len() - 4];
    if body[..4] != DV_MAGIC {
        return Err(Error::corrupt(format!(
            "invalid deletion vector magic {:02x?}, expected {:02x?}",
            &body[..4],
            DV_MAGIC
        )));
    }
    let stored = u32::from_be_bytes(blob[blob.len() - 4..].try_into().expect("4 bytes"));
    let actual = crc32fast::hash(body);
    if stored != actual {
        return Err(Error::corrupt(format!(
            "Invalid CRC in deletion vector: 0x{actual:08x}, expected 0x{stored:08x}"
        )));
    }
    let bitmap = PositionBitmap::deserialize(&body[4..])?;
    if let Some(expected) = expected_cardinality {
        let actual = bitmap.cardinality();
        if actual != expected {
            return Err(Error::corrupt(format!(
                "deletion vector cardinality {actual} does not match the expected {expected}"
            )));
        }
    }
    Ok(bitmap)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn golden(name: &str) -> Option<Vec<u8>> {
        crate::deletes::shared_testdata(&format!("iceberg-java/deletes/{name}"))
    }

    #[test]
    fn golden_files_round_trip_byte_for_byte() {
        let m = (1u64 << 31) - 1;
        let mut all: Vec<u64> = vec![5, 7];
        all.extend(65537..66536);
        all.extend(131073..196607);
        let k1 = 1u64 << 32;
        all.extend([k1 + 10, k1 + 20]);
        all.extend((10..500).map(|p| k1 + 65536 + p));
        all.extend((1..65535).map(|p| k1 + 131072 + p));
        let cases: Vec<(&str, Vec<u64>)> = vec![
            ("empty-position-index.bin", vec![]),
            (
                "small-alternating-values-position-index.bin",
                vec![1, 3, 5, 7, 9],
            ),
            (
                "small-and-large-values-position-index.bin",
                vec![100, 101, m + 100, m + 101],
            ),
            ("all-container-types-position-index.bin", all),
        ];
        for (name, positions) in cases {
            let Some(bytes) = golden(name) else {
                eprintln!("skipping {name}: shared testdata not found");
                continue;
            };
            let bm = decode_dv(&bytes, Some(positions.len() as u64)).unwrap();
            assert_eq!(bm.iter().collect::<Vec<_>>(), positions, "{name}");
            let again = PositionBitmap::from_positions(positions).unwrap();
            assert_eq!(encode_dv(&again), bytes, "{name}");
        }
    }

    #[test]
    fn crc_and_cardinality_checks() {
        let bm = PositionBitmap::from_positions([1, 2]).unwrap();
        let mut blob = encode_dv(&bm);
        let n = blob.len();
        assert_eq!(&blob[n - 4..], &0x712fa6e8u32.to_be_bytes());
        assert!(decode_dv(&blob, Some(3)).is_err());
        blob[n - 1] ^= 1;
        let e = decode_dv(&blob, None).unwrap_err();
        assert!(
            e.message().contains("0x712fa6e8, expected 0x712fa6e9"),
            "{e}"
        );
        assert!(decode_dv(&blob[..n - 1], None).is_err());
    }
}
