//! Binding a writer schema to a target Arrow type: the decoder tree of a projected read.

use arrow_schema::{DataType, Field};

use std::sync::Arc;

use super::super::schema::{Field as AvroField, Record, Schema};
use super::super::skip::Skip;
use super::field_id;
use super::mismatch;
use super::node::{KeySet, MapValues, Node, Nulls, Src, Step};
use crate::{Error, Result};

pub(super) fn bind(w: &Schema, t: &DataType, path: &str, keep: Option<&KeySet>) -> Result<Node> {
    if let Schema::Union(branches) = w {
        let (null, value, inner) = w.as_optional().ok_or_else(|| {
            Error::unsupported(format!("field {path}: union {w:?} is not [null, T]"))
        })?;
        return Ok(Node::Opt {
            null,
            value,
            branches: branches.len(),
            inner: Box::new(bind(inner, t, path, keep)?),
        });
    }
    let src = match w {
        Schema::Int => Some(Src::Int),
        Schema::Long => Some(Src::Long),
        Schema::Float => Some(Src::Float),
        Schema::Double => Some(Src::Double),
        Schema::Bytes | Schema::String => Some(Src::Bytes),
        Schema::Fixed(n) => Some(Src::Fixed(*n)),
        _ => None,
    };
    let n = Nulls::default();
    Ok(match (w, t) {
        (Schema::Boolean, DataType::Boolean) => Node::Bool(vec![], n),
        (Schema::Int | Schema::Long, DataType::Int32 | DataType::Date32) => {
            Node::I32(src.unwrap_or(Src::Int), vec![], n)
        }
        (
            Schema::Int | Schema::Long,
            DataType::Int64 | DataType::Timestamp(_, _) | DataType::Time64(_),
        ) => Node::I64(src.unwrap_or(Src::Long), vec![], n),
        (Schema::Float, DataType::Float32) => Node::F32(vec![], n),
        (Schema::Float | Schema::Double, DataType::Float64) => {
            Node::F64(src.unwrap_or(Src::Double), vec![], n)
        }
        (Schema::Bytes | Schema::String | Schema::Fixed(_), DataType::Binary | DataType::Utf8) => {
            Node::Bin(src.unwrap_or(Src::Bytes), vec![0], vec![], n)
        }
        (Schema::Bytes | Schema::Fixed(_), DataType::FixedSizeBinary(size)) => {
            if let Schema::Fixed(f) = w {
                if *f as i32 != *size {
                    return Err(mismatch(w, t, path));
                }
            }
            Node::FixedBin(src.unwrap_or(Src::Bytes), *size as usize, vec![], n)
        }
        (Schema::Bytes | Schema::Fixed(_), DataType::Decimal128(_, _)) => {
            Node::Dec(src.unwrap_or(Src::Bytes), vec![], n)
        }
        (Schema::Map(values), DataType::Map(..)) => {
            // An Avro map is encoded exactly as an array of {string key, value} records (blocks
            // of pairs, each its key's bytes then its value), so it binds as that array.
            let entry = |name: &str, schema: Schema| AvroField {
                name: name.to_owned(),
                schema,
                field_id: None,
            };
            let pairs = Schema::Array {
                items: Box::new(Schema::Record(Arc::new(Record {
                    name: "map_entry".to_owned(),
                    fields: vec![
                        entry("key", Schema::String),
                        entry("value", (**values).clone()),
                    ],
                }))),
                element_id: None,
            };
            return bind(&pairs, t, path, keep);
        }
        (Schema::Array { items, .. }, DataType::List(f) | DataType::Map(f, _)) => {
            let item = bind(items, f.data_type(), path, keep)?;
            let is_map = matches!(t, DataType::Map(..));
            match item {
                Node::Record {
                    steps,
                    children,
                    missing,
                    ..
                } if is_map && missing.is_empty() && int_map_shape(&steps, &children, f) => {
                    let key_first = matches!(steps[0], Step::Read(0));
                    let values = match &children[1] {
                        Node::I64(..) => MapValues::Long(vec![]),
                        _ => MapValues::Bin(vec![0], vec![]),
                    };
                    Node::IntMap {
                        offsets: vec![0],
                        nulls: n,
                        key_first,
                        keys: vec![],
                        values,
                        keep: keep.cloned(),
                    }
                }
                item => Node::List {
                    offsets: vec![0],
                    nulls: n,
                    item_min: items.min_size(),
                    item: Box::new(item),
                },
            }
        }
        (Schema::Record(rec), DataType::Struct(fields)) => {
            let mut matched: Vec<Option<usize>> = vec![None; fields.len()];
            let mut steps = Vec::with_capacity(rec.fields.len());
            let mut children: Vec<Option<Node>> = (0..fields.len()).map(|_| None).collect();
            for wf in &rec.fields {
                let hit = fields
                    .iter()
                    .position(|tf| match (wf.field_id, field_id(tf)) {
                        (Some(a), Some(b)) => a == b,
                        (None, _) | (_, None) => wf.name == *tf.name(),
                    });
                match hit {
                    Some(i) if matched[i].is_none() => {
                        let p = format!("{path}.{}", wf.name);
                        children[i] = Some(bind(&wf.schema, fields[i].data_type(), &p, keep)?);
                        matched[i] = Some(steps.len());
                        steps.push(Step::Read(i));
                    }
                    Some(_) => {
                        return Err(Error::corrupt(format!(
                            "record {path}: field id {:?} appears twice",
                            wf.field_id
                        )))
                    }
                    None => steps.push(Step::Skip(Skip::new(&wf.schema))),
                }
            }
            let missing = (0..fields.len())
                .filter(|&i| matched[i].is_none())
                .collect();
            Node::Record {
                steps,
                children: children
                    .into_iter()
                    .map(|c| c.unwrap_or(Node::Missing(0)))
                    .collect(),
                missing,
                nulls: n,
                len: 0,
            }
        }
        _ => return Err(mismatch(w, t, path)),
    })
}

/// Whether a bound map-entry record is a required int key and a required long or bytes value.
pub(super) fn int_map_shape(steps: &[Step], children: &[Node], entries: &Field) -> bool {
    let order_ok = matches!(
        steps,
        [Step::Read(0), Step::Read(1)] | [Step::Read(1), Step::Read(0)]
    );
    let DataType::Struct(fs) = entries.data_type() else {
        return false;
    };
    order_ok
        && fs.len() == 2
        && fs[0].data_type() == &DataType::Int32
        && matches!(children[0], Node::I32(Src::Int, ..))
        && matches!(
            (&children[1], fs[1].data_type()),
            (Node::I64(Src::Long, ..), DataType::Int64)
                | (Node::Bin(Src::Bytes, ..), DataType::Binary)
        )
}
