//! JSON single-value serialisation of primitives (spec Appendix D, used for `initial-default` and
//! `write-default`). Values cross as a small JSON value model ([`Json`]); nesting (struct, list,
//! map) is assembled by the caller from these.
//!
//! Text forms follow the Java reference: dates `2007-12-03` (years outside 0000-9999 signed),
//! times `10:15:30` with as many fraction digits as needed, timestamps `2007-12-03T10:15:30.1`,
//! `+00:00` as the only accepted and written offset of tz types, decimals in `BigDecimal`'s
//! scientific-string form whose scale must equal the type's, lowercase uuids and hex.

use super::primitive::{PrimitiveType, Value};
use crate::transforms::temporal::{civil_from_days, days_from_civil};
use crate::{Error, Result};

/// A JSON scalar.
#[derive(Debug, Clone, PartialEq)]
pub enum Json {
    Bool(bool),
    Int(i128),
    Float(f64),
    Str(String),
}

fn invalid(t: &PrimitiveType, j: &Json, why: &str) -> Error {
    Error::validation(format!(
        "invalid JSON default value for type {}: {} ({why})",
        t.name(),
        match j {
            Json::Bool(b) => b.to_string(),
            Json::Int(i) => i.to_string(),
            Json::Float(f) => f.to_string(),
            Json::Str(s) => format!("{s:?}"),
        }
    ))
}

// ---------------------------------------------------------------------------------------------
// formatting

fn fmt_date(days: i64) -> String {
    let (y, m, d) = civil_from_days(days);
    let year = if y > 9999 {
        format!("+{y}")
    } else if y < 0 {
        format!("-{:04}", -y)
    } else {
        format!("{y:04}")
    };
    format!("{year}-{m:02}-{d:02}")
}

/// `HH:MM:SS` plus the fraction of `sub` (in units of 10^-`digits` s) without trailing zeros.
fn fmt_time(secs_of_day: i64, sub: i64, digits: usize) -> String {
    let (h, mi, s) = (secs_of_day / 3600, secs_of_day / 60 % 60, secs_of_day % 60);
    let mut out = format!("{h:02}:{mi:02}:{s:02}");
    if sub != 0 {
        let frac = format!("{sub:0digits$}");
        out.push('.');
        out.push_str(frac.trim_end_matches('0'));
    }
    out
}

fn fmt_timestamp(v: i64, per_sec: i64, digits: usize, tz: bool) -> String {
    let per_day = per_sec * 86_400;
    let days = v.div_euclid(per_day);
    let rem = v.rem_euclid(per_day);
    let mut out = format!(
        "{}T{}",
        fmt_date(days),
        fmt_time(rem / per_sec, rem % per_sec, digits)
    );
    if tz {
        out.push_str("+00:00");
    }
    out
}

/// Unscaled x 10^-scale as Java's `SingleValueParser` writes a decimal: plain digits
/// (`BigDecimal.toPlainString()`) for a scale of 0 or more, so the digits after the point
/// give the scale; `BigDecimal.toString()` (scientific) for a negative scale.
pub fn fmt_decimal(unscaled: i128, scale: i32) -> String {
    let digits = unscaled.unsigned_abs().to_string();
    let sign = if unscaled < 0 { "-" } else { "" };
    let n = digits.len() as i64;
    let adjusted = -(scale as i64) + n - 1;
    if scale >= 0 {
        let s = scale as i64;
        let body = if s == 0 {
            digits
        } else if n > s {
            let cut = (n - s) as usize;
            format!("{}.{}", &digits[..cut], &digits[cut..])
        } else {
            format!("0.{}{digits}", "0".repeat((s - n) as usize))
        };
        format!("{sign}{body}")
    } else {
        let mantissa = if n > 1 {
            format!("{}.{}", &digits[..1], &digits[1..])
        } else {
            digits
        };
        let esign = if adjusted >= 0 { "+" } else { "" };
        format!("{sign}{mantissa}E{esign}{adjusted}")
    }
}

fn hex(data: &[u8]) -> String {
    data.iter().map(|b| format!("{b:02x}")).collect()
}

/// The canonical text of a 16-byte uuid.
pub(crate) fn fmt_uuid(b: &[u8]) -> String {
    let h = hex(b);
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// Shortest decimal form of a float's value, so a `float` 1.1 is written `1.1`, not
/// `1.100000023841858`.
fn float_json(v: f64, single: bool) -> f64 {
    if single {
        format!("{}", v as f32).parse().unwrap_or(v)
    } else {
        v
    }
}

/// Serialises one value of type `t` as a JSON scalar.
pub fn to_json(t: &PrimitiveType, v: &Value) -> Result<Json> {
    t.check(v)?;
    use PrimitiveType as T;
    Ok(match (t, v) {
        (T::Boolean, Value::Bool(b)) => Json::Bool(*b),
        (T::Int | T::Long, Value::Int(i)) => Json::Int(*i),
        (T::Float | T::Double, Value::Float(f)) => {
            // a double beyond float's range becomes an infinity once narrowed
            let narrowed = if *t == T::Float { *f as f32 as f64 } else { *f };
            if !narrowed.is_finite() {
                return Err(Error::validation(format!(
                    "cannot serialise {f} of type {} as JSON (not a finite {} number)",
                    t.name(),
                    t.name()
                )));
            }
            Json::Float(float_json(*f, *t == T::Float))
        }
        (T::Decimal { scale, .. }, Value::Int(i)) => Json::Str(fmt_decimal(*i, *scale)),
        (T::Date, Value::Int(i)) => Json::Str(fmt_date(*i as i64)),
        (T::Time, Value::Int(i)) => {
            let us = *i as i64;
            Json::Str(fmt_time(us / 1_000_000, us % 1_000_000, 6))
        }
        (T::Timestamp | T::Timestamptz, Value::Int(i)) => {
            Json::Str(fmt_timestamp(*i as i64, 1_000_000, 6, *t == T::Timestamptz))
        }
        (T::TimestampNs | T::TimestamptzNs, Value::Int(i)) => Json::Str(fmt_timestamp(
            *i as i64,
            1_000_000_000,
            9,
            *t == T::TimestamptzNs,
        )),
        (T::String, Value::Str(s)) => Json::Str(s.clone()),
        (T::Uuid, Value::Bytes(b)) => Json::Str(fmt_uuid(b)),
        (T::Fixed(_) | T::Binary, Value::Bytes(b)) => Json::Str(hex(b)),
        _ => {
            return Err(Error::validation(format!(
                "type {} has no JSON single-value serialisation here",
                t.name()
            )))
        }
    })
}

// ---------------------------------------------------------------------------------------------
// parsing

/// A cursor over ASCII text for the ISO-8601 forms.
struct Cursor<'a> {
    s: &'a [u8],
    pos: usize,
}

impl<'a> Cursor<'a> {
    fn new(s: &'a str) -> Self {
        Cursor {
            s: s.as_bytes(),
            pos: 0,
        }
    }

    fn digits(&mut self, min: usize, max: usize) -> Option<(i64, usize)> {
        let start = self.pos;
        let mut v: i64 = 0;
        while self.pos < self.s.len() && self.s[self.pos].is_ascii_digit() && self.pos - start < max
        {
            v = v * 10 + (self.s[self.pos] - b'0') as i64;
            self.pos += 1;
        }
        let n = self.pos - start;
        (n >= min).then_some((v, n))
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.pos < self.s.len() && self.s[self.pos] == c {
            self.pos += 1;
            true
        } else {
            false
        }
    }

    fn eat_ci(&mut self, c: u8) -> bool {
        self.eat(c) || self.eat(c.to_ascii_lowercase())
    }

    fn rest(&self) -> &'a [u8] {
        &self.s[self.pos..]
    }
}

fn parse_date(c: &mut Cursor) -> Option<i64> {
    let neg = c.eat(b'-');
    let plus = !neg && c.eat(b'+');
    let (y, ny) = c.digits(4, 9)?;
    if ny > 4 && !(neg || plus) {
        return None;
    }
    let y = if neg { -y } else { y };
    if !c.eat(b'-') {
        return None;
    }
    let (m, _) = c.digits(2, 2)?;
    if !c.eat(b'-') {
        return None;
    }
    let (d, _) = c.digits(2, 2)?;
    if !(1..=12).contains(&m) || !(1..=31).contains(&d) {
        return None;
    }
    let days = days_from_civil(y, m as u32, d as u32);
    // Reject dates such as 2023-02-30 that do not round-trip.
    (civil_from_days(days) == (y, m as u32, d as u32)).then_some(days)
}

/// Parses `HH:MM[:SS[.fraction]]`; returns (seconds of day, fraction in units of
/// 10^-`digits` s) or None if malformed. `Err` when non-zero fraction digits go beyond `digits`.
fn parse_time(c: &mut Cursor, digits: usize) -> Option<std::result::Result<(i64, i64), ()>> {
    let (h, _) = c.digits(2, 2)?;
    if !c.eat(b':') {
        return None;
    }
    let (mi, _) = c.digits(2, 2)?;
    let mut s = 0;
    let mut sub = 0;
    if c.eat(b':') {
        s = c.digits(2, 2)?.0;
        if c.eat(b'.') {
            let start = c.pos;
            let (_, n) = c.digits(1, 9)?;
            let text = &c.s[start..start + n];
            for (i, ch) in text.iter().enumerate() {
                let dgt = (ch - b'0') as i64;
                if i < digits {
                    sub += dgt * 10i64.pow((digits - 1 - i) as u32);
                } else if dgt != 0 {
                    return Some(Err(()));
                }
            }
        }
    }
    if h > 23 || mi > 59 || s > 59 {
        return None;
    }
    Some(Ok((h * 3600 + mi * 60 + s, sub)))
}

fn parse_decimal(s: &str) -> Option<(i128, i64)> {
    let b = s.as_bytes();
    let mut i = 0;
    let neg = match b.first() {
        Some(b'-') => {
            i += 1;
            true
        }
        Some(b'+') => {
            i += 1;
            false
        }
        _ => false,
    };
    let mut unscaled: i128 = 0;
    let mut ndigits = 0;
    let mut frac = 0i64;
    let mut seen_point = false;
    while i < b.len() {
        match b[i] {
            d @ b'0'..=b'9' => {
                unscaled = unscaled.checked_mul(10)?.checked_add((d - b'0') as i128)?;
                ndigits += 1;
                if seen_point {
                    frac += 1;
                }
            }
            b'.' if !seen_point => seen_point = true,
            _ => break,
        }
        i += 1;
    }
    if ndigits == 0 {
        return None;
    }
    let mut exp = 0i64;
    if i < b.len() {
        if b[i] != b'e' && b[i] != b'E' {
            return None;
        }
        exp = std::str::from_utf8(&b[i + 1..])
            .ok()?
            .trim_start_matches('+')
            .parse()
            .ok()?;
        if b[i + 1..].is_empty() {
            return None;
        }
    }
    Some((if neg { -unscaled } else { unscaled }, frac - exp))
}

fn parse_hex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

fn parse_uuid(s: &str) -> Option<Vec<u8>> {
    let parts: Vec<&str> = s.split('-').collect();
    let lens = [8, 4, 4, 4, 12];
    if parts.len() != 5 || parts.iter().zip(lens).any(|(p, l)| p.len() != l) {
        return None;
    }
    parse_hex(&parts.concat())
}

fn parse_timestamp(
    t: &PrimitiveType,
    j: &Json,
    s: &str,
    per_sec: i64,
    digits: usize,
    tz: bool,
) -> Result<i64> {
    let mut c = Cursor::new(s);
    let days = parse_date(&mut c).ok_or_else(|| invalid(t, j, "not an ISO-8601 timestamp"))?;
    if !c.eat_ci(b'T') {
        return Err(invalid(t, j, "not an ISO-8601 timestamp"));
    }
    let (secs, sub) = match parse_time(&mut c, digits) {
        None => return Err(invalid(t, j, "not an ISO-8601 timestamp")),
        Some(Err(())) => return Err(invalid(t, j, "more fraction digits than the type holds")),
        Some(Ok(v)) => v,
    };
    match (tz, c.rest()) {
        (true, b"+00:00") | (false, b"") => {}
        (true, _) => return Err(invalid(t, j, "the zone offset must be +00:00")),
        (false, _) => return Err(invalid(t, j, "must not include a zone offset")),
    }
    // i128: the day part alone may overflow i64 where the sum does not (just after the minimum)
    let total = days as i128 * (86_400 * per_sec) as i128 + (secs * per_sec + sub) as i128;
    i64::try_from(total).map_err(|_| invalid(t, j, "out of range"))
}

/// Deserialises one JSON scalar as a value of type `t`.
pub fn from_json(t: &PrimitiveType, j: &Json) -> Result<Value> {
    use PrimitiveType as T;
    let v = match (t, j) {
        (T::Boolean, Json::Bool(b)) => Value::Bool(*b),
        (T::Int | T::Long, Json::Int(i)) => Value::Int(*i),
        (T::Float | T::Double, Json::Int(i)) => Value::Float(*i as f64),
        (T::Float, Json::Float(f)) => {
            let single = *f as f32;
            if f.is_finite() && !single.is_finite() {
                return Err(invalid(t, j, "out of the float range"));
            }
            Value::Float(single as f64)
        }
        (T::Double, Json::Float(f)) => Value::Float(*f),
        (T::Decimal { scale, .. }, Json::Str(s)) => {
            let (unscaled, sc) = parse_decimal(s).ok_or_else(|| invalid(t, j, "not a decimal"))?;
            if sc != *scale as i64 {
                return Err(invalid(
                    t,
                    j,
                    &format!("its scale {sc} is not the type's scale {scale}"),
                ));
            }
            Value::Int(unscaled)
        }
        (T::Decimal { .. }, _) => {
            return Err(invalid(t, j, "a decimal must be a JSON string"));
        }
        (T::Date, Json::Str(s)) => {
            let mut c = Cursor::new(s);
            match parse_date(&mut c) {
                Some(d) if c.rest().is_empty() => Value::Int(d as i128),
                _ => return Err(invalid(t, j, "not an ISO-8601 date")),
            }
        }
        (T::Time, Json::Str(s)) => {
            let mut c = Cursor::new(s);
            match parse_time(&mut c, 6) {
                Some(Ok((secs, us))) if c.rest().is_empty() => {
                    Value::Int((secs * 1_000_000 + us) as i128)
                }
                Some(Err(())) => {
                    return Err(invalid(t, j, "more fraction digits than the type holds"))
                }
                _ => return Err(invalid(t, j, "not an ISO-8601 time")),
            }
        }
        (T::Timestamp | T::Timestamptz, Json::Str(s)) => {
            Value::Int(parse_timestamp(t, j, s, 1_000_000, 6, *t == T::Timestamptz)? as i128)
        }
        (T::TimestampNs | T::TimestamptzNs, Json::Str(s)) => {
            Value::Int(parse_timestamp(t, j, s, 1_000_000_000, 9, *t == T::TimestamptzNs)? as i128)
        }
        (T::String, Json::Str(s)) => Value::Str(s.clone()),
        (T::Uuid, Json::Str(s)) => {
            Value::Bytes(parse_uuid(s).ok_or_else(|| invalid(t, j, "not a uuid"))?)
        }
        (T::Fixed(_) | T::Binary, Json::Str(s)) => {
            Value::Bytes(parse_hex(s).ok_or_else(|| invalid(t, j, "not a hexadecimal string"))?)
        }
        (T::Unknown | T::Variant | T::Geometry | T::Geography, _) => {
            return Err(Error::validation(format!(
                "type {} has no JSON single-value serialisation here",
                t.name()
            )))
        }
        _ => return Err(invalid(t, j, "wrong JSON kind for this type")),
    };
    t.check(&v).map_err(|e| invalid(t, j, e.message()))?;
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use PrimitiveType as T;

    fn s(x: &str) -> Json {
        Json::Str(x.into())
    }

    fn both(t: T, j: Json, v: Value) {
        assert_eq!(from_json(&t, &j).unwrap(), v, "{t:?} from {j:?}");
        assert_eq!(to_json(&t, &v).unwrap(), j, "{t:?} to json");
    }

    #[test]
    fn spec_vectors() {
        both(T::Boolean, Json::Bool(true), Value::Bool(true));
        both(T::Int, Json::Int(1), Value::Int(1));
        both(T::Long, Json::Int(9999999), Value::Int(9999999));
        both(T::Float, Json::Float(1.23), Value::Float(1.23f32 as f64));
        both(T::Double, Json::Float(123.456), Value::Float(123.456));
        both(T::Date, s("2007-12-03"), Value::Int(13850));
        both(T::Time, s("10:15:30"), Value::Int(36_930_000_000));
        both(
            T::Timestamp,
            s("2007-12-03T10:15:30"),
            Value::Int(1_196_676_930_000_000),
        );
        both(
            T::Timestamptz,
            s("2007-12-03T10:15:30+00:00"),
            Value::Int(1_196_676_930_000_000),
        );
        both(
            T::TimestampNs,
            s("2007-12-03T10:15:30.123456789"),
            Value::Int(1_196_676_930_123_456_789),
        );
        both(
            T::TimestamptzNs,
            s("2007-12-03T10:15:30.123456789+00:00"),
            Value::Int(1_196_676_930_123_456_789),
        );
        both(T::String, s("foo"), Value::Str("foo".into()));
        let uuid = parse_hex("eb26bdb1a1d84aa6990eda940875492c").unwrap();
        both(
            T::Uuid,
            s("eb26bdb1-a1d8-4aa6-990e-da940875492c"),
            Value::Bytes(uuid),
        );
        both(T::Fixed(2), s("111f"), Value::Bytes(vec![0x11, 0x1f]));
        both(T::Binary, s("0000ff"), Value::Bytes(vec![0, 0, 0xff]));
        let dec = |p, s| T::Decimal {
            precision: p,
            scale: s,
        };
        both(dec(9, 4), s("123.4500"), Value::Int(1234500));
        both(dec(9, 0), s("2"), Value::Int(2));
        both(dec(9, -20), s("2E+20"), Value::Int(2));
        both(dec(4, 2), s("14.20"), Value::Int(1420));
        both(dec(9, 2), s("-0.05"), Value::Int(-5));
    }

    #[test]
    fn invalid_inputs() {
        assert!(from_json(&T::Fixed(2), &s("111ff")).is_err());
        let e = from_json(&T::Timestamptz, &s("2007-12-03T10:15:30+01:00")).unwrap_err();
        assert!(e.message().contains("+00:00"), "{e}");
        assert!(from_json(&T::Timestamptz, &s("2007-12-03T10:15:30")).is_err());
        assert!(from_json(&T::Timestamp, &s("2007-12-03T10:15:30+00:00")).is_err());
        let dec = T::Decimal {
            precision: 9,
            scale: 4,
        };
        let e = from_json(&dec, &Json::Float(123.45)).unwrap_err();
        assert!(e.message().contains("JSON string"), "{e}");
        assert!(from_json(&dec, &s("123.45")).is_err());
        assert!(from_json(&dec, &s("12345678.0000")).is_err());
        assert!(from_json(&T::Int, &Json::Int(1 << 40)).is_err());
        assert!(from_json(&T::Int, &Json::Float(1.5)).is_err());
        assert!(from_json(&T::Date, &s("2023-02-30")).is_err());
        assert!(from_json(&T::Time, &s("10:15:30.1234567")).is_err());
        assert!(from_json(&T::Uuid, &s("not-a-uuid")).is_err());
        assert!(to_json(&T::Double, &Value::Float(f64::NAN)).is_err());
    }

    #[test]
    fn text_forms() {
        assert_eq!(fmt_decimal(1, 10), "0.0000000001");
        assert_eq!(fmt_decimal(0, 10), "0.0000000000");
        assert_eq!(fmt_decimal(-1, 8), "-0.00000001");
        assert_eq!(fmt_decimal(-123, 2), "-1.23");
        assert_eq!(fmt_decimal(5, 3), "0.005");
        assert_eq!(fmt_decimal(0, 2), "0.00");
        assert_eq!(fmt_decimal(123, -2), "1.23E+4");
        assert_eq!(fmt_date(-719_529), "-0001-12-31");
        assert_eq!(fmt_date(2_932_897), "+10000-01-01");
        assert_eq!(
            from_json(&T::Date, &s("+10000-01-01")).unwrap(),
            Value::Int(2_932_897)
        );
        assert_eq!(
            to_json(&T::Time, &Value::Int(100_000)).unwrap(),
            s("00:00:00.1")
        );
        assert_eq!(
            to_json(&T::Timestamp, &Value::Int(-1)).unwrap(),
            s("1969-12-31T23:59:59.999999")
        );
        assert_eq!(
            to_json(&T::Float, &Value::Float(1.1f32 as f64)).unwrap(),
            Json::Float(1.1)
        );
        assert_eq!(
            from_json(&T::Time, &s("10:15")).unwrap(),
            Value::Int(36_900_000_000)
        );
    }
}
