//! The error type shared by every module of the core. The bindings map each kind to a class of
//! the Python hierarchy rooted at `icefloe.exceptions.IcebergError`.

use std::fmt;

/// What went wrong, by kind. Messages name the offending value or file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// Input that breaks a rule of the spec or of the API (bad argument, bad value).
    Validation(String),
    /// A file whose bytes cannot be what they claim to be (truncated, bad magic, bad CRC).
    CorruptFile(String),
    /// Something valid that this version does not support.
    Unsupported(String),
    /// A broken invariant inside icefloe: a bug.
    Internal(String),
}

impl Error {
    pub fn validation(msg: impl Into<String>) -> Self {
        Error::Validation(msg.into())
    }
    pub fn corrupt(msg: impl Into<String>) -> Self {
        Error::CorruptFile(msg.into())
    }
    pub fn unsupported(msg: impl Into<String>) -> Self {
        Error::Unsupported(msg.into())
    }
    pub fn internal(msg: impl Into<String>) -> Self {
        Error::Internal(msg.into())
    }

    /// The message without the kind.
    pub fn message(&self) -> &str {
        match self {
            Error::Validation(m)
            | Error::CorruptFile(m)
            | Error::Unsupported(m)
            | Error::Internal(m) => m,
        }
    }

    /// Prefixes the message with context such as a file path.
    pub fn context(self, ctx: impl fmt::Display) -> Self {
        let wrap = |m: String| format!("{ctx}: {m}");
        match self {
            Error::Validation(m) => Error::Validation(wrap(m)),
            Error::CorruptFile(m) => Error::CorruptFile(wrap(m)),
            Error::Unsupported(m) => Error::Unsupported(wrap(m)),
            Error::Internal(m) => Error::Internal(wrap(m)),
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.message())
    }
}

impl std::error::Error for Error {}

impl From<arrow_schema::ArrowError> for Error {
    fn from(e: arrow_schema::ArrowError) -> Self {
        Error::Validation(format!("arrow: {e}"))
    }
}

pub type Result<T> = std::result::Result<T, Error>;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn context_keeps_kind() {
        let e = Error::corrupt("bad magic").context("s3://b/m.avro");
        assert_eq!(e, Error::CorruptFile("s3://b/m.avro: bad magic".into()));
        assert_eq!(e.to_string(), "s3://b/m.avro: bad magic");
    }
}
