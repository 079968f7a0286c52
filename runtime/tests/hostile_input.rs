//! Truncated, corrupted and forged inputs get a clear error: no panic, no huge
//! allocation. Synthetic files are built here byte by byte; the real-model cases use the
//! converted SmolLM2.

mod common;

use std::io::Cursor;

use slm_runtime::format::layout::{parse_manifest, Header, HEADER_LEN};
use slm_runtime::format::reader::SlmFile;
use slm_runtime::import::gguf::GgufFile;
use slm_runtime::SlmError;

// ---- a tiny GGUF writer, just for building hostile files ----

fn gstr(b: &mut Vec<u8>, s: &str) {
    b.extend((s.len() as u64).to_le_bytes());
    b.extend(s.as_bytes());
}

/// A valid GGUF v3 with two metadata entries and one 32-element F32 tensor.
fn small_gguf() -> Vec<u8> {
    let mut b = Vec::new();
    b.extend(b"GGUF");
    b.extend(3u32.to_le_bytes());
    b.extend(1u64.to_le_bytes()); // tensors
    b.extend(2u64.to_le_bytes()); // kv
    gstr(&mut b, "general.architecture");
    b.extend(8u32.to_le_bytes());
    gstr(&mut b, "llama");
    gstr(&mut b, "tokenizer.ggml.tokens");
    b.extend(9u32.to_le_bytes());
    b.extend(8u32.to_le_bytes());
    b.extend(2u64.to_le_bytes());
    gstr(&mut b, "a");
    gstr(&mut b, "b");
    gstr(&mut b, "w");
    b.extend(1u32.to_le_bytes());
    b.extend(32u64.to_le_bytes());
    b.extend(0u32.to_le_bytes()); // F32
    b.extend(0u64.to_le_bytes());
    while b.len() % 32 != 0 {
        b.push(0);
    }
    for i in 0..32 {
        b.extend((i as f32).to_le_bytes());
    }
    b
}

fn parse(b: &[u8]) -> Result<GgufFile, SlmError> {
    GgufFile::read(&mut Cursor::new(b.to_vec()))
}

#[test]
fn gguf_valid_file_parses() {
    let g = parse(&small_gguf()).unwrap();
    assert_eq!(g.tensors.len(), 1);
    assert_eq!(
        g.get("general.architecture").unwrap().as_str(),
        Some("llama")
    );
}

#[test]
fn gguf_every_truncation_is_a_clear_error() {
    let full = small_gguf();
    for n in 0..full.len() {
        let e = parse(&full[..n]).expect_err("a truncated GGUF must not parse");
        assert!(matches!(e, SlmError::Malformed { .. }), "prefix {n}: {e}");
    }
}

#[test]
fn gguf_bad_magic_is_named() {
    let mut b = small_gguf();
    b[0] = b'X';
    let e = parse(&b).unwrap_err().to_string();
    assert!(e.contains("magic"), "{e}");
}

#[test]
fn gguf_forged_counts_do_not_allocate() {
    // Array count 2^60 and string length 2^62: refused before any allocation.
    let mut b = small_gguf();
    let pos = b.windows(8).position(|w| w == 2u64.to_le_bytes()).unwrap();
    let arr = b
        .windows(21)
        .position(|w| w == b"tokenizer.ggml.tokens")
        .unwrap()
        + 21
        + 4
        + 4;
    let mut forged = b.clone();
    forged[arr..arr + 8].copy_from_slice(&(1u64 << 60).to_le_bytes());
    assert!(parse(&forged)
        .unwrap_err()
        .to_string()
        .contains("exceeds the file"));
    // A count the bytes left could hold at one byte per item, but not at a string's
    // 8-byte length each: it reserved 32 bytes per item before (32x the file).
    forged = b.clone();
    let left = (b.len() - arr - 8) as u64;
    forged[arr..arr + 8].copy_from_slice(&(left / 2).to_le_bytes());
    assert!(parse(&forged)
        .unwrap_err()
        .to_string()
        .contains("exceeds the file"));
    forged = b.clone();
    forged[pos..pos + 8].copy_from_slice(&(1u64 << 62).to_le_bytes());
    assert!(parse(&forged).is_err());
    // Tensor count beyond what the file could describe.
    b[8 + 4..8 + 4 + 8].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(parse(&b).unwrap_err().to_string().contains("cannot fit"));
}

#[test]
fn gguf_tensor_past_the_end_is_refused() {
    let mut b = small_gguf();
    // The tensor's dims: 32 → 2^40 elements, far past the file.
    let name = b
        .windows(9)
        .position(|w| w == [1, 0, 0, 0, 0, 0, 0, 0, b'w'])
        .unwrap()
        + 9;
    let dims = name + 4;
    b[dims..dims + 8].copy_from_slice(&(1u64 << 40).to_le_bytes());
    let e = parse(&b).unwrap_err().to_string();
    assert!(e.contains("past the end"), "{e}");
}

#[test]
fn gguf_random_corruption_never_panics() {
    let full = small_gguf();
    let mut x = 0x9E3779B97F4A7C15u64;
    for _ in 0..5000 {
        let mut b = full.clone();
        for _ in 0..3 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let i = (x as usize) % b.len();
            b[i] = (x >> 32) as u8;
        }
        let _ = parse(&b);
    }
}

// ---- .slm ----

fn smol_bytes() -> Vec<u8> {
    std::fs::read(common::slm("smollm2", "q4_0")).unwrap()
}

#[test]
fn slm_header_rejects_bad_magic_and_absurd_lengths() {
    let b = smol_bytes();
    let mut bad = b[..HEADER_LEN as usize].to_vec();
    bad[0] = b'x';
    assert!(Header::decode(&bad, Some(b.len() as u64))
        .unwrap_err()
        .to_string()
        .contains("magic"));
    let mut huge = b[..HEADER_LEN as usize].to_vec();
    huge[16..24].copy_from_slice(&u64::MAX.to_le_bytes());
    assert!(Header::decode(&huge, Some(b.len() as u64))
        .unwrap_err()
        .to_string()
        .contains("impossible"));
    assert!(Header::decode(&b[..10], None).is_err());
}

#[test]
fn slm_manifest_tamper_is_a_checksum_error_and_bad_json_is_malformed() {
    let b = smol_bytes();
    let h = Header::decode(&b, Some(b.len() as u64)).unwrap();
    let m = &b[HEADER_LEN as usize..(HEADER_LEN + h.manifest_len) as usize];
    let mut t = m.to_vec();
    t[100] ^= 1;
    assert!(matches!(
        parse_manifest(&h, &t, None),
        Err(SlmError::Checksum { .. })
    ));
    // A forged header hash over invalid JSON: the parser, not the hash, must refuse it.
    let junk = b"{\"format\": \"tinyrustlm.slm\", \"format_version\": ";
    use sha2::Digest;
    let forged = Header {
        version: 1,
        manifest_len: junk.len() as u64,
        manifest_sha256: sha2::Sha256::digest(junk).into(),
    };
    let e = parse_manifest(&forged, junk, None).unwrap_err();
    assert!(matches!(e, SlmError::Malformed { .. }), "{e}");
}

/// Fields a reader slices or allocates by, forged under a valid manifest hash: a short
/// or non-hex SHA-256 (the worker once sliced it and panicked), an unbounded chunk size.
#[test]
fn slm_forged_hashes_and_chunk_sizes_are_refused_on_open() {
    use sha2::Digest;
    let b = smol_bytes();
    let h = Header::decode(&b, Some(b.len() as u64)).unwrap();
    let m: serde_json::Value =
        serde_json::from_slice(&b[HEADER_LEN as usize..(HEADER_LEN + h.manifest_len) as usize])
            .unwrap();
    for (what, path, v, want) in [
        (
            "short data hash",
            "/data/sha256",
            serde_json::json!("abc"),
            "\"abc\" is not a SHA-256",
        ),
        (
            "upper-case chunk hash",
            "/data/chunk_sha256/0",
            serde_json::json!("A".repeat(64)),
            "is not a SHA-256",
        ),
        (
            "huge chunk size",
            "/data/chunk_size",
            serde_json::json!(1u64 << 40),
            "over the limit",
        ),
        (
            "a layer aliasing another's bytes",
            "/tensors/-",
            serde_json::Value::Null,
            "overlap in the data section",
        ),
        (
            "a tensor listed twice",
            "/tensors/=",
            serde_json::Value::Null,
            "is listed twice",
        ),
        (
            "a preset tuned out of its domain",
            "/preset_tuning",
            serde_json::json!({"chat": {"repetition_penalty": 0.0}}),
            "preset tuning chat: repetition_penalty = 0",
        ),
        (
            "a tuning of a preset that does not exist",
            "/preset_tuning",
            serde_json::json!({"wild": {"temperature": 1.0}}),
            "no preset \"wild\"",
        ),
        (
            "a tuning of a field no preset has",
            "/preset_tuning",
            serde_json::json!({"chat": {"seed": 3.0}}),
            "chat.seed: not a preset field",
        ),
        (
            "a tuning that is not numbers",
            "/preset_tuning",
            serde_json::json!({"chat": {"top_k": "all"}}),
            ".slm manifest",
        ),
        (
            "a clarify probe of the wrong width",
            "/clarify_probe",
            probe_json(m["model"]["hidden_size"].as_u64().unwrap() as usize + 1, 0),
            "clarify_probe.weights: 577 values, the hidden size is 576",
        ),
        (
            "a clarify probe below the last layer",
            "/clarify_probe",
            probe_json(576, 30),
            "clarify_probe.layer: 30 is not below the model's 30 layers",
        ),
        (
            "a clarify probe with a field of its own",
            "/clarify_probe",
            {
                let mut p = probe_json(576, 0);
                p["trust_me"] = serde_json::json!(true);
                p
            },
            "unknown field `trust_me`",
        ),
    ] {
        let mut forged = m.clone();
        let tensors = forged["tensors"].as_array_mut().unwrap();
        match path {
            // Another entry on tensor 0's extent, under a name of its own.
            "/tensors/-" => {
                let mut t = tensors[0].clone();
                t["name"] = serde_json::json!("model.layers.9999.self_attn.q_proj.weight");
                tensors.push(t);
            }
            "/tensors/=" => {
                let t = tensors[0].clone();
                tensors.push(t);
            }
            "/preset_tuning" => forged["preset_tuning"] = v,
            "/clarify_probe" => forged["clarify_probe"] = v,
            _ => *forged.pointer_mut(path).unwrap() = v,
        }
        let text = serde_json::to_vec(&forged).unwrap();
        let hdr = Header {
            version: 1,
            manifest_len: text.len() as u64,
            manifest_sha256: sha2::Sha256::digest(&text).into(),
        };
        let e = parse_manifest(&hdr, &text, None).unwrap_err();
        assert!(
            matches!(e, SlmError::Malformed { .. }) && e.to_string().contains(want),
            "{what}: {e}"
        );
    }
}

/// A clarify probe's JSON, `hidden` wide and read after `layer`, its values zero
/// (`clarify::probe::ClarifyProbe`).
fn probe_json(hidden: usize, layer: usize) -> serde_json::Value {
    let slots = slm_runtime::clarify::ALL_SLOTS.len();
    serde_json::json!({
        "layer": layer, "weights": vec![0.0; hidden], "bias": 0.0, "threshold": 0.0, "veto": 0.0,
        "slot_weights": vec![0.0; hidden * slots], "slot_bias": vec![0.0; slots],
        "fit": {"source_sha256": [], "quant": "keep", "sets": [], "control_quantile": 0.97, "veto_quantile": 0.01,
                "held_out": []}
    })
}

#[test]
fn slm_truncated_file_is_refused_on_open() {
    let dir = tempdir();
    let b = smol_bytes();
    for cut in [10usize, 60, 5000, b.len() / 2, b.len() - 1] {
        let p = dir.join(format!("cut{cut}.slm"));
        std::fs::write(&p, &b[..cut]).unwrap();
        let e = SlmFile::open(&p)
            .err()
            .unwrap_or_else(|| panic!("cut at {cut} opened"));
        assert!(
            matches!(e, SlmError::Malformed { .. } | SlmError::Io { .. }),
            "cut {cut}: {e}"
        );
    }
}

#[test]
fn slm_verify_names_the_first_bad_chunk() {
    let dir = tempdir();
    let mut b = smol_bytes();
    let f = SlmFile::open(&common::slm("smollm2", "q4_0")).unwrap();
    let chunk = f.manifest.data.chunk_size as usize;
    let at = f.data_offset() as usize + 7 * chunk + 123;
    b[at] ^= 0x40;
    b[at + 3 * chunk] ^= 0x40;
    let p = dir.join("flipped.slm");
    std::fs::write(&p, &b).unwrap();
    let mut f = SlmFile::open(&p).unwrap();
    match f.verify(&mut |_, _| {}) {
        Err(SlmError::Checksum {
            chunk: Some(7),
            detail,
        }) => assert!(detail.contains("chunk 7"), "{detail}"),
        other => panic!("expected chunk 7 to be named, got {:?}", other.map(|_| ())),
    }
}

// ---- safetensors ----

#[test]
fn safetensors_forged_headers_are_refused() {
    use slm_runtime::import;
    let src = common::source_path("fixture-llama2-tied-f16");
    let dir = tempdir().join("st");
    std::fs::create_dir_all(&dir).unwrap();
    for f in [
        "config.json",
        "tokenizer.json",
        "tokenizer_config.json",
        "generation_config.json",
    ] {
        std::fs::copy(src.join(f), dir.join(f)).unwrap();
    }
    let good = std::fs::read(src.join("model.safetensors")).unwrap();
    let cases: Vec<(&str, Vec<u8>)> = vec![
        ("empty", vec![]),
        ("absurd header length", {
            let mut b = good.clone();
            b[..8].copy_from_slice(&u64::MAX.to_le_bytes());
            b
        }),
        ("bad JSON", {
            let mut b = good.clone();
            b[8] = b'!';
            b
        }),
        ("truncated data", good[..good.len() - 100].to_vec()),
        // An end offset that wraps past 2^64 to land inside the file (its own header).
        ("wrapping offset", {
            let header_len = 128u64;
            let base = 8 + header_len;
            let k = 64u64; // where the wrapped end lands
            let end = (u64::MAX - base) + 1 + k;
            let mut h = format!(
                "{{\"x\":{{\"dtype\":\"F16\",\"shape\":[{}],\"data_offsets\":[0,{end}]}}}}",
                end / 2
            );
            while (h.len() as u64) < header_len {
                h.push(' ');
            }
            let mut b = header_len.to_le_bytes().to_vec();
            b.extend(h.as_bytes());
            b.extend([0u8; 256]);
            b
        }),
    ];
    for (what, bytes) in cases {
        std::fs::write(dir.join("model.safetensors"), &bytes).unwrap();
        match import::open(&dir, &mut |_, _| {}) {
            Ok(_) => panic!("{what}: accepted"),
            Err(e) => assert!(matches!(e, SlmError::Malformed { .. }), "{what}: {e}"),
        }
    }
}

/// A linked file inside a model directory is refused by name: its bytes never reach
/// the output.
#[test]
#[cfg(unix)]
fn hf_dir_symlinks_out_of_the_directory_are_refused() {
    use slm_runtime::import;
    let src = common::source_path("fixture-llama2-tied-f16");
    let dir = tempdir().join("linked");
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dir.join(e.file_name())).unwrap();
    }
    let secret = tempdir().join("secret.jinja");
    std::fs::write(&secret, "{{ 'outside' }}").unwrap();
    std::os::unix::fs::symlink(&secret, dir.join("chat_template.jinja")).unwrap();
    let e = import::open(&dir, &mut |_, _| {})
        .err()
        .expect("a link was followed");
    assert!(
        e.to_string()
            .contains("chat_template.jinja is a symbolic link"),
        "{e}"
    );
    std::fs::remove_file(dir.join("chat_template.jinja")).unwrap();
    std::fs::rename(dir.join("tokenizer.json"), tempdir().join("tok.json")).unwrap();
    std::os::unix::fs::symlink(tempdir().join("tok.json"), dir.join("tokenizer.json")).unwrap();
    let e = import::open(&dir, &mut |_, _| {})
        .err()
        .expect("a link was followed");
    assert!(
        e.to_string().contains("tokenizer.json is a symbolic link"),
        "{e}"
    );
}

fn tempdir() -> std::path::PathBuf {
    let d = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("hostile");
    std::fs::create_dir_all(&d).unwrap();
    d
}

// ---- the template sandbox ----

fn render(template: &str) -> Result<String, SlmError> {
    slm_runtime::template::ChatTemplate::new(template)?.render(
        &serde_json::json!([{"role": "user", "content": "hi"}]),
        None,
        true,
        &serde_json::Map::new(),
        0,
    )
}

/// A template error that says `what`, with no panic on the way.
fn refused(template: &str, what: &str) {
    match render(template) {
        Err(SlmError::Template(m)) => assert!(m.contains(what), "{m}"),
        other => panic!("{:?}", other.map(|s| s.len())),
    }
}

#[test]
fn template_chains_that_overflow_the_compiler_are_refused_by_line() {
    // 10^5 chained filters overflowed the stack while compiling (even `tokenize` died).
    let chain = format!("hello\n{{{{ 'x'{} }}}}", "|e".repeat(100_000));
    refused(&chain, "line 2 of the chat template has 200000 tokens");
    let attrs = format!("{{{{ messages{} }}}}", ".a".repeat(100_000));
    refused(&attrs, "tokens");
    let ops = format!(
        "{{% if {} %}}{{% endif %}}",
        vec!["x"; 50_000].join(" and ")
    );
    refused(&ops, "tokens");
    // What real templates do passes: a long string literal is no chain.
    let literal = format!("{{{{ '{}' }}}}", "a|b.c ".repeat(20_000));
    assert_eq!(render(&literal).unwrap().len(), 120_000);
    // A chain at the limit compiles and renders within wasm's 1 MiB stack.
    let at_limit = format!("{{{{ 'x'{} }}}}", "|trim".repeat(512));
    let small_stack = std::thread::Builder::new().stack_size(1 << 20);
    let out = small_stack
        .spawn(move || render(&at_limit).unwrap())
        .unwrap();
    assert_eq!(out.join().unwrap(), "x");
}

#[test]
fn template_output_and_source_are_bounded() {
    // 100 MB of output in 10^5 loop steps (well within fuel).
    refused(
        "{% for i in range(100000) %}{{ 'x' * 1000 }}{% endfor %}",
        "output is over the sandbox's 16777216 byte limit",
    );
    refused(
        &" ".repeat(2 << 20),
        "over the sandbox's 1048576 byte limit",
    );
}

#[test]
fn template_batch_with_a_huge_count_is_no_allocation() {
    // Stock minijinja reserved `count` slots first: batch(10**18) aborted.
    assert_eq!(
        render("{{ [1, 2, 3]|batch(10**18)|list }}").unwrap(),
        "[[1, 2, 3]]"
    );
    assert_eq!(
        render("{{ [1, 2, 3]|batch(2, 0)|list }}").unwrap(),
        "[[1, 2], [3, 0]]"
    );
    refused(
        "{{ [1]|batch(10**18, 0)|list }}",
        "batch of 1000000000000000000",
    );
    refused("{{ [1]|batch(0)|list }}", "count cannot be 0");
}

/// Templates that grow a value without bound, each refused by the limit it names (no
/// allocation abort, no hang): doubling through a namespace, a sequence, a recursive
/// macro, growing filters and methods, a self-sharing structure through `tojson`, and
/// heavy filters in a loop against the wall-time limit.
#[test]
fn template_memory_and_time_are_bounded() {
    let cases: [(&str, &str); 13] = [
        ("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}",
         "concatenated string is too large"),
        ("{% set ns = namespace(s='x') %}{% for i in range(40) %}{% set ns.s = ns.s + ns.s %}{% endfor %}{{ ns.s|length }}",
         "concatenated string is too large"),
        ("{% set ns = namespace(l=[1]) %}{% for i in range(40) %}{% set ns.l = ns.l + ns.l %}{% endfor %}{{ ns.l|length }}",
         "concatenated sequence is too large"),
        ("{% macro f(s, n) %}{% if n > 0 %}{{ f(s ~ s, n - 1) }}{% else %}{{ s|length }}{% endif %}{% endmacro %}{{ f('x', 40) }}",
         "concatenated string is too large"),
        ("{{ range(100000)|join('y' * 10000000)|length }}", "concatenated string is too large"),
        ("{% set ns = namespace(s='xx') %}{% for i in range(40) %}{% set ns.s = ns.s|replace('x', ns.s) %}{% endfor %}{{ ns.s|length }}",
         "concatenated string is too large"),
        ("{{ 'x'|indent(1000000000000)|length }}", "concatenated string is too large"),
        ("{{ ('x ' * 10000)|replace(' ', 'x' * 100000)|length }}", "concatenated string is too large"),
        ("{{ 'ab'.replace('', 'x' * 60000000)|length }}", "over the sandbox's 100000000 byte limit"),
        ("{{ 'y'.join(['x' * 60000000, 'x' * 60000000])|length }}", "over the sandbox's 100000000 byte limit"),
        ("{% set ns = namespace(d={}) %}{% for i in range(60) %}{% set ns.d = {'a': ns.d, 'b': ns.d} %}{% endfor %}{{ ns.d|tojson|length }}",
         "tojson: the JSON is over the sandbox's 16777216 byte limit"),
        ("{{ [1]|tojson(indent=10**12) }}", "tojson: the JSON is over the sandbox's"),
        ("{% for i in range(100000) %}{{ ('x' * 10000000)|replace('x', 'y')|length }}{% endfor %}",
         "the render ran over the sandbox's time limit of 5000 ms"),
    ];
    for (template, what) in cases {
        let t = std::time::Instant::now();
        refused(template, what);
        assert!(t.elapsed().as_secs() < 20, "{template}: {:?}", t.elapsed());
    }
    // Growth that stays within the bounds still renders.
    assert_eq!(
        render("{% set ns = namespace(s='x') %}{% for i in range(20) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s|length }}").unwrap(),
        "1048576"
    );
}

// ---- tokenizer.json sizes ----

/// SmolLM2's real tokenizer.json, as its .slm carries it.
fn smol_tokenizer_json() -> serde_json::Value {
    let b = smol_bytes();
    let h = Header::decode(&b, Some(b.len() as u64)).unwrap();
    let text = &b[HEADER_LEN as usize..(HEADER_LEN + h.manifest_len) as usize];
    let m = parse_manifest(&h, text, None).unwrap();
    serde_json::from_str(&m.tokenizer.tokenizer_json).unwrap()
}

#[test]
fn tokenizer_padding_and_truncation_from_the_file_never_apply() {
    use slm_runtime::tokenizer::Tokenizer;
    let plain = Tokenizer::from_json(&smol_tokenizer_json().to_string()).unwrap();
    let want = plain
        .encode("The quick brown fox jumps over the lazy dog", false)
        .unwrap();
    let mut j = smol_tokenizer_json();
    // A padding of 2^40 allocated terabytes; a truncation would cut the prompt silently.
    j["padding"] = serde_json::json!({"strategy": {"Fixed": 1u64 << 40}, "direction": "Right",
        "pad_to_multiple_of": null, "pad_id": 0, "pad_type_id": 0, "pad_token": "<|endoftext|>"});
    j["truncation"] = serde_json::json!({"direction": "Right", "max_length": 3,
        "strategy": "LongestFirst", "stride": 0});
    let t = Tokenizer::from_json(&j.to_string()).unwrap();
    assert_eq!(
        t.encode("The quick brown fox jumps over the lazy dog", false)
            .unwrap(),
        want
    );
}

#[test]
fn tokenizer_normalizers_that_multiply_a_text_are_refused() {
    use slm_runtime::tokenizer::Tokenizer;
    let mut j = smol_tokenizer_json();
    let step =
        serde_json::json!({"type": "Replace", "pattern": {"String": "a"}, "content": "aaaa"});
    j["normalizer"] =
        serde_json::json!({"type": "Sequence", "normalizers": vec![step.clone(); 20]});
    let e = Tokenizer::from_json(&j.to_string()).err().expect("refused");
    assert!(e.to_string().contains("grow a text 1099511627776×"), "{e}");
    // SentencePiece's own step (3 bytes for 1) and a couple of them pass.
    let sp = serde_json::json!({"type": "Replace", "pattern": {"String": " "}, "content": "▁"});
    j["normalizer"] = serde_json::json!({"type": "Sequence", "normalizers": [sp.clone(), step]});
    assert!(Tokenizer::from_json(&j.to_string()).is_ok());
}
