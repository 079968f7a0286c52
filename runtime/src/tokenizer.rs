//! The model's tokenizer: the whole `tokenizer.json` graph (normalizer, pre-tokenizer,
//! BPE model, added tokens, post-processor, decoder), run by the HF `tokenizers` crate.

use std::str::FromStr;

use crate::error::{Result, SlmError};
use crate::format::manifest::TokenizerSection;

pub struct Tokenizer {
    inner: tokenizers::Tokenizer,
}

impl Tokenizer {
    pub fn from_json(json: &str) -> Result<Tokenizer> {
        let inner = tokenizers::Tokenizer::from_str(json)
            .map_err(|e| SlmError::Tokenizer(format!("tokenizer.json: {e}")))?;
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
