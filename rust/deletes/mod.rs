//! Row-level deletes: deletion vectors (64-bit Roaring + the `deletion-vector-v1` blob),
//! keep-masks over Arrow, per-data-file position indexes built from position delete files, and
//! equality delete sets.

pub mod compact;
mod compact_simd;
mod dense_probe;
pub mod dictionary;
pub mod dv;
pub mod equality;
mod key_filter;
pub mod key_index;
pub mod mask;
pub mod position_index;
pub mod roaring;

pub use self::roaring::PositionBitmap;

/// A file under `shared/testdata/` (beside the repository, or beside a worktree's parent), or
/// `None` when the shared material is not present.
#[cfg(test)]
pub(crate) fn shared_testdata(rel: &str) -> Option<Vec<u8>> {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    ["../shared/testdata", "../../shared/testdata"]
        .iter()
        .map(|d| root.join(d).join(rel))
        .find(|p| p.exists())
        .and_then(|p| std::fs::read(p).ok())
}
