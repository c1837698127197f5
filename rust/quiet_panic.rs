//! Catching a panic of third-party code on bad input without its message reaching stderr.
//!
//! Some arrow-rs routines panic on malformed data (a shredded variant naming a field its
//! metadata lacks, a Parquet footer whose column chunk has a negative offset). Such a panic is
//! turned into an error (or sends the file to the general reader, which reports it); the
//! process-wide panic hook would still print it, so a thread running [`catch_quietly`] mutes
//! the hook. Panics on other threads and outside it print as usual.

use std::cell::Cell;
use std::panic::{catch_unwind, set_hook, take_hook, UnwindSafe};
use std::sync::Once;

thread_local! {
    static MUTED: Cell<u32> = const { Cell::new(0) };
}

static INSTALL: Once = Once::new();

/// Runs `f`, returning its panic payload as an error; the panic is not printed.
pub fn catch_quietly<R>(f: impl FnOnce() -> R + UnwindSafe) -> std::thread::Result<R> {
    INSTALL.call_once(|| {
        let previous = take_hook();
        set_hook(Box::new(move |info| {
            if MUTED.with(Cell::get) == 0 {
                previous(info);
            }
        }));
    });
    MUTED.with(|m| m.set(m.get() + 1));
    let out = catch_unwind(f);
    MUTED.with(|m| m.set(m.get() - 1));
    out
}

/// The message a panic payload carries, if it is a string.
pub fn panic_text(payload: &(dyn std::any::Any + Send)) -> Option<&str> {
    payload
        .downcast_ref::<String>()
        .map(String::as_str)
        .or_else(|| payload.downcast_ref::<&str>().copied())
}

#[cfg(test)]
mod tests {
    use std::panic::AssertUnwindSafe;

    use super::*;

    #[test]
    fn a_caught_panic_is_an_error_and_the_thread_recovers() {
        let err = catch_quietly(AssertUnwindSafe(|| -> u8 { panic!("bad input") })).unwrap_err();
        assert_eq!(panic_text(err.as_ref()), Some("bad input"));
        assert_eq!(catch_quietly(|| 7).unwrap(), 7);
        assert_eq!(MUTED.with(Cell::get), 0);
    }
}
