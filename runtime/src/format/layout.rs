//! Byte layout of a `.slm` file (docs/slm-format.md):
//!
//! ```text
//! 0   8   magic  "TRLMSLM\0"
//! 8   4   u32 LE format version (1)
//! 12  4   u32 LE flags (0)
//! 16  8   u64 LE manifest length M
//! 24  32  SHA-256 of the manifest bytes
//! 56  M   manifest, UTF-8 JSON
//! ..      zero padding up to a multiple of 64
//! D   ..  data region: tensors at their manifest offsets, zero padding between them
//! ```

use sha2::{Digest, Sha256};

use crate::error::{Result, SlmError};
use crate::format::manifest::{Manifest, FORMAT_NAME, FORMAT_VERSION};

pub const MAGIC: &[u8; 8] = b"TRLMSLM\0";
pub const HEADER_LEN: u64 = 56;
/// Alignment of the data region and of every tensor inside it.
pub const DATA_ALIGN: u64 = 64;
pub const DEFAULT_CHUNK: u64 = 1 << 20;
/// The largest chunk a reader accepts: a verifier holds one chunk in memory at a time.
pub const MAX_CHUNK_SIZE: u64 = 64 << 20;
/// A manifest larger than this is refused before it is read (tokenizer.json of a
/// 150k-vocab model is ~7 MB; the chunk table of a 4 GB model ~300 KB).
pub const MAX_MANIFEST: u64 = 64 << 20;

#[derive(Debug)]
pub struct Header {
    pub version: u32,
    pub manifest_len: u64,
    pub manifest_sha256: [u8; 32],
}

impl Header {
    pub fn encode(&self) -> [u8; HEADER_LEN as usize] {
        let mut b = [0u8; HEADER_LEN as usize];
        b[0..8].copy_from_slice(MAGIC);
        b[8..12].copy_from_slice(&self.version.to_le_bytes());
        b[16..24].copy_from_slice(&self.manifest_len.to_le_bytes());
        b[24..56].copy_from_slice(&self.manifest_sha256);
        b
    }

    /// Decode the fixed header; `file_len` bounds the manifest length when known.
    pub fn decode(b: &[u8], file_len: Option<u64>) -> Result<Header> {
        if b.len() < HEADER_LEN as usize {
            return Err(SlmError::malformed(
                ".slm",
                format!("file is {} bytes, shorter than the 56-byte header", b.len()),
            ));
        }
        if &b[0..8] != MAGIC {
            return Err(SlmError::malformed(
                ".slm",
                "bad magic: not a TinyRustLM .slm file",
            ));
        }
        let version = u32::from_le_bytes(b[8..12].try_into().unwrap());
        if version != FORMAT_VERSION {
            return Err(SlmError::unsupported(
                "format_version",
                version,
                "this build reads .slm version 1",
            ));
        }
        let flags = u32::from_le_bytes(b[12..16].try_into().unwrap());
        if flags != 0 {
            return Err(SlmError::unsupported(
                "header.flags",
                flags,
                "version 1 defines no flags",
            ));
        }
        let manifest_len = u64::from_le_bytes(b[16..24].try_into().unwrap());
        if manifest_len == 0
            || manifest_len > MAX_MANIFEST
            || file_len.is_some_and(|n| HEADER_LEN + manifest_len > n)
        {
            return Err(SlmError::malformed(
                ".slm",
                format!("manifest length {manifest_len} is impossible for this file"),
            ));
        }
        Ok(Header {
            version,
            manifest_len,
            manifest_sha256: b[24..56].try_into().unwrap(),
        })
    }

    pub fn data_offset(&self) -> u64 {
        (HEADER_LEN + self.manifest_len).div_ceil(DATA_ALIGN) * DATA_ALIGN
    }
}

pub fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

pub fn sha256_hex(b: &[u8]) -> String {
    hex(&Sha256::digest(b))
}

/// Check the manifest bytes against the header hash, parse them, and check that the
/// tensor directory and chunk table are consistent with each other and `data_len`.
pub fn parse_manifest(h: &Header, bytes: &[u8], data_len: Option<u64>) -> Result<Manifest> {
    let got: [u8; 32] = Sha256::digest(bytes).into();
    if got != h.manifest_sha256 {
        return Err(SlmError::Checksum {
            detail: format!(
                "manifest SHA-256 is {}, header says {}",
                hex(&got),
                hex(&h.manifest_sha256)
            ),
            chunk: None,
        });
    }
    let m: Manifest =
        serde_json::from_slice(bytes).map_err(|e| SlmError::malformed(".slm manifest", e))?;
    if m.format != FORMAT_NAME || m.format_version != FORMAT_VERSION {
        return Err(SlmError::unsupported(
            "format",
            &m.format,
            "not a tinyrustlm.slm v1 manifest",
        ));
    }
    m.model.validate()?;
    crate::sampling::SamplerConfig::check_tuning(&m.preset_tuning)
        .map_err(|e| SlmError::malformed(".slm manifest", e.message()))?;
    if let Some(p) = &m.clarify_probe {
        p.validate(&m.model)?;
    }
    let d = &m.data;
    if let Some(n) = data_len {
        if n != d.length {
            return Err(SlmError::malformed(
                ".slm",
                format!(
                    "data region is {n} bytes, manifest says {} (truncated or padded file)",
                    d.length
                ),
            ));
        }
    }
    if d.chunk_size > MAX_CHUNK_SIZE {
        return Err(SlmError::malformed(
            ".slm manifest",
            format!(
                "chunk size {} is over the limit of {MAX_CHUNK_SIZE}",
                d.chunk_size
            ),
        ));
    }
    if d.chunk_size == 0
        || !d.chunk_size.is_multiple_of(DATA_ALIGN)
        || d.length.div_ceil(d.chunk_size) != d.chunk_sha256.len() as u64
    {
        return Err(SlmError::malformed(
            ".slm manifest",
            "chunk table does not cover the data region",
        ));
    }
    // Every hash is 64 lowercase hex digits: readers (the page's worker) slice and
    // compare them, and a short or odd one must be refused here, not trip them later.
    let is_hash =
        |h: &str| h.len() == 64 && h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f'));
    if let Some(bad) = std::iter::once(&d.sha256)
        .chain(&d.chunk_sha256)
        .chain(m.provenance.source_files.iter().map(|f| &f.sha256))
        .find(|h| !is_hash(h))
    {
        return Err(SlmError::malformed(
            ".slm manifest",
            format!("{bad:?} is not a SHA-256 (64 lowercase hex digits)"),
        ));
    }
    for t in &m.tensors {
        let n = t.shape.iter().try_fold(1u64, |a, &x| a.checked_mul(x));
        let want = n.and_then(|n| t.dtype.bytes_for(n));
        if want != Some(t.length)
            || t.offset % DATA_ALIGN != 0
            || t.offset.checked_add(t.length).is_none_or(|e| e > d.length)
        {
            return Err(SlmError::malformed(
                ".slm manifest",
                format!(
                    "tensor {} ({:?} {:?}) has an inconsistent size or offset",
                    t.name, t.dtype, t.shape
                ),
            ));
        }
    }
    let mut names: Vec<&str> = m.tensors.iter().map(|t| t.name.as_str()).collect();
    names.sort_unstable();
    if let Some(w) = names.windows(2).find(|w| w[0] == w[1]) {
        return Err(SlmError::malformed(
            ".slm manifest",
            format!("tensor {} is listed twice", w[0]),
        ));
    }
    // Each tensor owns its bytes: forged entries that alias one extent (thousands of
    // layers on the same weights) would multiply the memory a load takes while every
    // chunk still verifies. Sorted by offset, each must end before the next starts.
    let mut extents: Vec<(u64, u64, &str)> = m
        .tensors
        .iter()
        .map(|t| (t.offset, t.offset + t.length, t.name.as_str()))
        .collect();
    extents.sort_unstable();
    if let Some(w) = extents.windows(2).find(|w| w[1].0 < w[0].1) {
        return Err(SlmError::malformed(
            ".slm manifest",
            format!(
                "tensors {} and {} overlap in the data section (bytes {}..{} and {}..{})",
                w[0].2, w[1].2, w[0].0, w[0].1, w[1].0, w[1].1
            ),
        ));
    }
    Ok(m)
}
