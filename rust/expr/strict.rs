//! Strict metrics evaluation: whether a data file's column metrics prove that *every* row of
//! the file matches a bound filter, so a delete can drop the file without reading it (the
//! reference's strict metrics evaluator plays this part in its metadata-only deletes).
//!
//! A proof is only ever claimed from statistics that are present and well formed; anything
//! missing, negative or unreadable proves nothing. The rules are deliberately narrower than
//! the reference's, so that each proof also holds under icefloe's row evaluation
//! ([`super::rows`]: two-valued logic, IEEE 754 order with `0.0 = -0.0`):
//!
//! - every comparison, `in`, `not in` and `starts_with` needs a null count of zero (and, on
//!   `float`/`double` columns, a NaN count of zero), then the bounds: `x < v` when the upper
//!   bound is below `v`, `x = v` when both bounds equal `v`, `x != v` when `v` lies outside
//!   them, `x in S` when both bounds are one value of `S`, `starts_with` when both bounds start
//!   with the prefix (truncated string bounds stay sound: a truncated lower bound is a prefix
//!   of the smallest value, a truncated upper bound is above the largest);
//! - `is_null` needs a null count equal to the record count, `not_null` a null count of zero;
//!   `is_nan` a NaN count equal to the record count, `not_nan` NaN and null counts of zero;
//! - `not starts_with` and the spatial predicates are never proven, nor orderings of uuids
//!   (whose bounds some writers ordered as signed numbers);
//! - `not` is pushed down first (De Morgan, negated operations): on rows without nulls or NaN
//!   in the compared columns the pushed-down filter selects the same rows, and wherever it
//!   selects a row the original filter does too.
//!
//! A file whose record count is missing or negative is never proven.

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BooleanArray, RecordBatch};

use super::metrics::{eval_files, field_stats, Stats};
use super::value::{bytes, cmp, has_bounds, is_nan};
use super::{Expr, Op, Pred};
use crate::serde::PrimitiveType;
use crate::{Error, Result};
use std::cmp::Ordering;

fn is_float(t: &PrimitiveType) -> bool {
    matches!(t, PrimitiveType::Float | PrimitiveType::Double)
}

/// Whether statistics `s` of a file of `records` rows prove that every row matches `p`.
pub fn must_match(p: &Pred, s: &Stats<'_>, records: i64) -> bool {
    let no_nulls = s.nulls == Some(0);
    let float = is_float(&p.term.ty);
    let no_nans = !float || s.nans == Some(0);
    match p.op {
        Op::IsNull => s.nulls == Some(records),
        Op::NotNull => no_nulls,
        Op::IsNan => float && s.nans == Some(records),
        Op::NotNan => float && no_nulls && s.nans == Some(0),
        Op::NotStartsWith | Op::StIntersects | Op::StDisjoint => false,
        _ if !(no_nulls && no_nans && has_bounds(&p.term.ty)) => false,
        // writers have ordered uuids both as signed and as unsigned 128-bit values: only
        // `lower = upper` (one value, whatever the order) proves anything
        Op::Eq | Op::In => bounded(p, s),
        _ if p.term.ty == PrimitiveType::Uuid => false,
        _ => bounded(p, s),
    }
}

/// The comparisons, sets and prefixes, on a column without nulls or NaN.
fn bounded(p: &Pred, s: &Stats<'_>) -> bool {
    // a NaN bound (not allowed by the spec) proves nothing
    let lower = s.lower.filter(|v| !is_nan(v));
    let upper = s.upper.filter(|v| !is_nan(v));
    let is = |bound: Option<&crate::serde::Value>, v, want: &[Ordering]| {
        bound.is_some_and(|b| cmp(b, v).is_some_and(|o| want.contains(&o)))
    };
    match p.op {
        Op::Lt => is(upper, p.lit(), &[Ordering::Less]),
        Op::LtEq => is(upper, p.lit(), &[Ordering::Less, Ordering::Equal]),
        Op::Gt => is(lower, p.lit(), &[Ordering::Greater]),
        Op::GtEq => is(lower, p.lit(), &[Ordering::Greater, Ordering::Equal]),
        Op::Eq => is(lower, p.lit(), &[Ordering::Equal]) && is(upper, p.lit(), &[Ordering::Equal]),
        Op::NotEq => {
            is(lower, p.lit(), &[Ordering::Greater]) || is(upper, p.lit(), &[Ordering::Less])
        }
        Op::In => p
            .values
            .iter()
            .any(|v| is(lower, v, &[Ordering::Equal]) && is(upper, v, &[Ordering::Equal])),
        Op::NotIn => p
            .values
            .iter()
            .all(|v| is(lower, v, &[Ordering::Greater]) || is(upper, v, &[Ordering::Less])),
        Op::StartsWith => {
            let Some(prefix) = bytes(p.lit()) else {
                return false;
            };
            match (lower.and_then(bytes), upper.and_then(bytes)) {
                (Some(l), Some(u)) => l.starts_with(prefix) && u.starts_with(prefix),
                _ => false,
            }
        }
        _ => false,
    }
}

/// One boolean per entry of a decoded manifest batch: whether the file's metrics prove that
/// every row matches `expr` (term ids = table field ids). Without a `record_count` column
/// nothing is proven.
pub fn strict_metrics_mask(batch: &RecordBatch, expr: &Expr) -> Result<BooleanArray> {
    let expr = expr.clone().rewrite_not();
    let n = batch.num_rows();
    let records: Vec<Option<i64>> = match batch.column_by_name("record_count") {
        None => vec![None; n],
        Some(rc) => {
            let rc = rc
                .as_primitive_opt::<Int64Type>()
                .ok_or_else(|| Error::validation("record_count must be an int64 column"))?;
            (0..n)
                .map(|i| (rc.is_valid(i) && rc.value(i) >= 0).then(|| rc.value(i)))
                .collect()
        }
    };
    let stats = field_stats(batch, &expr.terms())?;
    let mask = eval_files(&expr, &stats, n, false, &|p, s, i| {
        records[i].is_some_and(|rc| must_match(p, s, rc))
    });
    Ok(BooleanArray::from(mask))
}
