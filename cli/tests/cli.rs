//! The `slm` binary as a user meets it: exit codes, stderr diagnostics, `--json`, and
//! refusals that name the field and leave no output file behind.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

fn cache() -> PathBuf {
    std::env::var_os("TINYRUSTLM_CACHE")
        .map(PathBuf::from)
        .unwrap_or_else(|| {
            PathBuf::from(std::env::var_os("HOME").unwrap()).join(".cache/tinyrustlm")
        })
}

fn tmp(name: &str) -> PathBuf {
    let d = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("cli");
    std::fs::create_dir_all(&d).unwrap();
    d.join(name)
}

fn slm(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_slm"))
        .args(args)
        .output()
        .unwrap()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn smol_gguf() -> PathBuf {
    let p = cache().join("models/SmolLM2-135M-Instruct.Q4_1.gguf");
    assert!(p.exists(), "run scripts/fetch-models.sh first");
    p
}

/// SmolLM2 converted once for this test binary, in f32: the CLI's outputs are then the
/// transformers goldens themselves (a quantized model may flip near-ties: SmolLM2's
/// "The"/"L" for the France prompt is 0.08 apart in f32).
fn smol_slm() -> PathBuf {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let out = tmp("smol-f32.slm");
    ONCE.call_once(|| {
        let o = slm(&[
            "convert",
            smol_gguf().to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quant",
            "f32",
        ]);
        assert!(o.status.success(), "convert failed: {}", stderr(&o));
    });
    out
}

/// Qwen2.5-Coder-0.5B-Instruct Q4_K_M converted once for this test binary, every
/// tensor kept (the default policy).
fn qwen_slm() -> PathBuf {
    static ONCE: std::sync::Once = std::sync::Once::new();
    let out = tmp("qwen-default.slm");
    ONCE.call_once(|| {
        let gguf = cache().join("models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
        assert!(gguf.exists(), "run scripts/fetch-models.sh first");
        let o = slm(&[
            "convert",
            gguf.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "convert failed: {}", stderr(&o));
    });
    out
}

/// `slm chat` with `stdin` piped in.
fn chat(args: &[&str], stdin: &str) -> Output {
    use std::io::Write;
    let mut c = Command::new(env!("CARGO_BIN_EXE_slm"))
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A child that exits before reading all of its input closes the pipe: its output
    // and stderr, not this write, must tell the test what happened.
    if let Err(e) = c.stdin.take().unwrap().write_all(stdin.as_bytes()) {
        assert_eq!(e.kind(), std::io::ErrorKind::BrokenPipe, "{e}");
    }
    c.wait_with_output().unwrap()
}

/// Every JSON value printed one after another (pretty-printed records).
fn json_stream(out: &[u8]) -> Vec<Value> {
    serde_json::Deserializer::from_slice(out)
        .into_iter::<Value>()
        .map(|v| v.unwrap())
        .collect()
}

/// With tools, Qwen's reply is a tool call, parsed as data; `/tool` answers it with a
/// `tool` message and the model goes on. The first prompt is the one `slm render
/// --tools` gives (which the template goldens check against transformers); the call
/// is rendered back with the template's tags, which the model left out, so the second
/// turn reports the divergence where the reply starts.
#[test]
fn chat_parses_a_tool_call_and_continues_with_its_result() {
    let model = qwen_slm();
    let tools = tmp("weather-tools.json");
    std::fs::write(
        &tools,
        r#"[{"type": "function", "function": {"name": "get_weather", "description": "Get the current weather in a city", "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}]"#,
    )
    .unwrap();
    let (m, t) = (model.to_str().unwrap(), tools.to_str().unwrap());
    let o = chat(
        &["--json", "chat", m, "--tools", t, "--max-tokens", "40"],
        "What is the weather in Paris right now?\n/tool {\"temperature_c\": 18}\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let turns = json_stream(&o.stdout);
    assert_eq!(turns.len(), 2, "{turns:?}");
    assert_eq!(
        turns[0]["tool_calls"],
        serde_json::json!([{"name": "get_weather", "arguments": {"city": "Paris"}}])
    );
    assert_eq!(turns[0]["stop_reason"], "eos_token");
    assert_eq!(turns[0]["tool_errors"], serde_json::json!([]));
    // The first turn's prompt: the template with the tools, as `render` has it.
    let msgs = tmp("weather-messages.json");
    std::fs::write(
        &msgs,
        r#"[{"role": "user", "content": "What is the weather in Paris right now?"}]"#,
    )
    .unwrap();
    let r = slm(&[
        "--json",
        "tokenize",
        m,
        "--messages",
        msgs.to_str().unwrap(),
        "--tools",
        t,
    ]);
    assert!(r.status.success(), "{}", stderr(&r));
    let ids = serde_json::from_slice::<Value>(&r.stdout).unwrap()["ids"]
        .as_array()
        .unwrap()
        .len();
    assert_eq!(turns[0]["prompt_tokens"], ids);
    // The answer went in as a tool message after the parsed call.
    let d = &turns[1]["divergence"];
    assert_eq!(d["position"], ids, "{d}");
    assert!(
        d["explanation"].as_str().unwrap().contains("<tool_call>"),
        "{d}"
    );
    assert!(turns[1]["prompt_tokens"].as_u64().unwrap() > ids as u64 + 16);
    // Without a call to answer, /tool is refused.
    let o = chat(
        &["chat", m, "--tools", t, "--max-tokens", "4"],
        "/tool 18\n",
    );
    assert!(
        stderr(&o).contains("no tool call to answer"),
        "{}",
        stderr(&o)
    );
}

/// The page's catalog (`public/models.json`) lists the very files `scripts/model.sh`
/// makes: size, whole-file SHA-256 and memory needs of both conversions, and gate
/// evidence bound to them.
#[test]
fn the_shipped_catalog_lists_these_conversions() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let catalog: Value =
        serde_json::from_str(&std::fs::read_to_string(repo.join("public/models.json")).unwrap())
            .unwrap();
    let probe = |id: &str| repo.join(format!("eval/clarify_probe/{id}.json"));
    // scripts/model.sh's arguments for each model.
    let convert = |id: &str, gguf: PathBuf, args: &[&str]| {
        let out = tmp(&format!("{id}.slm"));
        let p = probe(id);
        let mut a = vec![
            "convert",
            gguf.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ];
        a.extend_from_slice(args);
        a.extend_from_slice(&["--clarify-probe", p.to_str().unwrap()]);
        let o = slm(&a);
        assert!(o.status.success(), "{}", stderr(&o));
        out
    };
    let smol = convert(
        "smollm2-135m-instruct",
        smol_gguf(),
        &[
            "--quant",
            "q8_0",
            "--tune-preset",
            "chat.repetition_penalty=1.1",
        ],
    );
    let qwen = convert(
        "qwen2.5-coder-0.5b-instruct",
        cache().join("models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf"),
        &[],
    );
    for (id, file) in [
        ("smollm2-135m-instruct", smol),
        ("qwen2.5-coder-0.5b-instruct", qwen),
    ] {
        let e = catalog
            .as_array()
            .unwrap()
            .iter()
            .find(|e| e["id"] == id)
            .unwrap_or_else(|| panic!("{id} is not in the catalog"));
        let bytes = std::fs::read(&file).unwrap();
        assert_eq!(e["size"], bytes.len(), "{id}");
        let sha = slm_runtime::format::layout::sha256_hex(&bytes);
        assert_eq!(e["sha256"], sha, "{id}: regenerate public/models.json");
        let v: Value =
            serde_json::from_slice(&slm(&["--json", "inspect", file.to_str().unwrap()]).stdout)
                .unwrap();
        assert_eq!(e["memory"], v["memory"]["needs"], "{id}");
        let ev: Value = serde_json::from_str(
            &std::fs::read_to_string(repo.join("public").join(e["evidence"].as_str().unwrap()))
                .unwrap(),
        )
        .unwrap();
        assert_eq!(ev["file"]["data_sha256"], v["data"]["sha256"], "{id}");
        assert_eq!(ev["verdict"], "reference-verified", "{id}");
    }
}

/// The committed clarify results are the scorer's reading of the committed replies:
/// a change to the rubric (cli/src/score.rs) must re-score them.
#[test]
fn committed_clarify_results_are_the_committed_replies_scored() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    for id in ["qwen2.5-coder-0.5b-instruct", "smollm2-135m-instruct"] {
        let replies = repo.join(format!("eval/results/{id}.replies.jsonl"));
        let o = Command::new(env!("CARGO_BIN_EXE_slm"))
            .current_dir(&repo)
            .args(["--json", "eval", "clarify", &format!("{id}.slm"), "--from"])
            .arg(&replies)
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let committed =
            std::fs::read_to_string(repo.join(format!("eval/results/{id}.clarify.json"))).unwrap();
        assert!(
            String::from_utf8_lossy(&o.stdout) == committed,
            "{id}: re-score with `slm --json eval clarify {id}.slm --from eval/results/{id}.replies.jsonl`"
        );
        // The unseen author's replies: their recorded verdicts are the scorer's today.
        let unseen = format!("eval/probes/{id}.unseen.replies.jsonl");
        let o = Command::new(env!("CARGO_BIN_EXE_slm"))
            .current_dir(&repo)
            .args([
                "--json",
                "eval",
                "clarify",
                &format!("{id}.slm"),
                "--policy",
                "on",
            ])
            .args([
                "--set",
                "eval/probes/clarify_probe23.jsonl",
                "--from",
                &unseen,
            ])
            .output()
            .unwrap();
        assert!(o.status.success(), "{}", stderr(&o));
        let report: Value = serde_json::from_slice(&o.stdout).unwrap();
        let total = &report["sets"][0]["results"][0]["total"];
        let recorded: Vec<Value> = std::fs::read_to_string(repo.join(&unseen))
            .unwrap()
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .filter(|r: &Value| r["underspecified"] == true)
            .collect();
        let useful = recorded.iter().filter(|r| r["useful"] == true).count() as f64;
        let rate = total["useful_clarification_rate"].as_f64().unwrap();
        assert!(
            (rate * recorded.len() as f64 - useful).abs() < 1e-6,
            "{id}: {unseen} records {useful} useful, the scorer now reads {rate}"
        );
    }
}

/// The catalog's behaviour figures are the committed results of `slm eval`
/// (eval/results/*.json): policy on, all sets pooled; loops under the chat preset.
#[test]
fn the_catalog_states_the_measured_behaviour_gate() {
    let repo = Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
    let read = |p: &str| -> Value {
        serde_json::from_str(&std::fs::read_to_string(repo.join(p)).unwrap()).unwrap()
    };
    let catalog = read("public/models.json");
    let mut checked = 0;
    for e in catalog.as_array().unwrap() {
        let Some(b) = e.get("behaviour") else {
            continue;
        };
        let id = e["id"].as_str().unwrap();
        let clarify = read(&format!("eval/results/{id}.clarify.json"));
        // (count, of) pooled over the sets, from each set's rate and size.
        let mut pooled = std::collections::BTreeMap::<&str, (f64, f64)>::new();
        for set in clarify["sets"].as_array().unwrap() {
            let on = set["results"]
                .as_array()
                .unwrap()
                .iter()
                .find(|r| r["policy"] == true)
                .unwrap();
            let t = &on["total"];
            for (rate, of) in [
                ("useful_clarification_rate", "underspecified"),
                ("false_clarification_rate", "controls"),
                ("fabrication_rate", "no_answer"),
            ] {
                let n = t[of].as_f64().unwrap();
                let x = pooled.entry(rate).or_default();
                x.0 += t[rate].as_f64().unwrap_or(0.0) * n;
                x.1 += n;
            }
        }
        let rate = |k: &str| pooled[k].0 / pooled[k].1;
        let loops = read(&format!("eval/results/{id}.loops.json"));
        let chat = &loops["results"][0];
        assert!(chat["config"].as_str().unwrap().starts_with("chat preset"));
        for (field, measured) in [
            ("useful_clarification", rate("useful_clarification_rate")),
            ("false_clarification", rate("false_clarification_rate")),
            ("fabrication", rate("fabrication_rate")),
            ("loops", chat["loop_rate"].as_f64().unwrap()),
            (
                "natural_termination",
                chat["natural_rate"].as_f64().unwrap(),
            ),
        ] {
            let card = b[field].as_f64().unwrap();
            assert!(
                (card - measured).abs() < 0.0006,
                "{id}: the card says {field} {card}, eval/results says {measured:.4}"
            );
        }
        // The hand-read figure is the labels (eval/labels.jsonl) of the committed
        // replies in the every-ninth-prompt samples of final replies: a label counts
        // only while its text is the reply the results hold.
        // Those samples' batches end in "-final", and their replies relabelled after a
        // change in "-final-now".
        let final_sample = |b: &str| b.ends_with("-final") || b.ends_with("-final-now");
        let replies =
            std::fs::read_to_string(repo.join(format!("eval/results/{id}.replies.jsonl"))).unwrap();
        let committed: std::collections::HashMap<(String, String), String> = replies
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .filter(|r| r["policy"] == true)
            .map(|r| {
                let key = (
                    r["file"].as_str().unwrap().to_string(),
                    r["id"].as_str().unwrap().to_string(),
                );
                (key, r["text"].as_str().unwrap().to_string())
            })
            .collect();
        let mut hand = std::collections::BTreeMap::new();
        for l in std::fs::read_to_string(repo.join("eval/labels.jsonl"))
            .unwrap()
            .lines()
        {
            let r: Value = serde_json::from_str(l).unwrap();
            let key = (
                r["file"].as_str().unwrap().to_string(),
                r["id"].as_str().unwrap().to_string(),
            );
            if r["model"] == id
                && r["label_means"] == "useful clarification"
                && final_sample(r["batch"].as_str().unwrap_or(""))
                && committed.get(&key).map(String::as_str) == r["text"].as_str()
            {
                hand.insert(key, r["label"].as_bool().unwrap());
            }
        }
        // A card's (useful, of) figure, or its absence, against the count behind it.
        let agree = |card: Option<&Value>, counted: Option<(usize, usize)>, what: &str| match (
            card, counted,
        ) {
            (Some(c), Some((useful, of))) => {
                assert_eq!(c["of"].as_u64().unwrap() as usize, of, "{id}: {what} size");
                assert_eq!(
                    c["useful"].as_u64().unwrap() as usize,
                    useful,
                    "{id}: {what} useful"
                );
            }
            (None, None) => {}
            (c, n) => panic!("{id}: the card's {what} ({c:?}) and the count ({n:?}) disagree"),
        };
        let useful = hand.values().filter(|l| **l).count();
        agree(
            b.get("useful_by_hand"),
            (!hand.is_empty()).then_some((useful, hand.len())),
            "hand-read sample",
        );
        // The unseen author's set: the scorer's verdicts on its underspecified prompts,
        // policy on, as eval/probes holds them.
        let unseen =
            std::fs::read_to_string(repo.join(format!("eval/probes/{id}.unseen.replies.jsonl")))
                .ok()
                .map(|text| {
                    let rows: Vec<Value> = text
                        .lines()
                        .map(|l| serde_json::from_str::<Value>(l).unwrap())
                        .filter(|r| r["policy"] == true && r["underspecified"] == true)
                        .collect();
                    (
                        rows.iter().filter(|r| r["useful"] == true).count(),
                        rows.len(),
                    )
                });
        agree(b.get("useful_unseen"), unseen, "unseen author's set");
        checked += 1;
    }
    assert_eq!(checked, 2, "both catalog models carry their gate");
}

/// `inspect` plans the memory a model needs before a byte of it is loaded: weights as
/// stored, f32 K and V per position, and the buffers.
#[test]
fn inspect_plans_memory_from_the_manifest() {
    let o = slm(&["--json", "inspect", qwen_slm().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let n = &v["memory"]["needs"];
    let stored: u64 = v["tensors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["length"].as_u64().unwrap())
        .sum();
    assert_eq!(n["weights"], stored);
    // 24 layers × 2 KV heads × 64 × (K and V) × 4 bytes.
    assert_eq!(n["kv_per_position"], 24 * 2 * 64 * 2 * 4);
    assert_eq!(n["max_context"], 32768);
    let p = &v["memory"]["plan"];
    assert_eq!(p["context"], 32768);
    assert_eq!(p["kv"], 24 * 2 * 64 * 2 * 4 * 32768);
    let total = p["total"].as_u64().unwrap();
    assert_eq!(
        total,
        stored + p["kv"].as_u64().unwrap() + p["other"].as_u64().unwrap()
    );
}

fn golden_case(name: &str) -> Value {
    let p = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reference/goldens/smollm2.json");
    let g: Value = serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap();
    g["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["name"] == name)
        .unwrap()
        .clone()
}

fn write_messages(name: &str, case: &Value) -> PathBuf {
    let p = tmp(&format!("{name}.messages.json"));
    std::fs::write(&p, serde_json::to_string(&case["messages"]).unwrap()).unwrap();
    p
}

/// A copy of an HF fixture directory with one config.json field replaced.
fn fixture_with(name: &str, key: &str, value: Value) -> PathBuf {
    let src = cache().join("fixtures/llama3-untied-bf16");
    let dst = tmp(name);
    std::fs::create_dir_all(&dst).unwrap();
    for e in std::fs::read_dir(&src).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), dst.join(e.file_name())).unwrap();
    }
    let mut cfg: Value =
        serde_json::from_str(&std::fs::read_to_string(dst.join("config.json")).unwrap()).unwrap();
    cfg[key] = value;
    std::fs::write(dst.join("config.json"), cfg.to_string()).unwrap();
    dst
}

#[test]
fn render_is_byte_identical_to_transformers() {
    for name in ["multi_turn_system", "emoji_zwj", "tabs_crlf"] {
        let case = golden_case(name);
        let m = write_messages(name, &case);
        let o = slm(&[
            "render",
            smol_slm().to_str().unwrap(),
            "--messages",
            m.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            case["rendered"].as_str().unwrap(),
            "{name}"
        );
        let o = slm(&[
            "render",
            smol_slm().to_str().unwrap(),
            "--messages",
            m.to_str().unwrap(),
            "--no-generation-prompt",
        ]);
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            case["rendered_no_generation_prompt"].as_str().unwrap()
        );
    }
}

/// `--continue-final-message` leaves the assistant's message open, as transformers'
/// continue_final_message: the closed render (byte-identical to transformers, above)
/// cut after the message's text. The model then continues that text. A final message
/// that is not the assistant's is refused.
#[test]
fn render_continues_the_final_message() {
    let mut case = golden_case("multi_turn_system");
    let lead = "To help with that, I need to know";
    case["messages"]
        .as_array_mut()
        .unwrap()
        .push(serde_json::json!({"role": "assistant", "content": lead}));
    let m = write_messages("continued", &case);
    let render = |flag: &str| {
        let o = slm(&[
            "render",
            smol_slm().to_str().unwrap(),
            "--messages",
            m.to_str().unwrap(),
            flag,
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        String::from_utf8(o.stdout).unwrap()
    };
    let closed = render("--no-generation-prompt");
    let open = render("--continue-final-message");
    let end = closed.rfind(lead).unwrap() + lead.len();
    assert_eq!(open, closed[..end]);
    assert!(closed.len() > open.len(), "the closed render ends the turn");
    let o = slm(&[
        "--json",
        "generate",
        smol_slm().to_str().unwrap(),
        "--messages",
        m.to_str().unwrap(),
        "--continue-final-message",
        "--max-tokens",
        "8",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let g: Value = serde_json::from_slice(&o.stdout).unwrap();
    // The reply goes on from the lead instead of ending the closed turn.
    assert!(!g["ids"].as_array().unwrap().is_empty(), "{g}");
    let user_last = write_messages("user-last", &golden_case("multi_turn_system"));
    let o = slm(&[
        "render",
        smol_slm().to_str().unwrap(),
        "--messages",
        user_last.to_str().unwrap(),
        "--continue-final-message",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("assistant"), "{}", stderr(&o));
}

#[test]
fn tokenize_json_gives_ids_and_rendered_text() {
    let case = golden_case("special_in_text");
    let m = write_messages("tok", &case);
    let o = slm(&[
        "--json",
        "tokenize",
        smol_slm().to_str().unwrap(),
        "--messages",
        m.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ids"], case["ids"]);
    assert_eq!(v["rendered"], case["rendered"]);
    // --text parses special-token strings, as transformers does by default.
    let tc = &case["text_cases"][0];
    let o = slm(&[
        "--json",
        "tokenize",
        smol_slm().to_str().unwrap(),
        "--text",
        tc["text"].as_str().unwrap(),
    ]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ids"], tc["ids"]);
}

#[test]
fn generate_json_reports_ids_text_and_stop_reason() {
    let case = golden_case("plain_ascii");
    let m = write_messages("gen", &case);
    let o = slm(&[
        "--json",
        "generate",
        smol_slm().to_str().unwrap(),
        "--messages",
        m.to_str().unwrap(),
        "--max-tokens",
        "3",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ids"].as_array().unwrap().len(), 3);
    assert_eq!(v["stop_reason"], "max_tokens");
    assert!(
        v["text"].as_str().unwrap().starts_with("The capital"),
        "{v}"
    );
}

#[test]
fn logits_file_is_vocab_sized_f32() {
    let case = golden_case("plain_ascii");
    let m = write_messages("logits", &case);
    let out = tmp("plain.f32");
    let o = slm(&[
        "logits",
        smol_slm().to_str().unwrap(),
        "--messages",
        m.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let b = std::fs::read(&out).unwrap();
    assert_eq!(b.len(), 49152 * 4);
    let l: Vec<f32> = b
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    let top = (0..l.len()).max_by(|&a, &b| l[a].total_cmp(&l[b])).unwrap();
    assert_eq!(
        top as u64,
        case["logits"]["top_ids"][0].as_u64().unwrap(),
        "top-1 is the golden's"
    );
}

#[test]
fn inspect_and_verify_json() {
    let o = slm(&["--json", "inspect", smol_slm().to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["model"]["num_layers"], 30);
    assert_eq!(v["model"]["num_kv_heads"], 3);
    assert_eq!(v["stop"]["eos_token_ids"], serde_json::json!([0, 2]));
    assert_eq!(
        v["provenance"]["source_files"][0]["sha256"],
        "b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53"
    );
    assert_eq!(v["provenance"]["quality_gate"], "unverified");
    let o = slm(&["--json", "verify", smol_slm().to_str().unwrap()]);
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(v["ok"], true);
    assert_eq!(v["file_sha256"].as_str().unwrap().len(), 64);
}

#[test]
fn verify_names_the_bad_chunk_with_nonzero_exit() {
    let mut b = std::fs::read(smol_slm()).unwrap();
    let n = b.len();
    b[n - 10] ^= 0xff; // inside the last chunk
    let p = tmp("corrupt.slm");
    std::fs::write(&p, &b).unwrap();
    let o = slm(&["--json", "verify", p.to_str().unwrap()]);
    assert_eq!(o.status.code(), Some(1));
    let e: Value = serde_json::from_str(stderr(&o).trim()).unwrap();
    assert_eq!(e["error"]["kind"], "checksum");
    assert!(
        e["error"]["message"].as_str().unwrap().contains("chunk"),
        "{e}"
    );
}

#[test]
fn unsupported_models_are_refused_by_field_with_no_output_left() {
    let cases = [
        (
            "arch",
            "architectures",
            serde_json::json!(["MistralForCausalLM"]),
            "architectures",
        ),
        (
            "rope",
            "rope_scaling",
            serde_json::json!({"rope_type": "yarn", "factor": 4.0}),
            "rope_scaling.rope_type = \"yarn\"",
        ),
        (
            "act",
            "hidden_act",
            serde_json::json!("gelu"),
            "hidden_act = \"gelu\"",
        ),
        (
            "swa",
            "use_sliding_window",
            serde_json::json!(true),
            "use_sliding_window",
        ),
        // A key no fate covers: refused by name and value, not ignored.
        (
            "unknown",
            "logit_soft_cap",
            serde_json::json!(30.0),
            "config.json logit_soft_cap = 30.0",
        ),
        // transformers 5's layout, with a θ that disagrees with the v4 key.
        (
            "rope-v5-disagrees",
            "rope_parameters",
            serde_json::json!({"rope_type": "default", "rope_theta": 10000.0}),
            "rope_theta = 500000",
        ),
        (
            "rope-v5-yarn",
            "rope_parameters",
            serde_json::json!({"rope_type": "yarn", "rope_theta": 10000.0, "factor": 4.0}),
            "rope_parameters.rope_type = \"yarn\"",
        ),
    ];
    for (name, key, value, want) in cases {
        let dir = fixture_with(&format!("bad-{name}"), key, value);
        let out = tmp(&format!("bad-{name}.slm"));
        let o = slm(&[
            "convert",
            dir.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert_eq!(o.status.code(), Some(1), "{name}");
        assert!(stderr(&o).contains(want), "{name}: {}", stderr(&o));
        assert!(
            !out.exists() && !out.with_extension("slm.partial").exists(),
            "{name}: output left behind"
        );
    }
}

#[test]
fn bad_input_gets_clear_errors_not_panics() {
    let model = smol_slm();
    let bad_json = tmp("bad.json");
    std::fs::write(&bad_json, "[{\"role\": \"user\", \"content\": ").unwrap();
    let not_utf8 = tmp("latin1.json");
    std::fs::write(
        &not_utf8,
        b"[{\"role\": \"user\", \"content\": \"caf\xe9\"}]",
    )
    .unwrap();
    let no_role = tmp("norole.json");
    std::fs::write(&no_role, "[{\"content\": \"hi\"}]").unwrap();
    let gguf = smol_gguf();
    let not_slm = tmp("not.slm");
    std::fs::write(&not_slm, b"hello").unwrap();
    let runs: Vec<(Vec<&str>, &str)> = vec![
        (
            vec![
                "render",
                model.to_str().unwrap(),
                "--messages",
                bad_json.to_str().unwrap(),
            ],
            "EOF",
        ),
        (
            vec![
                "render",
                model.to_str().unwrap(),
                "--messages",
                not_utf8.to_str().unwrap(),
            ],
            "not UTF-8",
        ),
        (
            vec![
                "render",
                model.to_str().unwrap(),
                "--messages",
                no_role.to_str().unwrap(),
            ],
            "role",
        ),
        (vec!["inspect", not_slm.to_str().unwrap()], "header"),
        (vec!["inspect", "/nonexistent.slm"], "No such file"),
        (
            vec!["convert", "/nonexistent.gguf", "-o", "/tmp/x.slm"],
            "no such file",
        ),
        (
            vec![
                "convert",
                gguf.to_str().unwrap(),
                "-o",
                "/tmp/x.slm",
                "--quant",
                "q3",
            ],
            "--quant q3",
        ),
    ];
    for (args, want) in runs {
        let o = slm(&args);
        assert_eq!(o.status.code(), Some(1), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(want), "{args:?}: {}", stderr(&o));
        assert!(!stderr(&o).contains("panicked"), "{args:?}");
    }
}

#[test]
fn an_over_long_prompt_is_refused_with_the_numbers() {
    let long = "word ".repeat(9000);
    let m = tmp("long.json");
    std::fs::write(
        &m,
        serde_json::json!([{"role": "user", "content": long}]).to_string(),
    )
    .unwrap();
    let o = slm(&[
        "generate",
        smol_slm().to_str().unwrap(),
        "--messages",
        m.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    let e = stderr(&o);
    assert!(e.contains("context holds 8192"), "{e}");
}

#[test]
fn sampler_flags_are_validated_by_name() {
    let case = golden_case("plain_ascii");
    let m = write_messages("sampler", &case);
    let model = smol_slm();
    for (flags, want) in [
        (vec!["--temperature=-1"], "temperature"),
        (vec!["--top-p", "1.5"], "top_p"),
        (vec!["--min-p", "1"], "min_p"),
        (vec!["--preset", "wild"], "--preset wild"),
        (vec!["--logit-bias", "12"], "ID=BIAS"),
    ] {
        let mut args = vec![
            "generate",
            model.to_str().unwrap(),
            "--messages",
            m.to_str().unwrap(),
        ];
        args.extend(flags.iter());
        let o = slm(&args);
        assert_eq!(o.status.code(), Some(1), "{flags:?}");
        assert!(stderr(&o).contains(want), "{flags:?}: {}", stderr(&o));
    }
}

/// A sampling flag without --preset samples (transformers' do_sample=True defaults
/// under the flags); a flag the chosen sampler would ignore is an error.
#[test]
fn sampling_flags_sample_or_are_refused() {
    let case = golden_case("plain_ascii");
    let m = write_messages("flags", &case);
    let model = smol_slm();
    let run = |extra: &[&str]| {
        let mut args = vec![
            "--json",
            "generate",
            model.to_str().unwrap(),
            "--messages",
            m.to_str().unwrap(),
            "--max-tokens",
            "40",
        ];
        args.extend(extra);
        slm(&args)
    };
    let ids = |extra: &[&str]| {
        let o = run(extra);
        assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        (v["ids"].clone(), v["sampler"].clone(), v["greedy"].clone())
    };
    let (a7, s7, g7) = ids(&["--temperature", "0.9", "--top-p", "0.95", "--seed", "7"]);
    let (b7, _, _) = ids(&["--temperature", "0.9", "--top-p", "0.95", "--seed", "7"]);
    let (a8, _, _) = ids(&["--temperature", "0.9", "--top-p", "0.95", "--seed", "8"]);
    assert_eq!(a7, b7, "the same seed reproduces");
    assert_ne!(a7, a8, "seeds 7 and 8 sample differently");
    assert_eq!(g7, false);
    assert_eq!(
        s7["top_k"], 50,
        "the documented base: HF do_sample=True defaults"
    );
    assert_eq!(s7["seed"], 7);
    let (_, s, g) = ids(&[]);
    assert_eq!(
        (s["top_k"].clone(), g),
        (serde_json::json!(1), serde_json::json!(true))
    );
    for (flags, want) in [
        (
            vec!["--preset", "json", "--temperature", "0.9"],
            "--temperature would be ignored",
        ),
        (
            vec!["--temperature", "0", "--top-p", "0.9"],
            "--top-p would be ignored",
        ),
        (
            vec!["--top-k", "1", "--seed", "3"],
            "--seed would be ignored",
        ),
        (
            vec!["--preset", "json", "--seed", "3"],
            "preset json is greedy",
        ),
    ] {
        let o = run(&flags);
        assert_eq!(o.status.code(), Some(1), "{flags:?}");
        assert!(stderr(&o).contains(want), "{flags:?}: {}", stderr(&o));
    }
}

/// `slm detokenize` is transformers' decode, and a generation's streamed text is the
/// decode of all its ids.
#[test]
fn detokenize_matches_the_streamed_text_and_the_golden() {
    let case = golden_case("plain_ascii");
    let m = write_messages("detok", &case);
    let model = smol_slm();
    let o = slm(&[
        "--json",
        "generate",
        model.to_str().unwrap(),
        "--messages",
        m.to_str().unwrap(),
        "--preset",
        "creative",
        "--seed",
        "5",
        "--max-tokens",
        "60",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let g: Value = serde_json::from_slice(&o.stdout).unwrap();
    let ids: Vec<String> = g["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.to_string())
        .collect();
    let d = slm(&[
        "--json",
        "detokenize",
        model.to_str().unwrap(),
        "--ids",
        &ids.join(","),
    ]);
    assert!(d.status.success(), "{}", stderr(&d));
    let d: Value = serde_json::from_slice(&d.stdout).unwrap();
    assert_eq!(d["text"], g["text"]);
    // A golden list with special tokens, both ways (reference/goldens/decode).
    let gold: Value = serde_json::from_str(
        &std::fs::read_to_string(
            std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../reference/goldens/decode/smollm2.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let c = gold["cases"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["decode"] != c["decode_skip_special"])
        .expect("a golden list with special tokens");
    let ids: Vec<String> = c["ids"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| i.to_string())
        .collect();
    for (flag, key) in [
        (None, "decode"),
        (Some("--skip-special-tokens"), "decode_skip_special"),
    ] {
        let mut args = vec![
            "detokenize",
            model.to_str().unwrap(),
            "--ids",
            ids.join(",").leak(),
        ];
        args.extend(flag);
        let o = slm(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        assert_eq!(
            String::from_utf8(o.stdout).unwrap(),
            c[key].as_str().unwrap(),
            "{key}"
        );
    }
    let o = slm(&["detokenize", model.to_str().unwrap(), "--ids", "99999999"]);
    assert_eq!(o.status.code(), Some(1));
    assert!(stderr(&o).contains("outside the vocab"), "{}", stderr(&o));
}

#[test]
fn seeded_cli_runs_repeat_and_write_a_trace() {
    let case = golden_case("plain_ascii");
    let m = write_messages("seeded", &case);
    let trace = tmp("trace.json");
    let run = || {
        let o = slm(&[
            "--json",
            "generate",
            smol_slm().to_str().unwrap(),
            "--messages",
            m.to_str().unwrap(),
            "--preset",
            "creative",
            "--seed",
            "99",
            "--max-tokens",
            "12",
            "--trace",
            trace.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        o.stdout
    };
    let (a, b) = (run(), run());
    let va: Value = serde_json::from_slice(&a).unwrap();
    let vb: Value = serde_json::from_slice(&b).unwrap();
    assert_eq!(va["ids"], vb["ids"]);
    assert_eq!(va["text"], vb["text"]);
    for key in ["stop_reason", "stop_detail", "prompt_tokens", "timings"] {
        assert!(!va[key].is_null(), "{key} missing");
    }
    let t: Value = serde_json::from_str(&std::fs::read_to_string(&trace).unwrap()).unwrap();
    assert_eq!(t["sampler"]["seed"], 99);
    assert_eq!(t["model"]["num_kv_heads"], 3);
    assert_eq!(t["prompt"]["ids"], case["ids"]);
    assert_eq!(t["prompt"]["rendered_sha256"], case["rendered_sha256"]);
    assert!(t["prompt"]["special_tokens_used"]
        .as_array()
        .unwrap()
        .iter()
        .any(|s| s["text"] == "<|im_start|>"));
    let step = &t["steps"][0];
    assert_eq!(step["position"], case["ids"].as_array().unwrap().len());
    let stages: Vec<&str> = step["stages"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["stage"].as_str().unwrap())
        .collect();
    assert_eq!(stages[..3], ["raw", "penalized", "temperature"]);
    assert!(step["stages"][0]["top"].as_array().unwrap().len() <= 8);
    assert!(step["stop_check"].is_object());
    assert!(step["draw"].is_number() && step["candidates"].is_array());
    assert!(t["steps"].as_array().unwrap().len() >= va["ids"].as_array().unwrap().len());
}

#[test]
fn chat_reuses_the_cache_and_flags_divergence() {
    use std::io::Write;
    let mut child = Command::new(env!("CARGO_BIN_EXE_slm"))
        .args([
            "--json",
            "chat",
            smol_slm().to_str().unwrap(),
            "--max-tokens",
            "24",
            "--ctx",
            "1024",
        ])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(b"What is the capital of France?\n/stats\nAnd of Italy?\n/clear\nHi\n/quit\n")
        .unwrap();
    let o = child.wait_with_output().unwrap();
    assert!(o.status.success(), "{}", stderr(&o));
    let turns: Vec<Value> = serde_json::Deserializer::from_slice(&o.stdout)
        .into_iter()
        .map(|v| v.unwrap())
        .collect();
    assert_eq!(turns.len(), 3);
    assert!(turns[0]["text"].as_str().unwrap().contains("Paris"));
    assert_eq!(turns[0]["reused_tokens"], 0);
    // Turn 2 reuses all of turn 1 (prompt + reply) and prefills only the new turn.
    let held = turns[0]["prompt_tokens"].as_u64().unwrap()
        + turns[0]["ids"].as_array().unwrap().len() as u64;
    assert_eq!(turns[1]["reused_tokens"], held);
    assert!(turns[1]["divergence"].is_null());
    // After /clear the transcript no longer extends the context: flagged and explained.
    assert!(turns[2]["divergence"]["explanation"]
        .as_str()
        .unwrap()
        .contains("transcript"));
    assert!(
        stderr(&o).contains("\"kv_len\""),
        "/stats prints the session state"
    );
}

#[test]
fn bench_reports_speed_memory_and_roofline() {
    let model = smol_slm();
    let args = [
        "--json",
        "bench",
        model.to_str().unwrap(),
        "--prompt-tokens",
        "8",
        "--gen-tokens",
        "4",
        "--threads",
        "1",
    ];
    let o = slm(&args);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    for k in [
        "prefill_tok_s",
        "decode_tok_s",
        "read_bandwidth_gb_s",
        "decode_roofline_tok_s",
    ] {
        assert!(v[k].as_f64().unwrap() > 0.0, "{k}: {v}");
    }
    assert_eq!(v["prompt_tokens"], 8);
    assert_eq!(v["threads"], 1);
    // 13-bit activations unless SLM_ACT_BITS=8 asks for llama.cpp's 8.
    assert_eq!(v["activation_bits"], 13);
    let o8 = Command::new(env!("CARGO_BIN_EXE_slm"))
        .args([
            "--json",
            "bench",
            smol_slm().to_str().unwrap(),
            "--prompt-tokens",
            "8",
            "--gen-tokens",
            "2",
        ])
        .env("SLM_ACT_BITS", "8")
        .output()
        .unwrap();
    assert!(o8.status.success(), "{}", stderr(&o8));
    let v8: Value = serde_json::from_slice(&o8.stdout).unwrap();
    assert_eq!(v8["activation_bits"], 8);
    let weights = v["weight_bytes"].as_u64().unwrap();
    assert!(
        v["peak_rss_bytes"].as_u64().unwrap() > weights,
        "RSS includes the weights"
    );
    let o = slm(&[
        "bench",
        smol_slm().to_str().unwrap(),
        "--prompt-tokens",
        "0",
    ]);
    assert_eq!(o.status.code(), Some(1));
}

/// `bench --paths` measures every path this machine has, scalar last, and names the
/// default (the first) and the fastest; `--threads 0` and `--rounds 0` are refused.
#[test]
fn bench_paths_measures_every_kernel_path() {
    let model = smol_slm();
    let m = model.to_str().unwrap();
    let o = slm(&[
        "--json",
        "bench",
        m,
        "--paths",
        "--rounds",
        "1",
        "--prompt-tokens",
        "8",
        "--gen-tokens",
        "2",
        "--threads",
        "1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let names: Vec<&str> = v["paths"]
        .as_array()
        .unwrap()
        .iter()
        .map(|p| p["kernel"].as_str().unwrap())
        .collect();
    let want: Vec<&str> = slm_runtime::kernels::available()
        .iter()
        .map(|k| k.name)
        .collect();
    assert_eq!(names, want);
    assert_eq!(names.last(), Some(&"scalar"));
    assert_eq!(v["default"], want[0]);
    for p in v["paths"].as_array().unwrap() {
        assert!(p["prefill_tok_s"].as_f64().unwrap() > 0.0, "{p}");
        assert!(p["decode_tok_s"].as_f64().unwrap() > 0.0, "{p}");
    }
    assert!(names.contains(&v["fastest_decode"].as_str().unwrap()));
    for bad in [["--rounds", "0"], ["--threads", "0"]] {
        let o = slm(&["bench", m, "--paths", bad[0], bad[1]]);
        assert_eq!(o.status.code(), Some(1), "{bad:?}");
    }
}

/// `--tune-preset` writes a model's preset adjustment into the file: inspect shows it,
/// and `--preset chat` on that file samples with it while the same preset on an
/// untuned file does not. A malformed or out-of-domain tuning is refused before the
/// source is read, naming the preset and field, and no file is left behind.
#[test]
fn convert_carries_a_preset_tuning_that_the_preset_then_applies() {
    let out = tmp("smol-tuned.slm");
    let gguf = smol_gguf();
    let o = slm(&[
        "convert",
        gguf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--quant",
        "q8_0",
        "--tune-preset",
        "chat.repetition_penalty=1.1",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = slm(&["--json", "inspect", out.to_str().unwrap()]);
    let m: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(
        m["preset_tuning"],
        serde_json::json!({"chat": {"repetition_penalty": 1.1}})
    );
    let o = slm(&["inspect", out.to_str().unwrap()]);
    assert!(
        String::from_utf8_lossy(&o.stdout).contains("preset tuned  chat: repetition_penalty 1.1")
    );
    let msgs = write_messages("tuned", &golden_case("plain_ascii"));
    let penalty = |model: &Path, preset: &str| {
        let o = slm(&[
            "--json",
            "generate",
            model.to_str().unwrap(),
            "--messages",
            msgs.to_str().unwrap(),
            "--preset",
            preset,
            "--max-tokens",
            "1",
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v: Value = serde_json::from_slice(&o.stdout).unwrap();
        v["sampler"]["repetition_penalty"].as_f64().unwrap() as f32
    };
    assert_eq!(penalty(&out, "chat"), 1.1);
    assert_eq!(penalty(&out, "precise"), 1.05);
    assert_eq!(penalty(&smol_slm(), "chat"), 1.05);
    for (arg, says) in [
        ("chat.repetition_penalty=0", "repetition_penalty = 0"),
        ("chat.seed=2", "chat.seed: not a preset field"),
        ("chatty.top_k=2", "no preset \"chatty\""),
        ("chat.top_k", "expected PRESET.FIELD=VALUE"),
    ] {
        let bad = tmp("smol-bad-tuning.slm");
        let o = slm(&[
            "convert",
            "/no/such/source.gguf",
            "-o",
            bad.to_str().unwrap(),
            "--tune-preset",
            arg,
        ]);
        assert_eq!(o.status.code(), Some(1), "{arg}");
        assert!(stderr(&o).contains(says), "{arg}: {}", stderr(&o));
        assert!(!bad.exists());
    }
}

/// SmolLM2's GGUF stores its layers as Q4_1 and its embedding as Q8_0. `--quant q4_0`
/// keeps both (the report says so); `--requantize` forces q4_0 onto the layers.
#[test]
fn convert_keeps_quantized_source_tensors_unless_asked_to_requantize() {
    for (requantize, layers) in [(false, "q4_1"), (true, "q4_0")] {
        let out = tmp(&format!("smol-q4_0-{requantize}.slm"));
        let gguf = smol_gguf();
        let mut args = vec![
            "--json",
            "convert",
            gguf.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
            "--quant",
            "q4_0",
        ];
        if requantize {
            args.push("--requantize");
        }
        let o = slm(&args);
        assert!(o.status.success(), "{}", stderr(&o));
        let r: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(r["requantize"], requantize);
        assert_eq!(
            r["dtypes"],
            serde_json::json!({"f32": 61, layers: 210, "q8_0": 1}),
            "requantize={requantize}"
        );
        assert_eq!(r["kept_source_precision"], if requantize { 0 } else { 210 });
        let o = slm(&["--json", "inspect", out.to_str().unwrap()]);
        let m: Value = serde_json::from_slice(&o.stdout).unwrap();
        assert_eq!(m["provenance"]["requantize"], requantize, "{m}");
    }
}

/// With no `--quant`, a Q4_K_M GGUF keeps every tensor's type (the k-quant and q5_0
/// blocks included), so the `.slm` is its GGUF's size within 2% (measured +0.08%);
/// `--requantize` without a type to quantize to is refused before anything is read.
#[test]
fn convert_keeps_every_gguf_type_by_default() {
    let gguf = cache().join("models/qwen2.5-coder-0.5b-instruct-q4_k_m.gguf");
    assert!(gguf.exists(), "run scripts/fetch-models.sh first");
    let out = tmp("qwen-keep.slm");
    let o = slm(&[
        "--json",
        "convert",
        gguf.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["quant"], "keep");
    // The GGUF's own mix: 24 layers of Q5_0 q/k/o/gate/up, Q5_0 or Q8_0 v, Q4_K or Q6_K
    // down; a Q5_0 embedding and a Q8_0 head; f32 norms and biases.
    assert_eq!(
        r["dtypes"],
        serde_json::json!({"f32": 121, "q4_k": 12, "q5_0": 133, "q6_k": 12, "q8_0": 13})
    );
    let (src, dst) = (
        std::fs::metadata(&gguf).unwrap().len() as f64,
        r["bytes"].as_u64().unwrap() as f64,
    );
    assert!(
        (dst / src - 1.0).abs() < 0.02,
        "{dst} bytes against the GGUF's {src}"
    );
    let o = slm(&["verify", out.to_str().unwrap()]);
    assert!(o.status.success(), "{}", stderr(&o));
    let o = slm(&[
        "convert",
        gguf.to_str().unwrap(),
        "-o",
        tmp("qwen-rq.slm").to_str().unwrap(),
        "--requantize",
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("--requantize needs a type"),
        "{}",
        stderr(&o)
    );
    assert!(
        !stderr(&o).contains("hashing"),
        "refused before reading the source"
    );
}

/// A GGUF copy of SmolLM2 with `edit` applied to its bytes, converted kept-quant.
fn planted(name: &str, edit: impl Fn(&mut Vec<u8>)) -> PathBuf {
    let mut b = std::fs::read(smol_gguf()).unwrap();
    edit(&mut b);
    let src = tmp(&format!("{name}.gguf"));
    std::fs::write(&src, &b).unwrap();
    let out = tmp(&format!("{name}.slm"));
    let o = slm(&[
        "convert",
        src.to_str().unwrap(),
        "-o",
        out.to_str().unwrap(),
        "--quant",
        "q8_0",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    out
}

fn find(b: &[u8], needle: &[u8]) -> usize {
    b.windows(needle.len())
        .position(|w| w == needle)
        .expect("needle in the GGUF")
}

fn gate(model: &Path, out: &Path) -> (Output, Value) {
    let pack = Path::new(env!("CARGO_MANIFEST_DIR")).join("../reference/goldens/smollm2.json");
    let o = slm(&[
        "gate",
        model.to_str().unwrap(),
        "--goldens",
        pack.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]);
    let ev: Value = serde_json::from_str(&std::fs::read_to_string(out).unwrap()).unwrap();
    (o, ev)
}

/// The gate passes every stage on the faithful SmolLM2 conversion, and stops at the
/// stage a planted defect breaks, naming it: a flipped template byte (template), a
/// wrong RoPE θ (logits).
#[test]
fn gate_passes_smollm2_and_names_the_stage_of_a_planted_defect() {
    let good = planted("gate-good", |_| {});
    let (o, ev) = gate(&good, &tmp("gate-good.evidence.json"));
    assert!(o.status.success(), "{}", stderr(&o));
    assert_eq!(ev["verdict"], "reference-verified");
    assert_eq!(ev["stages"].as_array().unwrap().len(), 5);
    let m: Value =
        serde_json::from_slice(&slm(&["--json", "inspect", good.to_str().unwrap()]).stdout)
            .unwrap();
    assert_eq!(ev["file"]["data_sha256"], m["data"]["sha256"]);
    // The catalog's committed record speaks for this very conversion.
    let shipped: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR"))
                .join("../public/evidence/smollm2-135m-instruct.evidence.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert_eq!(shipped["file"], ev["file"]);
    assert_eq!(shipped["verdict"], "reference-verified");
    assert_eq!(
        shipped["goldens"]["sha256"], ev["goldens"]["sha256"],
        "regenerate public/evidence with scripts/model.sh"
    );

    // One byte of the chat template: "<|im_start|>" → "<|Im_start|>" somewhere inside.
    let flipped = planted("gate-template", |b| {
        let at = find(b, b"tokenizer.chat_template");
        let i = at + find(&b[at..], b"<|im_start|>") + 2;
        b[i] = b'I';
    });
    let (o, ev) = gate(&flipped, &tmp("gate-template.evidence.json"));
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains("failed at the template stage"),
        "{}",
        stderr(&o)
    );
    assert_eq!(
        (ev["verdict"].as_str(), ev["failed_stage"].as_str()),
        (Some("failed"), Some("template"))
    );

    // RoPE θ 100000 → 200000 (llama.rope.freq_base, an f32 after its type tag).
    let theta = planted("gate-theta", |b| {
        let at = find(b, b"llama.rope.freq_base") + "llama.rope.freq_base".len() + 4;
        assert_eq!(
            f32::from_le_bytes(b[at..at + 4].try_into().unwrap()),
            100000.0
        );
        b[at..at + 4].copy_from_slice(&200000f32.to_le_bytes());
    });
    let (o, ev) = gate(&theta, &tmp("gate-theta.evidence.json"));
    assert_eq!(o.status.code(), Some(1));
    assert_eq!(ev["failed_stage"], "logits", "{}", stderr(&o));
    assert!(stderr(&o).contains("failed at the logits stage"));
}

/// Where transformers raises, `slm render` exits non-zero with the same message (the
/// template conformance suite covers the templates' own errors and big integers).
#[test]
fn render_raises_where_transformers_does() {
    let model = smol_slm();
    let empty = tmp("empty.json");
    std::fs::write(&empty, "[]").unwrap();
    let o = slm(&[
        "render",
        model.to_str().unwrap(),
        "--messages",
        empty.to_str().unwrap(),
    ]);
    assert_eq!(o.status.code(), Some(1));
    assert!(
        stderr(&o).contains(
            "Cannot apply chat template to an empty conversation. Provide at least one message."
        ),
        "{}",
        stderr(&o)
    );
}

/// Named chat templates, as transformers 5 selects them: `tool_use` when tools are given,
/// else the default; from tokenizer_config.json's list, or from chat_template.jinja and
/// additional_chat_templates/NAME.jinja (which take priority).
#[test]
fn named_chat_templates_are_kept_and_selected_like_transformers() {
    let msgs = tmp("named-msgs.json");
    std::fs::write(&msgs, r#"[{"role": "user", "content": "hi"}]"#).unwrap();
    let tools = tmp("named-tools.json");
    std::fs::write(
        &tools,
        r#"[{"type": "function", "function": {"name": "f"}}]"#,
    )
    .unwrap();
    for layout in ["list", "files"] {
        let dir = fixture_with(&format!("named-{layout}"), "use_cache", Value::Bool(true));
        let tc_path = dir.join("tokenizer_config.json");
        let mut tc: Value =
            serde_json::from_str(&std::fs::read_to_string(&tc_path).unwrap()).unwrap();
        if layout == "list" {
            tc["chat_template"] = serde_json::json!([
                {"name": "default", "template": "D:{{ messages[0].content }}"},
                {"name": "tool_use", "template": "T:{{ tools | length }}"}
            ]);
        } else {
            tc["chat_template"] = Value::String("ignored: files take priority".into());
            std::fs::write(
                dir.join("chat_template.jinja"),
                "D:{{ messages[0].content }}",
            )
            .unwrap();
            std::fs::create_dir_all(dir.join("additional_chat_templates")).unwrap();
            std::fs::write(
                dir.join("additional_chat_templates/tool_use.jinja"),
                "T:{{ tools | length }}",
            )
            .unwrap();
        }
        std::fs::write(&tc_path, tc.to_string()).unwrap();
        let out = tmp(&format!("named-{layout}.slm"));
        let o = slm(&[
            "convert",
            dir.to_str().unwrap(),
            "-o",
            out.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{layout}: {}", stderr(&o));
        let r = |with_tools: bool| {
            let mut a = vec![
                "render",
                out.to_str().unwrap(),
                "--messages",
                msgs.to_str().unwrap(),
            ];
            if with_tools {
                a.extend(["--tools", tools.to_str().unwrap()]);
            }
            let o = slm(&a);
            assert!(o.status.success(), "{layout}: {}", stderr(&o));
            String::from_utf8(o.stdout).unwrap()
        };
        assert_eq!(r(false), "D:hi", "{layout}");
        assert_eq!(r(true), "T:1", "{layout}");
    }
}

/// `slm --json generate MODEL --messages MESSAGES EXTRA…`, which must succeed.
fn generate_json(model: &Path, messages: &Path, extra: &[&str]) -> Value {
    let mut a = vec![
        "--json",
        "generate",
        model.to_str().unwrap(),
        "--messages",
        messages.to_str().unwrap(),
    ];
    a.extend_from_slice(extra);
    let o = slm(&a);
    assert!(o.status.success(), "{extra:?}: {}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

fn eval_set(name: &str) -> String {
    format!("{}/../eval/{name}", env!("CARGO_MANIFEST_DIR"))
}

/// The prompt `slm tokenize` renders for one user message with the policy's note
/// appended (as the policy appends it), ending with the assistant opener.
fn noted_prompt(m: &Path, user: &str, note: &str) -> String {
    let noted = tmp("clarify-noted.json");
    let content = format!("{user}\n\n{note}");
    std::fs::write(
        &noted,
        serde_json::json!([{"role": "user", "content": content}]).to_string(),
    )
    .unwrap();
    let o = slm(&[
        "--json",
        "tokenize",
        m.to_str().unwrap(),
        "--messages",
        noted.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tok: Value = serde_json::from_slice(&o.stdout).unwrap();
    tok["rendered"].as_str().unwrap().to_string()
}

/// Qwen, greedy, restates "How do I read a file line by line in Go?" as its own
/// question. With the policy on (and silent: the message is clear), that reply is set
/// aside and the next may not start with its first token; it answers.
#[test]
fn a_reply_that_restates_a_clear_question_is_tried_again() {
    let m = qwen_slm();
    let msgs = tmp("restated-msgs.json");
    std::fs::write(
        &msgs,
        r#"[{"role": "user", "content": "How do I read a file line by line in Go?"}]"#,
    )
    .unwrap();
    let off = generate_json(&m, &msgs, &["--max-tokens", "40"]);
    let restated = off["reply"].as_str().unwrap();
    assert_eq!(restated, "How can I read a file line by line in Go?");
    assert!(off["tries"].is_null(), "{off}");
    let v = generate_json(&m, &msgs, &["--max-tokens", "40", "--clarify-first"]);
    assert_eq!(v["policy"]["clarify"], false, "{v}");
    let tries = v["tries"].as_array().unwrap();
    assert_eq!(tries.len(), 2, "{v}");
    assert_eq!(tries[0]["text"], restated);
    assert_eq!(tries[0]["restates"], true);
    assert_eq!(tries[0]["kept"], false);
    assert!(tries[0].get("barred_start").is_none(), "{v}");
    // The second attempt was barred from the first one's first token, and answers.
    assert_eq!(tries[1]["restates"], false);
    assert_eq!(tries[1]["kept"], true);
    assert_eq!(tries[1]["barred_start"].as_array().unwrap().len(), 1);
    let reply = v["reply"].as_str().unwrap();
    assert_eq!(reply, tries[1]["text"].as_str().unwrap());
    assert!(!reply.starts_with("How"), "{reply}");
    assert!(reply.contains("bufio"), "{reply}");
    // A session (`slm chat`, the page's worker) settles it the same way.
    let o = chat(
        &[
            "--json",
            "chat",
            m.to_str().unwrap(),
            "--max-tokens",
            "40",
            "--clarify-first",
        ],
        "How do I read a file line by line in Go?\n/quit\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let turn: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(turn["tries"], v["tries"], "{turn}");
    // The set-aside attempt left the context: no divergence of the transcript's.
    assert!(turn["divergence"].is_null(), "{turn}");
    assert_eq!(turn["reply"], reply);
}

#[test]
fn clarify_first_shows_its_decision_and_gives_the_model_the_note() {
    let m = smol_slm();
    let msgs = tmp("clarify-msgs.json");
    let trace = tmp("clarify-trace.json");
    std::fs::write(
        &msgs,
        r#"[{"role": "user", "content": "Translate this sentence."}]"#,
    )
    .unwrap();
    let v = generate_json(
        &m,
        &msgs,
        &[
            "--max-tokens",
            "8",
            "--clarify-first",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    let p = &v["policy"];
    assert_eq!(p["clarify"], true);
    assert_eq!(
        p["missing"],
        "the sentence to translate and the language to translate into"
    );
    assert!(p["score"].as_f64().unwrap() >= 0.5);
    assert_eq!(p["slots"], serde_json::json!(["text", "target_language"]));
    // The reply starts with the policy's lead; the model wrote the rest.
    let lead = p["lead"].as_str().unwrap();
    assert_eq!(lead, "Could you paste");
    let reply = v["reply"].as_str().unwrap();
    assert_eq!(reply, format!("{lead}{}", v["text"].as_str().unwrap()));
    // It names the missing piece at once: one attempt, kept.
    assert_eq!(
        v["tries"],
        serde_json::json!([{"lead": lead, "text": v["text"], "names_a_piece": true, "asks_amiss": false, "kept": true, "restates": false}])
    );
    // The trace's prompt is what the model was given: the message and the note, as
    // `slm tokenize` renders them, then the lead.
    let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let rendered = noted_prompt(&m, "Translate this sentence.", p["note"].as_str().unwrap());
    assert!(rendered.contains("[Clarify first: "));
    assert!(rendered.ends_with("<|im_start|>assistant\n"), "{rendered}");
    let given = format!("{rendered}{lead}");
    assert_eq!(
        t["prompt"]["rendered_sha256"],
        slm_runtime::format::layout::sha256_hex(given.as_bytes()),
        "the prompt is the rendered messages and the lead"
    );
    let o = slm(&["--json", "tokenize", m.to_str().unwrap(), "--text", &given]);
    assert!(o.status.success(), "{}", stderr(&o));
    let tok: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(t["prompt"]["ids"], tok["ids"]);
    // A reply that names no missing piece is tried again with the next lead; the
    // output, and the trace's prompt, are the kept attempt's.
    std::fs::write(
        &msgs,
        r#"[{"role": "user", "content": "What year did she win the Nobel Prize?"}]"#,
    )
    .unwrap();
    let v = generate_json(
        &m,
        &msgs,
        &[
            "--max-tokens",
            "24",
            "--clarify-first",
            "--trace",
            trace.to_str().unwrap(),
        ],
    );
    let tries = v["tries"].as_array().unwrap();
    let named: Vec<bool> = tries.iter().map(|a| a["names_a_piece"] == true).collect();
    assert_eq!(named, [false, false, true], "{tries:?}");
    let kept = &tries[2];
    assert_eq!(kept["kept"], true);
    assert_eq!(kept["lead"], v["policy"]["retry_leads"][1]);
    assert_eq!(v["text"], kept["text"]);
    let lead = kept["lead"].as_str().unwrap();
    assert_eq!(
        v["reply"].as_str().unwrap(),
        format!("{lead}{}", v["text"].as_str().unwrap())
    );
    let t: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let note = v["policy"]["note"].as_str().unwrap();
    let given = format!(
        "{}{lead}",
        noted_prompt(&m, "What year did she win the Nobel Prize?", note)
    );
    assert_eq!(
        t["prompt"]["rendered_sha256"],
        slm_runtime::format::layout::sha256_hex(given.as_bytes()),
        "the trace's prompt is the kept attempt's: the noted message and its lead"
    );
    // A clear prompt: no note, and the same ids as without the policy.
    std::fs::write(
        &msgs,
        r#"[{"role": "user", "content": "What is the capital of France?"}]"#,
    )
    .unwrap();
    let run = |extra: &[&str]| {
        let mut a = vec!["--max-tokens", "4"];
        a.extend_from_slice(extra);
        generate_json(&m, &msgs, &a)
    };
    let on = run(&["--clarify-first"]);
    let off = run(&[]);
    assert_eq!(on["policy"]["clarify"], false);
    assert!(on["policy"]["missing"].is_null() && on["policy"]["note"].is_null());
    assert!(off["policy"].is_null());
    assert_eq!(on["ids"], off["ids"]);
    // In a chat, a follow-up's "it" refers back: the policy stays silent.
    let o = chat(
        &[
            "--json",
            "chat",
            m.to_str().unwrap(),
            "--max-tokens",
            "4",
            "--clarify-first",
        ],
        "Here is my sentence: the cat sleeps on the mat.\nTranslate it into French.\n",
    );
    assert!(o.status.success(), "{}", stderr(&o));
    let turns: Vec<Value> = serde_json::Deserializer::from_slice(&o.stdout)
        .into_iter::<Value>()
        .map(|v| v.unwrap())
        .collect();
    assert_eq!(turns.len(), 2);
    assert_eq!(turns[0]["policy"]["clarify"], false);
    assert_eq!(
        turns[1]["policy"]["clarify"], false,
        "{}",
        turns[1]["policy"]
    );
}

#[test]
fn behaviour_evals_run_a_sample_and_report_their_rates() {
    let m = smol_slm();
    let out = tmp("clarify-out.jsonl");
    let o = slm(&[
        "--json",
        "eval",
        "clarify",
        m.to_str().unwrap(),
        "--set",
        &eval_set("clarify.jsonl"),
        "--sample",
        "22",
        "--max-tokens",
        "24",
        "--out",
        out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let results = v["sets"][0]["results"].as_array().unwrap();
    assert_eq!(results.len(), 2, "policy off, then on");
    for r in results {
        let t = &r["total"];
        assert_eq!(
            t["underspecified"].as_u64().unwrap() + t["controls"].as_u64().unwrap(),
            22
        );
        for k in [
            "clarification_rate",
            "useful_clarification_rate",
            "false_clarification_rate",
        ] {
            let x = t[k].as_f64().unwrap();
            assert!((0.0..=1.0).contains(&x), "{k} {x}");
        }
    }
    // The rules fire on most of the sample's underspecified prompts and on no control.
    let on = &results[1]["total"];
    assert!(
        on["policy_fired"].as_u64().unwrap() * 10 >= on["underspecified"].as_u64().unwrap() * 8
    );
    assert_eq!(on["policy_fired_on_controls"], 0);
    // Where the policy is silent the prompt is unchanged, so the reply is the policy-off
    // one, reused (same seed, same prompt).
    let lines: Vec<Value> = std::fs::read_to_string(&out)
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 44);
    for l in lines.iter().filter(|l| l["policy"] == true) {
        assert_eq!(
            l["fired"] == true,
            l["stop_reason"] != "reused",
            "{}",
            l["id"]
        );
        assert_eq!(l["fired"], l["decision"]["clarify"]);
        // A clarifying reply records its attempts; the reply is the one kept.
        if l["fired"] == true {
            let tries = l["tries"].as_array().unwrap();
            let kept: Vec<&Value> = tries.iter().filter(|a| a["kept"] == true).collect();
            assert_eq!(kept.len(), 1, "{}", l["id"]);
            let reply = format!(
                "{}{}",
                kept[0]["lead"].as_str().unwrap(),
                kept[0]["text"].as_str().unwrap()
            );
            assert_eq!(l["text"].as_str().unwrap(), reply, "{}", l["id"]);
        }
    }
    assert!(v["summary"]
        .as_str()
        .unwrap()
        .contains("| clarify.jsonl policy on |"));

    // The candidates experiment (`--candidates`, pick.rs): where the policy fires, the
    // first candidate (seed 1) is the production reply's first attempt above, and the
    // reply kept is the candidate with the highest gain among those that ask.
    let picked_out = tmp("clarify-picked.jsonl");
    let o = slm(&[
        "--json",
        "eval",
        "clarify",
        m.to_str().unwrap(),
        "--set",
        &eval_set("clarify.jsonl"),
        "--sample",
        "22",
        "--max-tokens",
        "24",
        "--policy",
        "on",
        "--candidates",
        "2",
        "--out",
        picked_out.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let production: std::collections::HashMap<String, String> = lines
        .iter()
        .filter(|l| l["policy"] == true)
        .map(|l| {
            let first = &l["tries"][0];
            let text = match first["lead"].as_str() {
                Some(lead) => format!("{lead}{}", first["text"].as_str().unwrap()),
                None => l["text"].as_str().unwrap().to_string(),
            };
            (l["id"].to_string(), text)
        })
        .collect();
    let mut fired = 0;
    for l in std::fs::read_to_string(&picked_out).unwrap().lines() {
        let l: Value = serde_json::from_str(l).unwrap();
        if l["fired"] != true {
            assert!(l["picked"].is_null());
            continue;
        }
        fired += 1;
        let c = l["picked"]["candidates"].as_array().unwrap();
        assert_eq!(c.len(), 2);
        assert_eq!(
            c[0]["text"].as_str(),
            production.get(&l["id"].to_string()).map(|s| s.as_str())
        );
        let chosen = l["picked"]["chosen"].as_u64().unwrap() as usize;
        assert_eq!(c[chosen]["text"], l["text"]);
        let asks = |x: &Value| x["asks"] == true;
        let gain = |x: &Value| x["gain"].as_f64().unwrap();
        let other = &c[1 - chosen];
        assert!(
            (asks(&c[chosen]) && !asks(other))
                || (asks(&c[chosen]) == asks(other) && gain(&c[chosen]) >= gain(other)),
            "{l}"
        );
    }
    assert!(fired > 0);
    let o = slm(&["eval", "clarify", m.to_str().unwrap(), "--candidates", "0"]);
    assert!(!o.status.success() && stderr(&o).contains("--candidates 0"));

    let o = slm(&[
        "--json",
        "eval",
        "loops",
        m.to_str().unwrap(),
        "--set",
        &eval_set("loops.jsonl"),
        "--sample",
        "5",
        "--max-tokens",
        "48",
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let v: Value = serde_json::from_slice(&o.stdout).unwrap();
    let r = v["results"].as_array().unwrap();
    assert_eq!(r[0]["config"], "chat preset");
    assert_eq!(r[1]["config"], "repetition penalty 1.0");
    for c in r {
        assert_eq!(c["prompts"], 5);
        assert!(c["median_tokens"].as_u64().unwrap() <= 48);
    }

    // Bad input: a mistyped policy, a missing set.
    let o = slm(&["eval", "clarify", m.to_str().unwrap(), "--policy", "maybe"]);
    assert!(!o.status.success() && stderr(&o).contains("--policy maybe"));
    let o = slm(&[
        "eval",
        "loops",
        m.to_str().unwrap(),
        "--set",
        "no/such/set.jsonl",
    ]);
    assert!(
        !o.status.success() && stderr(&o).contains("no/such/set.jsonl"),
        "{}",
        stderr(&o)
    );
}

/// A replay bundle of `run` (`generate --json` output, seeded, rendered at `now`) on
/// `m`, as the page's "Export for replay" writes one.
fn replay_bundle(
    m: &Path,
    messages: &Value,
    lead: Option<&str>,
    prompt_sha256: Value,
    run: &Value,
    max_tokens: usize,
    now: &str,
) -> Value {
    let o = slm(&["--json", "verify", m.to_str().unwrap()]);
    let file_sha = serde_json::from_slice::<Value>(&o.stdout).unwrap()["file_sha256"].clone();
    let mut b = serde_json::json!({
        "format": "tinyrustlm-replay", "version": 1,
        "model": {"name": "smol-f32", "sha256": file_sha},
        "messages": messages, "tools": null, "now": now.parse::<i64>().unwrap(),
        "prompt_sha256": prompt_sha256,
        "sampler": run["sampler"], "max_tokens": max_tokens, "stop_strings": [], "loop_detection": true,
        "expected": {"text": run["text"], "stop_reason": run["stop_reason"]},
    });
    if let Some(l) = lead {
        b["lead"] = Value::from(l);
    }
    b
}

/// `slm --json generate M --replay FILE` on `bundle`, written to `name`.
fn replay(m: &Path, name: &str, bundle: &Value) -> std::process::Output {
    let p = tmp(name);
    std::fs::write(&p, bundle.to_string()).unwrap();
    slm(&[
        "--json",
        "generate",
        m.to_str().unwrap(),
        "--replay",
        p.to_str().unwrap(),
    ])
}

/// `generate --json` under the chat preset with `seed` and `max_tokens`, rendered at
/// `now`, plus `extra` flags: a run a replay bundle can be made of.
fn seeded_chat(
    m: &Path,
    msgs: &Path,
    seed: &str,
    max_tokens: &str,
    now: &str,
    extra: &[&str],
) -> Value {
    let mut a = vec![
        "--preset",
        "chat",
        "--seed",
        seed,
        "--max-tokens",
        max_tokens,
        "--now",
        now,
    ];
    a.extend_from_slice(extra);
    generate_json(m, msgs, &a)
}

/// A replay bundle made from the CLI's own seeded run replays the same text; a bundle
/// for another file, another prompt or another reply is refused by what differs, and
/// flags the bundle sets itself are refused.
#[test]
fn generate_replay_reproduces_a_bundle_and_names_what_differs() {
    let m = smol_slm();
    let msgs = tmp("replay-msgs.json");
    let messages = serde_json::json!([
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Name a colour."}
    ]);
    std::fs::write(&msgs, messages.to_string()).unwrap();
    let now = "1764672000";
    let run = seeded_chat(&m, &msgs, "7", "16", now, &[]);
    let o = slm(&[
        "--json",
        "tokenize",
        m.to_str().unwrap(),
        "--messages",
        msgs.to_str().unwrap(),
        "--now",
        now,
    ]);
    let rendered = serde_json::from_slice::<Value>(&o.stdout).unwrap()["rendered"]
        .as_str()
        .unwrap()
        .to_string();
    let sha = slm_runtime::format::layout::sha256_hex(rendered.as_bytes());
    let bundle = replay_bundle(&m, &messages, None, Value::from(sha), &run, 16, now);

    let o = replay(&m, "replay-ok.json", &bundle);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["same"], true);
    assert_eq!(r["text"], run["text"]);

    let mut other = bundle.clone();
    other["expected"]["text"] = Value::from(format!("{}!", run["text"].as_str().unwrap()));
    let o = replay(&m, "replay-text.json", &other);
    assert!(!o.status.success());
    let len = run["text"].as_str().unwrap().len();
    assert!(
        stderr(&o).contains(&format!("first differing byte: {len}")),
        "{}",
        stderr(&o)
    );

    let mut other = bundle.clone();
    other["model"]["sha256"] = Value::from("0".repeat(64));
    let o = replay(&m, "replay-file.json", &other);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("but the bundle was made with smol-f32"),
        "{}",
        stderr(&o)
    );

    let mut other = bundle.clone();
    other["messages"][1]["content"] = Value::from("Name a fruit.");
    let o = replay(&m, "replay-prompt.json", &other);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the messages or the template differ"),
        "{}",
        stderr(&o)
    );

    let mut other = bundle.clone();
    other["format"] = Value::from("tinyrustlm-chat");
    let o = replay(&m, "replay-format.json", &other);
    assert!(
        stderr(&o).contains(r#"expected \"tinyrustlm-replay\""#),
        "{}",
        stderr(&o)
    );

    let ok = tmp("replay-ok.json");
    let o = slm(&[
        "generate",
        m.to_str().unwrap(),
        "--replay",
        ok.to_str().unwrap(),
        "--seed",
        "3",
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("cannot be used with"), "{}", stderr(&o));
    let o = slm(&["generate", m.to_str().unwrap()]);
    assert!(
        stderr(&o).contains("--messages is required (or --replay)"),
        "{}",
        stderr(&o)
    );
}

/// A reply the clarify policy started replays with its lead: the prompt ends with the
/// lead, the reply ends at its question, and the expected text is what followed the
/// lead. The same bundle without the lead renders another prompt and is refused.
#[test]
fn a_reply_the_clarify_policy_led_replays_with_its_lead() {
    let m = smol_slm();
    let msgs = tmp("replay-led-msgs.json");
    let asked = serde_json::json!([{"role": "user", "content": "Translate this sentence."}]);
    std::fs::write(&msgs, asked.to_string()).unwrap();
    let trace = tmp("replay-led-trace.json");
    let now = "1764672000";
    let run = seeded_chat(
        &m,
        &msgs,
        "5",
        "40",
        now,
        &["--clarify-first", "--trace", trace.to_str().unwrap()],
    );
    let lead = run["policy"]["lead"]
        .as_str()
        .expect("the policy leads")
        .to_string();
    assert_eq!(
        run["reply"],
        format!("{lead}{}", run["text"].as_str().unwrap())
    );
    // The messages as the model saw them: the policy's note on the user message.
    let mut given = asked.as_array().unwrap().clone();
    slm_runtime::clarify::apply(&mut given);
    let record: Value = serde_json::from_slice(&std::fs::read(&trace).unwrap()).unwrap();
    let bundle = replay_bundle(
        &m,
        &Value::Array(given),
        Some(&lead),
        record["prompt"]["rendered_sha256"].clone(),
        &run,
        40,
        now,
    );
    let o = replay(&m, "replay-led.json", &bundle);
    assert!(o.status.success(), "{}", stderr(&o));
    let r: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(r["same"], true, "{r}");
    assert_eq!(r["lead"], lead.as_str());

    let mut unled = bundle.clone();
    unled.as_object_mut().unwrap().remove("lead");
    let o = replay(&m, "replay-unled.json", &unled);
    assert!(!o.status.success());
    assert!(
        stderr(&o).contains("the messages or the template differ"),
        "{}",
        stderr(&o)
    );
}

/// `/continue` adds to the last reply (the 6 + 6 tokens are the 12-token reply), and
/// `--context-policy drop-oldest` fits a chat that `stop` refuses, saying what it left
/// out. A policy that does not exist is refused by name.
#[test]
fn chat_continues_a_reply_and_applies_the_context_policy() {
    let m = smol_slm();
    let m = m.to_str().unwrap();
    let whole = json_stream(
        &chat(
            &["--json", "chat", m, "--max-tokens", "12"],
            "Describe the sea in two sentences.\n/quit\n",
        )
        .stdout,
    );
    let o = chat(
        &["--json", "chat", m, "--max-tokens", "6"],
        "Describe the sea in two sentences.\n/continue\n/quit\n",
    );
    let turns = json_stream(&o.stdout);
    assert_eq!(turns.len(), 2, "{}", stderr(&o));
    assert_eq!(turns[1]["continued"], true);
    let joined = format!(
        "{}{}",
        turns[0]["text"].as_str().unwrap(),
        turns[1]["text"].as_str().unwrap()
    );
    assert_eq!(joined, whole[0]["text"].as_str().unwrap());

    let long = |t: &str| {
        format!(
            "Topic {t}. {}\n",
            "Tell me something about the sea and its waves. ".repeat(8)
        )
    };
    let input = format!(
        "{}{}{}/quit\n",
        long("ALPHA"),
        long("BRAVO"),
        long("CHARLIE")
    );
    let stop = chat(
        &["--json", "chat", m, "--max-tokens", "8", "--ctx", "200"],
        &input,
    );
    assert!(
        stderr(&stop).contains("context policy: stop and explain"),
        "{}",
        stderr(&stop)
    );
    let o = chat(
        &[
            "--json",
            "chat",
            m,
            "--max-tokens",
            "8",
            "--ctx",
            "200",
            "--context-policy",
            "drop-oldest",
        ],
        &input,
    );
    let turns = json_stream(&o.stdout);
    assert_eq!(turns.len(), 3, "{}", stderr(&o));
    let f = &turns[2]["fitted"];
    assert_eq!(f["policy"], "drop_oldest");
    assert_eq!(f["dropped_messages"][0], 0);
    assert!(f["prompt_tokens"].as_u64().unwrap() + 8 <= 200);
    let o = chat(&["chat", m, "--context-policy", "oldest"], "/quit\n");
    assert!(!o.status.success());
    assert!(stderr(&o)
        .contains("--context-policy oldest: expected stop, drop-oldest or truncate-middle"));
}

/// `slm eval probe` fits a clarify probe on two small sets (each held out in turn),
/// `slm convert --clarify-probe` writes it into a conversion of the bytes it was
/// fitted on and refuses it for another --quant (leaving no file), and `slm generate
/// --clarify-first` reads it: the policy's JSON carries the reading, and a probe that
/// fires where the rules are silent decides, in its own words.
#[test]
fn a_clarify_probe_is_fitted_written_and_read() {
    let m = smol_slm();
    let mut sets = Vec::new();
    for k in [4, 5] {
        let lines =
            std::fs::read_to_string(eval_set(&format!("probes/clarify_probe{k}.jsonl"))).unwrap();
        // Translate: 8 underspecified prompts and 4 controls.
        let some: Vec<&str> = lines
            .lines()
            .filter(|l| l.contains("\"translate\""))
            .collect();
        assert_eq!(some.len(), 12);
        let p = tmp(&format!("probe-set{k}.jsonl"));
        std::fs::write(&p, some.join("\n")).unwrap();
        sets.push(p);
    }
    let probe = tmp("probe.json");
    let o = slm(&[
        "--json",
        "eval",
        "probe",
        m.to_str().unwrap(),
        "--set",
        sets[0].to_str().unwrap(),
        "--set",
        sets[1].to_str().unwrap(),
        "--layer",
        "20",
        "-o",
        probe.to_str().unwrap(),
    ]);
    assert!(o.status.success(), "{}", stderr(&o));
    let report: Value = serde_json::from_slice(&o.stdout).unwrap();
    assert_eq!(report["layer"], 20);
    let held = report["held_out"].as_array().unwrap();
    assert_eq!(held.len(), 2);
    for h in held {
        assert_eq!(
            (h["underspecified"].as_u64(), h["controls"].as_u64()),
            (Some(8), Some(4))
        );
    }
    let p: Value = serde_json::from_slice(&std::fs::read(&probe).unwrap()).unwrap();
    assert_eq!(p["weights"].as_array().unwrap().len(), 576);
    assert_eq!(p["fit"]["quant"], "f32");
    assert_eq!(p["fit"]["sets"].as_array().unwrap().len(), 2);

    // Another --quant: refused, naming the field, and no file written.
    let wrong = tmp("probe-q8.slm");
    let _ = std::fs::remove_file(&wrong);
    let o = slm(&[
        "convert",
        smol_gguf().to_str().unwrap(),
        "-o",
        wrong.to_str().unwrap(),
        "--quant",
        "q8_0",
        "--clarify-probe",
        probe.to_str().unwrap(),
    ]);
    assert!(!o.status.success());
    assert!(stderr(&o).contains("clarify_probe.fit"), "{}", stderr(&o));
    assert!(!wrong.exists());

    // The bytes it was fitted on, with its threshold lowered so that it fires on a
    // prompt the rules find clear.
    let mut low = p.clone();
    low["threshold"] = serde_json::json!(-1e30);
    low["veto"] = serde_json::json!(-1e30);
    let low_probe = tmp("probe-low.json");
    std::fs::write(&low_probe, low.to_string()).unwrap();
    let msgs = tmp("probe-msgs.json");
    std::fs::write(
        &msgs,
        r#"[{"role": "user", "content": "What is the capital of France?"}]"#,
    )
    .unwrap();
    for (file, fires) in [(&probe, None), (&low_probe, Some(true))] {
        let with = tmp("probe-with.slm");
        let o = slm(&[
            "convert",
            smol_gguf().to_str().unwrap(),
            "-o",
            with.to_str().unwrap(),
            "--quant",
            "f32",
            "--clarify-probe",
            file.to_str().unwrap(),
        ]);
        assert!(o.status.success(), "{}", stderr(&o));
        let v = generate_json(&with, &msgs, &["--max-tokens", "8", "--clarify-first"]);
        let policy = &v["policy"];
        let r = &policy["probe"];
        assert_eq!(r["layer"], 20);
        assert_eq!(r["threshold"].as_f64().unwrap() as f32, p_threshold(file));
        assert!(r["margin"].as_f64().unwrap().is_finite());
        assert_eq!(r["slots"].as_array().unwrap().len(), 11);
        if fires == Some(true) {
            assert_eq!(policy["clarify"], true);
            assert_eq!(policy["category"], "probe");
            assert!(policy["why"]
                .as_str()
                .unwrap()
                .contains("at or above its threshold"));
            assert!(policy["note"]
                .as_str()
                .unwrap()
                .starts_with("[Clarify first: "));
        } else {
            assert!(policy["why"]
                .as_str()
                .unwrap()
                .contains("clarify probe's margin at layer 20"));
        }
    }
}

fn p_threshold(file: &Path) -> f32 {
    let v: Value = serde_json::from_slice(&std::fs::read(file).unwrap()).unwrap();
    v["threshold"].as_f64().unwrap() as f32
}
