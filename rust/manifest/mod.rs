//! Iceberg manifests (`manifest_entry` / `data_file`) and manifest lists (`manifest_file`) for
//! format versions 1-3, decoded straight into Arrow and encoded from Arrow.
//!
//! Output layout: a manifest decodes to one flat RecordBatch whose columns are the entry fields
//! (`status`, `snapshot_id`, `sequence_number`, `file_sequence_number`) followed by every
//! `data_file` field (`content` ... `content_size_in_bytes`; `block_size_in_bytes` of v1 is
//! dropped), see [`layout`]. Int-keyed metric maps are Arrow `map<int32, int64|binary>`, the
//! partition tuple is a struct typed from the manifest's own spec. Every Arrow field carries its
//! Iceberg field id in its metadata (`field_id`).

pub mod layout;
pub mod partition;
pub mod read;

pub use read::{read_manifest, read_manifest_list, read_manifest_projected, Inherit, Projection};
pub mod summary;
pub mod write;

pub use write::{write_manifest, write_manifest_list, ListOptions, ManifestOptions};

#[cfg(test)]
mod enum_tests;
#[cfg(test)]
mod oracle_tests;
