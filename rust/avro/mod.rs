//! Avro object container files: a bounds-checked reader and a writer for the codecs Iceberg
//! uses, and a decoder from Avro records straight into Arrow columns resolved by field id.

pub mod binary;
pub mod container;
pub mod data_file;
pub mod from_arrow;
pub mod schema;
pub mod skip;
pub mod to_arrow;

pub use container::{Codec, Container, ContainerWriter};
pub use schema::Schema;
