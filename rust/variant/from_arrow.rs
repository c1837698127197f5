//! Arrow arrays to variants, value by value, with the rules Python values follow: a null struct
//! field, list element or map value is a variant null (the key stays in the object), and
//! `arrow.uuid` values at any depth are variant uuids. Primitive leaves are cast by arrow-rs's
//! `cast_to_variant`; structs, lists and maps are assembled here around them (arrow-rs leaves
//! null struct fields out and sees a nested uuid as 16 bytes of binary).

use std::collections::HashSet;

use arrow_array::cast::AsArray;
use arrow_array::{Array, ArrayRef, FixedSizeBinaryArray, OffsetSizeTrait, StringArray};
use arrow_schema::{ArrowError, DataType, Field};
use parquet_variant::{ObjectFieldBuilder, Variant, VariantBuilderExt};
use parquet_variant_compute::{cast_to_variant, VariantArray, VariantArrayBuilder};

use crate::{Error, Result};

/// The Arrow extension name of uuid columns.
const UUID_EXTENSION: &str = "arrow.uuid";

/// How one column's values become variants.
enum Node<'a> {
    /// A primitive column (or one this module leaves to arrow-rs), cast whole.
    Leaf(VariantArray),
    /// `arrow.uuid` values (16-byte fixed binary).
    Uuid(&'a FixedSizeBinaryArray),
    /// Objects: the struct's validity and each field's name and values.
    Struct(&'a dyn Array, Vec<(&'a str, Node<'a>)>),
    /// Arrays: each row's element range (`None`: a null row) and the elements.
    List(Vec<Option<(usize, usize)>>, Box<Node<'a>>),
    /// Objects keyed by the map's keys as text: each row's entry range, the keys, the values.
    Map(Vec<Option<(usize, usize)>>, StringArray, Box<Node<'a>>),
}

fn is_uuid(field: &Field) -> bool {
    field.extension_type_name() == Some(UUID_EXTENSION)
        && matches!(field.data_type(), DataType::FixedSizeBinary(16))
}

fn ranges<O: OffsetSizeTrait>(offsets: &[O], array: &dyn Array) -> Vec<Option<(usize, usize)>> {
    (0..array.len())
        .map(|i| {
            array
                .is_valid(i)
                .then(|| (offsets[i].as_usize(), offsets[i + 1].as_usize()))
        })
        .collect()
}

fn cast_err(e: ArrowError, array: &dyn Array) -> Error {
    Error::validation(format!(
        "cannot encode {} values as variants: {e}",
        array.data_type()
    ))
}

/// The node of `array`; `uuid`: the field holding it is an `arrow.uuid` field.
fn node<'a>(array: &'a ArrayRef, uuid: bool) -> Result<Node<'a>> {
    Ok(match array.data_type() {
        DataType::FixedSizeBinary(16) if uuid => Node::Uuid(array.as_fixed_size_binary()),
        DataType::Struct(fields) => {
            let s = array.as_struct();
            let mut seen = HashSet::new();
            let mut children = Vec::with_capacity(fields.len());
            for (f, column) in fields.iter().zip(s.columns()) {
                if !seen.insert(f.name().as_str()) {
                    return Err(Error::validation(format!(
                        "cannot encode a struct with two fields named {:?} as a variant object",
                        f.name()
                    )));
                }
                children.push((f.name().as_str(), node(column, is_uuid(f))?));
            }
            Node::Struct(array.as_ref(), children)
        }
        DataType::List(f) => {
            let l = array.as_list::<i32>();
            Node::List(
                ranges(l.value_offsets(), l),
                Box::new(node(l.values(), is_uuid(f))?),
            )
        }
        DataType::LargeList(f) => {
            let l = array.as_list::<i64>();
            Node::List(
                ranges(l.value_offsets(), l),
                Box::new(node(l.values(), is_uuid(f))?),
            )
        }
        DataType::FixedSizeList(f, _) => {
            let l = array.as_fixed_size_list();
            let n = l.value_length() as usize;
            let rows = (0..l.len())
                .map(|i| l.is_valid(i).then(|| (i * n, (i + 1) * n)))
                .collect();
            Node::List(rows, Box::new(node(l.values(), is_uuid(f))?))
        }
        DataType::Map(entries, _) => {
            let m = array.as_map();
            let value_field = match entries.data_type() {
                DataType::Struct(f) if f.len() == 2 => f[1].clone(),
                other => {
                    return Err(Error::validation(format!(
                        "cannot encode a map with entries {other} as variants"
                    )))
                }
            };
            let keys = arrow_cast::cast(m.keys(), &DataType::Utf8)
                .map_err(|e| cast_err(e, m.keys().as_ref()))?;
            Node::Map(
                ranges(m.value_offsets(), m),
                keys.as_string::<i32>().clone(),
                Box::new(node(m.values(), is_uuid(&value_field))?),
            )
        }
        _ => Node::Leaf(cast_to_variant(array.as_ref()).map_err(|e| cast_err(e, array.as_ref()))?),
    })
}

/// Appends row `row` of `node` to `b`; a null is a variant null.
fn append<B: VariantBuilderExt>(node: &Node<'_>, b: &mut B, row: usize) -> Result<()> {
    match node {
        Node::Leaf(v) if v.is_null(row) => b.append_value(Variant::Null),
        Node::Leaf(v) => b.append_value(v.value(row)),
        Node::Uuid(a) if a.is_null(row) => b.append_value(Variant::Null),
        Node::Uuid(a) => {
            let bytes: [u8; 16] = a.value(row).try_into().expect("16-byte uuid values");
            b.append_value(uuid::Uuid::from_bytes(bytes));
        }
        Node::Struct(s, _) if s.is_null(row) => b.append_value(Variant::Null),
        Node::Struct(_, fields) => {
            let mut obj = b.try_new_object().map_err(arrow_err)?;
            for (name, child) in fields {
                append(child, &mut ObjectFieldBuilder::new(name, &mut obj), row)?;
            }
            obj.finish();
        }
        Node::List(rows, _) | Node::Map(rows, _, _) if rows[row].is_none() => {
            b.append_value(Variant::Null)
        }
        Node::List(rows, elements) => {
            let (start, end) = rows[row].expect("a valid row");
            let mut list = b.try_new_list().map_err(arrow_err)?;
            for i in start..end {
                append(elements, &mut list, i)?;
            }
            list.finish();
        }
        Node::Map(rows, keys, values) => {
            let (start, end) = rows[row].expect("a valid row");
            let mut names = HashSet::with_capacity(end - start);
            let mut obj = b.try_new_object().map_err(arrow_err)?;
            for i in start..end {
                let key = keys.value(i);
                if !names.insert(key) {
                    return Err(Error::validation(format!(
                        "map row {row} has the key {key:?} twice: a variant object cannot"
                    )));
                }
                append(values, &mut ObjectFieldBuilder::new(key, &mut obj), i)?;
            }
            obj.finish();
        }
    }
    Ok(())
}

fn arrow_err(e: ArrowError) -> Error {
    Error::validation(e.to_string())
}

/// Each value of `input` as a variant (see the module docs); null rows stay null.
pub fn arrow_to_variants(input: &ArrayRef) -> Result<VariantArray> {
    let root = node(input, false)?;
    if let Node::Leaf(cast) = root {
        return Ok(cast);
    }
    let mut out = VariantArrayBuilder::new(input.len());
    for row in 0..input.len() {
        if input.is_null(row) {
            out.append_null();
        } else {
            append(&root, &mut out, row)?;
        }
    }
    Ok(out.build())
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;
    use std::sync::Arc;

    use arrow_array::builder::{Int32Builder, MapBuilder, StringBuilder};
    use arrow_array::{Int32Array, ListArray, StructArray};
    use arrow_schema::Fields;

    use super::*;

    fn uuid_field(name: &str) -> Field {
        Field::new(name, DataType::FixedSizeBinary(16), true).with_metadata(HashMap::from([(
            "ARROW:extension:name".to_string(),
            UUID_EXTENSION.to_string(),
        )]))
    }

    #[test]
    fn null_struct_fields_are_variant_nulls_and_nested_uuids_are_uuids() {
        let ids: ArrayRef = Arc::new(Int32Array::from(vec![Some(5), None]));
        let u = [7u8; 16];
        let uuids: ArrayRef = Arc::new(
            FixedSizeBinaryArray::try_from_sparse_iter_with_size([Some(u), None].into_iter(), 16)
                .unwrap(),
        );
        let fields = Fields::from(vec![
            Field::new("k", DataType::Int32, true),
            uuid_field("u"),
        ]);
        let input: ArrayRef = Arc::new(StructArray::new(fields, vec![ids, uuids], None));
        let out = arrow_to_variants(&input).unwrap();
        let first = out.value(0);
        let obj = first.as_object().unwrap();
        assert_eq!(obj.get("k"), Some(Variant::Int32(5)));
        assert_eq!(obj.get("u"), Some(Variant::Uuid(uuid::Uuid::from_bytes(u))));
        let second = out.value(1);
        let obj = second.as_object().unwrap();
        assert_eq!(obj.len(), 2);
        assert_eq!(obj.get("k"), Some(Variant::Null));
        assert_eq!(obj.get("u"), Some(Variant::Null));
    }

    #[test]
    fn lists_keep_null_elements_and_null_rows_stay_null() {
        let input: ArrayRef = Arc::new(ListArray::from_iter_primitive::<
            arrow_array::types::Int32Type,
            _,
            _,
        >(vec![Some(vec![Some(1), None]), None]));
        let out = arrow_to_variants(&input).unwrap();
        let first = out.value(0);
        let list = first.as_list().unwrap();
        assert_eq!(list.len(), 2);
        assert_eq!(list.get(1), Some(Variant::Null));
        assert!(out.is_null(1));
    }

    #[test]
    fn a_map_key_given_twice_is_refused() {
        let mut b = MapBuilder::new(None, StringBuilder::new(), Int32Builder::new());
        for key in ["a", "a"] {
            b.keys().append_value(key);
            b.values().append_value(1);
        }
        b.append(true).unwrap();
        let input: ArrayRef = Arc::new(b.finish());
        let err = arrow_to_variants(&input).unwrap_err().to_string();
        assert!(err.contains("twice"), "{err}");
    }
}
