//! `slm`: convert, inspect, verify, render, tokenize, detokenize, logits, generate,
//! chat, gate, eval, bench.
//! Every command has `--json`. Errors go to stderr with a non-zero exit code
//! (2 for usage, 1 for everything else); with `--json` the error is a JSON object.

mod bench;
mod eval;
mod pick;
mod progress;
mod replay;
mod score;

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use serde_json::{json, Value};
use slm_runtime::engine::{EndAt, Engine, GenerateOptions, TextSide};
use slm_runtime::facts::{ExecutionFacts, TokenizerFacts};
use slm_runtime::format::reader::SlmFile;
use slm_runtime::format::writer::{self, QuantPolicy};
use slm_runtime::model::memory::{mb, MemoryNeeds};
use slm_runtime::parallel::Threads;
use slm_runtime::sampling::SamplerConfig;
use slm_runtime::session::{Overflow, Settled};
use slm_runtime::stopping::LoopConfig;
use slm_runtime::{import, Result, SlmError};

#[derive(Parser)]
#[command(
    name = "slm",
    version,
    about = "TinyRustLM: convert and run small instruct models faithfully"
)]
struct Cli {
    /// Machine-readable output (and errors) as JSON.
    #[arg(long, global = true)]
    json: bool,
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Convert a GGUF file or a Hugging Face directory into one .slm file.
    Convert {
        src: PathBuf,
        #[arg(short, long)]
        out: PathBuf,
        /// Storage type for weight matrices: keep (every tensor as the source stores
        /// it: quantized GGUF blocks copied, bf16 widened to f32), f32 (decode
        /// everything), q8_0 or q4_0 (for float tensors; matrices the source already
        /// stores quantized keep their blocks unless --requantize is given).
        #[arg(long, default_value = "keep")]
        quant: String,
        /// Quantize already-quantized source tensors to --quant as well. Lossy twice
        /// over: the second rounding is as large as the first.
        #[arg(long)]
        requantize: bool,
        /// PRESET.FIELD=VALUE (repeatable): this model's measured adjustment to a
        /// named preset, written into the file and applied wherever the preset is
        /// chosen (CLI, page, evaluations), e.g. chat.repetition_penalty=1.1.
        #[arg(long)]
        tune_preset: Vec<String>,
        /// A clarify probe fitted on this very conversion (`slm eval probe`), written
        /// into the file; refused when it was fitted on other source bytes or another
        /// --quant.
        #[arg(long)]
        clarify_probe: Option<PathBuf>,
    },
    /// Show the manifest, provenance, checksums and sizes.
    Inspect { model: PathBuf },
    /// Re-hash every chunk and the data region; names the first bad chunk.
    Verify { model: PathBuf },
    /// Render messages through the model's chat template, byte for byte, to stdout.
    Render {
        model: PathBuf,
        #[command(flatten)]
        chat: ChatArgs,
    },
    /// Token ids of --text or of rendered --messages.
    Tokenize {
        model: PathBuf,
        #[arg(long, conflicts_with = "messages")]
        text: Option<String>,
        #[command(flatten)]
        chat: OptChatArgs,
    },
    /// Text of token ids, as transformers' decode(ids, skip_special_tokens=…) gives it.
    Detokenize {
        model: PathBuf,
        /// Comma-separated token ids, e.g. 1,2,3.
        #[arg(long, value_delimiter = ',', num_args = 1..)]
        ids: Vec<u32>,
        /// Drop special tokens (transformers' skip_special_tokens=True).
        #[arg(long)]
        skip_special_tokens: bool,
    },
    /// Logits after prefill of the rendered prompt, raw little-endian f32.
    Logits {
        model: PathBuf,
        #[command(flatten)]
        chat: ChatArgs,
        #[arg(long)]
        out: PathBuf,
    },
    /// Generate a reply: greedy by default, or sampled with a preset and flags.
    /// With --replay, run a reply the page exported again instead, and exit 1 unless
    /// it comes out byte for byte the same.
    Generate {
        model: PathBuf,
        #[command(flatten)]
        chat: OptChatArgs,
        #[command(flatten)]
        gen: GenArgs,
        /// A replay bundle (the page's "Export for replay"): its messages, sampler,
        /// seed, limits and stops replace every other flag.
        #[arg(long, conflicts_with_all = REPLAY_SETS)]
        replay: Option<PathBuf>,
    },
    /// Terminal chat: streams replies; /reset, /clear, /continue (more of the last
    /// reply), /stats, /quit, and with
    /// --tools, /tool RESULT to answer the model's tool calls.
    Chat {
        model: PathBuf,
        /// A system message to start the transcript with.
        #[arg(long)]
        system: Option<String>,
        /// Tools JSON file (a list of function schemas) for the template; the model's
        /// tool calls are then parsed out of its replies.
        #[arg(long)]
        tools: Option<PathBuf>,
        /// Context positions to allocate for the session.
        #[arg(long, default_value_t = 4096)]
        ctx: usize,
        /// When a turn does not fit the context: stop (refuse it and say by how
        /// much), drop-oldest (leave out the oldest turns, keep the system message) or
        /// truncate-middle (leave out the turns after the first exchange).
        #[arg(long, default_value = "stop")]
        context_policy: String,
        #[command(flatten)]
        gen: GenArgs,
    },
    /// The quality gate: template bytes, ids, first-step logits, greedy and seeded
    /// traces against a golden pack, stopping at the first failing stage. Writes the
    /// evidence record (bound to the file and the pack) to --out; exits 1 on a failure.
    Gate {
        model: PathBuf,
        /// The golden pack (reference/goldens/NAME.json).
        #[arg(long)]
        goldens: PathBuf,
        /// Where to write the evidence record (default: MODEL.evidence.json).
        #[arg(long)]
        out: Option<PathBuf>,
    },
    /// Behaviour gates on the sets in eval/: `clarify` (does the model ask instead
    /// of inventing, with the clarify-first policy on and off) and `loops` (pathological
    /// loops and natural endings, chat preset against no repetition penalty).
    Eval {
        #[command(subcommand)]
        which: EvalCmd,
    },
    /// Prefill and decode tok/s, peak RSS, weight bytes and the decode roofline.
    Bench {
        model: PathBuf,
        #[arg(long, default_value_t = 128)]
        prompt_tokens: usize,
        #[arg(long, default_value_t = 128)]
        gen_tokens: usize,
        /// Native threads (default: all cores).
        #[arg(long)]
        threads: Option<usize>,
        /// Measure every kernel path this machine has (each in its own process,
        /// alternated over --rounds), and say whether the default is the fastest.
        #[arg(long)]
        paths: bool,
        /// Rounds for --paths.
        #[arg(long, default_value_t = 3)]
        rounds: usize,
    },
}

#[derive(Subcommand)]
enum EvalCmd {
    /// Clarification, useful-question, false-clarification and fabrication rates.
    Clarify {
        model: PathBuf,
        /// Sets to run (repeatable; default eval/clarify.jsonl,
        /// eval/clarify_heldout.jsonl and eval/clarify_fresh.jsonl).
        #[arg(long)]
        set: Vec<PathBuf>,
        /// Only this many cases per set, spread evenly (a quick sample).
        #[arg(long)]
        sample: Option<usize>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = 64)]
        max_tokens: usize,
        /// on, off or both.
        #[arg(long, default_value = "both")]
        policy: String,
        /// The sampler preset the replies are drawn with.
        #[arg(long, default_value = "chat")]
        preset: String,
        /// Every reply, its decision and its score, as JSON lines.
        #[arg(long)]
        out: Option<PathBuf>,
        /// Score the replies of an earlier run's --out file instead of generating
        /// (MODEL then only names the report).
        #[arg(long)]
        from: Option<PathBuf>,
        /// Clarifying replies sampled where the policy fires, the one the model's
        /// logits tie best to the note kept: an experiment, not adopted (pick.rs,
        /// docs/behaviour.md). 1 is what production does.
        #[arg(long, default_value_t = 1)]
        candidates: usize,
        /// Decide by the rules alone, though the model carries a clarify probe: the
        /// comparison docs/behaviour.md reports.
        #[arg(long)]
        no_probe: bool,
    },
    /// Fit this conversion's clarify probe (runtime/src/clarify/probe.rs) on the
    /// clarify sets, each held out in turn to measure it; `slm convert
    /// --clarify-probe` writes it into the model.
    Probe {
        model: PathBuf,
        /// Sets to fit on, one author each (repeatable; default the three committed
        /// sets and eval/probes/clarify_probe4.jsonl to clarify_probe17.jsonl; the 18th
        /// author's set is kept out, read blind).
        #[arg(long)]
        set: Vec<PathBuf>,
        /// The layer whose residual stream is read (default 70% of the depth).
        #[arg(long)]
        layer: Option<usize>,
        /// Where to write the probe (JSON).
        #[arg(short, long)]
        out: PathBuf,
    },
    /// Pathological loops, natural termination and median length.
    Loops {
        model: PathBuf,
        #[arg(long, default_value = "eval/loops.jsonl")]
        set: PathBuf,
        #[arg(long)]
        sample: Option<usize>,
        #[arg(long, default_value_t = 1)]
        seed: u64,
        #[arg(long, default_value_t = slm_runtime::engine::REPLY_BUDGET)]
        max_tokens: usize,
        /// Try the chat preset with this repetition penalty instead of its own (to
        /// tune the preset from these numbers; the reference arm stays at 1.0).
        #[arg(long)]
        repetition_penalty: Option<f32>,
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

/// The flags a replay bundle sets itself (`--replay` refuses them).
const REPLAY_SETS: [&str; 21] = [
    "messages",
    "tools",
    "no_generation_prompt",
    "continue_final_message",
    "now",
    "max_tokens",
    "preset",
    "temperature",
    "top_k",
    "top_p",
    "min_p",
    "typical_p",
    "repetition_penalty",
    "presence_penalty",
    "frequency_penalty",
    "logit_bias",
    "seed",
    "stop",
    "stop_token",
    "no_loop_detection",
    "clarify_first",
];

#[derive(Args)]
struct GenArgs {
    #[arg(long, default_value_t = slm_runtime::engine::REPLY_BUDGET)]
    max_tokens: usize,
    /// chat, precise, creative, code, json (greedy) or model (generation_config).
    /// Without a preset: greedy, or, when a sampling flag (--temperature, --top-k,
    /// --top-p, --min-p, --typical-p, --seed) is given, transformers' do_sample=True
    /// defaults (temperature 1, top-k 50) under the flags.
    #[arg(long)]
    preset: Option<String>,
    #[arg(long)]
    temperature: Option<f32>,
    #[arg(long)]
    top_k: Option<usize>,
    #[arg(long)]
    top_p: Option<f32>,
    #[arg(long)]
    min_p: Option<f32>,
    #[arg(long)]
    typical_p: Option<f32>,
    #[arg(long)]
    repetition_penalty: Option<f32>,
    #[arg(long)]
    presence_penalty: Option<f32>,
    #[arg(long)]
    frequency_penalty: Option<f32>,
    /// ID=BIAS, repeatable.
    #[arg(long)]
    logit_bias: Vec<String>,
    /// Seed of the sampler's random draws (default 0).
    #[arg(long)]
    seed: Option<u64>,
    /// Stop when the text contains this string (repeatable); it is not emitted.
    #[arg(long)]
    stop: Vec<String>,
    /// Stop at this token id (repeatable), besides the model's EOS ids.
    #[arg(long)]
    stop_token: Vec<u32>,
    /// Turn off the repeated n-gram detector.
    #[arg(long)]
    no_loop_detection: bool,
    /// Write the per-step record (candidates, probabilities, draws) as JSON.
    #[arg(long)]
    trace: Option<PathBuf>,
    /// Ask instead of inventing: when the user's message is materially
    /// underspecified (no text to translate, no language, no place, …), a visible
    /// note joins it and the model asks for the missing piece. With --json, the
    /// output's "policy" says what was decided and why.
    #[arg(long)]
    clarify_first: bool,
}

impl GenArgs {
    /// The sampling flags given, by name: each one changes only a sampled draw.
    fn sampling_flags(&self) -> Vec<&'static str> {
        [
            ("--temperature", self.temperature.is_some()),
            ("--top-k", self.top_k.is_some()),
            ("--top-p", self.top_p.is_some()),
            ("--min-p", self.min_p.is_some()),
            ("--typical-p", self.typical_p.is_some()),
            ("--seed", self.seed.is_some()),
        ]
        .into_iter()
        .filter(|(_, given)| *given)
        .map(|(n, _)| n)
        .collect()
    }

    /// The effective sampler: the preset (or the documented base), then every flag.
    /// A flag the result would ignore (a sampling flag under a greedy sampler) is an
    /// error, never a silent no-op.
    fn options(&self, text: &TextSide) -> Result<GenerateOptions> {
        let flags = self.sampling_flags();
        let mut c = match self.preset.as_deref() {
            Some(p) => {
                let m = &text.manifest;
                SamplerConfig::preset_for_model(p, &m.generation_config, &m.preset_tuning)
                    .ok_or_else(|| {
                        SlmError::Invalid(format!(
                            "--preset {p}: expected model or one of {:?}",
                            SamplerConfig::preset_names()
                        ))
                    })?
            }
            None if flags.is_empty() => SamplerConfig::default(),
            None => SamplerConfig::hf_sampling_defaults(),
        };
        let overrides = [
            (self.temperature, &mut c.temperature),
            (self.top_p, &mut c.top_p),
            (self.min_p, &mut c.min_p),
            (self.typical_p, &mut c.typical_p),
            (self.repetition_penalty, &mut c.repetition_penalty),
            (self.presence_penalty, &mut c.presence_penalty),
            (self.frequency_penalty, &mut c.frequency_penalty),
        ];
        for (flag, field) in overrides {
            if let Some(v) = flag {
                *field = v;
            }
        }
        if let Some(k) = self.top_k {
            c.top_k = k;
        }
        if c.is_greedy() {
            // temperature 0 and top-k 1 are how a flag asks for greedy; every other
            // sampling flag would be ignored.
            let ignored: Vec<&str> = flags
                .iter()
                .copied()
                .filter(|f| match *f {
                    "--temperature" => self.temperature != Some(0.0),
                    "--top-k" => self.top_k != Some(1),
                    _ => true,
                })
                .collect();
            if !ignored.is_empty() {
                let why = match self.preset.as_deref() {
                    _ if self.temperature == Some(0.0) => {
                        "--temperature 0 makes it greedy".to_string()
                    }
                    _ if self.top_k == Some(1) => "--top-k 1 makes it greedy".to_string(),
                    Some(p) => format!("preset {p} is greedy"),
                    None => "it is greedy".to_string(),
                };
                return Err(SlmError::Invalid(format!(
                    "{} would be ignored: the sampler is greedy ({why}); give --preset chat, or a --temperature above 0 with top-k other than 1",
                    ignored.join(", ")
                )));
            }
        }
        for b in &self.logit_bias {
            let bad = || SlmError::Invalid(format!("--logit-bias {b}: expected ID=BIAS"));
            let (id, v) = b.split_once('=').ok_or_else(bad)?;
            c.logit_bias.push((
                id.parse().map_err(|_| bad())?,
                v.parse().map_err(|_| bad())?,
            ));
        }
        c.seed = self.seed.unwrap_or(0);
        c.validate()?;
        Ok(GenerateOptions {
            sampler: c,
            max_tokens: self.max_tokens,
            stop_strings: self.stop.clone(),
            stop_token_ids: self.stop_token.clone(),
            loop_detection: if self.no_loop_detection {
                None
            } else {
                Some(LoopConfig::default())
            },
            trace: self.trace.is_some(),
            candidates: false,
            abort: None,
            end_at: EndAt::Never,
            barred_start: Vec::new(),
        })
    }
}

#[derive(Args)]
struct ChatArgs {
    /// OpenAI-style messages JSON file ("-" for stdin).
    #[arg(long)]
    messages: PathBuf,
    /// Tools JSON file (a list of function schemas).
    #[arg(long)]
    tools: Option<PathBuf>,
    /// Do not append the assistant turn opener.
    #[arg(long)]
    no_generation_prompt: bool,
    /// Leave the final message (the assistant's) open, so that the model continues
    /// its text, as transformers' continue_final_message renders it.
    #[arg(long)]
    continue_final_message: bool,
    /// Unix time for templates that call strftime_now (default: now).
    #[arg(long)]
    now: Option<i64>,
}

impl OptChatArgs {
    /// The chat arguments of a command that needs messages.
    fn required(self) -> Result<ChatArgs> {
        Ok(ChatArgs {
            messages: self
                .messages
                .ok_or_else(|| SlmError::Invalid("--messages is required (or --replay)".into()))?,
            tools: self.tools,
            no_generation_prompt: self.no_generation_prompt,
            continue_final_message: self.continue_final_message,
            now: self.now,
        })
    }
}

#[derive(Args)]
struct OptChatArgs {
    #[arg(long)]
    messages: Option<PathBuf>,
    #[arg(long)]
    tools: Option<PathBuf>,
    #[arg(long)]
    no_generation_prompt: bool,
    #[arg(long)]
    continue_final_message: bool,
    #[arg(long)]
    now: Option<i64>,
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let json_mode = cli.json;
    match run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if json_mode {
                eprintln!(
                    "{}",
                    json!({"error": {"kind": e.kind(), "message": e.to_string()}})
                );
            } else {
                eprintln!("error: {e}");
            }
            ExitCode::from(1)
        }
    }
}

fn read_text_file(p: &Path) -> Result<String> {
    let mut s = String::new();
    if p == Path::new("-") {
        std::io::stdin()
            .read_to_string(&mut s)
            .map_err(|e| SlmError::io("stdin", e))?;
    } else {
        let b = std::fs::read(p).map_err(|e| SlmError::io(p.display(), e))?;
        s = String::from_utf8(b)
            .map_err(|_| SlmError::Invalid(format!("{} is not UTF-8", p.display())))?;
    }
    Ok(s)
}

/// A JSON file as serde values (tools, messages the policy edits).
fn read_json_file(p: &Path) -> Result<Value> {
    serde_json::from_str(&read_text_file(p)?)
        .map_err(|e| SlmError::Invalid(format!("{}: not JSON: {e}", p.display())))
}

/// A JSON file as template values: integers of any width stay exact, as in Python.
fn read_template_json(p: &Path) -> Result<minijinja::Value> {
    let s = read_text_file(p)?;
    slm_runtime::template::parse_json(&s)
        .map_err(|e| SlmError::Invalid(format!("{}: {e}", p.display())))
}

fn now_unix() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

/// Render `messages` (+tools) through the model's template.
fn render(text: &TextSide, chat: &ChatArgs) -> Result<String> {
    render_messages(text, chat, &read_text_file(&chat.messages)?)
}

/// `render` with the messages given as JSON text (the file's, or the policy's edit).
fn render_messages(text: &TextSide, chat: &ChatArgs, messages: &str) -> Result<String> {
    if chat.continue_final_message {
        return render_continued(text, chat, messages);
    }
    let m = slm_runtime::template::parse_json(messages)
        .map_err(|e| SlmError::Invalid(format!("{}: {e}", chat.messages.display())))?;
    let t = chat.tools.as_deref().map(read_template_json).transpose()?;
    text.render_values(
        m,
        t,
        !chat.no_generation_prompt,
        chat.now.unwrap_or_else(now_unix),
    )
}

/// `render_messages` with the final message left open for the model to continue
/// (`--continue-final-message`): it must be the assistant's, as in transformers.
fn render_continued(text: &TextSide, chat: &ChatArgs, messages: &str) -> Result<String> {
    let list: Vec<Value> = serde_json::from_str(messages).map_err(|e| {
        SlmError::Invalid(format!(
            "{}: expected a list of messages: {e}",
            chat.messages.display()
        ))
    })?;
    if list.last().map(|m| &m["role"]) != Some(&json!("assistant")) {
        return Err(SlmError::Invalid(format!(
            "{}: --continue-final-message needs the last message to be the assistant's",
            chat.messages.display()
        )));
    }
    render_open(text, chat, &list)
}

/// Render `list` (+ the tools of `--tools`) with its final message, the assistant's,
/// left open, as transformers' `continue_final_message` renders it.
fn render_open(text: &TextSide, chat: &ChatArgs, list: &[Value]) -> Result<String> {
    let tools = chat.tools.as_deref().map(read_json_file).transpose()?;
    text.render_prompt(
        list,
        tools.as_ref(),
        true,
        chat.now.unwrap_or_else(now_unix),
    )
}

/// The rendered prompt and its token ids.
fn prompt(text: &TextSide, chat: &ChatArgs) -> Result<(String, Vec<u32>)> {
    let r = render(text, chat)?;
    let ids = text.encode_rendered(&r)?;
    Ok((r, ids))
}

/// The messages of `--messages` with the clarify-first policy applied (the note joins
/// the last user message when it fires), the decision, and the user's words as written.
/// The model's clarify probe, if it carries one, reads the messages as written first.
fn clarified_messages(
    eng: &Engine,
    chat: &ChatArgs,
) -> Result<(Vec<Value>, slm_runtime::clarify::Decision, String)> {
    let s = read_text_file(&chat.messages)?;
    let messages: Value = serde_json::from_str(&s)
        .map_err(|e| SlmError::Invalid(format!("{}: not JSON: {e}", chat.messages.display())))?;
    let Value::Array(mut list) = messages else {
        return Err(SlmError::Invalid(format!(
            "{}: expected a list of messages",
            chat.messages.display()
        )));
    };
    let user = list
        .iter()
        .rev()
        .find(|m| m["role"] == "user")
        .and_then(|m| m["content"].as_str())
        .unwrap_or_default()
        .to_string();
    // The prompt as written is the one a reply without the policy would get.
    let reading = match eng.clarify_probe() {
        Some(_) => eng.probe_reading(&prompt(&eng.text, chat)?.1)?,
        None => None,
    };
    let d = slm_runtime::clarify::apply_read(&mut list, reading.as_ref());
    Ok((list, d, user))
}

/// The prompt of one attempt at a clarifying reply: the messages (note included) and
/// the reply's `lead`, as transformers' `continue_final_message` renders them, so
/// `--trace` and the ids show exactly what the model was given.
fn attempt_prompt(
    text: &TextSide,
    chat: &ChatArgs,
    messages: &[Value],
    lead: &str,
) -> Result<(String, Vec<u32>)> {
    let mut list = messages.to_vec();
    list.push(json!({"role": "assistant", "content": lead}));
    let r = render_open(text, chat, &list)?;
    let ids = text.encode_rendered(&r)?;
    Ok((r, ids))
}

/// The policy's decision as a status line.
fn policy_line(d: &slm_runtime::clarify::Decision) -> String {
    format!("[{}]", d.summary())
}

fn open_text(model: &Path) -> Result<TextSide> {
    TextSide::new(SlmFile::open(model)?.manifest)
}

fn stdout_write(b: &[u8]) -> Result<()> {
    let mut o = std::io::stdout().lock();
    o.write_all(b)
        .and_then(|_| o.flush())
        .map_err(|e| SlmError::io("stdout", e))
}

fn print_json(v: &Value) -> Result<()> {
    stdout_write(format!("{}\n", serde_json::to_string_pretty(v).unwrap()).as_bytes())
}

fn run(cli: Cli) -> Result<()> {
    match cli.cmd {
        Cmd::Convert {
            src,
            out,
            quant,
            requantize,
            tune_preset,
            clarify_probe,
        } => {
            let q = QuantPolicy::parse(&quant).ok_or_else(|| {
                SlmError::Invalid(format!("--quant {quant}: expected {}", QuantPolicy::NAMES))
            })?;
            // Before the source is read (the writer checks it too).
            q.check_requantize(requantize)?;
            let mut tuning = slm_runtime::sampling::PresetTuning::new();
            for t in &tune_preset {
                SamplerConfig::parse_tuning(t, &mut tuning)?;
            }
            let mut bar = progress::Bar::new("hashing source", cli.json);
            let mut imported = import::open(&src, &mut |d, t| bar.set(d, t))?;
            imported.preset_tuning = tuning;
            if let Some(p) = &clarify_probe {
                let s = read_text_file(p)?;
                imported.clarify_probe = Some(serde_json::from_str(&s).map_err(|e| {
                    SlmError::Invalid(format!("{}: not a clarify probe: {e}", p.display()))
                })?);
            }
            bar.finish();
            // Which matrices keep the source's precision instead of taking --quant.
            let kept = imported
                .weights
                .tensors()
                .iter()
                .filter(|t| !requantize && q.dtype_for(t, false) != q.dtype_for(t, true))
                .count();
            let mut bar = progress::Bar::new("writing tensors", cli.json);
            let summary = writer::write(
                imported,
                q,
                requantize,
                &out,
                slm_runtime::CONVERTER,
                &mut |i, n, _| bar.set(i as u64, n as u64),
            )?;
            bar.finish();
            let m = &summary.manifest;
            let mut dtypes = std::collections::BTreeMap::<&str, usize>::new();
            for t in &m.tensors {
                *dtypes.entry(t.dtype.name()).or_default() += 1;
            }
            if cli.json {
                print_json(&json!({
                    "out": out, "bytes": summary.file_bytes, "tensors": m.tensors.len(),
                    "quant": q.name(), "requantize": requantize, "kept_source_precision": kept,
                    "dtypes": dtypes, "data_sha256": m.data.sha256,
                }))
            } else {
                let dtypes: Vec<String> = dtypes.iter().map(|(k, v)| format!("{v} {k}")).collect();
                println!(
                    "wrote {} ({} bytes, {} tensors: {}; {} chunks, quant {})",
                    out.display(),
                    summary.file_bytes,
                    m.tensors.len(),
                    dtypes.join(", "),
                    m.data.chunk_sha256.len(),
                    q.name()
                );
                if kept > 0 {
                    println!(
                        "{kept} matrices were already quantized in the source and keep that precision \
                         (their blocks copied) instead of taking the {} policy; --requantize \
                         applies the {} policy to them too (a second rounding)",
                        q.name(),
                        q.name()
                    );
                }
                Ok(())
            }
        }
        Cmd::Inspect { model } => {
            let f = SlmFile::open(&model)?;
            let m = &f.manifest;
            let mut by_type = std::collections::BTreeMap::<&str, (usize, u64)>::new();
            for t in &m.tensors {
                let e = by_type.entry(t.dtype.name()).or_default();
                e.0 += 1;
                e.1 += t.length;
            }
            if cli.json {
                let mut v = serde_json::to_value(m).unwrap();
                // The tokenizer graph is large; inspect reports its size and hash instead.
                let tj = &m.tokenizer.tokenizer_json;
                v["tokenizer"]["tokenizer_json"] = json!({"bytes": tj.len(), "sha256": slm_runtime::format::layout::sha256_hex(tj.as_bytes())});
                v["file"] = json!({"bytes": f.file_len, "data_offset": f.data_offset(), "manifest_bytes": f.header.manifest_len});
                // What loading it takes (the page's catalog carries this `needs`).
                let needs = MemoryNeeds::of(m);
                v["memory"] = json!({"needs": needs, "plan": needs.at(needs.max_context)});
                v["execution"] = json!(ExecutionFacts::of_manifest(m, Threads::all_count()));
                v["tokenizer_facts"] = json!(TokenizerFacts::of(&TextSide::new(m.clone())?));
                print_json(&v)
            } else {
                let c = &m.model;
                println!("file          {} ({} bytes)", model.display(), f.file_len);
                println!("format        {} v{}", m.format, m.format_version);
                println!("architecture  {:?}", c.architecture);
                println!(
                    "shape         {} layers, hidden {}, ffn {}, heads {} / kv {}, head_dim {}, vocab {}",
                    c.num_layers, c.hidden_size, c.intermediate_size, c.num_heads, c.num_kv_heads, c.head_dim, c.vocab_size
                );
                println!(
                    "rope          theta {}, scaling {}",
                    c.rope_theta,
                    c.rope_scaling
                        .as_ref()
                        .map(|s| format!("{s:?}"))
                        .unwrap_or("none".into())
                );
                println!("norm eps      {}", c.rms_norm_eps);
                println!("context       {}", c.max_position_embeddings);
                let plan = MemoryNeeds::of(m).at(c.max_position_embeddings as u64);
                println!(
                    "memory        {} at {} positions (weights {}, KV {}, buffers {})",
                    mb(plan.total),
                    plan.context,
                    mb(plan.weights),
                    mb(plan.kv),
                    mb(plan.other)
                );
                println!("tied head     {}", c.tie_word_embeddings);
                println!("qkv bias      {}", c.attention_bias);
                println!(
                    "eos ids       {:?} ({})",
                    m.stop.eos_token_ids, m.stop.source
                );
                println!(
                    "special       {}",
                    serde_json::to_string(&m.tokenizer.special_tokens).unwrap()
                );
                println!(
                    "chat template {}",
                    m.tokenizer
                        .chat_template
                        .as_ref()
                        .map(|t| format!("{} bytes", t.len()))
                        .unwrap_or("none".into())
                );
                println!("tokenizer     {} bytes", m.tokenizer.tokenizer_json.len());
                for (name, fields) in &m.preset_tuning {
                    println!(
                        "preset tuned  {name}: {}",
                        slm_runtime::sampling::tuning_text(fields)
                    );
                }
                if let Some(cp) = &m.clarify_probe {
                    let (u, n, f, c) = cp.fit.held_out.iter().fold((0, 0, 0, 0), |a, h| {
                        (
                            a.0 + h.fired_with_rules,
                            a.1 + h.underspecified,
                            a.2 + h.false_fires_with_rules,
                            a.3 + h.controls,
                        )
                    });
                    println!(
                        "clarify probe layer {}, threshold {:.3}, fitted on {} sets; each held out, with the rules: fired on {u}/{n} underspecified, {f}/{c} controls",
                        cp.layer,
                        cp.threshold,
                        cp.fit.sets.len()
                    );
                }
                let p = &m.provenance;
                println!(
                    "provenance    {:?}, converter {}, quant {}{}, quality gate {}",
                    p.source_kind,
                    p.converter,
                    p.quant,
                    match p.requantize {
                        Some(true) => " (re-quantized)",
                        Some(false) => " (quantized source tensors kept)",
                        None => "",
                    },
                    p.quality_gate
                );
                for s in &p.source_files {
                    println!(
                        "  source      {} {} bytes sha256 {}",
                        s.name, s.bytes, s.sha256
                    );
                }
                for (k, (n, b)) in &by_type {
                    println!("tensors       {n} × {k}, {b} bytes");
                }
                println!(
                    "data          {} bytes in {} chunks of {}, sha256 {}",
                    m.data.length,
                    m.data.chunk_sha256.len(),
                    m.data.chunk_size,
                    m.data.sha256
                );
                let x = ExecutionFacts::of_manifest(m, Threads::all_count());
                println!("rope applied  {}", x.rope);
                println!("activations   {}", x.activations);
                println!("kernels       {} on {} threads", x.kernels, x.threads);
                let t = TokenizerFacts::of(&TextSide::new(m.clone())?);
                println!("tok. model    {}", t.model);
                println!("normalizer    {}", t.normalizer);
                println!("pre-tokenizer {}", t.pre_tokenizer);
                println!("decoder       {}", t.decoder);
                let it = |x: &Option<slm_runtime::facts::IdText>| {
                    x.as_ref()
                        .map_or("none".into(), |x| format!("{} {:?}", x.id, x.text))
                };
                println!(
                    "bos / pad / unk {} / {} / {}; add_bos_token {}; clean-up {:?} (applied: {})",
                    it(&t.bos),
                    it(&t.pad),
                    it(&t.unk),
                    t.add_bos_token,
                    t.clean_up_config,
                    t.clean_up_applied
                );
                for a in &t.added_tokens {
                    println!(
                        "  added       {} {:?} special={} lstrip={} rstrip={} normalized={} single_word={}",
                        a.id, a.content, a.special, a.lstrip, a.rstrip, a.normalized, a.single_word
                    );
                }
                Ok(())
            }
        }
        Cmd::Verify { model } => {
            let mut f = SlmFile::open(&model)?;
            let mut bar = progress::Bar::new("verifying", cli.json);
            let file_sha = f.verify(&mut |d, t| bar.set(d, t))?;
            bar.finish();
            let n = f.manifest.data.chunk_sha256.len();
            if cli.json {
                print_json(
                    &json!({"ok": true, "chunks": n, "data_sha256": f.manifest.data.sha256, "file_sha256": file_sha}),
                )
            } else {
                println!("ok: manifest and {n} chunks verified; file sha256 {file_sha}");
                Ok(())
            }
        }
        Cmd::Render { model, chat } => {
            let text = open_text(&model)?;
            let r = render(&text, &chat)?;
            if cli.json {
                print_json(
                    &json!({"rendered": r, "sha256": slm_runtime::format::layout::sha256_hex(r.as_bytes())}),
                )
            } else {
                stdout_write(r.as_bytes())
            }
        }
        Cmd::Gate {
            model,
            goldens,
            out,
        } => {
            let eng = Engine::load_file(&model)?;
            let pack = read_text_file(&goldens)?;
            let runtime = json!({
                "slm": slm_runtime::CONVERTER,
                "kernel": slm_runtime::kernels::active().name,
                "activation_bits": slm_runtime::kernels::act_bits(),
            });
            let ev = slm_runtime::gate::run(&eng, &pack, runtime)?;
            let out = out.unwrap_or_else(|| {
                let mut p = model.clone().into_os_string();
                p.push(".evidence.json");
                PathBuf::from(p)
            });
            let text = serde_json::to_string_pretty(&ev).unwrap() + "\n";
            std::fs::write(&out, text).map_err(|e| SlmError::io(out.display(), e))?;
            if cli.json {
                print_json(&serde_json::to_value(&ev).unwrap())?;
            } else {
                for s in &ev.stages {
                    eprintln!(
                        "{:<8} {} ({} checked) {}: {}",
                        s.stage.as_str(),
                        if s.passed { "pass" } else { "FAIL" },
                        s.checked,
                        s.criterion,
                        s.figures_text()
                    );
                    for f in &s.failures {
                        eprintln!("    {f}");
                    }
                }
                eprintln!("evidence: {}", out.display());
                println!("{}", ev.summary());
            }
            match ev.failed_stage {
                None => Ok(()),
                Some(s) => Err(SlmError::Invalid(format!(
                    "the gate failed at the {} stage (evidence written to {})",
                    s.as_str(),
                    out.display()
                ))),
            }
        }
        Cmd::Detokenize {
            model,
            ids,
            skip_special_tokens,
        } => {
            let side = open_text(&model)?;
            let vocab = side.tokenizer.vocab_size();
            if let Some(bad) = ids.iter().find(|&&i| i as usize >= vocab) {
                return Err(SlmError::Invalid(format!(
                    "--ids: token {bad} is outside the vocab of {vocab}"
                )));
            }
            let text = side.decode(&ids, skip_special_tokens)?;
            if cli.json {
                print_json(
                    &json!({"ids": ids, "skip_special_tokens": skip_special_tokens, "text": text}),
                )
            } else {
                stdout_write(text.as_bytes())
            }
        }
        Cmd::Tokenize { model, text, chat } => {
            let side = open_text(&model)?;
            let (ids, rendered) = match (text, chat.messages.is_some()) {
                (Some(t), false) => (side.tokenizer.encode(&t, true)?, None),
                (None, true) => {
                    let (r, ids) = prompt(&side, &chat.required()?)?;
                    (ids, Some(r))
                }
                _ => {
                    return Err(SlmError::Invalid(
                        "give exactly one of --text or --messages".into(),
                    ))
                }
            };
            if cli.json {
                print_json(&json!({"ids": ids, "rendered": rendered}))
            } else {
                stdout_write(
                    format!(
                        "{}\n",
                        ids.iter()
                            .map(|i| i.to_string())
                            .collect::<Vec<_>>()
                            .join(" ")
                    )
                    .as_bytes(),
                )
            }
        }
        Cmd::Logits { model, chat, out } => {
            let eng = Engine::load_file(&model)?;
            let (_, ids) = prompt(&eng.text, &chat)?;
            let logits = eng.first_logits(&ids)?;
            let bytes: Vec<u8> = logits.iter().flat_map(|v| v.to_le_bytes()).collect();
            std::fs::write(&out, bytes).map_err(|e| SlmError::io(out.display(), e))?;
            let top = slm_runtime::engine::argmax(&logits);
            if cli.json {
                print_json(
                    &json!({"out": out, "vocab": logits.len(), "prompt_tokens": ids.len(), "top1": top}),
                )
            } else {
                eprintln!(
                    "wrote {} logits for {} prompt tokens to {} (top-1 {top})",
                    logits.len(),
                    ids.len(),
                    out.display()
                );
                Ok(())
            }
        }
        Cmd::Chat {
            model,
            system,
            tools,
            ctx,
            context_policy,
            gen,
        } => {
            let overflow = match context_policy.as_str() {
                "stop" => Overflow::Stop,
                "drop-oldest" => Overflow::DropOldest,
                "truncate-middle" => Overflow::TruncateMiddle,
                p => {
                    return Err(SlmError::Invalid(format!(
                        "--context-policy {p}: expected stop, drop-oldest or truncate-middle"
                    )))
                }
            };
            chat(
                &model,
                system,
                tools.as_deref(),
                (ctx, overflow),
                &gen,
                cli.json,
            )
        }
        Cmd::Bench {
            model,
            prompt_tokens,
            gen_tokens,
            threads,
            paths: true,
            rounds,
        } => {
            let r = bench::paths(&model, prompt_tokens, gen_tokens, threads, rounds)?;
            if cli.json {
                print_json(&r)
            } else {
                print!("{}", bench::paths_table(&r));
                Ok(())
            }
        }
        Cmd::Bench {
            model,
            prompt_tokens,
            gen_tokens,
            threads,
            ..
        } => {
            let mut eng = Engine::load_file(&model)?;
            let r = bench::run(
                &mut eng,
                &bench::BenchArgs {
                    prompt_tokens,
                    gen_tokens,
                    threads,
                },
            )?;
            if cli.json {
                print_json(&r)
            } else {
                let f = |k: &str| r[k].as_f64().unwrap_or(0.0);
                println!(
                    "{} {} threads {} ({} kernels, {}-bit activations): prefill {:.1} tok/s ({} tokens), decode {:.1} tok/s ({} tokens)",
                    model.display(), r["model"]["quant"].as_str().unwrap_or("?"), r["threads"], r["kernel"].as_str().unwrap_or("?"),
                    r["activation_bits"], f("prefill_tok_s"), r["prompt_tokens"], f("decode_tok_s"), r["gen_tokens"]
                );
                println!(
                    "weights {:.1} MB, kv {:.1} MB, peak RSS {:.1} MB ({} MB on huge pages); read bandwidth {:.1} GB/s → decode roofline {:.1} tok/s ({:.0}% reached)",
                    f("weight_bytes") / 1e6, f("kv_bytes") / 1e6, f("peak_rss_bytes") / 1e6, r["huge_page_bytes"].as_f64().map_or("?".into(), |b| format!("{:.1}", b / 1e6)), f("read_bandwidth_gb_s"),
                    f("decode_roofline_tok_s"), 100.0 * f("decode_fraction_of_roofline")
                );
                Ok(())
            }
        }
        Cmd::Eval { which } => run_eval(which, cli.json),
        Cmd::Generate {
            model,
            replay: Some(bundle),
            ..
        } => {
            let (report, same) = replay::run(&model, &bundle)?;
            if cli.json {
                print_json(&report)?;
            } else {
                stdout_write(report["text"].as_str().unwrap_or_default().as_bytes())?;
                stdout_write(b"\n")?;
                eprintln!(
                    "[replay: {}; stop: {}, {} tokens]",
                    if same {
                        "the same text, byte for byte"
                    } else {
                        "DIFFERENT from the bundle's reply"
                    },
                    report["stop_reason"].as_str().unwrap_or_default(),
                    report["generated"]
                );
            }
            if same {
                Ok(())
            } else {
                Err(SlmError::Invalid(format!(
                    "the replay differs from the bundle's reply (first differing byte: {}, stop reason {} against {})",
                    report["first_difference"], report["stop_reason"], report["expected_stop_reason"]
                )))
            }
        }
        Cmd::Generate {
            model, chat, gen, ..
        } => {
            let chat = chat.required()?;
            let eng = Engine::load_file(&model)?;
            let mut opts = gen.options(&eng.text)?;
            let stream = !cli.json;
            let mut on_text = |piece: &str, _: &slm_runtime::sampling::StepTrace| {
                if stream {
                    let _ = stdout_write(piece.as_bytes());
                }
            };
            let clarified = match gen.clarify_first {
                true => Some(clarified_messages(&eng, &chat)?),
                false => None,
            };
            let policy = clarified.as_ref().map(|c| c.1.clone());
            // Where the policy fired: attempts at the clarifying reply, each starting
            // with a lead and ending at its question, until one names a missing piece
            // (`Decision::next_lead`), as a session settles them.
            let mut attempts = Vec::new();
            let mut tries = None;
            if let Some((messages, d, user)) = clarified.as_ref().filter(|c| c.1.clarify) {
                let (mut named, mut amiss) = (Vec::new(), Vec::new());
                while let Some(lead) = d.next_lead(&named) {
                    if !named.is_empty() && stream {
                        stdout_write(b"\n")?;
                        eprintln!("[the question named no missing piece: trying again]");
                    }
                    let (rendered, ids) = attempt_prompt(&eng.text, &chat, messages, lead)?;
                    opts.end_at = slm_runtime::clarify::reply_end(lead);
                    if stream {
                        stdout_write(lead.as_bytes())?;
                    }
                    let g = eng.generate(&ids, &opts, &mut on_text)?;
                    named.push(d.reply_names_a_piece(user, lead, &g.text));
                    amiss.push(d.reply_asks_amiss(user, lead, &g.text));
                    attempts.push((lead.to_string(), rendered, ids, g));
                }
                let k = slm_runtime::clarify::kept_attempt(&named, &amiss);
                if k + 1 != attempts.len() && stream {
                    stdout_write(b"\n")?;
                    eprintln!(
                        "[no question named a missing piece: attempt {} is kept]",
                        k + 1
                    );
                }
                // Recorded as a session records them (`Turn::tries`).
                let all: Vec<slm_runtime::session::Attempt> = attempts
                    .iter()
                    .enumerate()
                    .map(|(i, (lead, .., g))| slm_runtime::session::Attempt {
                        lead: lead.clone(),
                        text: g.text.clone(),
                        names_a_piece: named[i],
                        asks_amiss: amiss[i],
                        kept: i == k,
                        restates: false,
                        barred_start: Vec::new(),
                    })
                    .collect();
                tries = Some(all);
                let kept = attempts.swap_remove(k);
                attempts = vec![kept];
            }
            let (lead, rendered, ids, g) = match attempts.pop() {
                Some(a) => a,
                None => {
                    // No policy, or a silent one: the file's own text is rendered (its
                    // integers stay exact at any width).
                    let (rendered, ids) = prompt(&eng.text, &chat)?;
                    // A silent policy: a reply that restates the user's question is
                    // tried again, barred from its first token, as a session settles it
                    // (`Session::settle_unled`).
                    // Only a reply to the user message the file ends with.
                    let user = clarified
                        .as_ref()
                        .filter(|c| !c.1.clarify && c.0.last().is_some_and(|m| m["role"] == "user"))
                        .map(|c| &c.2);
                    let mut gens = Vec::new();
                    let mut all: Vec<slm_runtime::session::Attempt> = Vec::new();
                    loop {
                        let g = eng.generate(&ids, &opts, &mut on_text)?;
                        let restates = user
                            .is_some_and(|u| slm_runtime::clarify::restates_request(u, &g.text));
                        if restates || !all.is_empty() {
                            all.push(slm_runtime::session::Attempt::unled(
                                &g.text,
                                restates,
                                &opts.barred_start,
                            ));
                        }
                        let first = g.ids.first().copied();
                        gens.push(g);
                        if !restates
                            || all.len() >= slm_runtime::session::RESTATED_TRIES
                            || first.is_none()
                        {
                            break;
                        }
                        if stream {
                            stdout_write(b"\n")?;
                            eprintln!("[the reply restated the question: trying again]");
                        }
                        opts.barred_start.extend(first);
                    }
                    let k = slm_runtime::session::kept_answer(&all);
                    if let Some(a) = all.get_mut(k) {
                        a.kept = true;
                        tries = Some(all);
                    }
                    if k + 1 != gens.len() && stream {
                        stdout_write(b"\n")?;
                        eprintln!("[every reply restated the question: attempt 1 is kept]");
                        stdout_write(gens[k].text.as_bytes())?;
                    }
                    (String::new(), rendered, ids, gens.swap_remove(k))
                }
            };
            if let Some(path) = &gen.trace {
                let record = slm_runtime::trace::record(&eng, &rendered, &ids, &opts.sampler, &g);
                std::fs::write(path, serde_json::to_vec_pretty(&record).unwrap())
                    .map_err(|e| SlmError::io(path.display(), e))?;
            }
            if cli.json {
                print_json(&json!({
                    "ids": g.ids, "text": g.text, "reply": format!("{lead}{}", g.text),
                    "stop_reason": g.stop_reason, "stop_detail": g.stop_detail,
                    "prompt_tokens": g.prompt_tokens, "timings": g.timings,
                    "sampler": opts.sampler, "greedy": opts.sampler.is_greedy(),
                    "policy": policy.as_ref().map(|d| d.to_json()),
                    "tries": tries,
                }))
            } else {
                stdout_write(b"\n")?;
                if let Some(d) = &policy {
                    eprintln!("{}", policy_line(d));
                }
                eprintln!(
                    "[stop: {}, {} tokens, {}]",
                    g.stop_reason.as_str(),
                    g.ids.len(),
                    g.stop_detail
                );
                Ok(())
            }
        }
    }
}

fn model_name(p: &Path) -> String {
    p.file_stem()
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_default()
}

fn run_eval(which: EvalCmd, json_mode: bool) -> Result<()> {
    let report = match which {
        EvalCmd::Clarify {
            model,
            set,
            sample,
            seed,
            max_tokens,
            policy,
            preset,
            out,
            from,
            candidates,
            no_probe,
        } => {
            if candidates == 0 {
                return Err(SlmError::Invalid(
                    "--candidates 0: at least 1 reply is needed".into(),
                ));
            }
            let policies: &[bool] = match policy.as_str() {
                "on" => &[true],
                "off" => &[false],
                "both" => &[false, true],
                p => {
                    return Err(SlmError::Invalid(format!(
                        "--policy {p}: expected on, off or both"
                    )))
                }
            };
            let sets = if set.is_empty() {
                vec![
                    PathBuf::from("eval/clarify.jsonl"),
                    PathBuf::from("eval/clarify_heldout.jsonl"),
                    PathBuf::from("eval/clarify_fresh.jsonl"),
                ]
            } else {
                set
            };
            let eng;
            let replies = match &from {
                Some(f) => eval::Replies::saved(f)?,
                None => {
                    eng = Engine::load_file(&model)?;
                    eval::Replies::Model(&eng)
                }
            };
            eval::clarify(
                &replies,
                &model_name(&model),
                &eval::ClarifyRun {
                    preset: &preset,
                    sets: &sets,
                    sample,
                    seed,
                    max_tokens,
                    policies,
                    out: out.as_deref(),
                    quiet: json_mode,
                    candidates,
                    probe: !no_probe,
                },
            )?
        }
        EvalCmd::Probe {
            model,
            set,
            layer,
            out,
        } => {
            let sets = if set.is_empty() {
                [
                    "eval/clarify.jsonl",
                    "eval/clarify_heldout.jsonl",
                    "eval/clarify_fresh.jsonl",
                    "eval/probes/clarify_probe4.jsonl",
                    "eval/probes/clarify_probe5.jsonl",
                    "eval/probes/clarify_probe6.jsonl",
                    "eval/probes/clarify_probe7.jsonl",
                    "eval/probes/clarify_probe8.jsonl",
                    "eval/probes/clarify_probe9.jsonl",
                    "eval/probes/clarify_probe10.jsonl",
                    "eval/probes/clarify_probe11.jsonl",
                    "eval/probes/clarify_probe12.jsonl",
                    "eval/probes/clarify_probe13.jsonl",
                    "eval/probes/clarify_probe14.jsonl",
                    "eval/probes/clarify_probe15.jsonl",
                    "eval/probes/clarify_probe16.jsonl",
                    "eval/probes/clarify_probe17.jsonl",
                ]
                .map(PathBuf::from)
                .to_vec()
            } else {
                set
            };
            let eng = Engine::load_file(&model)?;
            let p = eval::fit_probe(
                &eng,
                &eval::ProbeRun {
                    sets: &sets,
                    layer,
                    quiet: json_mode,
                },
            )?;
            let text = serde_json::to_string(&p).expect("a probe serializes");
            std::fs::write(&out, format!("{text}\n"))
                .map_err(|e| SlmError::io(out.display(), e))?;
            let report = json!({
                "out": out, "layer": p.layer, "threshold": p.threshold,
                "held_out": p.fit.held_out,
            });
            if !json_mode {
                println!(
                    "clarify probe at layer {} (threshold {:.3}) written to {}",
                    p.layer,
                    p.threshold,
                    out.display()
                );
                println!("each set read by a probe fitted without it:");
                for h in &p.fit.held_out {
                    println!(
                        "  {}: fired on {}/{} underspecified, {}/{} controls; first slot right on {}/{}; with the rules {}/{} and {}/{}",
                        h.set, h.fired, h.underspecified, h.false_fires, h.controls, h.slot_right, h.underspecified,
                        h.fired_with_rules, h.underspecified, h.false_fires_with_rules, h.controls
                    );
                }
            }
            report
        }
        EvalCmd::Loops {
            model,
            set,
            sample,
            seed,
            max_tokens,
            repetition_penalty,
            out,
        } => {
            let eng = Engine::load_file(&model)?;
            eval::loops(
                &eng,
                &model_name(&model),
                &eval::LoopsRun {
                    set: &set,
                    sample,
                    seed,
                    max_tokens,
                    repetition_penalty,
                    out: out.as_deref(),
                    quiet: json_mode,
                },
            )?
        }
    };
    if json_mode {
        print_json(&report)?;
    }
    Ok(())
}

/// The `slm chat` loop. Replies stream to stdout; status lines go to stderr.
fn chat(
    model: &Path,
    system: Option<String>,
    tools: Option<&Path>,
    (ctx, overflow): (usize, Overflow),
    gen: &GenArgs,
    json_mode: bool,
) -> Result<()> {
    use slm_runtime::session::Session;
    use std::io::BufRead;
    let eng = Engine::load_file(model)?;
    let opts = gen.options(&eng.text)?;
    let mut session = Session::new(&eng, ctx);
    session.clarify_first = gen.clarify_first;
    session.overflow = overflow;
    if let Some(t) = tools {
        let v = read_json_file(t)?;
        slm_runtime::tool_calls::check_tools(&v)
            .map_err(|e| SlmError::Invalid(format!("{}: {e}", t.display())))?;
        session.tools = Some(v);
    }
    if let Some(sys) = system {
        session
            .messages
            .push(json!({"role": "system", "content": sys}));
    }
    eprintln!(
        "chat with {} (kv capacity {}): /reset /clear /continue /stats /quit",
        model.display(),
        session.capacity()
    );
    let stdin = std::io::stdin();
    for line in stdin.lock().lines() {
        let line = line.map_err(|e| SlmError::io("stdin", e))?;
        let status = |s: &Session| {
            let div = s.divergence(now_unix()).ok().flatten();
            json!({"kv_len": s.kv_len(), "capacity": s.capacity(), "messages": s.messages.len(), "divergence": div})
        };
        match line.trim() {
            "" => continue,
            "/quit" | "/exit" => break,
            "/reset" => {
                session.reset_context();
                eprintln!("[context reset: KV cache cleared, {} messages kept; the next turn re-prefills them]", session.messages.len());
            }
            "/clear" => {
                session.clear_transcript();
                eprintln!("[transcript cleared: KV cache kept ({} tokens); the next turn reuses what still matches]", session.kv_len());
            }
            "/stats" => eprintln!("{}", status(&session)),
            text => {
                let cont = text == "/continue";
                let mut on_text = |piece: &str, _: &slm_runtime::sampling::StepTrace| {
                    if !json_mode {
                        let _ = stdout_write(piece.as_bytes());
                    }
                };
                let turn = match text.strip_prefix("/tool ") {
                    // The answer to the last reply's tool calls, as a `tool` message.
                    Some(result) => {
                        if let Err(e) = session.add_tool_result(result) {
                            eprintln!("error: {e}");
                            continue;
                        }
                        let t = session.reply(&opts, now_unix(), &mut on_text);
                        if t.is_err() {
                            session.messages.pop();
                        }
                        t
                    }
                    // More of the last reply, joining it.
                    None if cont => session.continue_reply(&opts, now_unix(), &mut on_text),
                    None => session.begin_send(text, &opts, now_unix()).and_then(|mut p| {
                        // The policy's lead starts the reply; the model continues it. A
                        // clarifying reply that names no missing piece is tried again
                        // with another lead (`Session::settle`).
                        loop {
                            if let (Some(lead), false) = (p.lead(), json_mode) {
                                let _ = stdout_write(lead.as_bytes());
                            }
                            while !session.step(&mut p, &mut on_text) {}
                            let t = session.finish(p, &mut on_text);
                            match session.settle(t, &opts, now_unix())? {
                                Settled::Again(next) => {
                                    if !json_mode {
                                        let _ = stdout_write(b"\n");
                                        match next.lead() {
                                            Some(_) => eprintln!("[the question named no missing piece: trying again]"),
                                            None => eprintln!("[the reply restated the question: trying again]"),
                                        }
                                    }
                                    p = *next;
                                }
                                Settled::Done(t) => {
                                    if !json_mode && t.tries.len() > 1 && !t.tries.last().is_some_and(|a| a.kept) {
                                        let _ = stdout_write(b"\n");
                                        match t.tries.iter().any(|a| a.restates) {
                                            true => eprintln!("[every reply restated the question: the first is kept]"),
                                            false => eprintln!("[no question named a missing piece: an earlier attempt is kept]"),
                                        }
                                        let _ = stdout_write(session.messages.last().and_then(|m| m["content"].as_str()).unwrap_or_default().as_bytes());
                                    }
                                    break Ok(*t);
                                }
                            }
                        }
                    }),
                };
                match turn {
                    Ok(t) => {
                        let g = &t.generation;
                        if json_mode {
                            print_json(&json!({
                                "text": g.text, "ids": g.ids,
                                "reply": format!("{}{}", t.lead.as_deref().unwrap_or_default(), g.text), "stop_reason": g.stop_reason, "stop_detail": g.stop_detail,
                                "prompt_tokens": g.prompt_tokens, "reused_tokens": g.reused_tokens,
                                "prefilled_tokens": g.prefilled_tokens, "timings": g.timings,
                                "kv_len": session.kv_len(), "divergence": t.divergence,
                                "tool_calls": t.reply.as_ref().map(|r| &r.calls),
                                "tool_errors": t.reply.as_ref().map(|r| &r.errors),
                                "policy": t.policy.as_ref().map(|d| d.to_json()),
                                "tries": t.tries,
                                "fitted": t.fitted,
                                "continued": cont,
                            }))?;
                        } else {
                            stdout_write(b"\n")?;
                            if let Some(d) = &t.policy {
                                eprintln!("{}", policy_line(d));
                            }
                            eprintln!(
                                "[stop: {}, {} tokens; prompt {} = {} reused + {} prefilled; kv {}/{}; decode {:.1} tok/s]",
                                g.stop_reason.as_str(), g.ids.len(), g.prompt_tokens, g.reused_tokens, g.prefilled_tokens,
                                session.kv_len(), session.capacity(), g.timings.decode_tok_s
                            );
                            if let Some(f) = &t.fitted {
                                eprintln!("[to fit the context: {}]", f.explanation);
                            }
                            if let Some(d) = &t.divergence {
                                eprintln!(
                                    "[divergence at token {}: {}]",
                                    d.position, d.explanation
                                );
                            }
                            for c in t.reply.iter().flat_map(|r| &r.calls) {
                                eprintln!(
                                    "[tool call: {} {}; answer with /tool RESULT]",
                                    c.name, c.arguments
                                );
                            }
                            for e in t.reply.iter().flat_map(|r| &r.errors) {
                                eprintln!("[{e}]");
                            }
                        }
                    }
                    Err(e) => eprintln!("error: {e}"),
                }
            }
        }
    }
    Ok(())
}
