//! Delta file statistics (the `stats` JSON of add actions) parsed into Arrow columns.
//!
//! Each file's JSON (`{"numRecords", "minValues", "maxValues", "nullCount", "tightBounds"}`,
//! nested by physical column name) is parsed once; the values of the wanted leaf columns are
//! appended to one typed builder per column, so the caller gets whole columns and never loops
//! over files. A missing, empty or unparseable string is a file without statistics (all
//! nulls), and a value of the wrong JSON kind (Spark writes `"NaN"` for a NaN bound) is null:
//! a missing bound only makes a reader scan a file it could have skipped, never skip a match.

use std::sync::Arc;

use arrow_array::builder::{BooleanBuilder, Float64Builder, Int64Builder, StringBuilder};
use arrow_array::{Array, ArrayRef, BooleanArray, Int64Array, StringArray};
use serde_json::Value;

use crate::{Error, Result};

/// How a column's bounds are read from the JSON.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum StatKind {
    /// JSON integers, as Int64.
    Int,
    /// JSON numbers, as Float64.
    Float,
    /// JSON booleans.
    Bool,
    /// JSON strings (strings, dates and timestamps as Delta writes them), as Utf8.
    Str,
    /// JSON numbers of a decimal column, as their shortest text (Utf8) when the precision
    /// leaves no doubt that the double holds the exact value (at most 15 digits), else null.
    Decimal { precision: u8 },
}

impl StatKind {
    /// Parses `int`, `float`, `bool`, `string` or `decimal(P)`.
    pub fn parse(text: &str) -> Result<StatKind> {
        Ok(match text {
            "int" => StatKind::Int,
            "float" => StatKind::Float,
            "bool" => StatKind::Bool,
            "string" => StatKind::Str,
            _ => {
                let p = text
                    .strip_prefix("decimal(")
                    .and_then(|r| r.strip_suffix(')'))
                    .and_then(|p| p.parse::<u8>().ok())
                    .ok_or_else(|| Error::validation(format!("unknown stats kind {text:?}")))?;
                StatKind::Decimal { precision: p }
            }
        })
    }
}

/// A leaf column: its physical path in the stats objects and how its bounds are read.
#[derive(Clone, Debug)]
pub struct StatsColumn {
    pub path: Vec<String>,
    pub kind: StatKind,
}

/// The parsed statistics, one entry per input string.
#[derive(Debug)]
pub struct ParsedStats {
    pub num_records: Int64Array,
    pub tight_bounds: BooleanArray,
    /// Per column, in the order given.
    pub null_counts: Vec<Int64Array>,
    pub mins: Vec<ArrayRef>,
    pub maxs: Vec<ArrayRef>,
}

enum Bounds {
    Int(Int64Builder),
    Float(Float64Builder),
    Bool(BooleanBuilder),
    Str(StringBuilder),
}

impl Bounds {
    fn new(kind: StatKind, n: usize) -> Bounds {
        match kind {
            StatKind::Int => Bounds::Int(Int64Builder::with_capacity(n)),
            StatKind::Float => Bounds::Float(Float64Builder::with_capacity(n)),
            StatKind::Bool => Bounds::Bool(BooleanBuilder::with_capacity(n)),
            StatKind::Str | StatKind::Decimal { .. } => {
                Bounds::Str(StringBuilder::with_capacity(n, n * 16))
            }
        }
    }

    fn push(&mut self, kind: StatKind, v: Option<&Value>) {
        match self {
            Bounds::Int(b) => b.append_option(v.and_then(Value::as_i64)),
            Bounds::Float(b) => b.append_option(v.and_then(Value::as_f64)),
            Bounds::Bool(b) => b.append_option(v.and_then(Value::as_bool)),
            Bounds::Str(b) => match (kind, v) {
                (StatKind::Decimal { precision }, Some(Value::Number(n))) => {
                    let exact = n.is_i64() || n.is_u64() || precision <= 15;
                    b.append_option(exact.then(|| n.to_string()))
                }
                (StatKind::Decimal { .. }, _) => b.append_null(),
                (_, v) => b.append_option(v.and_then(Value::as_str)),
            },
        }
    }

    fn finish(self) -> ArrayRef {
        match self {
            Bounds::Int(mut b) => Arc::new(b.finish()),
            Bounds::Float(mut b) => Arc::new(b.finish()),
            Bounds::Bool(mut b) => Arc::new(b.finish()),
            Bounds::Str(mut b) => Arc::new(b.finish()),
        }
    }
}

fn leaf<'a>(root: &'a Value, section: &str, path: &[String]) -> Option<&'a Value> {
    let mut cur = root.get(section)?;
    for p in path {
        cur = cur.get(p)?;
    }
    (!cur.is_null()).then_some(cur)
}

/// Parses the stats JSON of every file for `columns`.
pub fn parse_stats(stats: &StringArray, columns: &[StatsColumn]) -> ParsedStats {
    let n = stats.len();
    let mut num = Int64Builder::with_capacity(n);
    let mut tight = BooleanBuilder::with_capacity(n);
    let mut nulls: Vec<Int64Builder> = columns
        .iter()
        .map(|_| Int64Builder::with_capacity(n))
        .collect();
    let mut mins: Vec<Bounds> = columns.iter().map(|c| Bounds::new(c.kind, n)).collect();
    let mut maxs: Vec<Bounds> = columns.iter().map(|c| Bounds::new(c.kind, n)).collect();
    for i in 0..n {
        let parsed = if stats.is_null(i) {
            None
        } else {
            serde_json::from_str::<Value>(stats.value(i))
                .ok()
                .filter(Value::is_object)
        };
        let root = parsed.as_ref();
        num.append_option(
            root.and_then(|r| r.get("numRecords"))
                .and_then(Value::as_i64),
        );
        tight.append_option(
            root.and_then(|r| r.get("tightBounds"))
                .and_then(Value::as_bool),
        );
        for (j, c) in columns.iter().enumerate() {
            let get = |section: &str| root.and_then(|r| leaf(r, section, &c.path));
            nulls[j].append_option(get("nullCount").and_then(Value::as_i64));
            mins[j].push(c.kind, get("minValues"));
            maxs[j].push(c.kind, get("maxValues"));
        }
    }
    ParsedStats {
        num_records: num.finish(),
        tight_bounds: tight.finish(),
        null_counts: nulls.into_iter().map(|mut b| b.finish()).collect(),
        mins: mins.into_iter().map(Bounds::finish).collect(),
        maxs: maxs.into_iter().map(Bounds::finish).collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use arrow_array::cast::AsArray;
    use arrow_array::types::{Float64Type, Int64Type};

    fn col(path: &[&str], kind: StatKind) -> StatsColumn {
        StatsColumn {
            path: path.iter().map(|s| s.to_string()).collect(),
            kind,
        }
    }

    #[test]
    fn parses_nested_leaves_and_tolerates_bad_input() {
        let stats = StringArray::from(vec![
            Some(
                r#"{"numRecords":3,"minValues":{"a":1,"s":{"x":1.5},"d":12.34,"t":"2024-01-01T00:00:00.123Z"},
                 "maxValues":{"a":9,"s":{"x":"NaN"},"d":99.99,"t":"2024-01-02"},
                 "nullCount":{"a":0,"s":{"x":1}},"tightBounds":false}"#,
            ),
            None,
            Some(""),
            Some("not json"),
            Some(r#"{"numRecords":1,"minValues":{"a":"wrong kind"},"maxValues":{}}"#),
        ]);
        let cols = [
            col(&["a"], StatKind::Int),
            col(&["s", "x"], StatKind::Float),
            col(&["d"], StatKind::Decimal { precision: 10 }),
            col(&["t"], StatKind::Str),
            col(&["missing"], StatKind::Int),
        ];
        let p = parse_stats(&stats, &cols);
        let num: Vec<Option<i64>> = p.num_records.iter().collect();
        assert_eq!(num, vec![Some(3), None, None, None, Some(1)]);
        assert!(!p.tight_bounds.value(0));
        assert!(p.tight_bounds.is_null(4));
        let a_min: Vec<Option<i64>> = p.mins[0].as_primitive::<Int64Type>().iter().collect();
        assert_eq!(a_min, vec![Some(1), None, None, None, None]);
        let x_max = p.maxs[1].as_primitive::<Float64Type>();
        assert!(x_max.is_null(0), "a NaN string is no bound");
        assert_eq!(p.mins[1].as_primitive::<Float64Type>().value(0), 1.5);
        assert_eq!(p.mins[2].as_string::<i32>().value(0), "12.34");
        assert_eq!(p.maxs[3].as_string::<i32>().value(0), "2024-01-02");
        let counts: Vec<Option<i64>> = p.null_counts[1].iter().collect();
        assert_eq!(counts, vec![Some(1), None, None, None, None]);
        assert_eq!(p.mins[4].null_count(), 5);
    }

    #[test]
    fn wide_decimals_are_not_trusted_to_doubles() {
        let stats = StringArray::from(vec![
            r#"{"minValues":{"d":12345678901234567.5,"i":12345678901234567890}}"#,
        ]);
        let p = parse_stats(
            &stats,
            &[
                col(&["d"], StatKind::Decimal { precision: 20 }),
                col(&["i"], StatKind::Decimal { precision: 20 }),
            ],
        );
        assert!(p.mins[0].is_null(0));
        assert_eq!(
            p.mins[1].as_string::<i32>().value(0),
            "12345678901234567890"
        );
        assert_eq!(
            StatKind::parse("decimal(7)").unwrap(),
            StatKind::Decimal { precision: 7 }
        );
        assert!(StatKind::parse("interval").is_err());
    }
}
