//! GGUF v2/v3 reader. Hostile input is expected: every length is checked against the
//! bytes actually left in the file before anything is allocated, so a forged count
//! yields a `Malformed` error instead of a huge allocation or a panic.

use std::collections::BTreeMap;
use std::io::{Read, Seek, SeekFrom};

use crate::error::{Result, SlmError};
use crate::quant::{self, gguf_blocks, DType};

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
    /// The `.slm` type that holds this GGUF type without any loss, if one exists: the
    /// same blocks, or for Q5_0 q8_0 blocks with the same scale (`to_lossless`).
    pub fn lossless_slm(self) -> Option<DType> {
        match self {
            GgmlType::F32 => Some(DType::F32),
            GgmlType::F16 => Some(DType::F16),
            GgmlType::Q8_0 | GgmlType::Q5_0 => Some(DType::Q8_0),
            GgmlType::Q4_0 => Some(DType::Q4_0),
            GgmlType::Q4_1 => Some(DType::Q4_1),
            _ => None,
        }
    }

    /// Where an already-quantized tensor goes unless the user asks to re-quantize: the
    /// `.slm` type that keeps its precision. That is `lossless_slm` where one exists
    /// (exact), else q8_0 (decoded and quantized again, not exact), whose steps
    /// (max|x|/127 per 32) are far finer than those of a 5- or 6-bit type, so it adds
    /// little to the source's own rounding (quantizing onto a grid that does not line
    /// up with the source's adds a second rounding of the same size as the first;
    /// llama.cpp's quantizer refuses that by default).
    /// None for float types, which follow `--quant`.
    pub fn kept_slm(self) -> Option<DType> {
        match self {
            GgmlType::F32 | GgmlType::F16 | GgmlType::BF16 => None,
            t => Some(t.lossless_slm().unwrap_or(DType::Q8_0)),
        }
    }

    /// `raw` (whole blocks of this type) as blocks of `lossless_slm()`, bit-exact once
    /// decoded. Q5_0's x = d·(q − 16) with q < 32 is a q8_0 block with the same `d` and
    /// `q − 16` as its i8; every other lossless type is already in `.slm` layout.
    pub fn to_lossless(self, raw: Vec<u8>) -> Vec<u8> {
        if self != GgmlType::Q5_0 {
            return raw;
        }
        let mut out = Vec::with_capacity(raw.len() / 22 * 34);
        for b in raw.chunks_exact(22) {
            out.extend_from_slice(&b[0..2]);
            let qh = u32::from_le_bytes([b[2], b[3], b[4], b[5]]);
            let qs = &b[6..22];
            let q = |j: usize| {
                let nib = if j < 16 {
                    qs[j] & 0x0f
                } else {
                    qs[j - 16] >> 4
                };
                (((nib as u32) | (((qh >> j) & 1) << 4)) as i32 - 16) as i8 as u8
            };
            out.extend((0..32).map(q));
        }
        out
    }

    /// Decode whole blocks of this type into f32.
    pub fn dequantize(self, src: &[u8], dst: &mut [f32]) {
        match self {
            GgmlType::F32 => quant::dequantize(DType::F32, src, dst),
            GgmlType::F16 => quant::dequantize(DType::F16, src, dst),
            GgmlType::BF16 => {
                for (o, c) in dst.iter_mut().zip(src.chunks_exact(2)) {
                    *o = half::bf16::from_le_bytes([c[0], c[1]]).to_f32();
                }
            }
            GgmlType::Q4_0 => quant::dequantize(DType::Q4_0, src, dst),
            GgmlType::Q4_1 => quant::dequantize(DType::Q4_1, src, dst),
            GgmlType::Q8_0 => quant::dequantize(DType::Q8_0, src, dst),
            GgmlType::Q5_0 => gguf_blocks::q5_0(src, dst),
            GgmlType::Q5_1 => gguf_blocks::q5_1(src, dst),
            GgmlType::Q4K => gguf_blocks::q4_k(src, dst),
            GgmlType::Q5K => gguf_blocks::q5_k(src, dst),
            GgmlType::Q6K => gguf_blocks::q6_k(src, dst),
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
                // Every element takes at least one byte: a count past the file end is forged.
                if n > self.remaining() {
                    return Err(SlmError::malformed(
                        "GGUF",
                        format!("array of {n} items at byte {} exceeds the file", self.pos),
                    ));
                }
                let mut v = Vec::with_capacity(n as usize);
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
    fn q5_0_transcodes_to_q8_0_exactly() {
        let mut raw = Vec::new();
        let scales = [0.0f32, 1.0, -0.003_17, 6.1e-5, 1.5e-7, 60000.0];
        let highs = [0u32, u32::MAX, 0x5555_5555, 0x0000_8001, 0x8001_0000];
        let mut seed = 7u32;
        for (k, &d) in scales.iter().enumerate() {
            for &qh in &highs {
                raw.extend_from_slice(&half::f16::from_f32(d).to_le_bytes());
                raw.extend_from_slice(&qh.to_le_bytes());
                for j in 0..16u32 {
                    seed = seed.wrapping_mul(1_103_515_245).wrapping_add(12345);
                    raw.push(if k == 0 {
                        (j * 17) as u8
                    } else {
                        (seed >> 16) as u8
                    });
                }
            }
        }
        let n = raw.len() / 22 * 32;
        let (mut want, mut got) = (vec![0f32; n], vec![0f32; n]);
        GgmlType::Q5_0.dequantize(&raw, &mut want);
        let q8 = GgmlType::Q5_0.to_lossless(raw.clone());
        assert_eq!(q8.len(), raw.len() / 22 * 34);
        quant::dequantize(GgmlType::Q5_0.lossless_slm().unwrap(), &q8, &mut got);
        let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(&got), bits(&want));
        // Both ends of the 5-bit range occur.
        let q: Vec<i8> = q8
            .chunks_exact(34)
            .flat_map(|b| b[2..].iter().map(|&v| v as i8))
            .collect();
        assert!(q.contains(&-16) && q.contains(&15));
    }

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
            (Q5_0, Some(DType::Q8_0)),
            (Q5_1, Some(DType::Q8_0)),
            (Q4K, Some(DType::Q8_0)),
            (Q5K, Some(DType::Q8_0)),
            (Q6K, Some(DType::Q8_0)),
        ] {
            assert_eq!(t.kept_slm(), kept, "{}", t.name());
        }
    }
}
