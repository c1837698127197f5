//! Manifests decoded for planning: only the columns a scan needs, and only the kept entries.
//!
//! [`read_projected`] decodes a manifest through `crate::manifest::read_manifest_projected`
//! (same Arrow layout, field ids and inheritance) and returns only the columns planning reads,
//! so the rest is skipped by the Avro decoder's compiled skip plans and never cached. Metric
//! maps can keep only the pairs of the field ids the filter references, so a cached manifest
//! holds only what a scan uses.
//!
//! [`keep_entries`] evaluates the partition and metrics filters of one decoded manifest and
//! returns its kept entries (not DELETED, may match) reduced to the requested columns, so
//! neither the mask nor the unkept rows ever cross into Python.

use std::sync::Arc;

use arrow_array::builder::BooleanBufferBuilder;
use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{make_array, Array, ArrayRef, BooleanArray, RecordBatch, RecordBatchOptions};
use arrow_buffer::NullBuffer;
use arrow_data::transform::MutableArrayData;
use arrow_schema::Schema as ArrowSchema;

use crate::expr::Expr;
use crate::manifest::{read_manifest_projected, Inherit, Projection};
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

/// Decodes the columns of a manifest named in `columns` (plus [`BASE_COLUMNS`]), in the flat
/// layout of `crate::manifest::read_manifest`, with inheritance applied. With `metric_ids`,
/// metrics maps keep only the entries of those field ids.
pub fn read_projected(
    data: &[u8],
    inherit: &Inherit,
    columns: &[&str],
    metric_ids: Option<&[i32]>,
) -> Result<RecordBatch> {
    let keep: Vec<&str> = BASE_COLUMNS.iter().chain(columns.iter()).copied().collect();
    let projection = Projection {
        columns: Some(keep.iter().map(|c| c.to_string()).collect()),
        stats_ids: metric_ids.map(<[i32]>::to_vec),
    };
    let full = read_manifest_projected(data, inherit, &projection)?;
    let indices: Vec<usize> = full
        .schema()
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| keep.contains(&f.name().as_str()))
        .map(|(i, _)| i)
        .collect();
    let kept = full.project(&indices)?;
    // the file's key-value metadata is not part of the planning layout
    let schema = kept
        .schema()
        .as_ref()
        .clone()
        .with_metadata(std::collections::HashMap::new());
    Ok(RecordBatch::try_new_with_options(
        Arc::new(schema),
        kept.columns().to_vec(),
        &RecordBatchOptions::new().with_row_count(Some(kept.num_rows())),
    )?)
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

/// [`read_projected`] then [`keep_entries`] on the result: the kept entries reduced to
/// `keep_columns`, and the whole decoded batch.
pub fn read_keep(
    data: &[u8],
    inherit: &Inherit,
    columns: &[&str],
    metric_ids: Option<&[i32]>,
    partition: Option<&Expr>,
    metrics: Option<&Expr>,
    keep_columns: &[&str],
) -> Result<(RecordBatch, RecordBatch)> {
    let whole = read_projected(data, inherit, columns, metric_ids)?;
    let kept = keep_entries(&whole, partition, metrics, keep_columns)?;
    Ok((kept, whole))
}

/// The columns of `batch` that are (`metrics` true) or are not [`METRICS_COLUMNS`], as a
/// batch of their own (the buffers are shared, not copied).
pub fn split_metrics(batch: &RecordBatch, metrics: bool) -> Result<RecordBatch> {
    let schema = batch.schema();
    let indices: Vec<usize> = schema
        .fields()
        .iter()
        .enumerate()
        .filter(|(_, f)| METRICS_COLUMNS.contains(&f.name().as_str()) == metrics)
        .map(|(i, _)| i)
        .collect();
    Ok(batch.project(&indices)?)
}

/// The columns of two batches of the same rows side by side.
pub fn join(base: &RecordBatch, extra: &RecordBatch) -> Result<RecordBatch> {
    if base.num_rows() != extra.num_rows() {
        return Err(Error::validation(format!(
            "cannot join batches of {} and {} rows",
            base.num_rows(),
            extra.num_rows()
        )));
    }
    let schema = ArrowSchema::new(
        base.schema()
            .fields()
            .iter()
            .chain(extra.schema().fields().iter())
            .cloned()
            .collect::<Vec<_>>(),
    );
    let cols: Vec<ArrayRef> = base
        .columns()
        .iter()
        .chain(extra.columns().iter())
        .cloned()
        .collect();
    Ok(RecordBatch::try_new_with_options(
        Arc::new(schema),
        cols,
        &RecordBatchOptions::new().with_row_count(Some(base.num_rows())),
    )?)
}

/// A boolean array of `keep` (for callers that need the mask itself).
pub fn mask_array(keep: &[bool]) -> BooleanArray {
    let mut b = BooleanBufferBuilder::new(keep.len());
    b.append_slice(keep);
    BooleanArray::new(b.finish(), None::<NullBuffer>)
}
