//! When generation ends, and what text a stream may show so far.
//!
//! - Stop strings are matched on the decoded text across token boundaries; the match
//!   is never emitted, and a stream holds back any tail that could still become one.
//! - The stream never shows a broken UTF-8 sequence: a decode that ends in U+FFFD
//!   (an incomplete multi-byte character) is held until the next token completes it.
//! - A repeated n-gram detector ends degenerate loops and names the pattern.

use serde::{Deserialize, Serialize};

/// Every way a generation can end (exactly one is recorded).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum StopReason {
    EosToken,
    StopTokenId,
    StopString,
    MaxTokens,
    ContextFull,
    LoopDetected,
    Aborted,
    Error,
}

impl StopReason {
    pub fn as_str(self) -> &'static str {
        match self {
            StopReason::EosToken => "eos_token",
            StopReason::StopTokenId => "stop_token_id",
            StopReason::StopString => "stop_string",
            StopReason::MaxTokens => "max_tokens",
            StopReason::ContextFull => "context_full",
            StopReason::LoopDetected => "loop_detected",
            StopReason::Aborted => "aborted",
            StopReason::Error => "error",
        }
    }
}

/// Repeated n-gram detector settings.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct LoopConfig {
    /// Pattern lengths tried, in tokens (inclusive range).
    pub min_len: usize,
    pub max_len: usize,
    /// A pattern must repeat back to back at least this many times...
    pub min_repeats: usize,
    /// ...and cover at least this many tokens in total.
    pub min_span: usize,
    /// Only the last `window` generated tokens are examined.
    pub window: usize,
}

impl Default for LoopConfig {
    fn default() -> Self {
        LoopConfig {
            min_len: 1,
            max_len: 32,
            min_repeats: 4,
            min_span: 24,
            window: 256,
        }
    }
}

/// A detected loop: the repeating token pattern and how often it repeated.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct LoopFound {
    pub pattern: Vec<u32>,
    pub repeats: usize,
}

impl LoopConfig {
    /// The shortest pattern that repeats at the end of `tokens` enough times.
    pub fn check(&self, tokens: &[u32]) -> Option<LoopFound> {
        let tail = &tokens[tokens.len().saturating_sub(self.window)..];
        for len in self.min_len.max(1)..=self.max_len {
            let pat = tail.get(tail.len().checked_sub(len)?..)?;
            let mut repeats = 1;
            while let Some(start) = tail.len().checked_sub((repeats + 1) * len) {
                if &tail[start..start + len] != pat {
                    break;
                }
                repeats += 1;
            }
            if repeats >= self.min_repeats && repeats * len >= self.min_span {
                return Some(LoopFound {
                    pattern: pat.to_vec(),
                    repeats,
                });
            }
        }
        None
    }
}

impl LoopConfig {
    /// The detector's state after `tokens`: the back-to-back repeat at the end that
    /// covers the most tokens (pattern length, repeats), shortest pattern on ties; None
    /// if nothing repeats. It fires once `repeats ≥ min_repeats` and the span reaches
    /// `min_span`.
    pub fn strongest(&self, tokens: &[u32]) -> Option<(usize, usize)> {
        let tail = &tokens[tokens.len().saturating_sub(self.window)..];
        let mut best: Option<(usize, usize)> = None;
        for len in self.min_len.max(1)..=self.max_len.min(tail.len() / 2) {
            let pat = &tail[tail.len() - len..];
            let mut repeats = 1;
            while let Some(start) = tail.len().checked_sub((repeats + 1) * len) {
                if &tail[start..start + len] != pat {
                    break;
                }
                repeats += 1;
            }
            if repeats >= 2 && best.is_none_or(|(l, r)| repeats * len > l * r) {
                best = Some((len, repeats));
            }
        }
        best
    }
}

/// The stop rules as they stood after one generated token (a traced step's record).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct StopCheck {
    /// The rule that ended generation at this token (`eos_token`, `stop_token_id`,
    /// `stop_string`, `loop_detected`, `max_tokens`, `context_full`), if one did.
    pub stopped: Option<String>,
    /// Generated text not yet shown: a partial character, or a tail that may begin a
    /// stop string.
    pub held_back: String,
    /// The loop detector's strongest repeat at the end (pattern length, repeats), with
    /// detection on.
    pub repeat: Option<(usize, usize)>,
}

/// A stop string found in the generated text.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct StopMatch {
    pub stop: String,
    /// Byte span of the match in the generated text.
    pub start: usize,
    pub end: usize,
}

/// Tracks the generated text and decides what is safe to show.
#[derive(Default)]
pub struct TextStream {
    stops: Vec<String>,
    /// Bytes of the text already handed out.
    emitted: usize,
}

impl TextStream {
    pub fn new(stops: Vec<String>) -> TextStream {
        TextStream {
            stops: stops.into_iter().filter(|s| !s.is_empty()).collect(),
            emitted: 0,
        }
    }

    /// The earliest stop-string match in `text` (the full decoded generation).
    pub fn find_stop(&self, text: &str) -> Option<StopMatch> {
        self.stops
            .iter()
            .filter_map(|s| {
                text.find(s.as_str()).map(|i| StopMatch {
                    stop: s.clone(),
                    start: i,
                    end: i + s.len(),
                })
            })
            .min_by_key(|m| (m.start, std::cmp::Reverse(m.end)))
    }

    /// Given the full decoded text so far, return the newly showable piece: not the
    /// bytes of an incomplete character, and not a tail that may begin a stop string.
    pub fn advance(&mut self, text: &str) -> String {
        let mut safe = text.len();
        if text.ends_with('\u{FFFD}') {
            safe = text.trim_end_matches('\u{FFFD}').len();
        }
        for s in &self.stops {
            // Longest proper prefix of `s` that is a suffix of the text.
            for k in (1..s.len()).rev() {
                if s.is_char_boundary(k) && text[..safe].ends_with(&s[..k]) {
                    safe = safe.min(text[..safe].len() - k);
                    break;
                }
            }
        }
        if safe <= self.emitted {
            return String::new();
        }
        // A decoder may rewrite text it already produced (a `Replace` after `Fuse`), so
        // the emitted byte count need not fall on a character boundary of the new text:
        // resume at the next boundary rather than slice inside a character.
        let start = text.ceil_char_boundary(self.emitted);
        let out = text.get(start..safe).unwrap_or("").to_string();
        self.emitted = safe;
        out
    }

    /// The part of `text` (the full decoded generation) not handed out yet.
    pub fn held_back<'t>(&self, text: &'t str) -> &'t str {
        text.get(text.ceil_char_boundary(self.emitted.min(text.len()))..)
            .unwrap_or("")
    }

    /// Whatever remains unshown when generation ends without a stop string.
    pub fn finish(&mut self, text: &str) -> String {
        let t = text.trim_end_matches('\u{FFFD}');
        let out = self.held_back(t).to_string();
        self.emitted = t.len();
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn loop_detector_names_the_pattern() {
        let cfg = LoopConfig {
            min_len: 1,
            max_len: 8,
            min_repeats: 3,
            min_span: 6,
            window: 64,
        };
        let mut t = vec![5, 6, 7];
        for _ in 0..3 {
            t.extend([1, 2, 3]);
        }
        assert_eq!(
            cfg.check(&t),
            Some(LoopFound {
                pattern: vec![1, 2, 3],
                repeats: 3
            })
        );
        assert_eq!(
            cfg.check(&t[..t.len() - 1]),
            None,
            "an unfinished third repeat is not a loop"
        );
        assert_eq!(cfg.check(&[9, 9, 9, 9, 9]), None, "span 5 < 6");
        assert_eq!(
            cfg.check(&[9, 9, 9, 9, 9, 9]),
            Some(LoopFound {
                pattern: vec![9],
                repeats: 6
            })
        );
        assert_eq!(cfg.check(&[1, 2, 3, 4, 5, 6, 7, 8]), None);
    }

    #[test]
    fn stop_string_split_across_tokens_is_held_then_cut() {
        let mut s = TextStream::new(vec!["</end>".into()]);
        // Pieces as tokens might decode: "Hello <", "/en", "d> tail".
        assert_eq!(s.advance("Hello <"), "Hello ");
        assert_eq!(s.advance("Hello </en"), "");
        let full = "Hello </end> tail";
        let m = s.find_stop(full).unwrap();
        assert_eq!((m.start, m.end), (6, 12));
        assert_eq!(&full[..m.start], "Hello ");
    }

    #[test]
    fn the_held_back_tail_is_what_advance_kept() {
        let mut s = TextStream::new(vec!["</end>".into()]);
        s.advance("Hello </en");
        assert_eq!(s.held_back("Hello </en"), "</en");
        s.advance("Hello </enx");
        assert_eq!(s.held_back("Hello </enx"), "");
    }

    #[test]
    fn the_strongest_repeat_is_reported_before_the_detector_fires() {
        let cfg = LoopConfig::default();
        assert_eq!(cfg.strongest(&[1, 2, 3]), None);
        // "7 8" twice, then three times: below 4 repeats and 24 tokens, no loop yet.
        assert_eq!(cfg.strongest(&[5, 7, 8, 7, 8]), Some((2, 2)));
        assert_eq!(cfg.strongest(&[7, 8, 7, 8, 7, 8]), Some((2, 3)));
        assert_eq!(cfg.check(&[7, 8, 7, 8, 7, 8]), None);
        // A run of one id: the 1-token pattern covers as much as any, and is shortest.
        assert_eq!(cfg.strongest(&[4; 6]), Some((1, 6)));
        // Where the detector fires, the strongest repeat is at least as strong.
        let looped: Vec<u32> = [1, 2, 3].repeat(9);
        let found = cfg.check(&looped).unwrap();
        let (len, reps) = cfg.strongest(&looped).unwrap();
        assert!(len * reps >= found.pattern.len() * found.repeats);
    }

    #[test]
    fn a_false_start_is_released() {
        let mut s = TextStream::new(vec!["STOP".into()]);
        assert_eq!(s.advance("a ST"), "a ");
        assert_eq!(s.advance("a STAR"), "STAR");
        assert_eq!(s.finish("a STAR"), "");
    }

    /// The text shown so far ends inside a character of the next decode (the decoder
    /// rewrote earlier text): no panic, and nothing past the boundary is lost.
    #[test]
    fn a_rewritten_prefix_never_splits_a_character() {
        let mut s = TextStream::new(vec![]);
        assert_eq!(s.advance("ab"), "ab");
        // "a" + "é" (2 bytes): byte 2 is inside "é".
        assert_eq!(s.advance("aé!"), "!");
        assert_eq!(s.finish("aé!"), "");
    }

    #[test]
    fn incomplete_utf8_is_held_back() {
        let mut s = TextStream::new(vec![]);
        // A 4-byte emoji split over two tokens decodes to U+FFFD first.
        assert_eq!(s.advance("hi \u{FFFD}"), "hi ");
        assert_eq!(s.advance("hi \u{1F600}"), "\u{1F600}");
        assert_eq!(s.advance("hi \u{1F600}\u{4F60}"), "\u{4F60}");
    }
}
