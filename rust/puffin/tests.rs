use super::*;

fn golden(name: &str) -> Option<Vec<u8>> {
    crate::deletes::shared_testdata(&format!("iceberg-java/puffin/{name}"))
}

const BLOB2: &str =
    "some blob \u{0000} binary data 🤯 that is not very very very very very very long, is it?";

fn props(kv: &[(&str, &str)]) -> Vec<(String, String)> {
    kv.iter()
        .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
        .collect()
}

#[test]
fn reads_golden_files() {
    let Some(empty) = golden("empty-puffin-uncompressed.bin") else {
        eprintln!("skipping: shared testdata not found");
        return;
    };
    let (meta, loc) = read_file_metadata(&empty).unwrap();
    assert!(meta.blobs.is_empty());
    assert_eq!(loc.size, 28);
    for (name, codec, lengths) in [
        ("sample-metric-data-uncompressed.bin", None, [9u64, 83]),
        (
            "sample-metric-data-compressed-zstd.bin",
            Some("zstd"),
            [22, 77],
        ),
    ] {
        let file = golden(name).unwrap();
        let (meta, _) = read_file_metadata(&file).unwrap();
        assert_eq!(meta.properties, props(&[("created-by", "Test 1234")]));
        assert_eq!(meta.blobs.len(), 2);
        let b = &meta.blobs;
        assert_eq!(
            (b[0].blob_type.as_str(), b[1].blob_type.as_str()),
            ("some-blob", "some-other-blob")
        );
        assert_eq!(
            (b[0].fields.clone(), b[1].fields.clone()),
            (vec![1], vec![2])
        );
        assert_eq!([b[0].length, b[1].length], lengths);
        assert_eq!(b[0].offset, 4);
        assert_eq!(b[1].offset, 4 + lengths[0]);
        for blob in b {
            assert_eq!((blob.snapshot_id, blob.sequence_number), (2, 1));
            assert_eq!(blob.compression_codec.as_deref(), codec);
        }
        assert_eq!(read_blob(&file, &b[0]).unwrap(), b"abcdefghi");
        assert_eq!(read_blob(&file, &b[1]).unwrap(), BLOB2.as_bytes());
    }
}

#[test]
fn writer_reproduces_java_uncompressed_file() {
    let Some(expected) = golden("sample-metric-data-uncompressed.bin") else {
        return;
    };
    let mut w = PuffinWriter::new();
    w.add_blob(
        b"abcdefghi",
        "some-blob",
        vec![1],
        2,
        1,
        Codec::None,
        vec![],
    )
    .unwrap();
    w.add_blob(
        BLOB2.as_bytes(),
        "some-other-blob",
        vec![2],
        2,
        1,
        Codec::None,
        vec![],
    )
    .unwrap();
    let out = w
        .finish(props(&[("created-by", "Test 1234")]), false)
        .unwrap();
    assert_eq!(out, expected);
    assert_eq!(
        PuffinWriter::new().finish(vec![], false).unwrap(),
        golden("empty-puffin-uncompressed.bin").unwrap()
    );
}

#[test]
fn compressed_blobs_and_footer_round_trip() {
    for codec in [Codec::Zstd, Codec::Lz4] {
        let mut w = PuffinWriter::new();
        let data = vec![7u8; 10_000];
        let m = w
            .add_blob(&data, "t", vec![1, 2], 5, 6, codec, props(&[("k", "v")]))
            .unwrap();
        assert!(m.length < 1000);
        let dv = PositionBitmap::from_positions([1, 5, 1 << 40]).unwrap();
        let dvm = w.add_deletion_vector(&dv, "s3://b/f.parquet").unwrap();
        let file = w.finish(props(&[("created-by", "icefloe")]), true).unwrap();
        let (meta, _) = read_file_metadata(&file).unwrap();
        // Properties are a JSON object: compare them as maps.
        let sorted = |mut b: BlobMetadata| {
            b.properties.sort();
            b
        };
        let expected: Vec<_> = [m.clone(), dvm.clone()].into_iter().map(sorted).collect();
        assert_eq!(
            meta.blobs.into_iter().map(sorted).collect::<Vec<_>>(),
            expected
        );
        assert_eq!(read_blob(&file, &m).unwrap(), data);
        let raw = &file[dvm.offset as usize..(dvm.offset + dvm.length) as usize];
        assert_eq!(crate::deletes::dv::decode_dv(raw, Some(3)).unwrap(), dv);
        assert_eq!(dvm.fields, vec![ROW_POSITION_FIELD_ID]);
        assert_eq!((dvm.snapshot_id, dvm.sequence_number), (-1, -1));
        assert_eq!(dvm.compression_codec, None);
        assert_eq!(
            dvm.properties,
            props(&[
                ("referenced-data-file", "s3://b/f.parquet"),
                ("cardinality", "3")
            ])
        );
    }
}

#[test]
fn rejects_corrupt_files() {
    let mut w = PuffinWriter::new();
    w.add_blob(b"abc", "t", vec![1], 1, 1, Codec::None, vec![])
        .unwrap();
    let file = w.finish(vec![], false).unwrap();
    assert!(read_file_metadata(&file).is_ok());
    for i in [0, file.len() - 1, file.len() - 9, file.len() - 12] {
        let mut bad = file.clone();
        bad[i] ^= 0xff;
        let e = read_file_metadata(&bad).unwrap_err();
        assert!(
            matches!(e, Error::CorruptFile(_) | Error::Unsupported(_)),
            "{i}: {e}"
        );
    }
    for cut in [1, 5, 13] {
        assert!(read_file_metadata(&file[..file.len() - cut]).is_err());
    }
    let mut w = PuffinWriter::new();
    assert!(w
        .add_blob(b"x", DV_BLOB_TYPE, vec![1], -1, -1, Codec::Zstd, vec![])
        .is_err());
}
