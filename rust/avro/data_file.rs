//! Avro data and delete files (Iceberg's Avro file format): the header's schema and row count,
//! and the records decoded into Arrow record batches of a target schema whose fields carry
//! Iceberg field ids (see [`super::to_arrow`]). Writer fields the target does not name are
//! skipped in the bytes; target fields the writer lacks come back null.

use std::sync::Arc;

use arrow_array::{Array, RecordBatch, RecordBatchOptions, StructArray};
use arrow_schema::{DataType, Fields, Schema as ArrowSchema};

use super::binary::Reader;
use super::to_arrow::Decoder;
use super::Container;
use crate::{Error, Result};

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

/// Every record of the container `data` decoded into batches of the top-level `fields`, a
/// batch ending at the first block boundary at or after `batch_rows` rows.
pub fn read(data: &[u8], fields: &Fields, batch_rows: usize) -> Result<Vec<RecordBatch>> {
    let mut c = Container::open(data)?;
    let target = DataType::Struct(fields.clone());
    let schema = Arc::new(ArrowSchema::new(fields.clone()));
    let mut out = Vec::new();
    let mut dec = Decoder::new(&c.schema, &target)?;
    let mut rows = 0usize;
    let mut total = 0u64;
    while let Some((count, block)) = c.next_block()? {
        let mut r = Reader::new(block);
        dec.decode_many(&mut r, count)?;
        if r.remaining() != 0 {
            return Err(Error::corrupt(format!(
                "block of {count} records has {} trailing bytes",
                r.remaining()
            )));
        }
        rows += count;
        total += count as u64;
        if rows >= batch_rows.max(1) {
            let next = Decoder::new(&c.schema, &target)?;
            out.push(batch(std::mem::replace(&mut dec, next), &schema, rows)?);
            rows = 0;
        }
    }
    if rows > 0 || out.is_empty() {
        out.push(batch(dec, &schema, rows)?);
    }
    let decoded: u64 = out.iter().map(|b| b.num_rows() as u64).sum();
    if decoded != total {
        return Err(Error::corrupt(format!(
            "decoded {decoded} records of the {total} the blocks hold"
        )));
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
        // No columns: the row count alone.
        let counted = read(&data, &Fields::empty(), 4).unwrap();
        assert_eq!(counted.iter().map(RecordBatch::num_rows).sum::<usize>(), 7);
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
