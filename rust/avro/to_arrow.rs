//! Decoding Avro records straight into Arrow columns. A writer schema is bound once to a target
//! Arrow type (record fields matched by Iceberg field id, carried in the target's field metadata
//! under [`FIELD_ID`], falling back to the name); the resulting tree of decoders owns plain
//! vectors and turns them into Arrow arrays at the end. Writer fields with no target are skipped,
//! targets with no writer field are null.

use std::sync::Arc;

use arrow_array::Array;
use arrow_array::{
    new_null_array, ArrayRef, BinaryArray, BooleanArray, Decimal128Array, FixedSizeBinaryArray,
    Float32Array, Float64Array, Int32Array, Int64Array, ListArray, MapArray, StringArray,
    StructArray,
};
use arrow_buffer::{Buffer, NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields};

use super::binary::Reader;
use super::schema::Schema;
use super::skip::Skip;
use crate::{Error, Result};

/// The Arrow field-metadata key holding the Iceberg field id of a target field.
pub const FIELD_ID: &str = "field_id";

/// The field id of an Arrow field, from its metadata.
pub fn field_id(f: &Field) -> Option<i32> {
    f.metadata().get(FIELD_ID).and_then(|s| s.parse().ok())
}

/// The validity of a column, kept as one flag per value only once the first null arrives.
#[derive(Default)]
struct Nulls {
    valid: Option<Vec<bool>>,
    len: usize,
}

impl Nulls {
    #[inline]
    fn valid(&mut self) {
        if let Some(v) = &mut self.valid {
            v.push(true);
        }
        self.len += 1;
    }
    #[inline]
    fn null(&mut self) {
        let len = self.len;
        self.valid
            .get_or_insert_with(|| vec![true; len])
            .push(false);
        self.len += 1;
    }
    fn finish(self) -> Option<NullBuffer> {
        self.valid.map(NullBuffer::from)
    }
    fn reserve(&mut self, n: usize) {
        if let Some(v) = &mut self.valid {
            v.reserve(n);
        }
    }
}

/// How a value is read from the writer's encoding.
#[derive(Clone, Copy, PartialEq)]
enum Src {
    Int,
    Long,
    Float,
    Double,
    Bytes,
    Fixed(usize),
}

enum Node {
    Bool(Vec<bool>, Nulls),
    /// Int (or a long in the i32 range) into Int32 or Date32.
    I32(Src, Vec<i32>, Nulls),
    /// Int or long into i64 (Int64, Timestamp, Time64).
    I64(Src, Vec<i64>, Nulls),
    F32(Vec<f32>, Nulls),
    F64(Src, Vec<f64>, Nulls),
    /// Bytes, string or fixed into Binary or Utf8.
    Bin(Src, Vec<i32>, Vec<u8>, Nulls),
    /// Fixed (or bytes of that length) into FixedSizeBinary.
    FixedBin(Src, usize, Vec<u8>, Nulls),
    /// Big-endian two's complement bytes or fixed into Decimal128.
    Dec(Src, Vec<i128>, Nulls),
    /// Union of null and one other branch.
    Opt {
        null: Option<usize>,
        value: usize,
        branches: usize,
        inner: Box<Node>,
    },
    List {
        offsets: Vec<i32>,
        nulls: Nulls,
        item_min: usize,
        item: Box<Node>,
    },
    Record {
        steps: Vec<Step>,
        children: Vec<Node>,
        missing: Vec<usize>,
        nulls: Nulls,
        len: usize,
    },
    /// A target with no writer counterpart: only nulls are appended.
    Missing(usize),
    /// An Avro array of `{int key, long|bytes value}` records read as an Arrow
    /// `map<int32, int64|binary>` (the metric maps of data files): one tight loop per map
    /// instead of a record, two leaves and their null tracking per pair.
    IntMap {
        offsets: Vec<i32>,
        nulls: Nulls,
        /// Whether the writer puts the key before the value.
        key_first: bool,
        keys: Vec<i32>,
        values: MapValues,
        /// Only pairs whose key is set here are kept (a projected read).
        keep: Option<KeySet>,
    },
}

/// A set of small non-negative int keys (Iceberg field ids) as one flag per key.
#[derive(Clone)]
pub struct KeySet(Arc<[bool]>);

impl KeySet {
    /// The set of `keys`; negative keys are never stored, so they are dropped.
    pub fn new(keys: &[i32]) -> KeySet {
        let max = keys.iter().copied().filter(|&k| k >= 0).max();
        let mut flags = vec![false; max.map_or(0, |m| m as usize + 1)];
        for &k in keys {
            if k >= 0 {
                flags[k as usize] = true;
            }
        }
        KeySet(flags.into())
    }

    #[inline(always)]
    fn contains(&self, k: i32) -> bool {
        usize::try_from(k)
            .ok()
            .and_then(|i| self.0.get(i))
            .copied()
            .unwrap_or(false)
    }
}

enum MapValues {
    Long(Vec<i64>),
    /// Offsets and data of binary values.
    Bin(Vec<i32>, Vec<u8>),
}

enum Step {
    Read(usize),
    Skip(Skip),
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

fn bind(w: &Schema, t: &DataType, path: &str, keep: Option<&KeySet>) -> Result<Node> {
    if let Schema::Union(branches) = w {
        let (null, value, inner) = w.as_optional().ok_or_else(|| {
            Error::unsupported(format!("field {path}: union {w:?} is not [null, T]"))
        })?;
        return Ok(Node::Opt {
            null,
            value,
            branches: branches.len(),
            inner: Box::new(bind(inner, t, path, keep)?),
        });
    }
    let src = match w {
        Schema::Int => Some(Src::Int),
        Schema::Long => Some(Src::Long),
        Schema::Float => Some(Src::Float),
        Schema::Double => Some(Src::Double),
        Schema::Bytes | Schema::String => Some(Src::Bytes),
        Schema::Fixed(n) => Some(Src::Fixed(*n)),
        _ => None,
    };
    let n = Nulls::default();
    Ok(match (w, t) {
        (Schema::Boolean, DataType::Boolean) => Node::Bool(vec![], n),
        (Schema::Int | Schema::Long, DataType::Int32 | DataType::Date32) => {
            Node::I32(src.unwrap_or(Src::Int), vec![], n)
        }
        (
            Schema::Int | Schema::Long,
            DataType::Int64 | DataType::Timestamp(_, _) | DataType::Time64(_),
        ) => Node::I64(src.unwrap_or(Src::Long), vec![], n),
        (Schema::Float, DataType::Float32) => Node::F32(vec![], n),
        (Schema::Float | Schema::Double, DataType::Float64) => {
            Node::F64(src.unwrap_or(Src::Double), vec![], n)
        }
        (Schema::Bytes | Schema::String | Schema::Fixed(_), DataType::Binary | DataType::Utf8) => {
            Node::Bin(src.unwrap_or(Src::Bytes), vec![0], vec![], n)
        }
        (Schema::Bytes | Schema::Fixed(_), DataType::FixedSizeBinary(size)) => {
            if let Schema::Fixed(f) = w {
                if *f as i32 != *size {
                    return Err(mismatch(w, t, path));
                }
            }
            Node::FixedBin(src.unwrap_or(Src::Bytes), *size as usize, vec![], n)
        }
        (Schema::Bytes | Schema::Fixed(_), DataType::Decimal128(_, _)) => {
            Node::Dec(src.unwrap_or(Src::Bytes), vec![], n)
        }
        (Schema::Array { items, .. }, DataType::List(f) | DataType::Map(f, _)) => {
            let item = bind(items, f.data_type(), path, keep)?;
            let is_map = matches!(t, DataType::Map(..));
            match item {
                Node::Record {
                    steps,
                    children,
                    missing,
                    ..
                } if is_map && missing.is_empty() && int_map_shape(&steps, &children, f) => {
                    let key_first = matches!(steps[0], Step::Read(0));
                    let values = match &children[1] {
                        Node::I64(..) => MapValues::Long(vec![]),
                        _ => MapValues::Bin(vec![0], vec![]),
                    };
                    Node::IntMap {
                        offsets: vec![0],
                        nulls: n,
                        key_first,
                        keys: vec![],
                        values,
                        keep: keep.cloned(),
                    }
                }
                item => Node::List {
                    offsets: vec![0],
                    nulls: n,
                    item_min: items.min_size(),
                    item: Box::new(item),
                },
            }
        }
        (Schema::Record(rec), DataType::Struct(fields)) => {
            let mut matched: Vec<Option<usize>> = vec![None; fields.len()];
            let mut steps = Vec::with_capacity(rec.fields.len());
            let mut children: Vec<Option<Node>> = (0..fields.len()).map(|_| None).collect();
            for wf in &rec.fields {
                let hit = fields
                    .iter()
                    .position(|tf| match (wf.field_id, field_id(tf)) {
                        (Some(a), Some(b)) => a == b,
                        (None, _) | (_, None) => wf.name == *tf.name(),
                    });
                match hit {
                    Some(i) if matched[i].is_none() => {
                        let p = format!("{path}.{}", wf.name);
                        children[i] = Some(bind(&wf.schema, fields[i].data_type(), &p, keep)?);
                        matched[i] = Some(steps.len());
                        steps.push(Step::Read(i));
                    }
                    Some(_) => {
                        return Err(Error::corrupt(format!(
                            "record {path}: field id {:?} appears twice",
                            wf.field_id
                        )))
                    }
                    None => steps.push(Step::Skip(Skip::new(&wf.schema))),
                }
            }
            let missing = (0..fields.len())
                .filter(|&i| matched[i].is_none())
                .collect();
            Node::Record {
                steps,
                children: children
                    .into_iter()
                    .map(|c| c.unwrap_or(Node::Missing(0)))
                    .collect(),
                missing,
                nulls: n,
                len: 0,
            }
        }
        _ => return Err(mismatch(w, t, path)),
    })
}

/// Whether a bound map-entry record is a required int key and a required long or bytes value.
fn int_map_shape(steps: &[Step], children: &[Node], entries: &Field) -> bool {
    let order_ok = matches!(
        steps,
        [Step::Read(0), Step::Read(1)] | [Step::Read(1), Step::Read(0)]
    );
    let DataType::Struct(fs) = entries.data_type() else {
        return false;
    };
    order_ok
        && fs.len() == 2
        && fs[0].data_type() == &DataType::Int32
        && matches!(children[0], Node::I32(Src::Int, ..))
        && matches!(
            (&children[1], fs[1].data_type()),
            (Node::I64(Src::Long, ..), DataType::Int64)
                | (Node::Bin(Src::Bytes, ..), DataType::Binary)
        )
}

/// Appends bytes; the 4- and 8-byte values of bounds are copied without a call to memcpy.
#[inline(always)]
fn extend_small(data: &mut Vec<u8>, b: &[u8]) {
    if let Ok(a) = <[u8; 8]>::try_from(b) {
        data.extend_from_slice(&a);
    } else if let Ok(a) = <[u8; 4]>::try_from(b) {
        data.extend_from_slice(&a);
    } else {
        data.extend_from_slice(b);
    }
}

/// Reads the blocks of one int-keyed map, appending its pairs.
#[inline]
fn decode_int_map(
    r: &mut Reader<'_>,
    key_first: bool,
    keys: &mut Vec<i32>,
    values: &mut MapValues,
) -> Result<()> {
    loop {
        let c = r.block_count(2)?;
        if c == 0 {
            return Ok(());
        }
        keys.reserve(c);
        match values {
            MapValues::Long(v) => {
                v.reserve(c);
                for _ in 0..c {
                    let (k, x) = if key_first {
                        r.int_long()?
                    } else {
                        let x = r.long()?;
                        (r.int()?, x)
                    };
                    keys.push(k);
                    v.push(x);
                }
            }
            MapValues::Bin(offs, data) => {
                offs.reserve(c);
                for _ in 0..c {
                    let (k, b) = if key_first {
                        r.int_bytes()?
                    } else {
                        let b = r.bytes()?;
                        (r.int()?, b)
                    };
                    keys.push(k);
                    extend_small(data, b);
                    offs.push(
                        i32::try_from(data.len())
                            .map_err(|_| Error::corrupt("binary column exceeds 2 GiB"))?,
                    );
                }
            }
        }
    }
}

/// [`decode_int_map`] keeping only the pairs whose key is in `keep`; the others are read past
/// without being stored.
fn decode_int_map_kept(
    r: &mut Reader<'_>,
    key_first: bool,
    keys: &mut Vec<i32>,
    values: &mut MapValues,
    keep: &KeySet,
) -> Result<()> {
    loop {
        let c = r.block_count(2)?;
        if c == 0 {
            return Ok(());
        }
        for _ in 0..c {
            match values {
                MapValues::Long(v) => {
                    let (k, x) = if key_first {
                        r.int_long()?
                    } else {
                        let x = r.long()?;
                        (r.int()?, x)
                    };
                    if keep.contains(k) {
                        keys.push(k);
                        v.push(x);
                    }
                }
                MapValues::Bin(offs, data) => {
                    let (k, b) = if key_first {
                        r.int_bytes()?
                    } else {
                        let b = r.bytes()?;
                        (r.int()?, b)
                    };
                    if keep.contains(k) {
                        keys.push(k);
                        extend_small(data, b);
                        offs.push(
                            i32::try_from(data.len())
                                .map_err(|_| Error::corrupt("binary column exceeds 2 GiB"))?,
                        );
                    }
                }
            }
        }
    }
}

#[inline]
fn read_i64(src: Src, r: &mut Reader<'_>) -> Result<i64> {
    match src {
        Src::Int => r.int().map(i64::from),
        _ => r.long(),
    }
}

#[inline]
fn read_bytes<'a>(src: Src, r: &mut Reader<'a>) -> Result<&'a [u8]> {
    match src {
        Src::Fixed(n) => r.fixed(n),
        _ => r.bytes(),
    }
}

fn decimal_from_be(b: &[u8]) -> Result<i128> {
    if b.len() > 16 {
        return Err(Error::corrupt(format!(
            "decimal of {} bytes exceeds 16",
            b.len()
        )));
    }
    if b.is_empty() {
        return Ok(0);
    }
    let fill = if b[0] & 0x80 != 0 { 0xff } else { 0 };
    let mut a = [fill; 16];
    a[16 - b.len()..].copy_from_slice(b);
    Ok(i128::from_be_bytes(a))
}

#[cold]
fn union_branch(b: i64, branches: usize) -> Error {
    Error::corrupt(format!(
        "unknown union branch {b} (the union has {branches})"
    ))
}

impl Node {
    /// Decodes one value. Optional values and the common leaves (ints, longs, bytes and
    /// strings) are decoded inline wherever a record or list decodes a child; everything else
    /// goes through [`Node::decode_nested`], so only nested values cost a call.
    #[inline(always)]
    fn decode(&mut self, r: &mut Reader<'_>) -> Result<()> {
        match self {
            Node::Opt {
                null,
                value,
                branches,
                inner,
            } => {
                let b = r.long()?;
                if b >= 0 && b as usize == *value {
                    inner.decode_value(r)
                } else if b >= 0 && Some(b as usize) == *null {
                    inner.push_null();
                    Ok(())
                } else {
                    Err(union_branch(b, *branches))
                }
            }
            _ => self.decode_value(r),
        }
    }

    /// [`Node::decode`] of a value that is not a union.
    #[inline(always)]
    fn decode_value(&mut self, r: &mut Reader<'_>) -> Result<()> {
        match self {
            Node::I32(src, v, n) => {
                v.push(if *src == Src::Int {
                    r.int()?
                } else {
                    let x = r.long()?;
                    i32::try_from(x)
                        .map_err(|_| Error::corrupt(format!("value {x} out of the int range")))?
                });
                n.valid();
            }
            Node::I64(src, v, n) => {
                v.push(read_i64(*src, r)?);
                n.valid();
            }
            Node::Bin(src, offs, data, n) => {
                let b = read_bytes(*src, r)?;
                data.extend_from_slice(b);
                let end = i32::try_from(data.len())
                    .map_err(|_| Error::corrupt("binary column exceeds 2 GiB"))?;
                offs.push(end);
                n.valid();
            }
            _ => self.decode_nested(r)?,
        }
        Ok(())
    }

    /// [`Node::decode`] of the nodes it does not decode inline.
    #[inline(never)]
    fn decode_nested(&mut self, r: &mut Reader<'_>) -> Result<()> {
        match self {
            // decoded inline by `decode_value`, which is the only caller
            Node::I32(..) | Node::I64(..) | Node::Bin(..) => self.decode_value(r)?,
            Node::Bool(v, n) => {
                v.push(r.boolean()?);
                n.valid();
            }
            Node::F32(v, n) => {
                v.push(r.float()?);
                n.valid();
            }
            Node::F64(src, v, n) => {
                v.push(if *src == Src::Float {
                    r.float()? as f64
                } else {
                    r.double()?
                });
                n.valid();
            }
            Node::FixedBin(src, size, data, n) => {
                let b = read_bytes(*src, r)?;
                if b.len() != *size {
                    return Err(Error::corrupt(format!(
                        "fixed value of {} bytes, expected {size}",
                        b.len()
                    )));
                }
                data.extend_from_slice(b);
                n.valid();
            }
            Node::Dec(src, v, n) => {
                v.push(decimal_from_be(read_bytes(*src, r)?)?);
                n.valid();
            }
            Node::Opt {
                null,
                value,
                branches,
                inner,
            } => {
                let b = r.long()?;
                if b >= 0 && b as usize == *value {
                    inner.decode(r)?;
                } else if b >= 0 && Some(b as usize) == *null {
                    inner.push_null();
                } else {
                    return Err(union_branch(b, *branches));
                }
            }
            Node::List {
                offsets,
                nulls,
                item_min,
                item,
            } => {
                let mut total = *offsets.last().unwrap_or(&0) as usize;
                loop {
                    let c = r.block_count(*item_min)?;
                    if c == 0 {
                        break;
                    }
                    for _ in 0..c {
                        item.decode(r)?;
                    }
                    total += c;
                }
                offsets.push(
                    i32::try_from(total).map_err(|_| Error::corrupt("list column too long"))?,
                );
                nulls.valid();
            }
            Node::Record {
                steps,
                children,
                missing,
                nulls,
                len,
            } => {
                for s in steps.iter() {
                    match s {
                        Step::Read(i) => children[*i].decode(r)?,
                        Step::Skip(schema) => schema.skip(r)?,
                    }
                }
                for &i in missing.iter() {
                    children[i].push_null();
                }
                nulls.valid();
                *len += 1;
            }
            Node::Missing(len) => *len += 1,
            Node::IntMap {
                offsets,
                nulls,
                key_first,
                keys,
                values,
                keep,
            } => {
                match keep {
                    None => decode_int_map(r, *key_first, keys, values)?,
                    Some(keep) => decode_int_map_kept(r, *key_first, keys, values, keep)?,
                }
                offsets.push(
                    i32::try_from(keys.len()).map_err(|_| Error::corrupt("map column too long"))?,
                );
                nulls.valid();
            }
        }
        Ok(())
    }

    /// Reserves room for `n` more values, children sized by the averages decoded so far.
    /// Every stored value or byte takes at least one byte of input, so no reservation exceeds
    /// `budget`, the input bytes left.
    fn reserve(&mut self, n: usize, budget: usize) {
        let scaled = |n: usize, items: usize, rows: usize| -> usize {
            if rows == 0 {
                0
            } else {
                n.saturating_mul(items.div_ceil(rows)).min(budget)
            }
        };
        match self {
            Node::Bool(v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::I32(_, v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::I64(_, v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::F32(v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::F64(_, v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::Bin(_, offs, data, nl) => {
                let rows = offs.len() - 1;
                data.reserve(scaled(n, data.len(), rows));
                offs.reserve(n);
                nl.reserve(n);
            }
            Node::FixedBin(_, size, data, nl) => {
                data.reserve(n.saturating_mul(*size).min(budget));
                nl.reserve(n);
            }
            Node::Dec(_, v, nl) => {
                v.reserve(n);
                nl.reserve(n);
            }
            Node::Opt { inner, .. } => inner.reserve(n, budget),
            Node::List {
                offsets,
                nulls,
                item,
                ..
            } => {
                let total = *offsets.last().unwrap_or(&0) as usize;
                item.reserve(scaled(n, total, offsets.len() - 1), budget);
                offsets.reserve(n);
                nulls.reserve(n);
            }
            Node::Record {
                children, nulls, ..
            } => {
                for c in children.iter_mut() {
                    c.reserve(n, budget);
                }
                nulls.reserve(n);
            }
            Node::Missing(_) => {}
            Node::IntMap {
                offsets,
                nulls,
                keys,
                values,
                ..
            } => {
                let rows = offsets.len() - 1;
                let pairs = scaled(n, keys.len(), rows);
                match values {
                    MapValues::Long(v) => v.reserve(pairs),
                    MapValues::Bin(offs, data) => {
                        data.reserve(scaled(n, data.len(), rows));
                        offs.reserve(pairs);
                    }
                }
                keys.reserve(pairs);
                offsets.reserve(n);
                nulls.reserve(n);
            }
        }
    }

    /// Appends a null: inline for the common leaves, a call for the rest.
    #[inline(always)]
    fn push_null(&mut self) {
        match self {
            Node::I32(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::I64(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::Bin(_, offs, _, n) => {
                offs.push(*offs.last().unwrap_or(&0));
                n.null();
            }
            _ => self.push_null_nested(),
        }
    }

    #[inline(never)]
    fn push_null_nested(&mut self) {
        match self {
            Node::Bool(v, n) => {
                v.push(false);
                n.null();
            }
            Node::I32(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::I64(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::F32(v, n) => {
                v.push(0.0);
                n.null();
            }
            Node::F64(_, v, n) => {
                v.push(0.0);
                n.null();
            }
            Node::Bin(_, offs, _, n) => {
                offs.push(*offs.last().unwrap_or(&0));
                n.null();
            }
            Node::FixedBin(_, size, data, n) => {
                data.resize(data.len() + *size, 0);
                n.null();
            }
            Node::Dec(_, v, n) => {
                v.push(0);
                n.null();
            }
            Node::Opt { inner, .. } => inner.push_null(),
            Node::List { offsets, nulls, .. } => {
                offsets.push(*offsets.last().unwrap_or(&0));
                nulls.null();
            }
            Node::Record {
                children,
                nulls,
                len,
                ..
            } => {
                for c in children.iter_mut() {
                    c.push_null();
                }
                nulls.null();
                *len += 1;
            }
            Node::Missing(len) => *len += 1,
            Node::IntMap { offsets, nulls, .. } => {
                offsets.push(*offsets.last().unwrap_or(&0));
                nulls.null();
            }
        }
    }

    fn finish(self, t: &DataType) -> Result<ArrayRef> {
        Ok(match self {
            Node::Bool(v, n) => Arc::new(BooleanArray::new(v.into(), n.finish())),
            Node::I32(_, v, n) => {
                let a = Int32Array::new(v.into(), n.finish());
                if *t == DataType::Int32 {
                    Arc::new(a)
                } else {
                    arrow_array::make_array(
                        a.into_data().into_builder().data_type(t.clone()).build()?,
                    )
                }
            }
            Node::I64(_, v, n) => {
                let a = Int64Array::new(v.into(), n.finish());
                if *t == DataType::Int64 {
                    Arc::new(a)
                } else {
                    arrow_array::make_array(
                        a.into_data().into_builder().data_type(t.clone()).build()?,
                    )
                }
            }
            Node::F32(v, n) => Arc::new(Float32Array::new(v.into(), n.finish())),
            Node::F64(_, v, n) => Arc::new(Float64Array::new(v.into(), n.finish())),
            Node::Bin(_, offs, data, n) => {
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offs));
                if *t == DataType::Utf8 {
                    Arc::new(
                        StringArray::try_new(offsets, Buffer::from_vec(data), n.finish())
                            .map_err(|e| Error::corrupt(format!("string column: {e}")))?,
                    )
                } else {
                    Arc::new(BinaryArray::new(
                        offsets,
                        Buffer::from_vec(data),
                        n.finish(),
                    ))
                }
            }
            Node::FixedBin(_, size, data, n) => Arc::new(FixedSizeBinaryArray::try_new(
                size as i32,
                Buffer::from_vec(data),
                n.finish(),
            )?),
            Node::Dec(_, v, n) => {
                let DataType::Decimal128(p, s) = t else {
                    return Err(Error::internal("decimal target"));
                };
                Arc::new(
                    Decimal128Array::new(v.into(), n.finish()).with_precision_and_scale(*p, *s)?,
                )
            }
            Node::Opt { inner, .. } => inner.finish(t)?,
            Node::List {
                offsets,
                nulls,
                item,
                ..
            } => {
                let offsets = OffsetBuffer::new(ScalarBuffer::from(offsets));
                match t {
                    DataType::List(f) => Arc::new(ListArray::try_new(
                        f.clone(),
                        offsets,
                        item.finish(f.data_type())?,
                        nulls.finish(),
                    )?),
                    DataType::Map(f, sorted) => {
                        let entries = item.finish(f.data_type())?;
                        let entries = entries
                            .as_any()
                            .downcast_ref::<StructArray>()
                            .ok_or_else(|| Error::internal("map entries are not a struct"))?;
                        if entries.column(0).null_count() > 0 || entries.null_count() > 0 {
                            return Err(Error::corrupt("map with a null key or entry"));
                        }
                        let entries = StructArray::new(
                            match f.data_type() {
                                DataType::Struct(fs) => fs.clone(),
                                _ => return Err(Error::internal("map entries type")),
                            },
                            entries.columns().to_vec(),
                            None,
                        );
                        Arc::new(MapArray::try_new(
                            f.clone(),
                            offsets,
                            entries,
                            nulls.finish(),
                            *sorted,
                        )?)
                    }
                    _ => return Err(Error::internal("list target")),
                }
            }
            Node::Record {
                children,
                nulls,
                len,
                ..
            } => {
                let DataType::Struct(fields) = t else {
                    return Err(Error::internal("record target"));
                };
                finish_struct(fields, children, nulls.finish(), len)?
            }
            Node::Missing(len) => new_null_array(t, len),
            Node::IntMap {
                offsets,
                nulls,
                keys,
                values,
                ..
            } => {
                let DataType::Map(f, sorted) = t else {
                    return Err(Error::internal("map target"));
                };
                let DataType::Struct(fs) = f.data_type() else {
                    return Err(Error::internal("map entries type"));
                };
                let values: ArrayRef = match values {
                    MapValues::Long(v) => Arc::new(Int64Array::new(v.into(), None)),
                    MapValues::Bin(offs, data) => Arc::new(BinaryArray::new(
                        OffsetBuffer::new(ScalarBuffer::from(offs)),
                        Buffer::from_vec(data),
                        None,
                    )),
                };
                let keys: ArrayRef = Arc::new(Int32Array::new(keys.into(), None));
                let entries = StructArray::try_new(fs.clone(), vec![keys, values], None)?;
                Arc::new(MapArray::try_new(
                    f.clone(),
                    OffsetBuffer::new(ScalarBuffer::from(offsets)),
                    entries,
                    nulls.finish(),
                    *sorted,
                )?)
            }
        })
    }
}

fn finish_struct(
    fields: &Fields,
    children: Vec<Node>,
    nulls: Option<NullBuffer>,
    len: usize,
) -> Result<ArrayRef> {
    let mut cols = Vec::with_capacity(children.len());
    for (c, f) in children.into_iter().zip(fields.iter()) {
        let c = match c {
            Node::Missing(_) => new_null_array(f.data_type(), len),
            other => other.finish(f.data_type())?,
        };
        cols.push(c);
    }
    Ok(Arc::new(StructArray::try_new_with_length(
        fields.clone(),
        cols,
        nulls,
        len,
    )?))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::binary::{put_bytes, put_long};
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Int32Type, Int64Type};
    use std::collections::HashMap;

    fn id(name: &str, dt: DataType, id: i32) -> Field {
        Field::new(name, dt, name != "key")
            .with_metadata(HashMap::from([(FIELD_ID.to_owned(), id.to_string())]))
    }

    fn map_target(value: DataType) -> DataType {
        let entries = Fields::from(vec![id("key", DataType::Int32, 1), id("value", value, 2)]);
        DataType::Map(
            Arc::new(Field::new("entries", DataType::Struct(entries), false)),
            false,
        )
    }

    fn writer(fields: &str) -> Schema {
        let json = format!(
            r#"{{"type": "array", "items": {{"type": "record", "name": "kv", "fields": [{fields}]}}}}"#
        );
        Schema::parse(json.as_bytes()).unwrap()
    }

    fn decode(w: &Schema, t: &DataType, data: &[u8], rows: usize) -> ArrayRef {
        let mut d = Decoder::new(w, t).unwrap();
        let mut r = Reader::new(data);
        for _ in 0..rows {
            d.decode(&mut r).unwrap();
        }
        assert_eq!(r.remaining(), 0);
        d.finish().unwrap()
    }

    /// The int-keyed map fast path: negative-count blocks (with their byte size), several
    /// blocks per map, empty maps, and the writer's field order, as the spec allows them.
    #[test]
    fn int_maps_with_sized_blocks_and_either_field_order() {
        let key = r#"{"name": "key", "type": "int", "field-id": 1}"#;
        let long = r#"{"name": "value", "type": "long", "field-id": 2}"#;
        let t = map_target(DataType::Int64);
        let mut data = Vec::new();
        // Row 0: a sized block of two pairs, then a plain block of one.
        let mut block = Vec::new();
        for (k, v) in [(1, 10i64), (2, -20000)] {
            put_long(&mut block, k);
            put_long(&mut block, v);
        }
        put_long(&mut data, -2);
        put_long(&mut data, block.len() as i64);
        data.extend_from_slice(&block);
        put_long(&mut data, 1);
        put_long(&mut data, 3);
        put_long(&mut data, 1 << 40);
        put_long(&mut data, 0);
        // Row 1: empty.
        put_long(&mut data, 0);
        let a = decode(&writer(&format!("{key}, {long}")), &t, &data, 2);
        let m = a.as_map();
        assert_eq!(m.value_offsets(), &[0, 3, 3]);
        assert_eq!(m.keys().as_primitive::<Int32Type>().values(), &[1, 2, 3]);
        assert_eq!(
            m.values().as_primitive::<Int64Type>().values(),
            &[10, -20000, 1 << 40]
        );

        // Value before key, binary values.
        let bytes = r#"{"name": "value", "type": "bytes", "field-id": 2}"#;
        let t = map_target(DataType::Binary);
        let mut data = Vec::new();
        put_long(&mut data, 2);
        put_bytes(&mut data, &7i64.to_le_bytes());
        put_long(&mut data, 5);
        put_bytes(&mut data, b"abc");
        put_long(&mut data, 6);
        put_long(&mut data, 0);
        let a = decode(&writer(&format!("{bytes}, {key}")), &t, &data, 1);
        let m = a.as_map();
        assert_eq!(m.keys().as_primitive::<Int32Type>().values(), &[5, 6]);
        let v = m.values().as_binary::<i32>();
        assert_eq!(v.value(0), &7i64.to_le_bytes());
        assert_eq!(v.value(1), b"abc");

        // Hostile: a key outside the int range and a block count past the end are corrupt.
        let mut data = Vec::new();
        put_long(&mut data, 1);
        put_long(&mut data, 1 << 40);
        put_long(&mut data, 1);
        put_long(&mut data, 0);
        let mut d = Decoder::new(
            &writer(&format!("{key}, {long}")),
            &map_target(DataType::Int64),
        )
        .unwrap();
        assert!(matches!(
            d.decode(&mut Reader::new(&data)),
            Err(Error::CorruptFile(_))
        ));
        let mut data = Vec::new();
        put_long(&mut data, 1000);
        assert!(matches!(
            d.decode(&mut Reader::new(&data)),
            Err(Error::CorruptFile(_))
        ));
    }
}
