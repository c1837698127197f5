//! The sketch state and its compact serialisation.
//!
//! Up to `K` distinct hashes the sketch is exact and its bytes equal Java's
//! (`UpdateSketch` of family ALPHA, then `compact().toByteArray()`), including the three
//! headers in which Java differs from the C++ library: seed hash 0 when empty, flag 0x3A for a
//! single item, and p = 1.0f in bytes 12-15. Above `K` it keeps the `K` smallest hashes with
//! theta = the (K+1)-th smallest ("KMV"): the result of a DataSketches union, deterministic
//! under any order or split of the input, where Java's ALPHA form depends on insertion order.

use hashbrown::HashSet;

use crate::{Error, Result};

/// Nominal entries (lgK = 12), Iceberg Java's default.
pub const K: usize = 4096;
/// The 16-bit hash of seed 9001 that compact sketches carry.
pub const SEED_HASH: u16 = 0x93cc;
/// Theta of an exact sketch (Java's `Long.MAX_VALUE`).
const MAX_THETA: u64 = i64::MAX as u64;
/// Hashes are pruned back to the `K + 1` smallest once this many are held.
const PRUNE_AT: usize = 4 * K;

const SER_VER: u8 = 3;
const FAMILY_COMPACT: u8 = 3;
const FLAG_EMPTY: u8 = 0x04;
const FLAG_SINGLE_ITEM: u8 = 0x20;
const FLAG_ORDERED: u8 = 0x10;
/// READ_ONLY | COMPACT | ORDERED.
const FLAGS_COMPACT: u8 = 0x1a;
/// p = 1.0f, little-endian, as Java writes it.
const P_ONE: [u8; 4] = 1.0f32.to_le_bytes();

/// A theta sketch being built: the distinct hashes below `cut`.
#[derive(Debug, Clone)]
pub struct ThetaSketch {
    hashes: HashSet<u64>,
    /// Hashes at or above this are not kept (they cannot be among the K + 1 smallest).
    cut: u64,
    /// The smallest theta of the serialised sketches merged in (`MAX_THETA` when none had
    /// one): hashes at or above it were not seen by them. `cut <= theta` always.
    theta: u64,
}

impl Default for ThetaSketch {
    fn default() -> Self {
        Self::new()
    }
}

impl ThetaSketch {
    pub fn new() -> Self {
        ThetaSketch {
            hashes: HashSet::new(),
            cut: MAX_THETA,
            theta: MAX_THETA,
        }
    }

    /// A sketch from its compact serialisation (any writer's header), ready to be merged.
    /// Merging the serialised parts of a column gives the sketch of the whole column: the
    /// (K+1)-th smallest hash of the union is either retained by a part or is a part's theta.
    pub fn from_bytes(data: &[u8]) -> Result<Self> {
        let parsed = parse(data)?;
        let mut out = ThetaSketch::new();
        out.theta = parsed.theta;
        out.cut = parsed.theta;
        for i in 0..parsed.count {
            let at = parsed.first + 8 * i;
            let h = u64::from_le_bytes(data[at..at + 8].try_into().expect("8 bytes"));
            out.update_hash(h);
        }
        Ok(out)
    }

    /// Adds one theta hash (see `theta_hash`); 0 and values at theta are ignored, as in Java.
    #[inline]
    pub fn update_hash(&mut self, h: u64) {
        if h == 0 || h >= self.cut {
            return;
        }
        if self.hashes.insert(h) && self.hashes.len() >= PRUNE_AT {
            self.prune();
        }
    }

    /// Adds a value's serialised bytes; empty input is ignored, as Java's `update` does.
    #[inline]
    pub fn update_bytes(&mut self, data: &[u8]) {
        if !data.is_empty() {
            self.update_hash(super::theta_hash(data));
        }
    }

    /// Folds another sketch into this one (a union).
    pub fn merge(&mut self, other: &ThetaSketch) {
        if other.theta < self.theta {
            self.theta = other.theta;
            if self.theta < self.cut {
                self.cut = self.theta;
                let cut = self.cut;
                self.hashes.retain(|&h| h < cut);
            }
        }
        for &h in &other.hashes {
            self.update_hash(h);
        }
    }

    /// Keeps only the K + 1 smallest hashes and lowers the cut to the largest kept + 1.
    fn prune(&mut self) {
        if self.hashes.len() <= K + 1 {
            return;
        }
        let mut all: Vec<u64> = self.hashes.drain().collect();
        all.select_nth_unstable(K);
        all.truncate(K + 1);
        self.cut = all
            .iter()
            .copied()
            .max()
            .unwrap_or(MAX_THETA)
            .saturating_add(1);
        self.hashes.extend(all);
    }

    /// The retained hashes (ascending) and theta of the final sketch.
    fn finish(&self) -> (Vec<u64>, u64) {
        let mut all: Vec<u64> = self.hashes.iter().copied().collect();
        all.sort_unstable();
        if all.len() <= K {
            (all, self.theta)
        } else {
            let theta = all[K];
            all.truncate(K);
            (all, theta)
        }
    }

    /// Number of hashes the serialised sketch retains.
    pub fn num_retained(&self) -> usize {
        self.hashes.len().min(K)
    }

    /// True while every distinct value is counted exactly.
    pub fn is_exact(&self) -> bool {
        self.hashes.len() <= K && self.theta == MAX_THETA
    }

    /// The distinct-count estimate (exact up to K distinct values).
    pub fn estimate(&self) -> f64 {
        let (hashes, theta) = self.finish();
        estimate(hashes.len(), theta)
    }

    /// The compact, ordered serialisation Java writes (`CompactSketch.toByteArray()`).
    pub fn to_bytes(&self) -> Vec<u8> {
        let (hashes, theta) = self.finish();
        let n = hashes.len();
        let mut out = Vec::with_capacity(24 + 8 * n);
        let [s0, s1] = SEED_HASH.to_le_bytes();
        match (n, theta == MAX_THETA) {
            (0, true) => {
                out.extend_from_slice(&[
                    1,
                    SER_VER,
                    FAMILY_COMPACT,
                    0,
                    0,
                    FLAGS_COMPACT | FLAG_EMPTY,
                ]);
                out.extend_from_slice(&[0, 0]);
            }
            (1, true) => {
                out.extend_from_slice(&[1, SER_VER, FAMILY_COMPACT, 0, 0]);
                out.extend_from_slice(&[FLAGS_COMPACT | FLAG_SINGLE_ITEM, s0, s1]);
            }
            (_, exact) => {
                let pre_longs = if exact { 2 } else { 3 };
                out.extend_from_slice(&[
                    pre_longs,
                    SER_VER,
                    FAMILY_COMPACT,
                    0,
                    0,
                    FLAGS_COMPACT,
                    s0,
                    s1,
                ]);
                out.extend_from_slice(&(n as u32).to_le_bytes());
                out.extend_from_slice(&P_ONE);
                if !exact {
                    out.extend_from_slice(&theta.to_le_bytes());
                }
            }
        }
        for h in hashes {
            out.extend_from_slice(&h.to_le_bytes());
        }
        out
    }
}

fn estimate(retained: usize, theta: u64) -> f64 {
    if theta == MAX_THETA {
        retained as f64
    } else {
        retained as f64 / (theta as f64 / MAX_THETA as f64)
    }
}

/// The layout of a serialised compact sketch: its hash count, theta and first hash offset.
struct Parsed {
    count: usize,
    theta: u64,
    first: usize,
}

/// Checks a serialised compact theta sketch (serial version 3, any writer's header: Java's,
/// C++'s or Python's), including the seed hash.
fn parse(data: &[u8]) -> Result<Parsed> {
    let bad = |what: &str| Error::corrupt(format!("theta sketch: {what}"));
    if data.len() < 8 {
        return Err(bad(&format!(
            "{} bytes is too short for a header",
            data.len()
        )));
    }
    let pre_longs = data[0] & 0x3f;
    if data[1] != SER_VER || data[2] != FAMILY_COMPACT {
        return Err(Error::unsupported(format!(
            "theta sketch: serial version {} family {} (only compact version 3 is read)",
            data[1], data[2]
        )));
    }
    let flags = data[5];
    let seed_hash = u16::from_le_bytes([data[6], data[7]]);
    if flags & FLAG_EMPTY != 0 {
        return Ok(Parsed {
            count: 0,
            theta: MAX_THETA,
            first: 8,
        });
    }
    if seed_hash != SEED_HASH {
        return Err(bad(&format!(
            "seed hash {seed_hash:#06x}, expected {SEED_HASH:#06x}"
        )));
    }
    let u64_at = |i: usize| -> Result<u64> {
        data.get(i..i + 8)
            .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")))
            .ok_or_else(|| bad("truncated"))
    };
    let (count, theta, first) = match pre_longs {
        1 => {
            u64_at(8)?;
            (1usize, MAX_THETA, 8)
        }
        2 | 3 => {
            let count = u32::from_le_bytes(
                data.get(8..12)
                    .ok_or_else(|| bad("truncated"))?
                    .try_into()
                    .expect("4 bytes"),
            );
            let theta = if pre_longs == 3 {
                u64_at(16)?
            } else {
                MAX_THETA
            };
            (count as usize, theta, 8 * pre_longs as usize)
        }
        p => return Err(bad(&format!("preamble of {p} longs"))),
    };
    if count > (data.len() - first.min(data.len())) / 8 {
        return Err(bad(&format!(
            "{count} hashes do not fit in {} bytes",
            data.len()
        )));
    }
    if theta == 0 || theta > MAX_THETA {
        return Err(bad(&format!("theta {theta:#x} out of range")));
    }
    // Puffin blobs carry no checksum: the hashes' layout is the only check there is. Each is
    // non-zero and below theta, and an ordered sketch holds them strictly ascending.
    let ordered = flags & FLAG_ORDERED != 0;
    let mut last = 0u64;
    for i in 0..count {
        let h = u64_at(first + 8 * i)?;
        if h == 0 || h >= theta || (ordered && i > 0 && h <= last) {
            return Err(bad(&format!(
                "hash {i} ({h:#x}) is not a hash of this sketch (theta {theta:#x})"
            )));
        }
        last = h;
    }
    Ok(Parsed {
        count,
        theta,
        first,
    })
}

/// The estimate of a serialised compact theta sketch (serial version 3, any writer's header:
/// Java's, C++'s or Python's), checking the layout and the seed hash.
pub fn estimate_of(data: &[u8]) -> Result<f64> {
    let p = parse(data)?;
    Ok(estimate(p.count, p.theta))
}
