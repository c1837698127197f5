//! Manifests decoded for planning: only the columns a scan needs, and only the kept entries.
//!
//! [`read_projected`] decodes a manifest like `crate::manifest::read_manifest` (same Arrow
//! layout and field ids, same inheritance of sequence numbers and first row ids) but returns
//! only the columns planning reads, so the rest is freed per manifest and never cached. Scalar
//! columns planning never reads (`key_metadata`, `sort_order_id`, ...) are skipped by the Avro
//! decoder; the int-keyed metric maps are always decoded, because the decoder's tight map loop
//! is cheaper than its generic skip of the same bytes (measured: skipping all six maps made a
//! 200-manifest decode slower, 0.65 s against 0.58 s of CPU). Metrics maps can further be
//! trimmed to the field ids the filter references, so a cached manifest holds only what a
//! scan uses.
//!
//! [`keep_entries`] evaluates the partition and metrics filters of one decoded manifest and
//! returns its kept entries (not DELETED, may match) reduced to the requested columns, so
//! neither the mask nor the unkept rows ever cross into Python.

use std::sync::Arc;

use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{
    make_array, Array, ArrayRef, BooleanArray, Int32Array, Int64Array, MapArray, RecordBatch,
    RecordBatchOptions,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_data::transform::MutableArrayData;
use arrow_schema::{DataType, Field, Schema as ArrowSchema};

use crate::avro::binary::Reader;
use crate::avro::schema::Schema;
use crate::avro::to_arrow::Decoder;
use crate::avro::Container;
use crate::expr::Expr;
use crate::manifest::layout::{entry_target, manifest_schema, partition_type};
use crate::manifest::partition::partition_fields;
use crate::manifest::Inherit;
use crate::{Error, Result};

/// Columns every projected manifest holds (entry status and sequence numbers, and the
/// `data_file` fields that inheritance and planning always need).
pub const BASE_COLUMNS: &[&str] = &[
    "status",
    "sequence_number",
    "file_sequence_number",
    "content",
    "file_path",
    "file_format",
    "partition",
    "record_count",
    "file_size_in_bytes",
    "split_offsets",
    "first_row_id",
];

/// The metrics maps a filter may read.
pub const METRICS_COLUMNS: &[&str] = &[
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
];

/// Map columns decoded whether or not they are returned.
const DECODED_MAPS: &[&str] = &[
    "column_sizes",
    "value_counts",
    "null_value_counts",
    "nan_value_counts",
    "lower_bounds",
    "upper_bounds",
];

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

/// The Avro schema of the manifest's partition tuple (`data_file.partition`), if present.
fn avro_partition(c: &Container<'_>) -> Result<Option<Schema>> {
    let Schema::Record(r) = &c.schema else {
        return Err(Error::corrupt("manifest schema is not a record"));
    };
    Ok(r.fields
        .iter()
        .find(|f| f.field_id == Some(2) || (f.field_id.is_none() && f.name == "data_file"))
        .and_then(|f| match &f.schema {
            Schema::Record(df) => df
                .fields
                .iter()
                .find(|f| f.field_id == Some(102))
                .map(|f| f.schema.clone()),
            _ => None,
        }))
}

/// `target` (the nested `manifest_entry` struct) reduced to the top-level and `data_file`
/// fields named in `keep`.
fn project_target(target: &DataType, keep: &[&str]) -> Result<DataType> {
    let DataType::Struct(top) = target else {
        return Err(Error::internal("manifest entry target is not a struct"));
    };
    let mut out: Vec<Field> = Vec::new();
    for f in top.iter() {
        if f.name() == "data_file" {
            let DataType::Struct(df) = f.data_type() else {
                return Err(Error::internal("data_file target is not a struct"));
            };
            let fields: Vec<Field> = df
                .iter()
                .filter(|c| keep.contains(&c.name().as_str()))
                .map(|c| c.as_ref().clone())
                .collect();
            out.push(
                f.as_ref()
                    .clone()
                    .with_data_type(DataType::Struct(fields.into())),
            );
        } else if keep.contains(&f.name().as_str()) {
            out.push(f.as_ref().clone());
        }
    }
    Ok(DataType::Struct(out.into()))
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

/// A map column keeping only the entries whose key is in `ids` (rows and nulls unchanged).
pub fn trim_map(map: &MapArray, ids: &[i32]) -> Result<MapArray> {
    let keys = map.keys().as_primitive_opt::<Int32Type>().ok_or_else(|| {
        Error::validation(format!(
            "map keys must be int32, got {}",
            map.keys().data_type()
        ))
    })?;
    let offsets = map.value_offsets();
    let mut picked: Vec<usize> = Vec::new();
    let mut out_offsets: Vec<i32> = Vec::with_capacity(offsets.len());
    out_offsets.push(0);
    for w in offsets.windows(2) {
        for e in w[0] as usize..w[1] as usize {
            if ids.contains(&keys.value(e)) {
                picked.push(e);
            }
        }
        out_offsets
            .push(i32::try_from(picked.len()).map_err(|_| Error::validation("map too large"))?);
    }
    let values = map.values();
    let new_keys: ArrayRef = Arc::new(Int32Array::from_iter_values(
        picked.iter().map(|&e| keys.value(e)),
    ));
    let new_values: ArrayRef = if let Some(v) = values.as_primitive_opt::<Int64Type>() {
        Arc::new(
            picked
                .iter()
                .map(|&e| v.is_valid(e).then(|| v.value(e)))
                .collect::<Int64Array>(),
        )
    } else if let Some(v) = values.as_binary_opt::<i32>() {
        Arc::new(
            picked
                .iter()
                .map(|&e| v.is_valid(e).then(|| v.value(e)))
                .collect::<arrow_array::BinaryArray>(),
        )
    } else {
        let data = values.to_data();
        let mut m = MutableArrayData::new(vec![&data], false, picked.len());
        for &e in &picked {
            m.try_extend(0, e, e + 1)?;
        }
        make_array(m.freeze())
    };
    let DataType::Map(field, sorted) = map.data_type() else {
        return Err(Error::internal("not a map type"));
    };
    let DataType::Struct(entry_fields) = field.data_type() else {
        return Err(Error::internal("map entries are not a struct"));
    };
    let entries =
        arrow_array::StructArray::try_new(entry_fields.clone(), vec![new_keys, new_values], None)?;
    Ok(MapArray::try_new(
        field.clone(),
        OffsetBuffer::new(ScalarBuffer::from(out_offsets)),
        entries,
        map.nulls().cloned(),
        *sorted,
    )?)
}

/// Decodes the columns of a manifest named in `columns` (plus [`BASE_COLUMNS`]), in the flat
/// layout of `crate::manifest::read_manifest`, with inheritance applied. With `metric_ids`,
/// metrics maps keep only the entries of those field ids.
pub fn read_projected(
    data: &[u8],
    inherit: &Inherit,
    columns: &[&str],
    metric_ids: Option<&[i32]>,
) -> Result<RecordBatch> {
    let mut c = Container::open(data)?;
    let version = format_version(&c)?;
    let avro_part = avro_partition(&c)?;
    let fields = partition_fields(
        c.meta_str("partition-spec")?,
        c.meta_str("schema")?,
        avro_part.as_ref(),
    )?;
    let ptype = partition_type(&fields);
    let keep: Vec<&str> = BASE_COLUMNS.iter().chain(columns.iter()).copied().collect();
    // decoded (cheaper than skipped, see the module docs) and dropped unless asked for
    let decode: Vec<&str> = keep.iter().chain(DECODED_MAPS.iter()).copied().collect();
    let target = project_target(&entry_target(&ptype), &decode)?;
    let mut dec = Decoder::new(&c.schema, &target)?;
    while let Some((count, block)) = c.next_block()? {
        let mut r = Reader::new(block);
        for _ in 0..count {
            dec.decode(&mut r)?;
        }
        if r.remaining() != 0 {
            return Err(Error::corrupt(format!(
                "block of {count} records has {} trailing bytes",
                r.remaining()
            )));
        }
    }
    let entry = dec.finish()?;
    let (top_fields, top, _) = entry
        .as_struct_opt()
        .ok_or_else(|| Error::internal("manifest_entry is not a struct"))?
        .clone()
        .into_parts();
    let mut by_name: Named = Vec::new();
    for (f, col) in top_fields.iter().zip(top) {
        if f.name() == "data_file" {
            let (df_fields, df_cols, _) = col.as_struct().clone().into_parts();
            for (g, c) in df_fields.iter().zip(df_cols) {
                by_name.push((g.name().clone(), c));
            }
        } else {
            by_name.push((f.name().clone(), col));
        }
    }
    let status = get(&by_name, "status")?;
    let status = status.as_primitive::<Int32Type>();
    if status.null_count() > 0 {
        return Err(Error::corrupt("manifest entry without a status"));
    }
    let status = status.values().clone();
    for name in ["sequence_number", "file_sequence_number"] {
        let col = get(&by_name, name)?;
        let col = col.as_primitive::<Int64Type>();
        if version == 1 {
            set(&mut by_name, name, fill_i64(col, 0, |_| true));
        } else if let Some(seq) = inherit.sequence_number {
            set(
                &mut by_name,
                name,
                fill_i64(col, seq, |r| seq == 0 || status[r] == 1),
            );
        }
    }
    let content = get(&by_name, "content")?;
    let content = content.as_primitive::<Int32Type>();
    let content: Int32Array = if content.null_count() == 0 {
        content.clone()
    } else {
        content.iter().map(|v| Some(v.unwrap_or(0))).collect()
    };
    set(&mut by_name, "content", Arc::new(content.clone()));
    if version >= 3 {
        if let Some(first) = inherit.first_row_id {
            let counts = get(&by_name, "record_count")?;
            let counts = counts.as_primitive::<Int64Type>();
            let ids = get(&by_name, "first_row_id")?;
            let ids = ids.as_primitive::<Int64Type>();
            let mut next = first;
            let mut out = Vec::with_capacity(ids.len());
            for r in 0..ids.len() {
                if ids.is_valid(r) {
                    out.push(Some(ids.value(r)));
                } else if content.value(r) == 0 && status[r] != 2 {
                    out.push(Some(next));
                    next = next.saturating_add(counts.value(r).max(0));
                } else {
                    out.push(None);
                }
            }
            set(
                &mut by_name,
                "first_row_id",
                Arc::new(Int64Array::from(out)),
            );
        }
    }
    if let Some(ids) = metric_ids {
        for name in METRICS_COLUMNS.iter().filter(|n| keep.contains(n)) {
            if let Ok(col) = get(&by_name, name) {
                if let Some(m) = col.as_map_opt() {
                    set(&mut by_name, name, Arc::new(trim_map(m, ids)?));
                }
            }
        }
    }
    let full = manifest_schema(&ptype);
    let mut fields_out = Vec::new();
    let mut cols_out = Vec::new();
    for f in full.fields() {
        if !keep.contains(&f.name().as_str()) {
            continue;
        }
        if let Some((_, c)) = by_name.iter().find(|(n, _)| n == f.name()) {
            fields_out.push(f.as_ref().clone());
            cols_out.push(c.clone());
        }
    }
    let n = status.len();
    Ok(RecordBatch::try_new_with_options(
        Arc::new(ArrowSchema::new(fields_out)),
        cols_out,
        &RecordBatchOptions::new().with_row_count(Some(n)),
    )?)
}

type Named = Vec<(String, ArrayRef)>;

fn get(cols: &Named, name: &str) -> Result<ArrayRef> {
    cols.iter()
        .find(|(n, _)| n == name)
        .map(|(_, c)| c.clone())
        .ok_or_else(|| Error::internal(format!("projected manifest lacks {name}")))
}

fn set(cols: &mut Named, name: &str, col: ArrayRef) {
    if let Some(slot) = cols.iter_mut().find(|(n, _)| n == name) {
        slot.1 = col;
    }
}

/// The entries of one decoded manifest a scan keeps: not DELETED (status 2), partition tuple
/// satisfying `partition` (if any) and column metrics that may match `metrics` (if any).
pub fn entry_mask(
    batch: &RecordBatch,
    partition: Option<&Expr>,
    metrics: Option<&Expr>,
) -> Result<Vec<bool>> {
    let n = batch.num_rows();
    let status = batch
        .column_by_name("status")
        .ok_or_else(|| Error::validation("manifest batch lacks the status column"))?;
    let status = status
        .as_primitive_opt::<Int32Type>()
        .ok_or_else(|| Error::validation("manifest status must be int32"))?;
    let mut keep: Vec<bool> = (0..n)
        .map(|i| status.is_null(i) || status.value(i) != 2)
        .collect();
    let and = |keep: &mut Vec<bool>, m: BooleanArray| {
        for (i, k) in keep.iter_mut().enumerate() {
            // a null mask value is treated as "may match"
            *k = *k && (m.is_null(i) || m.value(i));
        }
    };
    if let Some(expr) = partition {
        let col = batch
            .column_by_name("partition")
            .ok_or_else(|| Error::validation("manifest batch lacks the partition column"))?;
        let s = col.as_struct_opt().ok_or_else(|| {
            Error::validation(format!(
                "the partition column must be a struct array, got {}",
                col.data_type()
            ))
        })?;
        and(&mut keep, crate::expr::partition::partition_mask(s, expr)?);
    }
    if let Some(expr) = metrics {
        if n > 0 && keep.iter().any(|k| *k) {
            and(&mut keep, crate::expr::metrics::metrics_mask(batch, expr)?);
        }
    }
    Ok(keep)
}

/// The rows of `col` where `keep` holds, copied in runs.
fn filter_array(col: &ArrayRef, keep: &[bool], kept: usize) -> Result<ArrayRef> {
    if kept == col.len() {
        return Ok(col.clone());
    }
    let data = col.to_data();
    let mut out = MutableArrayData::new(vec![&data], false, kept);
    let mut i = 0;
    while i < keep.len() {
        if keep[i] {
            let start = i;
            while i < keep.len() && keep[i] {
                i += 1;
            }
            out.try_extend(0, start, i)?;
        } else {
            i += 1;
        }
    }
    Ok(make_array(out.freeze()))
}

/// The kept entries of a decoded manifest (see [`entry_mask`]) reduced to the named columns
/// (those the batch has, in the order given).
pub fn keep_entries(
    batch: &RecordBatch,
    partition: Option<&Expr>,
    metrics: Option<&Expr>,
    columns: &[&str],
) -> Result<RecordBatch> {
    let keep = entry_mask(batch, partition, metrics)?;
    let kept = keep.iter().filter(|k| **k).count();
    let schema = batch.schema();
    let mut fields = Vec::new();
    let mut cols = Vec::new();
    for name in columns {
        if let Ok(i) = schema.index_of(name) {
            fields.push(schema.field(i).clone());
            cols.push(filter_array(batch.column(i), &keep, kept)?);
        }
    }
    Ok(RecordBatch::try_new_with_options(
        Arc::new(ArrowSchema::new(fields)),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(kept)),
    )?)
}

/// A boolean array of `keep` (for callers that need the mask itself).
pub fn mask_array(keep: &[bool]) -> BooleanArray {
    let mut b = BooleanBufferBuilder::new(keep.len());
    b.append_slice(keep);
    BooleanArray::new(b.finish(), None::<NullBuffer>)
}
