//! Decoding manifests and manifest lists into Arrow RecordBatches, with the spec's inheritance
//! rules applied while decoding.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{
    new_null_array, Array, ArrayRef, Int32Array, Int64Array, RecordBatch, StructArray,
};
use arrow_schema::Schema as ArrowSchema;

use super::layout::{
    entry_target_with, manifest_list_schema, manifest_schema, partition_type, Col, DATA_FILE,
    ENTRY, MANIFEST_FILE,
};
use super::partition::partition_fields;
use crate::avro::binary::Reader;
use crate::avro::schema::Schema;
use crate::avro::to_arrow::{Decoder, KeySet};
use crate::avro::Container;
use crate::{Error, Result};

/// What entries of a manifest inherit from its `manifest_file` record in the manifest list.
#[derive(Debug, Clone, Copy, Default)]
pub struct Inherit {
    pub snapshot_id: Option<i64>,
    pub sequence_number: Option<i64>,
    pub first_row_id: Option<i64>,
}

/// Key-value metadata of the container, minus the `avro.*` keys, as UTF-8 strings.
fn user_metadata(c: &Container<'_>) -> HashMap<String, String> {
    c.metadata
        .iter()
        .filter(|(k, _)| !k.starts_with("avro."))
        .map(|(k, v)| (k.clone(), String::from_utf8_lossy(v).into_owned()))
        .collect()
}

/// The most input bytes a later block is assumed to inflate to per compressed byte, when
/// sizing the columns for the whole file from the first block (honest manifests: about 2).
const MAX_SIZING_RATIO: u64 = 4;

fn decode_all(c: &mut Container<'_>, dec: &mut Decoder) -> Result<()> {
    let (pending, pending_bytes, first_comp) = c.pending();
    let mut first = true;
    while let Some((count, block)) = c.next_block()? {
        let mut r = Reader::new(block);
        if first {
            // Size the columns for the whole file once: the later blocks' records, and their
            // bytes at this block's inflation ratio (at most MAX_SIZING_RATIO).
            first = false;
            let pending = pending.saturating_sub(count as u64);
            let pending_bytes = pending_bytes.saturating_sub(first_comp);
            let ratio = (block.len() as u64 / first_comp.max(1) + 1).min(MAX_SIZING_RATIO);
            let later_bytes = usize::try_from(pending_bytes.saturating_mul(ratio)).unwrap_or(0);
            let later = usize::try_from(pending).unwrap_or(0);
            dec.decode_many_then(&mut r, count, later, later_bytes)?;
        } else {
            dec.decode_many(&mut r, count)?;
        }
        if r.remaining() != 0 {
            return Err(Error::corrupt(format!(
                "block of {count} records has {} trailing bytes",
                r.remaining()
            )));
        }
    }
    Ok(())
}

fn format_version(c: &Container<'_>) -> Result<u8> {
    match c.meta_str("format-version")? {
        None => Ok(1),
        Some(s) => match s.trim() {
            "1" => Ok(1),
            "2" => Ok(2),
            "3" => Ok(3),
            other => Err(Error::unsupported(format!("format-version {other:?}"))),
        },
    }
}

fn i64_col(a: &ArrayRef) -> &Int64Array {
    a.as_primitive::<Int64Type>()
}

/// `col` with nulls replaced by `value` where `when(row)` holds.
fn fill_i64(col: &Int64Array, value: i64, when: impl Fn(usize) -> bool) -> ArrayRef {
    if col.null_count() == 0 {
        return Arc::new(col.clone());
    }
    Arc::new(
        (0..col.len())
            .map(|i| {
                if col.is_null(i) {
                    when(i).then_some(value)
                } else {
                    Some(col.value(i))
                }
            })
            .collect::<Int64Array>(),
    )
}

fn fill_i32(col: &Int32Array, value: i32) -> ArrayRef {
    if col.null_count() == 0 {
        return Arc::new(col.clone());
    }
    Arc::new(
        col.iter()
            .map(|v| Some(v.unwrap_or(value)))
            .collect::<Int32Array>(),
    )
}

/// The `data_file.content` values a manifest may hold, from its `content` metadata: `data`
/// manifests only data files (0), `deletes` manifests only delete files (1 position, 2
/// equality); without the key (v1) or with another value (readers such as Java's ignore the
/// key) any of the three.
fn content_range(c: &Container<'_>) -> Result<(i32, i32)> {
    Ok(match c.meta_str("content")?.map(str::trim) {
        Some(s) if s.eq_ignore_ascii_case("data") => (0, 0),
        Some(s) if s.eq_ignore_ascii_case("deletes") => (1, 2),
        _ => (0, 2),
    })
}

fn content_name(content: i32) -> &'static str {
    match content {
        0 => "data",
        1 => "position deletes",
        2 => "equality deletes",
        _ => "unknown",
    }
}

/// `path[row]` for an error message, when that column was decoded.
fn path_of(paths: &ArrayRef, row: usize) -> String {
    paths
        .as_string_opt::<i32>()
        .filter(|p| p.is_valid(row))
        .map_or_else(String::new, |p| format!(" ({})", p.value(row)))
}

/// Checks the entries' `status` (0 existing, 1 added, 2 deleted) and `data_file.content`
/// (within `allowed`) in one branch-free pass over the two decoded columns; the slow search
/// for the offending row runs only on failure.
fn check_entries(
    status: &[i32],
    content: &[i32],
    allowed: (i32, i32),
    paths: &ArrayRef,
) -> Result<()> {
    let (lo, hi) = allowed;
    let span = (hi - lo) as u32;
    let bad = |s: i32, c: i32| (s as u32 > 2) | (c.wrapping_sub(lo) as u32 > span);
    let any_bad = status
        .iter()
        .zip(content)
        .fold(false, |acc, (&s, &c)| acc | bad(s, c));
    if !any_bad {
        return Ok(());
    }
    let row = (0..status.len())
        .find(|&r| bad(status[r], content[r]))
        .unwrap_or_default();
    let (s, c) = (status[row], content[row]);
    let at = path_of(paths, row);
    Err(Error::corrupt(if s as u32 > 2 {
        format!(
            "manifest entry {row}{at} has status {s}; expected 0 (existing), 1 (added) or 2 \
             (deleted)"
        )
    } else if c as u32 > 2 {
        format!(
            "manifest entry {row}{at} has content {c}; expected 0 (data), 1 (position \
             deletes) or 2 (equality deletes)"
        )
    } else {
        let kind = if lo == 0 { "data" } else { "delete" };
        format!(
            "manifest entry {row}{at} has content {c} ({}) in a {kind} manifest",
            content_name(c)
        )
    }))
}

/// Checks the manifest list's `content` values (0 data, 1 deletes) in one pass.
fn check_list_content(content: &[i32], paths: &ArrayRef) -> Result<()> {
    if !content.iter().fold(false, |acc, &c| acc | (c as u32 > 1)) {
        return Ok(());
    }
    let row = content
        .iter()
        .position(|&c| c as u32 > 1)
        .unwrap_or_default();
    Err(Error::corrupt(format!(
        "manifest_file {row}{} has content {}; expected 0 (data) or 1 (deletes)",
        path_of(paths, row),
        content[row]
    )))
}

/// What a projected manifest read decodes. The output layout never changes: columns left out
/// are all null, and metric maps hold only the pairs of the kept column ids.
#[derive(Debug, Clone, Default)]
pub struct Projection {
    /// The output columns to decode (names of `layout::manifest_schema`); `None`: all. The
    /// entry fields (`status` ... `file_sequence_number`), `content`, `record_count` and
    /// `first_row_id` are always decoded (inheritance needs them).
    pub columns: Option<Vec<String>>,
    /// The column field ids whose pairs the metric maps (`column_sizes` ... `upper_bounds`)
    /// keep; `None`: all.
    pub stats_ids: Option<Vec<i32>>,
}

/// `data_file` columns decoded even when not projected.
const ALWAYS: [i32; 3] = [134, 103, 142];

impl Projection {
    /// Which `data_file` columns to decode, one flag per `DATA_FILE` entry; unknown names are
    /// a validation error.
    fn kept(&self) -> Result<Vec<bool>> {
        let Some(names) = &self.columns else {
            return Ok(vec![true; DATA_FILE.len()]);
        };
        for n in names {
            let known = ENTRY.iter().chain(DATA_FILE.iter()).any(|c| c.name == n);
            if !known {
                return Err(Error::validation(format!(
                    "unknown manifest column {n:?} in the projection"
                )));
            }
        }
        Ok(DATA_FILE
            .iter()
            .map(|c: &Col| ALWAYS.contains(&c.id) || names.iter().any(|n| n == c.name))
            .collect())
    }
}

/// Decodes a manifest into one RecordBatch (see `layout::manifest_schema`); the schema's
/// metadata holds the file's key-value metadata.
pub fn read_manifest(data: &[u8], inherit: &Inherit) -> Result<RecordBatch> {
    read_manifest_projected(data, inherit, &Projection::default())
}

/// [`read_manifest`] decoding only what `projection` asks for; skipped fields cost a walk over
/// their bytes, not their decoding.
pub fn read_manifest_projected(
    data: &[u8],
    inherit: &Inherit,
    projection: &Projection,
) -> Result<RecordBatch> {
    let kept = projection.kept()?;
    let mut c = Container::open(data)?;
    let version = format_version(&c)?;
    let avro_partition = match &c.schema {
        Schema::Record(r) => r
            .fields
            .iter()
            .find(|f| f.field_id == Some(2) || (f.field_id.is_none() && f.name == "data_file"))
            .and_then(|f| match &f.schema {
                Schema::Record(df) => df
                    .fields
                    .iter()
                    .find(|f| f.field_id == Some(102))
                    .map(|f| f.schema.clone()),
                _ => None,
            }),
        _ => return Err(Error::corrupt("manifest schema is not a record")),
    };
    let allowed = content_range(&c)?;
    let fields = partition_fields(
        c.meta_str("partition-spec")?,
        c.meta_str("schema")?,
        avro_partition.as_ref(),
    )?;
    let ptype = partition_type(&fields);
    let target = entry_target_with(&ptype, |col| {
        DATA_FILE
            .iter()
            .position(|d| d.id == col.id)
            .is_some_and(|i| kept[i])
    });
    let keys = projection.stats_ids.as_deref().map(KeySet::new);
    let mut dec = Decoder::with_keys(&c.schema, &target, keys)?;
    decode_all(&mut c, &mut dec)?;
    let entry = dec.finish()?;
    let entry = entry
        .as_any()
        .downcast_ref::<StructArray>()
        .ok_or_else(|| Error::internal("manifest_entry is not a struct"))?;
    let (_, top, _) = entry.clone().into_parts();
    let data_file = top[4].as_struct();
    let mut cols: Vec<ArrayRef> = top[..4].to_vec();
    let mut decoded = data_file.columns().iter();
    for (col, &k) in DATA_FILE.iter().zip(&kept) {
        let a = if k { decoded.next().cloned() } else { None };
        cols.push(match a {
            Some(a) => a,
            None => new_null_array(
                &super::layout::arrow_type(col.kind, &ptype),
                data_file.len(),
            ),
        });
    }
    // a data_file field the spec requires that the writer's schema lacks decodes as nulls:
    // planning would take them for values (no size, a null partition pruned away)
    for ((col, &k), a) in DATA_FILE.iter().zip(&kept).zip(&cols[ENTRY.len()..]) {
        let needed = REQUIRED_DATA_FILE.contains(&col.id) && !(col.id == 102 && fields.is_empty());
        if k && needed && a.null_count() > 0 {
            return Err(Error::corrupt(format!(
                "manifest entry without {} (field id {}), which the spec requires",
                col.name, col.id
            )));
        }
    }
    // cols: 0 status, 1 snapshot_id, 2 sequence_number, 3 file_sequence_number, 4 content,
    // ..., 8 record_count, ..., 20 first_row_id.
    let status = cols[0].as_primitive::<Int32Type>().clone();
    if status.null_count() > 0 {
        return Err(Error::corrupt("manifest entry without a status"));
    }
    let status = status.values().clone();
    if let Some(snap) = inherit.snapshot_id {
        cols[1] = fill_i64(i64_col(&cols[1]), snap, |_| true);
    }
    for i in [2, 3] {
        if version == 1 {
            cols[i] = fill_i64(i64_col(&cols[i]), 0, |_| true);
        } else if let Some(seq) = inherit.sequence_number {
            cols[i] = fill_i64(i64_col(&cols[i]), seq, |r| seq == 0 || status[r] == 1);
        }
    }
    check_sequence_numbers(
        i64_col(&cols[2]),
        inherit.sequence_number,
        "sequence number",
    )?;
    check_sequence_numbers(
        i64_col(&cols[3]),
        inherit.sequence_number,
        "file sequence number",
    )?;
    cols[4] = fill_i32(cols[4].as_primitive::<Int32Type>(), 0);
    check_entries(
        &status,
        cols[4].as_primitive::<Int32Type>().values(),
        allowed,
        &cols[5],
    )?;
    // a v2 manifest listed with a first row id (the first snapshot after an upgrade to v3
    // assigns one to every data manifest) gives its rows ids as a v3 manifest does
    if let Some(first) = inherit.first_row_id {
        let content = cols[4].as_primitive::<Int32Type>().values().clone();
        let counts = i64_col(&cols[8]).clone();
        let ids = i64_col(&cols[20]).clone();
        let mut next = first;
        let mut out = Vec::with_capacity(ids.len());
        for r in 0..ids.len() {
            if ids.is_valid(r) {
                out.push(Some(ids.value(r)));
            } else if content[r] == 0 && status[r] != 2 {
                out.push(Some(next));
                next = next.saturating_add(counts.value(r).max(0));
            } else {
                out.push(None);
            }
        }
        cols[20] = Arc::new(Int64Array::from(out));
    }
    let schema = manifest_schema(&ptype).with_metadata(user_metadata(&c));
    Ok(RecordBatch::try_new(Arc::new(schema), cols)?)
}

/// Sequence numbers are never negative and never after the sequence number of what holds them
/// (`max`: a manifest's for its entries, a list's for its manifests). A damaged one would move
/// deletes before or after the data they apply to: deleted rows would come back, or live rows
/// vanish.
fn check_sequence_numbers(col: &Int64Array, max: Option<i64>, what: &str) -> Result<()> {
    let bad = col
        .iter()
        .flatten()
        .find(|&v| v < 0 || max.is_some_and(|m| v > m));
    match (bad, max) {
        (None, _) => Ok(()),
        (Some(v), Some(m)) if v >= 0 => Err(Error::corrupt(format!(
            "{what} {v} is after the sequence number {m} of the file holding it"
        ))),
        (Some(v), _) => Err(Error::corrupt(format!("{what} {v} is negative"))),
    }
}

/// The `data_file` fields every manifest holds (the spec's required fields but `content`, which
/// v1 manifests lack and which reads as 0, data, when absent; `partition` only when the spec
/// has fields).
const REQUIRED_DATA_FILE: [i32; 5] = [100, 101, 102, 103, 104];

/// Decodes a manifest list into one RecordBatch (see `layout::manifest_list_schema`), with the
/// v1 defaults applied (content 0, sequence numbers 0).
pub fn read_manifest_list(data: &[u8]) -> Result<RecordBatch> {
    let mut c = Container::open(data)?;
    let version = format_version(&c)?;
    let schema: ArrowSchema = manifest_list_schema();
    let target = arrow_schema::DataType::Struct(schema.fields().clone());
    let mut dec = Decoder::new(&c.schema, &target)?;
    decode_all(&mut c, &mut dec)?;
    let arr = dec.finish()?;
    let (_, mut cols, _) = arr.as_struct().clone().into_parts();
    // 3 content, 4 sequence_number, 5 min_sequence_number.
    // fields the spec requires (added_snapshot_id from v2 on): a writer's schema lacking one
    // decodes as nulls, which planning would take for values
    for (i, col) in MANIFEST_FILE.iter().enumerate().take(7) {
        let needed = matches!(col.id, 500..=502) || (col.id == 503 && version >= 2);
        if needed && cols[i].null_count() > 0 {
            return Err(Error::corrupt(format!(
                "manifest_file without {} (field id {}), which the spec requires",
                col.name, col.id
            )));
        }
    }
    cols[3] = fill_i32(cols[3].as_primitive::<Int32Type>(), 0);
    check_list_content(cols[3].as_primitive::<Int32Type>().values(), &cols[0])?;
    for i in [4, 5] {
        cols[i] = fill_i64(i64_col(&cols[i]), 0, |_| true);
    }
    // the list's own sequence number (v2 on) is its snapshot's, which no manifest follows;
    // the header is informational, so one that is not a number bounds nothing
    let list_seq = c
        .meta_str("sequence-number")
        .ok()
        .flatten()
        .and_then(|v| v.trim().parse::<i64>().ok());
    check_sequence_numbers(i64_col(&cols[4]), list_seq, "manifest sequence number")?;
    check_sequence_numbers(i64_col(&cols[5]), list_seq, "manifest min sequence number")?;
    let schema = schema.with_metadata(user_metadata(&c));
    Ok(RecordBatch::try_new(Arc::new(schema), cols)?)
}
