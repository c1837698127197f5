//! Iceberg partition transforms (spec "Partition Transforms") vectorised over Arrow arrays.
//! Every kernel keeps nulls as nulls. Result Arrow types: identity and truncate keep the input
//! type, void returns all nulls of the input type, bucket/year/month/day/hour return int32.

pub mod bucket;
pub mod murmur;
pub mod temporal;
pub mod truncate;

use arrow_array::{new_null_array, Array, ArrayRef};
use arrow_schema::DataType;

use crate::{Error, Result};
pub use temporal::Unit;

/// A transform the kernels can apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transform {
    Identity,
    Bucket(i32),
    Truncate(i32),
    Temporal(Unit),
    Void,
}

fn bracket_arg(s: &str, name: &str) -> Option<Result<i32>> {
    let inner = s.strip_prefix(name)?.strip_prefix('[')?.strip_suffix(']')?;
    Some(
        inner
            .trim()
            .parse::<i32>()
            .map_err(|_| Error::validation(format!("invalid {name} argument in transform {s:?}"))),
    )
}

impl Transform {
    /// Parses the spec's JSON name (`identity`, `bucket[16]`, `truncate[4]`, `day`, ...).
    pub fn parse(s: &str) -> Result<Self> {
        let t = match s {
            "identity" => Transform::Identity,
            "void" => Transform::Void,
            "year" => Transform::Temporal(Unit::Year),
            "month" => Transform::Temporal(Unit::Month),
            "day" => Transform::Temporal(Unit::Day),
            "hour" => Transform::Temporal(Unit::Hour),
            _ => {
                if let Some(n) = bracket_arg(s, "bucket") {
                    Transform::Bucket(n?)
                } else if let Some(w) = bracket_arg(s, "truncate") {
                    Transform::Truncate(w?)
                } else {
                    return Err(Error::validation(format!(
                        "cannot apply unknown transform {s:?}"
                    )));
                }
            }
        };
        Ok(t)
    }

    /// Applies the transform to one array.
    pub fn apply(&self, array: &dyn Array) -> Result<ArrayRef> {
        match *self {
            Transform::Identity => {
                check_source(array.data_type(), "identity")?;
                Ok(arrow_array::make_array(array.to_data()))
            }
            Transform::Void => Ok(new_null_array(array.data_type(), array.len())),
            Transform::Bucket(n) => bucket::bucket(array, n),
            Transform::Truncate(w) => truncate::truncate(array, w),
            Transform::Temporal(u) => temporal::temporal(array, u),
        }
    }
}

/// The Arrow types that carry an Iceberg primitive value.
fn check_source(dt: &DataType, transform: &str) -> Result<()> {
    use arrow_schema::TimeUnit::*;
    match dt {
        DataType::Boolean
        | DataType::Int32
        | DataType::Int64
        | DataType::Float32
        | DataType::Float64
        | DataType::Decimal128(_, _)
        | DataType::Decimal256(_, _)
        | DataType::Date32
        | DataType::Time64(Microsecond)
        | DataType::Timestamp(Microsecond | Nanosecond, _)
        | DataType::Utf8
        | DataType::LargeUtf8
        | DataType::Utf8View
        | DataType::Binary
        | DataType::LargeBinary
        | DataType::BinaryView
        | DataType::FixedSizeBinary(_) => Ok(()),
        other => Err(unsupported(transform, other)),
    }
}

/// The error for an Arrow type a transform does not accept.
pub(crate) fn unsupported(transform: &str, dt: &DataType) -> Error {
    Error::validation(format!(
        "transform {transform} does not accept Arrow type {dt}"
    ))
}

/// Applies the transform named `name` (spec JSON form) to `array`.
pub fn apply(name: &str, array: &dyn Array) -> Result<ArrayRef> {
    Transform::parse(name)?.apply(array)
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{Int16Array, Int64Array};

    #[test]
    fn parses_names() {
        assert_eq!(
            Transform::parse("bucket[16]").unwrap(),
            Transform::Bucket(16)
        );
        assert_eq!(
            Transform::parse("truncate[3]").unwrap(),
            Transform::Truncate(3)
        );
        assert_eq!(
            Transform::parse("hour").unwrap(),
            Transform::Temporal(Unit::Hour)
        );
        assert!(Transform::parse("bucket[x]").is_err());
        assert!(Transform::parse("zorder").is_err());
    }

    #[test]
    fn identity_and_void() {
        let a = Int64Array::from(vec![Some(1), None]);
        let r = apply("identity", &a).unwrap();
        assert_eq!(r.as_ref(), &a as &dyn Array);
        let v = apply("void", &a).unwrap();
        assert_eq!(v.null_count(), 2);
        assert_eq!(v.data_type(), &DataType::Int64);
        let e = apply("identity", &Int16Array::from(vec![1])).unwrap_err();
        assert!(e.message().contains("Int16"));
    }
}
