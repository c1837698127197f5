//! Binary single-value serialisation (spec Appendix D), used for manifest lower/upper bounds,
//! partition field summaries and sketch inputs: little-endian fixed-width numbers, raw UTF-8 and
//! bytes, big-endian uuids, and decimals as minimal two's-complement big-endian unscaled values.
//!
//! Readers follow the reference implementation on type promotion: a `long` may be read from 4
//! bytes (an `int` bound written before promotion) and a `double` from 4 bytes (a `float` bound).

use super::primitive::{PrimitiveType, Value};
use crate::transforms::murmur::minimal_twos_complement;
use crate::{Error, Result};

fn not_supported(t: &PrimitiveType) -> Error {
    Error::validation(format!(
        "type {} has no binary single-value serialisation",
        t.name()
    ))
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

fn bad_len(t: &PrimitiveType, data: &[u8], want: &str) -> Error {
    Error::validation(format!(
        "invalid binary value for type {}: {} bytes (expected {want}): {}",
        t.name(),
        data.len(),
        hex(data)
    ))
}

/// Serialises one value of type `t`.
pub fn to_bytes(t: &PrimitiveType, v: &Value) -> Result<Vec<u8>> {
    t.check(v)?;
    Ok(match (t, v) {
        (PrimitiveType::Boolean, Value::Bool(b)) => vec![u8::from(*b)],
        (PrimitiveType::Int | PrimitiveType::Date, Value::Int(i)) => {
            (*i as i32).to_le_bytes().to_vec()
        }
        (
            PrimitiveType::Long
            | PrimitiveType::Time
            | PrimitiveType::Timestamp
            | PrimitiveType::Timestamptz
            | PrimitiveType::TimestampNs
            | PrimitiveType::TimestamptzNs,
            Value::Int(i),
        ) => (*i as i64).to_le_bytes().to_vec(),
        (PrimitiveType::Decimal { .. }, Value::Int(i)) => {
            minimal_twos_complement(&i.to_be_bytes()).to_vec()
        }
        (PrimitiveType::Float, Value::Float(f)) => (*f as f32).to_le_bytes().to_vec(),
        (PrimitiveType::Double, Value::Float(f)) => f.to_le_bytes().to_vec(),
        (PrimitiveType::String, Value::Str(s)) => s.as_bytes().to_vec(),
        (
            PrimitiveType::Uuid | PrimitiveType::Fixed(_) | PrimitiveType::Binary,
            Value::Bytes(b),
        ) => b.clone(),
        _ => return Err(not_supported(t)),
    })
}

/// Sign-extends big-endian two's-complement bytes (1 to 16 of them) to an i128.
pub fn decimal_from_be(data: &[u8]) -> Option<i128> {
    if data.is_empty() || data.len() > 16 {
        return None;
    }
    let fill = if data[0] & 0x80 != 0 { 0xff } else { 0x00 };
    let mut buf = [fill; 16];
    buf[16 - data.len()..].copy_from_slice(data);
    Some(i128::from_be_bytes(buf))
}

/// Deserialises one value of type `t`.
pub fn from_bytes(t: &PrimitiveType, data: &[u8]) -> Result<Value> {
    let le4 = |d: &[u8]| i32::from_le_bytes([d[0], d[1], d[2], d[3]]);
    let le8 = |d: &[u8]| i64::from_le_bytes(d.try_into().expect("8 bytes"));
    let v = match t {
        PrimitiveType::Boolean => match data {
            [b] => Value::Bool(*b != 0),
            _ => return Err(bad_len(t, data, "1")),
        },
        PrimitiveType::Int | PrimitiveType::Date => match data.len() {
            4 => Value::Int(le4(data) as i128),
            _ => return Err(bad_len(t, data, "4")),
        },
        PrimitiveType::Long => match data.len() {
            4 => Value::Int(le4(data) as i128),
            8 => Value::Int(le8(data) as i128),
            _ => return Err(bad_len(t, data, "8, or 4 for a promoted int")),
        },
        PrimitiveType::Time
        | PrimitiveType::Timestamp
        | PrimitiveType::Timestamptz
        | PrimitiveType::TimestampNs
        | PrimitiveType::TimestamptzNs => match data.len() {
            8 => Value::Int(le8(data) as i128),
            _ => return Err(bad_len(t, data, "8")),
        },
        PrimitiveType::Float => match data.len() {
            4 => Value::Float(f32::from_bits(le4(data) as u32) as f64),
            _ => return Err(bad_len(t, data, "4")),
        },
        PrimitiveType::Double => match data.len() {
            4 => Value::Float(f32::from_bits(le4(data) as u32) as f64),
            8 => Value::Float(f64::from_bits(le8(data) as u64)),
            _ => return Err(bad_len(t, data, "8, or 4 for a promoted float")),
        },
        PrimitiveType::Decimal { .. } => match decimal_from_be(data) {
            Some(i) => Value::Int(i),
            None => return Err(bad_len(t, data, "1 to 16")),
        },
        PrimitiveType::String => match std::str::from_utf8(data) {
            Ok(s) => Value::Str(s.to_owned()),
            Err(e) => {
                return Err(Error::validation(format!(
                    "invalid binary value for type string: {e}: {}",
                    hex(data)
                )))
            }
        },
        PrimitiveType::Uuid => match data.len() {
            16 => Value::Bytes(data.to_vec()),
            _ => return Err(bad_len(t, data, "16")),
        },
        PrimitiveType::Fixed(l) => {
            if data.len() != *l {
                return Err(bad_len(t, data, &l.to_string()));
            }
            Value::Bytes(data.to_vec())
        }
        PrimitiveType::Binary => Value::Bytes(data.to_vec()),
        _ => return Err(not_supported(t)),
    };
    Ok(v)
}

/// A geometry/geography bound point: `x:y`, `x:y:z` or `x:y:z:m` of 8-byte little-endian
/// doubles, with a NaN z when only m is set (spec "Bound serialization").
pub fn point_to_bytes(x: f64, y: f64, z: Option<f64>, m: Option<f64>) -> Vec<u8> {
    let mut out = Vec::with_capacity(32);
    out.extend_from_slice(&x.to_le_bytes());
    out.extend_from_slice(&y.to_le_bytes());
    match (z, m) {
        (None, None) => {}
        (Some(z), None) => out.extend_from_slice(&z.to_le_bytes()),
        (z, Some(m)) => {
            out.extend_from_slice(&z.unwrap_or(f64::NAN).to_le_bytes());
            out.extend_from_slice(&m.to_le_bytes());
        }
    }
    out
}

/// The point of a geometry/geography bound: (x, y, z, m), where a NaN z in the 4-coordinate
/// form means z is unset.
pub type Point = (f64, f64, Option<f64>, Option<f64>);

/// Reads a geometry/geography bound point (see [`point_to_bytes`]).
pub fn point_from_bytes(data: &[u8]) -> Result<Point> {
    let c = |i: usize| f64::from_le_bytes(data[i * 8..i * 8 + 8].try_into().expect("8 bytes"));
    match data.len() {
        16 => Ok((c(0), c(1), None, None)),
        24 => Ok((c(0), c(1), Some(c(2)), None)),
        32 => {
            let z = c(2);
            Ok((
                c(0),
                c(1),
                if z.is_nan() { None } else { Some(z) },
                Some(c(3)),
            ))
        }
        _ => Err(Error::validation(format!(
            "invalid geometry bound point: {} bytes (expected 16, 24 or 32): {}",
            data.len(),
            hex(data)
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use PrimitiveType as T;

    fn unhex(s: &str) -> Vec<u8> {
        let s: String = s.split_whitespace().collect();
        (0..s.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
            .collect()
    }

    fn round_trip(t: T, v: Value, hexbytes: &str) {
        let b = to_bytes(&t, &v).unwrap();
        assert_eq!(b, unhex(hexbytes), "{t:?} {v:?}");
        assert_eq!(from_bytes(&t, &b).unwrap(), v, "{t:?}");
    }

    #[test]
    fn spec_vectors() {
        // spec-facts.md 3.3 (TestConversions)
        round_trip(T::Boolean, Value::Bool(false), "00");
        round_trip(T::Boolean, Value::Bool(true), "01");
        assert_eq!(from_bytes(&T::Boolean, &[7]).unwrap(), Value::Bool(true));
        round_trip(T::Int, Value::Int(84202), "ea480100");
        round_trip(T::Long, Value::Int(200), "c800000000000000");
        round_trip(T::Float, Value::Float(-4.5), "000090c0");
        round_trip(T::Double, Value::Float(6.0), "0000000000001840");
        round_trip(T::Date, Value::Int(1000), "e8030000");
        round_trip(T::Time, Value::Int(10000), "1027000000000000");
        round_trip(T::Timestamp, Value::Int(400000), "801a060000000000");
        round_trip(T::Timestamptz, Value::Int(400000), "801a060000000000");
        round_trip(T::TimestampNs, Value::Int(400000000), "0084d71700000000");
        round_trip(T::TimestamptzNs, Value::Int(400000000), "0084d71700000000");
        round_trip(T::String, Value::Str("ABC".into()), "414243");
        round_trip(T::Fixed(2), Value::Bytes(b"ab".to_vec()), "6162");
        round_trip(T::Binary, Value::Bytes(b"Z".to_vec()), "5a");
        let dec = |p, s| T::Decimal {
            precision: p,
            scale: s,
        };
        round_trip(dec(3, 2), Value::Int(345), "0159");
        round_trip(dec(7, 4), Value::Int(1234567), "12d687");
        round_trip(dec(7, 4), Value::Int(-1234567), "ed2979");
        round_trip(dec(10, 3), Value::Int(11), "0b");
        let uuid = unhex("f79c3e09677c4bbda4793f349cb785e7");
        round_trip(
            T::Uuid,
            Value::Bytes(uuid),
            "f79c3e09677c4bbda4793f349cb785e7",
        );
    }

    #[test]
    fn promotion_and_errors() {
        assert_eq!(
            from_bytes(&T::Long, &unhex("ea480100")).unwrap(),
            Value::Int(84202)
        );
        assert_eq!(
            from_bytes(&T::Double, &unhex("000090c0")).unwrap(),
            Value::Float(-4.5)
        );
        let e = from_bytes(&T::Int, &[1, 2]).unwrap_err();
        assert!(e.message().contains("0102"), "{e}");
        assert!(from_bytes(&T::String, &[0xff]).is_err());
        assert!(from_bytes(&T::Uuid, &[0; 15]).is_err());
        assert!(to_bytes(&T::Fixed(3), &Value::Bytes(vec![1])).is_err());
        assert!(to_bytes(&T::Variant, &Value::Bytes(vec![1])).is_err());
        assert!(from_bytes(
            &T::Decimal {
                precision: 3,
                scale: 0
            },
            &[]
        )
        .is_err());
    }

    #[test]
    fn points() {
        let b = point_to_bytes(1.0, 2.0, None, Some(4.0));
        assert_eq!(&b[16..24], &unhex("000000000000f87f")[..]);
        assert_eq!(point_from_bytes(&b).unwrap(), (1.0, 2.0, None, Some(4.0)));
        let b = point_to_bytes(1.0, 2.0, Some(3.0), None);
        assert_eq!(point_from_bytes(&b).unwrap(), (1.0, 2.0, Some(3.0), None));
        assert!(point_from_bytes(&[0; 17]).is_err());
    }
}
