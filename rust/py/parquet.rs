//! Bindings of `crate::parquet_footer`: the footer check the reader runs before pyarrow builds
//! column-chunk metadata.

use pyo3::prelude::*;

use super::guard;
use crate::parquet_footer::check_footer;

/// Per row group: (row count, data page offsets, dictionary page offsets or -1), one offset per
/// leaf column.
type RowGroupTuple = (i64, Vec<i64>, Vec<i64>);

/// Checks a Parquet footer (the Thrift bytes before the length and magic); raises
/// `CorruptFileError` when pyarrow could abort on it, else returns each row group's facts.
#[pyfunction]
fn parquet_check_footer(footer: &[u8]) -> PyResult<Vec<RowGroupTuple>> {
    guard(|| {
        let info = check_footer(footer)?;
        Ok(info
            .row_groups
            .into_iter()
            .map(|g| {
                let data = g.columns.iter().map(|c| c.data_page_offset).collect();
                let dict = g
                    .columns
                    .iter()
                    .map(|c| c.dictionary_page_offset.unwrap_or(-1))
                    .collect();
                (g.num_rows, data, dict)
            })
            .collect())
    })
}

pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(parquet_check_footer, m)?)?;
    Ok(())
}
