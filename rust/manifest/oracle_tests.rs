//! Cross-checks against the `apache-avro` crate as an independent oracle: files it writes with
//! Java's schemas decode correctly, and files icefloe writes read back in it with the same values.

use std::path::PathBuf;

use apache_avro::types::{Record as AvroRecord, Value};
use apache_avro::{Codec as AvroCodec, Reader, Schema as AvroSchema, Writer};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_array::Array;

use super::{read_manifest_list, write_manifest_list, ListOptions};
use crate::avro::Codec;

fn testdata(rel: &str) -> Option<PathBuf> {
    let root = PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    [
        root.join("../shared/testdata").join(rel),
        PathBuf::from("/work/shared/testdata").join(rel),
    ]
    .into_iter()
    .find(|p| p.exists())
}

fn field<'a>(v: &'a Value, name: &str) -> &'a Value {
    match v {
        Value::Record(fields) => fields
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no field {name}")),
        other => panic!("not a record: {other:?}"),
    }
}

fn unwrap_union(v: &Value) -> &Value {
    match v {
        Value::Union(_, inner) => inner,
        other => other,
    }
}

#[test]
fn apache_avro_written_java_schema_lists_decode() {
    let Some(path) = testdata("iceberg-rust/avro_schema_manifest_file_v2.json") else {
        return; // shared test data not present
    };
    let schema = AvroSchema::parse_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let mut w = Writer::with_codec(&schema, Vec::new(), AvroCodec::Deflate(Default::default()));
    w.add_user_metadata("format-version".into(), "2").unwrap();
    for i in 0..300i64 {
        let mut r = AvroRecord::new(&schema).unwrap();
        r.put("manifest_path", format!("s3://b/m{i}.avro"));
        r.put("manifest_length", 1000 + i);
        r.put("partition_spec_id", (i % 3) as i32);
        r.put("content", (i % 2) as i32);
        r.put("sequence_number", Value::Union(1, Box::new(Value::Long(i))));
        r.put(
            "min_sequence_number",
            Value::Union(0, Box::new(Value::Null)),
        );
        r.put("added_snapshot_id", 77i64);
        r.put("added_files_count", 1i32);
        r.put("existing_files_count", 2i32);
        r.put("deleted_files_count", 3i32);
        r.put("added_rows_count", 10i64 * i);
        r.put("existing_rows_count", 0i64);
        r.put("deleted_rows_count", 0i64);
        r.put("partitions", Value::Union(0, Box::new(Value::Null)));
        w.append(r).unwrap();
    }
    let bytes = w.into_inner().unwrap();
    let b = read_manifest_list(&bytes).unwrap();
    assert_eq!(b.num_rows(), 300);
    let path = b
        .column_by_name("manifest_path")
        .unwrap()
        .as_string::<i32>();
    let seq = b
        .column_by_name("sequence_number")
        .unwrap()
        .as_primitive::<Int64Type>();
    let minseq = b.column_by_name("min_sequence_number").unwrap();
    let content = b
        .column_by_name("content")
        .unwrap()
        .as_primitive::<Int32Type>();
    let rows = b
        .column_by_name("added_rows_count")
        .unwrap()
        .as_primitive::<Int64Type>();
    for i in 0..300usize {
        assert_eq!(path.value(i), format!("s3://b/m{i}.avro"));
        assert_eq!(seq.value(i), i as i64);
        assert_eq!(content.value(i), (i % 2) as i32);
        assert_eq!(rows.value(i), 10 * i as i64);
    }
    // A null min_sequence_number gets the spec default of 0.
    assert_eq!(minseq.null_count(), 0);
}

#[test]
fn icefloe_written_lists_read_in_apache_avro() {
    let Some(path) = testdata("iceberg-rust/manifest_lists/manifest-list-v2-1.avro") else {
        return;
    };
    let java = std::fs::read(path).unwrap();
    let batch = read_manifest_list(&java).unwrap();
    for version in [1u8, 2, 3] {
        let (bytes, _) = write_manifest_list(
            &batch,
            &ListOptions {
                format_version: version,
                snapshot_id: 5,
                parent_snapshot_id: None,
                sequence_number: 1,
                first_row_id: Some(0),
                codec: Codec::Deflate(6),
            },
        )
        .unwrap();
        let reader = Reader::new(&bytes[..]).unwrap();
        let md = reader.user_metadata().clone();
        assert_eq!(md["format-version"], version.to_string().into_bytes());
        assert_eq!(md["parent-snapshot-id"], b"null".to_vec());
        let recs: Vec<Value> = reader.map(|r| r.unwrap()).collect();
        assert_eq!(recs.len(), 1);
        let r = &recs[0];
        assert_eq!(
            unwrap_union(field(r, "manifest_path")),
            &Value::String(
                "iceberg-warehouse/people/metadata/794bd2ee-052c-449c-9a6f-3a88857c747f-m0.avro"
                    .into()
            )
        );
        assert_eq!(field(r, "manifest_length"), &Value::Long(6658));
        assert_eq!(
            unwrap_union(field(r, "added_snapshot_id")),
            &Value::Long(6653143792592159268)
        );
        assert_eq!(unwrap_union(field(r, "added_files_count")), &Value::Int(1));
        if version == 3 {
            assert_eq!(unwrap_union(field(r, "first_row_id")), &Value::Long(0));
        }
        // And icefloe reads its own file back to the same batch (v2: identical values).
        let back = read_manifest_list(&bytes).unwrap();
        if version == 2 {
            assert_eq!(back.columns(), batch.columns());
        }
    }
}
