//! The template sandbox's limits beyond fuel (which counts loop steps only).
//!
//! Each is far above what real chat templates need and names itself when hit:
//! - the source size, and the tokens of one tag (filters, attributes, operators):
//!   minijinja's parser loops over a chain but its compiler recurses once per link, so
//!   10⁵ chained filters overflow the stack while compiling;
//! - the rendered output, written through a bounded writer that stops the render;
//! - `batch`, whose stock filter reserves `value.len() / count` and `count` slots
//!   before looking, so `batch(10**18)` aborts on the allocation;
//! - memory: a string built by `+`, `~`, `*`, `replace`, `join` or `indent` is at most
//!   100 000 000 bytes and a sequence built by `+` at most 10⁷ items (minijinja, as
//!   patched in vendor/README.md), so doubling a value in a loop ends in an error,
//!   not an allocation abort;
//! - wall time: a render stops after `MAX_RENDER_MS` (checked every 256 units of
//!   fuel through minijinja's interrupt hook), so heavy filters in a loop cannot run
//!   for minutes.

use minijinja::value::Value;
use minijinja::{Error, ErrorKind};

/// Bytes of template source: real chat templates are under 32 KiB.
pub const MAX_SOURCE: usize = 1 << 20;
/// Tokens one tag may hold (names, operators, brackets; string literals are free):
/// the 23 real templates of reference/goldens/templates have at most 32 in a tag (Qwen2.5),
/// and a chain this long compiles
/// within wasm's 1 MiB stack (tested).
pub const MAX_TAG_TOKENS: usize = 1024;
/// Bytes one render may output: a prompt must fit a context anyway (32 768 tokens are
/// about 128 KiB of text); tools and documents can make it larger.
pub const MAX_OUTPUT: usize = 16 << 20;
/// The longest string a render may build (minijinja's bound on `*`, and on `+`, `~`
/// and the growing filters as patched: vendor/README.md).
pub const MAX_VALUE: usize = 100_000_000;

/// Refuse a string of `len` bytes over `MAX_VALUE` before it is built.
pub fn check_value_len(len: usize) -> Result<(), Error> {
    if len > MAX_VALUE {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!("the string would be {len} bytes, over the sandbox's {MAX_VALUE} byte limit"),
        ));
    }
    Ok(())
}

/// Milliseconds one render may take: real chat templates render in under 10 ms, a
/// long conversation with tools in well under a second.
pub const MAX_RENDER_MS: f64 = 5_000.0;

thread_local! {
    /// When the render running on this thread must stop (`engine::now_ms` time).
    static DEADLINE: std::cell::Cell<Option<f64>> = const { std::cell::Cell::new(None) };
}

/// minijinja's interrupt check: the reason to stop, once this thread's render is past
/// its deadline.
fn over_time() -> Option<String> {
    let deadline = DEADLINE.with(|d| d.get())?;
    (crate::engine::now_ms() > deadline)
        .then(|| format!("the render ran over the sandbox's time limit of {MAX_RENDER_MS} ms"))
}

/// The wall-time limit of one render, from now until the guard is dropped.
pub struct RenderClock(());

/// Install the wall-time check in minijinja (once per process; a later call is a no-op).
pub fn install_clock() {
    minijinja::set_interrupt_check(over_time);
}

impl RenderClock {
    pub fn start() -> RenderClock {
        DEADLINE.with(|d| d.set(Some(crate::engine::now_ms() + MAX_RENDER_MS)));
        RenderClock(())
    }
}

impl Drop for RenderClock {
    fn drop(&mut self) {
        DEADLINE.with(|d| d.set(None));
    }
}

/// Refuse a source over `MAX_SOURCE`, or one with a tag of more than
/// `MAX_TAG_TOKENS` tokens, naming the line.
pub fn check_source(source: &str) -> Result<(), String> {
    if source.len() > MAX_SOURCE {
        return Err(format!(
            "the chat template is {} bytes, over the sandbox's {} byte limit",
            source.len(),
            MAX_SOURCE
        ));
    }
    let b = source.as_bytes();
    let (mut i, mut line) = (0, 1);
    while i + 1 < b.len() {
        if b[i] == b'\n' {
            line += 1;
        }
        let opens = b[i] == b'{' && matches!(b[i + 1], b'{' | b'%');
        if !opens {
            i += 1;
            continue;
        }
        let close = if b[i + 1] == b'{' { b'}' } else { b'%' };
        let start_line = line;
        let (mut links, mut quote) = (0usize, None::<u8>);
        i += 2;
        while i < b.len() {
            let c = b[i];
            if c == b'\n' {
                line += 1;
            }
            match quote {
                Some(_) if c == b'\\' => i += 1,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == b'"' || c == b'\'' => quote = Some(c),
                None if c == close && b.get(i + 1) == Some(&b'}') => break,
                // Every operator, bracket or word start is at most one link deeper.
                None if b"|.~+-*/%([{<>=!,".contains(&c) => links += 1,
                None if c.is_ascii_alphabetic()
                    && !b
                        .get(i.wrapping_sub(1))
                        .is_some_and(|p| p.is_ascii_alphanumeric() || *p == b'_') =>
                {
                    links += 1
                }
                None => {}
            }
            i += 1;
        }
        if links > MAX_TAG_TOKENS {
            return Err(format!(
                "the tag at line {start_line} of the chat template has {links} tokens \
                 (names, filters, operators), over the sandbox's {MAX_TAG_TOKENS}: the \
                 compiler recurses once per link of a chain"
            ));
        }
        i += 2;
    }
    Ok(())
}

/// A `String` that refuses to grow past `MAX_OUTPUT` (the render stops with an error).
pub struct Bounded(pub String);

impl std::io::Write for Bounded {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        if self.0.len() + buf.len() > MAX_OUTPUT {
            return Err(std::io::Error::other(format!(
                "the chat template's output is over the sandbox's {MAX_OUTPUT} byte limit"
            )));
        }
        // minijinja writes whole UTF-8 strings.
        self.0
            .push_str(std::str::from_utf8(buf).map_err(std::io::Error::other)?);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// jinja2's `batch(linecount, fill_with=None)`, reserving nothing from its arguments.
pub fn batch(value: Value, count: usize, fill_with: Option<Value>) -> Result<Value, Error> {
    if count == 0 {
        return Err(Error::new(ErrorKind::InvalidOperation, "count cannot be 0"));
    }
    let mut rows = Vec::new();
    let mut row = Vec::new();
    for item in value.try_iter()? {
        row.push(item);
        if row.len() == count {
            rows.push(Value::from(std::mem::take(&mut row)));
        }
    }
    if !row.is_empty() {
        if let Some(fill) = fill_with {
            if count > MAX_OUTPUT {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("batch of {count} with fill_with: over the sandbox's {MAX_OUTPUT}"),
                ));
            }
            row.resize(count, fill);
        }
        rows.push(Value::from(row));
    }
    Ok(Value::from(rows))
}
