//! `year`, `month`, `day` and `hour` over Arrow date and timestamp arrays: whole units since
//! 1970-01-01T00:00 (UTC for tz types), floored for values before the epoch. `year`, `month` and
//! `hour` give int32 (their result type is `int`); `day` gives date32, whose values are the same
//! int32 day counts, because its result type is `date` (as in the Java reference).
//! Also holds the proleptic Gregorian calendar conversions the value serde reuses.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::types::*;
use arrow_array::{Array, ArrayRef, ArrowPrimitiveType, Date32Array, Int32Array, PrimitiveArray};
use arrow_buffer::ScalarBuffer;
use arrow_schema::{DataType, TimeUnit};

use super::unsupported;
use crate::{Error, Result};

pub const MICROS_PER_DAY: i64 = 86_400_000_000;
pub const MICROS_PER_HOUR: i64 = 3_600_000_000;
pub const NANOS_PER_DAY: i64 = 86_400_000_000_000;
pub const NANOS_PER_HOUR: i64 = 3_600_000_000_000;

/// The time unit a temporal transform extracts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    Year,
    Month,
    Day,
    Hour,
}

impl Unit {
    pub fn name(self) -> &'static str {
        match self {
            Unit::Year => "year",
            Unit::Month => "month",
            Unit::Day => "day",
            Unit::Hour => "hour",
        }
    }
}

/// (year, month 1-12, day 1-31) of the proleptic Gregorian date `days` after 1970-01-01
/// (H. Hinnant's `civil_from_days`).
#[inline]
pub fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (yoe + era * 400 + i64::from(m <= 2), m, d)
}

/// Days after 1970-01-01 of the proleptic Gregorian date (year, month 1-12, day 1-31).
#[inline]
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let m = m as i64;
    let doy = (153 * (if m > 2 { m - 3 } else { m + 9 }) + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

#[inline(always)]
fn years_from_days(days: i64) -> i64 {
    civil_from_days(days).0 - 1970
}

#[inline(always)]
fn months_from_days(days: i64) -> i64 {
    let (y, m, _) = civil_from_days(days);
    (y - 1970) * 12 + m as i64 - 1
}

/// Maps each slot with `f` (units from the raw value). A result outside the int range is an
/// error only in a valid slot (null slots may hold any raw value).
fn map<T: ArrowPrimitiveType>(
    a: &PrimitiveArray<T>,
    unit: Unit,
    f: impl Fn(i64) -> i64,
) -> Result<ArrayRef>
where
    T::Native: Into<i64>,
{
    let mut overflow = false;
    let out: Vec<i32> = a
        .values()
        .iter()
        .map(|v| {
            let r = f((*v).into());
            overflow |= r as i32 as i64 != r;
            r as i32
        })
        .collect();
    if overflow {
        for (i, v) in a.values().iter().enumerate() {
            let raw: i64 = (*v).into();
            if a.is_valid(i) && i32::try_from(f(raw)).is_err() {
                return Err(Error::validation(format!(
                    "{} transform of {raw} is out of the int range",
                    unit.name()
                )));
            }
        }
    }
    Ok(Arc::new(Int32Array::new(
        ScalarBuffer::from(out),
        a.nulls().cloned(),
    )))
}

/// Applies a temporal transform to a date32, timestamp[us] or timestamp[ns] array: int32 unit
/// counts, or date32 for `day` (the same day counts, typed as the transform's `date` result).
pub fn temporal(array: &dyn Array, unit: Unit) -> Result<ArrayRef> {
    let counts = unit_counts(array, unit)?;
    if unit != Unit::Day {
        return Ok(counts);
    }
    let days = counts.as_primitive::<Int32Type>();
    Ok(Arc::new(Date32Array::new(
        days.values().clone(),
        days.nulls().cloned(),
    )))
}

/// Whole `unit`s since the epoch as int32.
fn unit_counts(array: &dyn Array, unit: Unit) -> Result<ArrayRef> {
    match (array.data_type(), unit) {
        (DataType::Date32, Unit::Year) => {
            map(array.as_primitive::<Date32Type>(), unit, years_from_days)
        }
        (DataType::Date32, Unit::Month) => {
            map(array.as_primitive::<Date32Type>(), unit, months_from_days)
        }
        (DataType::Date32, Unit::Day) => map(array.as_primitive::<Date32Type>(), unit, |d| d),
        (DataType::Timestamp(TimeUnit::Microsecond, _), _) => {
            let a = array.as_primitive::<TimestampMicrosecondType>();
            match unit {
                Unit::Year => map(a, unit, |v| years_from_days(v.div_euclid(MICROS_PER_DAY))),
                Unit::Month => map(a, unit, |v| months_from_days(v.div_euclid(MICROS_PER_DAY))),
                Unit::Day => map(a, unit, |v| v.div_euclid(MICROS_PER_DAY)),
                Unit::Hour => map(a, unit, |v| v.div_euclid(MICROS_PER_HOUR)),
            }
        }
        (DataType::Timestamp(TimeUnit::Nanosecond, _), _) => {
            let a = array.as_primitive::<TimestampNanosecondType>();
            match unit {
                Unit::Year => map(a, unit, |v| years_from_days(v.div_euclid(NANOS_PER_DAY))),
                Unit::Month => map(a, unit, |v| months_from_days(v.div_euclid(NANOS_PER_DAY))),
                Unit::Day => map(a, unit, |v| v.div_euclid(NANOS_PER_DAY)),
                Unit::Hour => map(a, unit, |v| v.div_euclid(NANOS_PER_HOUR)),
            }
        }
        (other, _) => Err(unsupported(unit.name(), other)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::{TimestampMicrosecondArray, TimestampNanosecondArray};

    /// The unit counts; `day` must come back typed date32, the others int32.
    fn vals(a: ArrayRef) -> Vec<Option<i32>> {
        match a.data_type() {
            DataType::Date32 => a.as_primitive::<Date32Type>().iter().collect(),
            DataType::Int32 => a.as_primitive::<Int32Type>().iter().collect(),
            other => panic!("unexpected result type {other}"),
        }
    }

    #[test]
    fn day_is_typed_date_the_rest_int() {
        let a = Date32Array::from(vec![Some(17486), None]);
        for (unit, want) in [
            (Unit::Year, DataType::Int32),
            (Unit::Month, DataType::Int32),
            (Unit::Day, DataType::Date32),
        ] {
            let out = temporal(&a, unit).unwrap();
            assert_eq!(out.data_type(), &want);
            assert_eq!(out.null_count(), 1);
        }
        let ts = TimestampMicrosecondArray::from(vec![Some(-1)]);
        assert_eq!(vals(temporal(&ts, Unit::Day).unwrap()), vec![Some(-1)]);
        assert_eq!(
            temporal(&ts, Unit::Hour).unwrap().data_type(),
            &DataType::Int32
        );
    }

    #[test]
    fn calendar_round_trips() {
        for d in (-800_000i64..800_000).step_by(97) {
            let (y, m, dd) = civil_from_days(d);
            assert_eq!(days_from_civil(y, m, dd), d);
        }
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(17486), (2017, 11, 16));
        assert_eq!(civil_from_days(-1), (1969, 12, 31));
        assert_eq!(days_from_civil(2000, 3, 1), 11017);
    }

    #[test]
    fn dates() {
        let a = Date32Array::from(vec![Some(0), Some(-1), Some(17486), None, Some(-365)]);
        assert_eq!(
            vals(temporal(&a, Unit::Year).unwrap()),
            vec![Some(0), Some(-1), Some(47), None, Some(-1)]
        );
        assert_eq!(
            vals(temporal(&a, Unit::Month).unwrap()),
            vec![Some(0), Some(-1), Some(574), None, Some(-12)]
        );
        assert_eq!(
            vals(temporal(&a, Unit::Day).unwrap()),
            vec![Some(0), Some(-1), Some(17486), None, Some(-365)]
        );
        assert!(temporal(&a, Unit::Hour).is_err());
    }

    #[test]
    fn timestamps_floor_before_epoch() {
        let a = TimestampMicrosecondArray::from(vec![
            Some(0),
            Some(-1),
            Some(1_510_871_468_000_000),
            None,
        ]);
        assert_eq!(
            vals(temporal(&a, Unit::Hour).unwrap()),
            vec![Some(0), Some(-1), Some(419686), None]
        );
        assert_eq!(
            vals(temporal(&a, Unit::Day).unwrap()),
            vec![Some(0), Some(-1), Some(17486), None]
        );
        assert_eq!(
            vals(temporal(&a, Unit::Month).unwrap()),
            vec![Some(0), Some(-1), Some(574), None]
        );
        assert_eq!(
            vals(temporal(&a, Unit::Year).unwrap()),
            vec![Some(0), Some(-1), Some(47), None]
        );
        let n = TimestampNanosecondArray::from(vec![-1, 1_510_871_468_000_000_001])
            .with_timezone("UTC");
        assert_eq!(
            vals(temporal(&n, Unit::Hour).unwrap()),
            vec![Some(-1), Some(419686)]
        );
        assert_eq!(
            vals(temporal(&n, Unit::Day).unwrap()),
            vec![Some(-1), Some(17486)]
        );
    }

    #[test]
    fn out_of_range_only_for_valid_slots() {
        let nulls = arrow_buffer::NullBuffer::from(vec![false, true]);
        let a = TimestampMicrosecondArray::new(vec![i64::MAX, 0].into(), Some(nulls));
        assert_eq!(vals(temporal(&a, Unit::Hour).unwrap()), vec![None, Some(0)]);
        let a = TimestampMicrosecondArray::from(vec![i64::MAX]);
        let e = temporal(&a, Unit::Hour).unwrap_err();
        assert!(e.message().contains("9223372036854775807"), "{e}");
        assert!(temporal(&a, Unit::Year).is_ok());
        // Months of any date32 fit in an int: i32::MIN days is about -5.9 million years.
        let a = Date32Array::from(vec![i32::MIN]);
        assert!(temporal(&a, Unit::Month).is_ok());
    }
}
