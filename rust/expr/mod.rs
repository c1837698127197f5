//! Bound filter expressions for scan planning, evaluated column-wise over Arrow batches.
//!
//! The expression arrives in the compact JSON form of `icefloe.expressions.serde.to_dict`
//! ([`parse`]); literals are decoded with the term's type into the physical values of
//! [`crate::serde::Value`] (strings as their UTF-8 bytes, so bounds, literals and partition
//! values compare as unsigned bytes, which is code-point order). Five evaluators return one
//! boolean per row:
//!
//! - [`manifest::manifest_mask`]: manifest-list pruning over `partitions` summaries;
//! - [`partition::partition_mask`]: exact evaluation over a `partition` struct column;
//! - [`metrics::metrics_mask`]: inclusive metrics evaluation over a manifest batch's counts and
//!   bounds maps;
//! - [`strict::strict_metrics_mask`]: whether a file's metrics prove every row matches;
//! - [`rows::RowFilter`]: exact evaluation over decoded data columns (the rows a row-level
//!   change selects).

pub mod manifest;
pub mod metrics;
pub mod partition;
pub mod rows;
pub mod strict;
pub mod value;

#[cfg(test)]
mod tests;

use serde_json::Value as J;

use crate::serde::json::{from_json, Json};
use crate::serde::{PrimitiveType, Value};
use crate::{Error, Result};

/// A predicate operation (names as in the REST catalog's expression JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    IsNull,
    NotNull,
    IsNan,
    NotNan,
    Lt,
    LtEq,
    Gt,
    GtEq,
    Eq,
    NotEq,
    StartsWith,
    NotStartsWith,
    In,
    NotIn,
    /// The value's bounding box intersects the query box (geometry only; see `crate::geo`).
    StIntersects,
    StDisjoint,
}

impl Op {
    fn parse(s: &str) -> Option<Op> {
        Some(match s {
            "is-null" => Op::IsNull,
            "not-null" => Op::NotNull,
            "is-nan" => Op::IsNan,
            "not-nan" => Op::NotNan,
            "lt" => Op::Lt,
            "lt-eq" => Op::LtEq,
            "gt" => Op::Gt,
            "gt-eq" => Op::GtEq,
            "eq" => Op::Eq,
            "not-eq" => Op::NotEq,
            "starts-with" => Op::StartsWith,
            "not-starts-with" => Op::NotStartsWith,
            "in" => Op::In,
            "not-in" => Op::NotIn,
            "st-intersects" => Op::StIntersects,
            "st-disjoint" => Op::StDisjoint,
            _ => return None,
        })
    }

    /// The operation matching exactly the rows this one does not (for non-null values).
    pub fn negate(self) -> Op {
        match self {
            Op::IsNull => Op::NotNull,
            Op::NotNull => Op::IsNull,
            Op::IsNan => Op::NotNan,
            Op::NotNan => Op::IsNan,
            Op::Lt => Op::GtEq,
            Op::LtEq => Op::Gt,
            Op::Gt => Op::LtEq,
            Op::GtEq => Op::Lt,
            Op::Eq => Op::NotEq,
            Op::NotEq => Op::Eq,
            Op::StartsWith => Op::NotStartsWith,
            Op::NotStartsWith => Op::StartsWith,
            Op::In => Op::NotIn,
            Op::NotIn => Op::In,
            Op::StIntersects => Op::StDisjoint,
            Op::StDisjoint => Op::StIntersects,
        }
    }
}

/// The bound reference of a predicate: field id, struct path and primitive type.
#[derive(Debug, Clone, PartialEq)]
pub struct Term {
    pub id: i32,
    pub path: Vec<String>,
    pub ty: PrimitiveType,
}

/// A predicate: operation, term and literals (none, one, or the sorted `in` set).
#[derive(Debug, Clone, PartialEq)]
pub struct Pred {
    pub op: Op,
    pub term: Term,
    pub values: Vec<Value>,
}

impl Pred {
    /// The single literal of a comparison or `starts_with`.
    pub fn lit(&self) -> &Value {
        &self.values[0]
    }

    /// The query box of `st_intersects` / `st_disjoint` (stored as 8 floats, NaN pairs for an
    /// unconstrained Z or M).
    pub fn query_box(&self) -> Result<crate::geo::BBox> {
        let v: Vec<f64> = self
            .values
            .iter()
            .map(|v| match v {
                Value::Float(f) => *f,
                _ => f64::NAN,
            })
            .collect();
        crate::geo::query_box(&v)
    }
}

/// A bound boolean expression.
#[derive(Debug, Clone, PartialEq)]
pub enum Expr {
    True,
    False,
    And(Box<Expr>, Box<Expr>),
    Or(Box<Expr>, Box<Expr>),
    Not(Box<Expr>),
    Pred(Pred),
}

impl Expr {
    /// Pushes every `not` down to the predicates (De Morgan, negated operations).
    pub fn rewrite_not(self) -> Expr {
        self.push(false)
    }

    fn push(self, neg: bool) -> Expr {
        match (self, neg) {
            (Expr::True, false) | (Expr::False, true) => Expr::True,
            (Expr::True, true) | (Expr::False, false) => Expr::False,
            (Expr::Not(c), n) => c.push(!n),
            (Expr::And(l, r), false) => Expr::And(Box::new(l.push(false)), Box::new(r.push(false))),
            (Expr::And(l, r), true) => Expr::Or(Box::new(l.push(true)), Box::new(r.push(true))),
            (Expr::Or(l, r), false) => Expr::Or(Box::new(l.push(false)), Box::new(r.push(false))),
            (Expr::Or(l, r), true) => Expr::And(Box::new(l.push(true)), Box::new(r.push(true))),
            (Expr::Pred(p), false) => Expr::Pred(p),
            (Expr::Pred(p), true) => Expr::Pred(Pred {
                op: p.op.negate(),
                ..p
            }),
        }
    }

    /// Every predicate's term, in order of appearance.
    pub fn terms(&self) -> Vec<&Term> {
        let mut out = Vec::new();
        fn walk<'a>(e: &'a Expr, out: &mut Vec<&'a Term>) {
            match e {
                Expr::And(l, r) | Expr::Or(l, r) => {
                    walk(l, out);
                    walk(r, out);
                }
                Expr::Not(c) => walk(c, out),
                Expr::Pred(p) => out.push(&p.term),
                Expr::True | Expr::False => {}
            }
        }
        walk(self, &mut out);
        out
    }
}

fn bad(msg: impl std::fmt::Display, j: &J) -> Error {
    Error::validation(format!("invalid filter expression: {msg}: {j}"))
}

fn json_scalar(j: &J) -> Option<Json> {
    Some(match j {
        J::Bool(b) => Json::Bool(*b),
        J::Number(n) => match n.as_i64() {
            Some(i) => Json::Int(i as i128),
            None => match n.as_u64() {
                Some(u) => Json::Int(u as i128),
                None => Json::Float(n.as_f64()?),
            },
        },
        J::String(s) => Json::Str(s.clone()),
        _ => return None,
    })
}

/// A literal of type `t` from its JSON single-value form; strings become their UTF-8 bytes.
fn literal(t: &PrimitiveType, j: &J) -> Result<Value> {
    // JSON numbers have no infinities: they travel as the strings Jackson writes for them
    if let (PrimitiveType::Float | PrimitiveType::Double, J::String(s)) = (t, j) {
        match s.as_str() {
            "Infinity" => return Ok(Value::Float(f64::INFINITY)),
            "-Infinity" => return Ok(Value::Float(f64::NEG_INFINITY)),
            _ => {}
        }
    }
    let scalar = json_scalar(j).ok_or_else(|| bad("literal is not a JSON scalar", j))?;
    let v = from_json(t, &scalar).map_err(|e| e.context("filter literal"))?;
    Ok(match v {
        Value::Str(s) => Value::Bytes(s.into_bytes()),
        Value::Float(f) if f.is_nan() => {
            return Err(bad("NaN literals are not allowed (use is_nan)", j))
        }
        v => v,
    })
}

fn term(j: &J) -> Result<Term> {
    let id = j
        .get("id")
        .and_then(J::as_i64)
        .and_then(|i| i32::try_from(i).ok())
        .ok_or_else(|| bad("term without an integer id", j))?;
    let path = match j.get("path") {
        Some(J::Array(a)) => a
            .iter()
            .map(|p| p.as_str().map(str::to_owned))
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| bad("term path must be a list of strings", j))?,
        None => Vec::new(),
        Some(_) => return Err(bad("term path must be a list of strings", j)),
    };
    let ty = j
        .get("type")
        .and_then(J::as_str)
        .ok_or_else(|| bad("term without a type string", j))?;
    let ty = PrimitiveType::parse(ty)?;
    Ok(Term { id, path, ty })
}

fn from_value(j: &J) -> Result<Expr> {
    match j {
        J::Bool(true) => return Ok(Expr::True),
        J::Bool(false) => return Ok(Expr::False),
        J::Object(_) => {}
        _ => return Err(bad("expected an object or a boolean", j)),
    }
    let kind = j
        .get("type")
        .and_then(J::as_str)
        .ok_or_else(|| bad("expression without a type", j))?;
    let child = |k: &str| -> Result<Box<Expr>> {
        Ok(Box::new(from_value(
            j.get(k).ok_or_else(|| bad(format!("missing {k:?}"), j))?,
        )?))
    };
    match kind {
        "and" => return Ok(Expr::And(child("left")?, child("right")?)),
        "or" => return Ok(Expr::Or(child("left")?, child("right")?)),
        "not" => return Ok(Expr::Not(child("child")?)),
        _ => {}
    }
    let op = Op::parse(kind).ok_or_else(|| bad(format!("unknown operation {kind:?}"), j))?;
    let term = term(
        j.get("term")
            .ok_or_else(|| bad("predicate without a term", j))?,
    )?;
    if matches!(op, Op::StIntersects | Op::StDisjoint) {
        if term.ty != PrimitiveType::Geometry {
            return Err(bad("st_intersects/st_disjoint need a geometry term", j));
        }
        let values = bbox_literal(
            j.get("value")
                .ok_or_else(|| bad("predicate without a value", j))?,
        )?;
        return Ok(Expr::Pred(Pred { op, term, values }));
    }
    let values = match op {
        Op::IsNull | Op::NotNull | Op::IsNan | Op::NotNan => Vec::new(),
        Op::In | Op::NotIn => match j.get("values") {
            Some(J::Array(a)) if !a.is_empty() => a
                .iter()
                .map(|v| literal(&term.ty, v))
                .collect::<Result<Vec<_>>>()?,
            _ => return Err(bad("set predicate needs a non-empty \"values\" list", j)),
        },
        _ => vec![literal(
            &term.ty,
            j.get("value")
                .ok_or_else(|| bad("predicate without a value", j))?,
        )?],
    };
    if matches!(op, Op::StartsWith | Op::NotStartsWith)
        && !matches!(term.ty, PrimitiveType::String | PrimitiveType::Binary)
    {
        return Err(bad("starts_with needs a string term", j));
    }
    Ok(Expr::Pred(Pred { op, term, values }))
}

/// The `{"xmin", "ymin", "xmax", "ymax"[, "zmin", "zmax"][, "mmin", "mmax"]}` box of a spatial
/// predicate, checked, as 8 floats (NaN for an absent dimension).
fn bbox_literal(j: &J) -> Result<Vec<Value>> {
    let keys = [
        "xmin", "ymin", "xmax", "ymax", "zmin", "zmax", "mmin", "mmax",
    ];
    let mut out = Vec::with_capacity(8);
    for (i, k) in keys.iter().enumerate() {
        let v = match j.get(k) {
            Some(J::Number(n)) => n.as_f64().ok_or_else(|| bad(format!("bad {k}"), j))?,
            None if i >= 4 => f64::NAN,
            _ => return Err(bad(format!("bounding box needs a number {k:?}"), j)),
        };
        out.push(v);
    }
    crate::geo::query_box(&out)?;
    Ok(out.into_iter().map(Value::Float).collect())
}

/// Parses the compact JSON form (text) of a bound expression.
pub fn parse(text: &str) -> Result<Expr> {
    let j: J = serde_json::from_str(text)
        .map_err(|e| Error::validation(format!("filter expression is not valid JSON: {e}")))?;
    from_value(&j)
}
