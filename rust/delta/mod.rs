//! Delta Lake support: per-file work of the Delta -> Iceberg converter.

pub mod stats;
