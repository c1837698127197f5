//! Inclusive metrics evaluation: whether a data or delete file may hold a row matching a bound
//! filter, from its column metrics (`value_counts`, `null_value_counts`, `nan_value_counts`,
//! `lower_bounds`, `upper_bounds`, keyed by field id) and `record_count`, following the rules
//! of the reference's inclusive metrics evaluator. Missing statistics never prune; a file with
//! no rows never matches (a negative count, from imported files, always may).
//!
//! Each referenced field's statistics are looked up and its bounds decoded once per batch
//! (by stored length, see [`super::value::decode_bound`]), then each predicate runs over the
//! rows.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, BooleanArray, MapArray, RecordBatch};

use super::manifest::IN_PREDICATE_LIMIT;
use super::value::{bytes, cmp, decode_bound, has_bounds, is_nan, map_lookup, signed_uuid_ranges};
use super::{Expr, Op, Pred, Term};
use crate::serde::{PrimitiveType, Value};
use crate::{Error, Result};

/// The statistics of one field for every row of a batch.
#[derive(Debug, Default)]
pub struct FieldStats {
    pub values: Vec<Option<i64>>,
    pub nulls: Vec<Option<i64>>,
    pub nans: Vec<Option<i64>>,
    pub lower: Vec<Option<Value>>,
    pub upper: Vec<Option<Value>>,
}

/// The statistics of one field in one file.
#[derive(Debug, Clone, Copy)]
pub struct Stats<'a> {
    pub values: Option<i64>,
    pub nulls: Option<i64>,
    pub nans: Option<i64>,
    pub lower: Option<&'a Value>,
    pub upper: Option<&'a Value>,
}

impl Stats<'_> {
    fn nulls_only(&self) -> bool {
        matches!((self.values, self.nulls), (Some(v), Some(n)) if v == n)
    }
    fn nans_only(&self) -> bool {
        matches!((self.values, self.nans), (Some(v), Some(n)) if v == n)
    }
    fn may_contain_null(&self) -> bool {
        self.nulls != Some(0)
    }
}

fn map_column<'a>(batch: &'a RecordBatch, name: &str) -> Result<Option<&'a MapArray>> {
    match batch.column_by_name(name) {
        None => Ok(None),
        Some(c) => c.as_map_opt().map(Some).ok_or_else(|| {
            Error::validation(format!(
                "manifest column {name} must be a map, got {}",
                c.data_type()
            ))
        }),
    }
}

fn counts(map: Option<&MapArray>, idx: &[Option<usize>]) -> Result<Vec<Option<i64>>> {
    let Some(map) = map else {
        return Ok(vec![None; idx.len()]);
    };
    let vals = map
        .values()
        .as_primitive_opt::<Int64Type>()
        .ok_or_else(|| Error::validation("metrics count maps must have int64 values"))?;
    Ok(idx.iter().map(|i| i.map(|i| vals.value(i))).collect())
}

fn bounds<'a>(
    map: Option<&'a MapArray>,
    idx: &[Option<usize>],
    term: &Term,
    which: &str,
) -> Result<Vec<Option<Value>>> {
    let Some(map) = map else {
        return Ok(vec![None; idx.len()]);
    };
    let geometry = term.ty == crate::serde::PrimitiveType::Geometry;
    if !has_bounds(&term.ty) && !geometry {
        return Ok(vec![None; idx.len()]);
    }
    let vals = map.values();
    let get: Box<dyn Fn(usize) -> &'a [u8] + 'a> = if let Some(b) = vals.as_binary_opt::<i32>() {
        Box::new(move |i| b.value(i))
    } else if let Some(b) = vals.as_binary_opt::<i64>() {
        Box::new(move |i| b.value(i))
    } else {
        return Err(Error::validation(
            "metrics bound maps must have binary values",
        ));
    };
    idx.iter()
        .enumerate()
        .map(|(row, i)| match i {
            None => Ok(None),
            // geometry bounds stay as their x:y[:z][:m] points (decoded by `may_match`)
            Some(i) if geometry => Ok(Some(Value::Bytes(get(*i).to_vec()))),
            Some(i) => decode_bound(&term.ty, get(*i)).map(Some).map_err(|e| {
                Error::corrupt(format!(
                    "{which} bound of field {} ({}) in manifest entry {row}: {}",
                    term.id,
                    term.path.join("."),
                    e.message()
                ))
            }),
        })
        .collect()
}

/// Looks up and decodes the statistics of each referenced field.
pub fn field_stats(batch: &RecordBatch, terms: &[&Term]) -> Result<HashMap<i32, FieldStats>> {
    let mut uniq: Vec<&Term> = Vec::new();
    for t in terms {
        if !uniq.iter().any(|u| u.id == t.id) {
            uniq.push(t);
        }
    }
    let ids: Vec<i32> = uniq.iter().map(|t| t.id).collect();
    let n = batch.num_rows();
    let cols = [
        "value_counts",
        "null_value_counts",
        "nan_value_counts",
        "lower_bounds",
        "upper_bounds",
    ];
    let mut maps = Vec::with_capacity(5);
    let mut idx = Vec::with_capacity(5);
    for c in cols {
        let m = map_column(batch, c)?;
        idx.push(map_lookup(m, &ids, n)?);
        maps.push(m);
    }
    let mut out = HashMap::new();
    for (k, term) in uniq.iter().enumerate() {
        out.insert(
            term.id,
            FieldStats {
                values: counts(maps[0], &idx[0][k])?,
                nulls: counts(maps[1], &idx[1][k])?,
                nans: counts(maps[2], &idx[2][k])?,
                lower: bounds(maps[3], &idx[3][k], term, "lower")?,
                upper: bounds(maps[4], &idx[4][k], term, "upper")?,
            },
        );
    }
    Ok(out)
}

fn truncated_cmp(bound: &[u8], prefix: &[u8]) -> std::cmp::Ordering {
    bound[..bound.len().min(prefix.len())].cmp(prefix)
}

/// Whether a file whose statistics for the predicate's field are `s` may hold a matching row.
///
/// Uuid bounds in signed order (see [`signed_uuid_ranges`]) are the two ranges they stand for.
pub fn may_match(p: &Pred, s: &Stats<'_>) -> bool {
    if p.term.ty == PrimitiveType::Uuid {
        if let (Some(l), Some(u)) = (s.lower, s.upper) {
            if let Some(ranges) = signed_uuid_ranges(l, u) {
                return ranges.iter().any(|(lower, upper)| {
                    let part = Stats {
                        lower: Some(lower),
                        upper: Some(upper),
                        ..*s
                    };
                    may_match_ordered(p, &part)
                });
            }
        }
    }
    may_match_ordered(p, s)
}

fn may_match_ordered(p: &Pred, s: &Stats<'_>) -> bool {
    // a NaN bound (not allowed by the spec) prunes nothing
    let lower = s.lower.filter(|v| !is_nan(v));
    let upper = s.upper.filter(|v| !is_nan(v));
    let bad_bounds = s.lower.is_some_and(is_nan) || s.upper.is_some_and(is_nan);
    match p.op {
        Op::IsNull => s.nulls != Some(0),
        Op::NotNull => !s.nulls_only(),
        Op::IsNan => s.nans != Some(0) && !s.nulls_only(),
        Op::NotNan => !s.nans_only(),
        Op::NotEq | Op::NotIn | Op::StDisjoint => true,
        Op::StIntersects => {
            if s.nulls_only() {
                return false;
            }
            // missing or unreadable bounds (or a bad query box) never prune
            match (
                s.lower.and_then(bytes),
                s.upper.and_then(bytes),
                p.query_box(),
            ) {
                (Some(l), Some(u), Ok(q)) => {
                    !matches!(crate::geo::BBox::from_bounds(l, u), Ok(b) if !b.may_intersect(&q))
                }
                _ => true,
            }
        }
        Op::NotStartsWith => {
            if s.may_contain_null() {
                return true;
            }
            let prefix = bytes(p.lit()).unwrap_or_default();
            match (lower.and_then(bytes), upper.and_then(bytes)) {
                (Some(l), Some(u)) => !(l.starts_with(prefix) && u.starts_with(prefix)),
                _ => true,
            }
        }
        _ if s.nulls_only() => false,
        Op::StartsWith => {
            let prefix = bytes(p.lit()).unwrap_or_default();
            lower
                .and_then(bytes)
                .is_none_or(|l| truncated_cmp(l, prefix).is_le())
                && upper
                    .and_then(bytes)
                    .is_none_or(|u| truncated_cmp(u, prefix).is_ge())
        }
        _ if s.nans_only() => false,
        _ if bad_bounds => true,
        Op::Lt => lower.is_none_or(|l| !cmp(l, p.lit()).is_some_and(|o| o.is_ge())),
        Op::LtEq => lower.is_none_or(|l| !cmp(l, p.lit()).is_some_and(|o| o.is_gt())),
        Op::Gt => upper.is_none_or(|u| !cmp(u, p.lit()).is_some_and(|o| o.is_le())),
        Op::GtEq => upper.is_none_or(|u| !cmp(u, p.lit()).is_some_and(|o| o.is_lt())),
        Op::Eq => {
            lower.is_none_or(|l| !cmp(l, p.lit()).is_some_and(|o| o.is_gt()))
                && upper.is_none_or(|u| !cmp(u, p.lit()).is_some_and(|o| o.is_lt()))
        }
        Op::In => {
            p.values.len() > IN_PREDICATE_LIMIT
                || p.values.iter().any(|v| {
                    lower.is_none_or(|l| !cmp(l, v).is_some_and(|o| o.is_gt()))
                        && upper.is_none_or(|u| !cmp(u, v).is_some_and(|o| o.is_lt()))
                })
        }
    }
}

/// One boolean per file of `expr` (with `not` pushed down) over the files' statistics:
/// `pred(p, s, i)` decides a predicate for file `i`, `and`/`or` combine; a `not` left over
/// gives `not_value` (the answer that stays sound: "may match" for inclusive evaluation,
/// "not proven" for strict).
pub(super) fn eval_files(
    e: &Expr,
    stats: &HashMap<i32, FieldStats>,
    n: usize,
    not_value: bool,
    pred: &dyn Fn(&Pred, &Stats<'_>, usize) -> bool,
) -> Vec<bool> {
    let walk = |x: &Expr| eval_files(x, stats, n, not_value, pred);
    match e {
        Expr::True => vec![true; n],
        Expr::False => vec![false; n],
        Expr::And(l, r) => walk(l)
            .into_iter()
            .zip(walk(r))
            .map(|(x, y)| x && y)
            .collect(),
        Expr::Or(l, r) => walk(l)
            .into_iter()
            .zip(walk(r))
            .map(|(x, y)| x || y)
            .collect(),
        Expr::Not(_) => vec![not_value; n],
        Expr::Pred(p) => {
            let f = &stats[&p.term.id];
            (0..n)
                .map(|i| {
                    let s = Stats {
                        values: f.values[i],
                        nulls: f.nulls[i],
                        nans: f.nans[i],
                        lower: f.lower[i].as_ref(),
                        upper: f.upper[i].as_ref(),
                    };
                    pred(p, &s, i)
                })
                .collect()
        }
    }
}

/// One boolean per entry of a decoded manifest batch: whether the file may hold a row matching
/// `expr` (term ids = table field ids). Absent metrics columns count as missing statistics.
pub fn metrics_mask(batch: &RecordBatch, expr: &Expr) -> Result<BooleanArray> {
    let expr = expr.clone().rewrite_not();
    let n = batch.num_rows();
    let stats = field_stats(batch, &expr.terms())?;
    let mut mask = eval_files(&expr, &stats, n, true, &|p, s, _| may_match(p, s));
    if let Some(rc) = batch.column_by_name("record_count") {
        let rc = rc
            .as_primitive_opt::<Int64Type>()
            .ok_or_else(|| Error::validation("record_count must be an int64 column"))?;
        for (i, m) in mask.iter_mut().enumerate() {
            if rc.is_valid(i) && rc.value(i) == 0 {
                *m = false;
            }
        }
    }
    Ok(BooleanArray::from(mask))
}
