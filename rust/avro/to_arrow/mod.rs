//! Decoding Avro records straight into Arrow columns. A writer schema is bound once to a target
//! Arrow type (record fields matched by Iceberg field id, carried in the target's field metadata
//! under [`FIELD_ID`], falling back to the name); the resulting tree of decoders owns plain
//! vectors and turns them into Arrow arrays at the end. Writer fields with no target are skipped,
//! targets with no writer field are null.

mod bind;
mod decode;
mod finish;
mod node;
#[cfg(test)]
mod tests;

use arrow_array::ArrayRef;
use arrow_schema::{DataType, Field};

use super::binary::Reader;
use super::schema::Schema;
use crate::{Error, Result};
use bind::bind;
pub use node::KeySet;
use node::Node;

/// The Arrow field-metadata key holding the Iceberg field id of a target field.
pub const FIELD_ID: &str = "field_id";

/// The field id of an Arrow field, from its metadata.
pub fn field_id(f: &Field) -> Option<i32> {
    f.metadata().get(FIELD_ID).and_then(|s| s.parse().ok())
}

/// A decoder bound to one writer schema and one target Arrow type.
pub struct Decoder {
    root: Node,
    target: DataType,
}

impl Decoder {
    /// Binds `writer` (usually a record) to the target Arrow type.
    pub fn new(writer: &Schema, target: &DataType) -> Result<Decoder> {
        Decoder::with_keys(writer, target, None)
    }

    /// Like [`Decoder::new`], but int-keyed maps keep only the pairs whose key is in `keep`.
    pub fn with_keys(writer: &Schema, target: &DataType, keep: Option<KeySet>) -> Result<Decoder> {
        Ok(Decoder {
            root: bind(writer, target, "root", keep.as_ref())?,
            target: target.clone(),
        })
    }

    /// Decodes one value.
    #[inline]
    pub fn decode(&mut self, r: &mut Reader<'_>) -> Result<()> {
        self.root.decode(r)
    }

    /// Decodes `count` values, reserving room for them after the first (sized by the averages
    /// seen so far) so the columns grow once per block instead of by repeated doubling.
    pub fn decode_many(&mut self, r: &mut Reader<'_>, count: usize) -> Result<()> {
        self.decode_many_then(r, count, 0, 0)
    }

    /// [`Decoder::decode_many`] that also reserves room for about `later` more values expected
    /// after this block, taking at most `later_bytes` bytes of input: the columns are then
    /// sized once per file instead of regrown (and copied) block after block.
    pub fn decode_many_then(
        &mut self,
        r: &mut Reader<'_>,
        count: usize,
        later: usize,
        later_bytes: usize,
    ) -> Result<()> {
        if count == 0 {
            return Ok(());
        }
        let start = r.remaining();
        self.root.decode(r)?;
        // Bounded by the bytes left: hostile counts were rejected by the container, and every
        // value takes at least one byte unless the schema is empty. Later values are bounded
        // by the bytes they may take, at the size of the first value.
        let first = (start - r.remaining()).max(1);
        let budget = r.remaining() + later_bytes;
        let n = (count - 1).min(r.remaining()) + later.min(later_bytes / first);
        self.root.reserve(n.min(budget), budget);
        for _ in 1..count {
            self.root.decode(r)?;
        }
        Ok(())
    }

    /// The Arrow array of everything decoded.
    /// Arrays that Arrow rejects (say a required key the writer schema lacks, left null)
    /// come from the file, so they are `CorruptFile`.
    pub fn finish(self) -> Result<ArrayRef> {
        self.root.finish(&self.target).map_err(|e| match e {
            Error::Validation(m) => Error::corrupt(format!("decoded values are inconsistent: {m}")),
            other => other,
        })
    }
}

fn mismatch(w: &Schema, t: &DataType, path: &str) -> Error {
    Error::corrupt(format!(
        "field {path}: Avro type {w:?} cannot be read as {t}"
    ))
}
