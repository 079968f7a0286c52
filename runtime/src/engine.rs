//! A loaded `.slm`: the text side (template + tokenizer, from the manifest alone) and
//! the model. Greedy generation lives here until the sampling/session layer lands.

use crate::error::{Result, SlmError};
use crate::format::manifest::Manifest;
use crate::model::{Model, Scratch};
use crate::template::{ChatTemplate, RenderInput};
use crate::tokenizer::Tokenizer;

/// Everything between messages and token ids. Needs only the manifest.
pub struct TextSide {
    pub tokenizer: Tokenizer,
    template: Option<ChatTemplate>,
    pub manifest: Manifest,
}

impl TextSide {
    pub fn new(manifest: Manifest) -> Result<TextSide> {
        let tokenizer = Tokenizer::from_section(&manifest.tokenizer)?;
        let template = manifest
            .tokenizer
            .chat_template
            .as_deref()
            .map(ChatTemplate::new)
            .transpose()?;
        Ok(TextSide {
            tokenizer,
            template,
            manifest,
        })
    }

    /// Render OpenAI-style `messages` through the model's own chat template.
    pub fn render(
        &self,
        messages: &serde_json::Value,
        tools: Option<&serde_json::Value>,
        add_generation_prompt: bool,
        now_unix: i64,
    ) -> Result<String> {
        check_messages(messages)?;
        let t = self.template.as_ref().ok_or_else(|| {
            SlmError::unsupported(
                "tokenizer.chat_template",
                "<missing>",
                "this model has no chat template",
            )
        })?;
        t.render(&RenderInput {
            messages,
            tools,
            add_generation_prompt,
            special_tokens: &self.manifest.tokenizer.special_tokens,
            now_unix,
        })
    }

    /// Ids of a rendered prompt: the template already placed every special token.
    pub fn encode_rendered(&self, rendered: &str) -> Result<Vec<u32>> {
        self.tokenizer.encode(rendered, false)
    }

    pub fn is_eos(&self, id: u32) -> bool {
        self.manifest.stop.eos_token_ids.contains(&id)
    }
}

/// Messages must be a list of objects with a string `role`.
pub fn check_messages(m: &serde_json::Value) -> Result<()> {
    let list = m
        .as_array()
        .ok_or_else(|| SlmError::Invalid("messages must be a JSON array".into()))?;
    for (i, msg) in list.iter().enumerate() {
        if !msg.get("role").is_some_and(|r| r.is_string()) {
            return Err(SlmError::Invalid(format!(
                "message {i} has no string \"role\""
            )));
        }
    }
    Ok(())
}

pub struct Engine {
    pub text: TextSide,
    pub model: Model,
}

#[derive(Debug, serde::Serialize)]
pub struct Generated {
    pub ids: Vec<u32>,
    pub text: String,
    pub stop_reason: &'static str,
}

impl Engine {
    /// Load from a parsed manifest; `read` returns each tensor's stored bytes (from a
    /// file natively, from verified chunks in the browser).
    pub fn load(
        manifest: Manifest,
        read: &mut dyn FnMut(&str) -> Result<Vec<u8>>,
    ) -> Result<Engine> {
        let model = Model::load(&manifest, read)?;
        Ok(Engine {
            text: TextSide::new(manifest)?,
            model,
        })
    }

    #[cfg(not(target_arch = "wasm32"))]
    pub fn load_file(path: &std::path::Path) -> Result<Engine> {
        let mut f = crate::format::reader::SlmFile::open(path)?;
        let manifest = f.manifest.clone();
        let mut read = |name: &str| match manifest.tensor(name) {
            Some(t) => f.read_tensor(&t.clone()),
            None => Err(SlmError::malformed(
                ".slm",
                format!("tensor {name} is missing"),
            )),
        };
        let mut eng = Engine::load(manifest.clone(), &mut read)?;
        eng.model.threads = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Ok(eng)
    }

    pub fn context_len(&self) -> usize {
        self.model.cfg.max_position_embeddings
    }

    /// Logits after prefilling `ids` into a fresh cache.
    pub fn first_logits(&self, ids: &[u32]) -> Result<Vec<f32>> {
        if ids.is_empty() {
            return Err(SlmError::Invalid("empty prompt".into()));
        }
        let cap = ids.len();
        check_fits(ids.len(), 0, self.context_len())?;
        let mut cache = self.model.new_cache(cap);
        let mut s = Scratch::new(&self.model.cfg, cap);
        self.model.prefill(ids, &mut cache, &mut s)?;
        Ok(s.logits)
    }

    /// Greedy decoding until an EOS id or `max_tokens`.
    pub fn greedy(&self, ids: &[u32], max_tokens: usize) -> Result<Generated> {
        if ids.is_empty() {
            return Err(SlmError::Invalid("empty prompt".into()));
        }
        let ctx = self.context_len();
        check_fits(ids.len(), 1, ctx)?;
        let cap = (ids.len() + max_tokens).min(ctx);
        let mut cache = self.model.new_cache(cap);
        let mut s = Scratch::new(&self.model.cfg, cap);
        self.model.prefill(ids, &mut cache, &mut s)?;
        let mut out = Vec::new();
        let stop_reason = loop {
            let next = argmax(&s.logits);
            if self.text.is_eos(next) {
                break "eos_token";
            }
            out.push(next);
            if out.len() >= max_tokens {
                break "max_tokens";
            }
            if cache.len >= cap {
                break "context_full";
            }
            self.model.forward(next, &mut cache, &mut s, true)?;
        };
        let text = self.text.tokenizer.decode(&out, true)?;
        Ok(Generated {
            ids: out,
            text,
            stop_reason,
        })
    }
}

/// Refuse, before any compute, a prompt that leaves fewer than `min_new` free positions.
pub fn check_fits(prompt: usize, min_new: usize, ctx: usize) -> Result<()> {
    if prompt + min_new > ctx {
        return Err(SlmError::Invalid(format!(
            "prompt is {prompt} tokens; with {min_new} output token(s) it needs {} positions but the context holds {ctx}",
            prompt + min_new
        )));
    }
    Ok(())
}

/// Index of the largest logit; the lowest index wins ties (as torch.argmax).
pub fn argmax(x: &[f32]) -> u32 {
    let mut best = 0;
    for (i, v) in x.iter().enumerate() {
        if *v > x[best] {
            best = i;
        }
    }
    best as u32
}
