//! The decoder tree: one node per bound writer value, owning the vectors it decodes into.

use std::sync::Arc;

use arrow_buffer::NullBuffer;

use super::super::skip::Skip;

/// The validity of a column, kept as one flag per value only once the first null arrives.
#[derive(Default)]
pub(super) struct Nulls {
    pub(super) valid: Option<Vec<bool>>,
    pub(super) len: usize,
}

impl Nulls {
    #[inline]
    pub(super) fn valid(&mut self) {
        if let Some(v) = &mut self.valid {
            v.push(true);
        }
        self.len += 1;
    }
    #[inline]
    pub(super) fn null(&mut self) {
        let len = self.len;
        self.valid
            .get_or_insert_with(|| vec![true; len])
            .push(false);
        self.len += 1;
    }
    pub(super) fn finish(self) -> Option<NullBuffer> {
        self.valid.map(NullBuffer::from)
    }
    pub(super) fn reserve(&mut self, n: usize) {
        if let Some(v) = &mut self.valid {
            v.reserve(n);
        }
    }
}

/// How a value is read from the writer's encoding.
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Src {
    Int,
    Long,
    Float,
    Double,
    Bytes,
    Fixed(usize),
}

pub(super) enum Node {
    Bool(Vec<bool>, Nulls),
    /// Int (or a long in the i32 range) into Int32 or Date32.
    I32(Src, Vec<i32>, Nulls),
    /// Int or long into i64 (Int64, Timestamp, Time64).
    I64(Src, Vec<i64>, Nulls),
    F32(Vec<f32>, Nulls),
    F64(Src, Vec<f64>, Nulls),
    /// Bytes, string or fixed into Binary or Utf8.
    Bin(Src, Vec<i32>, Vec<u8>, Nulls),
    /// Fixed (or bytes of that length) into FixedSizeBinary.
    FixedBin(Src, usize, Vec<u8>, Nulls),
    /// Big-endian two's complement bytes or fixed into Decimal128.
    Dec(Src, Vec<i128>, Nulls),
    /// Union of null and one other branch.
    Opt {
        null: Option<usize>,
        value: usize,
        branches: usize,
        inner: Box<Node>,
    },
    List {
        offsets: Vec<i32>,
        nulls: Nulls,
        item_min: usize,
        item: Box<Node>,
    },
    Record {
        steps: Vec<Step>,
        children: Vec<Node>,
        missing: Vec<usize>,
        nulls: Nulls,
        len: usize,
    },
    /// A target with no writer counterpart: only nulls are appended.
    Missing(usize),
    /// An Avro array of `{int key, long|bytes value}` records read as an Arrow
    /// `map<int32, int64|binary>` (the metric maps of data files): one tight loop per map
    /// instead of a record, two leaves and their null tracking per pair.
    IntMap {
        offsets: Vec<i32>,
        nulls: Nulls,
        /// Whether the writer puts the key before the value.
        key_first: bool,
        keys: Vec<i32>,
        values: MapValues,
        /// Only pairs whose key is set here are kept (a projected read).
        keep: Option<KeySet>,
    },
}

/// A set of non-negative int keys (Iceberg field ids): one flag per small key, larger ones
/// (reserved ids) in a sorted list.
#[derive(Clone)]
pub struct KeySet {
    /// Flags for the keys below [`DENSE_KEYS`] (the field ids of table columns).
    dense: Arc<[bool]>,
    /// Larger keys (reserved field ids near 2^31), sorted.
    sparse: Arc<[i32]>,
}

/// Keys below this are flags; a flag vector as long as the largest key would take gigabytes
/// for the reserved field ids near 2^31.
const DENSE_KEYS: i32 = 1 << 16;

impl KeySet {
    /// The set of `keys`; negative keys are never stored, so they are dropped.
    pub fn new(keys: &[i32]) -> KeySet {
        let max = keys
            .iter()
            .copied()
            .filter(|&k| (0..DENSE_KEYS).contains(&k))
            .max();
        let mut flags = vec![false; max.map_or(0, |m| m as usize + 1)];
        let mut sparse = Vec::new();
        for &k in keys {
            if (0..DENSE_KEYS).contains(&k) {
                flags[k as usize] = true;
            } else if k >= DENSE_KEYS {
                sparse.push(k);
            }
        }
        sparse.sort_unstable();
        sparse.dedup();
        KeySet {
            dense: flags.into(),
            sparse: sparse.into(),
        }
    }

    #[inline(always)]
    pub(super) fn contains(&self, k: i32) -> bool {
        if k < DENSE_KEYS {
            usize::try_from(k)
                .ok()
                .and_then(|i| self.dense.get(i))
                .copied()
                .unwrap_or(false)
        } else {
            self.sparse.binary_search(&k).is_ok()
        }
    }
}

pub(super) enum MapValues {
    Long(Vec<i64>),
    /// Offsets and data of binary values.
    Bin(Vec<i32>, Vec<u8>),
}

pub(super) enum Step {
    Read(usize),
    Skip(Skip),
}

#[cfg(test)]
mod key_set_tests {
    use super::KeySet;

    #[test]
    fn reserved_ids_are_kept_without_a_flag_per_id() {
        let set = KeySet::new(&[3, 2147483546, -1, 70000, 3]);
        for (k, want) in [
            (3, true),
            (2147483546, true),
            (70000, true),
            (4, false),
            (-1, false),
        ] {
            assert_eq!(set.contains(k), want, "{k}");
        }
        assert!(set.dense.len() <= 4);
    }
}
