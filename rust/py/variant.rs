//! Bindings of `crate::variant`: encoding Python values and JSON into variant columns, decoding
//! them back, and annotating written Parquet footers. Whole arrays cross the boundary; the
//! per-row work is in Rust.

use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::{make_array, Array, ArrayRef, StructArray};
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use chrono::{DateTime, Datelike, NaiveDate, NaiveDateTime, NaiveTime, Timelike, Utc};
use parquet_variant::{
    ObjectFieldBuilder, Uuid, Variant, VariantBuilderExt, VariantDecimal16, VariantDecimal4,
    VariantDecimal8, VariantMetadata,
};
use parquet_variant_compute::VariantArrayBuilder;
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple,
};

use super::guard;
use super::transforms::import_array;
use crate::variant;
use crate::variant::walk::{walk, Malformed, Visitor};
use crate::Error;

/// Python values nested deeper than this are refused (it also stops self-referencing
/// containers): encoding them recurses once per level, so the limit keeps the stack used well
/// under a small thread stack. Decoding (`variant_to_python`) and the JSON paths have no limit.
const MAX_DEPTH: usize = 500;

type PyArray = PyArrowType<ArrayData>;

fn import(obj: &Bound<'_, PyAny>) -> PyResult<ArrayRef> {
    let data = import_array(obj)?;
    guard(|| Ok(data.validate_full()?))?;
    Ok(make_array(data))
}

fn export(out: StructArray) -> PyArray {
    PyArrowType(out.into_data())
}

/// Validates an encoded variant column and returns its stored form (shredded values merged).
#[pyfunction]
fn variant_normalize(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<PyArray> {
    let a = import(array)?;
    py.detach(|| guard(|| variant::normalize(&a))).map(export)
}

/// Parses a string array of JSON documents into variants; errors number rows from
/// `first_row` (the array's place in a chunked column).
#[pyfunction]
#[pyo3(signature = (array, first_row = 0))]
fn variant_from_json(
    py: Python<'_>,
    array: &Bound<'_, PyAny>,
    first_row: usize,
) -> PyResult<PyArray> {
    let a = import(array)?;
    py.detach(|| guard(|| variant::from_json_at(&a, first_row)))
        .map(export)
}

/// Casts each value of any Arrow array into a variant.
#[pyfunction]
fn variant_from_arrow(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<PyArray> {
    let a = import(array)?;
    py.detach(|| guard(|| variant::from_arrow(&a))).map(export)
}

/// The JSON text of each row of an encoded variant column.
#[pyfunction]
fn variant_to_json(py: Python<'_>, array: &Bound<'_, PyAny>) -> PyResult<PyArray> {
    let a = import(array)?;
    let out = py.detach(|| guard(|| variant::to_json(&a)))?;
    Ok(PyArrowType(out.into_data()))
}

/// Sets the Parquet VARIANT logical type on the groups with `field_ids` in a file's tail (the
/// bytes that end with the footer, its length and `PAR1`); returns the replacement tail.
#[pyfunction]
fn variant_annotate_tail<'py>(
    py: Python<'py>,
    tail: &[u8],
    field_ids: Vec<i32>,
) -> PyResult<Bound<'py, PyBytes>> {
    let out = py.detach(|| guard(|| variant::footer::annotate_file_tail(tail, &field_ids)))?;
    Ok(PyBytes::new(py, &out))
}

/// Python classes the conversions need, looked up once per call.
struct Classes<'py> {
    date: Bound<'py, PyAny>,
    datetime: Bound<'py, PyAny>,
    time: Bound<'py, PyAny>,
    utc: Bound<'py, PyAny>,
    decimal: Bound<'py, PyAny>,
    uuid: Bound<'py, PyAny>,
}

impl<'py> Classes<'py> {
    fn new(py: Python<'py>) -> PyResult<Self> {
        let dt = py.import("datetime")?;
        Ok(Self {
            date: dt.getattr("date")?,
            datetime: dt.getattr("datetime")?,
            time: dt.getattr("time")?,
            utc: dt.getattr("timezone")?.getattr("utc")?,
            decimal: py.import("decimal")?.getattr("Decimal")?,
            uuid: py.import("uuid")?.getattr("UUID")?,
        })
    }
}

fn bad(msg: String) -> PyErr {
    Error::validation(msg).into()
}

fn int_attr(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<i64> {
    obj.getattr(name)?.extract()
}

fn naive_date(obj: &Bound<'_, PyAny>) -> PyResult<NaiveDate> {
    let (y, m, d) = (
        int_attr(obj, "year")?,
        int_attr(obj, "month")?,
        int_attr(obj, "day")?,
    );
    NaiveDate::from_ymd_opt(y as i32, m as u32, d as u32)
        .ok_or_else(|| bad(format!("invalid date {y}-{m}-{d}")))
}

fn naive_time(obj: &Bound<'_, PyAny>) -> PyResult<NaiveTime> {
    let (h, mi, s, us) = (
        int_attr(obj, "hour")?,
        int_attr(obj, "minute")?,
        int_attr(obj, "second")?,
        int_attr(obj, "microsecond")?,
    );
    NaiveTime::from_hms_micro_opt(h as u32, mi as u32, s as u32, us as u32)
        .ok_or_else(|| bad(format!("invalid time {h}:{mi}:{s}.{us}")))
}

/// The unscaled integer and scale of a finite `decimal.Decimal`.
fn decimal_parts(obj: &Bound<'_, PyAny>) -> PyResult<(i128, u8)> {
    let t = obj.call_method0("as_tuple")?;
    let sign: i64 = t.get_item(0)?.extract()?;
    let exponent = t.get_item(2)?;
    let Ok(exp) = exponent.extract::<i64>() else {
        return Err(bad(format!("cannot encode {obj} as a variant decimal")));
    };
    let digits: Vec<u8> = t.get_item(1)?.extract()?;
    let too_big = || bad(format!("decimal {obj} has more than 38 digits"));
    let mut unscaled: i128 = 0;
    for d in digits {
        unscaled = unscaled
            .checked_mul(10)
            .and_then(|u| u.checked_add(i128::from(d)))
            .ok_or_else(too_big)?;
    }
    let mut scale = 0u8;
    if exp > 0 {
        for _ in 0..exp {
            unscaled = unscaled.checked_mul(10).ok_or_else(too_big)?;
        }
    } else {
        scale = u8::try_from(-exp).map_err(|_| too_big())?;
    }
    if sign == 1 {
        unscaled = -unscaled;
    }
    Ok((unscaled, scale))
}

fn decimal_variant(unscaled: i128, scale: u8) -> Result<Variant<'static, 'static>, Error> {
    let e = |e: arrow_schema::ArrowError| Error::validation(e.to_string());
    let digits = unscaled
        .unsigned_abs()
        .checked_ilog10()
        .map_or(1, |d| d + 1);
    Ok(if digits <= 9 && scale <= 9 {
        VariantDecimal4::try_new(unscaled as i32, scale)
            .map_err(e)?
            .into()
    } else if digits <= 18 && scale <= 18 {
        VariantDecimal8::try_new(unscaled as i64, scale)
            .map_err(e)?
            .into()
    } else {
        VariantDecimal16::try_new(unscaled, scale)
            .map_err(e)?
            .into()
    })
}

/// Appends one Python value to `b` (a row, a list element or an object field).
fn append<B: VariantBuilderExt>(
    b: &mut B,
    obj: &Bound<'_, PyAny>,
    cls: &Classes<'_>,
    depth: usize,
) -> PyResult<()> {
    if depth > MAX_DEPTH {
        return Err(bad(format!(
            "value nested deeper than {MAX_DEPTH} levels (or containing itself)"
        )));
    }
    if let Ok(d) = obj.cast::<PyDict>() {
        let mut o = b.try_new_object().map_err(|e| bad(e.to_string()))?;
        for (k, v) in d.iter() {
            let Ok(key) = k.cast::<PyString>() else {
                return Err(bad_key(&k));
            };
            let key = key.to_str()?;
            append(
                &mut ObjectFieldBuilder::new(key, &mut o),
                &v,
                cls,
                depth + 1,
            )?;
        }
        o.finish();
    } else if obj.is_instance_of::<PyList>() || obj.is_instance_of::<PyTuple>() {
        let mut l = b.try_new_list().map_err(|e| bad(e.to_string()))?;
        for item in obj.try_iter()? {
            append(&mut l, &item?, cls, depth + 1)?;
        }
        l.finish();
    } else {
        append_leaf(b, obj, cls)?;
    }
    Ok(())
}

#[cold]
fn bad_key(k: &Bound<'_, PyAny>) -> PyErr {
    match k.get_type().name() {
        Ok(name) => bad(format!("variant object keys must be str, found {name}")),
        Err(e) => e,
    }
}

/// Appends one Python value that is not a dict, list or tuple. Kept out of [`append`], which
/// recurses once per nesting level, so that each level's stack frame stays small.
#[inline(never)]
fn append_leaf<B: VariantBuilderExt>(
    b: &mut B,
    obj: &Bound<'_, PyAny>,
    cls: &Classes<'_>,
) -> PyResult<()> {
    if obj.is_none() {
        b.append_value(Variant::Null);
    } else if let Ok(v) = obj.cast::<PyBool>() {
        b.append_value(v.is_true());
    } else if obj.is_instance_of::<PyInt>() {
        if let Ok(v) = obj.extract::<i64>() {
            b.append_value(shrink(v));
        } else {
            let v: i128 = obj
                .extract()
                .map_err(|_| bad(format!("integer {obj} is too large for a variant")))?;
            b.append_value(decimal_variant(v, 0)?);
        }
    } else if let Ok(v) = obj.cast::<PyFloat>() {
        b.append_value(v.value());
    } else if let Ok(v) = obj.cast::<PyString>() {
        b.append_value(v.to_str()?);
    } else if let Ok(v) = obj.cast::<PyBytes>() {
        b.append_value(v.as_bytes());
    } else if let Ok(v) = obj.cast::<PyByteArray>() {
        b.append_value(v.to_vec().as_slice());
    } else if obj.is_instance(&cls.datetime)? {
        let mut naive = NaiveDateTime::new(naive_date(obj)?, naive_time(obj)?);
        // a pandas Timestamp is a datetime with nanoseconds past its microseconds: kept in
        // a nanosecond timestamp rather than dropped
        let nanos = match obj.getattr("nanosecond") {
            Ok(n) => n.extract::<i64>().unwrap_or(0),
            Err(_) => 0,
        };
        if nanos != 0 {
            naive += chrono::Duration::nanoseconds(nanos);
        }
        let offset = obj.call_method0("utcoffset")?;
        if offset.is_none() {
            b.append_value(if nanos != 0 {
                Variant::TimestampNtzNanos(naive)
            } else {
                Variant::TimestampNtzMicros(naive)
            });
        } else {
            let us = int_attr(&offset, "days")? * 86_400_000_000
                + int_attr(&offset, "seconds")? * 1_000_000
                + int_attr(&offset, "microseconds")?;
            let utc = naive - chrono::Duration::microseconds(us);
            let instant = DateTime::<Utc>::from_naive_utc_and_offset(utc, Utc);
            b.append_value(if nanos != 0 {
                Variant::TimestampNanos(instant)
            } else {
                Variant::TimestampMicros(instant)
            });
        }
    } else if obj.is_instance(&cls.date)? {
        b.append_value(naive_date(obj)?);
    } else if obj.is_instance(&cls.time)? {
        if !obj.getattr("tzinfo")?.is_none() {
            return Err(bad(format!(
                "variant times have no time zone; cannot encode {obj}"
            )));
        }
        b.append_value(naive_time(obj)?);
    } else if obj.is_instance(&cls.decimal)? {
        let (unscaled, scale) = decimal_parts(obj)?;
        b.append_value(decimal_variant(unscaled, scale)?);
    } else if obj.is_instance(&cls.uuid)? {
        let bytes: Vec<u8> = obj.getattr("bytes")?.extract()?;
        let u = Uuid::from_slice(&bytes).map_err(|e| bad(e.to_string()))?;
        b.append_value(u);
    } else {
        return Err(bad(format!(
            "cannot encode a value of type {} as a variant",
            obj.get_type().name()?
        )));
    }
    Ok(())
}

/// The smallest variant integer type that holds `v` (as Spark's `parse_json` does).
fn shrink(v: i64) -> Variant<'static, 'static> {
    if let Ok(x) = i8::try_from(v) {
        Variant::Int8(x)
    } else if let Ok(x) = i16::try_from(v) {
        Variant::Int16(x)
    } else if let Ok(x) = i32::try_from(v) {
        Variant::Int32(x)
    } else {
        Variant::Int64(v)
    }
}

/// Encodes a sequence of Python values into a variant column; a None item is a null row, or a
/// variant null when `null_rows` is false.
#[pyfunction]
#[pyo3(signature = (values, null_rows=true))]
fn variant_from_python(
    py: Python<'_>,
    values: &Bound<'_, PyAny>,
    null_rows: bool,
) -> PyResult<PyArray> {
    let cls = Classes::new(py)?;
    let n = values.len().unwrap_or(0);
    let mut builder = VariantArrayBuilder::new(n);
    for item in values.try_iter()? {
        let item = item?;
        if item.is_none() && null_rows {
            builder.append_null();
        } else {
            append(&mut builder, &item, &cls, 0)?;
        }
    }
    let array = builder.build();
    let out = guard(|| {
        let inner: ArrayRef = Arc::new(array.into_inner());
        variant::normalize(&inner)
    })?;
    Ok(export(out))
}

fn to_py<'py>(
    py: Python<'py>,
    v: &Variant<'_, '_>,
    cls: &Classes<'py>,
) -> PyResult<Bound<'py, PyAny>> {
    let datetime = |d: &NaiveDateTime, tz: Option<&Bound<'py, PyAny>>| {
        let args = (
            d.year(),
            d.month(),
            d.day(),
            d.hour(),
            d.minute(),
            d.second(),
            d.nanosecond() / 1000,
            tz.cloned(),
        );
        cls.datetime.call1(args)
    };
    let nanos_exact = |nanos: u32| {
        if !nanos.is_multiple_of(1000) {
            Err(bad(format!(
                "nanosecond timestamp {v:?} has no exact Python datetime; use to_json"
            )))
        } else {
            Ok(())
        }
    };
    Ok(match v {
        Variant::Null => py.None().into_bound(py),
        Variant::BooleanTrue => PyBool::new(py, true).to_owned().into_any(),
        Variant::BooleanFalse => PyBool::new(py, false).to_owned().into_any(),
        Variant::Int8(x) => x.into_pyobject(py)?.into_any(),
        Variant::Int16(x) => x.into_pyobject(py)?.into_any(),
        Variant::Int32(x) => x.into_pyobject(py)?.into_any(),
        Variant::Int64(x) => x.into_pyobject(py)?.into_any(),
        Variant::Float(x) => f64::from(*x).into_pyobject(py)?.into_any(),
        Variant::Double(x) => x.into_pyobject(py)?.into_any(),
        Variant::Decimal4(d) => cls
            .decimal
            .call1((format!("{}E-{}", d.integer(), d.scale()),))?,
        Variant::Decimal8(d) => cls
            .decimal
            .call1((format!("{}E-{}", d.integer(), d.scale()),))?,
        Variant::Decimal16(d) => cls
            .decimal
            .call1((format!("{}E-{}", d.integer(), d.scale()),))?,
        Variant::Date(d) => cls.date.call1((d.year(), d.month(), d.day()))?,
        Variant::TimestampMicros(t) => datetime(&t.naive_utc(), Some(&cls.utc))?,
        Variant::TimestampNanos(t) => {
            nanos_exact(t.nanosecond())?;
            datetime(&t.naive_utc(), Some(&cls.utc))?
        }
        Variant::TimestampNtzMicros(t) => datetime(t, None)?,
        Variant::TimestampNtzNanos(t) => {
            nanos_exact(t.nanosecond())?;
            datetime(t, None)?
        }
        Variant::Time(t) => {
            cls.time
                .call1((t.hour(), t.minute(), t.second(), t.nanosecond() / 1000))?
        }
        Variant::Uuid(u) => {
            let kwargs = PyDict::new(py);
            kwargs.set_item("bytes", PyBytes::new(py, u.as_bytes()))?;
            cls.uuid.call((), Some(&kwargs))?
        }
        Variant::Binary(b) => PyBytes::new(py, b).into_any(),
        Variant::String(s) => PyString::new(py, s).into_any(),
        Variant::ShortString(s) => PyString::new(py, s.as_str()).into_any(),
        // `variant::walk::walk` reports objects and arrays as their parts, never as leaves
        Variant::Object(_) | Variant::List(_) => {
            return Err(bad(
                "a variant container reached the leaf decoder".to_string()
            ))
        }
    })
}

impl From<Malformed> for PyErr {
    fn from(e: Malformed) -> Self {
        bad(format!("malformed variant: {e}"))
    }
}

/// Builds the Python value of one variant from a walk of it: containers are created when they
/// begin and filled as their items arrive, so nesting of any depth needs no recursion.
struct PyBuilder<'a, 'py> {
    py: Python<'py>,
    cls: &'a Classes<'py>,
    /// The open containers, each with the name of the object field being read.
    open: Vec<(Bound<'py, PyAny>, Option<Bound<'py, PyString>>)>,
    root: Option<Bound<'py, PyAny>>,
}

impl<'py> PyBuilder<'_, 'py> {
    fn place(&mut self, item: Bound<'py, PyAny>) -> PyResult<()> {
        match self.open.last_mut() {
            None => self.root = Some(item),
            Some((container, key)) => match key.take() {
                Some(k) => container.cast::<PyDict>()?.set_item(k, item)?,
                None => container.cast::<PyList>()?.append(item)?,
            },
        }
        Ok(())
    }
}

impl<'m, 'v> Visitor<'m, 'v> for PyBuilder<'_, '_> {
    type Err = PyErr;
    fn leaf(&mut self, value: Variant<'m, 'v>) -> PyResult<()> {
        let item = to_py(self.py, &value, self.cls)?;
        self.place(item)
    }
    fn begin_array(&mut self, _: usize) -> PyResult<()> {
        let list = PyList::empty(self.py).into_any();
        self.place(list.clone())?;
        self.open.push((list, None));
        Ok(())
    }
    fn begin_object(&mut self, _: usize) -> PyResult<()> {
        let dict = PyDict::new(self.py).into_any();
        self.place(dict.clone())?;
        self.open.push((dict, None));
        Ok(())
    }
    fn key(&mut self, name: &'m str) -> PyResult<()> {
        if let Some((_, key)) = self.open.last_mut() {
            *key = Some(PyString::new(self.py, name));
        }
        Ok(())
    }
    fn end(&mut self) -> PyResult<()> {
        self.open.pop();
        Ok(())
    }
}

/// Decodes every row of an encoded variant column into Python values (null rows are None;
/// a variant null is None too).
#[pyfunction]
fn variant_to_python<'py>(
    py: Python<'py>,
    array: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyList>> {
    let a = import(array)?;
    let stored = py.detach(|| guard(|| variant::normalize(&a)))?;
    let metadata = stored.column(0).as_binary::<i32>();
    let value = stored.column(1).as_binary::<i32>();
    let cls = Classes::new(py)?;
    let out = PyList::empty(py);
    for i in 0..stored.len() {
        if stored.is_null(i) {
            out.append(py.None())?;
            continue;
        }
        let meta = VariantMetadata::try_new(metadata.value(i)).map_err(|e| bad(e.to_string()))?;
        let mut b = PyBuilder {
            py,
            cls: &cls,
            open: Vec::new(),
            root: None,
        };
        walk(&meta, value.value(i), &mut b)?;
        out.append(b.root.unwrap_or_else(|| py.None().into_bound(py)))?;
    }
    Ok(out)
}

pub(super) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(variant_normalize, m)?)?;
    m.add_function(wrap_pyfunction!(variant_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(variant_from_arrow, m)?)?;
    m.add_function(wrap_pyfunction!(variant_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(variant_from_python, m)?)?;
    m.add_function(wrap_pyfunction!(variant_to_python, m)?)?;
    m.add_function(wrap_pyfunction!(variant_annotate_tail, m)?)?;
    Ok(())
}
