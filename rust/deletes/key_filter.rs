//! A one-bit-per-slot filter in front of a hash set of keys: most values that are not keys are
//! ruled out by one bit of a table small enough to stay in cache, and only the rest are looked
//! up in the set.
//!
//! A hash-set lookup costs about 10 ns for a value that misses a set of 100,000 keys (a cache
//! miss into the table). An upsert of 1% of a table, or equality deletes of a tenth of it,
//! probe mostly values that miss. The filter has 16 slots per key (at most 2^24 slots, 2 MiB),
//! so about one miss in 16 still reaches the set.
//!
//! A value's slot is the top bits of its folded value times an odd constant. For one integer
//! column, with AVX2 (checked at run time), four values at a time: the 64-bit product is put
//! together from 32-bit multiplies and the slots' words gathered, as in
//! [`super::dense_probe`]; otherwise one value at a time.

/// The multiplier of the slot hash (2^64 over the golden ratio, odd).
const MIX: u64 = 0x9E37_79B9_7F4A_7C15;
/// Slots per key, and the most slots a filter has.
const SLOTS_PER_KEY: usize = 16;
const MAX_SLOTS: usize = 1 << 24;

/// A value folded so that its high bits reach the low ones before the multiply.
#[inline]
pub fn fold(v: i64) -> u64 {
    let x = v as u64;
    x ^ (x >> 29)
}

/// The folded key of several values (and their null bits).
#[inline]
pub fn fold_all(values: &[i64], nulls: u8) -> u64 {
    values.iter().fold(u64::from(nulls), |h, &v| {
        (h ^ fold(v)).wrapping_mul(MIX).rotate_left(31)
    })
}

#[derive(Debug, Clone)]
pub struct KeyFilter {
    bits: Vec<u64>,
    shift: u32,
}

impl KeyFilter {
    /// The filter of `count` keys given folded.
    pub fn new(count: usize, folded: impl Iterator<Item = u64>) -> Self {
        let slots = count
            .saturating_mul(SLOTS_PER_KEY)
            .next_power_of_two()
            .clamp(64, MAX_SLOTS);
        let mut filter = KeyFilter {
            bits: vec![0u64; slots / 64],
            shift: 64 - slots.trailing_zeros(),
        };
        for f in folded {
            let s = filter.slot(f);
            filter.bits[(s >> 6) as usize] |= 1 << (s & 63);
        }
        filter
    }

    #[inline]
    fn slot(&self, folded: u64) -> u64 {
        folded.wrapping_mul(MIX) >> self.shift
    }

    /// False when no key folds to `folded`'s slot (then it is not a key).
    #[inline]
    pub fn may_hold(&self, folded: u64) -> bool {
        let s = self.slot(folded);
        (self.bits[(s >> 6) as usize] >> (s & 63)) & 1 == 1
    }

    /// Per 64 of `values`, a word whose bit `j` is set when value `j` may be a key.
    pub fn candidates(&self, values: &[i64]) -> Vec<u64> {
        let mut words = vec![0u64; values.len().div_ceil(64)];
        #[cfg(target_arch = "x86_64")]
        {
            if std::is_x86_feature_detected!("avx2") {
                // SAFETY: AVX2 is present.
                unsafe { x86::candidate_words(self, values, &mut words) };
                return words;
            }
        }
        self.scalar_words(values, &mut words);
        words
    }

    fn scalar_words(&self, values: &[i64], words: &mut [u64]) {
        for (chunk, out) in values.chunks(64).zip(words.iter_mut()) {
            let mut w = 0u64;
            for (j, &v) in chunk.iter().enumerate() {
                w |= (self.may_hold(fold(v)) as u64) << j;
            }
            *out = w;
        }
    }
}

/// `hits` words for `values` from their `candidates` words: each candidate is looked up by
/// `holds`.
pub fn confirm(values: &[i64], candidates: &mut [u64], holds: impl Fn(i64) -> bool) {
    for (k, word) in candidates.iter_mut().enumerate() {
        let mut left = *word;
        while left != 0 {
            let j = left.trailing_zeros() as usize;
            left &= left - 1;
            if !holds(values[64 * k + j]) {
                *word &= !(1 << j);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m256i, _mm256_add_epi64, _mm256_and_si256, _mm256_castsi256_pd, _mm256_i64gather_epi64,
        _mm256_loadu_si256, _mm256_movemask_pd, _mm256_mul_epu32, _mm256_set1_epi64x,
        _mm256_slli_epi64, _mm256_sllv_epi64, _mm256_srl_epi64, _mm256_srli_epi64,
        _mm256_sub_epi64, _mm256_xor_si256, _mm_cvtsi64_si128,
    };

    use super::{KeyFilter, MIX};

    /// [`KeyFilter::scalar_words`] four values at a time (whole chunks of 64; the last
    /// partial chunk by the scalar loop).
    ///
    /// # Safety
    /// The CPU must have AVX2.
    #[target_feature(enable = "avx2")]
    pub unsafe fn candidate_words(filter: &KeyFilter, values: &[i64], words: &mut [u64]) {
        let whole = values.len() / 64;
        let lo = _mm256_set1_epi64x((MIX & 0xFFFF_FFFF) as i64);
        let hi = _mm256_set1_epi64x((MIX >> 32) as i64);
        let shift = _mm_cvtsi64_si128(i64::from(filter.shift));
        let low6 = _mm256_set1_epi64x(63);
        for (k, out) in words.iter_mut().enumerate().take(whole) {
            let mut w = 0u64;
            for g in 0..16 {
                // SAFETY: 64 * k + 4 * g + 3 < 64 * whole <= values.len(); every slot is below
                // 64 * bits.len() (its top bits only), so every gathered word is in bounds.
                unsafe {
                    let at = values.as_ptr().add(64 * k + 4 * g) as *const __m256i;
                    let x = _mm256_loadu_si256(at);
                    let f = _mm256_xor_si256(x, _mm256_srli_epi64::<29>(x));
                    // f * MIX mod 2^64 from 32-bit halves
                    let low = _mm256_mul_epu32(f, lo);
                    let cross = _mm256_add_epi64(
                        _mm256_mul_epu32(f, hi),
                        _mm256_mul_epu32(_mm256_srli_epi64::<32>(f), lo),
                    );
                    let product = _mm256_add_epi64(low, _mm256_slli_epi64::<32>(cross));
                    let slot = _mm256_srl_epi64(product, shift);
                    let got = _mm256_i64gather_epi64::<8>(
                        filter.bits.as_ptr() as *const i64,
                        _mm256_srli_epi64::<6>(slot),
                    );
                    let up = _mm256_sub_epi64(low6, _mm256_and_si256(slot, low6));
                    let top = _mm256_sllv_epi64(got, up);
                    w |= (_mm256_movemask_pd(_mm256_castsi256_pd(top)) as u64) << (4 * g);
                }
            }
            *out = w;
        }
        filter.scalar_words(&values[64 * whole..], &mut words[whole..]);
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;
    use crate::deletes::compact::tests::Rng;

    #[test]
    fn candidates_keep_every_key_and_agree_with_the_scalar_kernel() {
        let mut rng = Rng(3);
        for count in [0usize, 1, 5, 1000, 20_000] {
            let mut keys: Vec<i64> = (0..count)
                .map(|_| (rng.next() >> 11) as i64 - (1 << 52))
                .collect();
            keys.extend([i64::MIN, i64::MAX, -1, 0]);
            let filter = KeyFilter::new(keys.len(), keys.iter().map(|&k| fold(k)));
            let set: HashSet<i64> = keys.iter().copied().collect();
            let mut values: Vec<i64> = (0..5000).map(|i| i * 13 - 30_000).collect();
            values.extend(keys.iter().take(3000));
            values.extend((0..2000).map(|_| rng.next() as i64));
            for len in [0, 3, 64, 130, values.len()] {
                let v = &values[..len];
                let mut got = filter.candidates(v);
                let mut scalar = vec![0u64; len.div_ceil(64)];
                filter.scalar_words(v, &mut scalar);
                assert_eq!(got, scalar, "{count} keys, {len} values");
                // a filter never rules out a key; confirmed candidates are exactly the keys
                for (i, x) in v.iter().enumerate() {
                    if set.contains(x) {
                        assert!(got[i / 64] >> (i % 64) & 1 == 1, "key {x} ruled out");
                    }
                }
                confirm(v, &mut got, |x| set.contains(&x));
                for (i, x) in v.iter().enumerate() {
                    assert_eq!(got[i / 64] >> (i % 64) & 1 == 1, set.contains(x), "{x}");
                }
            }
            if count == 20_000 {
                // about one value in 16 that is not a key gets through
                let misses = values[..5000].iter().filter(|&&x| filter.may_hold(fold(x)));
                assert!(misses.count() < 5000 / 6);
            }
        }
    }

    #[test]
    fn folded_keys_of_several_values_differ_with_nulls() {
        assert_ne!(fold_all(&[1, 2], 0), fold_all(&[2, 1], 0));
        assert_ne!(fold_all(&[0, 2], 0), fold_all(&[0, 2], 1));
    }
}
