use std::sync::Arc;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Int32Array, Int64Array, StringArray, StructArray,
};
use arrow_schema::Field;

use super::*;

struct Del<'a> {
    content: i32,
    path: &'a str,
    seq: i64,
    spec: i32,
    key: &'a [u8],
    unpartitioned: bool,
    is_dv: bool,
    referenced: Option<&'a str>,
}

fn pos(path: &'static str, seq: i64, key: &'static [u8]) -> Del<'static> {
    Del {
        content: 1,
        path,
        seq,
        spec: 0,
        key,
        unpartitioned: false,
        is_dv: false,
        referenced: None,
    }
}

fn struct_of(cols: Vec<(&str, ArrayRef)>) -> StructArray {
    let fields: Vec<(Arc<Field>, ArrayRef)> = cols
        .into_iter()
        .map(|(n, a)| (Arc::new(Field::new(n, a.data_type().clone(), true)), a))
        .collect();
    StructArray::from(fields)
}

fn deletes(d: &[Del<'_>]) -> StructArray {
    struct_of(vec![
        (
            "content",
            Arc::new(Int32Array::from_iter_values(d.iter().map(|x| x.content))),
        ),
        (
            "file_path",
            Arc::new(StringArray::from_iter_values(d.iter().map(|x| x.path))),
        ),
        (
            "sequence_number",
            Arc::new(Int64Array::from_iter_values(d.iter().map(|x| x.seq))),
        ),
        (
            "spec_id",
            Arc::new(Int32Array::from_iter_values(d.iter().map(|x| x.spec))),
        ),
        (
            "partition_key",
            Arc::new(BinaryArray::from_iter_values(d.iter().map(|x| x.key))),
        ),
        (
            "unpartitioned",
            Arc::new(BooleanArray::from_iter(
                d.iter().map(|x| Some(x.unpartitioned)),
            )),
        ),
        (
            "is_dv",
            Arc::new(BooleanArray::from_iter(d.iter().map(|x| Some(x.is_dv)))),
        ),
        (
            "referenced_data_file",
            Arc::new(StringArray::from_iter(d.iter().map(|x| x.referenced))),
        ),
    ])
}

fn data(files: &[(&str, i64, i32, &[u8])]) -> StructArray {
    struct_of(vec![
        (
            "file_path",
            Arc::new(StringArray::from_iter_values(files.iter().map(|x| x.0))),
        ),
        (
            "sequence_number",
            Arc::new(Int64Array::from_iter_values(files.iter().map(|x| x.1))),
        ),
        (
            "spec_id",
            Arc::new(Int32Array::from_iter_values(files.iter().map(|x| x.2))),
        ),
        (
            "partition_key",
            Arc::new(BinaryArray::from_iter_values(files.iter().map(|x| x.3))),
        ),
    ])
}

fn matches(d: &[Del<'_>], files: &[(&str, i64, i32, &[u8])]) -> Vec<Vec<u32>> {
    let dels = deletes(d);
    let ix = DeleteIndex::new(&dels).unwrap();
    let (off, idx) = ix.match_all(&data(files)).unwrap();
    off.windows(2)
        .map(|w| idx[w[0] as usize..w[1] as usize].to_vec())
        .collect()
}

#[test]
fn position_deletes_by_partition_and_sequence() {
    let d = [pos("p1", 3, b"a"), pos("p2", 5, b"b")];
    let got = matches(
        &d,
        &[
            ("f1", 3, 0, b"a"),
            ("f2", 4, 0, b"a"),
            ("f3", 1, 0, b"b"),
            ("f4", 1, 1, b"b"),
        ],
    );
    // equal sequence numbers: a position delete applies; other spec: never
    assert_eq!(got, vec![vec![0], vec![], vec![1], vec![]]);
}

#[test]
fn equality_deletes_strictly_older_and_global() {
    let mut eq = pos("e1", 3, b"a");
    eq.content = 2;
    let mut global = pos("g", 4, b"");
    global.content = 2;
    global.unpartitioned = true;
    global.spec = 1;
    let got = matches(
        &[eq, global],
        &[("f1", 3, 0, b"a"), ("f2", 2, 0, b"a"), ("f3", 2, 0, b"z")],
    );
    assert_eq!(got, vec![vec![1], vec![0, 1], vec![1]]);
}

#[test]
fn deletion_vector_replaces_position_deletes() {
    let mut dv = pos("dv.puffin", 4, b"a");
    dv.is_dv = true;
    dv.referenced = Some("f1");
    let got = matches(
        &[pos("p", 4, b"a"), dv],
        &[("f1", 4, 0, b"a"), ("f2", 4, 0, b"a"), ("f1x", 5, 0, b"a")],
    );
    assert_eq!(got, vec![vec![1], vec![0], vec![]]);
    // a DV older than the data file does not apply; position deletes then do
    let mut old = pos("dv.puffin", 2, b"a");
    old.is_dv = true;
    old.referenced = Some("f1");
    let got = matches(&[pos("p", 4, b"a"), old], &[("f1", 3, 0, b"a")]);
    assert_eq!(got, vec![vec![0]]);
}

#[test]
fn two_dvs_for_one_file_and_duplicate_data_paths_are_errors() {
    let mut a = pos("a.puffin", 4, b"");
    a.is_dv = true;
    a.referenced = Some("f1");
    let mut b = pos("b.puffin", 5, b"");
    b.is_dv = true;
    b.referenced = Some("f1");
    let dels = deletes(&[a, b]);
    let err = DeleteIndex::new(&dels).err().unwrap();
    assert!(
        err.message()
            .contains("two deletion vectors for data file f1"),
        "{err:?}"
    );
    let dels = deletes(&[]);
    let ix = DeleteIndex::new(&dels).unwrap();
    let err = ix
        .match_all(&data(&[("f", 1, 0, b""), ("f", 2, 0, b"")]))
        .unwrap_err();
    assert!(err.message().contains("f is listed twice"), "{err:?}");
}

#[test]
fn spellings_of_one_file_are_one_path() {
    use super::same_file_key as k;
    for (a, b) in [
        ("/w/x.parquet", "file:///w/x.parquet"),
        ("/w/x.parquet", "file:/w/x.parquet"),
        ("/w/x.parquet", "FILE://localhost/w/x.parquet"),
        ("/w/x.parquet", "/w//x.parquet"),
        ("file:/w//x.parquet", "/w/x.parquet"),
        ("s3://b/x", "s3a://b/x"),
        ("s3://b/x", "S3N://b/x"),
        ("s3://b/x", "S3://b/x"),
    ] {
        assert_eq!(k(a), k(b), "{a} {b}");
    }
    for (a, b) in [
        ("s3://b/x", "s3://c/x"),
        ("s3://b/x", "gs://b/x"),
        ("/w/x", "/w/y"),
        // object store keys keep their slashes: two objects
        ("s3://b/a//x", "s3://b/a/x"),
        ("gs://b/a//x", "gs://b/a/x"),
        // a file: URI without a path names no file: never equal to another
        ("file://h1", "file://h2"),
    ] {
        assert_ne!(k(a), k(b), "{a} {b}");
    }
    assert!(matches!(
        k("file:///w/x"),
        std::borrow::Cow::Borrowed("/w/x")
    ));
    assert!(matches!(k("s3://b/x/y"), std::borrow::Cow::Borrowed(_)));
    for (a, b) in [("f", "file:f"), ("/a/f", "file:///a/f")] {
        let dels = deletes(&[]);
        let ix = DeleteIndex::new(&dels).unwrap();
        let err = ix
            .match_all(&data(&[(a, 1, 0, b""), (b, 2, 0, b"")]))
            .unwrap_err();
        assert!(err.message().contains("is listed twice"), "{err:?}");
        let col: ArrayRef = Arc::new(StringArray::from(vec![a, "other", b]));
        let err = super::check_unique_paths(&[col]).unwrap_err();
        assert!(err.message().contains("is listed twice"), "{err:?}");
    }
}

#[test]
fn partition_keys_distinguish_null_and_values() {
    let s = struct_of(vec![
        (
            "a",
            Arc::new(Int32Array::from(vec![Some(1), None, Some(1), Some(0)])) as ArrayRef,
        ),
        (
            "b",
            Arc::new(StringArray::from(vec![
                Some("x"),
                Some("x"),
                Some("x"),
                None,
            ])) as ArrayRef,
        ),
    ]);
    let k = partition_keys(&s).unwrap();
    assert_eq!(k.value(0), k.value(2));
    assert_ne!(k.value(0), k.value(1));
    assert_ne!(k.value(1), k.value(3));
}
