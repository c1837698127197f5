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
        DataType::Dictionary(_, _) => dictionary_runs(col, f),
        other => Err(Error::validation(format!(
            "position delete column file_path must be a string, not {other}"
        ))),
    }
}

/// [`path_runs`] of a dictionary-encoded `file_path` (as read with the column's dictionary
/// kept): runs of equal keys, each path looked up once per run instead of compared per row.
fn dictionary_runs(
    col: &dyn Array,
    mut f: impl FnMut(&str, usize, usize) -> Result<()>,
) -> Result<()> {
    let dict = col.as_any_dictionary();
    let values = dict.values();
    let names: Vec<Option<&str>> = match values.data_type() {
        DataType::Utf8 => values.as_string::<i32>().iter().collect(),
        DataType::LargeUtf8 => values.as_string::<i64>().iter().collect(),
        DataType::Utf8View => values.as_string_view().iter().collect(),
        other => {
            return Err(Error::validation(format!(
                "position delete column file_path must be a string, not a dictionary of {other}"
            )))
        }
    };
    if col.is_empty() {
        return Ok(());
    }
    if names.is_empty() {
        // no value for any key to name (the crate's key normalisation needs one)
        return Err(Error::validation(
            "position delete row 0 has a null file_path",
        ));
    }
    let keys = dict.normalized_keys();
    let nulls = col.logical_nulls();
    let valid = |i: usize| nulls.as_ref().is_none_or(|n| n.is_valid(i));
    let n = keys.len();
    let mut i = 0;
    while i < n {
        let path = if valid(i) {
            names.get(keys[i]).copied().flatten()
        } else {
            None
        };
        let Some(path) = path else {
            return Err(Error::validation(format!(
                "position delete row {i} has a null file_path"
            )));
        };
        let key = keys[i];
        let mut j = i + 1;
        while j < n && keys[j] == key && valid(j) {
            j += 1;
        }
        f(path, i, j)?;
        i = j;
    }
    Ok(())
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

    use arrow_array::types::Int32Type;
    use arrow_array::{ArrayRef, DictionaryArray, Int32Array, Int64Array, StringArray};
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

    fn batch_of(paths: ArrayRef, pos: Vec<i64>) -> RecordBatch {
        let schema = Arc::new(Schema::new(vec![
            Field::new("file_path", paths.data_type().clone(), true),
            Field::new("pos", DataType::Int64, false),
        ]));
        RecordBatch::try_new(schema, vec![paths, Arc::new(Int64Array::from(pos))]).unwrap()
    }

    fn index_of(batch: &RecordBatch) -> Result<Vec<(String, Vec<u64>)>> {
        let mut idx = PositionDeleteIndex::new();
        idx.add_batch(batch)?;
        Ok(idx
            .paths()
            .into_iter()
            .map(|p| (p.to_owned(), idx.get(p).unwrap().iter().collect()))
            .collect())
    }

    #[test]
    fn dictionary_paths_index_as_plain_strings() {
        let paths = ["b", "b", "a", "a", "b", "c", "a"];
        let pos = vec![3, 9, 0, 4, 1, 7, 2];
        let plain = batch_of(Arc::new(StringArray::from(paths.to_vec())), pos.clone());
        // "a" twice in the dictionary: runs under either key name the same file
        let values = StringArray::from(vec!["a", "b", "c", "a"]);
        let keys = Int32Array::from(vec![1, 1, 0, 3, 1, 2, 0]);
        let dict = DictionaryArray::<Int32Type>::try_new(keys, Arc::new(values)).unwrap();
        let want = index_of(&plain).unwrap();
        assert_eq!(
            index_of(&batch_of(Arc::new(dict.clone()), pos.clone())).unwrap(),
            want
        );
        // sliced: the keys' offset is honoured
        let sliced = batch_of(Arc::new(dict.slice(2, 3)), pos[2..5].to_vec());
        assert_eq!(
            index_of(&sliced).unwrap(),
            index_of(&plain.slice(2, 3)).unwrap()
        );
    }

    #[test]
    fn dictionary_paths_refuse_nulls_and_other_values() {
        let values = StringArray::from(vec![Some("a"), None]);
        let null_value =
            DictionaryArray::<Int32Type>::try_new(Int32Array::from(vec![0, 1]), Arc::new(values))
                .unwrap();
        let err = index_of(&batch_of(Arc::new(null_value), vec![0, 1])).unwrap_err();
        assert!(
            err.to_string().contains("row 1 has a null file_path"),
            "{err}"
        );
        let null_key = DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(vec![Some(0), None]),
            Arc::new(StringArray::from(vec!["a"])),
        )
        .unwrap();
        let err = index_of(&batch_of(Arc::new(null_key), vec![0, 1])).unwrap_err();
        assert!(
            err.to_string().contains("row 1 has a null file_path"),
            "{err}"
        );
        let no_values = |keys: Vec<Option<i32>>| {
            let values: Vec<&str> = Vec::new();
            let keys = Int32Array::from(keys);
            let dict =
                DictionaryArray::<Int32Type>::try_new(keys, Arc::new(StringArray::from(values)))
                    .unwrap();
            let n = dict.len();
            index_of(&batch_of(Arc::new(dict), vec![0; n]))
        };
        assert_eq!(no_values(vec![]).unwrap(), []);
        let err = no_values(vec![None]).unwrap_err();
        assert!(
            err.to_string().contains("row 0 has a null file_path"),
            "{err}"
        );
        let numbers = DictionaryArray::<Int32Type>::try_new(
            Int32Array::from(vec![0]),
            Arc::new(Int64Array::from(vec![5])),
        )
        .unwrap();
        let err = index_of(&batch_of(Arc::new(numbers), vec![0])).unwrap_err();
        assert!(
            err.to_string().contains("not a dictionary of Int64"),
            "{err}"
        );
    }
}
