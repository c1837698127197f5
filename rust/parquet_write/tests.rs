//! Tests of the native encoder: files read back by the `parquet` crate (checksums checked),
//! metrics under every mode, the page-header CRC insertion and the truncation rules.

use std::collections::HashMap;

use arrow_array::{
    ArrayRef, BinaryArray, BooleanArray, Decimal128Array, Float64Array, Int32Array, Int64Array,
    StringArray, TimestampMicrosecondArray,
};
use arrow_schema::{Field, Schema, TimeUnit};
use parquet::arrow::arrow_reader::{ArrowReaderOptions, ParquetRecordBatchReaderBuilder};
use parquet::file::reader::{FileReader, SerializedFileReader};
use parquet::file::serialized_reader::ReadOptionsBuilder;

use super::metrics::{truncate_lower_str, truncate_upper, truncate_upper_str};
use super::page_crc::header_with_crc;
use super::*;
use crate::transforms::murmur::minimal_twos_complement;

fn field(name: &str, t: DataType, id: i32) -> Field {
    Field::new(name, t, true).with_metadata(HashMap::from([(
        "PARQUET:field_id".to_string(),
        id.to_string(),
    )]))
}

fn sample() -> (RecordBatch, Vec<ColumnSpec>) {
    let schema = Arc::new(Schema::new(vec![
        field("id", DataType::Int64, 1),
        field("name", DataType::Utf8, 2),
        field("v", DataType::Float64, 3),
        field("b", DataType::Binary, 4),
        field("ok", DataType::Boolean, 5),
        field("d", DataType::Decimal128(20, 2), 6),
        field("n", DataType::Int32, 7),
        field("ts", DataType::Timestamp(TimeUnit::Microsecond, None), 8),
    ]));
    let cols: Vec<ArrayRef> = vec![
        Arc::new(Int64Array::from(vec![Some(5), None, Some(-3), Some(9)])),
        Arc::new(StringArray::from(vec![
            Some("abcdefghijklmnopqrstuvwxyz"),
            Some("b"),
            None,
            Some("\u{10FFFF}\u{10FFFF}\u{10FFFF}"),
        ])),
        Arc::new(Float64Array::from(vec![
            Some(0.0),
            Some(f64::NAN),
            Some(2.5),
            None,
        ])),
        Arc::new(BinaryArray::from(vec![
            Some(&[1u8, 255, 255][..]),
            Some(&[0u8][..]),
            None,
            Some(&[1u8, 2][..]),
        ])),
        Arc::new(BooleanArray::from(vec![
            Some(true),
            None,
            Some(true),
            Some(true),
        ])),
        Arc::new(
            Decimal128Array::from(vec![Some(-12345), Some(1), None, Some(99999)])
                .with_precision_and_scale(20, 2)
                .unwrap(),
        ),
        Arc::new(Int32Array::from(vec![None, None, None, None])),
        Arc::new(TimestampMicrosecondArray::from(vec![
            Some(10),
            Some(20),
            Some(-5),
            None,
        ])),
    ];
    let spec = |id, t: &str, mode| ColumnSpec {
        field_id: id,
        iceberg_type: PrimitiveType::parse(t).unwrap(),
        mode,
    };
    let specs = vec![
        spec(1, "long", MetricsMode::Truncate(16)),
        spec(2, "string", MetricsMode::Truncate(2)),
        spec(3, "double", MetricsMode::Full),
        spec(4, "binary", MetricsMode::Truncate(2)),
        spec(5, "boolean", MetricsMode::Counts),
        spec(6, "decimal(20, 2)", MetricsMode::Full),
        spec(7, "int", MetricsMode::Full),
        spec(8, "timestamp", MetricsMode::None),
    ];
    (RecordBatch::try_new(schema, cols).unwrap(), specs)
}

fn options(dictionary: &[&str], rows: usize) -> FileOptions {
    FileOptions {
        compression: "zstd".into(),
        compression_level: None,
        dictionary: dictionary.iter().map(|s| s.to_string()).collect(),
        page_size: 1 << 20,
        dictionary_page_size: 1 << 20,
        row_group_rows: rows,
        key_value: vec![("k".into(), "v".into())],
    }
}

fn map<T: Clone>(pairs: &[(i32, T)]) -> HashMap<i32, T> {
    pairs.iter().cloned().collect()
}

#[test]
fn files_read_back_with_checksums_and_field_ids() {
    let (batch, specs) = sample();
    for dict in [&[][..], &["id", "name", "v", "b", "ok", "d", "n", "ts"][..]] {
        for rows in [1, 3, 4] {
            let files = encode_files(
                &[batch.slice(0, 1), batch.slice(1, 3)],
                &[(0, 4), (1, 2)],
                &specs,
                &options(dict, rows),
                Some(2),
            )
            .unwrap();
            assert_eq!(files.len(), 2);
            let bytes = Bytes::from(files[0].bytes.clone());
            // every page's CRC is checked on this read
            let reader = SerializedFileReader::new_with_options(
                bytes.clone(),
                ReadOptionsBuilder::new().build(),
            )
            .unwrap();
            let md = reader.metadata();
            assert_eq!(md.num_row_groups(), 4usize.div_ceil(rows));
            let kv = md.file_metadata().key_value_metadata().unwrap();
            assert_eq!(kv[0].key, "k");
            let fields = md.file_metadata().schema_descr().root_schema().get_fields();
            assert_eq!(fields[1].get_basic_info().id(), 2);
            let back = ParquetRecordBatchReaderBuilder::try_new_with_options(
                bytes,
                ArrowReaderOptions::new().with_skip_arrow_metadata(true),
            )
            .unwrap()
            .build()
            .unwrap()
            .collect::<std::result::Result<Vec<_>, _>>()
            .unwrap();
            let back = arrow_select::concat::concat_batches(&back[0].schema(), &back).unwrap();
            for c in 0..batch.num_columns() {
                assert_eq!(
                    back.column(c).to_data(),
                    batch.column(c).to_data(),
                    "column {c}"
                );
            }
            let second = &files[1];
            assert_eq!(second.rows, 2);
        }
    }
}

#[test]
fn a_damaged_page_fails_its_checksum() {
    let (batch, specs) = sample();
    let file = &encode_files(
        std::slice::from_ref(&batch),
        &[(0, 4)],
        &specs,
        &options(&[], 4),
        None,
    )
    .unwrap()[0];
    let reader = SerializedFileReader::new(Bytes::from(file.bytes.clone())).unwrap();
    let col = reader.metadata().row_group(0).column(0);
    let (start, len) = col.byte_range();
    // flip the last byte of the chunk (page data, not header)
    let mut bytes = file.bytes.clone();
    bytes[(start + len - 1) as usize] ^= 0x55;
    let reader = SerializedFileReader::new(Bytes::from(bytes)).unwrap();
    let mut pages = reader
        .get_row_group(0)
        .unwrap()
        .get_column_page_reader(0)
        .unwrap();
    let err = loop {
        match pages.get_next_page() {
            Ok(Some(_)) => continue,
            Ok(None) => panic!("no checksum error"),
            Err(e) => break e.to_string(),
        }
    };
    assert!(
        err.to_lowercase().contains("checksum") || err.contains("crc"),
        "{err}"
    );
}

#[test]
fn metrics_follow_the_modes() {
    let (batch, specs) = sample();
    let f = &encode_files(
        std::slice::from_ref(&batch),
        &[(0, 4)],
        &specs,
        &options(&["name"], 2),
        None,
    )
    .unwrap()[0];
    assert_eq!(f.rows, 4);
    let values = map(&f.value_counts);
    let nulls = map(&f.null_counts);
    let lower = map(&f.lower);
    let upper = map(&f.upper);
    assert!(!values.contains_key(&8), "mode none: no metrics");
    assert_eq!(values[&1], 4);
    assert_eq!(nulls[&1], 1);
    assert_eq!(nulls[&7], 4);
    assert_eq!(map(&f.nan_counts), HashMap::from([(3, 1)]));
    assert_eq!(lower[&1], (-3i64).to_le_bytes().to_vec());
    assert_eq!(upper[&1], 9i64.to_le_bytes().to_vec());
    assert_eq!(lower[&2], b"ab".to_vec());
    // the largest string's two code points cannot be incremented: no upper bound
    assert!(!upper.contains_key(&2));
    assert_eq!(lower[&3], (-0.0f64).to_le_bytes().to_vec());
    assert_eq!(upper[&3], 2.5f64.to_le_bytes().to_vec());
    assert_eq!(lower[&4], vec![0u8]);
    assert_eq!(upper[&4], vec![2u8]);
    assert!(!lower.contains_key(&5), "counts: no bounds");
    assert_eq!(
        lower[&6],
        minimal_twos_complement(&(-12345i128).to_be_bytes()).to_vec()
    );
    assert_eq!(
        upper[&6],
        minimal_twos_complement(&99999i128.to_be_bytes()).to_vec()
    );
    assert!(!lower.contains_key(&7), "all null: no bounds");
    let sizes = map(&f.column_sizes);
    let reader = SerializedFileReader::new(Bytes::from(f.bytes.clone())).unwrap();
    let total: i64 = reader
        .metadata()
        .row_groups()
        .iter()
        .map(|rg| rg.column(0).compressed_size())
        .sum();
    assert_eq!(sizes[&1], total);
    assert_eq!(f.split_offsets.len(), 2);
    assert_eq!(f.split_offsets[0], 4);
}

#[test]
fn row_groups_of_nulls_or_nan_add_no_bounds() {
    let schema = Arc::new(Schema::new(vec![
        field("x", DataType::Float64, 1),
        field("l", DataType::Int64, 2),
    ]));
    let batch = RecordBatch::try_new(
        schema,
        vec![
            Arc::new(Float64Array::from(vec![
                Some(f64::NAN),
                None,
                Some(1.5),
                Some(-2.0),
            ])),
            Arc::new(Int64Array::from(vec![None, None, Some(7), Some(3)])),
        ],
    )
    .unwrap();
    let specs = vec![
        ColumnSpec {
            field_id: 1,
            iceberg_type: PrimitiveType::Double,
            mode: MetricsMode::Full,
        },
        ColumnSpec {
            field_id: 2,
            iceberg_type: PrimitiveType::Long,
            mode: MetricsMode::Full,
        },
    ];
    let f = &encode_files(&[batch], &[(0, 4)], &specs, &options(&[], 1), None).unwrap()[0];
    let (lower, upper) = (map(&f.lower), map(&f.upper));
    assert_eq!(lower[&1], (-2.0f64).to_le_bytes().to_vec());
    assert_eq!(upper[&1], 1.5f64.to_le_bytes().to_vec());
    assert_eq!(lower[&2], 3i64.to_le_bytes().to_vec());
    assert_eq!(upper[&2], 7i64.to_le_bytes().to_vec());
    assert_eq!(map(&f.nan_counts)[&1], 1);
}

#[test]
fn crc_goes_in_as_field_four() {
    // type=DATA_PAGE(0), sizes 10 and 7, then field 5 (a struct with one i32 field, stop)
    let header = [
        0x15, 0x00, 0x15, 0x14, 0x15, 0x0e, 0x2c, 0x15, 0x02, 0x00, 0x00,
    ];
    let (out, page_type) = header_with_crc(&header, 1, None).unwrap();
    assert_eq!(page_type, 0);
    assert_eq!(
        out,
        vec![0x15, 0x00, 0x15, 0x14, 0x15, 0x0e, 0x15, 0x02, 0x1c, 0x15, 0x02, 0x00, 0x00]
    );
    // a header that already has a crc, or starts in long form, is refused
    assert!(header_with_crc(
        &[0x15, 0x00, 0x15, 0x00, 0x15, 0x00, 0x15, 0x00, 0x00],
        1,
        None
    )
    .is_err());
    assert!(header_with_crc(&[0x05, 0x02, 0x00], 1, None).is_err());
    // the compressed size replaced, in a varint of another length (7 -> 300)
    let (out, _) = header_with_crc(&header, 1, Some(300)).unwrap();
    assert_eq!(
        out,
        vec![0x15, 0x00, 0x15, 0x14, 0x15, 0xd8, 0x04, 0x15, 0x02, 0x1c, 0x15, 0x02, 0x00, 0x00]
    );
}

#[test]
fn truncation_of_strings_and_bytes() {
    assert_eq!(truncate_upper_str("abc", 3).as_deref(), Some("abc"));
    assert_eq!(truncate_upper_str("abcd", 3).as_deref(), Some("abd"));
    assert_eq!(
        truncate_upper_str("a\u{D7FF}x", 2).as_deref(),
        Some("a\u{E000}")
    );
    assert_eq!(truncate_upper_str("a\u{10FFFF}x", 2).as_deref(), Some("b"));
    assert_eq!(truncate_upper(&[1, 255, 3], 2), Some(vec![2]));
    assert_eq!(truncate_upper(&[255, 255, 3], 2), None);
    assert_eq!(truncate_lower_str("héllo", 2), "hé");
}

#[test]
fn refusals() {
    let (batch, specs) = sample();
    assert!(encode_files(
        std::slice::from_ref(&batch),
        &[(3, 2)],
        &specs,
        &options(&[], 4),
        None
    )
    .is_err());
    assert!(encode_files(
        std::slice::from_ref(&batch),
        &[(0, 4)],
        &specs[1..],
        &options(&[], 4),
        None
    )
    .is_err());
    let mut gzip = options(&[], 4);
    gzip.compression = "gzip".into();
    assert!(encode_files(std::slice::from_ref(&batch), &[(0, 4)], &specs, &gzip, None).is_err());
}

#[test]
fn pages_compressed_here_equal_the_crate_codecs_pages() {
    let (batch, specs) = sample();
    for dict in [&[][..], &["id", "name", "v", "b", "ok", "d", "n", "ts"][..]] {
        for level in [None, Some(3), Some(-2)] {
            let mut opts = options(dict, 3);
            opts.compression_level = level;
            let (ours_props, zstd) = properties(&batch.schema(), &opts).unwrap();
            assert!(zstd.is_some());
            assert_eq!(
                ours_props.compression(&ColumnPath::from("id")),
                Compression::UNCOMPRESSED
            );
            let crates = WriterProperties::into_builder(ours_props.clone())
                .set_compression(Compression::ZSTD(zstd.unwrap()))
                .build();
            let ours = encode_file(&batch, &specs, &Arc::new(ours_props), zstd, 3).unwrap();
            let theirs = encode_file(&batch, &specs, &Arc::new(crates), None, 3).unwrap();
            // every page the same; the footers differ only in each chunk's uncompressed size,
            // which the crate's page store path counts from the compressed pages
            let pages = |b: &[u8]| {
                let footer = u32::from_le_bytes(b[b.len() - 8..b.len() - 4].try_into().unwrap());
                b[..b.len() - 8 - footer as usize].to_vec()
            };
            assert_eq!(pages(&ours.bytes), pages(&theirs.bytes));
            assert_eq!(ours.column_sizes, theirs.column_sizes);
            let meta = |b: &[u8]| {
                SerializedFileReader::new(Bytes::from(b.to_vec()))
                    .unwrap()
                    .metadata()
                    .clone()
            };
            let (a, b) = (meta(&ours.bytes), meta(&theirs.bytes));
            for (ra, rb) in a.row_groups().iter().zip(b.row_groups()) {
                for (ca, cb) in ra.columns().iter().zip(rb.columns()) {
                    assert_eq!(ca.compression(), cb.compression());
                    assert_eq!(ca.compressed_size(), cb.compressed_size());
                    assert_eq!(ca.data_page_offset(), cb.data_page_offset());
                    assert_eq!(ca.dictionary_page_offset(), cb.dictionary_page_offset());
                    assert_eq!(ca.statistics(), cb.statistics());
                }
            }
        }
    }
}
