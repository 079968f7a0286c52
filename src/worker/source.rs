//! Reading a `.slm` from where the browser has it (IndexedDB chunks or a dropped
//! `File`), verifying every chunk against the manifest's table as it goes, and
//! assembling tensors in place: each byte lands once in its tensor's buffer, so the
//! model is never held twice.

use crate::protocol::ErrorKind;
use slm_runtime::format::chunks;
use slm_runtime::format::layout::{parse_manifest, Header, HEADER_LEN};
use slm_runtime::format::manifest::{Manifest, TensorEntry};
use slm_runtime::SlmError;
use wasm_bindgen::JsCast;
use wasm_bindgen_futures::JsFuture;

/// An error as the page shows it: kind (`checksum`, `unsupported`, …), message, and
/// for checksum failures the first bad chunk.
#[derive(Debug)]
pub struct Failure {
    pub kind: ErrorKind,
    pub message: String,
    pub chunk: Option<u64>,
}

impl From<SlmError> for Failure {
    fn from(e: SlmError) -> Failure {
        let chunk = match &e {
            SlmError::Checksum { chunk, .. } => *chunk,
            _ => None,
        };
        Failure {
            kind: ErrorKind::of(&e),
            message: e.to_string(),
            chunk,
        }
    }
}

impl From<String> for Failure {
    fn from(message: String) -> Failure {
        Failure {
            kind: ErrorKind::Browser,
            message,
            chunk: None,
        }
    }
}

impl Failure {
    pub fn network(message: String) -> Failure {
        Failure {
            kind: ErrorKind::Network,
            message,
            chunk: None,
        }
    }
}

/// The part of a file before its data region, parsed and checked.
pub struct Head {
    pub bytes: Vec<u8>,
    pub manifest: Manifest,
    pub data_offset: u64,
}

/// Parse a head; `file_len` is the whole file's size.
pub fn parse_head(bytes: Vec<u8>, file_len: u64) -> Result<Head, Failure> {
    let h = Header::decode(&bytes, Some(file_len))?;
    let data_offset = h.data_offset();
    if (bytes.len() as u64) < data_offset {
        return Err(SlmError::malformed(".slm", "file ends inside its manifest").into());
    }
    let data_len = file_len
        .checked_sub(data_offset)
        .ok_or_else(|| SlmError::malformed(".slm", "file ends before its data region"))?;
    let m_end = (HEADER_LEN + h.manifest_len) as usize;
    let manifest = parse_manifest(&h, &bytes[HEADER_LEN as usize..m_end], Some(data_len))?;
    if bytes[m_end..data_offset as usize].iter().any(|&b| b != 0) {
        return Err(SlmError::malformed(".slm", "padding after the manifest is not zero").into());
    }
    Ok(Head {
        bytes,
        manifest,
        data_offset,
    })
}

/// Bytes needed to read the header: 56.
pub const HEADER_BYTES: u64 = HEADER_LEN;

/// Header length field → bytes up to the data region.
pub fn head_len(header: &[u8], file_len: u64) -> Result<u64, Failure> {
    Ok(Header::decode(header, Some(file_len))?.data_offset())
}

/// Check chunk `i` of `head`'s file (`slm_runtime::format::chunks::check`, the one
/// place that decides it).
pub fn verify_chunk(head: &Head, i: u64, bytes: &[u8]) -> Result<(), Failure> {
    Ok(chunks::check(&head.manifest, head.data_offset, i, bytes)?)
}

/// Collects tensor bytes from data chunks fed in order.
pub struct Assembler {
    /// (tensor index, offset, length), by offset.
    order: Vec<(usize, u64, u64)>,
    bufs: Vec<Vec<u8>>,
    /// First tensor in `order` not yet complete.
    cursor: usize,
    fed: u64,
}

impl Assembler {
    pub fn new(m: &Manifest) -> Assembler {
        let mut order: Vec<(usize, u64, u64)> = m
            .tensors
            .iter()
            .enumerate()
            .map(|(i, t)| (i, t.offset, t.length))
            .collect();
        order.sort_by_key(|t| t.1);
        Assembler {
            order,
            bufs: m.tensors.iter().map(|_| Vec::new()).collect(),
            cursor: 0,
            fed: 0,
        }
    }

    /// The next data-region bytes (chunks in order).
    pub fn feed(&mut self, bytes: &[u8]) {
        let (start, end) = (self.fed, self.fed + bytes.len() as u64);
        let mut k = self.cursor;
        while k < self.order.len() {
            let (ti, off, len) = self.order[k];
            if off >= end {
                break;
            }
            let (a, b) = (off.max(start), (off + len).min(end));
            if a < b {
                let buf = &mut self.bufs[ti];
                if buf.capacity() == 0 {
                    buf.reserve_exact(len as usize);
                }
                buf.extend_from_slice(&bytes[(a - start) as usize..(b - start) as usize]);
            }
            if off + len <= end {
                if k == self.cursor {
                    self.cursor += 1;
                }
                k += 1;
            } else {
                break;
            }
        }
        self.fed = end;
    }

    /// Hand tensor `name`'s bytes over (once).
    pub fn take(&mut self, tensors: &[TensorEntry], name: &str) -> Result<Vec<u8>, SlmError> {
        let i = tensors
            .iter()
            .position(|t| t.name == name)
            .ok_or_else(|| SlmError::malformed(".slm", format!("tensor {name} is missing")))?;
        let b = std::mem::take(&mut self.bufs[i]);
        if b.len() as u64 != tensors[i].length {
            return Err(SlmError::malformed(
                ".slm",
                format!("tensor {name} is incomplete"),
            ));
        }
        Ok(b)
    }
}

/// Bytes `[start, end)` of a `Blob` (a dropped or picked file).
pub async fn blob_range(b: &web_sys::Blob, start: u64, end: u64) -> Result<Vec<u8>, Failure> {
    let part = b
        .slice_with_f64_and_f64(start as f64, end as f64)
        .map_err(|e| Failure::from(crate::worker::idb::describe(&e)))?;
    let buf = JsFuture::from(part.array_buffer()).await.map_err(|e| {
        Failure::from(format!(
            "reading the file: {}",
            crate::worker::idb::describe(&e)
        ))
    })?;
    Ok(js_sys::Uint8Array::new(buf.unchecked_ref()).to_vec())
}
