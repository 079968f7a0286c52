//! The data region's chunks, checked against the manifest's table: the one place that
//! decides whether bytes are chunk `i` of a file. The CLI's `verify`, the browser's
//! download (before a chunk is stored) and its load (as each chunk is read back) all
//! call `check`, so a chunk means the same thing everywhere.

use sha2::{Digest, Sha256};

use super::layout::hex;
use super::manifest::Manifest;
use crate::error::{Result, SlmError};

/// How many chunks the data region has (the table's length; `parse_manifest` checked
/// that it matches the region's length and chunk size).
pub fn count(m: &Manifest) -> u64 {
    m.data.chunk_sha256.len() as u64
}

/// Bytes in chunk `i`: the chunk size, or what is left for the last one (0 past the end).
pub fn len(m: &Manifest, i: u64) -> u64 {
    let d = &m.data;
    d.length
        .saturating_sub(i.saturating_mul(d.chunk_size))
        .min(d.chunk_size)
}

/// Check that `bytes` are chunk `i` of the file whose data region starts at
/// `data_offset`: the right length and the table's SHA-256. The error is a checksum
/// error that names the chunk and its file byte range.
pub fn check(m: &Manifest, data_offset: u64, i: u64, bytes: &[u8]) -> Result<()> {
    let want = m.data.chunk_sha256.get(i as usize).ok_or_else(|| {
        SlmError::malformed(
            ".slm",
            format!("chunk {i} is past the end of the table of {}", count(m)),
        )
    })?;
    let expect = len(m, i);
    let start = data_offset + i * m.data.chunk_size;
    let range = format!("chunk {i} (file bytes {start}..{})", start + expect);
    if bytes.len() as u64 != expect {
        return Err(SlmError::Checksum {
            detail: format!("{range} is {} bytes, expected {expect}", bytes.len()),
            chunk: Some(i),
        });
    }
    let got = hex(&Sha256::digest(bytes));
    if &got != want {
        return Err(SlmError::Checksum {
            detail: format!("{range} hashes to {got}, manifest says {want}"),
            chunk: Some(i),
        });
    }
    Ok(())
}
