//! Vectors from Java (Iceberg 1.11 `compute_table_stats` output and DataSketches' hashing), the
//! `murmur3` crate as the hash oracle, and order/merge invariance above K.

use std::io::Cursor;
use std::sync::Arc;

use arrow_array::{
    Array, BinaryArray, BooleanArray, Decimal128Array, FixedSizeBinaryArray, Float64Array,
    Int32Array, Int64Array, StringArray,
};

use super::feed::decimal_bytes;
use super::hash::murmur3_x64_128_h1;
use super::*;

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn sketch_of(array: &dyn Array) -> ThetaSketch {
    let mut s = ThetaSketch::new();
    update_from_array(&mut s, array).unwrap();
    s
}

#[test]
fn theta_hash_vectors() {
    assert_eq!(theta_hash(b"iceberg"), 0x032e_4276_6a92_e119);
    assert_eq!(theta_hash(b"a"), 0x7b01_0785_521d_c117);
    assert_eq!(theta_hash(&34i64.to_le_bytes()), 0x2936_2986_d743_b9d5);
    assert_eq!(theta_hash(&34i32.to_le_bytes()), 0x1f47_0561_4727_34c0);
}

#[test]
fn murmur_matches_reference_crate_for_every_tail_length() {
    let data: Vec<u8> = (0u8..70)
        .map(|i| i.wrapping_mul(37).wrapping_add(11))
        .collect();
    for len in 0..data.len() {
        for seed in [0u32, 9001, 0xdead_beef] {
            let r = murmur3::murmur3_x64_128(&mut Cursor::new(&data[..len]), seed).unwrap();
            assert_eq!(
                murmur3_x64_128_h1(&data[..len], u64::from(seed)),
                r as u64,
                "len {len}"
            );
        }
    }
}

#[test]
fn java_headers_empty_single_and_exact() {
    // All null or empty: Java writes seed hash 0 and flags 0x1E.
    let s = sketch_of(&StringArray::from(vec![None, Some(""), None]));
    assert_eq!(hex(&s.to_bytes()), "01030300001e0000");
    assert_eq!(s.estimate(), 0.0);
    // One item: flags 0x3A (SINGLEITEM), then the hash.
    let s = sketch_of(&StringArray::from(vec!["iceberg", "iceberg"]));
    assert_eq!(hex(&s.to_bytes()), "01030300003acc9319e1926a76422e03");
    // Exact: count, p = 1.0f, ascending hashes.
    let s = sketch_of(&StringArray::from(vec!["c", "a", "b", "", "a"]));
    let mut hs: Vec<u64> = ["a", "b", "c"]
        .iter()
        .map(|v| theta_hash(v.as_bytes()))
        .collect();
    hs.sort_unstable();
    let mut want = hex(&[
        2, 3, 3, 0, 0, 0x1a, 0xcc, 0x93, 3, 0, 0, 0, 0, 0, 0x80, 0x3f,
    ]);
    hs.iter().for_each(|h| want += &hex(&h.to_le_bytes()));
    assert_eq!(hex(&s.to_bytes()), want);
    assert_eq!(s.estimate(), 3.0);
    assert_eq!(estimate_of(&s.to_bytes()).unwrap(), 3.0);
}

#[test]
fn values_are_fed_as_iceberg_single_value_bytes() {
    let one = |a: &dyn Array, bytes: &[u8]| {
        let s = sketch_of(a);
        let mut want = "01030300003acc93".to_string();
        want += &hex(&theta_hash(bytes).to_le_bytes());
        assert_eq!(hex(&s.to_bytes()), want, "{:?}", a.data_type());
    };
    one(&Int32Array::from(vec![84202]), &[0xea, 0x48, 0x01, 0x00]);
    one(&Int64Array::from(vec![200]), &200i64.to_le_bytes());
    one(
        &Float64Array::from(vec![6.0]),
        &[0, 0, 0, 0, 0, 0, 0x18, 0x40],
    );
    one(&BooleanArray::from(vec![true]), &[1]);
    one(&BooleanArray::from(vec![false]), &[0]);
    one(&BinaryArray::from(vec![b"Z".as_ref()]), b"Z");
    let uuid: [u8; 16] = *b"\x12\x34\x56\x78\x9a\xbc\xde\xf0\x01\x02\x03\x04\x05\x06\x07\x08";
    one(
        &FixedSizeBinaryArray::try_from_iter([uuid].into_iter()).unwrap(),
        &uuid,
    );
    let dec = Decimal128Array::from(vec![1_234_567i128])
        .with_precision_and_scale(7, 4)
        .unwrap();
    one(&dec, &[0x12, 0xd6, 0x87]);
    // Float bits are not canonicalised: -0.0 and 0.0 are two values.
    assert_eq!(
        sketch_of(&Float64Array::from(vec![0.0, -0.0])).estimate(),
        2.0
    );
}

#[test]
fn decimal_bytes_are_minimal_twos_complement() {
    let mut buf = [0u8; 16];
    for (v, want) in [
        (345i128, "0159"),
        (-1_234_567, "ed2979"),
        (11, "0b"),
        (0, "00"),
        (-1, "ff"),
        (127, "7f"),
        (128, "0080"),
        (-128, "80"),
        (-129, "ff7f"),
        (i128::MAX, "7fffffffffffffffffffffffffffffff"),
    ] {
        assert_eq!(hex(decimal_bytes(v, &mut buf)), want, "{v}");
    }
}

#[test]
fn exact_up_to_k_then_kmv_independent_of_order_and_split() {
    let exact = sketch_of(&Int64Array::from((0..K as i64).collect::<Vec<_>>()));
    assert!(exact.is_exact());
    assert_eq!(exact.to_bytes()[0], 2);
    assert_eq!(exact.estimate(), K as f64);

    let n = 20_000i64;
    let all = sketch_of(&Int64Array::from((0..n).collect::<Vec<_>>()));
    assert!(!all.is_exact());
    let bytes = all.to_bytes();
    assert_eq!(bytes[0], 3);
    assert_eq!(bytes.len(), 24 + 8 * K);
    // theta is the (K+1)-th smallest of all hashes.
    let mut hs: Vec<u64> = (0..n).map(|v| theta_hash(&v.to_le_bytes())).collect();
    hs.sort_unstable();
    assert_eq!(u64::from_le_bytes(bytes[16..24].try_into().unwrap()), hs[K]);
    let est = all.estimate();
    assert!((est - n as f64).abs() < 0.05 * n as f64, "{est}");
    assert_eq!(estimate_of(&bytes).unwrap(), est);

    // Reverse order, in pieces, merged: the same bytes.
    let mut merged = ThetaSketch::new();
    for chunk in (0..n).rev().collect::<Vec<_>>().chunks(3000) {
        merged.merge(&sketch_of(&Int64Array::from(chunk.to_vec())));
    }
    assert_eq!(merged.to_bytes(), bytes);
}

#[test]
fn estimate_of_reads_cpp_forms_and_rejects_garbage() {
    // C++ writes the seed hash when empty and flags 0x1A for a single item.
    assert_eq!(
        estimate_of(&[1, 3, 3, 0, 0, 0x1e, 0xcc, 0x93]).unwrap(),
        0.0
    );
    let mut single = vec![1, 3, 3, 0, 0, 0x1a, 0xcc, 0x93];
    single.extend_from_slice(&theta_hash(b"x").to_le_bytes());
    assert_eq!(estimate_of(&single).unwrap(), 1.0);
    assert!(estimate_of(&[1, 3, 3]).is_err());
    assert!(estimate_of(&[2, 3, 3, 0, 0, 0x1a, 0xcc, 0x93, 9, 0, 0, 0, 0, 0, 0, 0]).is_err());
    assert!(estimate_of(&[1, 3, 3, 0, 0, 0x1a, 0x00, 0x11, 1, 2, 3, 4, 5, 6, 7, 8]).is_err());
    assert!(estimate_of(&[1, 2, 3, 0, 0, 0x1a, 0xcc, 0x93]).is_err());
}

#[test]
fn hashes_out_of_order_or_above_theta_are_corrupt() {
    let n = 10_000i64;
    let good = sketch_of(&Int64Array::from((0..n).collect::<Vec<_>>())).to_bytes();
    assert!(estimate_of(&good).is_ok() && ThetaSketch::from_bytes(&good).is_ok());
    let theta = u64::from_le_bytes(good[16..24].try_into().unwrap());
    let at = |k: usize| 24 + 8 * k;
    for (k, value) in [(7usize, theta), (7, theta + 1), (7, 0), (7, 1)] {
        let mut bad = good.clone();
        bad[at(k)..at(k) + 8].copy_from_slice(&value.to_le_bytes());
        assert!(estimate_of(&bad).is_err(), "hash {k} = {value:#x}");
        assert!(
            ThetaSketch::from_bytes(&bad).is_err(),
            "hash {k} = {value:#x}"
        );
    }
}

#[test]
fn unsupported_types_are_refused() {
    let list = arrow_array::ListArray::new_null(
        Arc::new(arrow_schema::Field::new(
            "item",
            arrow_schema::DataType::Int32,
            true,
        )),
        1,
    );
    assert!(update_from_array(&mut ThetaSketch::new(), &list).is_err());
}

#[test]
fn serialised_parts_merge_into_the_whole() {
    // Exact (a few values), one item, empty, and above K (with parts above K too: 30,000 in
    // two): the serialised sketches of the parts
    // of a column, decoded and merged, serialise as the sketch of the whole column.
    for (n, parts) in [
        (0i64, 3usize),
        (1, 2),
        (300, 4),
        (5000, 7),
        (20_000, 5),
        (30_000, 2),
    ] {
        let values: Vec<i64> = (0..n).map(|v| v * 7919 % 100_003).collect();
        let whole = sketch_of(&Int64Array::from(values.clone())).to_bytes();
        let mut merged = ThetaSketch::new();
        for p in 0..parts {
            let part: Vec<i64> = values.iter().copied().skip(p).step_by(parts).collect();
            let bytes = sketch_of(&Int64Array::from(part)).to_bytes();
            merged.merge(&ThetaSketch::from_bytes(&bytes).unwrap());
        }
        assert_eq!(hex(&merged.to_bytes()), hex(&whole), "{n} values");
        // the decoded whole re-serialises unchanged
        assert_eq!(ThetaSketch::from_bytes(&whole).unwrap().to_bytes(), whole);
    }
    assert!(ThetaSketch::from_bytes(&[1, 3, 3]).is_err());
}
