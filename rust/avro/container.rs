//! Avro object container files: header (magic, metadata map, sync marker), data blocks and the
//! codecs Iceberg uses (`null`, raw `deflate`, `zstandard`, `snappy` with its CRC32).

use std::collections::BTreeMap;
use std::hash::{BuildHasher, Hasher};
use std::io::Read;

use super::binary::{put_bytes, put_long, Reader};
use super::schema::Schema;
use crate::{Error, Result};

const MAGIC: &[u8; 4] = b"Obj\x01";
/// The largest decompressed block accepted: bounds memory on hostile input (a manifest block
/// of Java's writer is well under a megabyte).
pub const MAX_BLOCK: usize = 256 << 20;

/// A block compression codec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Codec {
    Null,
    /// Raw RFC 1951 deflate (libdeflate) at the given level (0-12).
    Deflate(u32),
    /// Zstandard at the given level.
    Zstandard(i32),
    Snappy,
}

impl Codec {
    /// The codec named by `avro.codec` or by Iceberg's `write.manifest.compression-codec`
    /// (`gzip` -> deflate, `zstd` -> zstandard, `uncompressed` -> null), with an optional level.
    pub fn from_name(name: &str, level: Option<i32>) -> Result<Codec> {
        Ok(match name.to_ascii_lowercase().as_str() {
            "null" | "uncompressed" | "none" | "" => Codec::Null,
            // libdeflate levels 0-12. Its level 1 compresses manifests within a few percent of
            // zlib's default level 6 at several times the speed (docs/benchmarks.md). Level -1
            // is zlib's (and Java's Deflater's) "default compression", its level 6.
            "deflate" | "gzip" => Codec::Deflate(match level {
                Some(-1) => 6,
                other => other.unwrap_or(1).clamp(0, 12) as u32,
            }),
            // every level zstd has, the negative (fast) ones too
            "zstandard" | "zstd" => {
                let levels = zstd::compression_level_range();
                let level = level.unwrap_or(1);
                Codec::Zstandard(level.clamp(*levels.start(), *levels.end()))
            }
            "snappy" => Codec::Snappy,
            other => return Err(Error::unsupported(format!("Avro codec {other:?}"))),
        })
    }

    /// The `avro.codec` value.
    pub fn avro_name(&self) -> &'static str {
        match self {
            Codec::Null => "null",
            Codec::Deflate(_) => "deflate",
            Codec::Zstandard(_) => "zstandard",
            Codec::Snappy => "snappy",
        }
    }

    /// Decompresses one block into `scratch` (reused across blocks; its length only grows) or
    /// borrows it as is for `null`. Output beyond [`MAX_BLOCK`] bytes is corrupt.
    fn decompress<'s>(
        &self,
        data: &'s [u8],
        scratch: &'s mut Vec<u8>,
        inflater: &mut Option<libdeflater::Decompressor>,
    ) -> Result<&'s [u8]> {
        fn bounded(mut r: impl Read, hint: usize, out: &mut Vec<u8>) -> Result<usize> {
            out.clear();
            out.reserve(hint.min(MAX_BLOCK));
            (&mut r)
                .take(MAX_BLOCK as u64 + 1)
                .read_to_end(out)
                .map_err(|e| Error::corrupt(format!("block does not decompress: {e}")))?;
            if out.len() > MAX_BLOCK {
                return Err(Error::corrupt(format!(
                    "block decompresses to more than {MAX_BLOCK} bytes"
                )));
            }
            Ok(out.len())
        }
        match self {
            Codec::Null => Ok(data),
            Codec::Deflate(_) => {
                // libdeflate inflates a whole block at once into a buffer that must be large
                // enough: start from the last block's size (or 4x the input) and double.
                let d = inflater.get_or_insert_with(libdeflater::Decompressor::new);
                let mut cap = scratch
                    .len()
                    .max(data.len().saturating_mul(4))
                    .clamp(4096, MAX_BLOCK);
                loop {
                    if scratch.len() < cap {
                        scratch.resize(cap, 0);
                    }
                    match d.deflate_decompress(data, &mut scratch[..cap]) {
                        Ok(n) => return Ok(&scratch[..n]),
                        Err(libdeflater::DecompressionError::InsufficientSpace)
                            if cap < MAX_BLOCK =>
                        {
                            cap = cap.saturating_mul(2).min(MAX_BLOCK);
                        }
                        Err(libdeflater::DecompressionError::InsufficientSpace) => {
                            return Err(Error::corrupt(format!(
                                "block decompresses to more than {MAX_BLOCK} bytes"
                            )))
                        }
                        Err(e) => {
                            return Err(Error::corrupt(format!("block does not decompress: {e}")))
                        }
                    }
                }
            }
            Codec::Zstandard(_) => {
                let dec = zstd::stream::read::Decoder::with_buffer(data)
                    .map_err(|e| Error::corrupt(format!("bad zstandard block: {e}")))?;
                let n = bounded(dec, data.len() * 4, scratch)?;
                Ok(&scratch[..n])
            }
            Codec::Snappy => {
                if data.len() < 4 {
                    return Err(Error::corrupt("snappy block shorter than its CRC"));
                }
                let (body, crc) = data.split_at(data.len() - 4);
                let n = snap::raw::decompress_len(body)
                    .map_err(|e| Error::corrupt(format!("bad snappy block: {e}")))?;
                if n > MAX_BLOCK {
                    return Err(Error::corrupt(format!(
                        "snappy block claims {n} bytes, more than {MAX_BLOCK}"
                    )));
                }
                if scratch.len() < n {
                    scratch.resize(n, 0);
                }
                let n = snap::raw::Decoder::new()
                    .decompress(body, &mut scratch[..n])
                    .map_err(|e| Error::corrupt(format!("bad snappy block: {e}")))?;
                let out = &scratch[..n];
                let want = u32::from_be_bytes([crc[0], crc[1], crc[2], crc[3]]);
                if crc32fast::hash(out) != want {
                    return Err(Error::corrupt("snappy block CRC32 mismatch"));
                }
                Ok(out)
            }
        }
    }

    fn compress(
        &self,
        data: &[u8],
        out: &mut Vec<u8>,
        deflater: &mut Option<libdeflater::Compressor>,
    ) -> Result<()> {
        match self {
            Codec::Null => out.extend_from_slice(data),
            Codec::Deflate(level) => {
                let c = match deflater {
                    Some(c) => c,
                    None => {
                        let lvl = libdeflater::CompressionLvl::new(*level as i32).map_err(|e| {
                            Error::internal(format!("deflate level {level}: {e:?}"))
                        })?;
                        deflater.insert(libdeflater::Compressor::new(lvl))
                    }
                };
                let start = out.len();
                out.resize(start + c.deflate_compress_bound(data.len()), 0);
                let n = c
                    .deflate_compress(data, &mut out[start..])
                    .map_err(|e| Error::internal(format!("deflate failed: {e}")))?;
                out.truncate(start + n);
            }
            Codec::Zstandard(level) => {
                let c = zstd::bulk::compress(data, *level)
                    .map_err(|e| Error::internal(format!("zstandard failed: {e}")))?;
                out.extend_from_slice(&c);
            }
            Codec::Snappy => {
                let c = snap::raw::Encoder::new()
                    .compress_vec(data)
                    .map_err(|e| Error::internal(format!("snappy failed: {e}")))?;
                out.extend_from_slice(&c);
                out.extend_from_slice(&crc32fast::hash(data).to_be_bytes());
            }
        }
        Ok(())
    }
}

thread_local! {
    /// The compressor of a thread's last deflate block, reused while the level stays the same.
    static DEFLATER: std::cell::RefCell<Option<(u32, libdeflater::Compressor)>> =
        const { std::cell::RefCell::new(None) };
    /// The buffer a thread encodes one block into before compressing it.
    static RAW: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Compresses one block with the calling thread's cached compressor.
fn compress_here(codec: Codec, data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let Codec::Deflate(level) = codec else {
        return codec.compress(data, out, &mut None);
    };
    let mut slot = DEFLATER
        .with(|d| d.borrow_mut().take())
        .filter(|(l, _)| *l == level)
        .map(|(_, c)| c);
    let r = codec.compress(data, out, &mut slot);
    if let Some(c) = slot {
        DEFLATER.with(|d| *d.borrow_mut() = Some((level, c)));
    }
    r
}

/// The decompression state a container reuses: the output buffer of its blocks and the
/// inflater. Kept per thread between containers so a manifest scan does not allocate and zero
/// a fresh megabyte per file.
#[derive(Default)]
struct Scratch {
    buf: Vec<u8>,
    inflater: Option<libdeflater::Decompressor>,
}

/// Spare buffers above this size are dropped rather than kept for the next container.
const KEEP_SCRATCH: usize = 16 << 20;

thread_local! {
    static SPARE: std::cell::RefCell<Scratch> = std::cell::RefCell::new(Scratch::default());
}

/// A parsed container header plus an iterator over its blocks.
pub struct Container<'a> {
    pub metadata: BTreeMap<String, Vec<u8>>,
    pub schema: Schema,
    pub codec: Codec,
    sync: [u8; 16],
    reader: Reader<'a>,
    scratch: Scratch,
}

thread_local! {
    /// The last few writer schemas parsed on this thread, by their JSON bytes: the manifests of
    /// a table mostly share one schema, whose parse costs more than cloning it.
    static SCHEMAS: std::cell::RefCell<Vec<(Vec<u8>, Schema)>> = const {
        std::cell::RefCell::new(Vec::new())
    };
}

/// How many parsed schemas [`SCHEMAS`] keeps per thread.
const SCHEMA_CACHE: usize = 4;

/// [`Schema::parse`] through the per-thread cache of recently parsed schemas.
fn parse_schema_cached(json: &[u8]) -> Result<Schema> {
    let hit = SCHEMAS
        .try_with(|c| {
            c.borrow()
                .iter()
                .find(|(k, _)| k.as_slice() == json)
                .map(|(_, s)| s.clone())
        })
        .ok()
        .flatten();
    if let Some(s) = hit {
        return Ok(s);
    }
    let s = Schema::parse(json)?;
    let _ = SCHEMAS.try_with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= SCHEMA_CACHE {
            c.remove(0);
        }
        c.push((json.to_vec(), s.clone()));
    });
    Ok(s)
}

impl Drop for Container<'_> {
    fn drop(&mut self) {
        if self.scratch.buf.len() <= KEEP_SCRATCH {
            let s = std::mem::take(&mut self.scratch);
            let _ = SPARE.try_with(|spare| *spare.borrow_mut() = s);
        }
    }
}

impl<'a> Container<'a> {
    /// Parses the header. Errors are `CorruptFile` (or `Unsupported` for an unknown codec).
    pub fn open(data: &'a [u8]) -> Result<Container<'a>> {
        let mut r = Reader::new(data);
        let magic = r
            .fixed(4)
            .map_err(|_| Error::corrupt("not an Avro file: too short"))?;
        if magic != MAGIC {
            return Err(Error::corrupt(format!(
                "not an Avro file: bad magic {magic:02x?}"
            )));
        }
        let mut metadata = BTreeMap::new();
        loop {
            let n = r.block_count(2)?;
            if n == 0 {
                break;
            }
            for _ in 0..n {
                let k = r.string()?.to_owned();
                let v = r.bytes()?.to_vec();
                metadata.insert(k, v);
            }
        }
        let mut sync = [0u8; 16];
        sync.copy_from_slice(r.fixed(16)?);
        let schema = parse_schema_cached(
            metadata
                .get("avro.schema")
                .ok_or_else(|| Error::corrupt("header has no avro.schema"))?,
        )?;
        let codec = match metadata.get("avro.codec") {
            None => Codec::Null,
            Some(c) => {
                let name = std::str::from_utf8(c).unwrap_or("<non-UTF-8>");
                match name {
                    "null" | "deflate" | "zstandard" | "snappy" => Codec::from_name(name, None)?,
                    other => return Err(Error::unsupported(format!("Avro codec {other:?}"))),
                }
            }
        };
        Ok(Container {
            metadata,
            schema,
            codec,
            sync,
            reader: r,
            scratch: SPARE
                .try_with(|spare| std::mem::take(&mut *spare.borrow_mut()))
                .unwrap_or_default(),
        })
    }

    /// A metadata value as UTF-8 text.
    pub fn meta_str(&self, key: &str) -> Result<Option<&str>> {
        self.metadata
            .get(key)
            .map(|v| {
                std::str::from_utf8(v)
                    .map_err(|_| Error::corrupt(format!("metadata {key} is not UTF-8")))
            })
            .transpose()
    }

    /// The record count and compressed byte size of the blocks not read yet, and the
    /// compressed size of the next one, from their headers alone (nothing is decompressed).
    /// Stops quietly at the first malformed header: [`Container::next_block`] reports it.
    /// Used only to size buffers.
    pub fn pending(&self) -> (u64, u64, u64) {
        let mut r = self.reader.clone();
        let (mut records, mut bytes, mut next) = (0u64, 0u64, None);
        while r.remaining() > 0 {
            let (Ok(count), Ok(size)) = (r.long(), r.length()) else {
                break;
            };
            if count < 0 || r.fixed(size).is_err() || r.fixed(16).is_err() {
                break;
            }
            records = records.saturating_add(count as u64);
            bytes += size as u64;
            next.get_or_insert(size as u64);
        }
        (records, bytes, next.unwrap_or(0))
    }

    /// The file offset of the next block (or of the end).
    pub fn position(&self) -> usize {
        self.reader.position()
    }

    /// Moves to the block at file offset `pos`, an earlier [`Container::position`] (at least
    /// the header's end).
    pub fn seek(&mut self, pos: usize, header_end: usize) -> Result<()> {
        if pos < header_end {
            return Err(Error::corrupt(format!(
                "block offset {pos} is inside the header"
            )));
        }
        self.reader.seek(pos)
    }

    /// The next block still compressed: its object count and bytes (sync marker checked);
    /// `None` at the end of the file. Decompress with [`Container::inflate`].
    pub fn next_raw_block(&mut self) -> Result<Option<(usize, &'a [u8])>> {
        if self.reader.remaining() == 0 {
            return Ok(None);
        }
        let count = self.reader.long()?;
        let size = self.reader.length()?;
        if count < 0 {
            return Err(Error::corrupt(format!("negative block count {count}")));
        }
        let raw = self.reader.fixed(size)?;
        let sync = self.reader.fixed(16)?;
        if sync != self.sync {
            return Err(Error::corrupt(format!(
                "sync marker mismatch after block ending at offset {}",
                self.reader.position() - 16
            )));
        }
        Ok(Some((count as usize, raw)))
    }

    /// A block from [`Container::next_raw_block`] decompressed with this file's codec into
    /// `scratch` (any thread may do it, each with its own scratch), its count checked.
    pub fn inflate<'s>(
        codec: Codec,
        count: usize,
        raw: &'s [u8],
        scratch: &'s mut Vec<u8>,
        inflater: &mut Option<libdeflater::Decompressor>,
    ) -> Result<&'s [u8]> {
        let data = codec.decompress(raw, scratch, inflater)?;
        if count as u64 > data.len() as u64 + (1 << 20) {
            return Err(Error::corrupt(format!(
                "block count {count} is absurd for {} bytes",
                data.len()
            )));
        }
        Ok(data)
    }

    /// The next block: its object count and decompressed bytes (valid until the next call);
    /// `None` at the end of the file.
    pub fn next_block(&mut self) -> Result<Option<(usize, &[u8])>> {
        let Some((count, raw)) = self.next_raw_block()? else {
            return Ok(None);
        };
        let s = &mut self.scratch;
        let data = Container::inflate(self.codec, count, raw, &mut s.buf, &mut s.inflater)?;
        Ok(Some((count, data)))
    }
}

/// Writes a container: call [`ContainerWriter::datum`] to get the buffer for the next datum,
/// encode it, then [`ContainerWriter::end_datum`]; blocks are flushed at `block_size` bytes.
pub struct ContainerWriter {
    out: Vec<u8>,
    block: Vec<u8>,
    count: i64,
    codec: Codec,
    sync: [u8; 16],
    block_size: usize,
    deflater: Option<libdeflater::Compressor>,
    compressed: Vec<u8>,
}

fn random_sync() -> [u8; 16] {
    let mut s = [0u8; 16];
    for (i, chunk) in s.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        if let Ok(t) = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH) {
            h.write_u128(t.as_nanos());
        }
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    s
}

impl ContainerWriter {
    /// Starts a file with the schema JSON and extra metadata (`avro.schema` and `avro.codec`
    /// are written first, as Java does).
    pub fn new(schema_json: &str, metadata: &[(String, Vec<u8>)], codec: Codec) -> Self {
        let mut out = Vec::with_capacity(64 << 10);
        out.extend_from_slice(MAGIC);
        put_long(&mut out, 2 + metadata.len() as i64);
        put_bytes(&mut out, b"avro.schema");
        put_bytes(&mut out, schema_json.as_bytes());
        put_bytes(&mut out, b"avro.codec");
        put_bytes(&mut out, codec.avro_name().as_bytes());
        for (k, v) in metadata {
            put_bytes(&mut out, k.as_bytes());
            put_bytes(&mut out, v);
        }
        put_long(&mut out, 0);
        let sync = random_sync();
        out.extend_from_slice(&sync);
        ContainerWriter {
            out,
            block: Vec::with_capacity(1 << 20),
            count: 0,
            codec,
            sync,
            block_size: 1 << 20,
            deflater: None,
            compressed: Vec::new(),
        }
    }

    /// The buffer the next datum is encoded into.
    #[inline]
    pub fn datum(&mut self) -> &mut Vec<u8> {
        &mut self.block
    }

    /// Marks the end of one datum; flushes a block when it reaches the block size.
    pub fn end_datum(&mut self) -> Result<()> {
        self.count += 1;
        if self.block.len() >= self.block_size {
            self.flush()?;
        }
        Ok(())
    }

    fn flush(&mut self) -> Result<()> {
        if self.count == 0 {
            return Ok(());
        }
        let mut compressed = std::mem::take(&mut self.compressed);
        compressed.clear();
        self.codec
            .compress(&self.block, &mut compressed, &mut self.deflater)?;
        put_long(&mut self.out, self.count);
        put_bytes(&mut self.out, &compressed);
        self.compressed = compressed;
        self.out.extend_from_slice(&self.sync);
        self.block.clear();
        self.count = 0;
        Ok(())
    }

    /// Appends records `0..n`, encoded by `enc(i, out)`, in blocks of `per_block` records
    /// (after any pending datums). Blocks are encoded and compressed in parallel on the rayon
    /// pool, each into its worker's reused buffer, and appended in order.
    pub fn encode_blocks<F>(&mut self, n: usize, per_block: usize, enc: F) -> Result<()>
    where
        F: Fn(usize, &mut Vec<u8>) -> Result<()> + Sync,
    {
        use rayon::prelude::*;
        self.flush()?;
        let per = per_block.max(1);
        let codec = self.codec;
        let starts: Vec<usize> = (0..n).step_by(per).collect();
        let blocks = crate::pool::install(None, || {
            starts
                .par_iter()
                .map(|&s| {
                    let e = (s + per).min(n);
                    RAW.with(|raw| {
                        let mut raw = raw.borrow_mut();
                        raw.clear();
                        for i in s..e {
                            enc(i, &mut raw)?;
                        }
                        let mut out = Vec::with_capacity(raw.len() / 2 + 64);
                        compress_here(codec, &raw, &mut out)?;
                        if raw.capacity() > KEEP_SCRATCH {
                            *raw = Vec::new();
                        }
                        Ok((e - s, out))
                    })
                })
                .collect::<Result<Vec<_>>>()
        })?;
        let total: usize = blocks.iter().map(|(_, b)| b.len() + 36).sum();
        self.out.reserve(total);
        for (count, comp) in blocks {
            put_long(&mut self.out, count as i64);
            put_bytes(&mut self.out, &comp);
            self.out.extend_from_slice(&self.sync);
        }
        Ok(())
    }

    /// Flushes the last block and returns the file's bytes.
    pub fn finish(mut self) -> Result<Vec<u8>> {
        self.flush()?;
        Ok(self.out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(codec: Codec, n: i64) -> Vec<u8> {
        let mut w = ContainerWriter::new(r#""long""#, &[("k".into(), b"v".to_vec())], codec);
        for i in 0..n {
            put_long(w.datum(), i);
            w.end_datum().unwrap();
        }
        w.finish().unwrap()
    }

    fn read(data: &[u8]) -> Result<Vec<i64>> {
        let mut c = Container::open(data)?;
        let mut out = vec![];
        while let Some((n, block)) = c.next_block()? {
            let mut r = Reader::new(block);
            for _ in 0..n {
                out.push(r.long()?);
            }
        }
        Ok(out)
    }

    #[test]
    fn codecs_round_trip() {
        for codec in [
            Codec::Null,
            Codec::Deflate(6),
            Codec::Zstandard(1),
            Codec::Snappy,
        ] {
            let f = write(codec, 1000);
            assert_eq!(read(&f).unwrap(), (0..1000).collect::<Vec<_>>());
            let c = Container::open(&f).unwrap();
            assert_eq!(c.meta_str("k").unwrap(), Some("v"));
            assert_eq!(read(&write(codec, 0)).unwrap(), Vec::<i64>::new());
        }
    }

    /// Blocks encoded and compressed in parallel read back in order, after pending datums.
    #[test]
    fn parallel_blocks_round_trip() {
        for codec in [Codec::Null, Codec::Deflate(1), Codec::Snappy] {
            let mut w = ContainerWriter::new(r#""long""#, &[], codec);
            put_long(w.datum(), -1);
            w.end_datum().unwrap();
            w.encode_blocks(1000, 64, |i, out| {
                put_long(out, i as i64 * 3);
                Ok(())
            })
            .unwrap();
            let f = w.finish().unwrap();
            let mut want = vec![-1];
            want.extend((0..1000).map(|i| i * 3));
            assert_eq!(read(&f).unwrap(), want);
            let mut c = Container::open(&f).unwrap();
            let mut blocks = 0;
            while c.next_block().unwrap().is_some() {
                blocks += 1;
            }
            assert_eq!(blocks, 1 + 1000usize.div_ceil(64));
        }
        let mut w = ContainerWriter::new(r#""long""#, &[], Codec::Null);
        let err = w.encode_blocks(10, 3, |i, _| {
            if i == 7 {
                Err(Error::validation("row 7"))
            } else {
                Ok(())
            }
        });
        assert!(matches!(err, Err(Error::Validation(_))));
    }

    #[test]
    fn corruption_is_detected() {
        let f = write(Codec::Snappy, 100);
        let mut bad = f.clone();
        bad[0] = b'X';
        assert!(matches!(read(&bad), Err(Error::CorruptFile(_))));
        let mut bad = f.clone();
        let n = bad.len();
        bad[n - 1] ^= 1; // sync marker
        assert!(matches!(read(&bad), Err(Error::CorruptFile(_))));
        let mut bad = f.clone();
        bad[n - 20] ^= 1; // CRC
        assert!(matches!(read(&bad), Err(Error::CorruptFile(_))));
        for cut in 0..f.len() {
            let _ = read(&f[..cut]);
        }
        let mut w = ContainerWriter::new(r#""long""#, &[], Codec::Null);
        w.datum().push(0);
        w.end_datum().unwrap();
        let mut f = w.finish().unwrap();
        let i = f.len() - 16 - 1 - 1 - 1;
        f[i] = 0x7e; // the block count 63 for one byte of data is fine, but read fails
        assert!(read(&f).is_err());
        let u = br#"Obj\x01"#;
        assert!(read(u).is_err());
    }

    #[test]
    fn unknown_codec_is_unsupported() {
        let mut f = Vec::new();
        f.extend_from_slice(MAGIC);
        put_long(&mut f, 2);
        put_bytes(&mut f, b"avro.schema");
        put_bytes(&mut f, b"\"long\"");
        put_bytes(&mut f, b"avro.codec");
        put_bytes(&mut f, b"bzip2");
        put_long(&mut f, 0);
        f.extend_from_slice(&[0; 16]);
        assert!(matches!(Container::open(&f), Err(Error::Unsupported(_))));
    }

    #[test]
    fn levels_mean_what_zlib_and_zstd_mean() {
        // -1 is zlib's default compression (level 6), not "store"
        assert_eq!(
            Codec::from_name("gzip", Some(-1)).unwrap(),
            Codec::Deflate(6)
        );
        assert_eq!(Codec::from_name("gzip", None).unwrap(), Codec::Deflate(1));
        assert_eq!(
            Codec::from_name("gzip", Some(9)).unwrap(),
            Codec::Deflate(9)
        );
        // zstd's fast negative levels are kept, not raised to -7
        assert_eq!(
            Codec::from_name("zstd", Some(-100)).unwrap(),
            Codec::Zstandard(-100)
        );
        assert_eq!(
            Codec::from_name("zstd", Some(22)).unwrap(),
            Codec::Zstandard(22)
        );
        let data: Vec<u8> = (0..20_000u32)
            .flat_map(|i| (i % 97).to_le_bytes())
            .collect();
        let mut out = Vec::new();
        compress_here(Codec::from_name("gzip", Some(-1)).unwrap(), &data, &mut out).unwrap();
        assert!(
            out.len() < data.len() / 4,
            "{} of {}",
            out.len(),
            data.len()
        );
    }
}
