//! One error type for the whole runtime. Every variant carries enough context for a
//! user (CLI or web UI) to act on it: the field that is unsupported, the chunk that is
//! bad, the file that is truncated. Nothing here panics; callers map these to exit codes.

use std::fmt;

#[derive(Debug, thiserror::Error)]
pub enum SlmError {
    /// Reading or writing a file failed.
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: std::io::Error,
    },
    /// The model uses something the runtime does not implement faithfully.
    /// `field` names the config key / GGUF key / tensor, `value` what it held.
    #[error("unsupported model: {field} = {value} ({why})")]
    Unsupported {
        field: String,
        value: String,
        why: String,
    },
    /// Input bytes do not follow their format (bad magic, truncated, absurd sizes, bad JSON).
    #[error("malformed {what}: {detail}")]
    Malformed { what: &'static str, detail: String },
    /// A checksum did not match. `chunk` is the first bad chunk index when known.
    #[error("checksum mismatch: {detail}")]
    Checksum { detail: String, chunk: Option<u64> },
    /// The tokenizer could not be built or failed to encode/decode.
    #[error("tokenizer: {0}")]
    Tokenizer(String),
    /// The chat template failed to parse or render (with line information when known).
    #[error("chat template: {0}")]
    Template(String),
    /// A caller-supplied value is invalid (bad messages JSON, prompt over the context, ...).
    #[error("invalid input: {0}")]
    Invalid(String),
}

pub type Result<T> = std::result::Result<T, SlmError>;

impl SlmError {
    /// The error's text without its kind's prefix where it has only a message
    /// (`Invalid`), for an error that wraps it in a kind of its own.
    pub fn message(&self) -> String {
        match self {
            SlmError::Invalid(m) => m.clone(),
            e => e.to_string(),
        }
    }

    pub fn malformed(what: &'static str, detail: impl fmt::Display) -> Self {
        SlmError::Malformed {
            what,
            detail: detail.to_string(),
        }
    }
    pub fn unsupported(
        field: impl Into<String>,
        value: impl fmt::Display,
        why: impl Into<String>,
    ) -> Self {
        SlmError::Unsupported {
            field: field.into(),
            value: value.to_string(),
            why: why.into(),
        }
    }
    pub fn io(path: impl fmt::Display, source: std::io::Error) -> Self {
        SlmError::Io {
            path: path.to_string(),
            source,
        }
    }
    /// A short machine-readable kind, used by `--json` error output and the web UI.
    pub fn kind(&self) -> &'static str {
        match self {
            SlmError::Io { .. } => "io",
            SlmError::Unsupported { .. } => "unsupported",
            SlmError::Malformed { .. } => "malformed",
            SlmError::Checksum { .. } => "checksum",
            SlmError::Tokenizer(_) => "tokenizer",
            SlmError::Template(_) => "template",
            SlmError::Invalid(_) => "invalid",
        }
    }
}
