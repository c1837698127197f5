//! Rust core of icefloe. Each area lives in a module named for what it holds; the Python
//! bindings are confined to `py/` (feature `python`) so `cargo test` runs without Python.

pub mod alloc;
pub mod avro;
pub mod decimal;
pub mod deletes;
pub mod delta;
pub mod error;
pub mod expr;
pub mod geo;
pub mod local_fs;
pub mod manifest;
pub mod nested_json;
pub mod parquet_deletes;
pub mod parquet_footer;
pub mod parquet_pages;
pub mod parquet_read;
pub mod parquet_stream;
pub mod parquet_types;
pub mod parquet_write;
pub mod plan;
pub mod pool;
pub mod puffin;
pub mod quiet_panic;
pub mod regroup;
pub mod serde;
pub mod sketch;
pub mod transforms;
pub mod variant;

#[cfg(feature = "python")]
mod py;

pub use error::{Error, Result};
