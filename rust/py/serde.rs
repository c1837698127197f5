//! Bindings of single-value serialisation (`crate::serde`). Values cross as their physical form
//! (see `crate::serde::primitive`): bool, int, float, str or bytes.

use arrow_array::make_array;
use arrow_data::ArrayData;
use arrow_pyarrow::PyArrowType;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyFloat, PyInt, PyString};

use super::guard;
use super::transforms::import_array;
use crate::serde::json::Json;
use crate::serde::{array, binary, json, PrimitiveType, Value};
use crate::Error;

fn describe(obj: &Bound<'_, PyAny>) -> String {
    let ty = obj
        .get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into());
    let repr = obj
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "?".into());
    format!("{repr} ({ty})")
}

fn int_of(obj: &Bound<'_, PyAny>) -> crate::Result<i128> {
    obj.extract::<i128>()
        .map_err(|_| Error::validation(format!("integer {} is too large", describe(obj))))
}

/// The physical value of a Python object.
fn value_from_py(obj: &Bound<'_, PyAny>) -> crate::Result<Value> {
    if let Ok(b) = obj.cast::<PyBool>() {
        Ok(Value::Bool(b.is_true()))
    } else if obj.is_instance_of::<PyInt>() {
        Ok(Value::Int(int_of(obj)?))
    } else if let Ok(f) = obj.cast::<PyFloat>() {
        Ok(Value::Float(f.value()))
    } else if let Ok(s) = obj.cast::<PyString>() {
        let s = s.to_str().map_err(|_| {
            Error::validation(format!("string {} is not valid unicode", describe(obj)))
        })?;
        Ok(Value::Str(s.to_owned()))
    } else if let Ok(b) = obj.cast::<PyBytes>() {
        Ok(Value::Bytes(b.as_bytes().to_vec()))
    } else {
        Err(Error::validation(format!(
            "cannot serialise {}: expected bool, int, float, str or bytes",
            describe(obj)
        )))
    }
}

fn value_to_py(py: Python<'_>, v: Value) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Value::Bool(b) => PyBool::new(py, b).to_owned().into_any().unbind(),
        Value::Int(i) => i.into_pyobject(py)?.into_any().unbind(),
        Value::Float(f) => PyFloat::new(py, f).into_any().unbind(),
        Value::Str(s) => PyString::new(py, &s).into_any().unbind(),
        Value::Bytes(b) => PyBytes::new(py, &b).into_any().unbind(),
    })
}

fn json_from_py(obj: &Bound<'_, PyAny>) -> crate::Result<Json> {
    Ok(match value_from_py(obj) {
        Ok(Value::Bool(b)) => Json::Bool(b),
        Ok(Value::Int(i)) => Json::Int(i),
        Ok(Value::Float(f)) => Json::Float(f),
        Ok(Value::Str(s)) => Json::Str(s),
        _ => {
            return Err(Error::validation(format!(
                "{} is not a JSON scalar (bool, int, float or str)",
                describe(obj)
            )))
        }
    })
}

fn parse_type(t: &str) -> crate::Result<PrimitiveType> {
    PrimitiveType::parse(t)
}

/// Serialises one physical value of the primitive type `type_` (spec Appendix D binary form).
#[pyfunction]
#[pyo3(name = "value_to_bytes")]
fn value_to_bytes<'py>(
    py: Python<'py>,
    type_: &str,
    value: &Bound<'py, PyAny>,
) -> PyResult<Bound<'py, PyBytes>> {
    let b = guard(|| binary::to_bytes(&parse_type(type_)?, &value_from_py(value)?))?;
    Ok(PyBytes::new(py, &b))
}

/// Deserialises one value of the primitive type `type_` from its binary form.
#[pyfunction]
fn value_from_bytes(py: Python<'_>, type_: &str, data: &[u8]) -> PyResult<Py<PyAny>> {
    let v = guard(|| binary::from_bytes(&parse_type(type_)?, data))?;
    value_to_py(py, v)
}

/// Serialises one physical value as a JSON scalar (bool, int, float or str).
#[pyfunction]
fn value_to_json(py: Python<'_>, type_: &str, value: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let j = guard(|| json::to_json(&parse_type(type_)?, &value_from_py(value)?))?;
    value_to_py(
        py,
        match j {
            Json::Bool(b) => Value::Bool(b),
            Json::Int(i) => Value::Int(i),
            Json::Float(f) => Value::Float(f),
            Json::Str(s) => Value::Str(s),
        },
    )
}

/// Deserialises one JSON scalar (as parsed by `json.loads`) as a physical value.
#[pyfunction]
fn value_from_json(
    py: Python<'_>,
    type_: &str,
    json_value: &Bound<'_, PyAny>,
) -> PyResult<Py<PyAny>> {
    let v = guard(|| json::from_json(&parse_type(type_)?, &json_from_py(json_value)?))?;
    value_to_py(py, v)
}

/// Decodes a binary array of serialised values into a typed Arrow array.
#[pyfunction]
fn decode_values(
    py: Python<'_>,
    type_: &str,
    array: &Bound<'_, PyAny>,
) -> PyResult<PyArrowType<ArrayData>> {
    let data = import_array(array)?;
    let t = guard(|| parse_type(type_))?;
    let out = py.detach(move || {
        guard(move || {
            let a = make_array(data);
            array::decode_array(&t, a.as_ref()).map(|r| r.to_data())
        })
    })?;
    Ok(PyArrowType(out))
}

/// Serialises every value of a typed Arrow array into a binary array.
#[pyfunction]
fn encode_values(
    py: Python<'_>,
    type_: &str,
    array: &Bound<'_, PyAny>,
) -> PyResult<PyArrowType<ArrayData>> {
    let data = import_array(array)?;
    let t = guard(|| parse_type(type_))?;
    let out = py.detach(move || {
        guard(move || {
            let a = make_array(data);
            array::encode_array(&t, a.as_ref()).map(|r| arrow_array::Array::to_data(&r))
        })
    })?;
    Ok(PyArrowType(out))
}

/// Serialises a geometry/geography bound point (x:y[:z][:m] little-endian doubles).
#[pyfunction]
#[pyo3(signature = (x, y, z=None, m=None))]
fn point_to_bytes<'py>(
    py: Python<'py>,
    x: f64,
    y: f64,
    z: Option<f64>,
    m: Option<f64>,
) -> Bound<'py, PyBytes> {
    PyBytes::new(py, &binary::point_to_bytes(x, y, z, m))
}

/// Reads a geometry/geography bound point as (x, y, z, m); unset coordinates are None.
#[pyfunction]
fn point_from_bytes(data: &[u8]) -> PyResult<binary::Point> {
    guard(|| binary::point_from_bytes(data))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(value_to_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(value_from_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(value_to_json, m)?)?;
    m.add_function(wrap_pyfunction!(value_from_json, m)?)?;
    m.add_function(wrap_pyfunction!(decode_values, m)?)?;
    m.add_function(wrap_pyfunction!(encode_values, m)?)?;
    m.add_function(wrap_pyfunction!(point_to_bytes, m)?)?;
    m.add_function(wrap_pyfunction!(point_from_bytes, m)?)?;
    Ok(())
}
