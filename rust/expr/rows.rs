//! Exact evaluation of a bound filter over decoded data columns, one boolean per row: the rows
//! a row-level change selects, found while the columns are decoded.
//!
//! The logic is two-valued, as in `icefloe.expressions.arrow.selection_mask`: comparisons,
//! `in` and `starts_with` are false on a null value and their negations (`!=`, `not in`,
//! `not starts_with`) true; NaN follows IEEE 754 (ordering comparisons and `=` false, `!=`
//! true, `0.0 = -0.0`); `is_nan` of null is false and `not_nan` of null true; `not` negates
//! the two-valued result of its child.
//!
//! [`RowFilter::compile`] accepts top-level columns of boolean, integer, floating, decimal,
//! date, time, timestamp and string types (strings compare as UTF-8 bytes, which is code-point
//! order) and refuses anything else, so a caller keeps its general evaluator for those.

use std::cmp::Ordering;

use arrow_array::cast::AsArray;
use arrow_array::types::{
    Date32Type, Decimal128Type, Float32Type, Float64Type, Int32Type, Int64Type,
    Time64MicrosecondType, TimestampMicrosecondType, TimestampNanosecondType,
};
use arrow_array::{Array, ArrayRef, GenericStringArray, OffsetSizeTrait};
use arrow_buffer::BooleanBuffer;
use arrow_schema::{DataType, TimeUnit};
use hashbrown::HashSet;

use super::{Expr, Op, Pred};
use crate::serde::{PrimitiveType, Value};
use crate::{Error, Result};

/// Set literals up to this many are tested as a chain of `=`; larger sets are searched.
const SHORT_SET: usize = 8;

/// A filter checked against the columns it reads, ready to evaluate batch after batch.
#[derive(Debug, Clone)]
pub struct RowFilter {
    node: Node,
}

#[derive(Debug, Clone)]
enum Node {
    Const(bool),
    And(Box<Node>, Box<Node>),
    Or(Box<Node>, Box<Node>),
    Not(Box<Node>),
    Leaf { col: usize, test: Test },
}

#[derive(Debug, Clone)]
enum Test {
    IsNull,
    NotNull,
    IsNan,
    NotNan,
    Cmp(Cmp, Lit),
    In(Set, bool),
    StartsWith(Vec<u8>, bool),
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Cmp {
    Lt,
    LtEq,
    Gt,
    GtEq,
    Eq,
    NotEq,
}

/// A literal in the physical type of its column.
#[derive(Debug, Clone)]
enum Lit {
    Bool(bool),
    I32(i32),
    I64(i64),
    I128(i128),
    F32(f32),
    F64(f64),
    Bytes(Vec<u8>),
}

/// An `in` set: sorted values of one physical type (floats without NaN), or strings hashed.
#[derive(Debug, Clone)]
enum Set {
    Bool { t: bool, f: bool },
    I32(Vec<i32>),
    I64(Vec<i64>),
    I128(Vec<i128>),
    F32(Vec<f32>),
    F64(Vec<f64>),
    Bytes(HashSet<Vec<u8>>),
}

/// The physical kind of a column the filter reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Bool,
    I32,
    I64,
    I128,
    F32,
    F64,
    Str,
}

fn unsupported(what: impl std::fmt::Display) -> Error {
    Error::validation(format!("row filter: {what}"))
}

/// The physical kind of a column of Arrow type `dt` holding Iceberg type `t`, when they agree.
fn kind(t: &PrimitiveType, dt: &DataType) -> Option<Kind> {
    use PrimitiveType as P;
    Some(match (t, dt) {
        (P::Boolean, DataType::Boolean) => Kind::Bool,
        (P::Int, DataType::Int32) | (P::Date, DataType::Date32) => Kind::I32,
        (P::Long, DataType::Int64)
        | (P::Time, DataType::Time64(TimeUnit::Microsecond))
        | (P::Timestamp | P::Timestamptz, DataType::Timestamp(TimeUnit::Microsecond, _))
        | (P::TimestampNs | P::TimestamptzNs, DataType::Timestamp(TimeUnit::Nanosecond, _)) => {
            Kind::I64
        }
        (P::Decimal { precision, scale }, DataType::Decimal128(p, s))
            if u32::from(*p) == *precision && i32::from(*s) == *scale =>
        {
            Kind::I128
        }
        (P::Float, DataType::Float32) => Kind::F32,
        (P::Double, DataType::Float64) => Kind::F64,
        (P::String, DataType::Utf8 | DataType::LargeUtf8) => Kind::Str,
        _ => return None,
    })
}

fn lit(kind: Kind, v: &Value) -> Result<Lit> {
    let int = |i: i128| -> Result<i64> {
        i64::try_from(i).map_err(|_| unsupported(format!("literal {i} out of range")))
    };
    Ok(match (kind, v) {
        (Kind::Bool, Value::Bool(b)) => Lit::Bool(*b),
        (Kind::I32, Value::Int(i)) => Lit::I32(
            i32::try_from(*i).map_err(|_| unsupported(format!("literal {i} out of range")))?,
        ),
        (Kind::I64, Value::Int(i)) => Lit::I64(int(*i)?),
        (Kind::I128, Value::Int(i)) => Lit::I128(*i),
        (Kind::F32, Value::Float(f)) => Lit::F32(*f as f32),
        (Kind::F64, Value::Float(f)) => Lit::F64(*f),
        (Kind::Str, Value::Bytes(b)) => Lit::Bytes(b.clone()),
        (Kind::Str, Value::Str(s)) => Lit::Bytes(s.as_bytes().to_vec()),
        _ => return Err(unsupported(format!("literal {v:?} for a {kind:?} column"))),
    })
}

fn sorted<T: PartialOrd>(mut v: Vec<T>) -> Vec<T> {
    v.sort_by(|a, b| a.partial_cmp(b).unwrap_or(Ordering::Equal));
    v
}

fn set(kind: Kind, values: &[Value]) -> Result<Set> {
    let lits = values
        .iter()
        .map(|v| lit(kind, v))
        .collect::<Result<Vec<_>>>()?;
    macro_rules! collect {
        ($variant:ident) => {
            Set::$variant(sorted(
                lits.iter()
                    .filter_map(|l| match l {
                        Lit::$variant(x) => Some(*x),
                        _ => None,
                    })
                    .collect(),
            ))
        };
    }
    Ok(match kind {
        Kind::Bool => Set::Bool {
            t: lits.iter().any(|l| matches!(l, Lit::Bool(true))),
            f: lits.iter().any(|l| matches!(l, Lit::Bool(false))),
        },
        Kind::I32 => collect!(I32),
        Kind::I64 => collect!(I64),
        Kind::I128 => collect!(I128),
        Kind::F32 => collect!(F32),
        Kind::F64 => collect!(F64),
        Kind::Str => Set::Bytes(
            lits.into_iter()
                .filter_map(|l| match l {
                    Lit::Bytes(b) => Some(b),
                    _ => None,
                })
                .collect(),
        ),
    })
}

fn test(p: &Pred, kind: Kind) -> Result<Test> {
    let float = matches!(kind, Kind::F32 | Kind::F64);
    let cmp = |c: Cmp| -> Result<Test> {
        if kind == Kind::Bool && !matches!(c, Cmp::Eq | Cmp::NotEq) {
            return Err(unsupported("ordering comparison of booleans"));
        }
        Ok(Test::Cmp(c, lit(kind, p.lit())?))
    };
    Ok(match p.op {
        Op::IsNull => Test::IsNull,
        Op::NotNull => Test::NotNull,
        Op::IsNan if float => Test::IsNan,
        Op::NotNan if float => Test::NotNan,
        Op::Lt => cmp(Cmp::Lt)?,
        Op::LtEq => cmp(Cmp::LtEq)?,
        Op::Gt => cmp(Cmp::Gt)?,
        Op::GtEq => cmp(Cmp::GtEq)?,
        Op::Eq => cmp(Cmp::Eq)?,
        Op::NotEq => cmp(Cmp::NotEq)?,
        Op::In | Op::NotIn => Test::In(set(kind, &p.values)?, p.op == Op::NotIn),
        Op::StartsWith | Op::NotStartsWith if kind == Kind::Str => match lit(kind, p.lit())? {
            Lit::Bytes(b) => Test::StartsWith(b, p.op == Op::NotStartsWith),
            _ => return Err(unsupported("starts_with literal")),
        },
        op => return Err(unsupported(format!("{op:?} on a {kind:?} column"))),
    })
}

impl RowFilter {
    /// Checks `expr` against the columns it may read (`field_ids[k]` decoded as `types[k]`);
    /// an error names what the filter cannot evaluate (nested or unknown fields, other types
    /// or operations).
    pub fn compile(expr: &Expr, field_ids: &[i32], types: &[DataType]) -> Result<RowFilter> {
        fn node(e: &Expr, ids: &[i32], types: &[DataType]) -> Result<Node> {
            Ok(match e {
                Expr::True => Node::Const(true),
                Expr::False => Node::Const(false),
                Expr::And(l, r) => Node::And(
                    Box::new(node(l, ids, types)?),
                    Box::new(node(r, ids, types)?),
                ),
                Expr::Or(l, r) => Node::Or(
                    Box::new(node(l, ids, types)?),
                    Box::new(node(r, ids, types)?),
                ),
                Expr::Not(c) => Node::Not(Box::new(node(c, ids, types)?)),
                Expr::Pred(p) => {
                    let col = ids
                        .iter()
                        .position(|&i| i == p.term.id)
                        .ok_or_else(|| unsupported(format!("field {} not read", p.term.id)))?;
                    let dt = types
                        .get(col)
                        .ok_or_else(|| unsupported("fewer types than field ids"))?;
                    let kind = kind(&p.term.ty, dt)
                        .ok_or_else(|| unsupported(format!("{:?} as {dt}", p.term.ty)))?;
                    Node::Leaf {
                        col,
                        test: test(p, kind)?,
                    }
                }
            })
        }
        Ok(RowFilter {
            node: node(expr, field_ids, types)?,
        })
    }

    /// One boolean per row of `columns` (each `rows` long, in the compiled order): true where
    /// the filter selects the row. Fails when a column is not of the compiled type.
    pub fn eval(&self, columns: &[ArrayRef], rows: usize) -> Result<BooleanBuffer> {
        eval(&self.node, columns, rows)
    }
}

fn eval(node: &Node, columns: &[ArrayRef], rows: usize) -> Result<BooleanBuffer> {
    Ok(match node {
        Node::Const(true) => BooleanBuffer::new_set(rows),
        Node::Const(false) => BooleanBuffer::new_unset(rows),
        Node::And(l, r) => &eval(l, columns, rows)? & &eval(r, columns, rows)?,
        Node::Or(l, r) => &eval(l, columns, rows)? | &eval(r, columns, rows)?,
        Node::Not(c) => !&eval(c, columns, rows)?,
        Node::Leaf { col, test } => {
            let a = columns
                .get(*col)
                .ok_or_else(|| unsupported("a filter column is missing"))?;
            if a.len() != rows {
                return Err(unsupported("a filter column has another length"));
            }
            leaf(a.as_ref(), test)?
        }
    })
}

fn leaf(a: &dyn Array, test: &Test) -> Result<BooleanBuffer> {
    let n = a.len();
    let valid = a.logical_nulls().map(|v| v.into_inner());
    let (hit, null_hit) = match test {
        Test::IsNull => {
            return Ok(valid.map_or_else(|| BooleanBuffer::new_unset(n), |v| !&v));
        }
        Test::NotNull => return Ok(valid.unwrap_or_else(|| BooleanBuffer::new_set(n))),
        Test::IsNan => (nan(a)?, false),
        Test::NotNan => (!&nan(a)?, true),
        Test::Cmp(c, l) => (compare(a, *c, l)?, *c == Cmp::NotEq),
        Test::In(s, negated) => {
            let hit = member(a, s)?;
            if *negated {
                (!&hit, true)
            } else {
                (hit, false)
            }
        }
        Test::StartsWith(prefix, negated) => {
            let hit = strings(a, |s| s.starts_with(prefix))?;
            if *negated {
                (!&hit, true)
            } else {
                (hit, false)
            }
        }
    };
    Ok(match valid {
        None => hit,
        Some(v) if null_hit => &hit | &!&v,
        Some(v) => &hit & &v,
    })
}

fn mismatch(a: &dyn Array) -> Error {
    unsupported(format!("unexpected column type {}", a.data_type()))
}

fn i32s(a: &dyn Array) -> Option<&[i32]> {
    match a.data_type() {
        DataType::Int32 => Some(a.as_primitive::<Int32Type>().values()),
        DataType::Date32 => Some(a.as_primitive::<Date32Type>().values()),
        _ => None,
    }
}

fn i64s(a: &dyn Array) -> Option<&[i64]> {
    match a.data_type() {
        DataType::Int64 => Some(a.as_primitive::<Int64Type>().values()),
        DataType::Time64(TimeUnit::Microsecond) => {
            Some(a.as_primitive::<Time64MicrosecondType>().values())
        }
        DataType::Timestamp(TimeUnit::Microsecond, _) => {
            Some(a.as_primitive::<TimestampMicrosecondType>().values())
        }
        DataType::Timestamp(TimeUnit::Nanosecond, _) => {
            Some(a.as_primitive::<TimestampNanosecondType>().values())
        }
        _ => None,
    }
}

fn i128s(a: &dyn Array) -> Option<&[i128]> {
    match a.data_type() {
        DataType::Decimal128(_, _) => Some(a.as_primitive::<Decimal128Type>().values()),
        _ => None,
    }
}

fn f32s(a: &dyn Array) -> Option<&[f32]> {
    (a.data_type() == &DataType::Float32).then(|| &a.as_primitive::<Float32Type>().values()[..])
}

fn f64s(a: &dyn Array) -> Option<&[f64]> {
    (a.data_type() == &DataType::Float64).then(|| &a.as_primitive::<Float64Type>().values()[..])
}

fn nan(a: &dyn Array) -> Result<BooleanBuffer> {
    if let Some(v) = f32s(a) {
        return Ok(BooleanBuffer::collect_bool(v.len(), |i| v[i].is_nan()));
    }
    let v = f64s(a).ok_or_else(|| mismatch(a))?;
    Ok(BooleanBuffer::collect_bool(v.len(), |i| v[i].is_nan()))
}

/// `v[i] c lit` for every `i` (IEEE 754 for floats: NaN is unordered and unequal).
fn cmp_values<T: Copy + PartialOrd>(v: &[T], c: Cmp, lit: T) -> BooleanBuffer {
    let n = v.len();
    match c {
        Cmp::Lt => BooleanBuffer::collect_bool(n, |i| v[i] < lit),
        Cmp::LtEq => BooleanBuffer::collect_bool(n, |i| v[i] <= lit),
        Cmp::Gt => BooleanBuffer::collect_bool(n, |i| v[i] > lit),
        Cmp::GtEq => BooleanBuffer::collect_bool(n, |i| v[i] >= lit),
        Cmp::Eq => BooleanBuffer::collect_bool(n, |i| v[i] == lit),
        Cmp::NotEq => BooleanBuffer::collect_bool(n, |i| v[i] != lit),
    }
}

fn compare(a: &dyn Array, c: Cmp, l: &Lit) -> Result<BooleanBuffer> {
    let out = match l {
        Lit::I32(x) => i32s(a).map(|v| cmp_values(v, c, *x)),
        Lit::I64(x) => i64s(a).map(|v| cmp_values(v, c, *x)),
        Lit::I128(x) => i128s(a).map(|v| cmp_values(v, c, *x)),
        Lit::F32(x) => f32s(a).map(|v| cmp_values(v, c, *x)),
        Lit::F64(x) => f64s(a).map(|v| cmp_values(v, c, *x)),
        Lit::Bool(x) => match a.data_type() {
            DataType::Boolean => {
                let v = a.as_boolean().values();
                // `= x` selects the values equal to x; `!=` the others
                Some(if *x == (c == Cmp::Eq) { v.clone() } else { !v })
            }
            _ => None,
        },
        Lit::Bytes(x) => {
            let x = x.as_slice();
            return strings(a, |s| match c {
                Cmp::Lt => s < x,
                Cmp::LtEq => s <= x,
                Cmp::Gt => s > x,
                Cmp::GtEq => s >= x,
                Cmp::Eq => s == x,
                Cmp::NotEq => s != x,
            });
        }
    };
    out.ok_or_else(|| mismatch(a))
}

/// Membership in sorted `set` with IEEE 754 equality (NaN is in no set; `0.0` finds `-0.0`).
fn in_sorted<T: Copy + PartialOrd>(v: &[T], set: &[T]) -> BooleanBuffer {
    if set.len() <= SHORT_SET {
        return BooleanBuffer::collect_bool(v.len(), |i| set.iter().any(|s| v[i] == *s));
    }
    BooleanBuffer::collect_bool(v.len(), |i| {
        let x = v[i];
        set.binary_search_by(|s| s.partial_cmp(&x).unwrap_or(Ordering::Less))
            .is_ok()
    })
}

fn member(a: &dyn Array, s: &Set) -> Result<BooleanBuffer> {
    let out = match s {
        Set::I32(set) => i32s(a).map(|v| in_sorted(v, set)),
        Set::I64(set) => i64s(a).map(|v| in_sorted(v, set)),
        Set::I128(set) => i128s(a).map(|v| in_sorted(v, set)),
        Set::F32(set) => f32s(a).map(|v| in_sorted(v, set)),
        Set::F64(set) => f64s(a).map(|v| in_sorted(v, set)),
        Set::Bool { t, f } => match a.data_type() {
            DataType::Boolean => {
                let v = a.as_boolean().values();
                Some(match (t, f) {
                    (true, true) => BooleanBuffer::new_set(v.len()),
                    (true, false) => v.clone(),
                    (false, true) => !v,
                    (false, false) => BooleanBuffer::new_unset(v.len()),
                })
            }
            _ => None,
        },
        Set::Bytes(set) => return strings(a, |s| set.contains(s)),
    };
    out.ok_or_else(|| mismatch(a))
}

fn each_string<O: OffsetSizeTrait>(
    a: &GenericStringArray<O>,
    f: impl Fn(&[u8]) -> bool,
) -> BooleanBuffer {
    BooleanBuffer::collect_bool(a.len(), |i| f(a.value(i).as_bytes()))
}

/// `f` of every string's UTF-8 bytes (null slots give whatever their empty value gives).
fn strings(a: &dyn Array, f: impl Fn(&[u8]) -> bool) -> Result<BooleanBuffer> {
    match a.data_type() {
        DataType::Utf8 => Ok(each_string(a.as_string::<i32>(), f)),
        DataType::LargeUtf8 => Ok(each_string(a.as_string::<i64>(), f)),
        _ => Err(mismatch(a)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::expr::parse;
    use arrow_array::{
        BooleanArray, Float64Array, Int32Array, Int64Array, LargeStringArray, StringArray,
    };
    use std::sync::Arc;

    fn term(id: i32, ty: &str) -> String {
        format!(r#"{{"id": {id}, "path": ["c{id}"], "type": "{ty}"}}"#)
    }

    fn run(json: &str, ids: &[i32], cols: Vec<ArrayRef>) -> Vec<bool> {
        let types: Vec<DataType> = cols.iter().map(|c| c.data_type().clone()).collect();
        let f = RowFilter::compile(&parse(json).unwrap(), ids, &types).unwrap();
        let n = cols[0].len();
        f.eval(&cols, n).unwrap().iter().collect()
    }

    #[test]
    fn comparisons_are_false_on_null_and_not_eq_true() {
        let c: ArrayRef = Arc::new(Int64Array::from(vec![Some(1), None, Some(5), Some(3)]));
        let lt = format!(
            r#"{{"type": "lt", "term": {}, "value": 4}}"#,
            term(1, "long")
        );
        assert_eq!(run(&lt, &[1], vec![c.clone()]), [true, false, false, true]);
        let ne = format!(
            r#"{{"type": "not-eq", "term": {}, "value": 5}}"#,
            term(1, "long")
        );
        assert_eq!(run(&ne, &[1], vec![c.clone()]), [true, true, false, true]);
        let not = format!(r#"{{"type": "not", "child": {lt}}}"#);
        assert_eq!(run(&not, &[1], vec![c]), [false, true, true, false]);
    }

    #[test]
    fn nan_follows_ieee() {
        let c: ArrayRef = Arc::new(Float64Array::from(vec![
            Some(f64::NAN),
            Some(-0.0),
            None,
            Some(2.0),
        ]));
        let t = term(2, "double");
        let gt = format!(r#"{{"type": "gt", "term": {t}, "value": 1.0}}"#);
        assert_eq!(run(&gt, &[2], vec![c.clone()]), [false, false, false, true]);
        let ne = format!(r#"{{"type": "not-eq", "term": {t}, "value": 2.0}}"#);
        assert_eq!(run(&ne, &[2], vec![c.clone()]), [true, true, true, false]);
        let eq0 = format!(r#"{{"type": "eq", "term": {t}, "value": 0.0}}"#);
        assert_eq!(
            run(&eq0, &[2], vec![c.clone()]),
            [false, true, false, false]
        );
        let not_nan = format!(r#"{{"type": "not-nan", "term": {t}}}"#);
        assert_eq!(
            run(&not_nan, &[2], vec![c.clone()]),
            [false, true, true, true]
        );
        let values: Vec<String> = (0..20).map(|i| format!("{i}.5")).collect();
        let big_in = format!(
            r#"{{"type": "in", "term": {t}, "values": [0.0, {}]}}"#,
            values.join(", ")
        );
        assert_eq!(run(&big_in, &[2], vec![c]), [false, true, false, false]);
    }

    #[test]
    fn strings_and_sets_and_booleans() {
        let s: ArrayRef = Arc::new(StringArray::from(vec![Some("ab"), Some("b"), None]));
        let l: ArrayRef = Arc::new(LargeStringArray::from(vec![Some("ab"), Some("b"), None]));
        let b: ArrayRef = Arc::new(BooleanArray::from(vec![Some(true), Some(false), None]));
        let i: ArrayRef = Arc::new(Int32Array::from(vec![Some(7), Some(8), None]));
        for col in [s, l] {
            let t = term(3, "string");
            let sw = format!(r#"{{"type": "not-starts-with", "term": {t}, "value": "a"}}"#);
            assert_eq!(run(&sw, &[3], vec![col.clone()]), [false, true, true]);
            let ge = format!(r#"{{"type": "gt-eq", "term": {t}, "value": "aa"}}"#);
            assert_eq!(run(&ge, &[3], vec![col.clone()]), [true, true, false]);
            let inn = format!(r#"{{"type": "not-in", "term": {t}, "values": ["b", "c"]}}"#);
            assert_eq!(run(&inn, &[3], vec![col]), [true, false, true]);
        }
        let eq = format!(
            r#"{{"type": "eq", "term": {}, "value": false}}"#,
            term(4, "boolean")
        );
        assert_eq!(run(&eq, &[4], vec![b]), [false, true, false]);
        let and = format!(
            r#"{{"type": "or", "left": {{"type": "is-null", "term": {}}}, "right": {{"type": "in", "term": {}, "values": [7, 9]}}}}"#,
            term(5, "int"),
            term(5, "int")
        );
        assert_eq!(run(&and, &[5], vec![i]), [true, false, true]);
    }

    #[test]
    fn refuses_what_it_cannot_evaluate() {
        let parse_ok = |j: &str| parse(j).unwrap();
        let lt = format!(
            r#"{{"type": "lt", "term": {}, "value": 4}}"#,
            term(1, "long")
        );
        // a field not read, another Arrow type, an ordering of booleans, binary columns
        assert!(RowFilter::compile(&parse_ok(&lt), &[2], &[DataType::Int64]).is_err());
        assert!(RowFilter::compile(&parse_ok(&lt), &[1], &[DataType::Int32]).is_err());
        let b = format!(
            r#"{{"type": "lt", "term": {}, "value": true}}"#,
            term(1, "boolean")
        );
        assert!(RowFilter::compile(&parse_ok(&b), &[1], &[DataType::Boolean]).is_err());
        let bin = format!(r#"{{"type": "is-null", "term": {}}}"#, term(1, "binary"));
        assert!(RowFilter::compile(&parse_ok(&bin), &[1], &[DataType::Binary]).is_err());
        // a column of another type at evaluation is an error, not a panic
        let f = RowFilter::compile(&parse_ok(&lt), &[1], &[DataType::Int64]).unwrap();
        let wrong: ArrayRef = Arc::new(Int32Array::from(vec![1]));
        assert!(f.eval(&[wrong], 1).is_err());
    }
}
