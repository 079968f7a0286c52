//! `slm bench`: prefill and decode speed on a loaded model, peak RSS, weight bytes and
//! the decode roofline (weight bytes read per token over measured memory bandwidth).
//! A benchmark, not a test: numbers depend on the machine and its load, so compare
//! ratios measured in the same run.

use std::time::Instant;

use serde_json::{json, Value};
use slm_runtime::engine::{argmax, Engine};
use slm_runtime::model::pages::Pages;
use slm_runtime::model::Scratch;
use slm_runtime::{Result, SlmError};

pub struct BenchArgs {
    pub prompt_tokens: usize,
    pub gen_tokens: usize,
    pub threads: Option<usize>,
}

/// Peak resident set size in bytes (Linux `VmHWM`), if known.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Memory the OS backs with transparent huge pages (Linux; `Pages` asks for them for
/// the weights).
fn anon_huge_pages() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/smaps_rollup").ok()?;
    let line = s.lines().find(|l| l.starts_with("AnonHugePages:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

/// Single-thread sequential read bandwidth in bytes/s over a buffer larger than caches,
/// in the kind of memory the weights live in (`Pages`) and read as decode reads them,
/// with software prefetch ahead (which one thread needs to keep enough lines in flight).
fn read_bandwidth() -> f64 {
    let mut buf = Pages::<i32>::zeroed(64 << 20, true); // 256 MiB
    buf.fill(1);
    let mut best = 0f64;
    for _ in 0..3 {
        let t = Instant::now();
        let mut acc = [0i32; 16];
        for (i, c) in buf.chunks_exact(16).enumerate() {
            #[cfg(target_arch = "x86_64")]
            {
                use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
                // 8 KiB ahead; a prefetch never faults, past the end included.
                let ahead = buf.as_ptr().wrapping_add(16 * i + 2048);
                // Safety: a prefetch has no architectural effect (SSE is baseline x86-64).
                unsafe { _mm_prefetch(ahead as *const i8, _MM_HINT_T0) };
            }
            #[cfg(not(target_arch = "x86_64"))]
            let _ = i;
            for k in 0..16 {
                acc[k] = acc[k].wrapping_add(c[k]);
            }
        }
        std::hint::black_box(acc);
        best = best.max((buf.len() * 4) as f64 / t.elapsed().as_secs_f64());
    }
    best
}

pub fn run(eng: &mut Engine, a: &BenchArgs) -> Result<Value> {
    if let Some(t) = a.threads {
        eng.model.threads = slm_runtime::parallel::Threads::new(t)
            .map_err(|e| SlmError::Invalid(format!("--threads: {e}")))?;
    }
    // Chosen again for the thread count this run uses.
    let width = eng.model.tune_decode_width(&slm_runtime::engine::now_ms)?;
    let cfg = eng.model.cfg.clone();
    let total = a.prompt_tokens + a.gen_tokens;
    if a.prompt_tokens == 0 || total > eng.context_len() {
        return Err(SlmError::Invalid(format!(
            "--prompt-tokens {} + --gen-tokens {} must be ≥ 1 and fit the context ({})",
            a.prompt_tokens,
            a.gen_tokens,
            eng.context_len()
        )));
    }
    // A deterministic prompt of ordinary text tokens.
    let mut ids = eng.text.tokenizer.encode(
        &"The quick brown fox jumps over the lazy dog. ".repeat(a.prompt_tokens),
        false,
    )?;
    ids.truncate(a.prompt_tokens);
    let mut cache = eng.model.new_cache(total);
    let mut s = Scratch::new(&cfg, total);

    // Warm-up, not timed (llama-bench does the same): the whole prompt and one decode
    // step, so that the timed run finds the KV cache and buffers mapped, the tile
    // state granted and the caches warm, as a long-lived engine would.
    eng.model.prefill(&ids, &mut cache, &mut s)?;
    eng.model
        .forward(argmax(&s.logits), &mut cache, &mut s, true)?;
    cache.truncate(0);

    let t = Instant::now();
    eng.model.prefill(&ids, &mut cache, &mut s)?;
    let prefill_s = t.elapsed().as_secs_f64();

    // Decode exactly gen_tokens steps (EOS ignored), greedy.
    let t = Instant::now();
    for _ in 0..a.gen_tokens {
        let next = argmax(&s.logits);
        eng.model.forward(next, &mut cache, &mut s, true)?;
    }
    let decode_s = t.elapsed().as_secs_f64();

    let weight_bytes = eng.model.weight_bytes() as f64;
    // Before the bandwidth probe, whose 256 MiB buffer would count as model memory.
    let rss = peak_rss();
    let huge = anon_huge_pages();
    let bw = read_bandwidth();
    let decode_tok_s = a.gen_tokens as f64 / decode_s;
    Ok(json!({
        "model": {"architecture": cfg.architecture, "quant": eng.text.manifest.provenance.quant, "layers": cfg.num_layers},
        "threads": eng.model.threads.count(),
        "kernel": slm_runtime::kernels::active().name,
        "decode_width": width,
        "activation_bits": slm_runtime::kernels::act_bits(),
        "prompt_tokens": ids.len(),
        "gen_tokens": a.gen_tokens,
        "prefill_tok_s": ids.len() as f64 / prefill_s,
        "decode_tok_s": decode_tok_s,
        "weight_bytes": weight_bytes as u64,
        "kv_bytes": cache.bytes(),
        "peak_rss_bytes": rss,
        "huge_page_bytes": huge,
        "read_bandwidth_gb_s": bw / 1e9,
        "decode_roofline_tok_s": bw / weight_bytes,
        "decode_fraction_of_roofline": decode_tok_s / (bw / weight_bytes),
    }))
}

/// `slm bench --paths`: every kernel path this machine has, each measured by this
/// binary in a child process with `SLM_KERNEL` set (a path is chosen once per process,
/// and weights are laid out for it at load), the paths alternated within each round.
/// Reports each path's median prefill and decode, the default path, and whether the
/// default is the fastest at each (a machine where it is not shows that the order in
/// `kernels::available` needs another look).
pub fn paths(
    model: &std::path::Path,
    prompt_tokens: usize,
    gen_tokens: usize,
    threads: Option<usize>,
    rounds: usize,
) -> Result<Value> {
    if rounds == 0 {
        return Err(SlmError::Invalid("--rounds must be at least 1".into()));
    }
    let names: Vec<&str> = slm_runtime::kernels::available()
        .iter()
        .map(|k| k.name)
        .collect();
    let exe = std::env::current_exe().map_err(|e| SlmError::io("the slm binary", e))?;
    let mut runs: Vec<Vec<(f64, f64)>> = vec![Vec::new(); names.len()];
    for round in 0..rounds {
        // Alternate which path goes first.
        let order: Vec<usize> = if round % 2 == 0 {
            (0..names.len()).collect()
        } else {
            (0..names.len()).rev().collect()
        };
        for i in order {
            let mut cmd = std::process::Command::new(&exe);
            cmd.env("SLM_KERNEL", names[i]).args([
                "--json".as_ref(),
                "bench".as_ref(),
                model.as_os_str(),
                "--prompt-tokens".as_ref(),
                prompt_tokens.to_string().as_ref(),
                "--gen-tokens".as_ref(),
                gen_tokens.to_string().as_ref(),
            ]);
            if let Some(t) = threads {
                cmd.args(["--threads", &t.to_string()]);
            }
            let out = cmd.output().map_err(|e| SlmError::io(exe.display(), e))?;
            if !out.status.success() {
                return Err(SlmError::Invalid(format!(
                    "bench with SLM_KERNEL={}: {}",
                    names[i],
                    String::from_utf8_lossy(&out.stderr).trim()
                )));
            }
            let r: Value = serde_json::from_slice(&out.stdout)
                .map_err(|e| SlmError::Invalid(format!("bench output: {e}")))?;
            let f = |k: &str| r[k].as_f64().unwrap_or(f64::NAN);
            runs[i].push((f("prefill_tok_s"), f("decode_tok_s")));
        }
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let rows: Vec<Value> = names
        .iter()
        .zip(&runs)
        .map(|(name, r)| {
            json!({
                "kernel": name,
                "prefill_tok_s": median(r.iter().map(|x| x.0).collect()),
                "decode_tok_s": median(r.iter().map(|x| x.1).collect()),
                "rounds": r.iter().map(|x| json!({"prefill_tok_s": x.0, "decode_tok_s": x.1})).collect::<Vec<_>>(),
            })
        })
        .collect();
    let best = |k: &str| {
        rows.iter()
            .max_by(|a, b| {
                a[k].as_f64()
                    .unwrap_or(0.0)
                    .total_cmp(&b[k].as_f64().unwrap_or(0.0))
            })
            .map(|r| r["kernel"].clone())
            .unwrap_or(Value::Null)
    };
    let default = slm_runtime::kernels::available()[0].name;
    let (bp, bd) = (best("prefill_tok_s"), best("decode_tok_s"));
    Ok(json!({
        "cpu": cpu_model(),
        "default": default,
        "fastest_prefill": bp,
        "fastest_decode": bd,
        "default_is_fastest": bp == default && bd == default,
        "prompt_tokens": prompt_tokens,
        "gen_tokens": gen_tokens,
        "rounds": rounds,
        "paths": rows,
    }))
}

/// `paths`' result as a table.
pub fn paths_table(r: &Value) -> String {
    let mut s = format!(
        "{} · {} rounds · pp{}/tg{}\n| path | prefill tok/s | decode tok/s |\n|---|---:|---:|\n",
        r["cpu"].as_str().unwrap_or("?"),
        r["rounds"],
        r["prompt_tokens"],
        r["gen_tokens"]
    );
    for p in r["paths"].as_array().into_iter().flatten() {
        let mark = if p["kernel"] == r["default"] {
            " (default)"
        } else {
            ""
        };
        s += &format!(
            "| {}{} | {:.1} | {:.1} |\n",
            p["kernel"].as_str().unwrap_or("?"),
            mark,
            p["prefill_tok_s"].as_f64().unwrap_or(0.0),
            p["decode_tok_s"].as_f64().unwrap_or(0.0)
        );
    }
    s += &format!(
        "fastest: prefill {}, decode {}{}\n",
        r["fastest_prefill"].as_str().unwrap_or("?"),
        r["fastest_decode"].as_str().unwrap_or("?"),
        if r["default_is_fastest"] == true {
            ""
        } else {
            " (not the default: see kernels::available)"
        }
    );
    s
}

/// The CPU's model name and the SIMD flags that choose kernel paths (Linux).
pub fn cpu_model() -> String {
    let info = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
    let field = |k: &str| {
        info.lines()
            .find(|l| l.starts_with(k))
            .and_then(|l| l.split_once(':'))
            .map(|(_, v)| v.trim().to_string())
            .unwrap_or_default()
    };
    let flags = field("flags");
    let simd: Vec<&str> = flags
        .split_whitespace()
        .filter(|f| f.starts_with("avx") || f.starts_with("amx") || ["fma", "f16c"].contains(f))
        .collect();
    format!("{} [{}]", field("model name"), simd.join(" "))
}
