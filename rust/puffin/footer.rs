//! The Puffin footer JSON (`FileMetadata`), read leniently about unknown keys and written
//! compactly with keys in the order the Java reference uses.

use serde_json::{Map, Value};

use crate::{Error, Result};

/// One blob's entry in the footer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobMetadata {
    pub blob_type: String,
    pub fields: Vec<i32>,
    pub snapshot_id: i64,
    pub sequence_number: i64,
    pub offset: u64,
    pub length: u64,
    pub compression_codec: Option<String>,
    pub properties: Vec<(String, String)>,
}

/// The footer: blob metadata and file properties (e.g. `created-by`). Properties are JSON
/// objects: the writer keeps the given order, the reader returns them sorted by key.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FileMetadata {
    pub blobs: Vec<BlobMetadata>,
    pub properties: Vec<(String, String)>,
}

fn bad(msg: impl std::fmt::Display) -> Error {
    Error::corrupt(format!("invalid puffin footer: {msg}"))
}

fn req<'a>(obj: &'a Map<String, Value>, key: &str) -> Result<&'a Value> {
    obj.get(key)
        .ok_or_else(|| bad(format!("missing field {key:?}")))
}

fn int(obj: &Map<String, Value>, key: &str) -> Result<i64> {
    req(obj, key)?
        .as_i64()
        .ok_or_else(|| bad(format!("{key:?} is not an integer")))
}

fn string_map(v: Option<&Value>, what: &str) -> Result<Vec<(String, String)>> {
    match v {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(bad(format!("{what} {k:?} is not a string"))),
            })
            .collect(),
        Some(_) => Err(bad(format!("{what} is not an object"))),
    }
}

impl BlobMetadata {
    fn from_value(v: &Value) -> Result<Self> {
        let obj = v
            .as_object()
            .ok_or_else(|| bad("a blob is not an object"))?;
        let blob_type = req(obj, "type")?
            .as_str()
            .ok_or_else(|| bad("\"type\" is not a string"))?
            .to_owned();
        let fields = req(obj, "fields")?
            .as_array()
            .ok_or_else(|| bad("\"fields\" is not a list"))?
            .iter()
            .map(|f| {
                f.as_i64()
                    .and_then(|f| i32::try_from(f).ok())
                    .ok_or_else(|| bad(format!("field id {f} is not an int")))
            })
            .collect::<Result<Vec<_>>>()?;
        let offset = int(obj, "offset")?;
        let length = int(obj, "length")?;
        if offset < 0 || length < 0 {
            return Err(bad(format!(
                "negative blob offset {offset} or length {length}"
            )));
        }
        let compression_codec = match obj.get("compression-codec") {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(_) => return Err(bad("\"compression-codec\" is not a string")),
        };
        Ok(BlobMetadata {
            blob_type,
            fields,
            snapshot_id: int(obj, "snapshot-id")?,
            sequence_number: int(obj, "sequence-number")?,
            offset: offset as u64,
            length: length as u64,
            compression_codec,
            properties: string_map(obj.get("properties"), "blob property")?,
        })
    }

    fn write_json(&self, out: &mut String) {
        out.push_str("{\"type\":");
        out.push_str(&quote(&self.blob_type));
        out.push_str(",\"fields\":[");
        let fields: Vec<String> = self.fields.iter().map(i32::to_string).collect();
        out.push_str(&fields.join(","));
        out.push_str(&format!(
            "],\"snapshot-id\":{},\"sequence-number\":{},\"offset\":{},\"length\":{}",
            self.snapshot_id, self.sequence_number, self.offset, self.length
        ));
        if let Some(codec) = &self.compression_codec {
            out.push_str(",\"compression-codec\":");
            out.push_str(&quote(codec));
        }
        if !self.properties.is_empty() {
            out.push_str(",\"properties\":");
            write_map(&self.properties, out);
        }
        out.push('}');
    }
}

fn quote(s: &str) -> String {
    serde_json::to_string(s).expect("a string always serialises")
}

fn write_map(map: &[(String, String)], out: &mut String) {
    out.push('{');
    for (i, (k, v)) in map.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&quote(k));
        out.push(':');
        out.push_str(&quote(v));
    }
    out.push('}');
}

impl FileMetadata {
    /// Parses the footer payload (UTF-8 JSON).
    pub fn from_json(bytes: &[u8]) -> Result<Self> {
        let v: Value = serde_json::from_slice(bytes).map_err(|e| bad(format!("JSON: {e}")))?;
        let obj = v.as_object().ok_or_else(|| bad("not a JSON object"))?;
        let blobs = req(obj, "blobs")?
            .as_array()
            .ok_or_else(|| bad("\"blobs\" is not a list"))?
            .iter()
            .map(BlobMetadata::from_value)
            .collect::<Result<Vec<_>>>()?;
        Ok(FileMetadata {
            blobs,
            properties: string_map(obj.get("properties"), "file property")?,
        })
    }

    /// The compact footer JSON, keys ordered as Java writes them.
    pub fn to_json(&self) -> String {
        let mut out = String::from("{\"blobs\":[");
        for (i, b) in self.blobs.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            b.write_json(&mut out);
        }
        out.push(']');
        if !self.properties.is_empty() {
            out.push_str(",\"properties\":");
            write_map(&self.properties, &mut out);
        }
        out.push('}');
        out
    }
}
