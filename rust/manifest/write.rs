//! Writing manifests and manifest lists from Arrow RecordBatches laid out like the readers'
//! output (columns matched by name; absent optional columns are written as null).

use std::sync::Arc;

use arrow_array::builder::{
    BinaryBuilder, BooleanBuilder, Int64Builder, ListBuilder, StringBuilder, StructBuilder,
};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::{Array, ArrayRef, Int32Array, RecordBatch};
use arrow_schema::DataType;
use serde_json::Value;

use super::layout::{
    manifest_avro_schema, manifest_list_avro_schema, manifest_list_schema, summary_type, Col, Kind,
    DATA_FILE, ENTRY, MANIFEST_FILE,
};
use super::partition::{decimal_size, partition_fields, PartitionField};
use super::summary::{summarize, FieldSummary};
use crate::avro::from_arrow::{Enc, MapVals};
use crate::avro::{Codec, ContainerWriter};
use crate::{Error, Result};

/// Java's default `block_size_in_bytes` written into v1 data files.
const V1_BLOCK_SIZE: i64 = 64 * 1024 * 1024;

/// Options of a manifest write.
#[derive(Debug, Clone)]
pub struct ManifestOptions {
    pub format_version: u8,
    /// The table schema JSON (Iceberg schema, Appendix C).
    pub schema_json: String,
    pub schema_id: Option<i32>,
    /// The partition spec JSON: an object with `fields` (and `spec-id`) or the fields array.
    pub spec_json: String,
    pub spec_id: i32,
    /// 0 data, 1 deletes.
    pub content: i32,
    pub codec: Codec,
    /// `manifest_path` of the returned `manifest_file` row.
    pub path: String,
    /// `added_snapshot_id` of the returned `manifest_file` row.
    pub snapshot_id: Option<i64>,
}

fn version_index(v: u8) -> Result<usize> {
    match v {
        1..=3 => Ok((v - 1) as usize),
        other => Err(Error::unsupported(format!("format version {other}"))),
    }
}

fn col_enc<'a>(
    batch_col: Option<&'a ArrayRef>,
    col: &Col,
    v: usize,
    partition: &[PartitionField],
) -> Result<Enc<'a>> {
    let Some(arr) = batch_col else {
        if col.required[v] {
            return match (col.id, col.kind) {
                (134 | 517, _) => Ok(Enc::Const(0)),
                _ => Err(Error::validation(format!(
                    "column {} is required for format version {}",
                    col.name,
                    v + 1
                ))),
            };
        }
        return Ok(Enc::Null);
    };
    let inner = value_enc(arr, col, partition)?;
    Ok(if col.required[v] {
        Enc::Req(arr.nulls(), col.name.to_owned(), Box::new(inner))
    } else {
        Enc::Opt(arr.nulls(), Box::new(inner))
    })
}

fn expect(arr: &ArrayRef, want: &DataType, name: &str) -> Result<()> {
    let ok = match (arr.data_type(), want) {
        (DataType::Map(a, _), DataType::Map(b, _)) | (DataType::List(a), DataType::List(b)) => {
            match (a.data_type(), b.data_type()) {
                (DataType::Struct(x), DataType::Struct(y)) => {
                    x.iter()
                        .zip(y.iter())
                        .all(|(p, q)| p.data_type() == q.data_type())
                        && x.len() == y.len()
                }
                (p, q) => p == q,
            }
        }
        (a, b) => a == b,
    };
    if ok {
        Ok(())
    } else {
        Err(Error::validation(format!(
            "column {name} has type {}, expected {want}",
            arr.data_type()
        )))
    }
}

fn value_enc<'a>(arr: &'a ArrayRef, col: &Col, partition: &[PartitionField]) -> Result<Enc<'a>> {
    let name = col.name;
    let want = super::layout::arrow_type(col.kind, &DataType::Null);
    Ok(match col.kind {
        Kind::Bool | Kind::Int | Kind::Long | Kind::Str | Kind::Bytes => {
            expect(arr, &want, name)?;
            Enc::leaf(arr, 0, name)?
        }
        Kind::MapLong(..) | Kind::MapBytes(..) => {
            expect(arr, &want, name)?;
            let m = arr.as_map();
            let keys = m.keys();
            let vals = m.values();
            if keys.null_count() == 0 && vals.null_count() == 0 {
                if let Some(k) = keys.as_primitive_opt::<Int32Type>() {
                    let v = if let Some(v) = vals.as_primitive_opt::<Int64Type>() {
                        Some(MapVals::Long(v.values()))
                    } else {
                        vals.as_binary_opt::<i32>()
                            .map(|b| MapVals::Bin(b.value_offsets(), b.values().as_slice()))
                    };
                    if let Some(v) = v {
                        return Ok(Enc::IntMap(m.value_offsets(), k.values(), v));
                    }
                }
            }
            Enc::Array(
                m.value_offsets(),
                Box::new(Enc::Record(vec![
                    Enc::Req(
                        keys.nulls(),
                        format!("{name} key"),
                        Box::new(Enc::leaf(keys, 0, name)?),
                    ),
                    Enc::Req(
                        vals.nulls(),
                        format!("{name} value"),
                        Box::new(Enc::leaf(vals, 0, name)?),
                    ),
                ])),
            )
        }
        Kind::ListLong(_) | Kind::ListInt(_) => {
            expect(arr, &want, name)?;
            let l = arr.as_list::<i32>();
            let items = l.values();
            Enc::Array(
                l.value_offsets(),
                Box::new(Enc::Req(
                    items.nulls(),
                    format!("{name} element"),
                    Box::new(Enc::leaf(items, 0, name)?),
                )),
            )
        }
        Kind::Partition => {
            let DataType::Struct(fs) = arr.data_type() else {
                return Err(Error::validation("column partition is not a struct"));
            };
            if fs.len() != partition.len() {
                return Err(Error::validation(format!(
                    "partition has {} fields but the spec has {}",
                    fs.len(),
                    partition.len()
                )));
            }
            let s = arr.as_struct();
            let mut encs = Vec::with_capacity(partition.len());
            for (i, pf) in partition.iter().enumerate() {
                let c = s.column(i);
                let want = pf.ptype.arrow();
                if c.data_type() != &want {
                    return Err(Error::validation(format!(
                        "partition field {} has type {}, expected {want}",
                        pf.name,
                        c.data_type()
                    )));
                }
                let size = match want {
                    DataType::Decimal128(p, _) => decimal_size(p),
                    _ => 0,
                };
                encs.push(Enc::Opt(c.nulls(), Box::new(Enc::leaf(c, size, &pf.name)?)));
            }
            Enc::Record(encs)
        }
        Kind::Summaries => {
            expect(arr, &want, name)?;
            let l = arr.as_list::<i32>();
            let s = l.values().as_struct();
            let cn = s.column(0);
            let mut encs = vec![Enc::Req(
                cn.nulls(),
                "contains_null".into(),
                Box::new(Enc::leaf(cn, 0, "contains_null")?),
            )];
            for c in &s.columns()[1..] {
                encs.push(Enc::Opt(c.nulls(), Box::new(Enc::leaf(c, 0, name)?)));
            }
            Enc::Array(l.value_offsets(), Box::new(Enc::Record(encs)))
        }
    })
}

fn spec_fields_json(spec_json: &str) -> Result<String> {
    let v: Value = serde_json::from_str(spec_json)
        .map_err(|e| Error::validation(format!("partition spec is not valid JSON: {e}")))?;
    Ok(match v {
        Value::Object(o) => o
            .get("fields")
            .cloned()
            .unwrap_or(Value::Array(vec![]))
            .to_string(),
        other => other.to_string(),
    })
}

/// The uncompressed size the writer aims for per block: Java's Avro writer flushes at 64 KB.
const BLOCK_BYTES: usize = 64 << 10;

/// Writes a manifest; returns its bytes and the one-row `manifest_file` RecordBatch describing
/// it (counts, partition summaries; `sequence_number` left null for the list writer to assign).
/// The spec's fields as JSON, the partition fields and the manifest's Avro schema.
type Layout = (String, Vec<PartitionField>, String);

/// What a [`Layout`] is computed from: format version, spec JSON, schema JSON.
type LayoutKey = (u8, String, String);

thread_local! {
    /// The layouts of the last few (format version, spec, schema) written on this thread: the
    /// manifests of one commit share them, and building the Avro schema costs more than a copy.
    static LAYOUTS: std::cell::RefCell<Vec<(LayoutKey, Layout)>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// [`Layout`] of a manifest written with `o`, through the per-thread cache.
fn manifest_layout(o: &ManifestOptions) -> Result<Layout> {
    let hit = LAYOUTS
        .try_with(|c| {
            c.borrow()
                .iter()
                .find(|((v, spec, schema), _)| {
                    *v == o.format_version && *spec == o.spec_json && *schema == o.schema_json
                })
                .map(|(_, l)| l.clone())
        })
        .ok()
        .flatten();
    if let Some(l) = hit {
        return Ok(l);
    }
    let spec_fields = spec_fields_json(&o.spec_json)?;
    let partition = partition_fields(Some(&spec_fields), Some(&o.schema_json), None)?;
    let schema_json = manifest_avro_schema(o.format_version, &partition);
    let layout = (spec_fields, partition, schema_json);
    let _ = LAYOUTS.try_with(|c| {
        let mut c = c.borrow_mut();
        if c.len() >= 4 {
            c.remove(0);
        }
        let key = (o.format_version, o.spec_json.clone(), o.schema_json.clone());
        c.push((key, layout.clone()));
    });
    Ok(layout)
}

/// The `snapshot_id` column of a v1 manifest's entries with its nulls (or all of it, when
/// absent) set to `snapshot_id`; None when nothing needs filling or nothing fills it.
fn v1_snapshot_ids(batch: &RecordBatch, snapshot_id: Option<i64>) -> Result<Option<ArrayRef>> {
    let Some(id) = snapshot_id else {
        return Ok(None);
    };
    let Some(col) = batch.column_by_name("snapshot_id") else {
        let all = arrow_array::Int64Array::from(vec![id; batch.num_rows()]);
        return Ok(Some(Arc::new(all)));
    };
    if col.null_count() == 0 {
        return Ok(None);
    }
    let Some(ids) = col.as_primitive_opt::<Int64Type>() else {
        return Err(Error::validation(format!(
            "column snapshot_id has type {}, expected Int64",
            col.data_type()
        )));
    };
    let filled: arrow_array::Int64Array = ids.iter().map(|x| Some(x.unwrap_or(id))).collect();
    Ok(Some(Arc::new(filled)))
}

pub fn write_manifest(batch: &RecordBatch, o: &ManifestOptions) -> Result<(Vec<u8>, RecordBatch)> {
    let v = version_index(o.format_version)?;
    if !(0..=1).contains(&o.content) {
        return Err(Error::validation(format!(
            "manifest content {} is not 0 (data) or 1 (deletes)",
            o.content
        )));
    }
    let (spec_fields, partition, schema_json) = manifest_layout(o)?;
    let mut meta: Vec<(String, Vec<u8>)> = vec![
        ("schema".into(), o.schema_json.clone().into_bytes()),
        ("partition-spec".into(), spec_fields.into_bytes()),
        (
            "partition-spec-id".into(),
            o.spec_id.to_string().into_bytes(),
        ),
        (
            "format-version".into(),
            o.format_version.to_string().into_bytes(),
        ),
    ];
    if let Some(id) = o.schema_id {
        meta.push(("schema-id".into(), id.to_string().into_bytes()));
    }
    if v > 0 {
        let c = if o.content == 1 { "deletes" } else { "data" };
        meta.push(("content".into(), c.as_bytes().to_vec()));
    }
    // v1 has no inheritance: an entry's snapshot id is written out (the spec makes it
    // required there), the manifest's own for entries that name none, as Java's v1 writer
    // fills it
    let v1_snapshot_ids = if v == 0 {
        v1_snapshot_ids(batch, o.snapshot_id)?
    } else {
        None
    };
    let get = |name: &str| match (&v1_snapshot_ids, name) {
        (Some(filled), "snapshot_id") => Some(filled),
        _ => batch.column_by_name(name),
    };
    let mut w = ContainerWriter::new(&schema_json, &meta, o.codec);
    // An empty batch needs no columns (Java writes no block for zero records).
    if batch.num_rows() > 0 {
        let mut df = Vec::new();
        for col in DATA_FILE.iter().filter(|c| c.present[v]) {
            df.push(col_enc(get(col.name), col, v, &partition)?);
            if v == 0 && col.id == 104 {
                df.push(Enc::Const(V1_BLOCK_SIZE));
            }
        }
        let mut top = Vec::new();
        let mut df = Some(Enc::Record(df));
        for col in ENTRY.iter().filter(|c| c.present[v]) {
            top.push(col_enc(get(col.name), col, v, &partition)?);
            if col.id == 1 && v == 0 {
                top.extend(df.take());
            }
        }
        top.extend(df.take());
        let root = Enc::Record(top);
        // Blocks of about BLOCK_BYTES (sized from the first entry), encoded and compressed
        // in parallel.
        let mut first = Vec::new();
        root.encode(0, &mut first)?;
        let per_block = (BLOCK_BYTES / first.len().max(1)).max(1);
        w.encode_blocks(batch.num_rows(), per_block, |i, out| root.encode(i, out))?;
    }
    let bytes = w.finish()?;

    // The manifest_file row.
    let no_status = Int32Array::from(Vec::<i32>::new());
    let status = match get("status").and_then(|c| c.as_primitive_opt::<Int32Type>()) {
        Some(s) => s,
        None if batch.num_rows() == 0 => &no_status,
        None => return Err(Error::validation("column status (int32) is required")),
    };
    let (mut files, mut rows) = ([0i32; 3], [0i64; 3]);
    let mut min_seq: Option<i64> = None;
    let i64_col = |name: &str| get(name).and_then(|c| c.as_primitive_opt::<Int64Type>());
    let (counts, seqs) = (i64_col("record_count"), i64_col("sequence_number"));
    let contents = get("content").and_then(|c| c.as_primitive_opt::<Int32Type>());
    // data manifests hold data files (0), delete manifests delete files (1, 2)
    let allowed = if o.content == 0 { 0..=0 } else { 1..=2 };
    let at = |c: Option<&arrow_array::Int64Array>, i: usize| {
        c.and_then(|c| c.is_valid(i).then(|| c.value(i)))
    };
    for i in 0..batch.num_rows() {
        let s = status.value(i);
        let k = match s {
            0 => 1, // existing
            1 => 0, // added
            2 => 2, // deleted
            other => {
                return Err(Error::validation(format!(
                    "row {i}: status {other} is not 0, 1 or 2"
                )))
            }
        };
        let content = contents.and_then(|c| c.is_valid(i).then(|| c.value(i)));
        let content = content.unwrap_or(0);
        if !allowed.contains(&content) {
            let kind = if o.content == 0 { "data" } else { "delete" };
            return Err(Error::validation(format!(
                "row {i}: content {content} in a {kind} manifest"
            )));
        }
        files[k] += 1;
        rows[k] += at(counts, i).unwrap_or(0);
        if s != 2 {
            if let Some(seq) = at(seqs, i) {
                min_seq = Some(min_seq.map_or(seq, |m| m.min(seq)));
            }
        }
    }
    let summaries: Vec<FieldSummary> = match get("partition") {
        Some(p) if !partition.is_empty() => p
            .as_struct()
            .columns()
            .iter()
            .zip(&partition)
            .map(|(c, pf)| summarize(c, &pf.ptype.iceberg()))
            .collect::<Result<_>>()?,
        _ => vec![],
    };
    let row = manifest_file_row(o, bytes.len() as i64, files, rows, min_seq, &summaries)?;
    Ok((bytes, row))
}

fn manifest_file_row(
    o: &ManifestOptions,
    length: i64,
    files: [i32; 3],
    rows: [i64; 3],
    min_seq: Option<i64>,
    summaries: &[FieldSummary],
) -> Result<RecordBatch> {
    let schema = manifest_list_schema();
    let DataType::Struct(sfields) = summary_type() else {
        return Err(Error::internal("summary type"));
    };
    let mut parts = ListBuilder::new(StructBuilder::from_fields(sfields.clone(), summaries.len()))
        .with_field(match schema.field_with_name("partitions")?.data_type() {
            DataType::List(f) => f.clone(),
            _ => return Err(Error::internal("partitions type")),
        });
    for s in summaries {
        let sb = parts.values();
        sb.field_builder::<BooleanBuilder>(0)
            .ok_or_else(|| Error::internal("summary builder"))?
            .append_value(s.contains_null);
        sb.field_builder::<BooleanBuilder>(1)
            .ok_or_else(|| Error::internal("summary builder"))?
            .append_value(s.contains_nan);
        sb.field_builder::<BinaryBuilder>(2)
            .ok_or_else(|| Error::internal("summary builder"))?
            .append_option(s.lower.as_deref());
        sb.field_builder::<BinaryBuilder>(3)
            .ok_or_else(|| Error::internal("summary builder"))?
            .append_option(s.upper.as_deref());
        sb.append(true);
    }
    parts.append(true);
    let i32c = |v: Option<i32>| -> ArrayRef { Arc::new(arrow_array::Int32Array::from(vec![v])) };
    let i64c = |v: Option<i64>| -> ArrayRef { Arc::new(arrow_array::Int64Array::from(vec![v])) };
    let mut path = StringBuilder::new();
    path.append_value(&o.path);
    let cols: Vec<ArrayRef> = vec![
        Arc::new(path.finish()),
        i64c(Some(length)),
        i32c(Some(o.spec_id)),
        i32c(Some(o.content)),
        i64c(None),
        i64c(min_seq),
        i64c(o.snapshot_id),
        i32c(Some(files[0])),
        i32c(Some(files[1])),
        i32c(Some(files[2])),
        i64c(Some(rows[0])),
        i64c(Some(rows[1])),
        i64c(Some(rows[2])),
        Arc::new(parts.finish()),
        Arc::new(arrow_array::BinaryArray::from(vec![None::<&[u8]>])),
        i64c(None),
    ];
    Ok(RecordBatch::try_new(Arc::new(schema), cols)?)
}

/// Options of a manifest-list write.
#[derive(Debug, Clone)]
pub struct ListOptions {
    pub format_version: u8,
    pub snapshot_id: i64,
    pub parent_snapshot_id: Option<i64>,
    pub sequence_number: i64,
    /// v3: the snapshot's first row id; data manifests without a `first_row_id` are assigned
    /// consecutive ranges from it.
    pub first_row_id: Option<i64>,
    pub codec: Codec,
}

/// Writes a manifest list. Null `sequence_number` / `min_sequence_number` (v2+) are assigned
/// the list's sequence number; in v3 data manifests with a null `first_row_id` get one.
/// Returns the bytes and the next unassigned row id (v3; otherwise the given first row id).
pub fn write_manifest_list(batch: &RecordBatch, o: &ListOptions) -> Result<(Vec<u8>, Option<i64>)> {
    let v = version_index(o.format_version)?;
    let mut meta: Vec<(String, Vec<u8>)> = vec![
        ("snapshot-id".into(), o.snapshot_id.to_string().into_bytes()),
        (
            "parent-snapshot-id".into(),
            o.parent_snapshot_id
                .map_or("null".to_owned(), |p| p.to_string())
                .into_bytes(),
        ),
    ];
    if v > 0 {
        meta.push((
            "sequence-number".into(),
            o.sequence_number.to_string().into_bytes(),
        ));
    }
    meta.push((
        "format-version".into(),
        o.format_version.to_string().into_bytes(),
    ));
    let n = batch.num_rows();
    let mut cols: Vec<(String, ArrayRef)> = batch
        .schema()
        .fields()
        .iter()
        .zip(batch.columns())
        .map(|(f, c)| (f.name().clone(), c.clone()))
        .collect();
    let find =
        |cols: &Vec<(String, ArrayRef)>, name: &str| cols.iter().position(|(n, _)| n == name);
    if v > 0 {
        for name in ["sequence_number", "min_sequence_number"] {
            if let Some(i) = find(&cols, name) {
                let c = cols[i]
                    .1
                    .as_primitive_opt::<Int64Type>()
                    .ok_or_else(|| Error::validation(format!("column {name} must be int64")))?;
                let filled: Int64Builder =
                    c.iter().fold(Int64Builder::with_capacity(n), |mut b, x| {
                        b.append_value(x.unwrap_or(o.sequence_number));
                        b
                    });
                let mut filled = filled;
                cols[i].1 = Arc::new(filled.finish());
            } else {
                cols.push((
                    name.into(),
                    Arc::new(arrow_array::Int64Array::from(vec![o.sequence_number; n])),
                ));
            }
        }
    }
    let mut next_row_id = o.first_row_id;
    if v == 2 {
        if let Some(first) = o.first_row_id {
            let mut next = first;
            let content = find(&cols, "content").map(|i| cols[i].1.clone());
            let get64 = |name: &str, i: usize| -> i64 {
                find(&cols, name)
                    .and_then(|k| cols[k].1.as_primitive_opt::<Int64Type>().cloned())
                    .filter(|c| c.is_valid(i))
                    .map_or(0, |c| c.value(i))
            };
            let existing = find(&cols, "first_row_id")
                .and_then(|k| cols[k].1.as_primitive_opt::<Int64Type>().cloned());
            let mut out = Int64Builder::with_capacity(n);
            for i in 0..n {
                let is_data = content
                    .as_ref()
                    .and_then(|c| c.as_primitive_opt::<Int32Type>().cloned())
                    .is_none_or(|c| c.is_null(i) || c.value(i) == 0);
                match existing.as_ref().filter(|c| c.is_valid(i)) {
                    Some(c) => out.append_value(c.value(i)),
                    None if is_data => {
                        out.append_value(next);
                        next += get64("existing_rows_count", i) + get64("added_rows_count", i);
                    }
                    None => out.append_null(),
                }
            }
            let arr: ArrayRef = Arc::new(out.finish());
            match find(&cols, "first_row_id") {
                Some(k) => cols[k].1 = arr,
                None => cols.push(("first_row_id".into(), arr)),
            }
            next_row_id = Some(next);
        }
        meta.push((
            "first-row-id".into(),
            o.first_row_id
                .map_or("null".into(), |f| f.to_string())
                .into_bytes(),
        ));
    }
    let by_name = |name: &str| cols.iter().find(|(n, _)| n == name).map(|(_, c)| c);
    if let Some(c) = by_name("content").and_then(|c| c.as_primitive_opt::<Int32Type>()) {
        if let Some((i, bad)) = c
            .iter()
            .enumerate()
            .find(|(_, x)| x.is_some_and(|x| !(0..=1).contains(&x)))
        {
            return Err(Error::validation(format!(
                "row {i}: manifest content {} is not 0 (data) or 1 (deletes)",
                bad.unwrap_or_default()
            )));
        }
    }
    let encs: Vec<Enc<'_>> = MANIFEST_FILE
        .iter()
        .filter(|c| c.present[v])
        .map(|c| col_enc(by_name(c.name), c, v, &[]))
        .collect::<Result<_>>()?;
    let root = Enc::Record(encs);
    let mut w = ContainerWriter::new(&manifest_list_avro_schema(o.format_version), &meta, o.codec);
    for i in 0..n {
        root.encode(i, w.datum())?;
        w.end_datum()?;
    }
    Ok((w.finish()?, next_row_id))
}
