//! `slm generate MODEL --replay FILE`: run a reply the page exported ("Export for
//! replay") again, and say whether it came out byte for byte the same.
//!
//! The bundle (`tinyrustlm-replay`, version 1) holds what the page gave the model: the
//! messages as the model saw them (a clarify note included), the tools, the Unix time
//! the template was rendered at, the prompt's SHA-256, the sampler with its seed, the
//! limits and stops, and the reply it got. Each of the file, the prompt and the reply
//! is checked, and the first that differs is named.
//!
//! A reply the clarify policy started carries its `lead`: the prompt ends with that
//! assistant text (`TextSide::render_prompt` with `continues`), the reply ends at its
//! question (`clarify::reply_end`), and the expected text is what followed the lead.

use std::path::Path;

use serde::Deserialize;
use serde_json::{json, Value};
use slm_runtime::clarify;
use slm_runtime::engine::{EndAt, Engine, GenerateOptions};
use slm_runtime::format::layout::sha256_hex;
use slm_runtime::format::reader::SlmFile;
use slm_runtime::sampling::SamplerConfig;
use slm_runtime::stopping::LoopConfig;
use slm_runtime::{Result, SlmError};

pub const FORMAT: &str = "tinyrustlm-replay";

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Bundle {
    /// Checked before the rest is read (`read`).
    #[serde(rename = "format")]
    _format: String,
    version: u32,
    model: ModelRef,
    messages: Vec<Value>,
    /// The words the clarify policy started the reply with, if it did.
    #[serde(default)]
    lead: Option<String>,
    /// The first tokens the reply was barred from: those of attempts that restated
    /// the user's question (`GenerateOptions::barred_start`).
    #[serde(default)]
    barred_start: Vec<u32>,
    #[serde(default)]
    tools: Option<Value>,
    now: i64,
    prompt_sha256: String,
    sampler: SamplerConfig,
    max_tokens: usize,
    #[serde(default)]
    stop_strings: Vec<String>,
    loop_detection: bool,
    expected: Expected,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct ModelRef {
    name: String,
    sha256: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct Expected {
    text: String,
    stop_reason: String,
}

fn read(path: &Path) -> Result<Bundle> {
    let text = std::fs::read_to_string(path).map_err(|e| SlmError::io(path.display(), e))?;
    let v: Value = serde_json::from_str(&text)
        .map_err(|e| SlmError::Invalid(format!("{}: not JSON: {e}", path.display())))?;
    if v["format"].as_str() != Some(FORMAT) {
        return Err(SlmError::Invalid(format!(
            "{}: format is {}, expected \"{FORMAT}\" (the page's \"Export for replay\")",
            path.display(),
            v["format"]
        )));
    }
    let b: Bundle = serde_json::from_value(v)
        .map_err(|e| SlmError::Invalid(format!("{}: {e}", path.display())))?;
    if b.version != 1 {
        return Err(SlmError::Invalid(format!(
            "{}: version {} (this slm reads version 1)",
            path.display(),
            b.version
        )));
    }
    b.sampler.validate()?;
    Ok(b)
}

/// Byte offset of the first difference, if any.
fn first_difference(a: &str, b: &str) -> Option<usize> {
    let n = a.bytes().zip(b.bytes()).take_while(|(x, y)| x == y).count();
    (n < a.len().max(b.len())).then_some(n)
}

/// Replay the bundle on `model`; the report, and whether the reply matched.
pub fn run(model: &Path, bundle: &Path) -> Result<(Value, bool)> {
    let b = read(bundle)?;
    let file_sha = SlmFile::open(model)?.verify(&mut |_, _| {})?;
    if file_sha != b.model.sha256 {
        return Err(SlmError::Invalid(format!(
            "{} has SHA-256 {file_sha}, but the bundle was made with {} ({})",
            model.display(),
            b.model.name,
            b.model.sha256
        )));
    }
    let eng = Engine::load_file(model)?;
    let mut messages = b.messages;
    if let Some(lead) = &b.lead {
        messages.push(json!({"role": "assistant", "content": lead}));
    }
    let rendered = eng
        .text
        .render_prompt(&messages, b.tools.as_ref(), b.lead.is_some(), b.now)?;
    let prompt_sha = sha256_hex(rendered.as_bytes());
    if prompt_sha != b.prompt_sha256 {
        return Err(SlmError::Invalid(format!(
            "the rendered prompt has SHA-256 {prompt_sha}, the bundle's is {}: the messages or the template differ",
            b.prompt_sha256
        )));
    }
    let ids = eng.text.encode_rendered(&rendered)?;
    let opts = GenerateOptions {
        sampler: b.sampler,
        max_tokens: b.max_tokens,
        stop_strings: b.stop_strings,
        stop_token_ids: vec![],
        loop_detection: b.loop_detection.then(LoopConfig::default),
        trace: false,
        candidates: false,
        abort: None,
        end_at: match &b.lead {
            Some(lead) => clarify::reply_end(lead),
            None => EndAt::Never,
        },
        barred_start: b.barred_start.clone(),
    };
    let g = eng.generate(&ids, &opts, &mut |_, _| {})?;
    let stop_reason = g.stop_reason.as_str().to_string();
    let differs = first_difference(&g.text, &b.expected.text);
    let same = differs.is_none() && stop_reason == b.expected.stop_reason;
    let report = json!({
        "same": same,
        "text": g.text,
        "expected_text": b.expected.text,
        "first_difference": differs,
        "stop_reason": stop_reason,
        "expected_stop_reason": b.expected.stop_reason,
        "lead": b.lead,
        "barred_start": b.barred_start,
        "prompt_sha256": prompt_sha,
        "file_sha256": file_sha,
        "generated": g.ids.len(),
    });
    Ok((report, same))
}

#[cfg(test)]
mod tests {
    use super::first_difference;

    #[test]
    fn the_first_differing_byte_is_named() {
        assert_eq!(first_difference("abc", "abc"), None);
        assert_eq!(first_difference("abc", "abd"), Some(2));
        assert_eq!(first_difference("ab", "abc"), Some(2));
        assert_eq!(first_difference("", "x"), Some(0));
    }
}
