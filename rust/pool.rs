//! The rayon thread pools parallel work runs on, safe across `fork`.
//!
//! rayon's global pool is created once per process. A child made by `fork` (Python's
//! `multiprocessing` on Linux, process-pool executors, job runners) inherits the pool's
//! bookkeeping but none of its threads, so the first parallel call in the child waits forever.
//! Every parallel section therefore runs through [`install`]: pools are built lazily, one per
//! thread count, and built again when the process id has changed. The parent's pools are left
//! alone in the child (leaked: their threads do not exist there, so there is nothing to stop).
//!
//! The table of pools is an immutable snapshot behind an atomic pointer, replaced whole when a
//! pool is added: looking a pool up takes no lock, so a fork while another thread was adding
//! one cannot leave the child waiting on a lock that nobody will release.

use std::ptr;
use std::sync::atomic::{AtomicPtr, Ordering};

use rayon::ThreadPool;

use crate::{Error, Result};

/// Pools kept per process (distinct thread counts); more get a pool for the call only.
const MAX_POOLS: usize = 8;

struct Snapshot {
    pid: u32,
    pools: Vec<(usize, &'static ThreadPool)>,
}

/// The current snapshot; replaced snapshots are leaked (a few small vectors per process).
static CURRENT: AtomicPtr<Snapshot> = AtomicPtr::new(ptr::null_mut());

fn build(threads: usize) -> Result<ThreadPool> {
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .thread_name(|i| format!("icefloe-rayon-{i}"))
        .build()
        .map_err(|e| Error::internal(format!("cannot start a thread pool: {e}")))
}

/// This process's pool of `threads` threads (0: rayon's default count), or `None` when
/// [`MAX_POOLS`] pools exist already.
fn pool(threads: usize) -> Result<Option<&'static ThreadPool>> {
    let pid = std::process::id();
    let mut fresh: Option<Box<ThreadPool>> = None;
    loop {
        let cur = CURRENT.load(Ordering::Acquire);
        // SAFETY: snapshots are published fully built and never freed.
        let snap = unsafe { cur.as_ref() }.filter(|s| s.pid == pid);
        let known = snap.map_or(&[][..], |s| &s.pools[..]);
        if let Some((_, p)) = known.iter().find(|(t, _)| *t == threads) {
            return Ok(Some(p));
        }
        if known.len() >= MAX_POOLS {
            return Ok(None);
        }
        let candidate = match fresh.take() {
            Some(p) => p,
            None => Box::new(build(threads)?),
        };
        let leaked: &'static ThreadPool = Box::leak(candidate);
        let mut pools = known.to_vec();
        pools.push((threads, leaked));
        let next = Box::into_raw(Box::new(Snapshot { pid, pools }));
        match CURRENT.compare_exchange(cur, next, Ordering::AcqRel, Ordering::Acquire) {
            Ok(_) => return Ok(Some(leaked)),
            Err(_) => {
                // Another thread published first: take our snapshot back (never shared) and
                // keep the pool for the next attempt, which may find theirs instead.
                // SAFETY: `next` was never published; `leaked` only appears in it.
                unsafe {
                    drop(Box::from_raw(next));
                    fresh = Some(Box::from_raw(
                        leaked as *const ThreadPool as *mut ThreadPool,
                    ));
                }
            }
        }
    }
}

/// This process's pool of `threads` threads (`None` or 0: rayon's default count) for work
/// that runs on its own (`ThreadPool::spawn`); `None` when no more pools are kept, and the
/// caller then does the work itself.
pub fn shared(threads: Option<usize>) -> Result<Option<&'static ThreadPool>> {
    pool(threads.unwrap_or(0))
}

/// Runs `work` on this process's pool of `threads` threads (`None` or 0: rayon's default
/// count). Work started from inside a pool with `threads` unset stays on that pool.
pub fn install<T: Send>(
    threads: Option<usize>,
    work: impl FnOnce() -> Result<T> + Send,
) -> Result<T> {
    let t = threads.unwrap_or(0);
    if t == 0 && rayon::current_thread_index().is_some() {
        return work();
    }
    match pool(t)? {
        Some(p) => p.install(work),
        None => build(t)?.install(work),
    }
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

    use super::*;

    #[test]
    fn pools_are_reused_per_thread_count() {
        let a = pool(3).unwrap().unwrap() as *const ThreadPool;
        let b = pool(3).unwrap().unwrap() as *const ThreadPool;
        assert_eq!(a, b);
        let n = install(Some(3), || Ok(rayon::current_num_threads())).unwrap();
        assert_eq!(n, 3);
        let sum: u64 = install(None, || Ok((0..1000u64).into_par_iter().sum())).unwrap();
        assert_eq!(sum, 499_500);
        // nested: stays on the pool it runs in
        let inner = install(Some(3), || {
            install(None, || Ok(rayon::current_num_threads()))
        });
        assert_eq!(inner.unwrap(), 3);
    }

    #[test]
    fn errors_come_back() {
        let r: Result<()> = install(Some(2), || Err(Error::validation("boom")));
        assert!(r.unwrap_err().to_string().contains("boom"));
    }
}
