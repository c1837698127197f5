//! The partition struct of a manifest, typed from its own `schema` and `partition-spec`
//! key-value metadata: each field's transform result type, as Arrow and as Avro.

use std::collections::HashMap;

use arrow_schema::{DataType, TimeUnit};
use serde_json::{json, Value};

use crate::avro::Schema;
use crate::{Error, Result};

/// The Iceberg primitive type of a partition value.
#[derive(Debug, Clone, PartialEq)]
pub enum PType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Date,
    Time,
    Timestamp,
    TimestampTz,
    TimestampNs,
    TimestampTzNs,
    String,
    Uuid,
    Binary,
    Fixed(usize),
    Decimal(u8, i8),
}

impl PType {
    /// Parses an Iceberg primitive type string; nested or unknown types give `None`.
    pub fn parse(s: &str) -> Option<PType> {
        Some(match s {
            "boolean" => PType::Boolean,
            "int" => PType::Int,
            "long" => PType::Long,
            "float" => PType::Float,
            "double" => PType::Double,
            "date" => PType::Date,
            "time" => PType::Time,
            "timestamp" => PType::Timestamp,
            "timestamptz" => PType::TimestampTz,
            "timestamp_ns" => PType::TimestampNs,
            "timestamptz_ns" => PType::TimestampTzNs,
            "string" => PType::String,
            "uuid" => PType::Uuid,
            "binary" => PType::Binary,
            _ => {
                if let Some(l) = s.strip_prefix("fixed[").and_then(|r| r.strip_suffix(']')) {
                    return l.trim().parse().ok().map(PType::Fixed);
                }
                let inner = s.strip_prefix("decimal(")?.strip_suffix(')')?;
                let (p, sc) = inner.split_once(',')?;
                let p: u8 = p.trim().parse().ok()?;
                let sc: i8 = sc.trim().parse().ok()?;
                if p == 0 || p > 38 {
                    return None;
                }
                PType::Decimal(p, sc)
            }
        })
    }

    /// A type for a value written with an Avro type we know only from the file (unknown
    /// transforms or dropped source columns).
    pub fn from_avro(s: &Schema) -> PType {
        let s = s.as_optional().map(|(_, _, t)| t).unwrap_or(s);
        match s {
            Schema::Boolean => PType::Boolean,
            Schema::Int => PType::Int,
            Schema::Long => PType::Long,
            Schema::Float => PType::Float,
            Schema::Double => PType::Double,
            Schema::String => PType::String,
            Schema::Fixed(n) => PType::Fixed(*n),
            _ => PType::Binary,
        }
    }

    /// The same type as the shared single-value serde sees it (Appendix D encoding).
    pub fn iceberg(&self) -> crate::serde::PrimitiveType {
        use crate::serde::PrimitiveType as T;
        match self {
            PType::Boolean => T::Boolean,
            PType::Int => T::Int,
            PType::Long => T::Long,
            PType::Float => T::Float,
            PType::Double => T::Double,
            PType::Date => T::Date,
            PType::Time => T::Time,
            PType::Timestamp => T::Timestamp,
            PType::TimestampTz => T::Timestamptz,
            PType::TimestampNs => T::TimestampNs,
            PType::TimestampTzNs => T::TimestamptzNs,
            PType::String => T::String,
            PType::Uuid => T::Uuid,
            PType::Binary => T::Binary,
            PType::Fixed(n) => T::Fixed(*n),
            PType::Decimal(p, s) => T::Decimal {
                precision: *p as u32,
                scale: *s as i32,
            },
        }
    }

    pub fn arrow(&self) -> DataType {
        match self {
            PType::Boolean => DataType::Boolean,
            PType::Int => DataType::Int32,
            PType::Long => DataType::Int64,
            PType::Float => DataType::Float32,
            PType::Double => DataType::Float64,
            PType::Date => DataType::Date32,
            PType::Time => DataType::Time64(TimeUnit::Microsecond),
            PType::Timestamp => DataType::Timestamp(TimeUnit::Microsecond, None),
            PType::TimestampTz => DataType::Timestamp(TimeUnit::Microsecond, Some("UTC".into())),
            PType::TimestampNs => DataType::Timestamp(TimeUnit::Nanosecond, None),
            PType::TimestampTzNs => DataType::Timestamp(TimeUnit::Nanosecond, Some("UTC".into())),
            PType::String => DataType::Utf8,
            PType::Uuid => DataType::FixedSizeBinary(16),
            PType::Binary => DataType::Binary,
            PType::Fixed(n) => DataType::FixedSizeBinary(*n as i32),
            PType::Decimal(p, s) => DataType::Decimal128(*p, *s),
        }
    }

    /// The Avro type Java writes for this Iceberg type.
    pub fn avro(&self) -> Value {
        match self {
            PType::Boolean => json!("boolean"),
            PType::Int => json!("int"),
            PType::Long => json!("long"),
            PType::Float => json!("float"),
            PType::Double => json!("double"),
            PType::Date => json!({"type": "int", "logicalType": "date"}),
            PType::Time => json!({"type": "long", "logicalType": "time-micros"}),
            PType::Timestamp => {
                json!({"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": false})
            }
            PType::TimestampTz => {
                json!({"type": "long", "logicalType": "timestamp-micros", "adjust-to-utc": true})
            }
            PType::TimestampNs => {
                json!({"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": false})
            }
            PType::TimestampTzNs => {
                json!({"type": "long", "logicalType": "timestamp-nanos", "adjust-to-utc": true})
            }
            PType::String => json!("string"),
            PType::Uuid => {
                json!({"type": "fixed", "name": "uuid_fixed", "size": 16, "logicalType": "uuid"})
            }
            PType::Binary => json!("bytes"),
            PType::Fixed(n) => json!({"type": "fixed", "name": format!("fixed_{n}"), "size": n}),
            PType::Decimal(p, s) => json!({
                "type": "fixed", "name": format!("decimal_{p}_{s}"),
                "size": decimal_size(*p), "logicalType": "decimal", "precision": p, "scale": s
            }),
        }
    }
}

/// Bytes of the fixed type Java uses for a decimal of precision `p`.
pub fn decimal_size(p: u8) -> usize {
    (1..=16)
        .find(|&n| {
            let bits = 8 * n as u32 - 1;
            (p as f64) <= (bits as f64) * std::f64::consts::LOG10_2
        })
        .unwrap_or(16)
}

/// One partition field of the manifest's spec with its result type.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionField {
    pub name: String,
    pub field_id: i32,
    pub transform: String,
    pub ptype: PType,
}

fn collect_types(v: &Value, out: &mut HashMap<i64, String>, depth: usize) {
    // parsed JSON nests at most this deep; the guard only keeps the recursion bounded
    if depth > crate::nested_json::MAX_DEPTH {
        return;
    }
    match v {
        Value::Object(o) => {
            if let (Some(id), Some(Value::String(t))) = (o.get("id"), o.get("type")) {
                if let Some(id) = id.as_i64() {
                    out.insert(id, t.clone());
                }
            }
            for (k, child) in o {
                if k != "initial-default" && k != "write-default" {
                    collect_types(child, out, depth + 1);
                }
            }
        }
        Value::Array(a) => a.iter().for_each(|c| collect_types(c, out, depth + 1)),
        _ => {}
    }
}

/// The result type of a transform applied to a source type; `None` when unknown.
pub fn result_type(transform: &str, source: Option<PType>) -> Option<PType> {
    let t = transform.trim();
    match t {
        "identity" | "void" => source,
        "year" | "month" | "hour" => Some(PType::Int),
        "day" => Some(PType::Date),
        _ if t.starts_with("bucket[") => Some(PType::Int),
        _ if t.starts_with("truncate[") => source,
        _ => None,
    }
}

/// Parses the `partition-spec` (a fields array, or an object with `fields`) against the
/// `schema` JSON. `avro_partition` is the writer's partition record, used to type fields whose
/// transform or source is unknown.
pub fn partition_fields(
    spec_json: Option<&str>,
    schema_json: Option<&str>,
    avro_partition: Option<&Schema>,
) -> Result<Vec<PartitionField>> {
    let Some(spec_json) = spec_json else {
        // No spec in the metadata: type the fields from the Avro record alone.
        return Ok(match avro_partition {
            Some(Schema::Record(r)) => r
                .fields
                .iter()
                .enumerate()
                .map(|(i, f)| PartitionField {
                    name: f.name.clone(),
                    field_id: f.field_id.unwrap_or(1000 + i as i32),
                    transform: "unknown".into(),
                    ptype: PType::from_avro(&f.schema),
                })
                .collect(),
            _ => vec![],
        });
    };
    let spec: Value = serde_json::from_str(spec_json)
        .map_err(|e| Error::corrupt(format!("partition-spec is not valid JSON: {e}")))?;
    let fields = match &spec {
        Value::Array(a) => a,
        Value::Object(o) => o
            .get("fields")
            .and_then(Value::as_array)
            .ok_or_else(|| Error::corrupt("partition-spec has no fields"))?,
        _ => return Err(Error::corrupt("partition-spec is not an array or object")),
    };
    let mut types = HashMap::new();
    if let Some(s) = schema_json {
        let v = crate::nested_json::parse(s.as_bytes(), "schema")?;
        collect_types(&v, &mut types, 0);
    }
    let avro_fields = match avro_partition {
        Some(Schema::Record(r)) => Some(r),
        _ => None,
    };
    let mut out = Vec::with_capacity(fields.len());
    for (i, f) in fields.iter().enumerate() {
        let name = f
            .get("name")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::corrupt(format!("partition field {i} has no name")))?;
        let transform = f
            .get("transform")
            .and_then(Value::as_str)
            .ok_or_else(|| Error::corrupt(format!("partition field {name} has no transform")))?;
        let field_id = f
            .get("field-id")
            .and_then(Value::as_i64)
            .map(|v| v as i32)
            .unwrap_or(1000 + i as i32);
        let source_id = f.get("source-id").and_then(Value::as_i64).or_else(|| {
            f.get("source-ids")
                .and_then(Value::as_array)
                .and_then(|a| a.first())
                .and_then(Value::as_i64)
        });
        let source = source_id
            .and_then(|id| types.get(&id))
            .and_then(|t| PType::parse(t));
        let avro_type = avro_fields.and_then(|r| {
            r.fields
                .iter()
                .find(|af| af.field_id == Some(field_id))
                .map(|af| PType::from_avro(&af.schema))
        });
        let ptype = result_type(transform, source)
            .or(avro_type)
            .unwrap_or(PType::Binary);
        out.push(PartitionField {
            name: name.to_owned(),
            field_id,
            transform: transform.to_owned(),
            ptype,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn types_a_source_nested_deeper_than_serde_json_parses_by_default() {
        // a date column under 60 nested structs: about 180 levels of JSON
        let mut ty =
            r#"{"type":"struct","fields":[{"id":1000,"name":"d","required":false,"type":"date"}]}"#
                .to_owned();
        for i in 0..60 {
            ty = format!(
                r#"{{"type":"struct","fields":[{{"id":{},"name":"f","required":false,"type":{ty}}}]}}"#,
                i + 2
            );
        }
        let schema = format!(
            r#"{{"type":"struct","schema-id":0,"fields":[{{"id":1,"name":"x","required":false,"type":{ty}}}]}}"#
        );
        let spec = r#"[{"name":"m","transform":"month","source-id":1000,"field-id":1000},
            {"name":"d","transform":"identity","source-id":1000,"field-id":1001}]"#;
        let f = partition_fields(Some(spec), Some(&schema), None).unwrap();
        assert_eq!(f[0].ptype, PType::Int);
        assert_eq!(f[1].ptype, PType::Date);
        // beyond the bound: refused as unsupported, not called corrupt
        let deep = format!("{}{}", "[".repeat(5000), "]".repeat(5000));
        let e = partition_fields(Some(spec), Some(&deep), None).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
    }

    #[test]
    fn types_partition_fields() {
        let schema = r#"{"type":"struct","schema-id":0,"fields":[
            {"id":1,"name":"id","required":true,"type":"long"},
            {"id":2,"name":"ts","required":false,"type":"timestamptz"},
            {"id":3,"name":"s","required":false,"type":"string"},
            {"id":4,"name":"d","required":false,"type":"decimal(9, 2)"}]}"#;
        let spec = r#"[{"name":"id_bucket","transform":"bucket[16]","source-id":1,"field-id":1000},
            {"name":"ts_day","transform":"day","source-id":2,"field-id":1001},
            {"name":"s","transform":"truncate[3]","source-id":3,"field-id":1002},
            {"name":"d","transform":"identity","source-id":4,"field-id":1003},
            {"name":"z","transform":"zorder","source-id":4,"field-id":1004}]"#;
        let f = partition_fields(Some(spec), Some(schema), None).unwrap();
        let t: Vec<_> = f.iter().map(|f| f.ptype.clone()).collect();
        assert_eq!(
            t,
            vec![
                PType::Int,
                PType::Date,
                PType::String,
                PType::Decimal(9, 2),
                PType::Binary
            ]
        );
        assert_eq!(decimal_size(9), 4);
        assert_eq!(decimal_size(38), 16);
        assert_eq!(decimal_size(10), 5);
    }
}
