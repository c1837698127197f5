//! The fields of `manifest_entry` / `data_file` and `manifest_file` (spec tables "Manifest Entry
//! Fields", "Data File Fields", "Manifest Lists") in one table per record, from which both the
//! Arrow layout the readers produce and the Avro schemas the writers emit are derived.

use std::collections::HashMap;
use std::sync::Arc;

use arrow_schema::{DataType, Field, Fields, Schema as ArrowSchema};
use serde_json::{json, Value};

use super::partition::PartitionField;
use crate::avro::to_arrow::FIELD_ID;

/// The shape of a column.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    Bool,
    Int,
    Long,
    Str,
    Bytes,
    /// An int-keyed map stored as an Avro array of `k<key>_v<value>` records.
    MapLong(i32, i32),
    MapBytes(i32, i32),
    /// An array with the given element id.
    ListLong(i32),
    ListInt(i32),
    Partition,
    Summaries,
}

/// A column: name, field id, shape, and per format version (v1, v2, v3) whether it is
/// written (`present`) and whether it is required.
#[derive(Debug, Clone, Copy)]
pub struct Col {
    pub name: &'static str,
    pub id: i32,
    pub kind: Kind,
    pub present: [bool; 3],
    pub required: [bool; 3],
    pub doc: &'static str,
}

const ALL: [bool; 3] = [true, true, true];
const V2: [bool; 3] = [false, true, true];
const V3: [bool; 3] = [false, false, true];
const NO: [bool; 3] = [false, false, false];

const fn c(
    name: &'static str,
    id: i32,
    kind: Kind,
    present: [bool; 3],
    required: [bool; 3],
) -> Col {
    Col {
        name,
        id,
        kind,
        present,
        required,
        doc: "",
    }
}

/// `manifest_entry` fields other than `data_file` (id 2).
pub const ENTRY: &[Col] = &[
    c("status", 0, Kind::Int, ALL, ALL),
    c("snapshot_id", 1, Kind::Long, ALL, NO),
    c("sequence_number", 3, Kind::Long, V2, NO),
    c("file_sequence_number", 4, Kind::Long, V2, NO),
];

/// `data_file` fields in Java's order. `block_size_in_bytes` (105) is written in v1 only and
/// not read into the output.
pub const DATA_FILE: &[Col] = &[
    c("content", 134, Kind::Int, V2, V2),
    c("file_path", 100, Kind::Str, ALL, ALL),
    c("file_format", 101, Kind::Str, ALL, ALL),
    c("partition", 102, Kind::Partition, ALL, ALL),
    c("record_count", 103, Kind::Long, ALL, ALL),
    c("file_size_in_bytes", 104, Kind::Long, ALL, ALL),
    c("column_sizes", 108, Kind::MapLong(117, 118), ALL, NO),
    c("value_counts", 109, Kind::MapLong(119, 120), ALL, NO),
    c("null_value_counts", 110, Kind::MapLong(121, 122), ALL, NO),
    c("nan_value_counts", 137, Kind::MapLong(138, 139), ALL, NO),
    c("lower_bounds", 125, Kind::MapBytes(126, 127), ALL, NO),
    c("upper_bounds", 128, Kind::MapBytes(129, 130), ALL, NO),
    c("key_metadata", 131, Kind::Bytes, ALL, NO),
    c("split_offsets", 132, Kind::ListLong(133), ALL, NO),
    c("equality_ids", 135, Kind::ListInt(136), V2, NO),
    c("sort_order_id", 140, Kind::Int, ALL, NO),
    c("first_row_id", 142, Kind::Long, V3, NO),
    c("referenced_data_file", 143, Kind::Str, V2, NO),
    c("content_offset", 144, Kind::Long, V3, NO),
    c("content_size_in_bytes", 145, Kind::Long, V3, NO),
];

/// `manifest_file` fields in Java's v2 order.
pub const MANIFEST_FILE: &[Col] = &[
    c("manifest_path", 500, Kind::Str, ALL, ALL),
    c("manifest_length", 501, Kind::Long, ALL, ALL),
    c("partition_spec_id", 502, Kind::Int, ALL, ALL),
    c("content", 517, Kind::Int, V2, V2),
    c("sequence_number", 515, Kind::Long, V2, V2),
    c("min_sequence_number", 516, Kind::Long, V2, V2),
    c("added_snapshot_id", 503, Kind::Long, ALL, V2),
    c("added_files_count", 504, Kind::Int, ALL, V2),
    c("existing_files_count", 505, Kind::Int, ALL, V2),
    c("deleted_files_count", 506, Kind::Int, ALL, V2),
    c("added_rows_count", 512, Kind::Long, ALL, V2),
    c("existing_rows_count", 513, Kind::Long, ALL, V2),
    c("deleted_rows_count", 514, Kind::Long, ALL, V2),
    c("partitions", 507, Kind::Summaries, ALL, NO),
    c("key_metadata", 519, Kind::Bytes, V2, NO),
    c("first_row_id", 520, Kind::Long, V3, NO),
];

/// An Arrow field carrying its Iceberg field id in the metadata.
pub fn id_field(name: &str, dt: DataType, id: i32, nullable: bool) -> Field {
    Field::new(name, dt, nullable)
        .with_metadata(HashMap::from([(FIELD_ID.to_owned(), id.to_string())]))
}

fn map_type(k: i32, v: i32, value: DataType) -> DataType {
    let entries = Fields::from(vec![
        id_field("key", DataType::Int32, k, false),
        id_field("value", value, v, true),
    ]);
    DataType::Map(
        Arc::new(Field::new("entries", DataType::Struct(entries), false)),
        false,
    )
}

/// The Arrow struct of a manifest's partition tuple.
pub fn partition_type(fields: &[PartitionField]) -> DataType {
    DataType::Struct(
        fields
            .iter()
            .map(|f| id_field(&f.name, f.ptype.arrow(), f.field_id, true))
            .collect(),
    )
}

/// The Arrow struct of one `field_summary`.
pub fn summary_type() -> DataType {
    DataType::Struct(Fields::from(vec![
        id_field("contains_null", DataType::Boolean, 509, false),
        id_field("contains_nan", DataType::Boolean, 518, true),
        id_field("lower_bound", DataType::Binary, 510, true),
        id_field("upper_bound", DataType::Binary, 511, true),
    ]))
}

/// The Arrow type of a column.
pub fn arrow_type(kind: Kind, partition: &DataType) -> DataType {
    match kind {
        Kind::Bool => DataType::Boolean,
        Kind::Int => DataType::Int32,
        Kind::Long => DataType::Int64,
        Kind::Str => DataType::Utf8,
        Kind::Bytes => DataType::Binary,
        Kind::MapLong(k, v) => map_type(k, v, DataType::Int64),
        Kind::MapBytes(k, v) => map_type(k, v, DataType::Binary),
        Kind::ListLong(e) => {
            DataType::List(Arc::new(id_field("element", DataType::Int64, e, false)))
        }
        Kind::ListInt(e) => {
            DataType::List(Arc::new(id_field("element", DataType::Int32, e, false)))
        }
        Kind::Partition => partition.clone(),
        Kind::Summaries => {
            DataType::List(Arc::new(id_field("element", summary_type(), 508, false)))
        }
    }
}

/// The flat Arrow schema of a decoded manifest: entry fields, then the `data_file` fields.
pub fn manifest_schema(partition: &DataType) -> ArrowSchema {
    ArrowSchema::new(
        ENTRY
            .iter()
            .chain(DATA_FILE.iter())
            .map(|c| id_field(c.name, arrow_type(c.kind, partition), c.id, true))
            .collect::<Vec<_>>(),
    )
}

/// The Avro decoding target of a manifest: the nested `manifest_entry` struct.
pub fn entry_target(partition: &DataType) -> DataType {
    entry_target_with(partition, |_| true)
}

/// [`entry_target`] with only the `data_file` columns for which `keep` holds: the decoder
/// skips the others in the Avro data without materialising them.
pub fn entry_target_with(partition: &DataType, keep: impl Fn(&Col) -> bool) -> DataType {
    let df: Fields = DATA_FILE
        .iter()
        .filter(|c| keep(c))
        .map(|c| id_field(c.name, arrow_type(c.kind, partition), c.id, true))
        .collect();
    let mut top: Vec<Field> = ENTRY
        .iter()
        .map(|c| id_field(c.name, arrow_type(c.kind, partition), c.id, true))
        .collect();
    top.push(id_field("data_file", DataType::Struct(df), 2, true));
    DataType::Struct(top.into())
}

/// The Arrow schema of a decoded manifest list.
pub fn manifest_list_schema() -> ArrowSchema {
    ArrowSchema::new(
        MANIFEST_FILE
            .iter()
            .map(|c| id_field(c.name, arrow_type(c.kind, &DataType::Null), c.id, true))
            .collect::<Vec<_>>(),
    )
}

fn optional(t: Value) -> Value {
    json!(["null", t])
}

fn avro_map(k: i32, v: i32, value: &str) -> Value {
    json!({"type": "array", "logicalType": "map", "items": {
        "type": "record", "name": format!("k{k}_v{v}"), "fields": [
            {"name": "key", "type": "int", "field-id": k},
            {"name": "value", "type": value, "field-id": v}]}})
}

/// The Avro type Java writes for a column.
fn avro_type(kind: Kind, partition: &[PartitionField], v1_list: bool) -> Value {
    match kind {
        Kind::Bool => json!("boolean"),
        Kind::Int => json!("int"),
        Kind::Long => json!("long"),
        Kind::Str => json!("string"),
        Kind::Bytes => json!("bytes"),
        Kind::MapLong(k, v) => avro_map(k, v, "long"),
        Kind::MapBytes(k, v) => avro_map(k, v, "bytes"),
        Kind::ListLong(e) => json!({"type": "array", "items": "long", "element-id": e}),
        Kind::ListInt(e) => json!({"type": "array", "items": "int", "element-id": e}),
        Kind::Partition => {
            // a named type (a decimal's or fixed's `fixed`, `uuid_fixed`) may be defined only
            // once in a schema (fastavro and DuckDB refuse a second definition); a later field
            // of the same type gets its own name, not a reference, which PyIceberg 0.12 cannot
            // resolve (Java names a repeat by reference; readers match fields by id)
            let mut defined = std::collections::HashSet::new();
            let fields: Vec<Value> = partition
                .iter()
                .map(|f| {
                    let mut avro = f.ptype.avro();
                    if let Some(name) = avro.get("name").and_then(Value::as_str).map(String::from) {
                        if !defined.insert(name.clone()) {
                            avro["name"] = json!(format!("{name}_{}", f.field_id));
                        }
                    }
                    json!({
                        "name": sanitize(&f.name), "type": optional(avro),
                        "default": null, "field-id": f.field_id,
                    })
                })
                .collect();
            json!({"type": "record", "name": "r102", "fields": fields})
        }
        Kind::Summaries => {
            let _ = v1_list;
            json!({"type": "array", "element-id": 508, "items": {
                "type": "record", "name": "r508", "fields": [
                    {"name": "contains_null", "type": "boolean", "field-id": 509},
                    {"name": "contains_nan", "type": ["null", "boolean"], "default": null, "field-id": 518},
                    {"name": "lower_bound", "type": ["null", "bytes"], "default": null, "field-id": 510},
                    {"name": "upper_bound", "type": ["null", "bytes"], "default": null, "field-id": 511}]}})
        }
    }
}

/// Avro-safe field name as Java makes it: a leading digit becomes `_<digit>`, any other
/// character outside `[A-Za-z0-9_]` becomes `_x<HEX>`.
pub fn sanitize(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    for (i, ch) in name.chars().enumerate() {
        let ok = ch.is_ascii_alphabetic() || ch == '_' || (i > 0 && ch.is_ascii_digit());
        if ok {
            out.push(ch);
        } else if i == 0 && ch.is_ascii_digit() {
            out.push('_');
            out.push(ch);
        } else {
            out.push_str(&format!("_x{:X}", ch as u32));
        }
    }
    out
}

fn avro_field(col: &Col, v: usize, partition: &[PartitionField], list: bool) -> Value {
    let t = avro_type(col.kind, partition, list && v == 0);
    // Field names as the spec and Java (since 1.5) write them, in v1 too: the older v1 names
    // `*_data_files_count` are read by id, but readers that resolve by name (DuckDB) take the
    // counts as 0 and write them so when they carry the manifest over, hiding its files.
    let name = col.name;
    if col.required[v] {
        json!({"name": name, "type": t, "field-id": col.id})
    } else {
        json!({"name": name, "type": optional(t), "default": null, "field-id": col.id})
    }
}

/// The Avro schema JSON of a manifest of format version `version` (1-3).
pub fn manifest_avro_schema(version: u8, partition: &[PartitionField]) -> String {
    let v = (version.clamp(1, 3) - 1) as usize;
    let mut df: Vec<Value> = Vec::new();
    for col in DATA_FILE.iter().filter(|c| c.present[v]) {
        df.push(avro_field(col, v, partition, false));
        if v == 0 && col.id == 104 {
            df.push(json!({"name": "block_size_in_bytes", "type": "long", "field-id": 105}));
        }
    }
    let mut top: Vec<Value> = Vec::new();
    for col in ENTRY.iter().filter(|c| c.present[v]) {
        top.push(avro_field(col, v, partition, false));
        if col.id == 1 && v == 0 {
            top.push(
                json!({"name": "data_file", "type": {"type": "record", "name": "r2", "fields": df}, "field-id": 2}),
            );
        }
    }
    if v > 0 {
        top.push(
            json!({"name": "data_file", "type": {"type": "record", "name": "r2", "fields": df}, "field-id": 2}),
        );
    }
    json!({"type": "record", "name": "manifest_entry", "fields": top}).to_string()
}

/// The Avro schema JSON of a manifest list of format version `version` (1-3).
pub fn manifest_list_avro_schema(version: u8) -> String {
    let v = (version.clamp(1, 3) - 1) as usize;
    let fields: Vec<Value> = MANIFEST_FILE
        .iter()
        .filter(|c| c.present[v])
        .map(|c| avro_field(c, v, &[], true))
        .collect();
    json!({"type": "record", "name": "manifest_file", "fields": fields}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::avro::Schema;

    #[test]
    fn sanitizes_like_java() {
        assert_eq!(sanitize("ts-day"), "ts_x2Dday");
        assert_eq!(sanitize("1a"), "_1a");
        assert_eq!(sanitize("ok_9"), "ok_9");
    }

    #[test]
    fn named_partition_types_are_defined_once() {
        use super::super::partition::PType;
        let field = |name: &str, id: i32, ptype: PType| PartitionField {
            name: name.into(),
            field_id: id,
            transform: "identity".into(),
            ptype,
        };
        let fields = [
            field("d", 1000, PType::Decimal(5, 2)),
            field("d_trunc", 1001, PType::Decimal(5, 2)),
            field("u", 1002, PType::Uuid),
            field("u2", 1003, PType::Uuid),
            field("f", 1004, PType::Fixed(3)),
            field("f2", 1005, PType::Fixed(3)),
        ];
        let text = manifest_avro_schema(2, &fields);
        for (name, repeat) in [
            ("decimal_5_2", 1001),
            ("uuid_fixed", 1003),
            ("fixed_3", 1005),
        ] {
            let defined = format!("\"name\":\"{name}\"");
            assert_eq!(text.matches(&defined).count(), 1, "{name} in {text}");
            let renamed = format!("\"name\":\"{name}_{repeat}\"");
            assert_eq!(
                text.matches(&renamed).count(),
                1,
                "{name}_{repeat} in {text}"
            );
        }
        Schema::parse(text.as_bytes()).unwrap();
    }

    #[test]
    fn schemas_parse() {
        for v in 1..=3 {
            Schema::parse(manifest_avro_schema(v, &[]).as_bytes()).unwrap();
            Schema::parse(manifest_list_avro_schema(v).as_bytes()).unwrap();
        }
    }
}
