//! GGUF v2/v3 reader. Hostile input is expected: every length is checked against the
//! bytes actually left in the file before anything is allocated, so a forged count
//! yields a `Malformed` error instead of a huge allocation or a panic.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};

use crate::error::{Result, SlmError};
use crate::quant::{self, DType};

/// Items one metadata array may hold: far above a vocabulary (Qwen2.5: 151 936 tokens
/// and 151 387 merges), and parsed items take about 32 bytes each.
pub const MAX_ARRAY_ITEMS: u64 = 1 << 24;

/// One metadata value, as the file stores it.
#[derive(Clone, Debug, PartialEq)]
pub enum Value {
    U8(u8),
    I8(i8),
    U16(u16),
    I16(i16),
    U32(u32),
    I32(i32),
    U64(u64),
    I64(i64),
    F32(f32),
    F64(f64),
    Bool(bool),
    Str(String),
    Array(Vec<Value>),
}

impl Value {
    pub fn as_u64(&self) -> Option<u64> {
        Some(match *self {
            Value::U8(v) => v as u64,
            Value::U16(v) => v as u64,
            Value::U32(v) => v as u64,
            Value::U64(v) => v,
            Value::I8(v) if v >= 0 => v as u64,
            Value::I16(v) if v >= 0 => v as u64,
            Value::I32(v) if v >= 0 => v as u64,
            Value::I64(v) if v >= 0 => v as u64,
            _ => return None,
        })
    }
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Value::F32(v) => Some(v as f64),
            Value::F64(v) => Some(v),
            _ => self.as_u64().map(|v| v as f64),
        }
    }
    pub fn as_str(&self) -> Option<&str> {
        match self {
            Value::Str(s) => Some(s),
            _ => None,
        }
    }
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Value::Bool(b) => Some(b),
            _ => None,
        }
    }
    pub fn as_array(&self) -> Option<&[Value]> {
        match self {
            Value::Array(a) => Some(a),
            _ => None,
        }
    }
    /// Short rendering for diagnostics.
    pub fn brief(&self) -> String {
        match self {
            Value::Str(s) if s.len() > 60 => format!("{:?}…", &s[..s.floor_char_boundary(60)]),
            Value::Str(s) => format!("{s:?}"),
            Value::Array(a) => format!("[{} items]", a.len()),
            other => format!("{other:?}"),
        }
    }
}

/// GGML tensor types this importer can decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GgmlType {
    F32,
    F16,
    BF16,
    Q4_0,
    Q4_1,
    Q5_0,
    Q5_1,
    Q8_0,
    Q4K,
    Q5K,
    Q6K,
}

impl GgmlType {
    fn from_id(id: u32) -> Option<Self> {
        Some(match id {
            0 => GgmlType::F32,
            1 => GgmlType::F16,
            2 => GgmlType::Q4_0,
            3 => GgmlType::Q4_1,
            6 => GgmlType::Q5_0,
            7 => GgmlType::Q5_1,
            8 => GgmlType::Q8_0,
            12 => GgmlType::Q4K,
            13 => GgmlType::Q5K,
            14 => GgmlType::Q6K,
            30 => GgmlType::BF16,
            _ => return None,
        })
    }
    /// (weights per block, bytes per block)
    pub fn block(self) -> (u64, u64) {
        match self {
            GgmlType::F32 => (1, 4),
            GgmlType::F16 | GgmlType::BF16 => (1, 2),
            GgmlType::Q4_0 => (32, 18),
            GgmlType::Q4_1 => (32, 20),
            GgmlType::Q5_0 => (32, 22),
            GgmlType::Q5_1 => (32, 24),
            GgmlType::Q8_0 => (32, 34),
            GgmlType::Q4K => (256, 144),
            GgmlType::Q5K => (256, 176),
            GgmlType::Q6K => (256, 210),
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            GgmlType::F32 => "F32",
            GgmlType::F16 => "F16",
            GgmlType::BF16 => "BF16",
            GgmlType::Q4_0 => "Q4_0",
            GgmlType::Q4_1 => "Q4_1",
            GgmlType::Q5_0 => "Q5_0",
            GgmlType::Q5_1 => "Q5_1",
            GgmlType::Q8_0 => "Q8_0",
            GgmlType::Q4K => "Q4_K",
            GgmlType::Q5K => "Q5_K",
            GgmlType::Q6K => "Q6_K",
        }
    }
    /// The `.slm` type with this GGUF type's blocks, byte for byte (BF16 has none).
    pub fn lossless_slm(self) -> Option<DType> {
        Some(match self {
            GgmlType::F32 => DType::F32,
            GgmlType::F16 => DType::F16,
            GgmlType::BF16 => return None,
            GgmlType::Q4_0 => DType::Q4_0,
            GgmlType::Q4_1 => DType::Q4_1,
            GgmlType::Q5_0 => DType::Q5_0,
            GgmlType::Q5_1 => DType::Q5_1,
            GgmlType::Q8_0 => DType::Q8_0,
            GgmlType::Q4K => DType::Q4K,
            GgmlType::Q5K => DType::Q5K,
            GgmlType::Q6K => DType::Q6K,
        })
    }

    /// Where an already-quantized tensor goes unless the user asks to re-quantize: the
    /// same type, its blocks copied (quantizing onto another grid adds a second
    /// rounding of the same size as the first; llama.cpp's quantizer refuses that by
    /// default too). None for float types, which follow `--quant`.
    pub fn kept_slm(self) -> Option<DType> {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => None,
            t => t.lossless_slm(),
        }
    }

    /// Decode whole blocks of this type into f32.
    pub fn dequantize(self, src: &[u8], dst: &mut [f32]) {
        match self.lossless_slm() {
            Some(dt) => quant::dequantize(dt, src, dst),
            None => {
                for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
                    *o = half::bf16::from_le_bytes([c[0], c[1]]).to_f32();
                }
            }
        }
    }
}

/// One tensor's directory entry. `dims` are listed innermost first, as GGUF stores them:
/// `[576, 192]` is 192 rows of 576 weights.
#[derive(Clone, Debug)]
pub struct TensorInfo {
    pub name: String,
    pub dims: Vec<u64>,
    pub ggml_type: GgmlType,
    /// Absolute offset of the tensor's first byte in the file.
    pub offset: u64,
    pub n_bytes: u64,
}

impl TensorInfo {
    pub fn n_elements(&self) -> u64 {
        self.dims.iter().product()
    }
    /// Shape outermost first (row-major), as HF / numpy write it.
    pub fn shape(&self) -> Vec<u64> {
        self.dims.iter().rev().cloned().collect()
    }
}

#[derive(Debug)]
pub struct GgufFile {
    pub version: u32,
    pub metadata: BTreeMap<String, Value>,
    pub tensors: Vec<TensorInfo>,
    pub file_len: u64,
}

const MAX_STRING: u64 = 64 << 20;
const MAX_DIMS: u32 = 4;

struct Cursor<'a, R> {
    r: &'a mut R,
    pos: u64,
    len: u64,
}

impl<R: Read> Cursor<'_, R> {
    fn remaining(&self) -> u64 {
        self.len.saturating_sub(self.pos)
    }
    fn bytes<const N: usize>(&mut self) -> Result<[u8; N]> {
        let mut b = [0u8; N];
        if self.remaining() < N as u64 {
            return Err(SlmError::malformed(
                "GGUF",
                format!("truncated at byte {}", self.pos),
            ));
        }
        self.r.read_exact(&mut b).map_err(|e| {
            SlmError::malformed("GGUF", format!("read failed at byte {}: {e}", self.pos))
        })?;
        self.pos += N as u64;
        Ok(b)
    }
    fn u32(&mut self) -> Result<u32> {
        Ok(u32::from_le_bytes(self.bytes()?))
    }
    fn u64(&mut self) -> Result<u64> {
        Ok(u64::from_le_bytes(self.bytes()?))
    }
    fn string(&mut self) -> Result<String> {
        let n = self.u64()?;
        if n > MAX_STRING || n > self.remaining() {
            return Err(SlmError::malformed(
                "GGUF",
                format!(
                    "string length {n} at byte {} exceeds the file",
                    self.pos - 8
                ),
            ));
        }
        let mut v = vec![0u8; n as usize];
        self.r
            .read_exact(&mut v)
            .map_err(|e| SlmError::malformed("GGUF", format!("read failed: {e}")))?;
        self.pos += n;
        String::from_utf8(v).map_err(|_| {
            SlmError::malformed(
                "GGUF",
                format!("string at byte {} is not UTF-8", self.pos - n),
            )
        })
    }
    fn value(&mut self, ty: u32, depth: u32) -> Result<Value> {
        Ok(match ty {
            0 => Value::U8(self.bytes::<1>()?[0]),
            1 => Value::I8(self.bytes::<1>()?[0] as i8),
            2 => Value::U16(u16::from_le_bytes(self.bytes()?)),
            3 => Value::I16(i16::from_le_bytes(self.bytes()?)),
            4 => Value::U32(self.u32()?),
            5 => Value::I32(i32::from_le_bytes(self.bytes()?)),
            6 => Value::F32(f32::from_le_bytes(self.bytes()?)),
            7 => Value::Bool(self.bytes::<1>()?[0] != 0),
            8 => Value::Str(self.string()?),
            9 => {
                if depth > 2 {
                    return Err(SlmError::malformed("GGUF", "arrays nested too deeply"));
                }
                let et = self.u32()?;
                let n = self.u64()?;
                // Each element takes at least its type's fixed bytes (a string its
                // length, an array its type and count): a count past the file end is
                // forged. A parsed element takes about 32 bytes whatever its size, so
                // the count is also capped (real arrays are vocabularies: about 2^18),
                // and the reservation grows only as elements parse.
                let least: u64 = match et {
                    0 | 1 | 7 => 1,
                    2 | 3 => 2,
                    4..=6 => 4,
                    8 | 10..=12 => 8,
                    9 => 12,
                    _ => 1,
                };
                if n.checked_mul(least).is_none_or(|b| b > self.remaining()) {
                    return Err(SlmError::malformed(
                        "GGUF",
                        format!("array of {n} items at byte {} exceeds the file", self.pos),
                    ));
                }
                if n > MAX_ARRAY_ITEMS {
                    return Err(SlmError::malformed(
                        "GGUF",
                        format!(
                            "array of {n} items at byte {}: over the limit of {MAX_ARRAY_ITEMS}",
                            self.pos
                        ),
                    ));
                }
                let mut v = Vec::with_capacity((n as usize).min(1 << 16));
                for _ in 0..n {
                    v.push(self.value(et, depth + 1)?);
                }
                Value::Array(v)
            }
            10 => Value::U64(self.u64()?),
            11 => Value::I64(i64::from_le_bytes(self.bytes()?)),
            12 => Value::F64(f64::from_le_bytes(self.bytes()?)),
            t => {
                return Err(SlmError::malformed(
                    "GGUF",
                    format!("unknown value type {t}"),
                ))
            }
        })
    }
}

impl GgufFile {
    /// Parse the header, metadata and tensor directory (no tensor data is read).
    pub fn read<R: Read + Seek>(r: &mut R) -> Result<GgufFile> {
        let file_len = r
            .seek(SeekFrom::End(0))
            .and_then(|n| r.seek(SeekFrom::Start(0)).map(|_| n))
            .map_err(|e| SlmError::malformed("GGUF", format!("cannot seek: {e}")))?;
        let mut c = Cursor {
            r,
            pos: 0,
            len: file_len,
        };
        if &c.bytes::<4>()? != b"GGUF" {
            return Err(SlmError::malformed("GGUF", "bad magic (expected \"GGUF\")"));
        }
        let version = c.u32()?;
        if !(2..=3).contains(&version) {
            return Err(SlmError::unsupported(
                "gguf.version",
                version,
                "only GGUF v2 and v3 are read",
            ));
        }
        let n_tensors = c.u64()?;
        let n_kv = c.u64()?;
        if n_tensors > c.remaining() / 24 || n_kv > c.remaining() / 12 {
            return Err(SlmError::malformed(
                "GGUF",
                format!(
                    "{n_tensors} tensors / {n_kv} metadata entries cannot fit in {file_len} bytes"
                ),
            ));
        }
        let mut metadata = BTreeMap::new();
        for _ in 0..n_kv {
            let key = c.string()?;
            let ty = c.u32()?;
            let v = c.value(ty, 0)?;
            metadata.insert(key, v);
        }
        let mut infos = Vec::with_capacity(n_tensors as usize);
        for _ in 0..n_tensors {
            let name = c.string()?;
            let nd = c.u32()?;
            if nd == 0 || nd > MAX_DIMS {
                return Err(SlmError::malformed(
                    "GGUF",
                    format!("tensor {name}: {nd} dimensions"),
                ));
            }
            let mut dims = Vec::with_capacity(nd as usize);
            for _ in 0..nd {
                dims.push(c.u64()?);
            }
            let tid = c.u32()?;
            let off = c.u64()?;
            infos.push((name, dims, tid, off));
        }
        let alignment = match metadata.get("general.alignment") {
            Some(v) => v
                .as_u64()
                .filter(|a| a.is_power_of_two() && *a <= 1 << 20)
                .ok_or_else(|| {
                    SlmError::malformed("GGUF", format!("general.alignment = {}", v.brief()))
                })?,
            None => 32,
        };
        let data_start = c.pos.div_ceil(alignment) * alignment;
        let mut tensors = Vec::with_capacity(infos.len());
        for (name, dims, tid, off) in infos {
            let ggml_type = GgmlType::from_id(tid).ok_or_else(|| {
                SlmError::unsupported(
                    format!("tensor {name}.type"),
                    tid,
                    "GGML type not supported",
                )
            })?;
            let n = dims
                .iter()
                .try_fold(1u64, |a, &d| a.checked_mul(d))
                .ok_or_else(|| {
                    SlmError::malformed("GGUF", format!("tensor {name}: size overflows"))
                })?;
            let (bw, bb) = ggml_type.block();
            if dims[0] % bw != 0 {
                return Err(SlmError::malformed(
                    "GGUF",
                    format!(
                        "tensor {name}: row of {} is not a multiple of {bw}",
                        dims[0]
                    ),
                ));
            }
            let n_bytes = (n / bw).checked_mul(bb).ok_or_else(|| {
                SlmError::malformed("GGUF", format!("tensor {name}: size overflows"))
            })?;
            let offset = data_start
                .checked_add(off)
                .filter(|o| o.checked_add(n_bytes).is_some_and(|end| end <= file_len))
                .ok_or_else(|| {
                    SlmError::malformed(
                        "GGUF",
                        format!("tensor {name}: bytes {off}+{n_bytes} past the end of the file ({file_len} bytes)"),
                    )
                })?;
            tensors.push(TensorInfo {
                name,
                dims,
                ggml_type,
                offset,
                n_bytes,
            });
        }
        Ok(GgufFile {
            version,
            metadata,
            tensors,
            file_len,
        })
    }

    pub fn get(&self, key: &str) -> Option<&Value> {
        self.metadata.get(key)
    }

    pub fn tensor(&self, name: &str) -> Option<&TensorInfo> {
        self.tensors.iter().find(|t| t.name == name)
    }

    /// Read one tensor's raw bytes.
    pub fn read_raw<R: Read + Seek>(&self, r: &mut R, t: &TensorInfo) -> Result<Vec<u8>> {
        let mut buf = vec![0u8; t.n_bytes as usize];
        r.seek(SeekFrom::Start(t.offset))
            .and_then(|_| r.read_exact(&mut buf))
            .map_err(|e| SlmError::malformed("GGUF", format!("tensor {}: {e}", t.name)))?;
        Ok(buf)
    }

    /// Read one tensor and decode it to f32 (row-major, innermost dimension contiguous).
    pub fn read_f32<R: Read + Seek>(&self, r: &mut R, t: &TensorInfo) -> Result<Vec<f32>> {
        let raw = self.read_raw(r, t)?;
        let mut out = vec![0f32; t.n_elements() as usize];
        t.ggml_type.dequantize(&raw, &mut out);
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Q5_0 blocks with every fifth-bit pattern we can think of (none, all, alternating,
    /// one per half) and all 32 values: the q8_0 transcode decodes to the same bits.
    #[test]
    fn quantized_types_keep_their_precision() {
        use GgmlType::*;
        for (t, kept) in [
            (F32, None),
            (F16, None),
            (BF16, None),
            (Q8_0, Some(DType::Q8_0)),
            (Q4_0, Some(DType::Q4_0)),
            (Q4_1, Some(DType::Q4_1)),
            (Q5_0, Some(DType::Q5_0)),
            (Q5_1, Some(DType::Q5_1)),
            (Q4K, Some(DType::Q4K)),
            (Q5K, Some(DType::Q5K)),
            (Q6K, Some(DType::Q6K)),
        ] {
            assert_eq!(t.kept_slm(), kept, "{}", t.name());
        }
    }
}
