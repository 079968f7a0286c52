//! A seeded mutation sample of every untrusted input (issue 21), beside the fuzz
//! targets (fuzz/) and the hand-made classes (hostile_input.rs): the tiny real-format
//! seeds of fuzz/seeds, each mutated a fixed number of times with a fixed seed, run
//! through the same path as a person's file, and every outcome counted: accepted,
//! refused with an error (by kind), panicked, or over the time limit. Holds when no
//! input panics or runs over the limit, and prints the table (docs/fuzzing.md quotes
//! it). An allocation abort would end the test process, so it cannot pass with one.

use std::collections::BTreeMap;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use sha2::{Digest, Sha256};
use slm_runtime::engine::{Engine, GenerateOptions};
use slm_runtime::format::layout::{parse_manifest, Header};
use slm_runtime::format::manifest::FORMAT_VERSION;
use slm_runtime::format::reader::SlmFile;
use slm_runtime::format::writer::{self, QuantPolicy};
use slm_runtime::{Result, SlmError};

/// Per input; the hostile-input review's limit.
const LIMIT: Duration = Duration::from_secs(20);

fn seeds() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds")
}

fn scratch(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("mutation");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

/// xorshift64: the sample is the same on every run.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// 1 to 4 edits: a byte set, a bit flipped, a run of bytes cut or repeated, or a
    /// "magic" number (0, -1, 2^31, 2^63) written over 8 bytes.
    fn mutate(&mut self, b: &[u8]) -> Vec<u8> {
        let mut out = b.to_vec();
        for _ in 0..1 + self.next() % 4 {
            if out.is_empty() {
                break;
            }
            let i = (self.next() as usize) % out.len();
            match self.next() % 5 {
                0 => out[i] = self.next() as u8,
                1 => out[i] ^= 1 << (self.next() % 8),
                2 => {
                    let n = (self.next() as usize % 64).min(out.len() - i);
                    out.drain(i..i + n);
                }
                3 => {
                    let n = (self.next() as usize % 64).min(out.len() - i);
                    let run = out[i..i + n].to_vec();
                    out.splice(i..i, run);
                }
                _ => {
                    let magic = [0u64, u64::MAX, 1 << 31, 1 << 63][self.next() as usize % 4];
                    for (k, byte) in magic.to_le_bytes().iter().enumerate() {
                        if let Some(x) = out.get_mut(i + k) {
                            *x = *byte;
                        }
                    }
                }
            }
        }
        out
    }
}

#[derive(Default)]
struct Tally {
    outcomes: BTreeMap<String, usize>,
    panics: Vec<String>,
    slow: Vec<String>,
}

impl Tally {
    fn run(&mut self, what: &str, i: usize, f: impl FnOnce() -> Result<()>) {
        let t = Instant::now();
        let r = catch_unwind(AssertUnwindSafe(f));
        if t.elapsed() > LIMIT {
            self.slow.push(format!("{what} #{i}: {:?}", t.elapsed()));
        }
        let key = match r {
            Ok(Ok(())) => "accepted".to_string(),
            Ok(Err(e)) => format!("error: {}", e.kind()),
            Err(p) => {
                let msg = p
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                self.panics.push(format!("{what} #{i}: {msg}"));
                "panic".to_string()
            }
        };
        *self.outcomes.entry(format!("{what}: {key}")).or_default() += 1;
    }
}

/// A prompt through a loaded engine: render, encode, two greedy tokens.
fn exercise(e: &Engine) -> Result<()> {
    let msgs = serde_json::json!([{"role": "user", "content": "hi ünï"}]);
    let text = e.text.render(&msgs, None, true, 0)?;
    let ids = e.text.encode_rendered(&text)?;
    e.generate(&ids, &GenerateOptions::greedy(2), &mut |_, _| {})?;
    Ok(())
}

/// Convert an import to a `.slm` (`name` in scratch), load it back and run a prompt.
fn convert_and_exercise(imported: slm_runtime::import::Imported, name: &str) -> Result<()> {
    let out = scratch(name);
    let keep = QuantPolicy::parse("keep").unwrap();
    writer::write(imported, keep, false, &out, "sample", &mut |_, _, _| {})?;
    exercise(&Engine::load_file(&out)?)
}

#[test]
fn seeded_mutations_of_every_input_end_in_a_result_or_a_named_error() {
    let mut rng = Rng(0x5EED_2026_1202);
    let mut tally = Tally::default();
    let slm = std::fs::read(seeds().join("tiny.slm")).unwrap();
    let gguf = std::fs::read(seeds().join("tiny.gguf")).unwrap();
    let hf = seeds().join("hf");
    let manifest_len = u64::from_le_bytes(slm[16..24].try_into().unwrap()) as usize;
    let manifest = &slm[56..56 + manifest_len];
    let tokenizer = std::fs::read(hf.join("tokenizer.json")).unwrap();
    let config = std::fs::read(hf.join("config.json")).unwrap();
    let safetensors = std::fs::read(hf.join("model.safetensors")).unwrap();

    // A .slm as dropped on the page or given to `slm`: open, verify, load, run.
    for i in 0..600 {
        let b = rng.mutate(&slm);
        let p = scratch("m.slm");
        std::fs::write(&p, &b).unwrap();
        tally.run(".slm file", i, || {
            SlmFile::open(&p)?.verify(&mut |_, _| {})?;
            exercise(&Engine::load_file(&p)?)
        });
    }
    // A manifest that hashes correctly (the header made to match): every field that
    // feeds an allocation or the math, past the checksum.
    for i in 0..3000 {
        let m = rng.mutate(manifest);
        tally.run(".slm manifest (hash fixed)", i, || {
            let h = Header {
                version: FORMAT_VERSION,
                manifest_len: m.len() as u64,
                manifest_sha256: Sha256::digest(&m).into(),
            };
            let parsed = parse_manifest(&h, &m, None)?;
            let tensors = parsed.clone();
            let mut read = |name: &str| match tensors.tensor(name) {
                Some(t) if t.length <= 8 << 20 => Ok(vec![0u8; t.length as usize]),
                Some(_) => Err(SlmError::Invalid("tensor over the sample's cap".into())),
                None => Err(SlmError::Invalid(format!("tensor {name} is missing"))),
            };
            exercise(&Engine::load(parsed, &mut read)?)
        });
    }
    // A GGUF: import, convert, load, run.
    for i in 0..300 {
        let b = rng.mutate(&gguf);
        let p = scratch("m.gguf");
        std::fs::write(&p, &b).unwrap();
        tally.run("GGUF", i, || {
            let imported = slm_runtime::import::open(&p, &mut |_, _| {})?;
            convert_and_exercise(imported, "gguf.slm")
        });
    }
    // A Hugging Face directory: config.json or model.safetensors mutated.
    for i in 0..600 {
        let dir = scratch("hf");
        std::fs::create_dir_all(&dir).unwrap();
        for f in [
            "tokenizer.json",
            "tokenizer_config.json",
            "generation_config.json",
        ] {
            std::fs::copy(hf.join(f), dir.join(f)).unwrap();
        }
        let (c, s) = if i % 2 == 0 {
            (rng.mutate(&config), safetensors.clone())
        } else {
            (config.clone(), rng.mutate(&safetensors))
        };
        std::fs::write(dir.join("config.json"), c).unwrap();
        std::fs::write(dir.join("model.safetensors"), s).unwrap();
        tally.run("HF directory", i, || {
            let imported = slm_runtime::import::open(&dir, &mut |_, _| {})?;
            convert_and_exercise(imported, "hf.slm")
        });
    }
    // tokenizer.json: load, then encode and decode a text.
    for i in 0..3000 {
        let j = rng.mutate(&tokenizer);
        tally.run("tokenizer.json", i, || {
            let text = std::str::from_utf8(&j)
                .map_err(|e| SlmError::Invalid(format!("not UTF-8: {e}")))?;
            let t = slm_runtime::tokenizer::Tokenizer::from_json(text)?;
            let ids = t.encode("Hello wörld 🙂 <|im_start|>", true)?;
            t.decode(&ids, false)?;
            Ok(())
        });
    }

    let total: usize = tally.outcomes.values().sum();
    println!("seeded mutation sample, {total} inputs:");
    for (k, n) in &tally.outcomes {
        println!("  {k}: {n}");
    }
    println!("  over {LIMIT:?}: {}", tally.slow.len());
    assert!(tally.panics.is_empty(), "panics: {:#?}", tally.panics);
    assert!(tally.slow.is_empty(), "over the limit: {:#?}", tally.slow);
}
