//! Per-data-file position sets built from position delete files (`file_path: string`,
//! `pos: long`, rows for many data files, sorted by path then position).

use std::collections::HashMap;

use arrow_array::cast::AsArray;
use arrow_array::types::Int64Type;
use arrow_array::{Array, RecordBatch};
use arrow_schema::DataType;

use super::roaring::PositionBitmap;
use crate::{Error, Result};

/// Deleted positions per data file path.
#[derive(Debug, Default, Clone)]
pub struct PositionDeleteIndex {
    files: HashMap<String, PositionBitmap>,
}

/// Calls `f(path, row_start, row_end)` for each run of equal non-null paths.
fn path_runs(col: &dyn Array, mut f: impl FnMut(&str, usize, usize) -> Result<()>) -> Result<()> {
    macro_rules! runs {
        ($arr:expr) => {{
            let arr = $arr;
            let n = arr.len();
            let mut i = 0;
            while i < n {
                if arr.is_null(i) {
                    return Err(Error::validation(format!(
                        "position delete row {i} has a null file_path"
                    )));
                }
                let path = arr.value(i);
                let mut j = i + 1;
                while j < n && !arr.is_null(j) && arr.value(j) == path {
                    j += 1;
                }
                f(path, i, j)?;
                i = j;
            }
            Ok(())
        }};
    }
    match col.data_type() {
        DataType::Utf8 => runs!(col.as_string::<i32>()),
        DataType::LargeUtf8 => runs!(col.as_string::<i64>()),
        DataType::Utf8View => runs!(col.as_string_view()),
        other => Err(Error::validation(format!(
            "position delete column file_path must be a string, not {other}"
        ))),
    }
}

impl PositionDeleteIndex {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the rows of one position delete batch (columns `file_path` and `pos`; any other
    /// column, such as `row`, is ignored). Rows need not be sorted, but sorted input is fastest.
    pub fn add_batch(&mut self, batch: &RecordBatch) -> Result<()> {
        let col = |name: &str| {
            batch.column_by_name(name).ok_or_else(|| {
                Error::validation(format!("position delete batch has no column {name:?}"))
            })
        };
        let paths = col("file_path")?;
        let pos = col("pos")?;
        if pos.data_type() != &DataType::Int64 {
            return Err(Error::validation(format!(
                "position delete column pos must be int64, not {}",
                pos.data_type()
            )));
        }
        let pos = pos.as_primitive::<Int64Type>();
        if pos.null_count() > 0 {
            return Err(Error::validation("position delete column pos has nulls"));
        }
        let values = pos.values();
        path_runs(paths.as_ref(), |path, i, j| {
            let run = &values[i..j];
            if let Some(&p) = run.iter().find(|&&p| p < 0) {
                return Err(Error::validation(format!(
                    "negative position {p} for data file {path}"
                )));
            }
            let entry = match self.files.get_mut(path) {
                Some(e) => e,
                None => self.files.entry(path.to_owned()).or_default(),
            };
            entry.extend(run.iter().map(|&p| p as u64))
        })
    }

    /// The deleted positions of `path`, if any.
    pub fn get(&self, path: &str) -> Option<&PositionBitmap> {
        self.files.get(path)
    }

    /// Adds positions for `path` (e.g. merging an existing DV).
    pub fn merge(&mut self, path: &str, bitmap: &PositionBitmap) {
        self.files
            .entry(path.to_owned())
            .or_default()
            .union_with(bitmap);
    }

    /// The data files with deletes, sorted.
    pub fn paths(&self) -> Vec<&str> {
        let mut v: Vec<&str> = self.files.keys().map(String::as_str).collect();
        v.sort_unstable();
        v
    }

    /// The total number of deleted positions.
    pub fn cardinality(&self) -> u64 {
        self.files.values().map(PositionBitmap::cardinality).sum()
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use arrow_array::{Int64Array, StringArray};
    use arrow_schema::{Field, Schema};

    use super::*;

    #[test]
    fn builds_per_file_sets() {
        let schema = Arc::new(Schema::new(vec![
            Field::new("file_path", DataType::Utf8, false),
            Field::new("pos", DataType::Int64, false),
        ]));
        let batch = RecordBatch::try_new(
            schema,
            vec![
                Arc::new(StringArray::from(vec!["a", "a", "b", "b", "b"])),
                Arc::new(Int64Array::from(vec![1, 5, 0, 2, 1 << 40])),
            ],
        )
        .unwrap();
        let mut idx = PositionDeleteIndex::new();
        idx.add_batch(&batch).unwrap();
        idx.add_batch(&batch.slice(0, 1)).unwrap();
        assert_eq!(idx.paths(), ["a", "b"]);
        assert_eq!(idx.get("a").unwrap().iter().collect::<Vec<_>>(), [1, 5]);
        assert_eq!(
            idx.get("b").unwrap().iter().collect::<Vec<_>>(),
            [0, 2, 1 << 40]
        );
        assert_eq!(idx.cardinality(), 5);
    }
}
