//! Blob and footer compression codecs of the Puffin spec: none, `lz4` (one LZ4 frame with the
//! content size) and `zstd` (one Zstandard frame with the content size).

use std::io::{Read, Write};

use crate::{Error, Result};

/// A Puffin compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    None,
    Lz4,
    Zstd,
}

impl Codec {
    /// The codec named in blob metadata (`"lz4"`, `"zstd"`); anything else is unsupported.
    pub fn from_name(name: &str) -> Result<Codec> {
        match name {
            "lz4" => Ok(Codec::Lz4),
            "zstd" => Ok(Codec::Zstd),
            other => Err(Error::unsupported(format!(
                "unsupported puffin compression codec {other:?} (the spec allows lz4 and zstd)"
            ))),
        }
    }

    /// The name written to blob metadata; `None` when uncompressed (the key is omitted).
    pub fn name(self) -> Option<&'static str> {
        match self {
            Codec::None => None,
            Codec::Lz4 => Some("lz4"),
            Codec::Zstd => Some("zstd"),
        }
    }

    pub fn compress(self, data: &[u8]) -> Result<Vec<u8>> {
        match self {
            Codec::None => Ok(data.to_vec()),
            Codec::Zstd => {
                let mut enc = zstd::stream::Encoder::new(Vec::new(), 3)
                    .map_err(|e| Error::internal(format!("zstd: {e}")))?;
                enc.include_contentsize(true)
                    .and_then(|_| enc.set_pledged_src_size(Some(data.len() as u64)))
                    .and_then(|_| enc.write_all(data))
                    .map_err(|e| Error::internal(format!("zstd: {e}")))?;
                enc.finish()
                    .map_err(|e| Error::internal(format!("zstd: {e}")))
            }
            Codec::Lz4 => {
                let info = lz4_flex::frame::FrameInfo::new().content_size(Some(data.len() as u64));
                let mut enc = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
                enc.write_all(data)
                    .map_err(|e| Error::internal(format!("lz4: {e}")))?;
                enc.finish()
                    .map_err(|e| Error::internal(format!("lz4: {e}")))
            }
        }
    }

    pub fn decompress(self, data: &[u8]) -> Result<Vec<u8>> {
        let mut out = Vec::new();
        let res = match self {
            Codec::None => return Ok(data.to_vec()),
            Codec::Zstd => zstd::stream::Decoder::new(data)
                .and_then(|mut d| d.read_to_end(&mut out))
                .map_err(|e| format!("zstd: {e}")),
            Codec::Lz4 => lz4_flex::frame::FrameDecoder::new(data)
                .read_to_end(&mut out)
                .map_err(|e| format!("lz4: {e}")),
        };
        res.map_err(|e| Error::corrupt(format!("cannot decompress puffin data: {e}")))?;
        Ok(out)
    }
}
