//! Many local files at once: creating new files with their bytes, and `fsync`ing files and
//! directories, on a few threads, in one call (one release of Python's GIL instead of a few
//! per file, which a thread doing per-file system calls in Python pays in hand-overs with the
//! threads doing the rest of a write).

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::Path;

/// Where creating a file failed: before it existed (nothing of ours to remove) or after
/// (a partial file of ours is left).
#[derive(Debug)]
pub enum WriteFailure {
    Create(io::Error),
    Write(io::Error),
}

/// Runs `job` on every index of `0..n`, on up to `threads` threads (each taking every
/// `threads`-th index), and returns the results in index order. Threads of their own, not the
/// shared rayon pool: these block on the disk, and the pool's threads are for decoding.
fn spread<T: Send>(n: usize, threads: usize, job: impl Fn(usize) -> T + Sync) -> Vec<T> {
    let width = threads.clamp(1, n.max(1));
    if width == 1 {
        return (0..n).map(&job).collect();
    }
    let mut out: Vec<Option<T>> = (0..n).map(|_| None).collect();
    let parts: Vec<Vec<(usize, T)>> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..width)
            .map(|w| {
                let job = &job;
                s.spawn(move || (w..n).step_by(width).map(|i| (i, job(i))).collect())
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    });
    for (i, v) in parts.into_iter().flatten() {
        out[i] = Some(v);
    }
    out.into_iter()
        .map(|v| v.expect("every index ran"))
        .collect()
}

fn write_new(path: &str, data: &[u8]) -> Result<(), WriteFailure> {
    let target = Path::new(path);
    if let Some(parent) = target.parent().filter(|p| !p.as_os_str().is_empty()) {
        fs::create_dir_all(parent).map_err(WriteFailure::Create)?;
    }
    let mut options = OpenOptions::new();
    options.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o644);
    let mut file = options.open(target).map_err(WriteFailure::Create)?;
    file.write_all(data).map_err(WriteFailure::Write)
}

/// Creates each file of `items` (path, bytes) with its bytes, its directories made; a file
/// that exists already is an error (`create_new`, as `O_EXCL`). No `fsync` (see
/// [`sync_paths`]). One result per item, in order.
pub fn write_new_files(items: &[(&str, &[u8])], threads: usize) -> Vec<Result<(), WriteFailure>> {
    spread(items.len(), threads, |i| write_new(items[i].0, items[i].1))
}

/// `fsync` errors that mean the file system cannot sync this kind of file, or has nothing to
/// sync (read-only): nothing more can be done for it.
fn unsyncable(e: &io::Error) -> bool {
    // EINVAL and EROFS agree on every Unix; ENOTSUP and EOPNOTSUPP are 95 on Linux (one
    // value), 45 and 102 on the BSDs and macOS
    const CODES: &[i32] = if cfg!(target_os = "linux") {
        &[22, 30, 95]
    } else {
        &[22, 30, 45, 102]
    };
    cfg!(unix) && e.raw_os_error().is_some_and(|c| CODES.contains(&c))
}

fn sync_path(path: &str) -> io::Result<()> {
    let file = match File::open(path) {
        Ok(f) => f,
        // nothing to make durable (checking that files exist is not this module's job)
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(()),
        // a directory above the table this user may pass through but not read
        Err(e) if e.kind() == io::ErrorKind::PermissionDenied && Path::new(path).is_dir() => {
            return Ok(())
        }
        Err(e) => return Err(e),
    };
    match file.sync_all() {
        Err(e) if unsyncable(&e) => Ok(()),
        other => other,
    }
}

/// `fsync`s each of `paths` (files or directories, opened read-only: POSIX only), on up to
/// `threads` threads. Missing paths are skipped; the first failure (by index) is returned
/// with its index.
pub fn sync_paths(paths: &[&str], threads: usize) -> Result<(), (usize, io::Error)> {
    let results = spread(paths.len(), threads, |i| sync_path(paths[i]));
    match results.into_iter().enumerate().find(|(_, r)| r.is_err()) {
        Some((i, Err(e))) => Err((i, e)),
        _ => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tmp(name: &str) -> std::path::PathBuf {
        let d =
            std::env::temp_dir().join(format!("icefloe-local-fs-{}-{name}", std::process::id()));
        let _ = fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn writes_new_files_in_new_directories_and_refuses_existing_ones() {
        let d = tmp("write");
        let paths: Vec<String> = (0..9)
            .map(|i| {
                d.join(format!("p={i}/f.bin"))
                    .to_string_lossy()
                    .into_owned()
            })
            .collect();
        let data: Vec<Vec<u8>> = (0..9).map(|i| vec![i as u8; i * 100]).collect();
        let items: Vec<(&str, &[u8])> = paths
            .iter()
            .zip(&data)
            .map(|(p, d)| (p.as_str(), d.as_slice()))
            .collect();
        assert!(write_new_files(&items, 3).iter().all(|r| r.is_ok()));
        for (p, d) in &items {
            assert_eq!(fs::read(p).unwrap(), *d);
        }
        let again = write_new_files(&items[..2], 2);
        assert!(again.iter().all(|r| matches!(r,
            Err(WriteFailure::Create(e)) if e.kind() == io::ErrorKind::AlreadyExists)));
        assert_eq!(fs::read(items[1].0).unwrap(), items[1].1, "left as it was");
        fs::remove_dir_all(&d).unwrap();
    }

    /// A fresh directory holding one small file: both paths.
    fn dir_with_file(name: &str) -> (std::path::PathBuf, std::path::PathBuf) {
        let d = tmp(name);
        fs::create_dir_all(&d).unwrap();
        let f = d.join("f");
        fs::write(&f, b"x").unwrap();
        (d, f)
    }

    #[test]
    fn syncs_files_and_directories_and_skips_missing_ones() {
        let (d, f) = dir_with_file("sync");
        let (fp, dp) = (
            f.to_string_lossy().into_owned(),
            d.to_string_lossy().into_owned(),
        );
        let gone = d.join("missing").to_string_lossy().into_owned();
        assert!(sync_paths(&[&fp, &dp, &gone], 2).is_ok());
        assert!(sync_paths(&[], 4).is_ok());
        fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn a_failure_names_its_index() {
        let (d, file) = dir_with_file("fail");
        // a path through a regular file: ENOTDIR, neither missing nor unsyncable
        let bad = file.join("under").to_string_lossy().into_owned();
        let ok = file.to_string_lossy().into_owned();
        match sync_paths(&[&ok, &bad, &ok], 2) {
            Err((1, e)) => assert_eq!(e.kind(), io::ErrorKind::NotADirectory),
            other => panic!("{other:?}"),
        }
        fs::remove_dir_all(&d).unwrap();
    }
}
