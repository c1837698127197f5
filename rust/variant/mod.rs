//! Variant columns over Arrow arrays: the Parquet Variant binary format (`VariantEncoding.md`),
//! built on the arrow-rs `parquet-variant*` crates.
//!
//! icefloe stores a variant column as `struct<metadata: binary (not null), value: binary>`, the
//! unshredded Parquet form. Every entry point here returns that form: JSON text, any Arrow
//! array (cast value by value) and already-encoded structs, shredded ones (with `typed_value`)
//! included, are turned into it, with each row's bytes validated.

pub mod footer;

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, BinaryArray, StringArray, StructArray};
use arrow_schema::{DataType, Field, Fields};
use parquet_variant::Variant;
use parquet_variant_compute::{
    cast_to_variant, json_to_variant, unshred_variant, variant_to_json, VariantArray,
};

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
        unshred_variant(array).map_err(arrow_err)?
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

/// Checks that every non-null row holds well-formed variant bytes.
fn validate(array: &StructArray) -> Result<()> {
    let metadata = array.column(0).as_binary::<i32>();
    let value = array.column(1).as_binary::<i32>();
    for i in 0..array.len() {
        if array.is_valid(i) {
            Variant::try_new(metadata.value(i), value.value(i))
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
    let array = VariantArray::try_new(input.as_ref()).map_err(arrow_err)?;
    let out = stored(&array)?;
    validate(&out)?;
    Ok(out)
}

/// Parses JSON text (string, large string or string view), one document per row; null rows
/// stay null.
pub fn from_json(input: &ArrayRef) -> Result<StructArray> {
    let array = json_to_variant(input)
        .map_err(|e| Error::validation(format!("invalid JSON for a variant: {e}")))?;
    stored(&array)
}

/// Casts each value of any Arrow array to a variant (structs become objects, lists arrays,
/// maps with string keys objects); null rows stay null.
pub fn from_arrow(input: &ArrayRef) -> Result<StructArray> {
    let array = cast_to_variant(input.as_ref()).map_err(|e| {
        Error::validation(format!(
            "cannot encode {} values as variants: {e}",
            input.data_type()
        ))
    })?;
    stored(&array)
}

/// The JSON text of every row of an encoded variant column (shredded or not); null rows are
/// null.
pub fn to_json(input: &ArrayRef) -> Result<StringArray> {
    let stored: ArrayRef = Arc::new(normalize(input)?);
    let text = variant_to_json(&stored).map_err(arrow_err)?;
    if !text.iter().flatten().any(has_non_finite) {
        return Ok(text);
    }
    Ok(text
        .iter()
        .map(|v| v.map(quote_non_finite))
        .collect::<StringArray>())
}

fn has_non_finite(text: &str) -> bool {
    text.contains("NaN") || text.contains("inf")
}

/// `text` with the bare non-finite numbers the JSON writer gives (`NaN`, `inf`, `-inf`) as the
/// strings Jackson writes (`"NaN"`, `"Infinity"`, `"-Infinity"`): JSON has no such numbers.
/// Only tokens outside string literals change.
fn quote_non_finite(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = String::with_capacity(text.len() + 8);
    let (mut i, mut last, mut in_string) = (0, 0, false);
    while i < bytes.len() {
        let c = bytes[i];
        if in_string {
            match c {
                b'\\' => i += 2,
                b'"' => {
                    in_string = false;
                    i += 1
                }
                _ => i += 1,
            }
            continue;
        }
        let rest = &bytes[i..];
        let (len, quoted) = if rest.starts_with(b"NaN") {
            (3, "\"NaN\"")
        } else if rest.starts_with(b"-inf") {
            (4, "\"-Infinity\"")
        } else if rest.starts_with(b"inf") {
            (3, "\"Infinity\"")
        } else {
            in_string = c == b'"';
            i += 1;
            continue;
        };
        out.push_str(&text[last..i]);
        out.push_str(quoted);
        i += len;
        last = i;
    }
    out.push_str(&text[last..]);
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::builder::StringBuilder;

    #[test]
    fn non_finite_numbers_are_quoted_outside_strings() {
        let text = r#"{"a":NaN,"b":[inf,-inf,1.5e-7],"NaN inf":"-inf \"NaN\""}"#;
        assert_eq!(
            quote_non_finite(text),
            r#"{"a":"NaN","b":["Infinity","-Infinity",1.5e-7],"NaN inf":"-inf \"NaN\""}"#
        );
        assert_eq!(quote_non_finite("\"é\":NaN"), "\"é\":\"NaN\"");
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
    fn arrow_values_cast_to_variants() {
        let ints: ArrayRef = Arc::new(arrow_array::Int64Array::from(vec![Some(7), None]));
        let enc: ArrayRef = Arc::new(from_arrow(&ints).unwrap());
        let out = to_json(&enc).unwrap();
        assert_eq!(out.value(0), "7");
        assert!(out.is_null(1));
    }
}
