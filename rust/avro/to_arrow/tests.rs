use super::*;
use crate::avro::binary::{put_bytes, put_long};
use arrow_array::cast::AsArray;
use arrow_array::types::{Int32Type, Int64Type};
use arrow_schema::Fields;
use std::collections::HashMap;
use std::sync::Arc;

fn id(name: &str, dt: DataType, id: i32) -> Field {
    Field::new(name, dt, name != "key")
        .with_metadata(HashMap::from([(FIELD_ID.to_owned(), id.to_string())]))
}

fn map_target(value: DataType) -> DataType {
    let entries = Fields::from(vec![id("key", DataType::Int32, 1), id("value", value, 2)]);
    DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries), false)),
        false,
    )
}

fn writer(fields: &str) -> Schema {
    let json = format!(
        r#"{{"type": "array", "items": {{"type": "record", "name": "kv", "fields": [{fields}]}}}}"#
    );
    Schema::parse(json.as_bytes()).unwrap()
}

fn decode(w: &Schema, t: &DataType, data: &[u8], rows: usize) -> ArrayRef {
    let mut d = Decoder::new(w, t).unwrap();
    let mut r = Reader::new(data);
    for _ in 0..rows {
        d.decode(&mut r).unwrap();
    }
    assert_eq!(r.remaining(), 0);
    d.finish().unwrap()
}

/// The int-keyed map fast path: negative-count blocks (with their byte size), several
/// blocks per map, empty maps, and the writer's field order, as the spec allows them.
#[test]
fn int_maps_with_sized_blocks_and_either_field_order() {
    let key = r#"{"name": "key", "type": "int", "field-id": 1}"#;
    let long = r#"{"name": "value", "type": "long", "field-id": 2}"#;
    let t = map_target(DataType::Int64);
    let mut data = Vec::new();
    // Row 0: a sized block of two pairs, then a plain block of one.
    let mut block = Vec::new();
    for (k, v) in [(1, 10i64), (2, -20000)] {
        put_long(&mut block, k);
        put_long(&mut block, v);
    }
    put_long(&mut data, -2);
    put_long(&mut data, block.len() as i64);
    data.extend_from_slice(&block);
    put_long(&mut data, 1);
    put_long(&mut data, 3);
    put_long(&mut data, 1 << 40);
    put_long(&mut data, 0);
    // Row 1: empty.
    put_long(&mut data, 0);
    let a = decode(&writer(&format!("{key}, {long}")), &t, &data, 2);
    let m = a.as_map();
    assert_eq!(m.value_offsets(), &[0, 3, 3]);
    assert_eq!(m.keys().as_primitive::<Int32Type>().values(), &[1, 2, 3]);
    assert_eq!(
        m.values().as_primitive::<Int64Type>().values(),
        &[10, -20000, 1 << 40]
    );

    // Value before key, binary values.
    let bytes = r#"{"name": "value", "type": "bytes", "field-id": 2}"#;
    let t = map_target(DataType::Binary);
    let mut data = Vec::new();
    put_long(&mut data, 2);
    put_bytes(&mut data, &7i64.to_le_bytes());
    put_long(&mut data, 5);
    put_bytes(&mut data, b"abc");
    put_long(&mut data, 6);
    put_long(&mut data, 0);
    let a = decode(&writer(&format!("{bytes}, {key}")), &t, &data, 1);
    let m = a.as_map();
    assert_eq!(m.keys().as_primitive::<Int32Type>().values(), &[5, 6]);
    let v = m.values().as_binary::<i32>();
    assert_eq!(v.value(0), &7i64.to_le_bytes());
    assert_eq!(v.value(1), b"abc");

    // Hostile: a key outside the int range and a block count past the end are corrupt.
    let mut data = Vec::new();
    put_long(&mut data, 1);
    put_long(&mut data, 1 << 40);
    put_long(&mut data, 1);
    put_long(&mut data, 0);
    let mut d = Decoder::new(
        &writer(&format!("{key}, {long}")),
        &map_target(DataType::Int64),
    )
    .unwrap();
    assert!(matches!(
        d.decode(&mut Reader::new(&data)),
        Err(Error::CorruptFile(_))
    ));
    let mut data = Vec::new();
    put_long(&mut data, 1000);
    assert!(matches!(
        d.decode(&mut Reader::new(&data)),
        Err(Error::CorruptFile(_))
    ));
}
