//! Tests of the native reader of small files: projections, deletes, selections, damage.

use super::*;
use arrow_array::{Array, StringArray, TimestampMicrosecondArray};
use arrow_schema::TimeUnit;
use parquet::arrow::ArrowWriter;
use parquet::file::properties::WriterProperties;

use super::id_field as field;

fn file_schema() -> SchemaRef {
    Arc::new(Schema::new(vec![
        field("id", DataType::Int64, 1),
        field("name", DataType::Utf8, 2),
        field(
            "ts",
            DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            3,
        ),
    ]))
}

fn write(dir: &std::path::Path, name: &str, rows: i64, digest: Option<&str>) -> String {
    let schema = file_schema();
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..rows)),
            Arc::new(StringArray::from_iter_values(
                (0..rows).map(|i| format!("n{i}")),
            )),
            Arc::new(TimestampMicrosecondArray::from_iter_values(0..rows).with_timezone("UTC")),
        ],
    )
    .unwrap();
    let mut props = WriterProperties::builder().set_max_row_group_row_count(Some(1000));
    if let Some(d) = digest {
        props = props.set_key_value_metadata(Some(vec![parquet::file::metadata::KeyValue::new(
            FIELD_IDS_DIGEST_KEY.to_string(),
            d.to_string(),
        )]));
    }
    let path = dir.join(name);
    let f = File::create(&path).unwrap();
    let mut w = ArrowWriter::try_new(f, schema, Some(props.build())).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    path.to_string_lossy().into_owned()
}

fn projection(ids: &[i32], fields: Vec<Field>) -> Projection {
    Projection {
        field_ids: ids.to_vec(),
        optional: Vec::new(),
        positions: false,
        schema: Arc::new(Schema::new(fields)),
        batch_size: 1024,
        selection: None,
    }
}

fn tempdir(tag: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("icefloe-pr-{tag}-{}", std::process::id()));
    std::fs::create_dir_all(&d).unwrap();
    d
}

#[test]
fn reads_projected_columns_in_requested_order() {
    let dir = tempdir("order");
    let digest = field_ids_digest(&file_schema());
    let path = write(&dir, "a.parquet", 2500, Some(&digest));
    let p = projection(
        &[3, 1],
        vec![
            Field::new(
                "t",
                DataType::Timestamp(TimeUnit::Microsecond, Some("+00:00".into())),
                true,
            ),
            Field::new("i", DataType::Int64, true),
        ],
    );
    let req = FileRequest { path, rows: 2500 };
    let out = read_files(&[req], &[Deletes::default()], &p, Some(1)).unwrap();
    let batches = out[0].as_ref().expect("read natively");
    assert_eq!(batches.iter().map(|b| b.num_rows()).sum::<usize>(), 2500);
    let ids = batches[0]
        .column(1)
        .as_any()
        .downcast_ref::<Int64Array>()
        .unwrap();
    assert_eq!(ids.value(7), 7);
    assert_eq!(batches[0].schema(), p.schema);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn deleted_positions_are_dropped_across_batches() {
    let dir = tempdir("deleted");
    let path = write(&dir, "a.parquet", 3000, None);
    let p = projection(&[1], vec![Field::new("i", DataType::Int64, true)]);
    let bitmap = PositionBitmap::from_positions([0u64, 999, 1000, 1024, 2999]).unwrap();
    let req = FileRequest { path, rows: 3000 };
    let out = read_files(&[req], &[Some(&bitmap).into()], &p, Some(1)).unwrap();
    let got: Vec<i64> = out[0]
        .as_ref()
        .unwrap()
        .iter()
        .flat_map(|b| {
            let a = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            a.values().to_vec()
        })
        .collect();
    let want: Vec<i64> = (0..3000)
        .filter(|i| ![0, 999, 1000, 1024, 2999].contains(i))
        .collect();
    assert_eq!(got, want);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn files_that_do_not_fit_are_left_to_the_general_reader() {
    let dir = tempdir("fallback");
    let good = field_ids_digest(&file_schema());
    let path = write(&dir, "a.parquet", 100, Some(&good));
    let bad_digest = write(&dir, "b.parquet", 100, Some("00000000"));
    let int64 = |id| projection(&[id], vec![Field::new("x", DataType::Int64, true)]);
    let req = |p: &str, rows| FileRequest {
        path: p.to_string(),
        rows,
    };
    // missing column, other type, wrong row count, digest mismatch, missing file
    assert!(
        read_files(&[req(&path, 100)], &[Deletes::default()], &int64(9), None).unwrap()[0]
            .is_none()
    );
    assert!(
        read_files(&[req(&path, 100)], &[Deletes::default()], &int64(2), None).unwrap()[0]
            .is_none()
    );
    assert!(
        read_files(&[req(&path, 99)], &[Deletes::default()], &int64(1), None).unwrap()[0].is_none()
    );
    assert!(read_files(
        &[req(&bad_digest, 100)],
        &[Deletes::default()],
        &int64(1),
        None
    )
    .unwrap()[0]
        .is_none());
    let gone = dir.join("missing.parquet").to_string_lossy().into_owned();
    assert!(
        read_files(&[req(&gone, 100)], &[Deletes::default()], &int64(1), None).unwrap()[0]
            .is_none()
    );
    assert!(
        read_files(&[req(&path, 100)], &[Deletes::default()], &int64(1), None).unwrap()[0]
            .is_some()
    );
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn null_columns_are_shared_slices_of_each_type() {
    let a = null_column(&DataType::Int64, 100);
    let b = null_column(&DataType::Int64, 40);
    let c = null_column(&DataType::Utf8, 40);
    let d = null_column(&DataType::Int64, 300);
    for (col, rows, dt) in [
        (&a, 100, DataType::Int64),
        (&b, 40, DataType::Int64),
        (&c, 40, DataType::Utf8),
        (&d, 300, DataType::Int64),
    ] {
        assert_eq!(
            (col.len(), col.null_count(), col.data_type()),
            (rows, rows, &dt)
        );
    }
    // the shorter int64 column is a slice of the first one's buffers
    assert_eq!(
        a.to_data().buffers()[0].as_ptr(),
        b.to_data().buffers()[0].as_ptr()
    );
    // a longer one replaces it for the next batches
    let e = null_column(&DataType::Int64, 200);
    assert_eq!(
        d.to_data().buffers()[0].as_ptr(),
        e.to_data().buffers()[0].as_ptr()
    );
    assert_eq!(
        null_column(&DataType::Int64, SHARED_NULL_ROWS + 1).null_count(),
        SHARED_NULL_ROWS + 1
    );
}

#[test]
fn optional_columns_read_as_nulls_and_positions_survive_deletes() {
    let dir = tempdir("optional");
    let path = write(&dir, "a.parquet", 2100, None);
    let p = Projection {
        field_ids: vec![1, 77],
        optional: vec![false, true],
        positions: true,
        schema: Arc::new(Schema::new(vec![
            Field::new("i", DataType::Int64, true),
            Field::new("absent", DataType::Utf8, true),
            Field::new("_pos", DataType::Int64, false),
        ])),
        batch_size: 1000,
        selection: None,
    };
    let bitmap = PositionBitmap::from_positions([3u64, 1000, 2099]).unwrap();
    let req = FileRequest { path, rows: 2100 };
    let out = read_files(
        std::slice::from_ref(&req),
        &[Some(&bitmap).into()],
        &p,
        Some(1),
    )
    .unwrap();
    let batches = out[0].as_ref().expect("read natively");
    let mut ids = Vec::new();
    let mut pos = Vec::new();
    for b in batches {
        assert_eq!(b.column(1).null_count(), b.num_rows());
        let i = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
        let q = b.column(2).as_any().downcast_ref::<Int64Array>().unwrap();
        ids.extend_from_slice(i.values());
        pos.extend_from_slice(q.values());
    }
    assert_eq!(ids, pos);
    assert_eq!(pos.len(), 2097);
    assert!(!pos.contains(&1000) && pos.contains(&1001) && pos[2096] == 2098);
    // a required column the file lacks still sends the file to the general reader
    let strict = Projection {
        optional: vec![false, false],
        ..p.clone()
    };
    assert!(read_files(
        std::slice::from_ref(&req),
        &[Deletes::default()],
        &strict,
        None
    )
    .unwrap()[0]
        .is_none());
    // a schema without room for the positions is refused
    let bad = Projection {
        positions: false,
        ..p
    };
    assert!(read_files(&[req], &[Deletes::default()], &bad, None).is_err());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_selection_gives_the_positions_of_the_live_rows_it_selects() {
    let dir = tempdir("selection");
    let path = write(&dir, "a.parquet", 2100, None);
    let fields = vec![
        Field::new("s", DataType::Utf8, true),
        Field::new("_pos", DataType::Int64, false),
    ];
    // rows 99, 199, 990..=999 and 1990..=1999 (names starting "n99" or "n199"), over
    // three batches
    let text = r#"{"type": "or",
        "left": {"type": "starts-with", "term": {"id": 2, "path": ["s"], "type": "string"}, "value": "n99"},
        "right": {"type": "starts-with", "term": {"id": 2, "path": ["s"], "type": "string"}, "value": "n199"}}"#;
    let filter = RowFilter::compile(&crate::expr::parse(text).unwrap(), &[2], &[DataType::Utf8]);
    let p = Projection {
        positions: true,
        selection: Some(Selection::Filter(Arc::new(filter.unwrap()))),
        ..projection(&[2], fields)
    };
    let bitmap = PositionBitmap::from_positions([3u64, 995, 1990]).unwrap();
    let req = FileRequest { path, rows: 2100 };
    let out = read_files(&[req], &[Some(&bitmap).into()], &p, Some(1)).unwrap();
    let batches = out[0].as_ref().expect("read natively");
    let pos: Vec<i64> = batches
        .iter()
        .flat_map(|b| {
            assert_eq!(b.num_columns(), 1);
            let q = b.column(0).as_any().downcast_ref::<Int64Array>().unwrap();
            q.values().to_vec()
        })
        .collect();
    let want: Vec<i64> = (99..100)
        .chain(199..200)
        .chain(990..1000)
        .chain(1990..2000)
        .filter(|i| ![995, 1990].contains(i))
        .collect();
    assert_eq!(pos, want);
    // a selection without positions is refused
    let bad = Projection {
        positions: false,
        schema: Arc::new(Schema::new(vec![Field::new("s", DataType::Utf8, true)])),
        ..p
    };
    let req = FileRequest {
        path: dir.join("a.parquet").to_string_lossy().into_owned(),
        rows: 2100,
    };
    assert!(read_files(&[req], &[Deletes::default()], &bad, None).is_err());
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_key_selection_gives_the_live_rows_whose_key_is_in_the_set() {
    let dir = tempdir("keys");
    let path = write(&dir, "a.parquet", 3000, None);
    let fields = vec![
        Field::new("i", DataType::Int64, true),
        Field::new("s", DataType::Utf8, true),
        Field::new("_pos", DataType::Int64, false),
    ];
    let mut set = EqualityDeleteSet::new();
    let keys = RecordBatch::try_from_iter([(
        "id",
        Arc::new(Int64Array::from(vec![5, 999, 1000, 1500, 2999, 7000])) as ArrayRef,
    )])
    .unwrap();
    set.add_batch(&keys).unwrap();
    let names = Arc::new(Schema::new(vec![Field::new("id", DataType::Int64, true)]));
    let p = Projection {
        positions: true,
        selection: Some(Selection::Keys {
            set: Arc::new(set),
            names,
        }),
        ..projection(&[1, 2], fields)
    };
    let bitmap = PositionBitmap::from_positions([4u64, 1500]).unwrap();
    let req = FileRequest { path, rows: 3000 };
    let out = read_files(&[req], &[Some(&bitmap).into()], &p, Some(1)).unwrap();
    let batches = out[0].as_ref().expect("read natively");
    let column = |k: usize| -> Vec<i64> {
        batches
            .iter()
            .flat_map(|b| {
                let a = b.column(k).as_any().downcast_ref::<Int64Array>().unwrap();
                a.values().to_vec()
            })
            .collect()
    };
    assert_eq!(column(0), [5, 999, 1000, 2999]);
    assert_eq!(column(2), [5, 999, 1000, 2999]);
    let names: Vec<String> = batches
        .iter()
        .flat_map(|b| {
            let a = b.column(1).as_any().downcast_ref::<StringArray>().unwrap();
            a.iter().map(|v| v.unwrap().to_owned()).collect::<Vec<_>>()
        })
        .collect();
    assert_eq!(names, ["n5", "n999", "n1000", "n2999"]);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn equality_deletes_are_matched_by_field_id_with_positions() {
    let dir = tempdir("equality");
    let path = write(&dir, "a.parquet", 3000, None);
    let p = projection(
        &[2, 1],
        vec![
            Field::new("s", DataType::Utf8, true),
            Field::new("i", DataType::Int64, true),
        ],
    );
    let mut set = EqualityDeleteSet::new();
    let keys = RecordBatch::try_from_iter([(
        "1",
        Arc::new(Int64Array::from(vec![5, 1500, 2999, 7000])) as ArrayRef,
    )])
    .unwrap();
    set.add_batch(&keys).unwrap();
    let bitmap = PositionBitmap::from_positions([4u64, 5, 6]).unwrap();
    let both = Deletes {
        positions: Some(&bitmap),
        equality: Some(&set),
    };
    let req = FileRequest { path, rows: 3000 };
    let out = read_files(std::slice::from_ref(&req), &[both], &p, Some(1)).unwrap();
    let ids: Vec<i64> = out[0]
        .as_ref()
        .expect("read natively")
        .iter()
        .flat_map(|b| {
            let a = b.column(1).as_any().downcast_ref::<Int64Array>().unwrap();
            a.values().to_vec()
        })
        .collect();
    let want: Vec<i64> = (0..3000)
        .filter(|i| ![4, 5, 6, 1500, 2999].contains(i))
        .collect();
    assert_eq!(ids, want);
    // a set on a column the projection lacks: left to the general reader
    let mut other = EqualityDeleteSet::new();
    let keys = RecordBatch::try_from_iter([("3", Arc::new(Int64Array::from(vec![1])) as ArrayRef)])
        .unwrap();
    other.add_batch(&keys).unwrap();
    let lacking = Deletes {
        positions: None,
        equality: Some(&other),
    };
    assert!(read_files(&[req], &[lacking], &p, None).unwrap()[0].is_none());
    std::fs::remove_dir_all(dir).ok();
}

/// A file of `rows` rows in row groups of 700: `id`; `cat`, seven strings with nulls (a small
/// dictionary); `big`, distinct strings whose dictionary outgrows a 2 KiB limit (plain pages
/// after the first); `bin`, three binaries (a small dictionary).
fn write_dictionaries(dir: &std::path::Path, rows: i64) -> (String, RecordBatch) {
    use arrow_array::BinaryArray;
    use parquet::schema::types::ColumnPath;
    let schema = Arc::new(Schema::new(vec![
        field("id", DataType::Int64, 1),
        field("cat", DataType::Utf8, 2),
        field("big", DataType::Utf8, 3),
        field("bin", DataType::Binary, 4),
    ]));
    let cats = [
        "",
        "a",
        "bb",
        "a much longer value than sixteen bytes",
        "é",
        "x",
        "yz",
    ];
    let batch = RecordBatch::try_new(
        schema.clone(),
        vec![
            Arc::new(Int64Array::from_iter_values(0..rows)),
            Arc::new(StringArray::from_iter((0..rows).map(|i| {
                (i % 11 != 3).then(|| cats[(i * 7 % 13 % 7) as usize].to_string())
            }))),
            Arc::new(StringArray::from_iter_values(
                (0..rows).map(|i| format!("value number {i}")),
            )),
            Arc::new(BinaryArray::from_iter((0..rows).map(|i| {
                (i % 5 != 0).then(|| vec![(i % 3) as u8; (i % 3) as usize * 9])
            }))),
        ],
    )
    .unwrap();
    let props = WriterProperties::builder()
        .set_max_row_group_row_count(Some(700))
        .set_column_dictionary_page_size_limit(ColumnPath::from("big"), 2048)
        .build();
    let path = dir.join("dict.parquet");
    let mut w = ArrowWriter::try_new(File::create(&path).unwrap(), schema, Some(props)).unwrap();
    w.write(&batch).unwrap();
    w.close().unwrap();
    (path.to_string_lossy().into_owned(), batch)
}

#[test]
fn small_dictionary_columns_decode_with_the_deleted_rows_dropped() {
    use crate::parquet_stream::{FileStream, Step};
    let dir = tempdir("dictionaries");
    let rows = 3000i64;
    let (path, all) = write_dictionaries(&dir, rows);
    let (_, footer) = open_parquet(&path).unwrap();
    let fields = vec![
        Field::new("b", DataType::Binary, true),
        Field::new("c", DataType::Utf8, true),
        Field::new("g", DataType::Utf8, true),
        Field::new("i", DataType::Int64, true),
    ];
    let mut p = projection(&[4, 2, 3, 1], fields);
    p.batch_size = 256;
    let request = FileRequest {
        path: path.clone(),
        rows,
    };
    let plain = plan_file(&footer, &request, &Deletes::default(), &p).unwrap();
    assert!(
        !plain.dictionaries,
        "without deletes strings decode directly"
    );
    // only `cat` and `bin` qualify: `big` fell back to plain pages
    let one = PositionBitmap::from_positions([5u64]).unwrap();
    let plan = plan_file(&footer, &request, &Some(&one).into(), &p).unwrap();
    assert!(plan.dictionaries);
    let typed: Vec<bool> = (plan.meta.schema().fields().iter())
        .map(|f| matches!(f.data_type(), DataType::Dictionary(_, _)))
        .collect();
    assert_eq!(typed, [false, true, false, true]);
    let gone: Vec<u64> = (0..rows as u64)
        .filter(|i| i % 10 == 4 || (700..1400).contains(i))
        .collect();
    let cases: Vec<(Option<PositionBitmap>, Vec<u64>)> = vec![
        (None, Vec::new()),
        (
            Some(PositionBitmap::from_positions(gone.iter().copied()).unwrap()),
            gone.clone(),
        ),
        (
            Some(PositionBitmap::from_positions(0..rows as u64).unwrap()),
            (0..rows as u64).collect(),
        ),
    ];
    for (bitmap, deleted) in &cases {
        let keep = BooleanArray::from_iter((0..rows as u64).map(|i| Some(!deleted.contains(&i))));
        let want = arrow_select::filter::filter_record_batch(&all, &keep).unwrap();
        let want: Vec<ArrayRef> = [3, 1, 2, 0]
            .iter()
            .map(|&c| want.column(c).clone())
            .collect();
        let deletes = Deletes::from(bitmap.as_ref());
        let req = FileRequest {
            path: path.clone(),
            rows,
        };
        let whole = read_files(std::slice::from_ref(&req), &[deletes], &p, Some(1)).unwrap();
        let whole = whole[0].as_ref().expect("read natively");
        let mut stream = FileStream::open(&req, None, &deletes, p.clone(), Some(2))
            .unwrap()
            .expect("streamed natively");
        let mut streamed = Vec::new();
        loop {
            match stream.next_step(None) {
                Step::Batch(b) => streamed.push(b),
                Step::End => break,
                Step::Failed => panic!("stream failed"),
            }
        }
        for batches in [whole, &streamed] {
            for b in batches.iter() {
                assert_eq!(b.schema(), p.schema);
            }
            let got = arrow_select::concat::concat_batches(&p.schema, batches.iter()).unwrap();
            assert_eq!(got.num_rows(), rows as usize - deleted.len());
            for (c, w) in got.columns().iter().zip(&want) {
                assert_eq!(c.to_data(), w.to_data());
            }
        }
    }
    std::fs::remove_dir_all(dir).ok();
}
