//! Word-at-a-time compaction kernels for [`super::compact`].
//!
//! - 4- and 8-byte values, with AVX2 where the CPU has it (checked at run time): each group of
//!   8 (or 4) values is permuted by a lookup table indexed by its mask bits so the kept values
//!   come first, stored whole, and the output advances by the number kept. That is a handful of
//!   instructions per 8 values instead of a store and an add per value.
//! - Bits (validity, booleans): packed a byte at a time through a 64 KiB table (`pext` is
//!   microcoded and slow on the AMD CPUs before Zen 3, so it is not used; the table is twice as
//!   fast as a loop over the cleared bits of the mask at 10% deletes).
//!
//! Every kernel writes up to a whole word of values (64) past the output position, as the
//! scalar kernel in [`super::compact`] does; the callers size buffers for it.

use arrow_buffer::bit_chunk_iterator::BitChunks;

/// `PEXT8[m << 8 | v]`: the bits of the byte `v` where the byte `m` is set, packed low.
static PEXT8: [u8; 65536] = pext8_table();
/// `POP8[m]`: the number of bits set in the byte `m`.
static POP8: [u8; 256] = pop8_table();

const fn pext8_table() -> [u8; 65536] {
    let mut t = [0u8; 65536];
    let mut m = 0;
    while m < 256 {
        let mut v = 0;
        while v < 256 {
            let (mut out, mut k, mut i) = (0u8, 0, 0);
            while i < 8 {
                if (m >> i) & 1 == 1 {
                    out |= (((v >> i) & 1) as u8) << k;
                    k += 1;
                }
                i += 1;
            }
            t[m << 8 | v] = out;
            v += 1;
        }
        m += 1;
    }
    t
}

const fn pop8_table() -> [u8; 256] {
    let mut t = [0u8; 256];
    let mut i = 0;
    while i < 256 {
        t[i] = (i as u32).count_ones() as u8;
        i += 1;
    }
    t
}

/// The bits of `v` where `m` is set, packed into the low bits, and how many there are.
#[inline]
pub fn extract_bits(v: u64, m: u64) -> (u64, u32) {
    if m == u64::MAX {
        return (v, 64);
    }
    let (mut out, mut used) = (0u64, 0u32);
    let mut i = 0;
    while i < 64 {
        let mb = ((m >> i) & 0xff) as usize;
        let vb = ((v >> i) & 0xff) as usize;
        out |= (PEXT8[mb << 8 | vb] as u64) << used;
        used += POP8[mb] as u32;
        i += 8;
    }
    (out, used)
}

/// Compacts the values of the whole 64-value words of `chunks` from `src` to `dst` with a SIMD
/// kernel when one exists for `T` on this CPU; returns how many values were written, or `None`
/// (nothing written) when there is no such kernel.
///
/// # Safety
/// `src` must be readable for `64 * chunks.chunk_len()` values and `dst` writable for the
/// number of set bits in those words plus 64, or `dst == src` (in place: each store lands on
/// values already read, and none past the last whole word).
#[inline]
pub unsafe fn compact_words<T: Copy>(
    src: *const T,
    chunks: &BitChunks<'_>,
    dst: *mut T,
) -> Option<usize> {
    #[cfg(target_arch = "x86_64")]
    {
        if std::is_x86_feature_detected!("avx2") && std::is_x86_feature_detected!("popcnt") {
            // SAFETY: AVX2 and POPCNT are present; the pointer contracts are the caller's.
            unsafe {
                match std::mem::size_of::<T>() {
                    4 => return Some(x86::compact_u32(src as *const u32, chunks, dst as *mut u32)),
                    8 => return Some(x86::compact_u64(src as *const u64, chunks, dst as *mut u64)),
                    _ => {}
                }
            }
        }
    }
    let _ = (src, chunks, dst);
    None
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use std::arch::x86_64::{
        __m256i, _mm256_loadu_si256, _mm256_permutevar8x32_epi32, _mm256_storeu_si256,
    };

    use arrow_buffer::bit_chunk_iterator::BitChunks;

    /// `LANES32[m]`: the 32-bit lanes to gather so that the lanes set in the byte `m` come
    /// first, in order.
    static LANES32: [[u32; 8]; 256] = lanes32();
    /// `LANES64[m]`: the same for four 64-bit values (two 32-bit lanes each) and a nibble `m`.
    static LANES64: [[u32; 8]; 16] = lanes64();

    const fn lanes32() -> [[u32; 8]; 256] {
        let mut t = [[0u32; 8]; 256];
        let mut m = 0;
        while m < 256 {
            let (mut i, mut j) = (0, 0);
            while i < 8 {
                if (m >> i) & 1 == 1 {
                    t[m][j] = i as u32;
                    j += 1;
                }
                i += 1;
            }
            m += 1;
        }
        t
    }

    const fn lanes64() -> [[u32; 8]; 16] {
        let mut t = [[0u32; 8]; 16];
        let mut m = 0;
        while m < 16 {
            let (mut i, mut j) = (0, 0);
            while i < 4 {
                if (m >> i) & 1 == 1 {
                    t[m][2 * j] = 2 * i as u32;
                    t[m][2 * j + 1] = 2 * i as u32 + 1;
                    j += 1;
                }
                i += 1;
            }
            m += 1;
        }
        t
    }

    /// Permutes the 8 lanes at `src` by `lanes` and stores all 8 at `dst`.
    #[inline]
    #[target_feature(enable = "avx2")]
    unsafe fn gather_store(src: *const u8, lanes: &[u32; 8], dst: *mut u8) {
        // SAFETY: AVX2 is enabled; the caller guarantees 32 readable and writable bytes.
        unsafe {
            let idx = _mm256_loadu_si256(lanes.as_ptr() as *const __m256i);
            let v = _mm256_loadu_si256(src as *const __m256i);
            _mm256_storeu_si256(dst as *mut __m256i, _mm256_permutevar8x32_epi32(v, idx));
        }
    }

    /// Compacts the whole words of `chunks` from `src` to `dst`, `G` values of `T` per 32-byte
    /// group, each group permuted by `lanes[its G mask bits]`.
    ///
    /// # Safety
    /// As for [`super::compact_words`], `G * size_of::<T>() == 32`, and the CPU must have AVX2
    /// and POPCNT.
    #[inline]
    #[target_feature(enable = "avx2,popcnt")]
    unsafe fn compact_groups<T, const G: usize>(
        src: *const T,
        chunks: &BitChunks<'_>,
        dst: *mut T,
        lanes: &[[u32; 8]],
    ) -> usize {
        let group_mask = (1u64 << G) - 1;
        let mut j = 0usize;
        for (c, word) in chunks.iter().enumerate() {
            // SAFETY: word c covers src[64c, 64c + 64); j counts the values kept so far, so
            // dst[j..j + 64] is writable; each group reads and writes 32 bytes.
            unsafe {
                let s = src.add(c * 64);
                if word == u64::MAX {
                    // `copy`: in place, the output trails the input and may overlap it
                    if !std::ptr::eq(dst.add(j), s) {
                        std::ptr::copy(s, dst.add(j), 64);
                    }
                    j += 64;
                    continue;
                }
                if word == 0 {
                    continue;
                }
                for g in 0..64 / G {
                    let m = ((word >> (G * g)) & group_mask) as usize;
                    gather_store(s.add(G * g) as _, &lanes[m], dst.add(j) as _);
                    j += m.count_ones() as usize;
                }
            }
        }
        j
    }

    /// # Safety
    /// As for [`super::compact_words`], and the CPU must have AVX2 and POPCNT.
    #[target_feature(enable = "avx2,popcnt")]
    pub unsafe fn compact_u32(src: *const u32, chunks: &BitChunks<'_>, dst: *mut u32) -> usize {
        // SAFETY: 8 u32 values per 32-byte group; the rest is the caller's.
        unsafe { compact_groups::<u32, 8>(src, chunks, dst, &LANES32) }
    }

    /// # Safety
    /// As for [`super::compact_words`], and the CPU must have AVX2 and POPCNT.
    #[target_feature(enable = "avx2,popcnt")]
    pub unsafe fn compact_u64(src: *const u64, chunks: &BitChunks<'_>, dst: *mut u64) -> usize {
        // SAFETY: 4 u64 values per 32-byte group; the rest is the caller's.
        unsafe { compact_groups::<u64, 4>(src, chunks, dst, &LANES64) }
    }
}

#[cfg(test)]
mod tests {
    use arrow_buffer::BooleanBuffer;

    use super::*;
    use crate::deletes::compact::tests::Rng;

    fn reference_bits(v: u64, m: u64) -> u64 {
        let (mut out, mut k) = (0u64, 0);
        for i in 0..64 {
            if m >> i & 1 == 1 {
                out |= (v >> i & 1) << k;
                k += 1;
            }
        }
        out
    }

    #[test]
    fn extract_bits_matches_bit_by_bit() {
        let mut rng = Rng(7);
        for _ in 0..5000 {
            let v = rng.next();
            let m = match rng.next() % 4 {
                0 => rng.next(),
                1 => rng.next() | rng.next() | rng.next(),
                2 => !(1u64 << (rng.next() % 64)),
                _ => rng.next() & rng.next(),
            };
            let want = (reference_bits(v, m), m.count_ones());
            assert_eq!(extract_bits(v, m), want, "v={v:x} m={m:x}");
        }
        assert_eq!(extract_bits(0xdead, u64::MAX), (0xdead, 64));
        assert_eq!(extract_bits(u64::MAX, 0), (0, 0));
    }

    fn check<T: Copy + PartialEq + std::fmt::Debug>(values: &[T], seed: u64) {
        let mut rng = Rng(seed);
        let words = values.len() / 64;
        for density in [0u64, 1, 50, 90, 99, 100] {
            let bits: Vec<bool> = (0..values.len())
                .map(|_| rng.next() % 100 < density)
                .collect();
            let mask = BooleanBuffer::from(bits.clone());
            let chunks = mask.bit_chunks();
            let want: Vec<T> = values[..words * 64]
                .iter()
                .zip(&bits)
                .filter(|(_, k)| **k)
                .map(|(v, _)| *v)
                .collect();
            let mut out: Vec<T> = Vec::with_capacity(want.len() + 64);
            // SAFETY: `out` has room for every kept value plus 64.
            let got = unsafe { compact_words(values.as_ptr(), &chunks, out.as_mut_ptr()) };
            let Some(n) = got else {
                return; // no SIMD kernel on this CPU: the scalar kernel is tested elsewhere
            };
            assert_eq!(n, want.len());
            // SAFETY: `n` values were written.
            unsafe { out.set_len(n) };
            assert_eq!(out, want, "density {density}");
        }
    }

    #[test]
    fn simd_kernels_match_a_plain_filter() {
        let mut rng = Rng(99);
        for n in [0usize, 64, 640, 6400 + 17] {
            let v32: Vec<u32> = (0..n).map(|_| rng.next() as u32).collect();
            let v64: Vec<u64> = (0..n).map(|_| rng.next()).collect();
            check(&v32, n as u64 + 1);
            check(&v64, n as u64 + 2);
        }
    }
}
