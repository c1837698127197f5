//! Iceberg primitive types as the serde sees them (parsed from the spec's JSON type strings) and
//! the physical value every primitive is carried as:
//!
//! | type | [`Value`] |
//! |---|---|
//! | boolean | `Bool` |
//! | int, long, date (days), time (micros), timestamp[tz] (micros), timestamp[tz]_ns (nanos) | `Int` |
//! | decimal(P, S) | `Int` (the unscaled value) |
//! | float, double | `Float` |
//! | string | `Str` |
//! | uuid (16 bytes, big-endian), fixed(L), binary | `Bytes` |

use crate::{Error, Result};

/// A primitive Iceberg type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PrimitiveType {
    Boolean,
    Int,
    Long,
    Float,
    Double,
    Decimal { precision: u32, scale: i32 },
    Date,
    Time,
    Timestamp,
    Timestamptz,
    TimestampNs,
    TimestamptzNs,
    String,
    Uuid,
    Fixed(usize),
    Binary,
    Unknown,
    Variant,
    Geometry,
    Geography,
}

/// The physical value of a primitive (see the module table).
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
    Bytes(Vec<u8>),
}

fn args<'a>(s: &'a str, name: &str, open: char, close: char) -> Option<&'a str> {
    s.strip_prefix(name)?
        .trim_start()
        .strip_prefix(open)?
        .strip_suffix(close)
}

impl PrimitiveType {
    /// Parses the spec's JSON type string (`int`, `decimal(9,2)`, `fixed[16]`, ...).
    pub fn parse(s: &str) -> Result<Self> {
        let t = s.trim();
        let bad = || Error::validation(format!("invalid primitive type string: {s:?}"));
        Ok(match t {
            "boolean" => Self::Boolean,
            "int" => Self::Int,
            "long" => Self::Long,
            "float" => Self::Float,
            "double" => Self::Double,
            "date" => Self::Date,
            "time" => Self::Time,
            "timestamp" => Self::Timestamp,
            "timestamptz" => Self::Timestamptz,
            "timestamp_ns" => Self::TimestampNs,
            "timestamptz_ns" => Self::TimestamptzNs,
            "string" => Self::String,
            "uuid" => Self::Uuid,
            "binary" => Self::Binary,
            "unknown" => Self::Unknown,
            "variant" => Self::Variant,
            _ if t.starts_with("geometry") => Self::Geometry,
            _ if t.starts_with("geography") => Self::Geography,
            _ => {
                if let Some(inner) = args(t, "decimal", '(', ')') {
                    let (p, sc) = inner.split_once(',').ok_or_else(bad)?;
                    let precision: u32 = p.trim().parse().map_err(|_| bad())?;
                    let scale: i32 = sc.trim().parse().map_err(|_| bad())?;
                    if precision == 0 || precision > 38 {
                        return Err(Error::validation(format!(
                            "invalid decimal precision {precision} in {s:?} (must be 1..=38)"
                        )));
                    }
                    Self::Decimal { precision, scale }
                } else if let Some(inner) = args(t, "fixed", '[', ']') {
                    let len: usize = inner.trim().parse().map_err(|_| bad())?;
                    Self::Fixed(len)
                } else {
                    return Err(bad());
                }
            }
        })
    }

    /// The spec's type string.
    pub fn name(&self) -> String {
        match self {
            Self::Boolean => "boolean".into(),
            Self::Int => "int".into(),
            Self::Long => "long".into(),
            Self::Float => "float".into(),
            Self::Double => "double".into(),
            Self::Decimal { precision, scale } => format!("decimal({precision},{scale})"),
            Self::Date => "date".into(),
            Self::Time => "time".into(),
            Self::Timestamp => "timestamp".into(),
            Self::Timestamptz => "timestamptz".into(),
            Self::TimestampNs => "timestamp_ns".into(),
            Self::TimestamptzNs => "timestamptz_ns".into(),
            Self::String => "string".into(),
            Self::Uuid => "uuid".into(),
            Self::Fixed(l) => format!("fixed[{l}]"),
            Self::Binary => "binary".into(),
            Self::Unknown => "unknown".into(),
            Self::Variant => "variant".into(),
            Self::Geometry => "geometry".into(),
            Self::Geography => "geography".into(),
        }
    }

    /// The inclusive range of the `Int` value of integer-like types.
    pub fn int_range(&self) -> Option<(i128, i128)> {
        match self {
            Self::Int | Self::Date => Some((i32::MIN as i128, i32::MAX as i128)),
            Self::Long
            | Self::Timestamp
            | Self::Timestamptz
            | Self::TimestampNs
            | Self::TimestamptzNs => Some((i64::MIN as i128, i64::MAX as i128)),
            Self::Time => Some((0, 86_400_000_000 - 1)),
            Self::Decimal { precision, .. } => {
                let max = 10i128.pow(*precision) - 1;
                Some((-max, max))
            }
            _ => None,
        }
    }

    /// Checks that `v` is a valid value of this type: the right variant and in range.
    pub fn check(&self, v: &Value) -> Result<()> {
        let ok = match (self, v) {
            (Self::Boolean, Value::Bool(_)) => true,
            (Self::Float | Self::Double, Value::Float(_)) => true,
            (Self::String, Value::Str(_)) => true,
            (Self::Binary, Value::Bytes(_)) => true,
            (Self::Uuid, Value::Bytes(b)) => {
                if b.len() != 16 {
                    return Err(Error::validation(format!(
                        "invalid uuid value: {} bytes (must be 16)",
                        b.len()
                    )));
                }
                true
            }
            (Self::Fixed(l), Value::Bytes(b)) => {
                if b.len() != *l {
                    return Err(Error::validation(format!(
                        "invalid {} value: {} bytes (must be {l})",
                        self.name(),
                        b.len()
                    )));
                }
                true
            }
            (_, Value::Int(i)) => match self.int_range() {
                Some((lo, hi)) => {
                    if *i < lo || *i > hi {
                        return Err(Error::validation(format!(
                            "value {i} is out of range for type {}",
                            self.name()
                        )));
                    }
                    true
                }
                None => false,
            },
            _ => false,
        };
        if ok {
            Ok(())
        } else {
            Err(Error::validation(format!(
                "invalid value for type {}: {v:?}",
                self.name()
            )))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_type_strings() {
        assert_eq!(
            PrimitiveType::parse("decimal(9, -20)").unwrap(),
            PrimitiveType::Decimal {
                precision: 9,
                scale: -20
            }
        );
        assert_eq!(
            PrimitiveType::parse("fixed[16]").unwrap(),
            PrimitiveType::Fixed(16)
        );
        assert_eq!(
            PrimitiveType::parse("timestamptz_ns").unwrap(),
            PrimitiveType::TimestamptzNs
        );
        assert!(PrimitiveType::parse("decimal(39,2)").is_err());
        assert!(PrimitiveType::parse("struct").is_err());
        assert!(PrimitiveType::parse("fixed[x]").is_err());
    }

    #[test]
    fn checks_ranges() {
        let t = PrimitiveType::Decimal {
            precision: 3,
            scale: 2,
        };
        assert!(t.check(&Value::Int(999)).is_ok());
        assert!(t.check(&Value::Int(1000)).is_err());
        assert!(PrimitiveType::Int.check(&Value::Int(1 << 31)).is_err());
        assert!(PrimitiveType::Int.check(&Value::Str("1".into())).is_err());
        assert!(PrimitiveType::Fixed(2)
            .check(&Value::Bytes(vec![1]))
            .is_err());
    }
}
