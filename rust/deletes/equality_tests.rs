//! Tests of the equality delete sets: fixed-width and row-encoded keys, promotions, nulls,
//! NaN and -0.0, against plain sets.

use std::sync::Arc;

use arrow_array::{Float32Array, Float64Array, Int32Array, Int64Array, StringArray};

use super::*;

fn batch(cols: Vec<(&str, ArrayRef)>) -> RecordBatch {
    RecordBatch::try_from_iter(cols).unwrap()
}

#[test]
fn promoted_single_column_with_nulls() {
    let mut set = EqualityDeleteSet::new();
    let del: ArrayRef = Arc::new(Int32Array::from(vec![Some(1), None, Some(7)]));
    set.add_batch(&batch(vec![("id", del)])).unwrap();
    let data: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), Some(2), None, Some(7)]));
    let m = set.keep_mask(&batch(vec![("id", data)])).unwrap();
    assert_eq!(m, BooleanArray::from(vec![false, true, false, false]));
}

#[test]
fn date_keys_match_timestamps_at_midnight_and_back() {
    use arrow_array::{Date32Array, TimestampMicrosecondArray, TimestampNanosecondArray};
    const DAY_US: i64 = 86_400_000_000;
    // date keys (a file written before date -> timestamp) against promoted data
    let mut set = EqualityDeleteSet::new();
    let days: ArrayRef = Arc::new(Date32Array::from(vec![Some(19_723), None]));
    let other: ArrayRef = Arc::new(Int64Array::from(vec![Some(5), Some(6)]));
    set.add_batch(&batch(vec![("d", days), ("k", other)]))
        .unwrap();
    let stamps: ArrayRef = Arc::new(TimestampMicrosecondArray::from(vec![
        Some(19_723 * DAY_US),
        Some(19_723 * DAY_US + 1),
        None,
        Some(19_723 * DAY_US),
        Some(i64::MIN + 7),
    ]));
    let k: ArrayRef = Arc::new(Int64Array::from(vec![5, 5, 6, 6, 5]));
    let m = set
        .keep_mask(&batch(vec![("d", stamps), ("k", k)]))
        .unwrap();
    assert_eq!(m, BooleanArray::from(vec![false, true, false, true, true]));
    // timestamp keys against dates (an old data file read as stored)
    let mut set = EqualityDeleteSet::new();
    let keys: ArrayRef = Arc::new(TimestampNanosecondArray::from(vec![
        19_723 * DAY_US * 1000,
        5,
    ]));
    set.add_batch(&batch(vec![("d", keys)])).unwrap();
    let dates: ArrayRef = Arc::new(Date32Array::from(vec![
        Some(19_723),
        Some(19_724),
        None,
        Some(i32::MAX),
    ]));
    let m = set.keep_mask(&batch(vec![("d", dates)])).unwrap();
    assert_eq!(m, BooleanArray::from(vec![false, true, true, true]));
    // other kinds still do not compare
    let strings: ArrayRef = Arc::new(StringArray::from(vec!["x"]));
    assert!(set.keep_mask(&batch(vec![("d", strings)])).is_err());
}

#[test]
fn dense_keys_with_null_rows_in_the_data() {
    // 1 and 7 make a dense set; null rows of the data are deleted only by a null key
    let data: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(7), Some(8)]));
    let sliced = data.slice(1, 3);
    for (keys, want, want_sliced) in [
        (
            vec![Some(1), Some(7)],
            [false, true, false, true],
            [true, false, true],
        ),
        (
            vec![Some(1), None],
            [false, false, true, true],
            [false, true, true],
        ),
    ] {
        let mut set = EqualityDeleteSet::new();
        let del: ArrayRef = Arc::new(Int64Array::from(keys));
        set.add_batch(&batch(vec![("id", del)])).unwrap();
        let m = set.keep_mask(&batch(vec![("id", data.clone())])).unwrap();
        assert_eq!(m, BooleanArray::from(want.to_vec()));
        let m = set.keep_mask(&batch(vec![("id", sliced.clone())])).unwrap();
        assert_eq!(m, BooleanArray::from(want_sliced.to_vec()));
    }
}

#[test]
fn timestamps_of_every_unit_and_64_bit_times_are_keys() {
    use arrow_array::{
        Time64NanosecondArray, TimestampMillisecondArray, TimestampNanosecondArray,
        TimestampSecondArray,
    };
    let cols: Vec<(ArrayRef, ArrayRef)> = vec![
        (
            Arc::new(TimestampNanosecondArray::from(vec![5])),
            Arc::new(TimestampNanosecondArray::from(vec![4, 5, 6])),
        ),
        (
            Arc::new(TimestampMillisecondArray::from(vec![5]).with_timezone("UTC")),
            Arc::new(TimestampMillisecondArray::from(vec![4, 5, 6]).with_timezone("UTC")),
        ),
        (
            Arc::new(TimestampSecondArray::from(vec![5])),
            Arc::new(TimestampSecondArray::from(vec![4, 5, 6])),
        ),
        (
            Arc::new(Time64NanosecondArray::from(vec![5])),
            Arc::new(Time64NanosecondArray::from(vec![4, 5, 6])),
        ),
    ];
    for (del, data) in cols {
        let mut set = EqualityDeleteSet::new();
        set.add_batch(&batch(vec![("t", del)])).unwrap();
        let m = set.keep_mask(&batch(vec![("t", data)])).unwrap();
        assert_eq!(m, BooleanArray::from(vec![true, false, true]));
    }
}

#[test]
fn multi_column_and_several_groups() {
    let mut set = EqualityDeleteSet::new();
    let a: ArrayRef = Arc::new(StringArray::from(vec![Some("x"), None]));
    let f: ArrayRef = Arc::new(Float32Array::from(vec![1.5, f32::NAN]));
    set.add_batch(&batch(vec![("name", a), ("f", f)])).unwrap();
    let id: ArrayRef = Arc::new(Int64Array::from(vec![10]));
    set.add_batch(&batch(vec![("id", id)])).unwrap();
    assert_eq!(set.len(), 3);
    let data = batch(vec![
        ("id", Arc::new(Int64Array::from(vec![1, 10, 2, 3, 4]))),
        (
            "name",
            Arc::new(StringArray::from(vec![
                Some("x"),
                Some("x"),
                None,
                Some("y"),
                None,
            ])),
        ),
        (
            "f",
            Arc::new(Float64Array::from(vec![1.5, 0.0, f64::NAN, 1.5, 2.0])),
        ),
    ]);
    let m = set.keep_mask(&data).unwrap();
    assert_eq!(m, BooleanArray::from(vec![false, false, false, true, true]));
    let wrong = batch(vec![
        ("id", Arc::new(StringArray::from(vec!["1"])) as ArrayRef),
        ("name", Arc::new(StringArray::from(vec!["x"]))),
        ("f", Arc::new(Float64Array::from(vec![1.0]))),
    ]);
    assert!(set.keep_mask(&wrong).is_err());
}

#[test]
fn dense_and_sparse_int_keys_agree_with_a_plain_set() {
    use std::collections::HashSet as StdSet;
    // Dense (a run of values), sparse (extremes force the hash set), and both signs.
    let cases: Vec<Vec<i64>> = vec![
        (-50..50).step_by(3).collect(),
        vec![i64::MIN, -1, 0, 1, i64::MAX],
        (0..5000).map(|i| i * 7919 - 20_000).collect(),
        vec![1 << 40, (1 << 40) + 5, 3],
    ];
    for keys in cases {
        let mut set = EqualityDeleteSet::new();
        let (a, b) = keys.split_at(keys.len() / 2);
        for part in [a, b] {
            let arr: ArrayRef = Arc::new(Int64Array::from(part.to_vec()));
            set.add_batch(&batch(vec![("id", arr)])).unwrap();
        }
        let oracle: StdSet<i64> = keys.iter().copied().collect();
        assert_eq!(set.len(), oracle.len());
        let mut probe: Vec<i64> = keys
            .iter()
            .flat_map(|&k| [k.wrapping_sub(1), k, k.wrapping_add(1)])
            .collect();
        probe.extend([i64::MIN, i64::MAX, 0, 64, 65, -64]);
        let data: ArrayRef = Arc::new(Int64Array::from(probe.clone()));
        let m = set.keep_mask(&batch(vec![("id", data)])).unwrap();
        for (i, v) in probe.iter().enumerate() {
            assert_eq!(m.value(i), !oracle.contains(v), "value {v}");
        }
    }
}

#[test]
fn fixed_width_column_sets_agree_with_a_plain_set() {
    use crate::deletes::compact::tests::Rng;
    use std::collections::HashSet as StdSet;
    // Two to five columns (five take the row encodings), small domains so that keys
    // repeat, nulls, NaN and -0.0 among the floats, int32 deletes against int64 data.
    let mut rng = Rng(29);
    for width in 2..=5 {
        let mut value =
            |rng: &mut Rng| -> Option<i64> { (!rng.chance(15)).then(|| (rng.next() % 4) as i64) };
        let floats = [0.0, -0.0, f64::NAN, 1.5];
        let rows = |rng: &mut Rng, n: usize, value: &mut dyn FnMut(&mut Rng) -> Option<i64>| {
            (0..n)
                .map(|_| (0..width).map(|_| value(rng)).collect::<Vec<_>>())
                .collect::<Vec<_>>()
        };
        let del = rows(&mut rng, 40, &mut value);
        let data = rows(&mut rng, 400, &mut value);
        let column = |rows: &[Vec<Option<i64>>], j: usize, narrow: bool| -> ArrayRef {
            let vals = rows.iter().map(|r| r[j]);
            if j == 1 {
                Arc::new(Float64Array::from_iter(
                    vals.map(|v| v.map(|v| floats[v as usize])),
                ))
            } else if narrow {
                Arc::new(Int32Array::from_iter(vals.map(|v| v.map(|v| v as i32))))
            } else {
                Arc::new(Int64Array::from_iter(vals))
            }
        };
        let names: Vec<String> = (0..width).map(|j| format!("c{j}")).collect();
        let to_batch = |rows: &[Vec<Option<i64>>], narrow: bool| {
            RecordBatch::try_from_iter(
                (0..width).map(|j| (names[j].clone(), column(rows, j, narrow))),
            )
            .unwrap()
        };
        let mut set = EqualityDeleteSet::new();
        let (a, b) = del.split_at(20);
        set.add_batch(&to_batch(a, true)).unwrap();
        set.add_batch(&to_batch(b, true)).unwrap();
        // Each float stands for one class (-0.0 is its own value, NaN equals NaN).
        let oracle: StdSet<Vec<Option<i64>>> = del.iter().cloned().collect();
        assert_eq!(set.len(), oracle.len(), "width {width}");
        let m = set.keep_mask(&to_batch(&data, false)).unwrap();
        for (i, r) in data.iter().enumerate() {
            assert_eq!(m.value(i), !oracle.contains(r), "width {width} row {r:?}");
        }
    }
}
