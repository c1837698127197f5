//! Scan planning over Arrow columns: partition keys and the delete index that assigns delete
//! files to data files (spec "Scan Planning", delete file scoping).
//!
//! - [`partition_keys`] encodes each row of a `partition` struct column as bytes, equal exactly
//!   when the partition tuples are equal (so tuples of one spec can be grouped and joined).
//! - [`DeleteIndex`] holds a snapshot's live delete files and [`DeleteIndex::match_all`] returns,
//!   for each data file, the indices of the delete files that apply to it:
//!   * a deletion vector applies to the data file it references when the data file's data
//!     sequence number is <= the DV's; at most one DV may exist per data file;
//!   * a position delete file applies when its sequence number is >= the data file's, and it
//!     either references the data file (`referenced_data_file`, or `file_path` lower and upper
//!     bounds that are equal) or has the same spec and partition (and its `file_path` bounds,
//!     when present, admit the data file's path); none applies to a file that has a DV;
//!   * an equality delete file applies when its sequence number is strictly greater than the data
//!     file's, and it has the same spec and partition, or was written with an unpartitioned spec
//!     (global).

pub mod read;
#[cfg(test)]
mod tests;

use arrow_array::builder::BinaryBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, BinaryArray, StructArray};
use hashbrown::HashMap;

use crate::expr::value::array_values;
use crate::serde::Value;
use crate::{Error, Result};

/// `path` as it names a file, so that two spellings of one file compare equal: a `file:` URI
/// as its plain path (`file:///x`, `file:/x` and `file://host/x` as `/x`), repeated slashes
/// of a local path collapsed, and `s3a:`/`s3n:` (in any case) as `s3:`. Object store keys
/// keep their slashes (`a//x` and `a/x` are two objects). Borrowed unless a slash collapses
/// or a scheme is rewritten.
pub fn same_file_key(path: &str) -> std::borrow::Cow<'_, str> {
    use std::borrow::Cow;
    let head = |n: usize| path.get(..n).map(|h| h.to_ascii_lowercase());
    if head(5).as_deref() == Some("file:") {
        let rest = &path[5..];
        let local = match rest.strip_prefix("//") {
            Some(r) => match r.find('/') {
                Some(i) => &r[i..],
                None => return Cow::Borrowed(path), // no path: no file
            },
            None => rest,
        };
        return collapse_slashes(local);
    }
    match head(6).as_deref() {
        Some("s3a://") | Some("s3n://") => return Cow::Owned(format!("s3://{}", &path[6..])),
        _ => {}
    }
    if head(5).as_deref() == Some("s3://") && !path.starts_with("s3://") {
        return Cow::Owned(format!("s3://{}", &path[5..]));
    }
    if path.contains("://") {
        Cow::Borrowed(path) // another store: its keys as they are
    } else {
        collapse_slashes(path)
    }
}

/// A local path with each run of slashes as one slash (borrowed when there is none).
fn collapse_slashes(path: &str) -> std::borrow::Cow<'_, str> {
    if !path.contains("//") {
        return std::borrow::Cow::Borrowed(path);
    }
    let mut plain = String::with_capacity(path.len());
    let mut prev = '\0';
    for ch in path.chars() {
        if !(ch == '/' && prev == '/') {
            plain.push(ch);
        }
        prev = ch;
    }
    std::borrow::Cow::Owned(plain)
}

/// Checks that no data file path occurs twice across `paths` (the `file_path` columns of the
/// planned batches, checked in place: nothing is concatenated), however a path is spelled
/// ([`same_file_key`]). A null path or a duplicate is an error naming it, the same errors as
/// [`DeleteIndex::match_all`] gives.
pub fn check_unique_paths(paths: &[ArrayRef]) -> Result<()> {
    use rayon::prelude::*;
    use std::hash::BuildHasher;
    let mut cols = Vec::with_capacity(paths.len());
    let mut row = 0usize;
    for col in paths {
        let col = col.as_string_opt::<i32>().ok_or_else(|| {
            Error::validation(format!(
                "file_path must be a string column, got {}",
                col.data_type()
            ))
        })?;
        if let Some(i) = (0..col.len()).find(|&i| col.is_null(i)) {
            return Err(Error::validation(format!(
                "data file {} has a null file_path",
                row + i
            )));
        }
        row += col.len();
        cols.push(col);
    }
    // (hash, batch, row) of every path, sorted: equal paths have equal hashes, so they end up
    // next to each other; runs of equal hashes are confirmed by comparing the paths (sorting
    // is cache friendly, where inserting a million paths into a hash set misses on each)
    let keys = crate::pool::install(None, || {
        let state = &hashbrown::DefaultHashBuilder::default();
        let mut keys: Vec<(u64, u32, u32)> = cols
            .par_iter()
            .enumerate()
            .flat_map_iter(|(b, col)| {
                col.iter().enumerate().map(move |(r, p)| {
                    let key = same_file_key(p.unwrap_or(""));
                    (state.hash_one(key.as_ref()), b as u32, r as u32)
                })
            })
            .collect();
        keys.par_sort_unstable();
        Ok(keys)
    })?;
    let path = |k: &(u64, u32, u32)| cols[k.1 as usize].value(k.2 as usize);
    let mut start = 0;
    for i in 1..keys.len() {
        if keys[i].0 != keys[start].0 {
            start = i;
            continue;
        }
        let p = path(&keys[i]);
        let key = same_file_key(p);
        if keys[start..i].iter().any(|k| same_file_key(path(k)) == key) {
            return Err(Error::corrupt(format!(
                "data file {p} is listed twice among the live entries of the snapshot"
            )));
        }
    }
    Ok(())
}

/// Byte keys of the rows of a partition struct column; equal keys mean equal tuples (a null
/// field differs from every value; floats compare by bit pattern).
pub fn partition_keys(col: &StructArray) -> Result<BinaryArray> {
    let n = col.len();
    let children: Vec<Vec<Option<Value>>> = col
        .columns()
        .iter()
        .map(|c| array_values(c.as_ref()))
        .collect::<Result<_>>()?;
    let mut out = BinaryBuilder::with_capacity(n, n * 9 * children.len().max(1));
    let mut buf: Vec<u8> = Vec::with_capacity(64);
    for row in 0..n {
        buf.clear();
        for child in &children {
            encode_value(&mut buf, child[row].as_ref());
        }
        out.append_value(&buf);
    }
    Ok(out.finish())
}

fn encode_value(buf: &mut Vec<u8>, v: Option<&Value>) {
    match v {
        None => buf.push(0),
        Some(Value::Bool(b)) => {
            buf.push(1);
            buf.push(u8::from(*b));
        }
        Some(Value::Int(i)) => {
            buf.push(2);
            buf.extend_from_slice(&i.to_le_bytes());
        }
        Some(Value::Float(f)) => {
            // every NaN is one partition value (Java compares doubles by
            // `doubleToLongBits`, which folds NaN payloads); -0.0 and 0.0 stay apart
            let f = if f.is_nan() { f64::NAN } else { *f };
            buf.push(3);
            buf.extend_from_slice(&f.to_bits().to_le_bytes());
        }
        Some(Value::Str(s)) => {
            buf.push(4);
            buf.extend_from_slice(&(s.len() as u64).to_le_bytes());
            buf.extend_from_slice(s.as_bytes());
        }
        Some(Value::Bytes(b)) => {
            buf.push(4);
            buf.extend_from_slice(&(b.len() as u64).to_le_bytes());
            buf.extend_from_slice(b);
        }
    }
}

/// Content codes of manifest entries.
pub const POSITION_DELETES: i32 = 1;
pub const EQUALITY_DELETES: i32 = 2;

/// Named columns of a struct array, checked for presence and type.
struct Cols<'a> {
    what: &'static str,
    s: &'a StructArray,
}

impl<'a> Cols<'a> {
    fn col(&self, name: &str) -> Result<&'a ArrayRef> {
        self.s.column_by_name(name).ok_or_else(|| {
            Error::validation(format!("{} columns lack the column {name:?}", self.what))
        })
    }

    fn i64(&self, name: &str) -> Result<&'a arrow_array::Int64Array> {
        self.col(name)?
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| self.bad(name, "int64"))
    }

    fn i32(&self, name: &str) -> Result<&'a arrow_array::Int32Array> {
        self.col(name)?
            .as_primitive_opt::<Int32Type>()
            .ok_or_else(|| self.bad(name, "int32"))
    }

    fn str(&self, name: &str) -> Result<&'a arrow_array::StringArray> {
        self.col(name)?
            .as_string_opt::<i32>()
            .ok_or_else(|| self.bad(name, "string"))
    }

    fn bin(&self, name: &str) -> Result<&'a BinaryArray> {
        self.col(name)?
            .as_binary_opt::<i32>()
            .ok_or_else(|| self.bad(name, "binary"))
    }

    fn bool(&self, name: &str) -> Result<&'a arrow_array::BooleanArray> {
        self.col(name)?
            .as_boolean_opt()
            .ok_or_else(|| self.bad(name, "boolean"))
    }

    fn bad(&self, name: &str, ty: &str) -> Error {
        Error::validation(format!(
            "{} column {name:?} must be {ty}, got {}",
            self.what,
            self.s
                .column_by_name(name)
                .map(|c| c.data_type().to_string())
                .unwrap_or_default()
        ))
    }
}

/// Delete files, each with its data sequence number, in one of the scoping groups.
#[derive(Default)]
struct BySeq {
    /// (sequence number, delete index), sorted by sequence number after [`DeleteIndex::new`].
    files: Vec<(i64, u32)>,
}

impl BySeq {
    fn sort(&mut self) {
        self.files.sort_unstable();
    }

    /// Delete files with sequence number >= `seq` (`strict`: > `seq`).
    fn since_seq(&self, seq: i64, strict: bool) -> &[(i64, u32)] {
        let start = self
            .files
            .partition_point(|(s, _)| if strict { *s <= seq } else { *s < seq });
        &self.files[start..]
    }
}

/// The live delete files of a snapshot, indexed for matching against data files.
pub struct DeleteIndex<'a> {
    dvs: HashMap<&'a str, (i64, u32)>,
    pos_by_path: HashMap<&'a str, BySeq>,
    pos_by_partition: HashMap<(i32, &'a [u8]), BySeq>,
    eq_by_partition: HashMap<(i32, &'a [u8]), BySeq>,
    eq_global: BySeq,
    path_lower: Option<&'a BinaryArray>,
    path_upper: Option<&'a BinaryArray>,
    len: usize,
}

impl<'a> DeleteIndex<'a> {
    /// Indexes delete files given as a struct array with the columns `content` (int32: 1
    /// position, 2 equality), `file_path` (string), `sequence_number` (int64), `spec_id`
    /// (int32), `partition_key` (binary, from [`partition_keys`]), `unpartitioned` (bool: the
    /// file's spec has no partition fields), `is_dv` (bool), `referenced_data_file` (string,
    /// nullable) and optionally `path_lower` / `path_upper` (binary, nullable: the `file_path`
    /// column bounds of a position delete file).
    pub fn new(deletes: &'a StructArray) -> Result<Self> {
        let c = Cols {
            what: "delete file",
            s: deletes,
        };
        let content = c.i32("content")?;
        let path = c.str("file_path")?;
        let seq = c.i64("sequence_number")?;
        let spec = c.i32("spec_id")?;
        let key = c.bin("partition_key")?;
        let unpart = c.bool("unpartitioned")?;
        let is_dv = c.bool("is_dv")?;
        let referenced = c.str("referenced_data_file")?;
        let path_lower = deletes
            .column_by_name("path_lower")
            .map(|_| c.bin("path_lower"))
            .transpose()?;
        let path_upper = deletes
            .column_by_name("path_upper")
            .map(|_| c.bin("path_upper"))
            .transpose()?;
        let mut ix = DeleteIndex {
            dvs: HashMap::new(),
            pos_by_path: HashMap::new(),
            pos_by_partition: HashMap::new(),
            eq_by_partition: HashMap::new(),
            eq_global: BySeq::default(),
            path_lower,
            path_upper,
            len: deletes.len(),
        };
        for i in 0..deletes.len() {
            if path.is_null(i) {
                return Err(Error::validation(format!(
                    "delete file {i} has a null file_path"
                )));
            }
            let file = path.value(i);
            let s = if seq.is_null(i) { 0 } else { seq.value(i) };
            let idx = i as u32;
            let sp = spec.value(i);
            match content.value(i) {
                POSITION_DELETES => {
                    let target = if referenced.is_null(i) {
                        ix.equal_path_bounds(i)
                    } else {
                        Some(referenced.value(i))
                    };
                    if is_dv.value(i) {
                        let target = target.ok_or_else(|| {
                            Error::corrupt(format!(
                                "deletion vector {file} has no referenced_data_file"
                            ))
                        })?;
                        if let Some((_, other)) = ix.dvs.insert(target, (s, idx)) {
                            return Err(Error::corrupt(format!(
                                "two deletion vectors for data file {target}: {} and {file} \
                                 (at most one may apply to a data file)",
                                path.value(other as usize)
                            )));
                        }
                    } else if let Some(target) = target {
                        ix.pos_by_path
                            .entry(target)
                            .or_default()
                            .files
                            .push((s, idx));
                    } else {
                        ix.pos_by_partition
                            .entry((sp, key.value(i)))
                            .or_default()
                            .files
                            .push((s, idx));
                    }
                }
                EQUALITY_DELETES => {
                    if unpart.value(i) {
                        ix.eq_global.files.push((s, idx));
                    } else {
                        ix.eq_by_partition
                            .entry((sp, key.value(i)))
                            .or_default()
                            .files
                            .push((s, idx));
                    }
                }
                other => {
                    return Err(Error::validation(format!(
                        "delete file {file} has content {other}, expected 1 or 2"
                    )))
                }
            }
        }
        ix.pos_by_path.values_mut().for_each(BySeq::sort);
        ix.pos_by_partition.values_mut().for_each(BySeq::sort);
        ix.eq_by_partition.values_mut().for_each(BySeq::sort);
        ix.eq_global.sort();
        Ok(ix)
    }

    /// The number of indexed delete files.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether no delete file is indexed.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    fn bound(&self, lower: bool, i: usize) -> Option<&'a [u8]> {
        let arr = if lower {
            self.path_lower
        } else {
            self.path_upper
        }?;
        (!arr.is_null(i)).then(|| arr.value(i))
    }

    /// The data file a position delete file's equal `file_path` bounds name, if they do.
    fn equal_path_bounds(&self, i: usize) -> Option<&'a str> {
        let (lo, hi) = (self.bound(true, i)?, self.bound(false, i)?);
        if lo == hi {
            std::str::from_utf8(lo).ok()
        } else {
            None
        }
    }

    /// Whether a position delete file's `file_path` bounds admit `path`.
    fn path_in_bounds(&self, i: usize, path: &str) -> bool {
        let p = path.as_bytes();
        self.bound(true, i).is_none_or(|lo| lo <= p)
            && self.bound(false, i).is_none_or(|hi| p <= hi)
    }

    /// The delete files applying to one data file, in delete index order.
    pub fn matching(&self, path: &str, seq: i64, spec: i32, key: &[u8], out: &mut Vec<u32>) {
        let start = out.len();
        let dv = self.dvs.get(path).filter(|(s, _)| *s >= seq);
        if let Some((_, idx)) = dv {
            out.push(*idx);
        } else {
            if let Some(g) = self.pos_by_path.get(path) {
                out.extend(g.since_seq(seq, false).iter().map(|(_, i)| *i));
            }
            if let Some(g) = self.pos_by_partition.get(&(spec, key)) {
                out.extend(
                    g.since_seq(seq, false)
                        .iter()
                        .filter(|(_, i)| self.path_in_bounds(*i as usize, path))
                        .map(|(_, i)| *i),
                );
            }
        }
        if let Some(g) = self.eq_by_partition.get(&(spec, key)) {
            out.extend(g.since_seq(seq, true).iter().map(|(_, i)| *i));
        }
        out.extend(self.eq_global.since_seq(seq, true).iter().map(|(_, i)| *i));
        out[start..].sort_unstable();
    }

    /// For data files given as a struct array with `file_path`, `sequence_number`, `spec_id`
    /// and `partition_key`: list offsets (one more than the data files) and the concatenated
    /// delete indices. A data file path listed twice is an error.
    pub fn match_all(&self, data: &StructArray) -> Result<(Vec<i32>, Vec<u32>)> {
        let c = Cols {
            what: "data file",
            s: data,
        };
        let path = c.str("file_path")?;
        let seq = c.i64("sequence_number")?;
        let spec = c.i32("spec_id")?;
        let key = c.bin("partition_key")?;
        let n = data.len();
        let mut seen: hashbrown::HashSet<std::borrow::Cow<'_, str>> =
            hashbrown::HashSet::with_capacity(n);
        let mut offsets = Vec::with_capacity(n + 1);
        let mut indices = Vec::new();
        offsets.push(0i32);
        for i in 0..n {
            if path.is_null(i) {
                return Err(Error::validation(format!(
                    "data file {i} has a null file_path"
                )));
            }
            let p = path.value(i);
            if !seen.insert(same_file_key(p)) {
                return Err(Error::corrupt(format!(
                    "data file {p} is listed twice among the live entries of the snapshot"
                )));
            }
            if !self.is_empty() {
                let s = if seq.is_null(i) { 0 } else { seq.value(i) };
                self.matching(p, s, spec.value(i), key.value(i), &mut indices);
            }
            let end = i32::try_from(indices.len())
                .map_err(|_| Error::validation("too many delete assignments for one list"))?;
            offsets.push(end);
        }
        Ok((offsets, indices))
    }
}
