//! Manifest-list pruning: whether a manifest may hold a file matching an (inclusively
//! projected) partition filter, from the manifest's `partitions` field summaries
//! (`contains_null`, `contains_nan`, `lower_bound`, `upper_bound`), as the spec's "Scan
//! Planning" and the reference's manifest evaluator define it. A manifest without summaries,
//! or without a summary for a referenced field, may match.

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::{Array, BooleanArray, ListArray, StructArray};

use super::value::{bytes, cmp, decode_bound, has_bounds, is_nan, signed_uuid_ranges};
use super::{Expr, Op, Pred};
use crate::serde::{PrimitiveType, Value};
use crate::{Error, Result};

/// Above this many literals an `in` predicate is not checked against bounds (as the reference).
pub const IN_PREDICATE_LIMIT: usize = 200;

/// One decoded field summary.
#[derive(Debug, Clone, PartialEq)]
pub struct Summary {
    pub contains_null: Option<bool>,
    pub contains_nan: Option<bool>,
    pub lower: Option<Value>,
    pub upper: Option<Value>,
}

fn struct_bool(s: &StructArray, name: &str, i: usize) -> Option<bool> {
    let c = s.column_by_name(name)?.as_boolean_opt()?;
    (!c.is_null(i)).then(|| c.value(i))
}

fn struct_bytes<'a>(s: &'a StructArray, name: &str, i: usize) -> Option<&'a [u8]> {
    let c = s.column_by_name(name)?;
    if c.is_null(i) {
        return None;
    }
    c.as_binary_opt::<i32>()
        .map(|b| b.value(i))
        .or_else(|| c.as_binary_opt::<i64>().map(|b| b.value(i)))
}

/// The summary of partition field `pos` (of type `t`) for each manifest row.
pub fn summaries(col: &ListArray, pos: usize, t: &PrimitiveType) -> Result<Vec<Option<Summary>>> {
    let items = col.values().as_struct_opt().ok_or_else(|| {
        Error::validation("manifest-list partitions column must be a list of structs")
    })?;
    let offsets = col.value_offsets();
    let decode = |b: Option<&[u8]>, which: &str, row: usize| -> Result<Option<Value>> {
        match b {
            Some(b) if has_bounds(t) => decode_bound(t, b).map(Some).map_err(|e| {
                Error::corrupt(format!(
                    "{which} bound of partition field {pos} in manifest {row}: {}",
                    e.message()
                ))
            }),
            _ => Ok(None),
        }
    };
    (0..col.len())
        .map(|row| {
            let (start, end) = (offsets[row] as usize, offsets[row + 1] as usize);
            if col.is_null(row) || start + pos >= end || items.is_null(start + pos) {
                return Ok(None);
            }
            let i = start + pos;
            Ok(Some(Summary {
                contains_null: struct_bool(items, "contains_null", i),
                contains_nan: struct_bool(items, "contains_nan", i),
                lower: decode(struct_bytes(items, "lower_bound", i), "lower", row)?,
                upper: decode(struct_bytes(items, "upper_bound", i), "upper", row)?,
            }))
        })
        .collect()
}

fn truncated_cmp(bound: &[u8], prefix: &[u8]) -> std::cmp::Ordering {
    bound[..bound.len().min(prefix.len())].cmp(prefix)
}

/// Whether a manifest with summary `s` may hold a partition satisfying `p`. Uuid bounds in
/// signed order (see [`signed_uuid_ranges`]) are the two ranges they stand for.
pub fn may_match(p: &Pred, s: &Summary) -> bool {
    if p.term.ty == PrimitiveType::Uuid {
        if let (Some(l), Some(u)) = (&s.lower, &s.upper) {
            if let Some(ranges) = signed_uuid_ranges(l, u) {
                return ranges.into_iter().any(|(lower, upper)| {
                    let part = Summary {
                        lower: Some(lower),
                        upper: Some(upper),
                        ..s.clone()
                    };
                    may_match_ordered(p, &part)
                });
            }
        }
    }
    may_match_ordered(p, s)
}

fn may_match_ordered(p: &Pred, s: &Summary) -> bool {
    let float = matches!(p.term.ty, PrimitiveType::Float | PrimitiveType::Double);
    let lower = s.lower.as_ref();
    let upper = s.upper.as_ref();
    // Ordered comparisons of a bound that is NaN (never written by a correct writer) prune nothing.
    let below = |b: &Value, lit: &Value, strict: bool| {
        cmp(b, lit).is_some_and(|o| if strict { o.is_lt() } else { o.is_le() })
    };
    let above = |b: &Value, lit: &Value, strict: bool| {
        cmp(b, lit).is_some_and(|o| if strict { o.is_gt() } else { o.is_ge() })
    };
    match p.op {
        Op::IsNull => s.contains_null != Some(false),
        Op::NotNull => {
            let all_null = s.contains_null == Some(true)
                && lower.is_none()
                && (!float || s.contains_nan == Some(false));
            !all_null
        }
        Op::IsNan => s.contains_nan != Some(false),
        Op::NotNan => {
            !(s.contains_nan == Some(true) && s.contains_null == Some(false) && lower.is_none())
        }
        // geometry columns are never partition sources: spatial predicates never prune here
        Op::NotEq | Op::NotIn | Op::StIntersects | Op::StDisjoint => true,
        Op::Lt | Op::LtEq => match lower {
            None => false,
            Some(l) => !above(l, p.lit(), p.op == Op::LtEq),
        },
        Op::Gt | Op::GtEq => match upper {
            None => false,
            Some(u) => !below(u, p.lit(), p.op == Op::GtEq),
        },
        Op::Eq => match lower {
            None => false,
            Some(l) => !above(l, p.lit(), true) && upper.is_none_or(|u| !below(u, p.lit(), true)),
        },
        Op::In => match lower {
            None => false,
            Some(_) if p.values.len() > IN_PREDICATE_LIMIT => true,
            Some(l) if is_nan(l) => true,
            Some(l) => p.values.iter().any(|v| {
                !above(l, v, true) && upper.is_none_or(|u| is_nan(u) || !below(u, v, true))
            }),
        },
        Op::StartsWith => {
            let prefix = bytes(p.lit()).unwrap_or_default();
            match lower.and_then(bytes) {
                None => false,
                Some(l) => {
                    truncated_cmp(l, prefix).is_le()
                        && upper
                            .and_then(bytes)
                            .is_none_or(|u| truncated_cmp(u, prefix).is_ge())
                }
            }
        }
        Op::NotStartsWith => {
            if s.contains_null != Some(false) {
                return true;
            }
            let prefix = bytes(p.lit()).unwrap_or_default();
            match (lower.and_then(bytes), upper.and_then(bytes)) {
                (Some(l), Some(u)) => !(l.starts_with(prefix) && u.starts_with(prefix)),
                _ => true,
            }
        }
    }
}

fn eval(e: &Expr, sums: &HashMap<i32, Vec<Option<Summary>>>, n: usize) -> Vec<bool> {
    match e {
        Expr::True => vec![true; n],
        Expr::False => vec![false; n],
        Expr::And(l, r) => {
            let (a, b) = (eval(l, sums, n), eval(r, sums, n));
            a.into_iter().zip(b).map(|(x, y)| x && y).collect()
        }
        Expr::Or(l, r) => {
            let (a, b) = (eval(l, sums, n), eval(r, sums, n));
            a.into_iter().zip(b).map(|(x, y)| x || y).collect()
        }
        // removed by rewrite_not before evaluation
        Expr::Not(_) => vec![true; n],
        Expr::Pred(p) => match sums.get(&p.term.id) {
            Some(col) => col
                .iter()
                .map(|s| s.as_ref().is_none_or(|s| may_match(p, s)))
                .collect(),
            None => vec![true; n],
        },
    }
}

/// One boolean per manifest in `col` (the manifest list's `partitions` column, for manifests of
/// one partition spec whose partition field ids in order are `field_ids`): whether the manifest
/// may hold a file matching the projected partition filter `expr` (term ids = partition field
/// ids). A term id that is not among `field_ids` is an error.
pub fn manifest_mask(col: &ListArray, expr: &Expr, field_ids: &[i32]) -> Result<BooleanArray> {
    let expr = expr.clone().rewrite_not();
    let mut sums = HashMap::new();
    for term in expr.terms() {
        if sums.contains_key(&term.id) {
            continue;
        }
        let pos = field_ids
            .iter()
            .position(|f| *f == term.id)
            .ok_or_else(|| {
                Error::validation(format!(
                    "partition filter references field {} which is not a field of the partition \
                 type (fields {field_ids:?})",
                    term.id
                ))
            })?;
        sums.insert(term.id, summaries(col, pos, &term.ty)?);
    }
    Ok(BooleanArray::from(eval(&expr, &sums, col.len())))
}
