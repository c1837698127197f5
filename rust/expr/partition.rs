//! Exact evaluation of a (projected) partition filter over a manifest's `partition` struct
//! column. `not` is pushed down first (as the reference's evaluator does); a comparison,
//! `in` or `starts_with` with a null value is false, while `!=`, `not in` and
//! `not_starts_with` with a null value are true; `is_nan` of null is false. Floats compare as
//! IEEE 754 (NaN is unequal to everything and unordered).

use std::collections::HashMap;

use arrow_array::{Array, ArrayRef, BooleanArray, StructArray};

use super::value::{array_values, bytes, cmp, is_nan};
use super::{Expr, Op, Pred, Term};
use crate::serde::Value;
use crate::{Error, Result};

/// The Arrow metadata keys that carry a field id.
const ID_KEYS: [&str; 2] = ["field_id", "PARQUET:field_id"];

/// The child of `col` for `term`: by field-id metadata, else by the last path name.
fn child<'a>(col: &'a StructArray, term: &Term) -> Result<&'a ArrayRef> {
    let fields = col.fields();
    let by_id = fields.iter().position(|f| {
        ID_KEYS
            .iter()
            .any(|k| f.metadata().get(k).and_then(|s| s.parse::<i32>().ok()) == Some(term.id))
    });
    let by_name = || {
        term.path
            .last()
            .and_then(|name| fields.iter().position(|f| f.name() == name))
    };
    let pos = by_id.or_else(by_name).ok_or_else(|| {
        Error::validation(format!(
            "partition filter references field {} ({}) which the partition column lacks",
            term.id,
            term.path.join(".")
        ))
    })?;
    Ok(col.column(pos))
}

/// Whether one non-null or null `value` satisfies `pred`.
pub fn eval_value(pred: &Pred, value: Option<&Value>) -> bool {
    let Some(v) = value else {
        return matches!(
            pred.op,
            Op::IsNull | Op::NotNan | Op::NotEq | Op::NotIn | Op::NotStartsWith | Op::StDisjoint
        );
    };
    let ord = |lit: &Value| cmp(v, lit);
    match pred.op {
        Op::IsNull => false,
        Op::NotNull => true,
        Op::IsNan => is_nan(v),
        Op::NotNan => !is_nan(v),
        Op::Lt => ord(pred.lit()).is_some_and(|o| o.is_lt()),
        Op::LtEq => ord(pred.lit()).is_some_and(|o| o.is_le()),
        Op::Gt => ord(pred.lit()).is_some_and(|o| o.is_gt()),
        Op::GtEq => ord(pred.lit()).is_some_and(|o| o.is_ge()),
        Op::Eq => ord(pred.lit()).is_some_and(|o| o.is_eq()),
        Op::NotEq => !ord(pred.lit()).is_some_and(|o| o.is_eq()),
        Op::In => pred
            .values
            .iter()
            .any(|l| ord(l).is_some_and(|o| o.is_eq())),
        Op::NotIn => !pred
            .values
            .iter()
            .any(|l| ord(l).is_some_and(|o| o.is_eq())),
        Op::StartsWith | Op::NotStartsWith => {
            let hit = match (bytes(v), bytes(pred.lit())) {
                (Some(b), Some(p)) => b.starts_with(p),
                _ => false,
            };
            hit == (pred.op == Op::StartsWith)
        }
        Op::StIntersects | Op::StDisjoint => {
            // exact for well-formed WKB; an unreadable value or box may match
            let hit = match (bytes(v), pred.query_box()) {
                (Some(b), Ok(q)) => {
                    !matches!(crate::geo::BBox::of_wkb(b), Ok(g) if !g.intersects(&q))
                }
                _ => true,
            };
            hit == (pred.op == Op::StIntersects)
        }
    }
}

fn eval(e: &Expr, cols: &HashMap<i32, Vec<Option<Value>>>, n: usize) -> Vec<bool> {
    match e {
        Expr::True => vec![true; n],
        Expr::False => vec![false; n],
        Expr::And(l, r) => {
            let mut a = eval(l, cols, n);
            if a.iter().any(|x| *x) {
                let b = eval(r, cols, n);
                a.iter_mut().zip(b).for_each(|(x, y)| *x &= y);
            }
            a
        }
        Expr::Or(l, r) => {
            let mut a = eval(l, cols, n);
            if !a.iter().all(|x| *x) {
                let b = eval(r, cols, n);
                a.iter_mut().zip(b).for_each(|(x, y)| *x |= y);
            }
            a
        }
        Expr::Not(c) => eval(c, cols, n).into_iter().map(|x| !x).collect(),
        Expr::Pred(p) => cols[&p.term.id]
            .iter()
            .map(|v| eval_value(p, v.as_ref()))
            .collect(),
    }
}

/// One boolean per row of `col`: whether the row's partition tuple satisfies `expr`, whose
/// term ids are partition field ids (matched by the children's field-id metadata, else by
/// name). A null row (no partition tuple) has every field null.
pub fn partition_mask(col: &StructArray, expr: &Expr) -> Result<BooleanArray> {
    let expr = expr.clone().rewrite_not();
    let n = col.len();
    let row_nulls = col.logical_nulls();
    let mut cols: HashMap<i32, Vec<Option<Value>>> = HashMap::new();
    for term in expr.terms() {
        if cols.contains_key(&term.id) {
            continue;
        }
        let mut values = array_values(child(col, term)?.as_ref())?;
        if let Some(nulls) = &row_nulls {
            for (i, v) in values.iter_mut().enumerate() {
                if nulls.is_null(i) {
                    *v = None;
                }
            }
        }
        cols.insert(term.id, values);
    }
    Ok(BooleanArray::from(eval(&expr, &cols, n)))
}
