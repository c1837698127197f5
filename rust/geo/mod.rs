//! Geometry bounding boxes from WKB (spec "Bounds for Variant, Geometry, and Geography",
//! Appendix G): per-value and per-file boxes, their bound-point serialisation, and the
//! box-intersection test behind `st_intersects` filters.
//!
//! Rules of the spec: NaN coordinates are skipped per dimension (`POINT (1 NaN)` adds to X
//! only); a dimension with no value is left out; without X or Y there is no box (so an empty
//! geometry has none). Intersection follows the reference's `GeospatialPredicateEvaluators`
//! for geometry: closed ranges on X and Y, and on Z (M) only when both boxes have Z (M).

pub mod wkb;

#[cfg(test)]
mod tests;

use arrow_array::cast::AsArray;
use arrow_array::{Array, BooleanArray};
use arrow_buffer::BooleanBuffer;
use arrow_schema::DataType;

use crate::serde::binary::{point_from_bytes, point_to_bytes};
use crate::{Error, Result};

/// A bounding box over X, Y, Z, M; a dimension is present when its min <= max.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct BBox {
    pub min: [f64; 4],
    pub max: [f64; 4],
}

impl Default for BBox {
    fn default() -> Self {
        BBox {
            min: [f64::INFINITY; 4],
            max: [f64::NEG_INFINITY; 4],
        }
    }
}

impl wkb::Visitor for BBox {
    fn coord(&mut self, x: f64, y: f64, z: Option<f64>, m: Option<f64>) {
        for (d, v) in [Some(x), Some(y), z, m].into_iter().enumerate() {
            // NaN never wins a comparison, so `min`/`max` skip it
            if let Some(v) = v.filter(|v| !v.is_nan()) {
                self.min[d] = self.min[d].min(v);
                self.max[d] = self.max[d].max(v);
            }
        }
    }
}

impl BBox {
    /// The box of one WKB geometry, which must follow the structural rules of OGC simple
    /// features (as on write: see [`wkb::visit`]).
    pub fn of_wkb(data: &[u8]) -> Result<BBox> {
        let mut b = BBox::default();
        wkb::visit(data, &mut b)?;
        Ok(b)
    }

    /// The box of one WKB geometry, checking only its layout (for values read from a file,
    /// which another engine may have written: see [`wkb::visit_lenient`]).
    pub fn of_wkb_lenient(data: &[u8]) -> Result<BBox> {
        let mut b = BBox::default();
        wkb::visit_lenient(data, &mut b)?;
        Ok(b)
    }

    /// Whether dimension `d` (0 x, 1 y, 2 z, 3 m) has a value.
    pub fn has(&self, d: usize) -> bool {
        self.min[d] <= self.max[d]
    }

    /// Whether the box exists (X and Y both present).
    pub fn is_some(&self) -> bool {
        self.has(0) && self.has(1)
    }

    /// Widens this box to cover `other`.
    pub fn merge(&mut self, other: &BBox) {
        for d in 0..4 {
            self.min[d] = self.min[d].min(other.min[d]);
            self.max[d] = self.max[d].max(other.max[d]);
        }
    }

    fn opt(&self, d: usize, v: f64) -> Option<f64> {
        self.has(d).then_some(v)
    }

    /// The lower and upper bound points (`x:y[:z][:m]`), or `None` without X or Y.
    pub fn to_bounds(&self) -> Option<(Vec<u8>, Vec<u8>)> {
        if !self.is_some() {
            return None;
        }
        let point = |p: &[f64; 4]| point_to_bytes(p[0], p[1], self.opt(2, p[2]), self.opt(3, p[3]));
        Some((point(&self.min), point(&self.max)))
    }

    /// The box between two bound points (missing Z or M stay missing).
    pub fn from_bounds(lower: &[u8], upper: &[u8]) -> Result<BBox> {
        let (lo, hi) = (point_from_bytes(lower)?, point_from_bytes(upper)?);
        let mut b = BBox::default();
        b.min[0] = lo.0;
        b.min[1] = lo.1;
        b.max[0] = hi.0;
        b.max[1] = hi.1;
        if let (Some(a), Some(z)) = (lo.2, hi.2) {
            (b.min[2], b.max[2]) = (a, z);
        }
        if let (Some(a), Some(z)) = (lo.3, hi.3) {
            (b.min[3], b.max[3]) = (a, z);
        }
        Ok(b)
    }

    /// Whether the two boxes intersect: closed X and Y ranges, and Z (M) only when both boxes
    /// have Z (M). A missing box intersects nothing.
    pub fn intersects(&self, q: &BBox) -> bool {
        if !self.is_some() || !q.is_some() {
            return false;
        }
        (0..4).all(|d| {
            let both = self.has(d) && q.has(d);
            !both || (self.min[d] <= q.max[d] && self.max[d] >= q.min[d])
        })
    }

    /// Whether a file whose bounds are this box may hold a value whose box intersects `q`.
    /// Only X and Y prune: a file's Z (M) range covers only the values that have Z (M), so a
    /// value without them could still match a query that constrains them. NaN bounds (not
    /// allowed by the spec) prune nothing.
    pub fn may_intersect(&self, q: &BBox) -> bool {
        (0..2).all(|d| {
            let (lo, hi) = (self.min[d], self.max[d]);
            lo.is_nan() || hi.is_nan() || (lo <= q.max[d] && hi >= q.min[d])
        })
    }
}

/// The query box of a filter: `[xmin, ymin, xmax, ymax]`, optionally followed by
/// `zmin, zmax` and then `mmin, mmax` (NaN pairs for an unconstrained dimension).
pub fn query_box(values: &[f64]) -> Result<BBox> {
    if !matches!(values.len(), 4 | 6 | 8) {
        return Err(Error::validation(format!(
            "a bounding box has 4, 6 or 8 coordinates, got {}",
            values.len()
        )));
    }
    let mut b = BBox::default();
    for (d, pair) in [[values[0], values[2]], [values[1], values[3]]]
        .into_iter()
        .chain(values[4..].chunks(2).map(|p| [p[0], p[1]]))
        .enumerate()
    {
        let [lo, hi] = pair;
        if d >= 2 && lo.is_nan() && hi.is_nan() {
            continue; // dimension not constrained
        }
        if lo.is_nan() || hi.is_nan() || lo > hi {
            return Err(Error::validation(format!(
                "invalid bounding box: {} range [{lo}, {hi}] (min must be <= max, not NaN)",
                ["x", "y", "z", "m"][d]
            )));
        }
        (b.min[d], b.max[d]) = (lo, hi);
    }
    Ok(b)
}

/// Calls `f(row, wkb)` for each non-null value of a binary array.
fn each_value(arr: &dyn Array, mut f: impl FnMut(usize, &[u8]) -> Result<()>) -> Result<()> {
    macro_rules! run {
        ($a:expr) => {{
            let a = $a;
            for i in 0..a.len() {
                if a.is_valid(i) {
                    f(i, a.value(i))?;
                }
            }
        }};
    }
    match arr.data_type() {
        DataType::Binary => run!(arr.as_binary::<i32>()),
        DataType::LargeBinary => run!(arr.as_binary::<i64>()),
        DataType::BinaryView => run!(arr.as_binary_view()),
        other => {
            return Err(Error::validation(format!(
                "geometry values must be WKB in a binary array, got {other}"
            )))
        }
    }
    Ok(())
}

fn row_error(row: usize, e: Error) -> Error {
    e.context(format!("geometry value {row}"))
}

/// The box of every value of a WKB array (nulls skipped), each value checked as on write.
pub fn array_bbox(arr: &dyn Array) -> Result<BBox> {
    let mut total = BBox::default();
    each_value(arr, |row, wkb| {
        total.merge(&BBox::of_wkb(wkb).map_err(|e| row_error(row, e))?);
        Ok(())
    })?;
    Ok(total)
}

/// One boolean per value: whether its box intersects `q` (null for a null value). Values are
/// read leniently: a file may hold WKB another engine wrote.
pub fn intersects_mask(arr: &dyn Array, q: &BBox) -> Result<BooleanArray> {
    let mut hits = vec![false; arr.len()];
    each_value(arr, |row, wkb| {
        hits[row] = BBox::of_wkb_lenient(wkb)
            .map_err(|e| row_error(row, e))?
            .intersects(q);
        Ok(())
    })?;
    Ok(BooleanArray::new(
        BooleanBuffer::from(hits),
        arr.logical_nulls(),
    ))
}
