//! Avro schemas parsed from the JSON of a container header, keeping the Iceberg field ids
//! (`field-id`, `element-id`, `key-id`, `value-id`) that manifests are resolved by.

use std::collections::HashMap;
use std::sync::Arc;

use serde_json::Value;

use super::binary::Reader;
use crate::{Error, Result};

/// An Avro schema. Named types are resolved while parsing, so the tree has no references.
#[derive(Debug, Clone, PartialEq)]
pub enum Schema {
    Null,
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Bytes,
    String,
    Fixed(usize),
    /// The number of symbols.
    Enum(usize),
    Array {
        items: Box<Schema>,
        element_id: Option<i32>,
    },
    Map(Box<Schema>),
    Record(Arc<Record>),
    Union(Vec<Schema>),
}

#[derive(Debug, Clone, PartialEq)]
pub struct Record {
    pub name: String,
    pub fields: Vec<Field>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub name: String,
    pub schema: Schema,
    pub field_id: Option<i32>,
}

impl Schema {
    /// Parses the `avro.schema` JSON of a container file.
    pub fn parse(json: &[u8]) -> Result<Schema> {
        let v = crate::nested_json::parse(json, "avro.schema")?;
        let mut names = HashMap::new();
        parse(&v, &mut names, 0)
    }

    /// The smallest number of bytes one value of this schema can take.
    pub fn min_size(&self) -> usize {
        match self {
            Schema::Null => 0,
            Schema::Boolean | Schema::Int | Schema::Long | Schema::Bytes | Schema::String => 1,
            Schema::Enum(_) | Schema::Array { .. } | Schema::Map(_) | Schema::Union(_) => 1,
            Schema::Float => 4,
            Schema::Double => 8,
            Schema::Fixed(n) => *n,
            Schema::Record(r) => r.fields.iter().map(|f| f.schema.min_size()).sum(),
        }
    }

    /// If this is `["null", T]` or `[T, "null"]` (or `[T]`): the null branch index and `T`.
    pub fn as_optional(&self) -> Option<(Option<usize>, usize, &Schema)> {
        let Schema::Union(branches) = self else {
            return None;
        };
        let null = branches.iter().position(|b| *b == Schema::Null);
        let others: Vec<usize> = (0..branches.len()).filter(|&i| Some(i) != null).collect();
        match others.as_slice() {
            [i] => Some((null, *i, &branches[*i])),
            _ => None,
        }
    }

    /// Reads past one value of this schema.
    pub fn skip(&self, r: &mut Reader<'_>) -> Result<()> {
        match self {
            Schema::Null => {}
            Schema::Boolean => {
                r.boolean()?;
            }
            Schema::Int | Schema::Long | Schema::Enum(_) => {
                r.long()?;
            }
            Schema::Float => {
                r.fixed(4)?;
            }
            Schema::Double => {
                r.fixed(8)?;
            }
            Schema::Bytes | Schema::String => {
                r.bytes()?;
            }
            Schema::Fixed(n) => {
                r.fixed(*n)?;
            }
            Schema::Array { items, .. } => loop {
                if r.skip_sized_block()?.is_some() {
                    continue;
                }
                let n = r.block_count(items.min_size())?;
                if n == 0 {
                    break;
                }
                for _ in 0..n {
                    items.skip(r)?;
                }
            },
            Schema::Map(values) => loop {
                if r.skip_sized_block()?.is_some() {
                    continue;
                }
                let n = r.block_count(1 + values.min_size())?;
                if n == 0 {
                    break;
                }
                for _ in 0..n {
                    r.bytes()?;
                    values.skip(r)?;
                }
            },
            Schema::Record(rec) => {
                for f in &rec.fields {
                    f.schema.skip(r)?;
                }
            }
            Schema::Union(branches) => {
                let i = r.long()?;
                let b = usize::try_from(i)
                    .ok()
                    .and_then(|i| branches.get(i))
                    .ok_or_else(|| Error::corrupt(format!("unknown union branch {i}")))?;
                b.skip(r)?;
            }
        }
        Ok(())
    }
}

fn bad(msg: impl Into<String>) -> Error {
    Error::corrupt(format!("invalid avro.schema: {}", msg.into()))
}

fn int_prop(obj: &serde_json::Map<String, Value>, key: &str) -> Result<Option<i32>> {
    match obj.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Number(n)) => n
            .as_i64()
            .and_then(|v| i32::try_from(v).ok())
            .map(Some)
            .ok_or_else(|| bad(format!("{key} {n} is not an int"))),
        // Some writers store ids as strings.
        Some(Value::String(s)) => s
            .parse()
            .map(Some)
            .map_err(|_| bad(format!("{key} {s:?} is not an int"))),
        Some(other) => Err(bad(format!("{key} {other} is not an int"))),
    }
}

fn full_name(obj: &serde_json::Map<String, Value>) -> Option<String> {
    let name = obj.get("name")?.as_str()?;
    match obj.get("namespace").and_then(Value::as_str) {
        Some(ns) if !ns.is_empty() && !name.contains('.') => Some(format!("{ns}.{name}")),
        _ => Some(name.to_owned()),
    }
}

fn parse(v: &Value, names: &mut HashMap<String, Schema>, depth: usize) -> Result<Schema> {
    // parsed JSON nests at most this deep, so this only keeps the recursion bounded
    if depth > crate::nested_json::MAX_DEPTH {
        return Err(Error::unsupported(format!(
            "avro.schema nests more than {} types deep",
            crate::nested_json::MAX_DEPTH
        )));
    }
    match v {
        Value::String(s) => primitive(s)
            .or_else(|| names.get(s.as_str()).cloned())
            .or_else(|| {
                // A short name referring to a type defined with a namespace.
                names
                    .iter()
                    .find(|(k, _)| k.rsplit('.').next() == Some(s.as_str()))
                    .map(|(_, v)| v.clone())
            })
            .ok_or_else(|| bad(format!("unknown type {s:?}"))),
        Value::Array(branches) => Ok(Schema::Union(
            branches
                .iter()
                .map(|b| parse(b, names, depth + 1))
                .collect::<Result<_>>()?,
        )),
        Value::Object(obj) => {
            let ty = obj
                .get("type")
                .ok_or_else(|| bad("object without \"type\""))?;
            let Value::String(ty) = ty else {
                // {"type": {...}} wraps another schema.
                return parse(ty, names, depth + 1);
            };
            let schema = match ty.as_str() {
                "record" | "error" => {
                    let fields = obj
                        .get("fields")
                        .and_then(Value::as_array)
                        .ok_or_else(|| bad("record without fields"))?;
                    let mut out = Vec::with_capacity(fields.len());
                    for f in fields {
                        let fo = f.as_object().ok_or_else(|| bad("field is not an object"))?;
                        let name = fo
                            .get("name")
                            .and_then(Value::as_str)
                            .ok_or_else(|| bad("field without name"))?;
                        let fty = fo
                            .get("type")
                            .ok_or_else(|| bad(format!("field {name} without type")))?;
                        out.push(Field {
                            name: name.to_owned(),
                            schema: parse(fty, names, depth + 1)?,
                            field_id: int_prop(fo, "field-id")?,
                        });
                    }
                    Schema::Record(Arc::new(Record {
                        name: obj
                            .get("name")
                            .and_then(Value::as_str)
                            .unwrap_or("")
                            .to_owned(),
                        fields: out,
                    }))
                }
                "enum" => Schema::Enum(
                    obj.get("symbols")
                        .and_then(Value::as_array)
                        .ok_or_else(|| bad("enum without symbols"))?
                        .len(),
                ),
                "fixed" => Schema::Fixed(
                    obj.get("size")
                        .and_then(Value::as_u64)
                        .filter(|&n| n <= 1 << 20)
                        .ok_or_else(|| bad("fixed without a valid size"))?
                        as usize,
                ),
                "array" => Schema::Array {
                    items: Box::new(parse(
                        obj.get("items").ok_or_else(|| bad("array without items"))?,
                        names,
                        depth + 1,
                    )?),
                    element_id: int_prop(obj, "element-id")?,
                },
                "map" => Schema::Map(Box::new(parse(
                    obj.get("values").ok_or_else(|| bad("map without values"))?,
                    names,
                    depth + 1,
                )?)),
                other => primitive(other).ok_or_else(|| bad(format!("unknown type {other:?}")))?,
            };
            if matches!(ty.as_str(), "record" | "error" | "enum" | "fixed") {
                if let Some(n) = full_name(obj) {
                    names.insert(n, schema.clone());
                }
            }
            Ok(schema)
        }
        other => Err(bad(format!("unexpected {other}"))),
    }
}

fn primitive(s: &str) -> Option<Schema> {
    Some(match s {
        "null" => Schema::Null,
        "boolean" => Schema::Boolean,
        "int" => Schema::Int,
        "long" => Schema::Long,
        "float" => Schema::Float,
        "double" => Schema::Double,
        "bytes" => Schema::Bytes,
        "string" => Schema::String,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_ids_and_named_refs() {
        let s = br#"{"type":"record","name":"r","fields":[
            {"name":"a","type":["null","long"],"field-id":1},
            {"name":"f","type":{"type":"fixed","name":"fx","size":4},"field-id":2},
            {"name":"g","type":"fx","field-id":3},
            {"name":"l","type":{"type":"array","items":"int","element-id":7},"field-id":4}]}"#;
        let Schema::Record(r) = Schema::parse(s).unwrap() else {
            panic!()
        };
        assert_eq!(r.fields[0].field_id, Some(1));
        assert_eq!(r.fields[2].schema, Schema::Fixed(4));
        assert!(matches!(
            r.fields[3].schema,
            Schema::Array {
                element_id: Some(7),
                ..
            }
        ));
        assert!(Schema::parse(b"{\"type\":\"nope\"}").is_err());
        assert!(Schema::parse(b"[").is_err());
    }

    #[test]
    fn parses_deeply_nested_optional_records() {
        // 100 optional records: four JSON levels each, well past serde_json's default limit
        let mut ty = r#"["null","long"]"#.to_owned();
        for i in 0..100 {
            ty = format!(
                r#"["null",{{"type":"record","name":"r{i}","fields":[{{"name":"f","type":{ty},"field-id":{i}}}]}}]"#
            );
        }
        let mut s = &Schema::parse(ty.as_bytes()).unwrap();
        let mut levels = 0;
        while let Some((_, _, Schema::Record(r))) = s.as_optional() {
            s = &r.fields[0].schema;
            levels += 1;
        }
        assert_eq!(levels, 100);
        let deep = "[".repeat(2000);
        let e = Schema::parse(deep.as_bytes()).unwrap_err();
        assert!(matches!(e, Error::Unsupported(_)), "{e:?}");
    }
}
