//! Avro data and delete files (Iceberg's Avro file format): the header's schema and row count,
//! and the records decoded into Arrow record batches of a target schema whose fields carry
//! Iceberg field ids (see [`super::to_arrow`]). Writer fields the target does not name are
//! skipped in the bytes; target fields the writer lacks come back null.
//!
//! Writing goes the other way: Arrow columns bound to a writer schema (given as JSON, made by
//! the caller from the table schema) and encoded as records by [`super::from_arrow::Enc`], in
//! blocks encoded and compressed in parallel.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, RecordBatch, RecordBatchOptions, StructArray};
use arrow_schema::{DataType, Fields, Schema as ArrowSchema};

use super::binary::Reader;
use super::from_arrow::Enc;
use super::schema::Schema;
use super::to_arrow::Decoder;
use super::{Codec, Container, ContainerWriter};
use crate::{Error, Result};

/// Uncompressed bytes of records per block, about (Iceberg Java's writer: 64 KiB... 1 MiB).
const BLOCK_BYTES: usize = 1 << 20;

/// The writer schema (the `avro.schema` JSON) and the record count of an Avro container, read
/// from the header and the block headers alone (nothing is decompressed).
pub fn header(data: &[u8]) -> Result<(String, u64)> {
    let c = Container::open(data)?;
    let schema = c
        .meta_str("avro.schema")?
        .ok_or_else(|| Error::corrupt("header has no avro.schema"))?
        .to_owned();
    let (records, _, _) = c.pending();
    Ok((schema, records))
}

/// The records of the blocks from file offset `offset` (0: the first block) decoded into one
/// batch of the top-level `fields`, ending at the first block boundary at or after
/// `batch_rows` rows; with the offset of the next block, `None` at the end of the file. A read
/// of a file batch by batch holds one batch.
pub fn read_from(
    data: &[u8],
    fields: &Fields,
    offset: usize,
    batch_rows: usize,
) -> Result<(RecordBatch, Option<usize>)> {
    let mut c = Container::open(data)?;
    if offset > 0 {
        let header_end = c.position();
        c.seek(offset, header_end)?;
    }
    let target = DataType::Struct(fields.clone());
    let schema = Arc::new(ArrowSchema::new(fields.clone()));
    // The blocks of this batch, still compressed; then decompressed and decoded in parallel,
    // a run of consecutive blocks per task, and joined in order.
    let mut raw = Vec::new();
    let mut rows = 0usize;
    while rows < batch_rows.max(1) {
        let Some((count, block)) = c.next_raw_block()? else {
            break;
        };
        raw.push((count, block));
        rows += count;
    }
    let next = (c.position() < data.len()).then_some(c.position());
    let (codec, writer) = (c.codec, &c.schema);
    let parts = crate::pool::install(None, || {
        use rayon::prelude::*;
        let per = raw
            .len()
            .div_ceil(rayon::current_num_threads().max(1))
            .max(1);
        raw.par_chunks(per)
            .map(|run| {
                let mut dec = Decoder::new(writer, &target)?;
                let (mut scratch, mut inflater) = (Vec::new(), None);
                let mut n = 0;
                for &(count, block) in run {
                    let bytes =
                        Container::inflate(codec, count, block, &mut scratch, &mut inflater)?;
                    let mut r = Reader::new(bytes);
                    dec.decode_many(&mut r, count)?;
                    if r.remaining() != 0 {
                        return Err(Error::corrupt(format!(
                            "block of {count} records has {} trailing bytes",
                            r.remaining()
                        )));
                    }
                    n += count;
                }
                batch(dec, &schema, n)
            })
            .collect::<Result<Vec<_>>>()
    })?;
    let out = match parts.len() {
        0 => batch(Decoder::new(writer, &target)?, &schema, 0)?,
        1 => parts.into_iter().next().expect("one part"),
        _ => arrow_select::concat::concat_batches(&schema, &parts)
            .map_err(|e| Error::internal(format!("cannot join decoded blocks: {e}")))?,
    };
    Ok((out, next))
}

/// Every record of the container `data` decoded into batches of the top-level `fields`, a
/// batch ending at the first block boundary at or after `batch_rows` rows.
pub fn read(data: &[u8], fields: &Fields, batch_rows: usize) -> Result<Vec<RecordBatch>> {
    let mut out = Vec::new();
    let mut offset = Some(0);
    while let Some(at) = offset {
        let (b, next) = read_from(data, fields, at, batch_rows)?;
        out.push(b);
        offset = next;
    }
    Ok(out)
}

fn batch(dec: Decoder, schema: &Arc<ArrowSchema>, rows: usize) -> Result<RecordBatch> {
    let arr = dec.finish()?;
    let Some(st) = arr.as_any().downcast_ref::<StructArray>() else {
        return Err(Error::internal("Avro records did not decode to a struct"));
    };
    if st.len() != rows {
        return Err(Error::corrupt(format!(
            "decoded {} records of a block run of {rows}",
            st.len()
        )));
    }
    if st.null_count() > 0 {
        return Err(Error::corrupt("a top-level Avro record is null"));
    }
    let options = RecordBatchOptions::new().with_row_count(Some(rows));
    RecordBatch::try_new_with_options(schema.clone(), st.columns().to_vec(), &options)
        .map_err(|e| Error::corrupt(format!("decoded records do not fit the schema: {e}")))
}

/// `batches` written as one Avro container of the writer schema `schema_json` (a record whose
/// fields are the batches' columns, in order; optional values as `["null", T]`).
pub fn write(
    batches: &[RecordBatch],
    schema_json: &str,
    metadata: &[(String, Vec<u8>)],
    codec: Codec,
) -> Result<Vec<u8>> {
    let schema = Schema::parse(schema_json.as_bytes())?;
    let Schema::Record(rec) = &schema else {
        return Err(Error::validation(
            "an Avro data file's schema must be a record",
        ));
    };
    let mut w = ContainerWriter::new(schema_json, metadata, codec);
    for batch in batches {
        if rec.fields.len() != batch.num_columns() {
            return Err(Error::validation(format!(
                "the Avro schema has {} fields for {} columns",
                rec.fields.len(),
                batch.num_columns()
            )));
        }
        let fields = rec
            .fields
            .iter()
            .zip(batch.columns())
            .map(|(f, c)| bind(c, &f.schema, &f.name))
            .collect::<Result<Vec<_>>>()?;
        let root = Enc::Record(fields);
        let rows = batch.num_rows();
        let bytes = batch.get_array_memory_size().max(1);
        let per_block = (BLOCK_BYTES as u128 * rows as u128 / bytes as u128).clamp(64, 1 << 20);
        w.encode_blocks(rows, per_block as usize, |i, out| root.encode(i, out))?;
    }
    w.finish()
}

/// The encoder of `arr` as a value of `w` (optional: a `["null", T]` union).
fn bind<'a>(arr: &'a ArrayRef, w: &Schema, name: &str) -> Result<Enc<'a>> {
    if let Schema::Union(_) = w {
        return match w.as_optional() {
            Some((Some(0), _, inner)) => {
                Ok(Enc::Opt(arr.nulls(), Box::new(value(arr, inner, name)?)))
            }
            _ => Err(Error::validation(format!(
                "field {name}: optional values are written as [\"null\", T], not {w:?}"
            ))),
        };
    }
    Ok(Enc::Req(
        arr.nulls(),
        name.to_owned(),
        Box::new(value(arr, w, name)?),
    ))
}

fn value<'a>(arr: &'a ArrayRef, w: &Schema, name: &str) -> Result<Enc<'a>> {
    let pair =
        |keys: &'a ArrayRef, k: &Schema, vals: &'a ArrayRef, v: &Schema| -> Result<Enc<'a>> {
            Ok(Enc::Record(vec![
                bind(keys, k, &format!("{name}.key"))?,
                bind(vals, v, &format!("{name}.value"))?,
            ]))
        };
    Ok(match (arr.data_type(), w) {
        (DataType::Struct(_), Schema::Record(rec)) => {
            let s = arr.as_struct();
            if s.num_columns() != rec.fields.len() {
                return Err(Error::validation(format!(
                    "struct {name}: {} columns for {} Avro fields",
                    s.num_columns(),
                    rec.fields.len()
                )));
            }
            Enc::Record(
                rec.fields
                    .iter()
                    .zip(s.columns())
                    .map(|(f, c)| bind(c, &f.schema, &format!("{name}.{}", f.name)))
                    .collect::<Result<_>>()?,
            )
        }
        (DataType::List(_), Schema::Array { items, .. }) => {
            let l = arr.as_list::<i32>();
            Enc::Array(l.value_offsets(), Box::new(bind(l.values(), items, name)?))
        }
        (DataType::Map(..), Schema::Map(values)) => {
            let m = arr.as_map();
            let entries = pair(m.keys(), &Schema::String, m.values(), values)?;
            Enc::Array(m.value_offsets(), Box::new(entries))
        }
        (DataType::Map(..), Schema::Array { items, .. }) => {
            let Schema::Record(rec) = &**items else {
                return Err(Error::validation(format!(
                    "map {name}: items are not key/value records"
                )));
            };
            let [k, v] = rec.fields.as_slice() else {
                return Err(Error::validation(format!(
                    "map {name}: items are not key/value records"
                )));
            };
            let m = arr.as_map();
            let entries = pair(m.keys(), &k.schema, m.values(), &v.schema)?;
            Enc::Array(m.value_offsets(), Box::new(entries))
        }
        (DataType::Decimal128(..) | DataType::FixedSizeBinary(_), Schema::Fixed(n)) => {
            Enc::leaf(arr, *n, name)?
        }
        (dt, _) if dt.is_nested() => {
            return Err(Error::validation(format!(
                "field {name}: Arrow type {dt} cannot be written as Avro {w:?}"
            )))
        }
        _ => Enc::leaf(arr, 0, name)?,
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use arrow_array::cast::AsArray;
    use arrow_array::types::Int64Type;
    use arrow_schema::Field;

    use super::*;
    use crate::avro::binary::{put_bytes, put_long};
    use crate::avro::{Codec, ContainerWriter};

    fn with_id(f: Field, id: i32) -> Field {
        f.with_metadata(HashMap::from([("field_id".to_owned(), id.to_string())]))
    }

    /// Rows `i` of `{id: long, m: map<long>}` with `i` pairs `k0..` -> `i * 10 + j` (the last
    /// row's map in a negative-count block, which carries its byte size).
    fn container(rows: i64, codec: Codec) -> Vec<u8> {
        let schema = r#"{"type":"record","name":"r","fields":[
            {"name":"id","type":"long","field-id":1},
            {"name":"skipped","type":["null","string"],"field-id":3},
            {"name":"m","type":{"type":"map","values":"long","key-id":4,"value-id":5},"field-id":2}]}"#;
        let mut w = ContainerWriter::new(schema, &[], codec);
        for i in 0..rows {
            let d = w.datum();
            put_long(d, i);
            put_long(d, 1);
            put_bytes(d, b"ignored");
            let mut pairs = Vec::new();
            for j in 0..i {
                put_bytes(&mut pairs, format!("k{j}").as_bytes());
                put_long(&mut pairs, i * 10 + j);
            }
            if i > 0 && i == rows - 1 {
                put_long(d, -i);
                put_long(d, pairs.len() as i64);
            } else if i > 0 {
                put_long(d, i);
            }
            d.extend_from_slice(&pairs);
            put_long(d, 0);
            w.end_datum().unwrap();
        }
        w.finish().unwrap()
    }

    fn target() -> Fields {
        let entries = Field::new_struct(
            "entries",
            vec![
                with_id(Field::new("key", DataType::Utf8, false), 4),
                with_id(Field::new("value", DataType::Int64, true), 5),
            ],
            false,
        );
        Fields::from(vec![
            with_id(
                Field::new("m", DataType::Map(Arc::new(entries), false), true),
                2,
            ),
            with_id(Field::new("id", DataType::Int64, false), 1),
        ])
    }

    #[test]
    fn maps_and_skipped_fields_decode_in_batches() {
        let data = container(7, Codec::Null);
        let (schema, rows) = header(&data).unwrap();
        assert_eq!(rows, 7);
        assert!(schema.contains("\"key-id\":4"));
        let batches = read(&data, &target(), 3).unwrap();
        let mut id = 0i64;
        for b in &batches {
            let ids = b.column(1).as_primitive::<Int64Type>();
            let maps = b.column(0).as_map();
            for r in 0..b.num_rows() {
                assert_eq!(ids.value(r), id);
                let pairs = maps.value(r);
                let keys = pairs.column(0).as_string::<i32>();
                let values = pairs.column(1).as_primitive::<Int64Type>();
                assert_eq!(pairs.len(), id as usize);
                for j in 0..pairs.len() {
                    assert_eq!(keys.value(j), format!("k{j}"));
                    assert_eq!(values.value(j), id * 10 + j as i64);
                }
                id += 1;
            }
        }
        assert_eq!(id, 7);
        // Batch by batch from block offsets: the same rows.
        let ids_file = {
            let schema = r#"{"type":"record","name":"r","fields":[{"name":"id","type":"long","field-id":1}]}"#;
            let mut w = ContainerWriter::new(schema, &[], Codec::Null);
            let ids: Vec<i64> = (0..5000).collect();
            w.encode_blocks(ids.len(), 64, |i, out| {
                put_long(out, ids[i]);
                Ok(())
            })
            .unwrap();
            w.finish().unwrap()
        };
        let ids_only = Fields::from(vec![with_id(Field::new("id", DataType::Int64, false), 1)]);
        let (mut offset, mut seen, mut batches) = (0usize, 0i64, 0);
        loop {
            let (b, next) = read_from(&ids_file, &ids_only, offset, 1000).unwrap();
            let col = b.column(0).as_primitive::<Int64Type>();
            assert!(col.values().iter().all(|&v| {
                seen += 1;
                v == seen - 1
            }));
            batches += 1;
            match next {
                Some(n) => offset = n,
                None => break,
            }
        }
        assert_eq!((seen, batches), (5000, 5));
        assert!(read_from(&ids_file, &ids_only, 3, 10).is_err());
        // No columns: the row count alone.
        let counted = read(&data, &Fields::empty(), 4).unwrap();
        assert_eq!(counted.iter().map(RecordBatch::num_rows).sum::<usize>(), 7);
    }

    #[test]
    fn written_records_read_back_equal() {
        use arrow_array::builder::{Int64Builder, MapBuilder, StringBuilder};
        use arrow_array::types::Int32Type;
        use arrow_array::{Decimal128Array, Int64Array, ListArray};

        let mut maps = MapBuilder::new(None, StringBuilder::new(), Int64Builder::new());
        for i in 0..300i64 {
            if i % 7 == 0 {
                maps.append(false).unwrap();
                continue;
            }
            for j in 0..i % 3 {
                maps.keys().append_value(format!("k{j}"));
                maps.values().append_option((j != 1).then_some(i + j));
            }
            maps.append(true).unwrap();
        }
        let lists = ListArray::from_iter_primitive::<Int32Type, _, _>(
            (0..300).map(|i| (i % 5 != 0).then(|| (0..i % 4).map(|j| (j != 2).then_some(j)))),
        );
        let dec = Decimal128Array::from_iter(
            (0..300i128).map(|i| (i % 3 != 0).then_some(i * 1_000_003 - 7_000)),
        )
        .with_precision_and_scale(9, 2)
        .unwrap();
        let maps = maps.finish();
        let ids: ArrayRef = Arc::new(Int64Array::from_iter_values(0..300));
        let fields = Fields::from(vec![
            with_id(Field::new("id", DataType::Int64, false), 1),
            with_id(Field::new("m", maps.data_type().clone(), true), 2),
            with_id(Field::new("l", lists.data_type().clone(), true), 6),
            with_id(Field::new("d", dec.data_type().clone(), true), 8),
        ]);
        let batch = RecordBatch::try_new(
            Arc::new(ArrowSchema::new(fields.clone())),
            vec![ids, Arc::new(maps), Arc::new(lists), Arc::new(dec)],
        )
        .unwrap();
        let schema = r#"{"type":"record","name":"table","fields":[
            {"name":"id","type":"long","field-id":1},
            {"name":"m","type":["null",{"type":"map","values":["null","long"],"key-id":3,"value-id":4}],"field-id":2},
            {"name":"l","type":["null",{"type":"array","items":["null","int"],"element-id":7}],"field-id":6},
            {"name":"d","type":["null",{"type":"fixed","name":"decimal_9_2","size":4,"logicalType":"decimal","precision":9,"scale":2}],"field-id":8}]}"#;
        // Two slices of the batch, so sliced offsets and null buffers are written too.
        let parts = [batch.slice(0, 123), batch.slice(123, 177)];
        let data = write(&parts, schema, &[], Codec::Zstandard(1)).unwrap();
        let back = read(&data, &batch.schema().fields().clone(), 1 << 20).unwrap();
        let back = arrow_select::concat::concat_batches(&batch.schema(), &back).unwrap();
        assert_eq!(back, batch);
        // A required column with a null is refused.
        let nulls: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None]));
        let one = RecordBatch::try_from_iter(vec![("id", nulls)]).unwrap();
        let req = r#"{"type":"record","name":"t","fields":[{"name":"id","type":"long"}]}"#;
        assert!(write(&[one], req, &[], Codec::Null).is_err());
    }

    #[test]
    fn damage_is_an_error_not_a_panic() {
        let data = container(40, Codec::from_name("deflate", None).unwrap());
        for cut in [5, data.len() / 2, data.len() - 3] {
            assert!(read(&data[..cut], &target(), 8).is_err());
        }
        for at in (0..data.len()).step_by(7) {
            let mut bad = data.clone();
            bad[at] ^= 0x41;
            let _ = read(&bad, &target(), 8);
            let _ = header(&bad);
        }
    }
}
