//! How the columns the native readers decode are matched to the types a scan outputs.
//!
//! A decoded column carries the names and metadata the file was written with; the scan outputs
//! the table's. The two agree when the field ids agree at every level: the column is then
//! relabelled (no data is copied). Anything else (another type, a nested field added, dropped
//! or moved since the file was written, a nullable field the table now requires) does not
//! convert, and the file is left to the general reader, which applies the evolution rules.

use arrow_array::{make_array, ArrayRef};
use arrow_data::ArrayData;
use arrow_schema::{DataType, Field};
use parquet::arrow::PARQUET_FIELD_ID_META_KEY;

/// Whether a column decoded as `from` is, up to names and metadata, the column `to`
/// describes: equal types, a timestamp with another spelling of UTC, or nested types whose
/// fields have the same field ids in the same order, none nullable where `to` requires it.
pub(crate) fn convertible(from: &DataType, to: &DataType) -> bool {
    if from == to {
        return true;
    }
    match (from, to) {
        (DataType::Timestamp(a, Some(_)), DataType::Timestamp(b, Some(_))) => a == b,
        (DataType::Struct(f), DataType::Struct(t)) => {
            f.len() == t.len() && f.iter().zip(t.iter()).all(|(f, t)| same_field(f, t))
        }
        (DataType::List(f), DataType::List(t))
        | (DataType::LargeList(f), DataType::LargeList(t)) => same_field(f, t),
        (DataType::FixedSizeList(f, n), DataType::FixedSizeList(t, m)) => {
            n == m && same_field(f, t)
        }
        // the entries struct has no field id; its key and value fields do
        (DataType::Map(f, a), DataType::Map(t, b)) => {
            a == b && convertible(f.data_type(), t.data_type())
        }
        _ => false,
    }
}

/// Whether the nested field `from` of a file is the field `to`: the same field id, a type
/// that converts, and nullable only when `to` is.
fn same_field(from: &Field, to: &Field) -> bool {
    let id = |f: &Field| f.metadata().get(PARQUET_FIELD_ID_META_KEY).cloned();
    (!from.is_nullable() || to.is_nullable())
        && id(from).is_some()
        && id(from) == id(to)
        && convertible(from.data_type(), to.data_type())
}

/// `column` typed as `field` (see [`convertible`]): as it is when the types are equal, else
/// relabelled with the wanted names and metadata; `None` when it does not convert.
pub(crate) fn retype(column: ArrayRef, field: &Field) -> Option<ArrayRef> {
    if column.data_type() == field.data_type() {
        return Some(column);
    }
    Some(make_array(relabel(column.to_data(), field.data_type())?))
}

fn relabel(data: ArrayData, to: &DataType) -> Option<ArrayData> {
    if data.data_type() == to {
        return Some(data);
    }
    let children = match to {
        DataType::Struct(fields) => {
            if data.child_data().len() != fields.len() {
                return None;
            }
            data.child_data()
                .iter()
                .zip(fields.iter())
                .map(|(c, f)| relabel(c.clone(), f.data_type()))
                .collect::<Option<Vec<_>>>()?
        }
        DataType::List(f)
        | DataType::LargeList(f)
        | DataType::FixedSizeList(f, _)
        | DataType::Map(f, _) => vec![relabel(data.child_data().first()?.clone(), f.data_type())?],
        _ => data.child_data().to_vec(),
    };
    data.into_builder()
        .data_type(to.clone())
        .child_data(children)
        .build()
        .ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Array, Int64Array, ListArray, StructArray};
    use arrow_schema::Fields;
    use std::collections::HashMap;
    use std::sync::Arc;

    fn field(name: &str, t: DataType, id: Option<i32>, nullable: bool) -> Field {
        let f = Field::new(name, t, nullable);
        match id {
            Some(id) => f.with_metadata(HashMap::from([(
                PARQUET_FIELD_ID_META_KEY.to_string(),
                id.to_string(),
            )])),
            None => f,
        }
    }

    /// list<struct<a long (id a), b long (id b)>> with the element's id `e`.
    fn list_of(e: i32, a: i32, b: i32, names: (&str, &str, &str)) -> DataType {
        let inner = Fields::from(vec![
            field(names.1, DataType::Int64, Some(a), true),
            field(names.2, DataType::Int64, Some(b), false),
        ]);
        DataType::List(Arc::new(field(
            names.0,
            DataType::Struct(inner),
            Some(e),
            true,
        )))
    }

    #[test]
    fn nested_columns_convert_when_every_field_id_agrees() {
        let file = list_of(5, 6, 7, ("item", "x", "y"));
        assert!(convertible(&file, &list_of(5, 6, 7, ("element", "a", "b"))));
        assert!(!convertible(
            &file,
            &list_of(5, 7, 6, ("element", "a", "b"))
        ));
        assert!(!convertible(
            &file,
            &list_of(9, 6, 7, ("element", "a", "b"))
        ));
        // a required field may become optional, not the other way round
        let optional_b = DataType::List(Arc::new(field(
            "element",
            DataType::Struct(Fields::from(vec![
                field("a", DataType::Int64, Some(6), true),
                field("b", DataType::Int64, Some(7), true),
            ])),
            Some(5),
            true,
        )));
        assert!(convertible(&file, &optional_b));
        assert!(!convertible(&optional_b, &file));
        assert!(!convertible(&DataType::Int64, &DataType::Int32));
    }

    #[test]
    fn relabelling_keeps_the_values_and_takes_the_wanted_names() {
        let file = list_of(5, 6, 7, ("item", "x", "y"));
        let DataType::List(item) = &file else {
            unreachable!()
        };
        let DataType::Struct(inner) = item.data_type() else {
            unreachable!()
        };
        let values = StructArray::new(
            inner.clone(),
            vec![
                Arc::new(Int64Array::from(vec![Some(1), None, Some(3)])),
                Arc::new(Int64Array::from(vec![10, 20, 30])),
            ],
            None,
        );
        let offsets = arrow_buffer::OffsetBuffer::new(vec![0i32, 2, 2, 3].into());
        let list = ListArray::new(item.clone(), offsets, Arc::new(values), None);
        let want = list_of(5, 6, 7, ("element", "a", "b"));
        let out = retype(
            Arc::new(list.clone()),
            &field("c", want.clone(), Some(4), true),
        )
        .unwrap();
        assert_eq!(out.data_type(), &want);
        let out = out.as_any().downcast_ref::<ListArray>().unwrap();
        assert_eq!(out.value_offsets(), list.value_offsets());
        let rows = out.values().as_any().downcast_ref::<StructArray>().unwrap();
        let a = rows
            .column(0)
            .as_any()
            .downcast_ref::<Int64Array>()
            .unwrap();
        assert_eq!(a.null_count(), 1);
        assert_eq!(a.value(2), 3);
        let bad = list_of(5, 7, 6, ("element", "a", "b"));
        assert!(!convertible(list.data_type(), &bad));
    }
}
