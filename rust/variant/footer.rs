//! Annotating variant columns in a written Parquet file's footer.
//!
//! pyarrow cannot write the Parquet `VARIANT` logical type, and readers such as DuckDB need it to
//! tell a variant group from an ordinary struct. After pyarrow has written a file, the footer
//! (Thrift compact `FileMetaData`) is decoded into a generic tree, the `logicalType` (field 10)
//! of each variant group's `SchemaElement` is set to `VARIANT{specification_version: 1}` (union
//! member 16), and the footer is encoded again. The data pages do not move, so page offsets,
//! page CRCs and statistics stay valid; only the footer and its length change.

use crate::{Error, Result};

const T_TRUE: u8 = 1;
const T_FALSE: u8 = 2;
const T_BYTE: u8 = 3;
const T_I16: u8 = 4;
const T_I32: u8 = 5;
const T_I64: u8 = 6;
const T_DOUBLE: u8 = 7;
const T_BINARY: u8 = 8;
const T_LIST: u8 = 9;
const T_SET: u8 = 10;
const T_MAP: u8 = 11;
const T_STRUCT: u8 = 12;
const MAX_DEPTH: usize = 32;

/// One Thrift value, as much as the compact protocol says about it.
#[derive(Debug, Clone, PartialEq)]
enum Value {
    Bool(bool),
    Byte(u8),
    Int(u8, i64),
    Double([u8; 8]),
    Binary(Vec<u8>),
    /// List or set: the container type, element type and elements.
    List(u8, u8, Vec<Value>),
    Map(u8, u8, Vec<(Value, Value)>),
    Struct(Vec<(i16, Value)>),
}

fn corrupt(msg: &str) -> Error {
    Error::corrupt(format!("Parquet footer: {msg}"))
}

struct Reader<'a> {
    buf: &'a [u8],
    pos: usize,
}

impl Reader<'_> {
    fn byte(&mut self) -> Result<u8> {
        let b = *self.buf.get(self.pos).ok_or_else(|| corrupt("truncated"))?;
        self.pos += 1;
        Ok(b)
    }

    fn varint(&mut self) -> Result<u64> {
        let mut out = 0u64;
        for shift in (0..70).step_by(7) {
            let b = self.byte()?;
            out |= u64::from(b & 0x7f) << shift;
            if b & 0x80 == 0 {
                return Ok(out);
            }
        }
        Err(corrupt("varint too long"))
    }

    fn zigzag(&mut self) -> Result<i64> {
        let v = self.varint()?;
        Ok((v >> 1) as i64 ^ -((v & 1) as i64))
    }

    fn bytes(&mut self, n: usize) -> Result<&[u8]> {
        let end = self.pos.checked_add(n).filter(|&e| e <= self.buf.len());
        let end = end.ok_or_else(|| corrupt("truncated"))?;
        let out = &self.buf[self.pos..end];
        self.pos = end;
        Ok(out)
    }

    fn value(&mut self, t: u8, depth: usize) -> Result<Value> {
        if depth > MAX_DEPTH {
            return Err(corrupt("nested too deeply"));
        }
        Ok(match t {
            T_TRUE | T_FALSE => Value::Bool(self.byte()? == T_TRUE),
            T_BYTE => Value::Byte(self.byte()?),
            T_I16 | T_I32 | T_I64 => Value::Int(t, self.zigzag()?),
            T_DOUBLE => Value::Double(self.bytes(8)?.try_into().expect("8 bytes")),
            T_BINARY => {
                let n = usize::try_from(self.varint()?).map_err(|_| corrupt("bad length"))?;
                Value::Binary(self.bytes(n)?.to_vec())
            }
            T_LIST | T_SET => {
                let h = self.byte()?;
                let mut n = u64::from(h >> 4);
                if n == 15 {
                    n = self.varint()?;
                }
                let et = h & 0x0f;
                let n = usize::try_from(n).map_err(|_| corrupt("bad length"))?;
                if n > self.buf.len() {
                    return Err(corrupt("list longer than the footer"));
                }
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    items.push(self.value(et, depth + 1)?);
                }
                Value::List(t, et, items)
            }
            T_MAP => {
                let n = usize::try_from(self.varint()?).map_err(|_| corrupt("bad length"))?;
                if n > self.buf.len() {
                    return Err(corrupt("map longer than the footer"));
                }
                let (kt, vt) = if n > 0 {
                    let h = self.byte()?;
                    (h >> 4, h & 0x0f)
                } else {
                    (0, 0)
                };
                let mut items = Vec::with_capacity(n);
                for _ in 0..n {
                    let k = self.value(kt, depth + 1)?;
                    items.push((k, self.value(vt, depth + 1)?));
                }
                Value::Map(kt, vt, items)
            }
            T_STRUCT => Value::Struct(self.fields(depth + 1)?),
            other => return Err(corrupt(&format!("unknown Thrift type {other}"))),
        })
    }

    fn fields(&mut self, depth: usize) -> Result<Vec<(i16, Value)>> {
        let mut out = Vec::new();
        let mut last: i16 = 0;
        loop {
            let h = self.byte()?;
            if h == 0 {
                return Ok(out);
            }
            let t = h & 0x0f;
            let delta = i16::from(h >> 4);
            let id = if delta == 0 {
                i16::try_from(self.zigzag()?).map_err(|_| corrupt("bad field id"))?
            } else {
                last.checked_add(delta)
                    .ok_or_else(|| corrupt("bad field id"))?
            };
            let v = if t == T_TRUE || t == T_FALSE {
                Value::Bool(t == T_TRUE) // a struct's boolean lives in the field header
            } else {
                self.value(t, depth)?
            };
            out.push((id, v));
            last = id;
        }
    }
}

fn put_varint(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8 & 0x7f) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

fn put_zigzag(out: &mut Vec<u8>, v: i64) {
    put_varint(out, ((v << 1) ^ (v >> 63)) as u64);
}

fn type_of(v: &Value) -> u8 {
    match v {
        Value::Bool(true) => T_TRUE,
        Value::Bool(false) => T_FALSE,
        Value::Byte(_) => T_BYTE,
        Value::Int(t, _) | Value::List(t, _, _) => *t,
        Value::Double(_) => T_DOUBLE,
        Value::Binary(_) => T_BINARY,
        Value::Map(..) => T_MAP,
        Value::Struct(_) => T_STRUCT,
    }
}

fn put_value(out: &mut Vec<u8>, v: &Value) {
    match v {
        Value::Bool(b) => out.push(if *b { T_TRUE } else { T_FALSE }),
        Value::Byte(b) => out.push(*b),
        Value::Int(_, i) => put_zigzag(out, *i),
        Value::Double(d) => out.extend_from_slice(d),
        Value::Binary(b) => {
            put_varint(out, b.len() as u64);
            out.extend_from_slice(b);
        }
        Value::List(_, et, items) => {
            if items.len() < 15 {
                out.push(((items.len() as u8) << 4) | et);
            } else {
                out.push(0xf0 | et);
                put_varint(out, items.len() as u64);
            }
            items.iter().for_each(|i| put_value(out, i));
        }
        Value::Map(kt, vt, items) => {
            put_varint(out, items.len() as u64);
            if !items.is_empty() {
                out.push((kt << 4) | vt);
            }
            for (k, v) in items {
                put_value(out, k);
                put_value(out, v);
            }
        }
        Value::Struct(fields) => put_fields(out, fields),
    }
}

fn put_fields(out: &mut Vec<u8>, fields: &[(i16, Value)]) {
    let mut last: i16 = 0;
    for (id, v) in fields {
        let t = type_of(v);
        if *id > last && *id - last <= 15 {
            out.push((((*id - last) as u8) << 4) | t);
        } else {
            out.push(t);
            put_zigzag(out, i64::from(*id));
        }
        if !matches!(v, Value::Bool(_)) {
            put_value(out, v);
        }
        last = *id;
    }
    out.push(0);
}

fn get(fields: &[(i16, Value)], id: i16) -> Option<&Value> {
    fields.iter().find(|(i, _)| *i == id).map(|(_, v)| v)
}

/// `VARIANT{specification_version: 1}` as a `LogicalType` union value.
fn variant_logical_type() -> Value {
    Value::Struct(vec![(16, Value::Struct(vec![(1, Value::Byte(1))]))])
}

/// Sets the VARIANT logical type on the schema groups whose field ids are in `field_ids`, in a
/// serialised `FileMetaData`. Returns the new footer and how many groups were annotated.
pub fn annotate_footer(footer: &[u8], field_ids: &[i32]) -> Result<(Vec<u8>, usize)> {
    let mut r = Reader {
        buf: footer,
        pos: 0,
    };
    let mut meta = r.fields(0)?;
    if r.pos != footer.len() {
        return Err(corrupt("trailing bytes after FileMetaData"));
    }
    let mut count = 0;
    for (id, v) in meta.iter_mut() {
        let (2, Value::List(_, T_STRUCT, elements)) = (*id, v) else {
            continue;
        };
        for el in elements.iter_mut() {
            let Value::Struct(fields) = el else { continue };
            let is_group = matches!(get(fields, 5), Some(Value::Int(_, n)) if *n > 0);
            let fid = match get(fields, 9) {
                Some(Value::Int(_, f)) => *f,
                _ => continue,
            };
            if !is_group || !field_ids.iter().any(|&f| i64::from(f) == fid) {
                continue;
            }
            fields.retain(|(i, _)| *i != 10);
            let at = fields
                .iter()
                .position(|(i, _)| *i > 10)
                .unwrap_or(fields.len());
            fields.insert(at, (10, variant_logical_type()));
            count += 1;
        }
    }
    let mut out = Vec::with_capacity(footer.len() + 16);
    put_fields(&mut out, &meta);
    Ok((out, count))
}

/// Rewrites the end of a Parquet file: `tail` is the file's last bytes (the whole footer, its
/// length and `PAR1` included); the result replaces them. Every field id in `field_ids` must
/// name a group of the schema.
pub fn annotate_file_tail(tail: &[u8], field_ids: &[i32]) -> Result<Vec<u8>> {
    let n = tail.len();
    if n < 8 || &tail[n - 4..] != b"PAR1" {
        return Err(corrupt("no PAR1 magic at the end of the file"));
    }
    let len = u32::from_le_bytes(tail[n - 8..n - 4].try_into().expect("4 bytes")) as usize;
    let start = (n - 8)
        .checked_sub(len)
        .ok_or_else(|| Error::internal("the held file tail is shorter than the footer"))?;
    let (footer, count) = annotate_footer(&tail[start..n - 8], field_ids)?;
    if count != field_ids.len() {
        return Err(Error::internal(format!(
            "annotated {count} of {} variant columns: a field id does not name a group",
            field_ids.len()
        )));
    }
    let len = u32::try_from(footer.len()).map_err(|_| Error::internal("footer over 4 GiB"))?;
    let mut out = Vec::with_capacity(start + footer.len() + 8);
    out.extend_from_slice(&tail[..start]);
    out.extend_from_slice(&footer);
    out.extend_from_slice(&len.to_le_bytes());
    out.extend_from_slice(b"PAR1");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A small FileMetaData: version, a schema of root + a group (field id 3, two children) +
    /// two leaves, num_rows, a key/value list and a bool inside a nested struct.
    fn sample() -> Vec<u8> {
        let leaf = |name: &str| {
            Value::Struct(vec![
                (1, Value::Int(T_I32, 6)),
                (3, Value::Int(T_I32, 0)),
                (4, Value::Binary(name.as_bytes().to_vec())),
            ])
        };
        let meta = vec![
            (1, Value::Int(T_I32, 2)),
            (
                2,
                Value::List(
                    T_LIST,
                    T_STRUCT,
                    vec![
                        Value::Struct(vec![
                            (4, Value::Binary(b"schema".to_vec())),
                            (5, Value::Int(T_I32, 1)),
                        ]),
                        Value::Struct(vec![
                            (3, Value::Int(T_I32, 1)),
                            (4, Value::Binary(b"v".to_vec())),
                            (5, Value::Int(T_I32, 2)),
                            (9, Value::Int(T_I32, 3)),
                        ]),
                        leaf("metadata"),
                        leaf("value"),
                    ],
                ),
            ),
            (3, Value::Int(T_I64, -5_000_000_000)),
            (
                5,
                Value::Struct(vec![(1, Value::Bool(true)), (200, Value::Double([1; 8]))]),
            ),
            (
                7,
                Value::Map(
                    T_BINARY,
                    T_I32,
                    vec![(Value::Binary(vec![]), Value::Int(T_I32, -1))],
                ),
            ),
        ];
        let mut out = Vec::new();
        put_fields(&mut out, &meta);
        out
    }

    #[test]
    fn decode_encode_is_identity() {
        let bytes = sample();
        let mut r = Reader {
            buf: &bytes,
            pos: 0,
        };
        let fields = r.fields(0).unwrap();
        let mut again = Vec::new();
        put_fields(&mut again, &fields);
        assert_eq!(again, bytes);
        assert_eq!(annotate_footer(&bytes, &[]).unwrap(), (bytes.clone(), 0));
    }

    #[test]
    fn annotates_the_group_only() {
        let bytes = sample();
        let (out, n) = annotate_footer(&bytes, &[3]).unwrap();
        assert_eq!(n, 1);
        let mut r = Reader { buf: &out, pos: 0 };
        let fields = r.fields(0).unwrap();
        let Some(Value::List(_, _, schema)) = get(&fields, 2) else {
            panic!()
        };
        let Value::Struct(group) = &schema[1] else {
            panic!()
        };
        assert_eq!(get(group, 10), Some(&variant_logical_type()));
        let ids: Vec<i16> = group.iter().map(|(i, _)| *i).collect();
        assert_eq!(ids, vec![3, 4, 5, 9, 10]);
        // A second pass replaces instead of duplicating.
        assert_eq!(annotate_footer(&out, &[3]).unwrap().0, out);
    }

    #[test]
    fn tail_is_rewritten_with_the_new_length() {
        let footer = sample();
        let mut file = b"PAR1pagebytes".to_vec();
        file.extend_from_slice(&footer);
        file.extend_from_slice(&(footer.len() as u32).to_le_bytes());
        file.extend_from_slice(b"PAR1");
        let out = annotate_file_tail(&file, &[3]).unwrap();
        assert_eq!(&out[..13], b"PAR1pagebytes");
        let n = out.len();
        let len = u32::from_le_bytes(out[n - 8..n - 4].try_into().unwrap()) as usize;
        assert_eq!(len, n - 8 - 13);
        assert!(
            annotate_file_tail(&file, &[4]).is_err(),
            "a leaf is not a group"
        );
        assert!(annotate_file_tail(&file[..file.len() - 1], &[3]).is_err());
    }

    #[test]
    fn garbage_is_an_error_not_a_panic() {
        let bytes = sample();
        for cut in 0..bytes.len() {
            let _ = annotate_footer(&bytes[..cut], &[3]);
        }
        let _ = annotate_footer(&[0x0c; 64], &[3]);
    }
}
