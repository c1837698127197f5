//! Single-value serialisation (spec Appendix D): the binary form used by manifest bounds and
//! partition summaries (one value at a time, or a whole Arrow column), and the JSON form used by
//! default values.

pub mod array;
pub mod binary;
pub mod json;
pub mod primitive;

pub use primitive::{PrimitiveType, Value};
