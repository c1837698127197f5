//! Iterative traversal of encoded variant values (`VariantEncoding.md`), with no nesting limit.
//!
//! The Variant spec sets no depth limit (Spark writes and reads values hundreds of levels deep),
//! while the `parquet-variant` crate's full validation refuses more than 128 levels and recurses
//! once per level. [`walk`] reads objects and arrays itself, keeping its position in an explicit
//! stack (heap memory, bounded by the value's size), and checks everything the crate's full
//! validation checks: header bytes, counts, field ids, field order, offsets and every leaf.
//! Leaves (primitives and short strings) are decoded by the crate. Validation, JSON text and
//! Python values are all visitors of the same walk.

use std::fmt::Write as _;

use chrono::Timelike;
use parquet_variant::{Variant, VariantMetadata};

/// Why the bytes of one variant are not a valid encoding.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Malformed(pub String);

impl std::fmt::Display for Malformed {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn malformed(msg: impl Into<String>) -> Malformed {
    Malformed(msg.into())
}

fn arrow(e: arrow_schema::ArrowError) -> Malformed {
    Malformed(e.to_string())
}

/// What a walk reports, in document order: leaves, the start of each container (with its
/// length), the name of each object field just before its value, and the end of each container.
pub trait Visitor<'m, 'v> {
    type Err: From<Malformed>;
    fn leaf(&mut self, value: Variant<'m, 'v>) -> Result<(), Self::Err>;
    fn begin_array(&mut self, len: usize) -> Result<(), Self::Err>;
    fn begin_object(&mut self, len: usize) -> Result<(), Self::Err>;
    fn key(&mut self, name: &'m str) -> Result<(), Self::Err>;
    fn end(&mut self) -> Result<(), Self::Err>;
}

/// A little-endian unsigned integer of `size` (1 to 4) bytes at `at`.
fn read_uint(bytes: &[u8], at: usize, size: usize) -> Result<usize, Malformed> {
    let end = at
        .checked_add(size)
        .ok_or_else(|| malformed("variant offset overflows"))?;
    let b = bytes.get(at..end).ok_or_else(|| {
        malformed(format!(
            "Tried to extract byte(s) {at}..{end} from {}-byte buffer",
            bytes.len()
        ))
    })?;
    Ok(b.iter()
        .rev()
        .fold(0usize, |acc, &x| (acc << 8) | usize::from(x)))
}

fn range(a: usize, b: usize, what: &str) -> Result<usize, Malformed> {
    a.checked_add(b)
        .ok_or_else(|| malformed(format!("{what} overflows")))
}

fn product(a: usize, b: usize, what: &str) -> Result<usize, Malformed> {
    a.checked_mul(b)
        .ok_or_else(|| malformed(format!("{what} overflows")))
}

/// An array's layout: its element offsets (checked: first zero, non-decreasing, in bounds).
struct ArrayView<'v> {
    len: usize,
    offset_size: usize,
    offsets: &'v [u8],
    values: &'v [u8],
}

impl<'v> ArrayView<'v> {
    fn parse(bytes: &'v [u8]) -> Result<Self, Malformed> {
        let header = bytes[0] >> 2;
        let offset_size = usize::from(header & 0x03) + 1;
        let count_size = if header & 0x04 != 0 { 4 } else { 1 };
        let len = read_uint(bytes, 1, count_size)?;
        let offsets_start = 1 + count_size;
        let values_start = range(
            offsets_start,
            product(len + 1, offset_size, "variant array offsets")?,
            "variant array offsets",
        )?;
        let offsets = bytes.get(offsets_start..values_start).ok_or_else(|| {
            malformed(format!(
                "variant array of {len} elements needs {values_start} bytes of header and \
                 offsets, has {}",
                bytes.len()
            ))
        })?;
        let view = ArrayView {
            len,
            offset_size,
            offsets,
            values: &[],
        };
        let first = view.offset(0)?;
        if first != 0 {
            return Err(malformed(format!("First offset is not zero: {first}")));
        }
        let mut prev = 0;
        for i in 1..=len {
            let next = view.offset(i)?;
            if next < prev {
                return Err(malformed(format!(
                    "variant array offsets decrease: {prev} then {next}"
                )));
            }
            prev = next;
        }
        let end = range(values_start, prev, "variant array size")?;
        let values = bytes.get(values_start..end).ok_or_else(|| {
            malformed(format!(
                "Tried to extract byte(s) {values_start}..{end} from {}-byte buffer",
                bytes.len()
            ))
        })?;
        Ok(ArrayView { values, ..view })
    }

    fn offset(&self, i: usize) -> Result<usize, Malformed> {
        read_uint(self.offsets, i * self.offset_size, self.offset_size)
    }

    fn element(&self, i: usize) -> Result<&'v [u8], Malformed> {
        let (a, b) = (self.offset(i)?, self.offset(i + 1)?);
        self.values
            .get(a..b)
            .ok_or_else(|| malformed("variant array element out of bounds"))
    }
}

/// An object's layout: field ids (checked: in the dictionary, names strictly ascending) and
/// value offsets (checked: each inside the value area the last offset bounds).
struct ObjectView<'v> {
    len: usize,
    id_size: usize,
    ids: &'v [u8],
    offset_size: usize,
    offsets: &'v [u8],
    values: &'v [u8],
}

impl<'v> ObjectView<'v> {
    fn parse(metadata: &VariantMetadata<'_>, bytes: &'v [u8]) -> Result<Self, Malformed> {
        let header = bytes[0] >> 2;
        let offset_size = usize::from(header & 0x03) + 1;
        let id_size = usize::from((header >> 2) & 0x03) + 1;
        let count_size = if header & 0x10 != 0 { 4 } else { 1 };
        let len = read_uint(bytes, 1, count_size)?;
        let ids_start = 1 + count_size;
        let offsets_start = range(
            ids_start,
            product(len, id_size, "variant object field ids")?,
            "variant object field ids",
        )?;
        let values_start = range(
            offsets_start,
            product(len + 1, offset_size, "variant object offsets")?,
            "variant object offsets",
        )?;
        if values_start > bytes.len() {
            return Err(malformed(format!(
                "variant object of {len} fields needs {values_start} bytes of header, ids and \
                 offsets, has {}",
                bytes.len()
            )));
        }
        let view = ObjectView {
            len,
            id_size,
            ids: &bytes[ids_start..offsets_start],
            offset_size,
            offsets: &bytes[offsets_start..values_start],
            values: &[],
        };
        let last = view.offset(len)?;
        let end = range(values_start, last, "variant object size")?;
        let values = bytes.get(values_start..end).ok_or_else(|| {
            malformed(format!(
                "Tried to extract byte(s) {values_start}..{end} from {}-byte buffer",
                bytes.len()
            ))
        })?;
        let dictionary = metadata.len();
        let sorted = metadata.is_sorted();
        let mut prev: Option<(usize, &str)> = None;
        // Spark 4 orders an object's fields by their names' UTF-16 code units, which differs
        // from the spec's byte order for names mixing U+E000..U+FFFF with characters beyond
        // U+FFFF: such objects are read too (as parquet-java reads them)
        let mut by_utf16 = false;
        for i in 0..len {
            let id = view.id(i)?;
            if id >= dictionary {
                return Err(malformed("field id is not valid"));
            }
            let name = if sorted {
                ""
            } else {
                metadata.get(id).map_err(arrow)?
            };
            if let Some((prev_id, prev_name)) = prev {
                let ordered = if sorted {
                    id > prev_id
                } else if by_utf16 {
                    name.encode_utf16().gt(prev_name.encode_utf16())
                } else {
                    name > prev_name
                };
                if !ordered {
                    if sorted || by_utf16 || !utf16_ordered(&view, metadata, i)? {
                        return Err(malformed("field names not sorted"));
                    }
                    by_utf16 = true;
                }
            }
            prev = Some((id, name));
            let offset = view.offset(i)?;
            if offset >= last {
                return Err(malformed(format!(
                    "variant object field offset {offset} is outside its {last}-byte value area"
                )));
            }
        }
        Ok(ObjectView { values, ..view })
    }

    fn id(&self, i: usize) -> Result<usize, Malformed> {
        read_uint(self.ids, i * self.id_size, self.id_size)
    }

    fn offset(&self, i: usize) -> Result<usize, Malformed> {
        read_uint(self.offsets, i * self.offset_size, self.offset_size)
    }

    /// The field id and value bytes (to the end of the value area) of field `i`.
    fn field(&self, i: usize) -> Result<(usize, &'v [u8]), Malformed> {
        let offset = self.offset(i)?;
        let value = self
            .values
            .get(offset..)
            .ok_or_else(|| malformed("variant object field out of bounds"))?;
        Ok((self.id(i)?, value))
    }
}

/// Whether the names of fields `0..=upto` of `view` are strictly increasing in UTF-16 code
/// unit order (field ids checked by the caller up to `upto - 1`).
fn utf16_ordered(
    view: &ObjectView<'_>,
    metadata: &VariantMetadata<'_>,
    upto: usize,
) -> Result<bool, Malformed> {
    let mut prev: Option<&str> = None;
    for i in 0..=upto {
        let id = view.id(i)?;
        if id >= metadata.len() {
            return Err(malformed("field id is not valid"));
        }
        let name = metadata.get(id).map_err(arrow)?;
        if let Some(p) = prev {
            if !name.encode_utf16().gt(p.encode_utf16()) {
                return Ok(false);
            }
        }
        prev = Some(name);
    }
    Ok(true)
}

enum Frame<'v> {
    Array(ArrayView<'v>, usize),
    Object(ObjectView<'v>, usize),
}

/// Walks one variant value depth first with an explicit stack, checking its encoding as it
/// goes, and reports it to `visitor`. `metadata` must be fully validated (`VariantMetadata::
/// try_new`).
pub fn walk<'m, 'v, V: Visitor<'m, 'v>>(
    metadata: &VariantMetadata<'m>,
    value: &'v [u8],
    visitor: &mut V,
) -> Result<(), V::Err> {
    let mut stack: Vec<Frame<'v>> = Vec::new();
    let mut next: Option<&'v [u8]> = Some(value);
    loop {
        if let Some(bytes) = next.take() {
            let Some(&header) = bytes.first() else {
                return Err(malformed("Received empty bytes").into());
            };
            match header & 0x03 {
                2 => {
                    let view = ObjectView::parse(metadata, bytes)?;
                    visitor.begin_object(view.len)?;
                    stack.push(Frame::Object(view, 0));
                }
                3 => {
                    let view = ArrayView::parse(bytes)?;
                    visitor.begin_array(view.len)?;
                    stack.push(Frame::Array(view, 0));
                }
                _ => {
                    let leaf =
                        Variant::try_new_with_metadata(metadata.clone(), bytes).map_err(arrow)?;
                    visitor.leaf(leaf)?;
                }
            }
        }
        match stack.last_mut() {
            None => return Ok(()),
            Some(Frame::Array(view, i)) if *i < view.len => {
                next = Some(view.element(*i)?);
                *i += 1;
            }
            Some(Frame::Object(view, i)) if *i < view.len => {
                let (id, bytes) = view.field(*i)?;
                *i += 1;
                visitor.key(metadata.get(id).map_err(arrow)?)?;
                next = Some(bytes);
            }
            Some(_) => {
                stack.pop();
                visitor.end()?;
            }
        }
    }
}

/// Checks one encoded variant (metadata and value) in full, at any depth.
pub fn validate(metadata: &[u8], value: &[u8]) -> Result<(), Malformed> {
    let metadata = VariantMetadata::try_new(metadata).map_err(arrow)?;
    walk(&metadata, value, &mut Check)
}

struct Check;

impl<'m, 'v> Visitor<'m, 'v> for Check {
    type Err = Malformed;
    fn leaf(&mut self, _: Variant<'m, 'v>) -> Result<(), Malformed> {
        Ok(())
    }
    fn begin_array(&mut self, _: usize) -> Result<(), Malformed> {
        Ok(())
    }
    fn begin_object(&mut self, _: usize) -> Result<(), Malformed> {
        Ok(())
    }
    fn key(&mut self, _: &'m str) -> Result<(), Malformed> {
        Ok(())
    }
    fn end(&mut self) -> Result<(), Malformed> {
        Ok(())
    }
}

/// Appends the JSON text of one encoded variant to `out`, as the `parquet-variant-json` crate
/// writes it, except that non-finite floats are the strings Jackson writes (`"NaN"`,
/// `"Infinity"`, `"-Infinity"`): JSON has no such numbers.
pub fn write_json(metadata: &[u8], value: &[u8], out: &mut String) -> Result<(), Malformed> {
    let metadata = VariantMetadata::try_new(metadata).map_err(arrow)?;
    let mut w = JsonWriter {
        out,
        open: Vec::new(),
        after_key: false,
    };
    walk(&metadata, value, &mut w)
}

struct JsonWriter<'a> {
    out: &'a mut String,
    /// Per open container: its closing bracket and whether it has no item yet.
    open: Vec<(char, bool)>,
    after_key: bool,
}

impl JsonWriter<'_> {
    fn separate(&mut self) {
        if self.after_key {
            self.after_key = false;
        } else if let Some((_, first)) = self.open.last_mut() {
            if !*first {
                self.out.push(',');
            }
            *first = false;
        }
    }
}

fn json_string(s: &str, out: &mut String) {
    // serde_json's escaping, as the crate's writer uses
    out.push_str(&serde_json::to_string(s).expect("strings always serialize"));
}

fn json_float(s: String, finite: bool, negative: bool, nan: bool, out: &mut String) {
    if finite {
        out.push_str(&s);
    } else if nan {
        out.push_str("\"NaN\"");
    } else if negative {
        out.push_str("\"-Infinity\"");
    } else {
        out.push_str("\"Infinity\"");
    }
}

const BASE64: &[u8; 64] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/// Standard base64 with padding (as the crate writes binary values).
fn base64(bytes: &[u8], out: &mut String) {
    for chunk in bytes.chunks(3) {
        let b = [
            chunk[0],
            chunk.get(1).copied().unwrap_or(0),
            chunk.get(2).copied().unwrap_or(0),
        ];
        let n = (u32::from(b[0]) << 16) | (u32::from(b[1]) << 8) | u32::from(b[2]);
        for k in 0..4 {
            if k <= chunk.len() {
                out.push(BASE64[((n >> (18 - 6 * k)) & 0x3f) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
}

/// The JSON text of one leaf (not an object or array).
fn leaf_json(v: &Variant<'_, '_>, out: &mut String) {
    match v {
        Variant::Null => out.push_str("null"),
        Variant::BooleanTrue => out.push_str("true"),
        Variant::BooleanFalse => out.push_str("false"),
        Variant::Int8(i) => {
            let _ = write!(out, "{i}");
        }
        Variant::Int16(i) => {
            let _ = write!(out, "{i}");
        }
        Variant::Int32(i) => {
            let _ = write!(out, "{i}");
        }
        Variant::Int64(i) => {
            let _ = write!(out, "{i}");
        }
        Variant::Float(f) => {
            let text = if f.is_finite() {
                serde_json::to_string(f).unwrap_or_default()
            } else {
                String::new()
            };
            json_float(text, f.is_finite(), *f < 0.0, f.is_nan(), out)
        }
        Variant::Double(f) => {
            let text = if f.is_finite() {
                serde_json::to_string(f).unwrap_or_default()
            } else {
                String::new()
            };
            json_float(text, f.is_finite(), *f < 0.0, f.is_nan(), out)
        }
        Variant::Decimal4(d) => {
            let _ = write!(out, "{d}");
        }
        Variant::Decimal8(d) => {
            let _ = write!(out, "{d}");
        }
        Variant::Decimal16(d) => {
            let _ = write!(out, "{d}");
        }
        Variant::Date(d) => {
            let _ = write!(out, "\"{}\"", d.format("%Y-%m-%d"));
        }
        Variant::TimestampMicros(t) | Variant::TimestampNanos(t) => {
            let _ = write!(out, "\"{}\"", t.to_rfc3339());
        }
        Variant::TimestampNtzMicros(t) => {
            let _ = write!(out, "\"{}\"", t.format("%Y-%m-%dT%H:%M:%S%.6f"));
        }
        Variant::TimestampNtzNanos(t) => {
            let _ = write!(out, "\"{}\"", t.format("%Y-%m-%dT%H:%M:%S%.9f"));
        }
        Variant::Time(t) => {
            let micros = t.nanosecond() / 1000;
            let _ = write!(out, "\"{}.", t.format("%H:%M:%S"));
            if micros == 0 {
                out.push('0');
            } else {
                let digits = format!("{micros:06}");
                out.push_str(digits.trim_end_matches('0'));
            }
            out.push('"');
        }
        Variant::Binary(b) => {
            out.push('"');
            base64(b, out);
            out.push('"');
        }
        Variant::String(s) => json_string(s, out),
        Variant::ShortString(s) => json_string(s.as_str(), out),
        Variant::Uuid(u) => {
            let _ = write!(out, "\"{u}\"");
        }
        // walk reports containers as begin/end, never as leaves
        Variant::Object(_) | Variant::List(_) => out.push_str("null"),
    }
}

impl<'m, 'v> Visitor<'m, 'v> for JsonWriter<'_> {
    type Err = Malformed;
    fn leaf(&mut self, value: Variant<'m, 'v>) -> Result<(), Malformed> {
        self.separate();
        leaf_json(&value, self.out);
        Ok(())
    }
    fn begin_array(&mut self, _: usize) -> Result<(), Malformed> {
        self.separate();
        self.out.push('[');
        self.open.push((']', true));
        Ok(())
    }
    fn begin_object(&mut self, _: usize) -> Result<(), Malformed> {
        self.separate();
        self.out.push('{');
        self.open.push(('}', true));
        Ok(())
    }
    fn key(&mut self, name: &'m str) -> Result<(), Malformed> {
        self.separate();
        json_string(name, self.out);
        self.out.push(':');
        self.after_key = true;
        Ok(())
    }
    fn end(&mut self) -> Result<(), Malformed> {
        if let Some((close, _)) = self.open.pop() {
            self.out.push(close);
        }
        Ok(())
    }
}
