//! The model's tokenizer: the whole `tokenizer.json` graph (normalizer, pre-tokenizer,
//! BPE model, added tokens, post-processor, decoder), run by the HF `tokenizers` crate.

use std::str::FromStr;

use crate::error::{Result, SlmError};
use crate::format::manifest::TokenizerSection;

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
}

/// How much a tokenizer's normalizers may grow a text before it is split: real ones
/// grow it at most 3× (SentencePiece's `Replace(" ", "▁")`), and chained `Replace`s
/// multiply, so a file can make a short prompt take gigabytes.
pub const MAX_NORMALIZER_GROWTH: usize = 64;

/// Refuse normalizers whose worst-case growth is over `MAX_NORMALIZER_GROWTH`: each
/// `Replace` grows a text by at most its content over its shortest match (a regex is
/// taken to match one byte; an empty pattern inserts at every position).
fn check_normalizer_growth(json: &str) -> Result<()> {
    #[derive(serde::Deserialize)]
    struct Head {
        normalizer: Option<serde_json::Value>,
    }
    fn growth(n: &serde_json::Value) -> usize {
        match n["type"].as_str() {
            Some("Sequence") => n["normalizers"].as_array().map_or(1, |v| {
                v.iter().fold(1usize, |g, n| g.saturating_mul(growth(n)))
            }),
            Some("Replace") => {
                let content = n["content"].as_str().map_or(0, str::len);
                let shortest = n["pattern"]["String"].as_str().map_or(1, str::len);
                if shortest == 0 {
                    content + 1
                } else {
                    content.div_ceil(shortest).max(1)
                }
            }
            _ => 1,
        }
    }
    // Unknown fields are skipped, not built: the vocabulary costs no memory here.
    let head: Head = serde_json::from_str(json)
        .map_err(|e| SlmError::Tokenizer(format!("tokenizer.json: {e}")))?;
    let g = head.normalizer.as_ref().map_or(1, growth);
    if g > MAX_NORMALIZER_GROWTH {
        return Err(SlmError::Tokenizer(format!(
            "tokenizer.json: the normalizer can grow a text {g}× (its Replace steps \
             multiply), over the limit of {MAX_NORMALIZER_GROWTH}×"
        )));
    }
    Ok(())
}

impl Tokenizer {
    pub fn from_json(json: &str) -> Result<Tokenizer> {
        check_normalizer_growth(json)?;
        let mut inner = tokenizers::Tokenizer::from_str(json)
            .map_err(|e| SlmError::Tokenizer(format!("tokenizer.json: {e}")))?;
        // transformers turns the file's padding and truncation off for every call that
        // does not ask for them (`set_truncation_and_padding`), as a chat prompt does
        // not: kept, they would cut a prompt silently, and a `Fixed(2^40)` padding
        // would allocate terabytes.
        inner.with_padding(None);
        inner
            .with_truncation(None)
            .map_err(|e| SlmError::Tokenizer(format!("tokenizer.json truncation: {e}")))?;
        Ok(Tokenizer { inner })
    }

    pub fn from_section(t: &TokenizerSection) -> Result<Tokenizer> {
        Self::from_json(&t.tokenizer_json)
    }

    /// Token ids of `text`. Added-token strings in the text (e.g. `<|im_end|>`) become
    /// their ids, as transformers does by default. `add_special_tokens` runs the
    /// post-processor (BOS/EOS insertion) — true for plain text, false for a rendered
    /// chat template, which already contains its special tokens.
    pub fn encode(&self, text: &str, add_special_tokens: bool) -> Result<Vec<u32>> {
        self.inner
            .encode_fast(text, add_special_tokens)
            .map(|e| e.get_ids().to_vec())
            .map_err(|e| SlmError::Tokenizer(format!("encode: {e}")))
    }

    pub fn decode(&self, ids: &[u32], skip_special_tokens: bool) -> Result<String> {
        self.inner
            .decode(ids, skip_special_tokens)
            .map_err(|e| SlmError::Tokenizer(format!("decode: {e}")))
    }

    /// transformers' `decode(ids, skip_special_tokens)`: skipping drops the added
    /// tokens marked special and the `named` special tokens (transformers'
    /// `all_special_ids`); `clean_up` applies [`clean_up_tokenization`].
    pub fn decode_as_transformers(
        &self,
        ids: &[u32],
        skip_special_tokens: bool,
        named: &[&str],
        clean_up: bool,
    ) -> Result<String> {
        let kept: Vec<u32> = if skip_special_tokens {
            ids.iter()
                .copied()
                .filter(|&i| self.piece(i).is_none_or(|p| !named.contains(&p.as_str())))
                .collect()
        } else {
            ids.to_vec()
        };
        let text = self.decode(&kept, skip_special_tokens)?;
        Ok(if clean_up {
            clean_up_tokenization(&text)
        } else {
            text
        })
    }

    /// Whether the model is byte-pair encoding (transformers skips its space clean-up
    /// for BPE).
    pub fn is_bpe(&self) -> bool {
        matches!(self.inner.get_model(), tokenizers::ModelWrapper::BPE(_))
    }

    /// The vocabulary entry of `id` (byte-level pieces look like `Ġhello`).
    pub fn piece(&self, id: u32) -> Option<String> {
        self.inner.id_to_token(id)
    }

    pub fn vocab_size(&self) -> usize {
        self.inner.get_vocab_size(true)
    }
}

/// transformers' `clean_up_tokenization`: the English spacing before punctuation and
/// contractions that old tokenizers produced.
pub fn clean_up_tokenization(s: &str) -> String {
    s.replace(" .", ".")
        .replace(" ?", "?")
        .replace(" !", "!")
        .replace(" ,", ",")
        .replace(" ' ", "'")
        .replace(" n't", "n't")
        .replace(" 'm", "'m")
        .replace(" 's", "'s")
        .replace(" 've", "'ve")
        .replace(" 're", "'re")
}
