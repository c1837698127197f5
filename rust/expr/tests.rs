//! Unit tests of the expression parser and the three evaluators, one or more per rule.

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, BooleanBuilder, Int32Builder, Int64Builder, MapBuilder};
use arrow_array::{
    Array, ArrayRef, BooleanArray, Float64Array, Int32Array, ListArray, RecordBatch, StringArray,
    StructArray,
};
use arrow_buffer::OffsetBuffer;
use arrow_schema::{DataType, Field, Fields};

use super::manifest::manifest_mask;
use super::metrics::metrics_mask;
use super::partition::partition_mask;
use super::{parse, Expr, Op};

fn pred(op: &str, id: i32, ty: &str, value: &str) -> String {
    let term = format!(r#"{{"id": {id}, "path": ["c{id}"], "type": "{ty}"}}"#);
    match op {
        "is-null" | "not-null" | "is-nan" | "not-nan" => {
            format!(r#"{{"type": "{op}", "term": {term}}}"#)
        }
        "in" | "not-in" => format!(r#"{{"type": "{op}", "term": {term}, "values": {value}}}"#),
        _ => format!(r#"{{"type": "{op}", "term": {term}, "value": {value}}}"#),
    }
}

fn bits(a: &BooleanArray) -> Vec<bool> {
    a.iter().map(|b| b.unwrap()).collect()
}

/// One file's statistics for field 1: value, null, NaN counts and raw bounds.
#[derive(Default, Clone)]
struct F {
    values: Option<i64>,
    nulls: Option<i64>,
    nans: Option<i64>,
    lower: Option<Vec<u8>>,
    upper: Option<Vec<u8>>,
    records: i64,
}

fn batch(files: &[F]) -> RecordBatch {
    let mut counts: Vec<MapBuilder<Int32Builder, Int64Builder>> = (0..3)
        .map(|_| MapBuilder::new(None, Int32Builder::new(), Int64Builder::new()))
        .collect();
    let mut bounds: Vec<MapBuilder<Int32Builder, BinaryBuilder>> = (0..2)
        .map(|_| MapBuilder::new(None, Int32Builder::new(), BinaryBuilder::new()))
        .collect();
    for f in files {
        for (m, v) in counts.iter_mut().zip([f.values, f.nulls, f.nans]) {
            if let Some(v) = v {
                m.keys().append_value(1);
                m.values().append_value(v);
            }
            // an unrelated field's entry, to check lookups by key
            m.keys().append_value(7);
            m.values().append_value(0);
            m.append(true).unwrap();
        }
        for (m, v) in bounds.iter_mut().zip([&f.lower, &f.upper]) {
            if let Some(v) = v {
                m.keys().append_value(1);
                m.values().append_value(v);
            }
            m.append(true).unwrap();
        }
    }
    let mut cols: Vec<(&str, ArrayRef)> = vec![(
        "record_count",
        Arc::new(arrow_array::Int64Array::from(
            files.iter().map(|f| f.records).collect::<Vec<_>>(),
        )),
    )];
    for (name, mut m) in ["value_counts", "null_value_counts", "nan_value_counts"]
        .into_iter()
        .zip(counts)
    {
        cols.push((name, Arc::new(m.finish())));
    }
    for (name, mut m) in ["lower_bounds", "upper_bounds"].into_iter().zip(bounds) {
        cols.push((name, Arc::new(m.finish())));
    }
    RecordBatch::try_from_iter(cols).unwrap()
}

fn int(v: i32) -> Option<Vec<u8>> {
    Some(v.to_le_bytes().to_vec())
}

fn long(v: i64) -> Option<Vec<u8>> {
    Some(v.to_le_bytes().to_vec())
}

fn dbl(v: f64) -> Option<Vec<u8>> {
    Some(v.to_le_bytes().to_vec())
}

fn s(v: &str) -> Option<Vec<u8>> {
    Some(v.as_bytes().to_vec())
}

fn ints(lo: i32, hi: i32) -> F {
    F {
        values: Some(10),
        nulls: Some(0),
        nans: None,
        lower: int(lo),
        upper: int(hi),
        records: 10,
    }
}

fn metrics(expr: &str, files: &[F]) -> Vec<bool> {
    bits(&metrics_mask(&batch(files), &parse(expr).unwrap()).unwrap())
}

#[test]
fn parse_compact_form() {
    let e = parse(&format!(
        r#"{{"type": "not", "child": {{"type": "and", "left": {}, "right": true}}}}"#,
        pred("lt", 1, "int", "5")
    ))
    .unwrap();
    let Expr::Or(l, r) = e.rewrite_not() else {
        panic!("expected or")
    };
    assert_eq!(*r, Expr::False);
    let Expr::Pred(p) = *l else {
        panic!("expected predicate")
    };
    assert_eq!(p.op, Op::GtEq);
    assert_eq!(p.values, vec![crate::serde::Value::Int(5)]);
    // decimal and date literals decode through the serde
    let Expr::Pred(p) = parse(&pred("eq", 2, "decimal(9,2)", "\"14.20\"")).unwrap() else {
        panic!()
    };
    assert_eq!(p.values, vec![crate::serde::Value::Int(1420)]);
    let Expr::Pred(p) = parse(&pred("eq", 2, "date", "\"1970-01-02\"")).unwrap() else {
        panic!()
    };
    assert_eq!(p.values, vec![crate::serde::Value::Int(1)]);
}

#[test]
fn parse_rejects_bad_input() {
    for bad in [
        "[1]",
        r#"{"type": "frob"}"#,
        &pred("lt", 1, "int", "\"x\""),
        &pred("in", 1, "int", "[]"),
        &pred("starts-with", 1, "int", "1"),
        "{",
    ] {
        let err = parse(bad).unwrap_err();
        assert!(matches!(err, crate::Error::Validation(_)), "{bad}: {err:?}");
    }
}

#[test]
fn metrics_ranges() {
    let files = [ints(10, 20)];
    assert_eq!(metrics(&pred("lt", 1, "int", "10"), &files), [false]);
    assert_eq!(metrics(&pred("lt", 1, "int", "11"), &files), [true]);
    assert_eq!(metrics(&pred("lt-eq", 1, "int", "10"), &files), [true]);
    assert_eq!(metrics(&pred("lt-eq", 1, "int", "9"), &files), [false]);
    assert_eq!(metrics(&pred("gt", 1, "int", "20"), &files), [false]);
    assert_eq!(metrics(&pred("gt", 1, "int", "19"), &files), [true]);
    assert_eq!(metrics(&pred("gt-eq", 1, "int", "20"), &files), [true]);
    assert_eq!(metrics(&pred("gt-eq", 1, "int", "21"), &files), [false]);
    assert_eq!(metrics(&pred("eq", 1, "int", "9"), &files), [false]);
    assert_eq!(metrics(&pred("eq", 1, "int", "21"), &files), [false]);
    assert_eq!(metrics(&pred("eq", 1, "int", "15"), &files), [true]);
    assert_eq!(metrics(&pred("not-eq", 1, "int", "15"), &files), [true]);
    assert_eq!(metrics(&pred("in", 1, "int", "[1, 25]"), &files), [false]);
    assert_eq!(metrics(&pred("in", 1, "int", "[1, 20]"), &files), [true]);
    assert_eq!(
        metrics(&pred("not-in", 1, "int", "[10, 20]"), &files),
        [true]
    );
    // not is pushed down: not(x < 30) is x >= 30
    let not = format!(
        r#"{{"type": "not", "child": {}}}"#,
        pred("lt", 1, "int", "30")
    );
    assert_eq!(metrics(&not, &files), [false]);
}

#[test]
fn metrics_in_with_many_values_may_match() {
    let files = [ints(10, 20)];
    let many: Vec<String> = (100..400).map(|i| i.to_string()).collect();
    let expr = pred("in", 1, "int", &format!("[{}]", many.join(",")));
    assert_eq!(metrics(&expr, &files), [true]);
    let few = pred("in", 1, "int", &format!("[{}]", many[..150].join(",")));
    assert_eq!(metrics(&few, &files), [false]);
}

#[test]
fn metrics_missing_stats_may_match() {
    let none = F {
        records: 5,
        ..F::default()
    };
    for e in [
        pred("lt", 1, "int", "0"),
        pred("eq", 1, "int", "0"),
        pred("is-null", 1, "int", ""),
        pred("not-null", 1, "int", ""),
        pred("in", 1, "int", "[1]"),
    ] {
        assert_eq!(metrics(&e, std::slice::from_ref(&none)), [true], "{e}");
    }
    // a field the file has no stats for at all (id 3)
    assert_eq!(metrics(&pred("eq", 3, "int", "0"), &[ints(1, 2)]), [true]);
}

#[test]
fn metrics_null_and_nan_counts() {
    let all_null = F {
        values: Some(4),
        nulls: Some(4),
        records: 4,
        ..F::default()
    };
    assert_eq!(
        metrics(
            &pred("not-null", 1, "int", ""),
            std::slice::from_ref(&all_null)
        ),
        [false]
    );
    assert_eq!(
        metrics(
            &pred("is-null", 1, "int", ""),
            std::slice::from_ref(&all_null)
        ),
        [true]
    );
    assert_eq!(
        metrics(&pred("eq", 1, "int", "1"), std::slice::from_ref(&all_null)),
        [false]
    );
    assert_eq!(
        metrics(
            &pred("starts-with", 1, "string", "\"a\""),
            std::slice::from_ref(&all_null)
        ),
        [false]
    );
    // not_starts_with / not_eq of null rows match
    assert_eq!(
        metrics(
            &pred("not-starts-with", 1, "string", "\"a\""),
            std::slice::from_ref(&all_null)
        ),
        [true]
    );
    assert_eq!(metrics(&pred("not-eq", 1, "int", "1"), &[all_null]), [true]);
    assert_eq!(
        metrics(&pred("is-null", 1, "int", ""), &[ints(1, 2)]),
        [false]
    );
    let all_nan = F {
        values: Some(3),
        nulls: Some(0),
        nans: Some(3),
        records: 3,
        ..F::default()
    };
    assert_eq!(
        metrics(
            &pred("not-nan", 1, "double", ""),
            std::slice::from_ref(&all_nan)
        ),
        [false]
    );
    assert_eq!(
        metrics(
            &pred("lt", 1, "double", "1.0"),
            std::slice::from_ref(&all_nan)
        ),
        [false]
    );
    assert_eq!(
        metrics(&pred("is-nan", 1, "double", ""), &[all_nan]),
        [true]
    );
    let no_nan = F {
        values: Some(3),
        nulls: Some(0),
        nans: Some(0),
        lower: dbl(1.0),
        upper: dbl(2.0),
        records: 3,
    };
    assert_eq!(
        metrics(&pred("is-nan", 1, "double", ""), &[no_nan]),
        [false]
    );
}

#[test]
fn metrics_float_bounds() {
    // NaN bounds (not allowed, from old writers) prune nothing
    let nan_upper = F {
        values: Some(3),
        nulls: Some(0),
        lower: dbl(1.0),
        upper: dbl(f64::NAN),
        records: 3,
        ..F::default()
    };
    assert_eq!(
        metrics(&pred("gt", 1, "double", "5.0"), &[nan_upper]),
        [true]
    );
    // -0.0 and 0.0 compare equal: a file of [-0.0, 0.0] may hold a row equal to 0.0
    let zeros = F {
        values: Some(2),
        nulls: Some(0),
        lower: dbl(-0.0),
        upper: dbl(-0.0),
        records: 2,
        ..F::default()
    };
    assert_eq!(
        metrics(
            &pred("eq", 1, "double", "0.0"),
            std::slice::from_ref(&zeros)
        ),
        [true]
    );
    assert_eq!(
        metrics(
            &pred("lt", 1, "double", "0.0"),
            std::slice::from_ref(&zeros)
        ),
        [false]
    );
    assert_eq!(metrics(&pred("gt", 1, "double", "-0.0"), &[zeros]), [false]);
}

#[test]
fn metrics_promoted_bounds_decode_by_length() {
    // a 4-byte int bound under a long column
    let promoted = F {
        lower: int(-5),
        upper: int(5),
        ..ints(0, 0)
    };
    assert_eq!(
        metrics(&pred("gt", 1, "long", "5"), std::slice::from_ref(&promoted)),
        [false]
    );
    assert_eq!(metrics(&pred("eq", 1, "long", "-5"), &[promoted]), [true]);
    let wide = F {
        lower: long(-5),
        upper: long(5),
        ..ints(0, 0)
    };
    assert_eq!(metrics(&pred("lt", 1, "long", "-5"), &[wide]), [false]);
    // float bound under double
    let f = F {
        lower: Some(1.5f32.to_le_bytes().to_vec()),
        upper: Some(2.5f32.to_le_bytes().to_vec()),
        ..ints(0, 0)
    };
    assert_eq!(
        metrics(&pred("gt", 1, "double", "2.5"), std::slice::from_ref(&f)),
        [false]
    );
    assert_eq!(metrics(&pred("gt", 1, "double", "2.4"), &[f]), [true]);
    // date bound under timestamp: day 1 = 86_400_000_000 micros
    let d = F {
        lower: int(1),
        upper: int(1),
        ..ints(0, 0)
    };
    let ts = "\"1970-01-02T00:00:00\"";
    assert_eq!(
        metrics(&pred("eq", 1, "timestamp", ts), std::slice::from_ref(&d)),
        [true]
    );
    assert_eq!(metrics(&pred("lt", 1, "timestamp", ts), &[d]), [false]);
}

#[test]
fn metrics_strings_and_truncated_bounds() {
    let f = F {
        values: Some(3),
        nulls: Some(0),
        lower: s("abc"),
        upper: s("abd"), // a truncated upper bound, incremented
        records: 3,
        ..F::default()
    };
    let sw = |p: &str| {
        metrics(
            &pred("starts-with", 1, "string", &format!("\"{p}\"")),
            std::slice::from_ref(&f),
        )
    };
    assert_eq!(sw("abc"), [true]);
    assert_eq!(sw("abcz"), [true]);
    assert_eq!(sw("ab"), [true]);
    assert_eq!(sw("abe"), [false]);
    assert_eq!(sw("aa"), [false]);
    let nsw = |p: &str| {
        metrics(
            &pred("not-starts-with", 1, "string", &format!("\"{p}\"")),
            std::slice::from_ref(&f),
        )
    };
    assert_eq!(nsw("ab"), [false]);
    assert_eq!(nsw("abc"), [true]);
    assert_eq!(
        metrics(
            &pred("gt", 1, "string", "\"abd\""),
            std::slice::from_ref(&f)
        ),
        [false]
    );
    assert_eq!(
        metrics(
            &pred("lt", 1, "string", "\"abc\""),
            std::slice::from_ref(&f)
        ),
        [false]
    );
    assert_eq!(
        metrics(&pred("eq", 1, "string", "\"abcxyz\""), &[f]),
        [true]
    );
}

#[test]
fn metrics_record_count_and_corrupt_bounds() {
    let empty = F {
        records: 0,
        ..F::default()
    };
    let imported = F {
        records: -1,
        ..F::default()
    };
    assert_eq!(metrics("true", &[empty, imported]), [false, true]);
    let corrupt = F {
        lower: Some(vec![1, 2, 3]),
        ..ints(0, 0)
    };
    let err = metrics_mask(
        &batch(&[corrupt]),
        &parse(&pred("lt", 1, "int", "1")).unwrap(),
    )
    .unwrap_err();
    assert!(matches!(err, crate::Error::CorruptFile(_)), "{err:?}");
    assert!(err.message().contains("field 1"), "{err:?}");
}

/// One partition field summary: contains_null, contains_nan, lower and upper bound.
type Summary = (bool, Option<bool>, Option<Vec<u8>>, Option<Vec<u8>>);

fn summaries(rows: &[Option<Vec<Summary>>]) -> ListArray {
    let (mut cn, mut nan, mut lo, mut hi) = (
        BooleanBuilder::new(),
        BooleanBuilder::new(),
        BinaryBuilder::new(),
        BinaryBuilder::new(),
    );
    let mut offsets = vec![0i32];
    let mut valid = vec![];
    for r in rows {
        for (a, b, c, d) in r.iter().flatten() {
            cn.append_value(*a);
            nan.append_option(*b);
            lo.append_option(c.as_ref());
            hi.append_option(d.as_ref());
        }
        offsets.push(offsets.last().unwrap() + r.as_ref().map_or(0, |v| v.len() as i32));
        valid.push(r.is_some());
    }
    let fields = Fields::from(vec![
        Field::new("contains_null", DataType::Boolean, false),
        Field::new("contains_nan", DataType::Boolean, true),
        Field::new("lower_bound", DataType::Binary, true),
        Field::new("upper_bound", DataType::Binary, true),
    ]);
    let items = StructArray::new(
        fields.clone(),
        vec![
            Arc::new(cn.finish()),
            Arc::new(nan.finish()),
            Arc::new(lo.finish()),
            Arc::new(hi.finish()),
        ],
        None,
    );
    ListArray::new(
        Arc::new(Field::new("element", DataType::Struct(fields), false)),
        OffsetBuffer::new(offsets.into()),
        Arc::new(items),
        Some(valid.into()),
    )
}

#[test]
fn manifest_summaries() {
    let col = summaries(&[
        Some(vec![(false, None, int(10), int(20))]),
        Some(vec![(true, None, None, None)]), // all null
        None,                                 // no summaries: may match
        Some(vec![(true, None, int(30), int(40))]),
    ]);
    let m = |e: &str| bits(&manifest_mask(&col, &parse(e).unwrap(), &[1000]).unwrap());
    assert_eq!(
        m(&pred("eq", 1000, "int", "15")),
        [true, false, true, false]
    );
    assert_eq!(
        m(&pred("lt", 1000, "int", "10")),
        [false, false, true, false]
    );
    assert_eq!(
        m(&pred("gt-eq", 1000, "int", "40")),
        [false, false, true, true]
    );
    assert_eq!(
        m(&pred("is-null", 1000, "int", "")),
        [false, true, true, true]
    );
    assert_eq!(
        m(&pred("not-null", 1000, "int", "")),
        [true, false, true, true]
    );
    assert_eq!(
        m(&pred("in", 1000, "int", "[5, 35]")),
        [false, false, true, true]
    );
    assert_eq!(
        m(&pred("not-in", 1000, "int", "[15]")),
        [true, true, true, true]
    );
    let err = manifest_mask(
        &col,
        &parse(&pred("eq", 1001, "int", "1")).unwrap(),
        &[1000],
    );
    assert!(err.is_err());
}

#[test]
fn manifest_nan_and_strings() {
    let col = summaries(&[
        Some(vec![(false, Some(true), None, None)]), // only NaN
        Some(vec![(false, Some(false), dbl(1.0), dbl(2.0))]),
        Some(vec![(true, None, None, None)]), // all null, NaN unknown
    ]);
    let m = |e: &str| bits(&manifest_mask(&col, &parse(e).unwrap(), &[1000]).unwrap());
    assert_eq!(m(&pred("is-nan", 1000, "double", "")), [true, false, true]);
    assert_eq!(m(&pred("not-nan", 1000, "double", "")), [false, true, true]);
    // all-null with an unknown contains_nan may still hold NaN: not_null may match
    assert_eq!(m(&pred("not-null", 1000, "double", "")), [true, true, true]);
    let col = summaries(&[
        Some(vec![(false, None, s("abc"), s("abd"))]),
        Some(vec![(true, None, s("abc"), s("abd"))]),
    ]);
    let m = |e: &str| bits(&manifest_mask(&col, &parse(e).unwrap(), &[1000]).unwrap());
    assert_eq!(
        m(&pred("starts-with", 1000, "string", "\"abc\"")),
        [true, true]
    );
    assert_eq!(
        m(&pred("starts-with", 1000, "string", "\"abe\"")),
        [false, false]
    );
    assert_eq!(
        m(&pred("not-starts-with", 1000, "string", "\"ab\"")),
        [false, true]
    );
}

#[test]
fn partition_exact_with_nulls() {
    let ids = Field::new("p_int", DataType::Int32, true).with_metadata(
        std::collections::HashMap::from([("field_id".to_string(), "1000".to_string())]),
    );
    let names = Field::new("p_str", DataType::Utf8, true);
    let dbls = Field::new("p_dbl", DataType::Float64, true).with_metadata(
        std::collections::HashMap::from([("field_id".to_string(), "1002".to_string())]),
    );
    let col = StructArray::new(
        Fields::from(vec![ids, names, dbls]),
        vec![
            Arc::new(Int32Array::from(vec![Some(1), None, Some(3)])),
            Arc::new(StringArray::from(vec![Some("ab"), Some("b"), None])),
            Arc::new(Float64Array::from(vec![f64::NAN, 0.0, -0.0])),
        ],
        None,
    );
    let m = |e: &str| bits(&partition_mask(&col, &parse(e).unwrap()).unwrap());
    assert_eq!(m(&pred("lt", 1000, "int", "3")), [true, false, false]);
    assert_eq!(m(&pred("not-eq", 1000, "int", "3")), [true, true, false]);
    assert_eq!(m(&pred("is-null", 1000, "int", "")), [false, true, false]);
    assert_eq!(m(&pred("not-in", 1000, "int", "[1]")), [false, true, true]);
    // matched by name when the child has no field id
    let sw = r#"{"type": "starts-with", "term": {"id": 1001, "path": ["p_str"], "type": "string"}, "value": "a"}"#;
    assert_eq!(m(sw), [true, false, false]);
    let nsw = sw.replace("starts-with", "not-starts-with");
    assert_eq!(m(&nsw), [false, true, true]);
    assert_eq!(m(&pred("is-nan", 1002, "double", "")), [true, false, false]);
    assert_eq!(m(&pred("eq", 1002, "double", "0.0")), [false, true, true]);
    assert_eq!(m(&pred("gt", 1002, "double", "-1.0")), [false, true, true]);
    assert!(partition_mask(&col, &parse(&pred("eq", 5, "int", "1")).unwrap()).is_err());
    assert_eq!(col.len(), 3);
}

fn strict(expr: &str, files: &[F]) -> Vec<bool> {
    bits(&super::strict::strict_metrics_mask(&batch(files), &parse(expr).unwrap()).unwrap())
}

#[test]
fn strict_comparisons_need_bounds_on_the_right_side() {
    let f = [ints(1, 5), ints(3, 9)];
    assert_eq!(strict(&pred("lt", 1, "int", "6"), &f), [true, false]);
    assert_eq!(strict(&pred("lt", 1, "int", "5"), &f), [false, false]);
    assert_eq!(strict(&pred("lt-eq", 1, "int", "5"), &f), [true, false]);
    assert_eq!(strict(&pred("gt", 1, "int", "2"), &f), [false, true]);
    assert_eq!(strict(&pred("gt-eq", 1, "int", "3"), &f), [false, true]);
    assert_eq!(
        strict(&pred("eq", 1, "int", "3"), &[ints(3, 3), ints(3, 4)]),
        [true, false]
    );
    assert_eq!(strict(&pred("not-eq", 1, "int", "0"), &f), [true, true]);
    assert_eq!(strict(&pred("not-eq", 1, "int", "4"), &f), [false, false]);
    assert_eq!(
        strict(&pred("in", 1, "int", "[2, 3]"), &[ints(3, 3), ints(2, 3)]),
        [true, false]
    );
    assert_eq!(
        strict(&pred("not-in", 1, "int", "[0, 10]"), &f),
        [true, true]
    );
    assert_eq!(
        strict(&pred("not-in", 1, "int", "[0, 4]"), &f),
        [false, false]
    );
}

#[test]
fn strict_needs_counts_and_proves_nothing_from_missing_stats() {
    let nulls = F {
        nulls: Some(1),
        ..ints(1, 5)
    };
    let unknown = F {
        nulls: None,
        ..ints(1, 5)
    };
    let no_upper = F {
        upper: None,
        ..ints(1, 5)
    };
    let negative = F {
        records: -1,
        ..ints(1, 5)
    };
    let e = pred("lt", 1, "int", "9");
    assert_eq!(
        strict(&e, &[nulls, unknown, no_upper, negative]),
        [false; 4]
    );
    let all_null = F {
        values: Some(10),
        nulls: Some(10),
        records: 10,
        ..F::default()
    };
    assert_eq!(
        strict(
            &pred("is-null", 1, "int", ""),
            &[all_null.clone(), ints(1, 2)]
        ),
        [true, false]
    );
    assert_eq!(
        strict(&pred("not-null", 1, "int", ""), &[all_null, ints(1, 2)]),
        [false, true]
    );
    // not pushed down: not(x >= 9) is x < 9
    let not = format!(
        r#"{{"type": "not", "child": {}}}"#,
        pred("gt-eq", 1, "int", "9")
    );
    assert_eq!(strict(&not, &[ints(1, 5), ints(1, 9)]), [true, false]);
}

#[test]
fn strict_floats_need_no_nans_and_order_zeros_as_ieee() {
    let d = |lo: f64, hi: f64, nans: i64| F {
        values: Some(10),
        nulls: Some(0),
        nans: Some(nans),
        lower: dbl(lo),
        upper: dbl(hi),
        records: 10,
    };
    assert_eq!(
        strict(
            &pred("lt", 1, "double", "1.0"),
            &[d(0.0, 0.5, 0), d(0.0, 0.5, 1)]
        ),
        [true, false]
    );
    // -0.0 = 0.0: an upper bound of -0.0 does not prove x < 0.0
    assert_eq!(
        strict(&pred("lt", 1, "double", "0.0"), &[d(-1.0, -0.0, 0)]),
        [false]
    );
    assert_eq!(
        strict(&pred("eq", 1, "double", "0.0"), &[d(-0.0, 0.0, 0)]),
        [true]
    );
    let all_nan = F {
        values: Some(10),
        nulls: Some(0),
        nans: Some(10),
        records: 10,
        ..F::default()
    };
    assert_eq!(
        strict(&pred("is-nan", 1, "double", ""), &[all_nan, d(0.0, 1.0, 0)]),
        [true, false]
    );
    assert_eq!(
        strict(
            &pred("not-nan", 1, "double", ""),
            &[d(0.0, 1.0, 0), d(0.0, 1.0, 2)]
        ),
        [true, false]
    );
    // ints have no NaN counts and no NaN: not_nan is never claimed from them
    assert_eq!(
        strict(&pred("not-nan", 1, "int", ""), &[ints(1, 2)]),
        [false]
    );
}

#[test]
fn strict_strings_prefixes_and_truncated_bounds() {
    let st = |lo: &str, hi: &str| F {
        lower: s(lo),
        upper: s(hi),
        ..ints(0, 0)
    };
    let e = pred("starts-with", 1, "string", r#""ab""#);
    assert_eq!(
        strict(&e, &[st("aba", "abz"), st("aa", "abz"), st("ab", "ac")]),
        [true, false, false]
    );
    assert_eq!(
        strict(
            &pred("not-starts-with", 1, "string", r#""x""#),
            &[st("a", "b")]
        ),
        [false]
    );
    assert_eq!(
        strict(
            &pred("lt", 1, "string", r#""b""#),
            &[st("a", "az"), st("a", "b")]
        ),
        [true, false]
    );
    assert_eq!(
        strict(
            &pred("eq", 1, "string", r#""q""#),
            &[st("q", "q"), st("q", "r")]
        ),
        [true, false]
    );
}

#[test]
fn strict_and_or_combine_per_file() {
    let a = pred("gt-eq", 1, "int", "1");
    let b = pred("lt", 1, "int", "5");
    let and = format!(r#"{{"type": "and", "left": {a}, "right": {b}}}"#);
    let or = format!(
        r#"{{"type": "or", "left": {b}, "right": {}}}"#,
        pred("gt", 1, "int", "7")
    );
    let f = [ints(1, 4), ints(1, 6), ints(8, 9)];
    assert_eq!(strict(&and, &f), [true, false, false]);
    assert_eq!(strict(&or, &f), [true, false, true]);
    assert_eq!(strict("true", &f), [true; 3]);
    assert_eq!(strict("false", &f), [false; 3]);
}

#[test]
fn strict_uuids_prove_only_single_values() {
    let u = |b: u8| Some(vec![b; 16]);
    let f = F {
        lower: u(0x10),
        upper: u(0x10),
        ..ints(0, 0)
    };
    let g = F {
        lower: u(0x10),
        upper: u(0x20),
        ..ints(0, 0)
    };
    let lit = |b: u8| format!("\"{}\"", uuid_text(b));
    assert_eq!(
        strict(&pred("eq", 1, "uuid", &lit(0x10)), &[f.clone(), g.clone()]),
        [true, false]
    );
    assert_eq!(
        strict(&pred("lt", 1, "uuid", &lit(0x30)), &[f.clone(), g.clone()]),
        [false, false]
    );
    assert_eq!(
        strict(&pred("not-eq", 1, "uuid", &lit(0x30)), &[f, g]),
        [false, false]
    );
}

fn uuid_text(b: u8) -> String {
    crate::serde::json::fmt_uuid(&[b; 16])
}

/// A uuid of 16 bytes: `first`, then `rest`.
fn uuid_bytes(first: u8, rest: u8) -> Vec<u8> {
    let mut b = vec![rest; 16];
    b[0] = first;
    b
}

fn uuid_lit(first: u8, rest: u8) -> String {
    format!(
        "\"{}\"",
        crate::serde::json::fmt_uuid(&uuid_bytes(first, rest))
    )
}

#[test]
fn uuid_bounds_in_either_order_may_match() {
    // signed order (older Iceberg Java): lower 0x80.. (negative), upper 0x7f.. (positive);
    // unsigned order: lower 0x00.., upper 0xff..; a file holding 0x01.. only
    let signed = F {
        lower: Some(uuid_bytes(0x80, 0)),
        upper: Some(uuid_bytes(0x7f, 0xff)),
        ..ints(0, 0)
    };
    let unsigned = F {
        lower: Some(uuid_bytes(0x00, 0)),
        upper: Some(uuid_bytes(0xff, 0xff)),
        ..ints(0, 0)
    };
    let one = F {
        lower: Some(uuid_bytes(0x01, 0)),
        upper: Some(uuid_bytes(0x01, 0)),
        ..ints(0, 0)
    };
    let files = [signed, unsigned, one];
    let m = |op: &str, lit: &str| metrics(&pred(op, 1, "uuid", lit), &files);
    assert_eq!(m("eq", &uuid_lit(0x01, 0)), [true, true, true]);
    assert_eq!(m("eq", &uuid_lit(0xc0, 0)), [true, true, false]);
    assert_eq!(m("gt", &uuid_lit(0x7f, 0xfe)), [true, true, false]);
    assert_eq!(m("lt", &uuid_lit(0x01, 0)), [true, true, false]);
    let both = format!("[{}, {}]", uuid_lit(0x90, 0), uuid_lit(0x02, 0));
    assert_eq!(m("in", &both), [true, true, false]);
}

#[test]
fn uuid_summaries_in_signed_order_are_two_ranges() {
    let sum = |l: Vec<u8>, u: Vec<u8>| Some(vec![(false, None, Some(l), Some(u))]);
    let col = summaries(&[
        // signed order: every value from 0x80.. up and from 0x00.. to 0x7fff..
        sum(uuid_bytes(0x80, 0), uuid_bytes(0x7f, 0xff)),
        sum(uuid_bytes(0x01, 0), uuid_bytes(0x01, 0)),
        sum(uuid_bytes(0x90, 0), uuid_bytes(0xa0, 0)),
        // signed order: 0xc0.. up and up to 0x10..; nothing in between
        sum(uuid_bytes(0xc0, 0), uuid_bytes(0x10, 0)),
    ]);
    let m = |op: &str, lit: &str| {
        bits(&manifest_mask(&col, &parse(&pred(op, 1000, "uuid", lit)).unwrap(), &[1000]).unwrap())
    };
    assert_eq!(m("eq", &uuid_lit(0x01, 0)), [true, true, false, true]);
    assert_eq!(m("eq", &uuid_lit(0x95, 0)), [true, false, true, false]);
    assert_eq!(m("eq", &uuid_lit(0x50, 0)), [true, false, false, false]);
    assert_eq!(m("gt", &uuid_lit(0x7f, 0xff)), [true, false, true, true]);
    assert_eq!(m("gt", &uuid_lit(0xb0, 0)), [true, false, false, true]);
    assert_eq!(m("lt", &uuid_lit(0x00, 0x10)), [true, false, false, true]);
    assert_eq!(m("lt", &uuid_lit(0x01, 0)), [true, false, false, true]);
    let between = format!("[{}, {}]", uuid_lit(0x50, 0), uuid_lit(0x60, 0));
    assert_eq!(m("in", &between), [true, false, false, false]);
}
