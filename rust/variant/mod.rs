//! Variant columns over Arrow arrays: the Parquet Variant binary format (`VariantEncoding.md`),
//! built on the arrow-rs `parquet-variant*` crates.
//!
//! icefloe stores a variant column as `struct<metadata: binary (not null), value: binary>`, the
//! unshredded Parquet form. Every entry point here returns that form: JSON text, any Arrow
//! array (cast value by value) and already-encoded structs, shredded ones (with `typed_value`)
//! included, are turned into it, with each row's bytes validated.

mod encode;
pub mod footer;
mod from_arrow;
pub mod walk;

use std::sync::Arc;

use arrow_array::builder::{BinaryBuilder, StringBuilder};
use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, StringArray, StructArray};
use arrow_schema::{DataType, Field, Fields};
use parquet_variant_compute::{unshred_variant, VariantArray};

use crate::quiet_panic::{catch_quietly, panic_text};
use crate::{Error, Result};

/// The Arrow fields of the stored form: `metadata` required, `value` optional (null only where
/// the whole row is null).
pub fn storage_fields() -> Fields {
    Fields::from(vec![
        Field::new("metadata", DataType::Binary, false),
        Field::new("value", DataType::Binary, true),
    ])
}

fn arrow_err(e: arrow_schema::ArrowError) -> Error {
    Error::validation(e.to_string())
}

/// A binary-like column as a plain `BinaryArray` (views and large offsets copied out).
fn to_binary(a: &ArrayRef) -> Result<BinaryArray> {
    Ok(match a.data_type() {
        DataType::Binary => a.as_binary::<i32>().clone(),
        DataType::LargeBinary => a.as_binary::<i64>().iter().collect(),
        DataType::BinaryView => a.as_binary_view().iter().collect(),
        other => {
            return Err(Error::validation(format!(
                "a variant column must be binary, found {other}"
            )))
        }
    })
}

/// The stored form of a `VariantArray` (which may be shredded or hold binary views).
fn stored(array: &VariantArray) -> Result<StructArray> {
    let array = if array.typed_value_column().is_some() {
        // the unshredding panics on some malformed input (an object field its metadata
        // dictionary lacks): bad input, not a bug of ours
        catch_quietly(std::panic::AssertUnwindSafe(|| unshred_variant(array)))
            .map_err(|payload| {
                let why = panic_text(payload.as_ref()).unwrap_or("malformed values");
                Error::validation(format!("malformed shredded variant: {why}"))
            })?
            .map_err(arrow_err)?
    } else {
        array.clone()
    };
    let metadata = to_binary(array.metadata_column())?;
    let value = to_binary(array.value_column())?;
    let nulls = array.nulls().cloned();
    if metadata.null_count() > 0 || value.null_count() > 0 {
        for i in 0..array.len() {
            if array.is_valid(i) && (metadata.is_null(i) || value.is_null(i)) {
                return Err(Error::validation(format!(
                    "variant row {i} is not null but has no {}",
                    if metadata.is_null(i) {
                        "metadata"
                    } else {
                        "value"
                    }
                )));
            }
        }
    }
    // `metadata` is a required field: null rows keep whatever bytes their slot has, without a
    // validity bit (Parquet writers refuse nulls in a required child even under a null parent).
    let metadata = BinaryArray::new(metadata.offsets().clone(), metadata.values().clone(), None);
    StructArray::try_new(
        storage_fields(),
        vec![Arc::new(metadata) as ArrayRef, Arc::new(value) as ArrayRef],
        nulls,
    )
    .map_err(arrow_err)
}

/// Checks that every non-null row holds well-formed variant bytes, at any nesting depth (the
/// Variant spec sets no limit; see [`walk`]).
fn validate(array: &StructArray) -> Result<()> {
    let metadata = array.column(0).as_binary::<i32>();
    let value = array.column(1).as_binary::<i32>();
    for i in 0..array.len() {
        if array.is_valid(i) {
            walk::validate(metadata.value(i), value.value(i))
                .map_err(|e| Error::validation(format!("variant row {i} is malformed: {e}")))?;
        }
    }
    Ok(())
}

/// An encoded variant column (`struct<metadata, value[, typed_value]>`, any binary flavour)
/// in the stored form: shredded rows are merged back into `value` and every row is validated.
pub fn normalize(input: &ArrayRef) -> Result<StructArray> {
    let DataType::Struct(fields) = input.data_type() else {
        return Err(Error::validation(format!(
            "an encoded variant column must be a struct<metadata, value>, found {}",
            input.data_type()
        )));
    };
    let names: Vec<&str> = fields.iter().map(|f| f.name().as_str()).collect();
    let known = ["metadata", "value", "typed_value"];
    if let Some(bad) = names.iter().find(|n| !known.contains(n)) {
        return Err(Error::validation(format!(
            "an encoded variant struct has the field {bad:?}; expected metadata, value and \
             optionally typed_value"
        )));
    }
    let input = clear_false_sorted_flags(input.as_struct())?;
    let array = VariantArray::try_new(&input).map_err(arrow_err)?;
    let out = stored(&array)?;
    validate(&out)?;
    Ok(out)
}

/// Bit 4 of a metadata header: the dictionary is sorted and unique.
const SORTED_STRINGS: u8 = 0x10;

/// Whether `metadata` says its dictionary is sorted and unique when it is not (DuckDB 1.5
/// writes such metadata). Malformed metadata is left for the full validation to name.
fn falsely_sorted(metadata: &[u8]) -> bool {
    let Some(&header) = metadata.first() else {
        return false;
    };
    if header & SORTED_STRINGS == 0 {
        return false;
    }
    let width = usize::from((header >> 6) & 0x03) + 1;
    let read = |at: usize| -> Option<usize> {
        let bytes = metadata.get(at..at.checked_add(width)?)?;
        Some(
            bytes
                .iter()
                .rev()
                .fold(0usize, |acc, &b| (acc << 8) | usize::from(b)),
        )
    };
    let Some(count) = read(1) else {
        return false;
    };
    let offsets = 1 + width;
    let Some(strings) = count
        .checked_add(1)
        .and_then(|n| n.checked_mul(width))
        .and_then(|n| n.checked_add(offsets))
    else {
        return false;
    };
    let mut previous: Option<&[u8]> = None;
    for i in 0..count {
        let (Some(start), Some(end)) = (read(offsets + i * width), read(offsets + (i + 1) * width))
        else {
            return false;
        };
        let Some(name) = strings
            .checked_add(start)
            .zip(strings.checked_add(end))
            .and_then(|(a, z)| metadata.get(a..z))
        else {
            return false;
        };
        if previous.is_some_and(|p| p >= name) {
            return true; // UTF-8 bytes order as their code points do
        }
        previous = Some(name);
    }
    false
}

/// `input` with the sorted flag cleared on metadata whose dictionary is not sorted and unique:
/// the flag only speeds up lookups by name, and the values decode the same without it. Other
/// engines read such values, so refusing the file would strand them. Rows sharing one
/// metadata value (the usual case) are checked once.
fn clear_false_sorted_flags(input: &StructArray) -> Result<StructArray> {
    let Some(idx) = input.fields().iter().position(|f| f.name() == "metadata") else {
        return Ok(input.clone());
    };
    let column = input.column(idx);
    let Ok(metadata) = to_binary(column) else {
        return Ok(input.clone()); // the full validation names the wrong type
    };
    let mut last: Option<(&[u8], bool)> = None;
    let mut any = false;
    let mut bad = vec![false; metadata.len()];
    for (i, flag) in bad.iter_mut().enumerate() {
        if metadata.is_null(i) {
            continue;
        }
        let value = metadata.value(i);
        *flag = match last {
            Some((seen, verdict)) if seen == value => verdict,
            _ => falsely_sorted(value),
        };
        last = Some((value, *flag));
        any |= *flag;
    }
    if !any {
        return Ok(input.clone());
    }
    let fixed: BinaryArray = metadata
        .iter()
        .zip(&bad)
        .map(|(v, &clear)| {
            v.map(|b| {
                let mut out = b.to_vec();
                if clear {
                    out[0] &= !SORTED_STRINGS;
                }
                out
            })
        })
        .collect();
    let mut columns = input.columns().to_vec();
    columns[idx] = Arc::new(fixed);
    let fields: Fields = input
        .fields()
        .iter()
        .enumerate()
        .map(|(i, f)| {
            if i == idx {
                Arc::new(f.as_ref().clone().with_data_type(DataType::Binary))
            } else {
                f.clone()
            }
        })
        .collect();
    StructArray::try_new(fields, columns, input.nulls().cloned()).map_err(arrow_err)
}

/// Parses JSON text (string, large string or string view), one document per row; null rows
/// stay null. Numbers keep every digit, as Spark's `parse_json` stores them (integers beyond
/// int64 and numbers with a fraction as decimals; see [`encode`]), and documents nest to any
/// depth.
pub fn from_json(input: &ArrayRef) -> Result<StructArray> {
    from_json_at(input, 0)
}

/// [`from_json`] with rows numbered from `first_row` in errors (a chunk of a longer column):
/// each document parsed by [`encode::json_to_variant`].
pub fn from_json_at(input: &ArrayRef, first_row: usize) -> Result<StructArray> {
    let text: StringArray = match input.data_type() {
        DataType::Utf8 => input.as_string::<i32>().clone(),
        DataType::LargeUtf8 => input.as_string::<i64>().iter().collect(),
        DataType::Utf8View => input.as_string_view().iter().collect(),
        other => {
            return Err(Error::validation(format!(
                "invalid JSON for a variant: expected a string array, found {other}"
            )))
        }
    };
    let mut metadata = BinaryBuilder::new();
    let mut value = BinaryBuilder::new();
    for (i, row) in text.iter().enumerate() {
        match row {
            None => {
                metadata.append_value(EMPTY_METADATA);
                value.append_null();
            }
            Some(doc) => {
                let (m, v) = encode::json_to_variant(doc).map_err(|e| {
                    Error::validation(format!(
                        "invalid JSON for a variant in row {}: {e}",
                        first_row + i
                    ))
                })?;
                metadata.append_value(m);
                value.append_value(v);
            }
        }
    }
    let out = StructArray::try_new(
        storage_fields(),
        vec![
            Arc::new(metadata.finish()) as ArrayRef,
            Arc::new(value.finish()) as ArrayRef,
        ],
        text.nulls().cloned(),
    )
    .map_err(arrow_err)?;
    // The encoder's output is checked as encoded input is: a value no reader could decode is
    // never written (a bug of ours here is an error, not a file Spark and Java cannot read).
    validate(&out)?;
    Ok(out)
}

/// Version-1 metadata with an empty dictionary (the metadata of null rows).
const EMPTY_METADATA: &[u8] = &[0x01, 0x00, 0x00];

/// Casts each value of any Arrow array to a variant (structs become objects, lists arrays,
/// maps objects keyed by their keys as text; a null field, element or map value is a variant
/// null, an `arrow.uuid` value a variant uuid); null rows stay null.
pub fn from_arrow(input: &ArrayRef) -> Result<StructArray> {
    stored(&from_arrow::arrow_to_variants(input)?)
}

/// The JSON text of every row of an encoded variant column (shredded or not); null rows are
/// null. Non-finite floats are the strings Jackson writes (`"NaN"`, `"Infinity"`,
/// `"-Infinity"`): JSON has no such numbers.
pub fn to_json(input: &ArrayRef) -> Result<StringArray> {
    let stored = normalize(input)?;
    let metadata = stored.column(0).as_binary::<i32>();
    let value = stored.column(1).as_binary::<i32>();
    let mut out = StringBuilder::with_capacity(stored.len(), stored.len() * 64);
    let mut text = String::new();
    for i in 0..stored.len() {
        if stored.is_null(i) {
            out.append_null();
            continue;
        }
        text.clear();
        walk::write_json(metadata.value(i), value.value(i), &mut text)
            .map_err(|e| Error::validation(format!("variant row {i} is malformed: {e}")))?;
        out.append_value(&text);
    }
    Ok(out.finish())
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet_variant::{Variant, VariantBuilder};
    use parquet_variant_compute::variant_to_json;

    fn one(metadata: &[u8], value: &[u8]) -> ArrayRef {
        let metadata: ArrayRef = Arc::new(BinaryArray::from_vec(vec![metadata]));
        let value: ArrayRef = Arc::new(BinaryArray::from_vec(vec![value]));
        Arc::new(StructArray::try_new(storage_fields(), vec![metadata, value], None).unwrap())
    }

    /// `depth` arrays (4-byte offsets, one element) around the int8 1.
    fn nested_arrays(depth: usize) -> Vec<u8> {
        let mut v = Vec::with_capacity(depth * 10 + 2);
        for level in 0..depth {
            let child = (depth - level - 1) * 10 + 2;
            v.extend_from_slice(&[0x0f, 0x01, 0, 0, 0, 0]);
            v.extend_from_slice(&(child as u32).to_le_bytes());
        }
        v.extend_from_slice(&[0x0c, 0x01]);
        v
    }

    #[test]
    fn non_finite_numbers_are_quoted_outside_strings() {
        let mut b = VariantBuilder::new();
        let mut o = b.new_object();
        o.insert("a", f64::NAN);
        let mut l = o.new_list("b");
        l.append_value(f64::INFINITY);
        l.append_value(f32::NEG_INFINITY);
        l.append_value(1.5e-7);
        l.finish();
        o.insert("NaN inf", "-inf \"NaN\"");
        o.finish();
        let (m, v) = b.finish();
        let out = to_json(&one(&m, &v)).unwrap();
        assert_eq!(
            out.value(0),
            r#"{"NaN inf":"-inf \"NaN\"","a":"NaN","b":["Infinity","-Infinity",1.5e-7]}"#
        );
    }

    fn json(rows: &[Option<&str>]) -> ArrayRef {
        let mut b = StringBuilder::new();
        for r in rows {
            b.append_option(*r);
        }
        Arc::new(b.finish())
    }

    #[test]
    fn json_round_trip_keeps_nulls() {
        let input = json(&[Some(r#"{"a":1,"b":[true,null,"x"]}"#), None, Some("2.5")]);
        let enc: ArrayRef = Arc::new(from_json(&input).unwrap());
        assert_eq!(enc.null_count(), 1);
        let out = to_json(&enc).unwrap();
        assert_eq!(out.value(0), r#"{"a":1,"b":[true,null,"x"]}"#);
        assert!(out.is_null(1));
        assert_eq!(out.value(2), "2.5");
    }

    #[test]
    fn bad_json_is_a_validation_error() {
        let err = from_json(&json(&[Some("{not json")])).unwrap_err();
        assert!(matches!(err, Error::Validation(_)), "{err:?}");
    }

    #[test]
    fn malformed_bytes_are_refused() {
        let metadata: ArrayRef = Arc::new(BinaryArray::from_vec(vec![&[1u8, 0, 0][..]]));
        let value: ArrayRef = Arc::new(BinaryArray::from_vec(vec![&[0xffu8, 0xff][..]]));
        let s: ArrayRef =
            Arc::new(StructArray::try_new(storage_fields(), vec![metadata, value], None).unwrap());
        assert!(matches!(normalize(&s), Err(Error::Validation(_))));
    }

    #[test]
    fn metadata_falsely_marked_sorted_is_read() {
        // DuckDB 1.5 sets the sorted flag over the dictionary ["x", "w"]; the object
        // {"w": 2, "x": 1} lists its fields by name (ids 1, 0)
        let metadata: ArrayRef = Arc::new(BinaryArray::from_vec(vec![
            &[0x11u8, 2, 0, 1, 2, b'x', b'w'][..],
        ]));
        let object = [0x02u8, 2, 1, 0, 0, 2, 4, 0x0c, 2, 0x0c, 1];
        let value: ArrayRef = Arc::new(BinaryArray::from_vec(vec![&object[..]]));
        let s: ArrayRef =
            Arc::new(StructArray::try_new(storage_fields(), vec![metadata, value], None).unwrap());
        let out: ArrayRef = Arc::new(normalize(&s).unwrap());
        let stored = out
            .as_struct()
            .column(0)
            .as_binary::<i32>()
            .value(0)
            .to_vec();
        assert_eq!(stored, [0x01u8, 2, 0, 1, 2, b'x', b'w']); // the flag cleared
        assert_eq!(to_json(&out).unwrap().value(0), r#"{"w":2,"x":1}"#);
        // a dictionary that is sorted keeps its flag; one with a repeat loses it
        assert!(!falsely_sorted(&[0x11u8, 2, 0, 1, 2, b'a', b'b']));
        assert!(falsely_sorted(&[0x11u8, 2, 0, 1, 2, b'a', b'a']));
        assert!(!falsely_sorted(&[0x01u8, 2, 0, 1, 2, b'x', b'w']));
        assert!(!falsely_sorted(&[0x11u8, 200, 0]));
    }

    #[test]
    fn arrow_values_cast_to_variants() {
        let ints: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![Some(7), None]));
        let enc: ArrayRef = Arc::new(from_arrow(&ints).unwrap());
        let out = to_json(&enc).unwrap();
        assert_eq!(out.value(0), "7");
        assert!(out.is_null(1));
    }

    #[test]
    fn deep_values_validate_without_a_depth_limit() {
        const EMPTY: &[u8] = &[1, 0, 0];
        for depth in [0, 1, 128, 129, 300, 100_000] {
            let value = nested_arrays(depth);
            walk::validate(EMPTY, &value).unwrap();
            let out = to_json(&one(EMPTY, &value)).unwrap();
            let expected = format!("{}1{}", "[".repeat(depth), "]".repeat(depth));
            assert_eq!(out.value(0), expected);
        }
        // the crate itself stops at 128 levels
        assert!(Variant::try_new(EMPTY, &nested_arrays(129)).is_err());
        // truncated, and with a bad offset, at depth: still malformed
        let value = nested_arrays(1000);
        for bad in [&value[..value.len() - 1], &value[..5]] {
            let err = normalize(&one(EMPTY, bad)).unwrap_err();
            assert!(err.to_string().contains("malformed"), "{err}");
        }
        let mut bad = value.clone();
        bad[500 * 10 + 6] = 0xff; // an end offset of the array 500 levels down
        assert!(walk::validate(EMPTY, &bad).is_err());
    }

    #[test]
    fn deep_objects_and_bad_field_ids() {
        // {"k": {"k": ... 1 ...}} 1000 deep: metadata ["k"], objects with 1-byte ids/offsets
        // while small, then 4-byte offsets
        let metadata = [0x11u8, 1, 0, 1, b'k'];
        let mut v = vec![0x0c, 0x01];
        for _ in 0..1000 {
            let mut outer = vec![0x02 | (0x03 << 2), 1, 0];
            outer.extend_from_slice(&0u32.to_le_bytes());
            outer.extend_from_slice(&(v.len() as u32).to_le_bytes());
            outer.extend_from_slice(&v);
            v = outer;
        }
        walk::validate(&metadata, &v).unwrap();
        let mut text = String::new();
        walk::write_json(&metadata, &v, &mut text).unwrap();
        assert_eq!(
            text,
            format!("{}1{}", "{\"k\":".repeat(1000), "}".repeat(1000))
        );
        let mut bad = v.clone();
        bad[2] = 1; // field id 1: not in the one-name dictionary
        let err = walk::validate(&metadata, &bad).unwrap_err();
        assert!(err.0.contains("field id"), "{err}");
    }

    #[test]
    fn deep_json_parses_beyond_serde_json_limit() {
        for depth in [129, 300, 5000] {
            let doc = format!(
                "{}{{\"a\":[1,{{\"b\":null}}]}}{}",
                "[{\"x\":".repeat(depth / 2),
                "}]".repeat(depth / 2)
            );
            let enc: ArrayRef = Arc::new(from_json(&json(&[Some(&doc), None])).unwrap());
            assert_eq!(enc.null_count(), 1);
            let out = to_json(&enc).unwrap();
            assert_eq!(out.value(0), doc);
            assert!(out.is_null(1));
        }
        let deep_bad = format!("{}1{}", "[".repeat(200), "]".repeat(199));
        let err = from_json(&json(&[Some(&deep_bad)])).unwrap_err();
        assert!(err.to_string().contains("JSON"), "{err}");
    }

    #[test]
    fn json_numbers_keep_every_digit_as_spark_stores_them() {
        // (document, its JSON text back): integers beyond int64 and numbers with a fraction
        // are decimals (all their digits), exponents doubles
        let cases = [
            ("18446744073709551615", "18446744073709551615"),
            ("-98765432109876543210", "-98765432109876543210"),
            ("1.23456789012345678", "1.23456789012345678"),
            ("[1.50, -0.001, 0.0, -0]", "[1.5,-0.001,0,0]"),
            (
                "123456789012345678901234567890123456789",
                "1.2345678901234568e+38",
            ),
            ("1e300", "1e+300"),
            ("1E400", "\"Infinity\""),
        ];
        for (doc, text) in cases {
            let enc: ArrayRef = Arc::new(from_json(&json(&[Some(doc)])).unwrap());
            assert_eq!(to_json(&enc).unwrap().value(0), text, "{doc}");
        }
        // a decimal of the smallest width whose precision holds both the digits and the scale:
        // 4, 8 or 16 bytes (type ids 8, 9, 10), as Spark's parse_json picks it
        for (doc, type_id) in [
            ("1.5", 8u8),
            ("0.000000001", 8),
            ("1234567890.5", 9),
            ("0.0000000001", 9),
            ("0.0000000000", 9),
            ("-0.000000000000000001", 9),
            ("12345678901234567890.5", 10),
            ("0.0000000000000000001", 10),
            ("0.00000000000000000000000000000000000001", 10),
            ("0.000000000000000000000000000000000000001", 7), // scale 39: a double
        ] {
            let enc = from_json(&json(&[Some(doc)])).unwrap();
            let value = enc.column(1).as_binary::<i32>().value(0);
            assert_eq!(value[0] >> 2, type_id, "{doc}");
        }
    }

    #[test]
    fn deep_json_encoder_agrees_with_the_crate() {
        // documents whose numbers the crate keeps exactly (ints, doubles with exponents)
        let docs = [
            "null",
            "true",
            " [false , 0, 127, -128, 128, 32767, -32769, 2147483648, 9223372036854775807] ",
            "[-2.25e-7, 1e300, 1E-5]",
            r#""short""#,
            r#""a string longer than sixty-three bytes, so a long string, with é and \u00e9 \n""#,
            r#"{"b": 1, "a": [], "c": {}, "\ud83d\ude00": "x"}"#,
            r#"[{"z": {"y": [1, {"x": "deep"}]}, "a": null}, [[[]]], {}]"#,
        ];
        for doc in docs {
            let input = json(&[Some(doc)]);
            let ours: ArrayRef = Arc::new(from_json_at(&input, 0).unwrap());
            let crate_json = parquet_variant_compute::json_to_variant(&input).unwrap();
            let theirs: ArrayRef = Arc::new(stored(&crate_json).unwrap());
            normalize(&ours).unwrap();
            assert_eq!(
                to_json(&ours).unwrap().value(0),
                to_json(&theirs).unwrap().value(0),
                "{doc}"
            );
        }
        for bad in [
            "",
            "[1,]",
            "{\"a\" 1}",
            "[1] 2",
            "01",
            "\"\\",
            "nul",
            "{1: 2}",
            "[\"\u{1}\"]",
            r#"{"a": 1, "a": 2}"#,
            r#"[{"b": {"a": 1, "c": 0, "a": 1}}]"#,
        ] {
            assert!(from_json_at(&json(&[Some(bad)]), 0).is_err(), "{bad:?}");
        }
        let err = from_json_at(&json(&[None, Some(r#"{"k\"": 1, "k\"": 2}"#)]), 7).unwrap_err();
        assert!(
            err.to_string()
                .contains(r#"row 8: duplicate object key "k\"""#),
            "{err}"
        );
    }

    #[test]
    fn json_text_agrees_with_the_crate_for_every_leaf_type() {
        use chrono::{NaiveDate, NaiveTime, TimeZone, Utc};
        use parquet_variant::{VariantDecimal16, VariantDecimal4, VariantDecimal8};
        let mut b = VariantBuilder::new();
        let mut l = b.new_list();
        let date = NaiveDate::from_ymd_opt(2024, 2, 29).unwrap();
        let ts = date.and_hms_micro_opt(1, 2, 3, 456_789).unwrap();
        let values: Vec<Variant<'static, 'static>> = vec![
            Variant::Null,
            true.into(),
            false.into(),
            Variant::Int8(-5),
            Variant::Int16(300),
            Variant::Int32(-70_000),
            Variant::Int64(1 << 40),
            Variant::Float(1.25),
            Variant::Float(0.1),
            Variant::Double(1e-7),
            Variant::Double(123456789.125),
            VariantDecimal4::try_new(12345, 2).unwrap().into(),
            VariantDecimal8::try_new(-1, 10).unwrap().into(),
            VariantDecimal16::try_new(10i128.pow(30), 3).unwrap().into(),
            date.into(),
            Variant::TimestampMicros(Utc.from_utc_datetime(&ts)),
            Variant::TimestampNanos(Utc.from_utc_datetime(&ts)),
            Variant::TimestampNtzMicros(ts),
            Variant::TimestampNtzNanos(ts),
            Variant::Time(NaiveTime::from_hms_micro_opt(23, 59, 1, 120_000).unwrap()),
            Variant::Time(NaiveTime::from_hms_opt(0, 0, 0).unwrap()),
            Variant::Binary(b"\x00\xffab"),
            Variant::Binary(b"abc"),
            Variant::Binary(b"abcde"),
            Variant::Binary(b""),
            "\"quoted\"\u{1}\u{2028}é".into(),
            Variant::from(&*"x".repeat(100).leak()),
            uuid::Uuid::from_u128(0x0123_4567_89ab_cdef_0123_4567_89ab_cdef).into(),
        ];
        for v in values {
            l.append_value(v);
        }
        let mut o = l.new_object();
        o.insert("k\"ey", 1i8);
        o.insert("a", "b");
        o.finish();
        l.finish();
        let (m, v) = b.finish();
        let input = one(&m, &v);
        let crate_text = variant_to_json(&input).unwrap();
        assert_eq!(to_json(&input).unwrap().value(0), crate_text.value(0));
    }
}
