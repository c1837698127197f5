//! The scan task value classes `DataFileRef` and `FileScanTask` (exported to Python as
//! `icefloe.scan.tasks.DataFileRef` / `FileScanTask`): frozen, picklable, compared and hashed
//! by value like the frozen dataclasses they replace, and cheap to create in bulk (a plan of a
//! million files makes a million of each; see `task_build::plan_build_tasks`).
//!
//! The objects take no part in the cyclic garbage collector: their references (strings,
//! partition tuples, residual expressions, delete file refs) cannot lead back to a task, and an
//! untracked object costs the collector nothing while hundreds of thousands of them are alive.

use std::sync::Arc;

use arrow_array::StringArray;
use pyo3::prelude::*;
use pyo3::sync::PyOnceLock;
use pyo3::types::{PyDict, PyString, PyTuple, PyType};

use crate::Error;

fn bad(field: &str, value: &Bound<'_, PyAny>, want: &str) -> PyErr {
    let shown = value
        .repr()
        .map(|r| r.to_string())
        .unwrap_or_else(|_| "<unprintable>".to_owned());
    Error::validation(format!("{field} must be {want}, got {shown}")).into()
}

fn int(field: &str, value: &Bound<'_, PyAny>) -> PyResult<i64> {
    value
        .extract::<i64>()
        .map_err(|_| bad(field, value, "an int"))
}

fn opt_int(field: &str, value: Option<&Bound<'_, PyAny>>) -> PyResult<Option<i64>> {
    match value {
        Some(v) if !v.is_none() => int(field, v).map(Some),
        _ => Ok(None),
    }
}

fn string(field: &str, value: &Bound<'_, PyAny>) -> PyResult<Py<PyString>> {
    value
        .cast::<PyString>()
        .map(|s| s.clone().unbind())
        .map_err(|_| bad(field, value, "a str"))
}

fn opt_obj(py: Python<'_>, v: Option<i64>) -> PyResult<Py<PyAny>> {
    Ok(match v {
        Some(x) => x.into_pyobject(py)?.into_any().unbind(),
        None => py.None(),
    })
}

/// `Name(field=repr, ...)` from the field names and values.
fn repr_of(name: &str, names: &[&str], values: &Bound<'_, PyTuple>) -> PyResult<String> {
    let mut out = format!("{name}(");
    for (i, (n, v)) in names.iter().zip(values.iter()).enumerate() {
        if i > 0 {
            out.push_str(", ");
        }
        out.push_str(n);
        out.push('=');
        out.push_str(&v.repr()?.to_string());
    }
    out.push(')');
    Ok(out)
}

/// A new instance with the fields of `values` (named `names`) overridden by `changes`; an
/// unknown name raises `TypeError` like a dataclass `__init__`.
fn replaced<'py>(
    cls: &Bound<'py, PyType>,
    names: &[&str],
    values: &Bound<'py, PyTuple>,
    changes: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let py = cls.py();
    let kwargs = PyDict::new(py);
    for (n, v) in names.iter().zip(values.iter()) {
        kwargs.set_item(n, v)?;
    }
    if let Some(changes) = changes {
        for (k, v) in changes.iter() {
            let name = k.extract::<String>()?;
            if !names.contains(&name.as_str()) {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "__replace__() got an unexpected keyword argument {name:?}"
                )));
            }
            kwargs.set_item(k, v)?;
        }
    }
    cls.call((), Some(&kwargs))
}

/// A frozen value class: its name, field names and field values (in declaration order). The
/// dunder methods of both task classes are these helpers, so they compare, hash, print, pickle
/// and replace alike.
trait ValueClass: pyo3::PyClass<Frozen = pyo3::pyclass::boolean_struct::True> + Sync {
    const CLASS_NAME: &'static str;
    const FIELDS: &'static [&'static str];
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>>;
}

/// `==` by field values; `NotImplemented` for any other type (a subclass included).
fn value_eq<T: ValueClass>(slf: &Bound<'_, T>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
    let py = slf.py();
    match other.cast::<T>() {
        Ok(o) if o.as_any().get_type().is(slf.as_any().get_type()) => {
            let eq = slf.get().values(py)?.eq(o.get().values(py)?)?;
            Ok(pyo3::types::PyBool::new(py, eq)
                .to_owned()
                .into_any()
                .unbind())
        }
        _ => Ok(py.NotImplemented()),
    }
}

fn value_repr<T: ValueClass>(v: &T, py: Python<'_>) -> PyResult<String> {
    repr_of(T::CLASS_NAME, T::FIELDS, &v.values(py)?)
}

/// Pickles as `(cls, values)`: the constructor takes the fields positionally.
fn value_reduce<'py, T: ValueClass>(
    slf: &Bound<'py, T>,
) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
    Ok((slf.as_any().get_type(), slf.get().values(slf.py())?))
}

fn value_replace<'py, T: ValueClass>(
    slf: &Bound<'py, T>,
    changes: Option<&Bound<'py, PyDict>>,
) -> PyResult<Bound<'py, PyAny>> {
    let values = slf.get().values(slf.py())?;
    replaced(&slf.as_any().get_type(), T::FIELDS, &values, changes)
}

const DATA_FIELDS: [&str; 9] = [
    "file_path",
    "file_format",
    "record_count",
    "file_size_in_bytes",
    "spec_id",
    "partition",
    "first_row_id",
    "data_sequence_number",
    "file_sequence_number",
];

const TASK_FIELDS: [&str; 6] = [
    "data_file",
    "delete_files",
    "start",
    "length",
    "residual",
    "spec_id",
];

/// A data file's path: a Python string, or row `i` of a planned batch's path column (a plan
/// makes no Python string per file until the path is read).
pub(crate) enum FilePath {
    Py(Py<PyString>),
    Arrow(Arc<StringArray>, usize),
}

impl FilePath {
    fn get(&self, py: Python<'_>) -> Py<PyString> {
        match self {
            Self::Py(s) => s.clone_ref(py),
            Self::Arrow(a, i) => PyString::new(py, a.value(*i)).unbind(),
        }
    }
}

/// The fields of a data file's manifest entry the reader needs. An argument given as None
/// takes its default ("parquet", 0, () or None).
#[pyclass(module = "icefloe.scan.tasks", frozen, skip_from_py_object)]
pub struct DataFileRef {
    pub(crate) file_path: FilePath,
    pub(crate) file_format: Py<PyString>,
    pub(crate) record_count: i64,
    pub(crate) file_size_in_bytes: i64,
    pub(crate) spec_id: i64,
    pub(crate) partition: Py<PyAny>,
    pub(crate) first_row_id: Option<i64>,
    pub(crate) data_sequence_number: Option<i64>,
    pub(crate) file_sequence_number: Option<i64>,
}

impl ValueClass for DataFileRef {
    const CLASS_NAME: &'static str = "DataFileRef";
    const FIELDS: &'static [&'static str] = &DATA_FIELDS;
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items: [Py<PyAny>; 9] = [
            self.file_path.get(py).into_any(),
            self.file_format.clone_ref(py).into_any(),
            self.record_count.into_pyobject(py)?.into_any().unbind(),
            self.file_size_in_bytes
                .into_pyobject(py)?
                .into_any()
                .unbind(),
            self.spec_id.into_pyobject(py)?.into_any().unbind(),
            self.partition.clone_ref(py),
            opt_obj(py, self.first_row_id)?,
            opt_obj(py, self.data_sequence_number)?,
            opt_obj(py, self.file_sequence_number)?,
        ];
        PyTuple::new(py, items)
    }
}

#[pymethods]
impl DataFileRef {
    #[new]
    #[pyo3(signature = (
        file_path,
        file_format=None,
        record_count=None,
        file_size_in_bytes=None,
        spec_id=None,
        partition=None,
        first_row_id=None,
        data_sequence_number=None,
        file_sequence_number=None,
    ))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        py: Python<'_>,
        file_path: &Bound<'_, PyAny>,
        file_format: Option<&Bound<'_, PyAny>>,
        record_count: Option<&Bound<'_, PyAny>>,
        file_size_in_bytes: Option<&Bound<'_, PyAny>>,
        spec_id: Option<&Bound<'_, PyAny>>,
        partition: Option<&Bound<'_, PyAny>>,
        first_row_id: Option<&Bound<'_, PyAny>>,
        data_sequence_number: Option<&Bound<'_, PyAny>>,
        file_sequence_number: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let or_zero = |field: &str, v: Option<&Bound<'_, PyAny>>| match v {
            Some(v) => int(field, v),
            None => Ok(0),
        };
        Ok(Self {
            file_path: FilePath::Py(string("file_path", file_path)?),
            file_format: match file_format {
                Some(f) => string("file_format", f)?,
                None => pyo3::intern!(py, "parquet").clone().unbind(),
            },
            record_count: or_zero("record_count", record_count)?,
            file_size_in_bytes: or_zero("file_size_in_bytes", file_size_in_bytes)?,
            spec_id: or_zero("spec_id", spec_id)?,
            partition: match partition {
                Some(p) => p.clone().unbind(),
                None => PyTuple::empty(py).into_any().unbind(),
            },
            first_row_id: opt_int("first_row_id", first_row_id)?,
            data_sequence_number: opt_int("data_sequence_number", data_sequence_number)?,
            file_sequence_number: opt_int("file_sequence_number", file_sequence_number)?,
        })
    }

    #[getter]
    fn file_path(&self, py: Python<'_>) -> Py<PyString> {
        self.file_path.get(py)
    }
    #[getter]
    fn file_format(&self, py: Python<'_>) -> Py<PyString> {
        self.file_format.clone_ref(py)
    }
    #[getter]
    fn record_count(&self) -> i64 {
        self.record_count
    }
    #[getter]
    fn file_size_in_bytes(&self) -> i64 {
        self.file_size_in_bytes
    }
    #[getter]
    fn spec_id(&self) -> i64 {
        self.spec_id
    }
    #[getter]
    fn partition(&self, py: Python<'_>) -> Py<PyAny> {
        self.partition.clone_ref(py)
    }
    #[getter]
    fn first_row_id(&self) -> Option<i64> {
        self.first_row_id
    }
    #[getter]
    fn data_sequence_number(&self) -> Option<i64> {
        self.data_sequence_number
    }
    #[getter]
    fn file_sequence_number(&self) -> Option<i64> {
        self.file_sequence_number
    }

    #[classattr]
    fn __match_args__(py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(PyTuple::new(py, DATA_FIELDS)?.unbind())
    }

    /// The field values in declaration order (what `dataclasses.astuple` gave).
    fn _values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.values(py)
    }

    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        value_eq(slf, other)
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.values(py)?.hash()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        value_repr(self, py)
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        value_reduce(slf)
    }

    /// A copy with the given fields changed (`copy.replace`, like `dataclasses.replace`).
    #[pyo3(signature = (**changes))]
    fn __replace__<'py>(
        slf: &Bound<'py, Self>,
        changes: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        value_replace(slf, changes)
    }
}

/// `icefloe.expressions.base.AlwaysTrue()`, the default residual.
fn always_true(py: Python<'_>) -> PyResult<Py<PyAny>> {
    static CELL: PyOnceLock<Py<PyAny>> = PyOnceLock::new();
    CELL.get_or_try_init(py, || -> PyResult<Py<PyAny>> {
        Ok(py
            .import("icefloe.expressions.base")?
            .getattr("AlwaysTrue")?
            .call0()?
            .unbind())
    })
    .map(|v| v.clone_ref(py))
}

/// One data file (or the split `[start, start + length)` of it) to read. An argument given as
/// None takes its default (no delete files, start 0, no length, `AlwaysTrue()`, the data
/// file's spec id); `delete_files` is made a tuple.
#[pyclass(module = "icefloe.scan.tasks", frozen, skip_from_py_object)]
pub struct FileScanTask {
    pub(crate) data_file: Py<DataFileRef>,
    pub(crate) delete_files: Py<PyTuple>,
    pub(crate) start: i64,
    pub(crate) length: Option<i64>,
    pub(crate) residual: Py<PyAny>,
    pub(crate) spec_id: i64,
}

impl ValueClass for FileScanTask {
    const CLASS_NAME: &'static str = "FileScanTask";
    const FIELDS: &'static [&'static str] = &TASK_FIELDS;
    fn values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items: [Py<PyAny>; 6] = [
            self.data_file.clone_ref(py).into_any(),
            self.delete_files.clone_ref(py).into_any(),
            self.start.into_pyobject(py)?.into_any().unbind(),
            opt_obj(py, self.length)?,
            self.residual.clone_ref(py),
            self.spec_id.into_pyobject(py)?.into_any().unbind(),
        ];
        PyTuple::new(py, items)
    }
}

#[pymethods]
impl FileScanTask {
    #[new]
    #[pyo3(signature = (data_file, delete_files=None, start=None, length=None, residual=None, spec_id=None))]
    fn new(
        py: Python<'_>,
        data_file: &Bound<'_, PyAny>,
        delete_files: Option<&Bound<'_, PyAny>>,
        start: Option<&Bound<'_, PyAny>>,
        length: Option<&Bound<'_, PyAny>>,
        residual: Option<&Bound<'_, PyAny>>,
        spec_id: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<Self> {
        let data = data_file
            .cast::<DataFileRef>()
            .map_err(|_| bad("data_file", data_file, "a DataFileRef"))?;
        let delete_files = match delete_files {
            None => PyTuple::empty(py).unbind(),
            Some(d) => match d.cast::<PyTuple>() {
                Ok(t) => t.clone().unbind(),
                Err(_) => {
                    let items = d
                        .try_iter()
                        .map_err(|_| bad("delete_files", d, "an iterable of DeleteFileRef"))?
                        .collect::<PyResult<Vec<_>>>()?;
                    PyTuple::new(py, items)?.unbind()
                }
            },
        };
        let spec_id = match spec_id {
            Some(s) if !s.is_none() => int("spec_id", s)?,
            _ => data.get().spec_id,
        };
        Ok(Self {
            data_file: data.clone().unbind(),
            delete_files,
            start: match start {
                Some(s) => int("start", s)?,
                None => 0,
            },
            length: opt_int("length", length)?,
            residual: match residual {
                Some(r) => r.clone().unbind(),
                None => always_true(py)?,
            },
            spec_id,
        })
    }

    #[getter]
    fn data_file(&self, py: Python<'_>) -> Py<DataFileRef> {
        self.data_file.clone_ref(py)
    }
    #[getter]
    fn delete_files(&self, py: Python<'_>) -> Py<PyTuple> {
        self.delete_files.clone_ref(py)
    }
    #[getter]
    fn start(&self) -> i64 {
        self.start
    }
    #[getter]
    fn length(&self) -> Option<i64> {
        self.length
    }
    #[getter]
    fn residual(&self, py: Python<'_>) -> Py<PyAny> {
        self.residual.clone_ref(py)
    }
    #[getter]
    fn spec_id(&self) -> i64 {
        self.spec_id
    }

    #[classattr]
    fn __match_args__(py: Python<'_>) -> PyResult<Py<PyTuple>> {
        Ok(PyTuple::new(py, TASK_FIELDS)?.unbind())
    }

    /// The field values in declaration order (what `dataclasses.astuple` gave, not recursing).
    fn _values<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        self.values(py)
    }

    fn __eq__(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>) -> PyResult<Py<PyAny>> {
        value_eq(slf, other)
    }

    fn __hash__(&self, py: Python<'_>) -> PyResult<isize> {
        self.values(py)?.hash()
    }

    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        value_repr(self, py)
    }

    fn __reduce__<'py>(
        slf: &Bound<'py, Self>,
    ) -> PyResult<(Bound<'py, PyType>, Bound<'py, PyTuple>)> {
        value_reduce(slf)
    }

    /// A copy with the given fields changed (`copy.replace`, like `dataclasses.replace`).
    #[pyo3(signature = (**changes))]
    fn __replace__<'py>(
        slf: &Bound<'py, Self>,
        changes: Option<&Bound<'py, PyDict>>,
    ) -> PyResult<Bound<'py, PyAny>> {
        value_replace(slf, changes)
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<DataFileRef>()?;
    m.add_class::<FileScanTask>()?;
    Ok(())
}
