//! Sets of 64-bit row positions in the 64-bit Roaring "portable" serialisation that Iceberg
//! deletion vectors use (Roaring format spec, "Extension for 64-bit implementations").
//!
//! Layout, all little-endian: a u64 count of 32-bit bitmaps, then per bitmap, by ascending key,
//! a u32 key (the high 32 bits of the positions it holds) and a standard 32-bit Roaring bitmap
//! of the low 32 bits. Like the Java reference, keys above `i32::MAX - 1` are rejected, so the
//! largest position is [`MAX_POSITION`].

use roaring::RoaringBitmap;

use crate::{Error, Result};

/// The largest key (high 32 bits of a position) the Java reference supports.
pub const MAX_KEY: u32 = i32::MAX as u32 - 1;
/// The largest position a deletion vector can hold (`0x7FFFFFFE_80000000`, as in Java).
pub const MAX_POSITION: u64 = ((MAX_KEY as u64) << 32) | 0x8000_0000;

/// Keys left empty below the largest that [`PositionBitmap::serialize_into`] writes as empty
/// bitmaps, as Java does; a set leaving more is written without them.
pub const MAX_FILLED_GAPS: u64 = 1 << 16;
/// The portable serialisation of an empty 32-bit bitmap: its cookie and a container count of 0.
const EMPTY_BITMAP_BYTES: usize = 8;

/// A set of row positions: one 32-bit Roaring bitmap per high key, ordered by key, none empty.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PositionBitmap {
    maps: Vec<(u32, RoaringBitmap)>,
}

fn check_position(pos: u64) -> Result<()> {
    if pos > MAX_POSITION {
        return Err(Error::validation(format!(
            "position {pos} is out of range: deletion vectors hold positions 0..={MAX_POSITION}"
        )));
    }
    Ok(())
}

/// Whether the strictly ascending `run` is dense enough (on average a value every 64 or fewer)
/// to build through a plain bit array.
fn dense(run: &[u32]) -> bool {
    match (run.first(), run.last()) {
        (Some(&a), Some(&b)) => run.len() >= 64 && ((b - a) as u64) < 64 * run.len() as u64,
        _ => false,
    }
}

/// The set of the strictly ascending, [`dense`] `run`: its bits are set in a byte array from
/// the 64 Ki-aligned chunk of the first value, which the Roaring crate then splits into
/// containers. Several times faster than appending value by value (each array container of
/// a dense run is outgrown and converted to a bitmap).
fn from_sorted_dense(run: &[u32]) -> RoaringBitmap {
    let base = run[0] & !0xffff;
    let last = run[run.len() - 1];
    let mut bytes = vec![0u8; ((last - base) as usize >> 3) + 1];
    for &v in run {
        let i = (v - base) as usize;
        bytes[i >> 3] |= 1 << (i & 7);
    }
    RoaringBitmap::from_lsb0_bytes(base, &bytes)
}

impl PositionBitmap {
    /// An empty set.
    pub fn new() -> Self {
        Self::default()
    }

    /// The set of the given positions, in any order (sorted input is fastest).
    pub fn from_positions<I: IntoIterator<Item = u64>>(positions: I) -> Result<Self> {
        let mut bm = Self::new();
        bm.extend(positions)?;
        Ok(bm)
    }

    /// The set of the given signed positions (Arrow `int64` / numpy), rejecting negatives.
    pub fn from_i64(positions: &[i64]) -> Result<Self> {
        if let Some(&p) = positions.iter().find(|&&p| p < 0) {
            return Err(Error::validation(format!(
                "position {p} is negative: row positions start at 0"
            )));
        }
        Self::from_positions(positions.iter().map(|&p| p as u64))
    }

    fn map_for(&mut self, key: u32) -> &mut RoaringBitmap {
        let idx = match self.maps.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(i) => i,
            Err(i) => {
                self.maps.insert(i, (key, RoaringBitmap::new()));
                i
            }
        };
        &mut self.maps[idx].1
    }

    /// Adds positions. Runs of ascending positions under one key are appended in bulk.
    pub fn extend<I: IntoIterator<Item = u64>>(&mut self, positions: I) -> Result<()> {
        let mut iter = positions.into_iter().peekable();
        let mut run: Vec<u32> = Vec::new();
        while let Some(first) = iter.next() {
            check_position(first)?;
            let key = (first >> 32) as u32;
            run.clear();
            run.push(first as u32);
            let mut sorted = true;
            while let Some(&next) = iter.peek() {
                if (next >> 32) as u32 != key {
                    break;
                }
                let low = next as u32;
                sorted &= run.last().is_some_and(|&last| low > last);
                run.push(low);
                iter.next();
            }
            let map = self.map_for(key);
            if sorted && map.is_empty() && dense(&run) {
                *map = from_sorted_dense(&run);
            } else if sorted && map.max().is_none_or(|m| m < run[0]) {
                // Strictly ascending and above everything present: append without searching.
                let appended = map.append(run.iter().copied());
                debug_assert!(appended.is_ok());
            } else {
                map.extend(run.iter().copied());
            }
        }
        Ok(())
    }

    /// Adds one position.
    pub fn insert(&mut self, pos: u64) -> Result<bool> {
        check_position(pos)?;
        Ok(self.map_for((pos >> 32) as u32).insert(pos as u32))
    }

    /// Whether `pos` is in the set.
    pub fn contains(&self, pos: u64) -> bool {
        let key = (pos >> 32) as u32;
        match self.maps.binary_search_by_key(&key, |(k, _)| *k) {
            Ok(i) => self.maps[i].1.contains(pos as u32),
            Err(_) => false,
        }
    }

    /// The number of positions in the set.
    pub fn cardinality(&self) -> u64 {
        self.maps.iter().map(|(_, m)| m.len()).sum()
    }

    /// Whether the set is empty.
    pub fn is_empty(&self) -> bool {
        self.maps.is_empty()
    }

    /// The largest position, if any.
    pub fn max(&self) -> Option<u64> {
        let (k, m) = self.maps.last()?;
        m.max().map(|low| ((*k as u64) << 32) | low as u64)
    }

    /// Adds every position of `other` (merging an existing DV with new deletes).
    pub fn union_with(&mut self, other: &PositionBitmap) {
        for (key, map) in &other.maps {
            *self.map_for(*key) |= map;
        }
    }

    /// The positions in ascending order.
    pub fn iter(&self) -> impl Iterator<Item = u64> + '_ {
        self.maps
            .iter()
            .flat_map(|(k, m)| m.iter().map(move |low| ((*k as u64) << 32) | low as u64))
    }

    /// The positions in ascending order, as `i64` (positions never exceed `i64::MAX`).
    pub fn to_i64_vec(&self) -> Vec<i64> {
        let mut out = Vec::with_capacity(self.cardinality() as usize);
        out.extend(self.iter().map(|p| p as i64));
        out
    }

    /// The (key, 32-bit bitmap) pairs, ascending by key.
    pub fn bitmaps(&self) -> &[(u32, RoaringBitmap)] {
        &self.maps
    }

    /// Calls `f(pos - start)` for every position in `[start, end)`, ascending.
    pub fn for_each_in_range(&self, start: u64, end: u64, mut f: impl FnMut(u64)) {
        if start >= end {
            return;
        }
        let (first_key, last_key) = ((start >> 32) as u32, ((end - 1) >> 32) as u32);
        let from = self.maps.partition_point(|(k, _)| *k < first_key);
        for (key, map) in &self.maps[from..] {
            if *key > last_key {
                break;
            }
            let base = (*key as u64) << 32;
            let lo = if *key == first_key { start as u32 } else { 0 };
            let hi = if *key == last_key {
                (end - 1) as u32
            } else {
                u32::MAX
            };
            let mut it = map.iter();
            it.advance_to(lo);
            // In blocks: `next_many` reads bitmap containers a word at a time.
            let mut buf = [0u32; 1024];
            'blocks: loop {
                let got = it.next_many(&mut buf);
                if got.is_empty() {
                    break;
                }
                for &low in got.iter() {
                    if low > hi {
                        break 'blocks;
                    }
                    f(base + low as u64 - start);
                }
            }
        }
    }

    /// The number of bytes [`Self::serialize_into`] writes.
    pub fn serialized_size(&self) -> usize {
        8 + self.gaps_written() * (4 + EMPTY_BITMAP_BYTES)
            + self
                .optimized()
                .iter()
                .map(|(_, m)| 4 + m.serialized_size())
                .sum::<usize>()
    }

    /// The keys below the largest that hold no positions, when [`Self::serialize_into`]
    /// writes them (as empty bitmaps, like Java); 0 when it leaves them out.
    fn gaps_written(&self) -> usize {
        let Some((last, _)) = self.maps.last() else {
            return 0;
        };
        let gaps = u64::from(*last) + 1 - self.maps.len() as u64;
        if gaps <= MAX_FILLED_GAPS {
            gaps as usize
        } else {
            0
        }
    }

    fn optimized(&self) -> Vec<(u32, RoaringBitmap)> {
        self.maps
            .iter()
            .map(|(k, m)| {
                let mut m = m.clone();
                m.optimize();
                (*k, m)
            })
            .collect()
    }

    /// Writes the portable 64-bit format byte for byte as the Java reference does: each 32-bit
    /// bitmap run-optimised first, and every key from 0 to the largest written, those without
    /// positions as empty bitmaps. A set leaving more than [`MAX_FILLED_GAPS`] keys empty
    /// (positions beyond 2^48, which Java would hold as that many empty bitmaps) is written
    /// without them, which the format allows.
    pub fn serialize_into(&self, out: &mut Vec<u8>) {
        let maps = self.optimized();
        let fill = self.gaps_written() > 0;
        let count = maps.len() + self.gaps_written();
        out.extend_from_slice(&(count as u64).to_le_bytes());
        let empty = RoaringBitmap::new();
        let mut next = 0u32;
        for (key, map) in &maps {
            while fill && next < *key {
                out.extend_from_slice(&next.to_le_bytes());
                empty
                    .serialize_into(&mut *out)
                    .expect("writing to a Vec cannot fail");
                next += 1;
            }
            out.extend_from_slice(&key.to_le_bytes());
            map.serialize_into(&mut *out)
                .expect("writing to a Vec cannot fail");
            next = key.saturating_add(1);
        }
    }

    /// The portable 64-bit serialisation as a new buffer.
    pub fn serialize(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.serialize_into(&mut out);
        out
    }

    /// Reads the portable 64-bit format; `bytes` must hold exactly one serialised set. Keys must
    /// be strictly ascending and at most [`MAX_KEY`]; empty 32-bit bitmaps are accepted.
    pub fn deserialize(bytes: &[u8]) -> Result<Self> {
        if bytes.len() < 8 {
            return Err(Error::corrupt(format!(
                "roaring bitmap truncated: {} bytes, the bitmap count needs 8",
                bytes.len()
            )));
        }
        let count = u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes"));
        if count > u32::MAX as u64 {
            return Err(Error::corrupt(format!(
                "invalid roaring bitmap count {count}: must be in [0, {}]",
                u32::MAX
            )));
        }
        // Every bitmap needs at least a key and an 8-byte header.
        if count > (bytes.len() as u64 - 8) / 12 {
            return Err(Error::corrupt(format!(
                "roaring bitmap count {count} does not fit in {} bytes",
                bytes.len()
            )));
        }
        let mut rest = &bytes[8..];
        let mut maps = Vec::with_capacity(count as usize);
        let mut last_key: Option<u32> = None;
        for i in 0..count {
            if rest.len() < 4 {
                return Err(Error::corrupt(format!(
                    "roaring bitmap truncated before the key of bitmap {i}"
                )));
            }
            let key = u32::from_le_bytes(rest[..4].try_into().expect("4 bytes"));
            rest = &rest[4..];
            if key > MAX_KEY {
                return Err(Error::corrupt(format!(
                    "Invalid unsigned key: {key} (keys above {MAX_KEY} are not supported)"
                )));
            }
            if last_key.is_some_and(|l| key <= l) {
                return Err(Error::corrupt(format!(
                    "roaring keys must be strictly ascending: {key} follows {}",
                    last_key.unwrap_or_default()
                )));
            }
            last_key = Some(key);
            let mut map = RoaringBitmap::deserialize_from(&mut rest).map_err(|e| {
                Error::corrupt(format!("invalid 32-bit roaring bitmap for key {key}: {e}"))
            })?;
            // Run containers (which writers use for long runs of deleted rows) become array
            // or bitmap containers: the roaring crate's block iteration (`next_many`) yields
            // nothing for a run covering a whole 65,536-position container (its length wraps
            // around in 16 bits), and reads then kept every row of such a block.
            map.remove_run_compression();
            if !map.is_empty() {
                maps.push((key, map));
            }
        }
        if !rest.is_empty() {
            return Err(Error::corrupt(format!(
                "{} unexpected bytes after the last roaring bitmap",
                rest.len()
            )));
        }
        Ok(Self { maps })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_across_keys() {
        let pos = [0u64, 5, 1 << 32, (1 << 32) + 7, MAX_POSITION];
        let bm = PositionBitmap::from_positions(pos).unwrap();
        assert_eq!(bm.cardinality(), 5);
        let back = PositionBitmap::deserialize(&bm.serialize()).unwrap();
        assert_eq!(back.iter().collect::<Vec<_>>(), pos);
        assert!(PositionBitmap::from_positions([MAX_POSITION + 1]).is_err());
    }

    #[test]
    fn dense_sorted_runs_match_one_by_one_inserts() {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        for (every, start, n) in [
            (10u64, 0u64, 5000usize),
            (1, 65_530, 200_000),
            (30, (3 << 32) - 1000, 3000),
            (63, 7, 64),
            (2, 0, 63),
        ] {
            let mut positions = Vec::new();
            let mut p = start;
            while positions.len() < n {
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                p += 1 + state % (2 * every - 1);
                positions.push(p);
            }
            let bulk = PositionBitmap::from_positions(positions.iter().copied()).unwrap();
            let mut single = PositionBitmap::new();
            for &p in &positions {
                single.insert(p).unwrap();
            }
            assert_eq!(bulk, single, "every {every} from {start}");
            assert_eq!(bulk.cardinality(), n as u64);
            assert_eq!(bulk.serialize(), single.serialize());
        }
    }

    #[test]
    fn key_gaps_are_written_as_empty_bitmaps_like_java() {
        let empty = [0x3a, 0x30, 0, 0, 0, 0, 0, 0];
        let bm = PositionBitmap::from_positions([1, 5, 1 << 33]).unwrap();
        let bytes = bm.serialize();
        assert_eq!(bytes.len(), 66); // 54 without the empty key-1 bitmap
        assert_eq!(bm.serialized_size(), 66);
        assert_eq!(&bytes[..8], &3u64.to_le_bytes());
        let first = 12 + RoaringBitmap::from_iter([1u32, 5]).serialized_size();
        assert_eq!(&bytes[first..first + 4], &1u32.to_le_bytes());
        assert_eq!(&bytes[first + 4..first + 12], &empty);
        assert_eq!(PositionBitmap::deserialize(&bytes).unwrap(), bm);
        // beyond MAX_FILLED_GAPS empty keys, the gaps are left out (as the format allows)
        let far = PositionBitmap::from_positions([3, MAX_POSITION]).unwrap();
        let bytes = far.serialize();
        assert_eq!(&bytes[..8], &2u64.to_le_bytes());
        assert_eq!(bytes.len(), far.serialized_size());
        assert_eq!(PositionBitmap::deserialize(&bytes).unwrap(), far);
        let edge = PositionBitmap::from_positions([MAX_FILLED_GAPS << 32]).unwrap();
        assert_eq!(edge.serialize().len(), edge.serialized_size());
        assert_eq!(&edge.serialize()[..8], &(MAX_FILLED_GAPS + 1).to_le_bytes());
    }

    #[test]
    fn unsorted_and_duplicate_input() {
        let bm = PositionBitmap::from_positions([9, 3, 3, 1 << 33, 2, 9]).unwrap();
        assert_eq!(bm.iter().collect::<Vec<_>>(), [2, 3, 9, 1 << 33]);
    }

    #[test]
    fn rejects_key_above_supported_range() {
        let mut b = 1u64.to_le_bytes().to_vec();
        b.extend_from_slice(&(MAX_KEY + 1).to_le_bytes());
        b.extend_from_slice(&[0x3a, 0x30, 0, 0, 0, 0, 0, 0]);
        let e = PositionBitmap::deserialize(&b).unwrap_err();
        assert!(matches!(e, Error::CorruptFile(ref m) if m.contains("Invalid unsigned key")));
    }

    #[test]
    fn rejects_unordered_keys_and_trailing_bytes() {
        let empty = [0x3a, 0x30, 0, 0, 0, 0, 0, 0];
        let mut b = 2u64.to_le_bytes().to_vec();
        for key in [3u32, 3] {
            b.extend_from_slice(&key.to_le_bytes());
            b.extend_from_slice(&empty);
        }
        assert!(PositionBitmap::deserialize(&b).is_err());
        let mut ok = 0u64.to_le_bytes().to_vec();
        assert!(PositionBitmap::deserialize(&ok).unwrap().is_empty());
        ok.push(0);
        assert!(PositionBitmap::deserialize(&ok).is_err());
    }

    #[test]
    fn range_iteration() {
        let bm = PositionBitmap::from_positions([1, 10, (1 << 32) + 1, (2 << 32) + 3]).unwrap();
        let mut seen = vec![];
        bm.for_each_in_range(5, (2 << 32) + 3, |p| seen.push(p + 5));
        assert_eq!(seen, [10, (1 << 32) + 1]);
    }

    #[test]
    fn union() {
        let mut a = PositionBitmap::from_positions([1, 1 << 32]).unwrap();
        a.union_with(&PositionBitmap::from_positions([2, 3 << 32]).unwrap());
        assert_eq!(a.iter().collect::<Vec<_>>(), [1, 2, 1 << 32, 3 << 32]);
    }

    /// Every position of a set, by `for_each_in_range`.
    fn ranged(bm: &PositionBitmap, start: u64, end: u64) -> Vec<u64> {
        let mut out = Vec::new();
        bm.for_each_in_range(start, end, |p| out.push(p + start));
        out
    }

    #[test]
    fn full_and_run_containers_are_walked_after_a_round_trip() {
        for (lo, hi) in [
            (0u64, 65_536u64),
            (65_536, 131_072),
            (10, 200_000),
            (0, 65_535),
        ] {
            let bm = PositionBitmap::from_positions(lo..hi).unwrap();
            let back = PositionBitmap::deserialize(&bm.serialize()).unwrap();
            let want: Vec<u64> = (lo..hi).collect();
            // (compared by count and ends first: a failure prints no 65,536-element vectors)
            let got = ranged(&back, 0, 300_000);
            assert_eq!(
                (got.len(), got.first(), got.last()),
                (want.len(), want.first(), want.last())
            );
            assert_eq!(ranged(&bm, 0, 300_000), want, "{lo}..{hi}");
            assert_eq!(got, want, "{lo}..{hi} deserialized");
            let inside: Vec<u64> = want
                .iter()
                .copied()
                .filter(|p| (5..70_000).contains(p))
                .collect();
            assert_eq!(ranged(&back, 5, 70_000), inside, "{lo}..{hi} from 5");
        }
    }
}
