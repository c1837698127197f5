//! Puffin files: `Magic Blob_1 ... Blob_n Footer`, with
//! `Footer = Magic FooterPayload FooterPayloadSize(i32 LE) Flags(4) Magic`. The payload is the
//! footer JSON (blob metadata and file properties), LZ4-framed when flag bit 0 is set.
//! Blobs may be zstd- or lz4-compressed; deletion vectors never are.

mod codec;
mod footer;

pub use codec::Codec;
pub use footer::{BlobMetadata, FileMetadata};

use crate::deletes::dv::{encode_dv, DV_BLOB_TYPE};
use crate::deletes::roaring::PositionBitmap;
use crate::{Error, Result};

/// The 4 magic bytes `PFA1` that open a Puffin file and its footer.
pub const MAGIC: [u8; 4] = *b"PFA1";
/// Footer flag: the payload is LZ4-compressed.
pub const FLAG_FOOTER_COMPRESSED: u32 = 1;
/// The field id of `_pos`, which a deletion vector's blob metadata names.
pub const ROW_POSITION_FIELD_ID: i32 = i32::MAX - 2;

/// Where the footer starts and how long it is (the whole footer, both magics included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FooterLocation {
    pub start: usize,
    pub size: usize,
}

/// Parses the footer of a whole Puffin file held in memory.
pub fn read_file_metadata(file: &[u8]) -> Result<(FileMetadata, FooterLocation)> {
    let n = file.len();
    if n < 4 + 4 + 12 {
        return Err(Error::corrupt(format!(
            "puffin file truncated: {n} bytes is too short for magic and footer"
        )));
    }
    if file[..4] != MAGIC {
        return Err(Error::corrupt(format!(
            "invalid puffin file magic {:02x?}",
            &file[..4]
        )));
    }
    if file[n - 4..] != MAGIC {
        return Err(Error::corrupt(format!(
            "invalid puffin footer magic at the end of the file: {:02x?}",
            &file[n - 4..]
        )));
    }
    let flags = u32::from_le_bytes(file[n - 8..n - 4].try_into().expect("4 bytes"));
    if flags & !FLAG_FOOTER_COMPRESSED != 0 {
        return Err(Error::unsupported(format!(
            "puffin footer has unknown flags 0x{flags:08x}"
        )));
    }
    let size = i32::from_le_bytes(file[n - 12..n - 8].try_into().expect("4 bytes"));
    let max = n - 4 - 4 - 12;
    if size < 0 || size as usize > max {
        return Err(Error::corrupt(format!(
            "invalid puffin footer payload size {size}: the file leaves room for {max}"
        )));
    }
    let payload_start = n - 12 - size as usize;
    let start = payload_start - 4;
    if file[start..payload_start] != MAGIC {
        return Err(Error::corrupt(format!(
            "invalid puffin footer start magic {:02x?} at offset {start}",
            &file[start..payload_start]
        )));
    }
    let raw = &file[payload_start..n - 12];
    let json = if flags & FLAG_FOOTER_COMPRESSED != 0 {
        Codec::Lz4.decompress(raw)?
    } else {
        raw.to_vec()
    };
    let meta = FileMetadata::from_json(&json)?;
    for (i, b) in meta.blobs.iter().enumerate() {
        let end = b.offset.checked_add(b.length);
        if b.offset < 4 || end.is_none_or(|e| e > start as u64) {
            return Err(Error::corrupt(format!(
                "puffin blob {i} ({}) at offset {} length {} lies outside the blob area [4, {start})",
                b.blob_type, b.offset, b.length
            )));
        }
    }
    Ok((
        meta,
        FooterLocation {
            start,
            size: n - start,
        },
    ))
}

/// The bytes of one blob, decompressed. `file` is the whole file (or any buffer in which the
/// blob's `offset` and `length` are valid).
pub fn read_blob(file: &[u8], blob: &BlobMetadata) -> Result<Vec<u8>> {
    let end = blob.offset.checked_add(blob.length);
    let raw = match end {
        Some(end) if end <= file.len() as u64 => &file[blob.offset as usize..end as usize],
        _ => {
            return Err(Error::corrupt(format!(
                "puffin blob {} at offset {} length {} exceeds the file ({} bytes)",
                blob.blob_type,
                blob.offset,
                blob.length,
                file.len()
            )))
        }
    };
    match blob.compression_codec.as_deref() {
        None => Ok(raw.to_vec()),
        Some(name) => Codec::from_name(name)?.decompress(raw),
    }
}

/// Builds a Puffin file in memory. Blob metadata records each blob's offset and length, which a
/// manifest entry for a DV stores as `content_offset` / `content_size_in_bytes`.
#[derive(Debug)]
pub struct PuffinWriter {
    buf: Vec<u8>,
    blobs: Vec<BlobMetadata>,
}

impl Default for PuffinWriter {
    fn default() -> Self {
        Self::new()
    }
}

impl PuffinWriter {
    pub fn new() -> Self {
        Self {
            buf: MAGIC.to_vec(),
            blobs: Vec::new(),
        }
    }

    /// Appends a blob, compressing it with `codec`, and returns its metadata.
    #[allow(clippy::too_many_arguments)]
    pub fn add_blob(
        &mut self,
        data: &[u8],
        blob_type: &str,
        fields: Vec<i32>,
        snapshot_id: i64,
        sequence_number: i64,
        codec: Codec,
        properties: Vec<(String, String)>,
    ) -> Result<BlobMetadata> {
        if blob_type == DV_BLOB_TYPE && codec != Codec::None {
            return Err(Error::validation(
                "deletion-vector-v1 blobs must not be compressed",
            ));
        }
        let stored = codec.compress(data)?;
        let meta = BlobMetadata {
            blob_type: blob_type.to_owned(),
            fields,
            snapshot_id,
            sequence_number,
            offset: self.buf.len() as u64,
            length: stored.len() as u64,
            compression_codec: codec.name().map(str::to_owned),
            properties,
        };
        self.buf.extend_from_slice(&stored);
        self.blobs.push(meta.clone());
        Ok(meta)
    }

    /// Appends a `deletion-vector-v1` blob for `referenced_data_file` with the metadata the spec
    /// requires: fields `[_pos]`, snapshot id and sequence number -1 (inherited), no
    /// compression, properties `referenced-data-file` and `cardinality`.
    pub fn add_deletion_vector(
        &mut self,
        bitmap: &PositionBitmap,
        referenced_data_file: &str,
    ) -> Result<BlobMetadata> {
        let blob = encode_dv(bitmap);
        let props = vec![
            (
                "referenced-data-file".to_owned(),
                referenced_data_file.to_owned(),
            ),
            ("cardinality".to_owned(), bitmap.cardinality().to_string()),
        ];
        self.add_blob(
            &blob,
            DV_BLOB_TYPE,
            vec![ROW_POSITION_FIELD_ID],
            -1,
            -1,
            Codec::None,
            props,
        )
    }

    /// The metadata of the blobs written so far.
    pub fn blobs(&self) -> &[BlobMetadata] {
        &self.blobs
    }

    /// Writes the footer and returns the file's bytes. A compressed footer (LZ4) is allowed by
    /// the spec but neither Java nor PyIceberg can read it, so it is off unless asked for.
    pub fn finish(
        self,
        properties: Vec<(String, String)>,
        compress_footer: bool,
    ) -> Result<Vec<u8>> {
        let mut buf = self.buf;
        let meta = FileMetadata {
            blobs: self.blobs,
            properties,
        };
        let json = meta.to_json();
        let payload = if compress_footer {
            Codec::Lz4.compress(json.as_bytes())?
        } else {
            json.into_bytes()
        };
        let size = i32::try_from(payload.len())
            .map_err(|_| Error::validation("puffin footer larger than 2 GiB"))?;
        buf.extend_from_slice(&MAGIC);
        buf.extend_from_slice(&payload);
        buf.extend_from_slice(&size.to_le_bytes());
        let flags = if compress_footer {
            FLAG_FOOTER_COMPRESSED
        } else {
            0
        };
        buf.extend_from_slice(&flags.to_le_bytes());
        buf.extend_from_slice(&MAGIC);
        Ok(buf)
    }
}

#[cfg(test)]
mod tests;
