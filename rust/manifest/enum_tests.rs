//! Out-of-range enum values (entry `status`, `data_file.content`, manifest-list `content`) in
//! otherwise valid Avro: the readers refuse them as corrupt, the writers never write them. The
//! bad files are re-encoded with the `apache-avro` crate from files icefloe wrote, one value
//! changed, schema and metadata kept.

use std::sync::Arc;

use apache_avro::types::Value;
use apache_avro::{Codec as AvroCodec, Reader, Writer};
use arrow_array::cast::AsArray;
use arrow_array::types::Int32Type;
use arrow_array::{new_null_array, ArrayRef, Int32Array, Int64Array, RecordBatch, StringArray};

use super::layout::{manifest_schema, partition_type};
use super::{
    read_manifest, read_manifest_list, read_manifest_projected, write_manifest,
    write_manifest_list, Inherit, ListOptions, ManifestOptions, Projection,
};
use crate::avro::Codec;
use crate::Error;

const SCHEMA: &str = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"id","required":false,"type":"long"}]}"#;

fn options(version: u8, content: i32) -> ManifestOptions {
    ManifestOptions {
        format_version: version,
        schema_json: SCHEMA.into(),
        schema_id: Some(0),
        spec_json: "[]".into(),
        spec_id: 0,
        content,
        codec: Codec::Deflate(1),
        path: "s3://b/m.avro".into(),
        snapshot_id: Some(7),
    }
}

/// Entries with these statuses and contents (unpartitioned).
fn entries(status: &[i32], content: &[i32]) -> RecordBatch {
    let schema = manifest_schema(&partition_type(&[]));
    let n = status.len();
    let cols: Vec<ArrayRef> = schema
        .fields()
        .iter()
        .map(|f| -> ArrayRef {
            match f.name().as_str() {
                "status" => Arc::new(Int32Array::from(status.to_vec())),
                "snapshot_id" => Arc::new(Int64Array::from(vec![7i64; n])),
                "sequence_number" | "file_sequence_number" => {
                    Arc::new(Int64Array::from(vec![1i64; n]))
                }
                "content" => Arc::new(Int32Array::from(content.to_vec())),
                "file_path" => Arc::new(StringArray::from_iter_values(
                    (0..n).map(|i| format!("s3://b/f{i}.parquet")),
                )),
                "file_format" => Arc::new(StringArray::from(vec!["PARQUET"; n])),
                "partition" => Arc::new(arrow_array::StructArray::new_empty_fields(n, None)),
                "record_count" | "file_size_in_bytes" => Arc::new(Int64Array::from(vec![10i64; n])),
                _ => new_null_array(f.data_type(), n),
            }
        })
        .collect();
    RecordBatch::try_new(Arc::new(schema), cols).unwrap()
}

fn manifest(version: u8, manifest_content: i32, status: &[i32], content: &[i32]) -> Vec<u8> {
    write_manifest(
        &entries(status, content),
        &options(version, manifest_content),
    )
    .unwrap()
    .0
}

fn field_mut<'a>(v: &'a mut Value, name: &str) -> &'a mut Value {
    match v {
        Value::Record(fields) => fields
            .iter_mut()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v)
            .unwrap_or_else(|| panic!("no field {name}")),
        other => panic!("not a record: {other:?}"),
    }
}

/// `bytes` re-encoded by apache-avro with `change` applied to record `row`.
fn reencode(bytes: &[u8], row: usize, change: impl Fn(&mut Value)) -> Vec<u8> {
    let reader = Reader::new(bytes).unwrap();
    let schema = reader.writer_schema().clone();
    let meta = reader.user_metadata().clone();
    let mut recs: Vec<Value> = reader.map(|r| r.unwrap()).collect();
    change(&mut recs[row]);
    let mut w = Writer::with_codec(&schema, Vec::new(), AvroCodec::Deflate(Default::default()));
    for (k, v) in meta {
        w.add_user_metadata(k, v).unwrap();
    }
    for r in recs {
        w.append(r).unwrap();
    }
    w.into_inner().unwrap()
}

fn set_status(v: i32) -> impl Fn(&mut Value) {
    move |r| *field_mut(r, "status") = Value::Int(v)
}

fn set_content(v: i32) -> impl Fn(&mut Value) {
    move |r| *field_mut(field_mut(r, "data_file"), "content") = Value::Int(v)
}

fn corrupt_message(e: Error) -> String {
    match e {
        Error::CorruptFile(m) => m,
        other => panic!("expected a corrupt-file error, got {other:?}"),
    }
}

fn read_err(bytes: &[u8]) -> String {
    let inherit = Inherit {
        snapshot_id: Some(7),
        sequence_number: Some(1),
        first_row_id: None,
    };
    let full = corrupt_message(read_manifest(bytes, &inherit).unwrap_err());
    // a projection that leaves file_path out checks the same
    let projection = Projection {
        columns: Some(vec!["status".into()]),
        stats_ids: None,
    };
    let projected = read_manifest_projected(bytes, &inherit, &projection).unwrap_err();
    corrupt_message(projected);
    full
}

#[test]
fn valid_values_read() {
    for version in [1u8, 2, 3] {
        let b = manifest(version, 0, &[0, 1, 2], &[0, 0, 0]);
        let batch = read_manifest(&b, &Inherit::default()).unwrap();
        let status = batch.column(0).as_primitive::<Int32Type>();
        assert_eq!(status.values().to_vec(), vec![0, 1, 2]);
    }
    for version in [2u8, 3] {
        let b = manifest(version, 1, &[1, 0, 2], &[1, 2, 1]);
        let batch = read_manifest(&b, &Inherit::default()).unwrap();
        let content = batch.column(4).as_primitive::<Int32Type>();
        assert_eq!(content.values().to_vec(), vec![1, 2, 1]);
    }
}

#[test]
fn bad_status_is_corrupt() {
    for version in [1u8, 2, 3] {
        for bad in [3, -1, 54, i32::MIN, i32::MAX] {
            let good = manifest(version, 0, &[1, 0, 1], &[0, 0, 0]);
            let m = read_err(&reencode(&good, 1, set_status(bad)));
            assert!(
                m.contains(&format!("entry 1 (s3://b/f1.parquet) has status {bad}")),
                "{m}"
            );
        }
    }
    for bad in [3, -1] {
        let good = manifest(2, 1, &[1, 1], &[1, 2]);
        let m = read_err(&reencode(&good, 0, set_status(bad)));
        assert!(m.contains(&format!("has status {bad}")), "{m}");
    }
}

#[test]
fn bad_file_content_is_corrupt() {
    for version in [2u8, 3] {
        // out of range in a data and in a delete manifest
        for bad in [5, 3, -1, -23, 54] {
            let good = manifest(version, 0, &[1, 1], &[0, 0]);
            let m = read_err(&reencode(&good, 1, set_content(bad)));
            assert!(
                m.contains(&format!("entry 1 (s3://b/f1.parquet) has content {bad};")),
                "{m}"
            );
            let good = manifest(version, 1, &[1, 1], &[1, 1]);
            let m = read_err(&reencode(&good, 0, set_content(bad)));
            assert!(m.contains(&format!("has content {bad};")), "{m}");
        }
        // delete files in a data manifest, data files in a delete manifest
        for bad in [1, 2] {
            let good = manifest(version, 0, &[1, 1], &[0, 0]);
            let m = read_err(&reencode(&good, 0, set_content(bad)));
            assert!(m.contains(&format!("has content {bad} (")), "{m}");
            assert!(m.contains("in a data manifest"), "{m}");
        }
        let good = manifest(version, 1, &[1, 1], &[2, 2]);
        let m = read_err(&reencode(&good, 1, set_content(0)));
        assert!(
            m.contains("has content 0 (data) in a delete manifest"),
            "{m}"
        );
    }
}

#[test]
fn manifests_without_content_metadata_take_any_file_content() {
    let good = manifest(2, 0, &[1, 1], &[0, 0]);
    let reader = Reader::new(&good[..]).unwrap();
    let schema = reader.writer_schema().clone();
    let meta = reader.user_metadata().clone();
    let mut recs: Vec<Value> = reader.map(|r| r.unwrap()).collect();
    set_content(2)(&mut recs[1]);
    let mut w = Writer::with_codec(&schema, Vec::new(), AvroCodec::Null);
    for (k, v) in meta.into_iter().filter(|(k, _)| k != "content") {
        w.add_user_metadata(k, v).unwrap();
    }
    for r in recs {
        w.append(r).unwrap();
    }
    let bytes = w.into_inner().unwrap();
    let batch = read_manifest(&bytes, &Inherit::default()).unwrap();
    let content = batch.column(4).as_primitive::<Int32Type>();
    assert_eq!(content.values().to_vec(), vec![0, 2]);
    // still range-checked
    let m = read_err(&reencode(&bytes, 0, set_content(3)));
    assert!(m.contains("has content 3;"), "{m}");
}

fn list(version: u8, contents: &[i32]) -> Vec<u8> {
    let rows: Vec<RecordBatch> = contents
        .iter()
        .enumerate()
        .map(|(i, &c)| {
            let mut o = options(version, c);
            o.path = format!("s3://b/m{i}.avro");
            write_manifest(&entries(&[], &[]), &o).unwrap().1
        })
        .collect();
    let batch = arrow_select::concat::concat_batches(&rows[0].schema(), &rows).unwrap();
    let opts = ListOptions {
        format_version: version,
        snapshot_id: 7,
        parent_snapshot_id: None,
        sequence_number: 1,
        first_row_id: (version == 3).then_some(0),
        codec: Codec::Deflate(1),
    };
    write_manifest_list(&batch, &opts).unwrap().0
}

#[test]
fn bad_list_content_is_corrupt() {
    for version in [2u8, 3] {
        let good = list(version, &[0, 1, 0]);
        let back = read_manifest_list(&good).unwrap();
        let content = back.column(3).as_primitive::<Int32Type>();
        assert_eq!(content.values().to_vec(), vec![0, 1, 0]);
        for bad in [2, -1, -23, 54, 5] {
            let bytes = reencode(&good, 2, |r| *field_mut(r, "content") = Value::Int(bad));
            let m = corrupt_message(read_manifest_list(&bytes).unwrap_err());
            assert!(
                m.contains(&format!(
                    "manifest_file 2 (s3://b/m2.avro) has content {bad};"
                )),
                "{m}"
            );
        }
    }
}

#[test]
fn writers_refuse_bad_values() {
    let err = |r: crate::Result<(Vec<u8>, RecordBatch)>| match r.unwrap_err() {
        Error::Validation(m) => m,
        other => panic!("expected a validation error, got {other:?}"),
    };
    for bad in [3, -1] {
        let m = err(write_manifest(&entries(&[1, bad], &[0, 0]), &options(2, 0)));
        assert!(m.contains(&format!("status {bad}")), "{m}");
    }
    for (manifest_content, bad) in [(0, 1), (0, 2), (0, 5), (1, 0), (1, 3), (1, -1)] {
        let m = err(write_manifest(
            &entries(&[1, 1], &[manifest_content.max(0), bad]),
            &options(2, manifest_content),
        ));
        assert!(m.contains(&format!("content {bad}")), "{m}");
    }
    for bad in [2, -1] {
        let m = err(write_manifest(&entries(&[], &[]), &options(2, bad)));
        assert!(m.contains(&format!("content {bad}")), "{m}");
    }
    // a v1 manifest holds no delete files (it has no content field to say so)
    let m = err(write_manifest(&entries(&[1], &[1]), &options(1, 0)));
    assert!(m.contains("content 1"), "{m}");
    // manifest list rows
    let row = write_manifest(&entries(&[], &[]), &options(2, 0))
        .unwrap()
        .1;
    let mut cols = row.columns().to_vec();
    cols[3] = Arc::new(Int32Array::from(vec![2]));
    let bad = RecordBatch::try_new(row.schema(), cols).unwrap();
    let opts = ListOptions {
        format_version: 2,
        snapshot_id: 7,
        parent_snapshot_id: None,
        sequence_number: 1,
        first_row_id: None,
        codec: Codec::Deflate(1),
    };
    match write_manifest_list(&bad, &opts).unwrap_err() {
        Error::Validation(m) => assert!(m.contains("content 2"), "{m}"),
        other => panic!("expected a validation error, got {other:?}"),
    }
}
