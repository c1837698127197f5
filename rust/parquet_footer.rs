//! A check of a Parquet footer (Thrift compact `FileMetaData`) before any native library builds
//! column-chunk metadata from it.
//!
//! Arrow's C++ column-chunk metadata constructor throws on some malformed footers (level
//! histograms of the wrong size, a row group with too few columns, encrypted column metadata),
//! and pyarrow's `RowGroupMetaData.column()` does not catch it: the process aborts. The footer is
//! parsed here first; every such condition, and statistics whose bounds cannot be the column's
//! type, is a `CorruptFile` error. The check also returns the page offsets of every column chunk,
//! which is what the reader needs from the footer besides the statistics.

use crate::{Error, Result};

/// Where a column chunk's pages start.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ChunkOffsets {
    pub data_page_offset: i64,
    pub dictionary_page_offset: Option<i64>,
}

/// The facts of one row group the reader uses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowGroupInfo {
    pub num_rows: i64,
    pub columns: Vec<ChunkOffsets>,
}

/// The checked footer: total rows and the row groups.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FooterInfo {
    pub num_rows: i64,
    pub row_groups: Vec<RowGroupInfo>,
}

// Thrift compact protocol type ids.
const T_TRUE: u8 = 1;
const T_FALSE: u8 = 2;
const T_BYTE: u8 = 3;
const T_I16: u8 = 4;
const T_I32: u8 = 5;
const T_I64: u8 = 6;
const T_DOUBLE: u8 = 7;
const T_BINARY: u8 = 8;
const T_LIST: u8 = 9;
const T_SET: u8 = 10;
const T_MAP: u8 = 11;
const T_STRUCT: u8 = 12;
/// Deeper nesting than any valid footer has: refused instead of recursing further.
const MAX_DEPTH: usize = 32;

// Parquet physical types.
const BOOLEAN: i32 = 0;
const INT32: i32 = 1;
const INT64: i32 = 2;
const INT96: i32 = 3;
const FLOAT: i32 = 4;
const DOUBLE: i32 = 5;
const BYTE_ARRAY: i32 = 6;
const FIXED_LEN_BYTE_ARRAY: i32 = 7;

fn corrupt(msg: impl Into<String>) -> Error {
    Error::corrupt(format!("corrupt Parquet footer: {}", msg.into()))
}

struct Reader<'a> {
    data: &'a [u8],
    pos: usize,
}

impl<'a> Reader<'a> {
    fn byte(&mut self) -> Result<u8> {
        let b = *self
            .data
            .get(self.pos)
            .ok_or_else(|| corrupt("truncated"))?;
        self.pos += 1;
        Ok(b)
    }

    fn bytes(&mut self, n: usize) -> Result<&'a [u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.data.len());
        let end = end.ok_or_else(|| corrupt("truncated"))?;
        let out = &self.data[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn varint(&mut self) -> Result<u64> {
        let mut out = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            if shift == 63 && b > 1 {
                return Err(corrupt("varint overflows 64 bits"));
            }
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(corrupt("varint longer than 10 bytes"))
    }

    fn i64(&mut self) -> Result<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn i32(&mut self) -> Result<i32> {
        i32::try_from(self.i64()?).map_err(|_| corrupt("i32 out of range"))
    }

    fn binary(&mut self) -> Result<&'a [u8]> {
        let n = usize::try_from(self.varint()?).map_err(|_| corrupt("length out of range"))?;
        self.bytes(n)
    }

    /// The next field's (id, type), or None at the struct's end.
    fn field(&mut self, last: &mut i16) -> Result<Option<(i16, u8)>> {
        let b = self.byte()?;
        if b == 0 {
            return Ok(None);
        }
        let kind = b & 0x0f;
        let delta = b >> 4;
        let id = if delta == 0 {
            i16::try_from(self.i64()?).map_err(|_| corrupt("field id out of range"))?
        } else {
            last.checked_add(i16::from(delta))
                .ok_or_else(|| corrupt("field id overflow"))?
        };
        *last = id;
        Ok(Some((id, kind)))
    }

    /// (size, element type) of a list or set.
    fn list(&mut self) -> Result<(usize, u8)> {
        let b = self.byte()?;
        let mut n = usize::from(b >> 4);
        if n == 15 {
            n = usize::try_from(self.varint()?).map_err(|_| corrupt("list size out of range"))?;
        }
        // Every element takes at least one byte (booleans in lists do too).
        if n > self.data.len() - self.pos {
            return Err(corrupt("list longer than the footer"));
        }
        Ok((n, b & 0x0f))
    }

    fn skip(&mut self, kind: u8, depth: usize) -> Result<()> {
        if depth > MAX_DEPTH {
            return Err(corrupt("nested too deeply"));
        }
        match kind {
            T_TRUE | T_FALSE => Ok(()),
            T_BYTE => self.byte().map(|_| ()),
            T_I16 | T_I32 | T_I64 => self.varint().map(|_| ()),
            T_DOUBLE => self.bytes(8).map(|_| ()),
            T_BINARY => self.binary().map(|_| ()),
            T_LIST | T_SET => {
                let (n, elem) = self.list()?;
                for _ in 0..n {
                    if elem == T_TRUE || elem == T_FALSE {
                        self.byte()?;
                    } else {
                        self.skip(elem, depth + 1)?;
                    }
                }
                Ok(())
            }
            T_MAP => {
                let n = usize::try_from(self.varint()?).map_err(|_| corrupt("map size"))?;
                if n == 0 {
                    return Ok(());
                }
                if n > self.data.len() - self.pos {
                    return Err(corrupt("map longer than the footer"));
                }
                let kv = self.byte()?;
                for _ in 0..n {
                    self.skip(kv >> 4, depth + 1)?;
                    self.skip(kv & 0x0f, depth + 1)?;
                }
                Ok(())
            }
            T_STRUCT => {
                let mut last = 0;
                while let Some((_, k)) = self.field(&mut last)? {
                    self.skip(k, depth + 1)?;
                }
                Ok(())
            }
            other => Err(corrupt(format!("unknown Thrift type {other}"))),
        }
    }

    /// Calls `each` for every element of a list of structs.
    fn structs(&mut self, mut each: impl FnMut(&mut Self) -> Result<()>) -> Result<()> {
        let (n, elem) = self.list()?;
        if elem != T_STRUCT {
            for _ in 0..n {
                self.skip(elem, 1)?;
            }
            return Ok(());
        }
        for _ in 0..n {
            each(self)?;
        }
        Ok(())
    }

    /// A list of integers. Any other element type is damage: Arrow's Thrift reader would take
    /// each element as an integer anyway (so skipping them here would see another list than
    /// Arrow's, and a level histogram of the wrong size could pass).
    fn i64_list(&mut self) -> Result<Vec<i64>> {
        let (n, elem) = self.list()?;
        if n > 0 && !(elem == T_I64 || elem == T_I32 || elem == T_I16) {
            return Err(corrupt(format!(
                "a list of integers holds elements of type {elem}"
            )));
        }
        let mut out = Vec::with_capacity(n.min(self.data.len()));
        for _ in 0..n {
            out.push(self.i64()?);
        }
        Ok(out)
    }
}

/// A leaf column of the schema: its physical type, type length and maximum levels.
#[derive(Debug, Clone, Copy)]
struct Leaf {
    physical: i32,
    type_length: i32,
    max_def: i64,
    max_rep: i64,
}

#[derive(Default)]
struct Element {
    physical: Option<i32>,
    type_length: i32,
    repetition: Option<i32>,
    num_children: i32,
}

fn schema_element(r: &mut Reader<'_>) -> Result<Element> {
    let mut e = Element::default();
    let mut last = 0;
    while let Some((id, k)) = r.field(&mut last)? {
        match (id, k) {
            (1, T_I32) => e.physical = Some(r.i32()?),
            (2, T_I32) => e.type_length = r.i32()?,
            (3, T_I32) => e.repetition = Some(r.i32()?),
            (5, T_I32) => e.num_children = r.i32()?,
            _ => r.skip(k, 1)?,
        }
    }
    Ok(e)
}

/// The leaves of a flattened schema (element 0 is the root), depth first.
fn leaves(elements: &[Element]) -> Result<Vec<Leaf>> {
    let root = elements.first().ok_or_else(|| corrupt("empty schema"))?;
    let mut out = Vec::new();
    // (children left, max def, max rep) of the open groups
    let mut stack: Vec<(i32, i64, i64)> = vec![(root.num_children, 0, 0)];
    for e in &elements[1..] {
        while stack.last().is_some_and(|g| g.0 == 0) {
            stack.pop();
        }
        let top = stack
            .last_mut()
            .ok_or_else(|| corrupt("schema has extra elements"))?;
        top.0 -= 1;
        let (def, rep) = (top.1, top.2);
        // Only the root may lack a repetition type (Arrow would take the node as optional,
        // and its level histograms would then not match).
        let (def, rep) = match e.repetition {
            Some(0) => (def, rep),
            Some(1) => (def + 1, rep),
            Some(2) => (def + 1, rep + 1),
            Some(other) => return Err(corrupt(format!("repetition type {other}"))),
            None => return Err(corrupt("a schema element has no repetition type")),
        };
        if e.num_children < 0 {
            return Err(corrupt("negative child count"));
        }
        if e.num_children > 0 {
            stack.push((e.num_children, def, rep));
        } else {
            let physical = e
                .physical
                .ok_or_else(|| corrupt("a leaf column has no type"))?;
            if !(BOOLEAN..=FIXED_LEN_BYTE_ARRAY).contains(&physical) {
                return Err(corrupt(format!("physical type {physical}")));
            }
            out.push(Leaf {
                physical,
                type_length: e.type_length,
                max_def: def,
                max_rep: rep,
            });
        }
    }
    if stack.iter().any(|g| g.0 > 0) {
        return Err(corrupt("schema has fewer elements than its groups declare"));
    }
    Ok(out)
}

/// The byte width of a bound of `leaf`, for fixed-width types.
fn bound_width(leaf: &Leaf) -> Option<usize> {
    match leaf.physical {
        BOOLEAN => Some(1),
        INT32 | FLOAT => Some(4),
        INT64 | DOUBLE => Some(8),
        INT96 => Some(12),
        FIXED_LEN_BYTE_ARRAY => usize::try_from(leaf.type_length).ok(),
        _ => None,
    }
}

/// Checks a column chunk's `Statistics`. Writers that store both the deprecated `max`/`min`
/// (fields 1, 2) and `max_value`/`min_value` (5, 6) store the same bytes (parquet-mr and Arrow
/// fill the old fields only when both orders agree), so copies that differ mean damage.
fn statistics(r: &mut Reader<'_>, leaf: &Leaf) -> Result<()> {
    let mut bounds: [Option<&[u8]>; 7] = [None; 7];
    let mut last = 0;
    while let Some((id, k)) = r.field(&mut last)? {
        match (id, k) {
            (1 | 2 | 5 | 6, T_BINARY) => {
                let bound = r.binary()?;
                bounds[id as usize] = Some(bound);
                if let Some(w) = bound_width(leaf) {
                    if bound.len() != w {
                        return Err(corrupt(format!(
                            "a statistics bound has {} bytes, its column's type {w}",
                            bound.len()
                        )));
                    }
                }
            }
            _ => r.skip(k, 2)?,
        }
    }
    for (old, new, what) in [(1, 5, "max"), (2, 6, "min")] {
        if let (Some(a), Some(b)) = (bounds[old], bounds[new]) {
            if a != b {
                return Err(corrupt(format!(
                    "the statistics' {what} and {what}_value differ"
                )));
            }
        }
    }
    Ok(())
}

fn size_statistics(r: &mut Reader<'_>, leaf: &Leaf) -> Result<()> {
    let mut last = 0;
    while let Some((id, k)) = r.field(&mut last)? {
        match (id, k) {
            (1, T_I64) => {
                r.i64()?;
                if leaf.physical != BYTE_ARRAY {
                    return Err(corrupt(
                        "unencoded byte array size on a column of another type",
                    ));
                }
            }
            (2 | 3, T_LIST) => {
                let hist = r.i64_list()?;
                let (max, what) = if id == 2 {
                    (leaf.max_rep, "repetition")
                } else {
                    (leaf.max_def, "definition")
                };
                if !hist.is_empty() && hist.len() as i64 != max + 1 {
                    return Err(corrupt(format!(
                        "{what} level histogram has {} entries, expected {}",
                        hist.len(),
                        max + 1
                    )));
                }
            }
            _ => r.skip(k, 2)?,
        }
    }
    Ok(())
}

fn column_meta(r: &mut Reader<'_>, leaf: &Leaf) -> Result<ChunkOffsets> {
    let mut data = None;
    let mut dict = None;
    let mut last = 0;
    while let Some((id, k)) = r.field(&mut last)? {
        match (id, k) {
            (1, T_I32) => {
                let t = r.i32()?;
                if t != leaf.physical {
                    return Err(corrupt(format!(
                        "column chunk of type {t} for a column of type {}",
                        leaf.physical
                    )));
                }
            }
            (9, T_I64) => data = Some(r.i64()?),
            (11, T_I64) => dict = Some(r.i64()?),
            (12, T_STRUCT) => statistics(r, leaf)?,
            (16, T_STRUCT) => size_statistics(r, leaf)?,
            _ => r.skip(k, 2)?,
        }
    }
    let data_page_offset = data.ok_or_else(|| corrupt("a column chunk has no data page offset"))?;
    Ok(ChunkOffsets {
        data_page_offset,
        dictionary_page_offset: dict,
    })
}

fn column_chunk(r: &mut Reader<'_>, leaf: &Leaf) -> Result<ChunkOffsets> {
    let mut meta = None;
    let mut last = 0;
    while let Some((id, k)) = r.field(&mut last)? {
        match (id, k) {
            (3, T_STRUCT) => meta = Some(column_meta(r, leaf)?),
            (8 | 9, _) => return Err(corrupt("encrypted column metadata")),
            _ => r.skip(k, 1)?,
        }
    }
    meta.ok_or_else(|| corrupt("a column chunk has no metadata"))
}

fn row_group(r: &mut Reader<'_>, leaves: &[Leaf]) -> Result<RowGroupInfo> {
    let mut columns = Vec::new();
    let mut num_rows = None;
    let mut last = 0;
    while let Some((id, k)) = r.field(&mut last)? {
        match (id, k) {
            (1, T_LIST) => r.structs(|r| {
                let leaf = leaves
                    .get(columns.len())
                    .ok_or_else(|| corrupt("a row group has more columns than the schema"))?;
                columns.push(column_chunk(r, leaf)?);
                Ok(())
            })?,
            (3, T_I64) => num_rows = Some(r.i64()?),
            _ => r.skip(k, 1)?,
        }
    }
    if columns.len() != leaves.len() {
        return Err(corrupt(format!(
            "a row group has {} columns, the schema {}",
            columns.len(),
            leaves.len()
        )));
    }
    let num_rows = num_rows.ok_or_else(|| corrupt("a row group has no row count"))?;
    if num_rows < 0 {
        return Err(corrupt("negative row count"));
    }
    Ok(RowGroupInfo { num_rows, columns })
}

/// A `KeyValue` of the file's metadata: key and value must be UTF-8 (Arrow refuses the schema
/// of every batch read otherwise).
fn key_value(r: &mut Reader<'_>) -> Result<()> {
    let mut last = 0;
    while let Some((id, k)) = r.field(&mut last)? {
        match (id, k) {
            (1 | 2, T_BINARY) => {
                if std::str::from_utf8(r.binary()?).is_err() {
                    return Err(corrupt("a key-value metadata entry is not UTF-8"));
                }
            }
            _ => r.skip(k, 2)?,
        }
    }
    Ok(())
}

/// Checks the Thrift `FileMetaData` in `footer` (the bytes before the length and magic).
pub fn check_footer(footer: &[u8]) -> Result<FooterInfo> {
    let mut r = Reader {
        data: footer,
        pos: 0,
    };
    let mut elements = Vec::new();
    let mut schema: Option<Vec<Leaf>> = None;
    let mut num_rows = None;
    let mut groups = Vec::new();
    let mut pending: Option<usize> = None; // position of row groups seen before the schema
    let mut last = 0;
    while let Some((id, k)) = r.field(&mut last)? {
        match (id, k) {
            (2, T_LIST) => {
                r.structs(|r| {
                    elements.push(schema_element(r)?);
                    Ok(())
                })?;
                schema = Some(leaves(&elements)?);
            }
            (3, T_I64) => num_rows = Some(r.i64()?),
            (5, T_LIST) => r.structs(key_value)?,
            (4, T_LIST) => match &schema {
                Some(leaves) => {
                    r.structs(|r| {
                        groups.push(row_group(r, leaves)?);
                        Ok(())
                    })?;
                }
                None => {
                    pending = Some(r.pos);
                    r.skip(k, 0)?;
                }
            },
            _ => r.skip(k, 0)?,
        }
    }
    let leaves = schema.ok_or_else(|| corrupt("no schema"))?;
    if let Some(pos) = pending {
        let mut again = Reader { data: footer, pos };
        again.structs(|r| {
            groups.push(row_group(r, &leaves)?);
            Ok(())
        })?;
    }
    let num_rows = num_rows.ok_or_else(|| corrupt("no row count"))?;
    let sum: i64 = groups
        .iter()
        .map(|g| g.num_rows)
        .try_fold(0i64, |a, n| a.checked_add(n))
        .ok_or_else(|| corrupt("row counts overflow"))?;
    if sum != num_rows {
        return Err(corrupt(format!(
            "row groups hold {sum} rows, the file says {num_rows}"
        )));
    }
    Ok(FooterInfo {
        num_rows,
        row_groups: groups,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A compact-protocol writer for the test footers.
    #[derive(Default)]
    struct W(Vec<u8>, Vec<i16>);

    impl W {
        fn varint(&mut self, mut v: u64) {
            while v >= 0x80 {
                self.0.push((v as u8) | 0x80);
                v >>= 7;
            }
            self.0.push(v as u8);
        }
        fn field(&mut self, id: i16, kind: u8) {
            let last = self.1.last_mut().unwrap();
            self.0.push((((id - *last) as u8) << 4) | kind);
            *last = id;
        }
        fn int(&mut self, id: i16, kind: u8, v: i64) {
            self.field(id, kind);
            self.varint(((v << 1) ^ (v >> 63)) as u64);
        }
        fn bin(&mut self, id: i16, b: &[u8]) {
            self.field(id, T_BINARY);
            self.varint(b.len() as u64);
            self.0.extend_from_slice(b);
        }
        fn begin(&mut self) {
            self.1.push(0);
        }
        fn end(&mut self) {
            self.0.push(0);
            self.1.pop();
        }
        fn list(&mut self, id: i16, n: usize, elem: u8) {
            self.field(id, T_LIST);
            self.0.push(((n as u8) << 4) | elem);
        }
    }

    /// A footer: root + one optional INT64 leaf, one row group of `rows` rows.
    fn footer(hist: &[i64], bound: &[u8]) -> Vec<u8> {
        footer_with(hist, bound, Some(1), None)
    }

    /// A one-column footer: the leaf's repetition type, and a deprecated `max` beside
    /// `max_value`.
    fn footer_with(
        hist: &[i64],
        bound: &[u8],
        repetition: Option<i64>,
        old_max: Option<&[u8]>,
    ) -> Vec<u8> {
        let mut w = W::default();
        w.begin();
        w.int(1, T_I32, 2);
        w.list(2, 2, T_STRUCT);
        w.begin();
        w.bin(4, b"schema");
        w.int(5, T_I32, 1);
        w.end();
        w.begin();
        w.int(1, T_I32, INT64 as i64);
        if let Some(rep) = repetition {
            w.int(3, T_I32, rep);
        }
        w.bin(4, b"id");
        w.end();
        w.int(3, T_I64, 10);
        w.list(4, 1, T_STRUCT);
        w.begin();
        w.list(1, 1, T_STRUCT);
        w.begin();
        w.field(3, T_STRUCT);
        w.begin();
        w.int(1, T_I32, INT64 as i64);
        w.int(9, T_I64, 4);
        w.field(12, T_STRUCT);
        w.begin();
        if let Some(old) = old_max {
            w.bin(1, old);
        }
        w.bin(5, bound);
        w.end();
        w.field(16, T_STRUCT);
        w.begin();
        w.list(3, hist.len(), T_I64);
        for &h in hist {
            w.varint(((h << 1) ^ (h >> 63)) as u64);
        }
        w.end();
        w.end();
        w.end();
        w.int(3, T_I64, 10);
        w.end();
        w.end();
        w.0
    }

    #[test]
    fn a_leaf_without_repetition_type_is_corrupt() {
        // Arrow takes such a leaf as optional: its histogram of 2 entries would then be wrong
        let e = check_footer(&footer_with(&[10], &[0; 8], None, None)).unwrap_err();
        assert!(e.to_string().contains("no repetition type"), "{e}");
    }

    #[test]
    fn deprecated_and_current_bounds_must_agree() {
        let same = [7, 0, 0, 0, 0, 0, 0, 0];
        assert!(check_footer(&footer_with(&[2, 8], &same, Some(1), Some(&same))).is_ok());
        let flipped = [6, 0, 0, 0, 0, 0, 0, 0];
        let e = check_footer(&footer_with(&[2, 8], &same, Some(1), Some(&flipped))).unwrap_err();
        assert!(e.to_string().contains("max and max_value differ"), "{e}");
    }

    #[test]
    fn a_valid_footer_gives_the_offsets() {
        let info = check_footer(&footer(&[2, 8], &[0; 8])).unwrap();
        assert_eq!(info.num_rows, 10);
        assert_eq!(
            info.row_groups,
            vec![RowGroupInfo {
                num_rows: 10,
                columns: vec![ChunkOffsets {
                    data_page_offset: 4,
                    dictionary_page_offset: None
                }]
            }]
        );
    }

    #[test]
    fn a_histogram_of_the_wrong_size_is_corrupt() {
        let e = check_footer(&footer(&[2, 8, 0], &[0; 8])).unwrap_err();
        assert!(matches!(e, Error::CorruptFile(_)), "{e}");
        assert!(
            e.to_string()
                .contains("definition level histogram has 3 entries"),
            "{e}"
        );
    }

    #[test]
    fn a_bound_of_the_wrong_width_is_corrupt() {
        let e = check_footer(&footer(&[2, 8], &[0; 7])).unwrap_err();
        assert!(e.to_string().contains("7 bytes"), "{e}");
    }

    #[test]
    fn every_truncation_and_byte_flip_is_an_error_or_a_footer() {
        let good = footer(&[2, 8], &[0; 8]);
        for n in 0..good.len() {
            assert!(check_footer(&good[..n]).is_err());
        }
        for i in 0..good.len() {
            for bit in 0..8 {
                let mut bad = good.clone();
                bad[i] ^= 1 << bit;
                let _ = check_footer(&bad); // never panics
            }
        }
    }
}
