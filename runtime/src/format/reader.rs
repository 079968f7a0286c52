//! Reading `.slm` files: the header and manifest first (verified against the header's
//! hash), then tensors one at a time, or a full re-hash of every chunk (`verify`).

use std::fs::File;
use std::io::{Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::chunks;
use super::layout::{hex, parse_manifest, Header, HEADER_LEN};
use super::manifest::{Manifest, TensorEntry};
use crate::error::{Result, SlmError};

pub struct SlmFile {
    pub path: PathBuf,
    file: File,
    pub manifest: Manifest,
    pub header: Header,
    pub file_len: u64,
}

impl SlmFile {
    pub fn open(path: &Path) -> Result<SlmFile> {
        let io = |e| SlmError::io(path.display(), e);
        let mut file = File::open(path).map_err(io)?;
        let file_len = file.metadata().map_err(io)?.len();
        let mut hb = vec![0u8; HEADER_LEN.min(file_len) as usize];
        file.read_exact(&mut hb).map_err(io)?;
        let header = Header::decode(&hb, Some(file_len))?;
        let mut mb = vec![0u8; header.manifest_len as usize];
        file.read_exact(&mut mb).map_err(io)?;
        let data_len = file_len.checked_sub(header.data_offset()).ok_or_else(|| {
            SlmError::malformed(
                ".slm",
                format!(
                    "file ends at {file_len}, before the data region at {}",
                    header.data_offset()
                ),
            )
        })?;
        let manifest = parse_manifest(&header, &mb, Some(data_len))?;
        Ok(SlmFile {
            path: path.to_path_buf(),
            file,
            manifest,
            header,
            file_len,
        })
    }

    pub fn data_offset(&self) -> u64 {
        self.header.data_offset()
    }

    /// Raw bytes of one tensor. No hash check here: `verify` does that, the loader trusts
    /// the manifest's sizes (already bounds-checked against the file).
    pub fn read_tensor(&mut self, t: &TensorEntry) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; t.length as usize];
        self.file
            .seek(SeekFrom::Start(self.data_offset() + t.offset))
            .and_then(|_| self.file.read_exact(&mut buf))
            .map_err(|e| SlmError::io(self.path.display(), e))?;
        Ok(buf)
    }

    /// Re-hash every chunk and the whole data region; the error names the first bad chunk.
    /// Also returns the SHA-256 of the whole file (what a download catalog lists).
    pub fn verify(&mut self, progress: &mut dyn FnMut(u64, u64)) -> Result<String> {
        let io = |e| SlmError::io(self.path.display(), e);
        let d = &self.manifest.data;
        let mut file_hash = Sha256::new();
        let mut head = vec![0u8; self.data_offset() as usize];
        self.file.seek(SeekFrom::Start(0)).map_err(io)?;
        self.file.read_exact(&mut head).map_err(io)?;
        if head[(HEADER_LEN + self.header.manifest_len) as usize..]
            .iter()
            .any(|&b| b != 0)
        {
            return Err(SlmError::malformed(
                ".slm",
                "padding after the manifest is not zero",
            ));
        }
        file_hash.update(&head);
        let mut whole = Sha256::new();
        let mut buf = vec![0u8; d.chunk_size as usize];
        for i in 0..chunks::count(&self.manifest) {
            let n = chunks::len(&self.manifest, i) as usize;
            self.file.read_exact(&mut buf[..n]).map_err(io)?;
            chunks::check(&self.manifest, self.data_offset(), i, &buf[..n])?;
            whole.update(&buf[..n]);
            file_hash.update(&buf[..n]);
            progress(i + 1, chunks::count(&self.manifest));
        }
        let got = hex(&whole.finalize());
        if got != d.sha256 {
            return Err(SlmError::Checksum {
                detail: format!("data region hashes to {got}, manifest says {}", d.sha256),
                chunk: None,
            });
        }
        Ok(hex(&file_hash.finalize()))
    }
}
