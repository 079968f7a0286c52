//! An experiment of `slm eval clarify --candidates N`, measured and not adopted
//! (docs/behaviour.md): choosing the clarifying question among several the model
//! writes.
//!
//! When the policy fires, the model is asked for one question that asks for the
//! missing piece (`Decision::note`). A small model often writes a question that names
//! no piece ("What is your request?"), restates the user's own question, or answers
//! anyway. So the reply is sampled `n` times (seeds `seed`, `seed + 1`, …) and each
//! candidate is scored with the loaded model's own logits against the note:
//!
//! `gain` = the mean over the candidate's tokens of
//! log p(token | the prompt with the note) − log p(token | the prompt as the user
//! wrote it), at temperature 1 with no penalty.
//!
//! A question for the piece the note names ("Which language should I translate it
//! into?") is far likelier with the note than without it; a generic question, or an
//! answer, is about as likely either way. The candidate kept is the one with the
//! highest gain among those that ask something (a sentence ending in "?"), or, if none
//! asks, the highest gain of all. Every candidate, its gain and the choice go to
//! `--out`, with the scorer's verdict on each, so that other rules (fewer candidates,
//! the first that asks, an oracle) can be read from one run.
//!
//! Result (Qwen2.5-Coder-0.5B, 40 fired prompts, 4 candidates): the gain chose no
//! better than the first sample (34/40 useful either way), and even an oracle that
//! knew the scorer's verdict reached 37/40. The misses are mostly prompts where no
//! sample asks (a pronoun answered about the model itself).

use serde::Serialize;

use slm_runtime::engine::{Engine, GenerateOptions, Generation};
use slm_runtime::Result;

/// One sampled reply to the prompt with the note, and its score.
#[derive(Clone, Debug, Serialize)]
pub struct Candidate {
    pub seed: u64,
    pub text: String,
    pub tokens: usize,
    /// Some sentence of the reply ends with "?" (outside code).
    pub asks: bool,
    /// Mean log-probability gain per token from the note (see the module doc); 0 for
    /// an empty reply.
    pub gain: f32,
}

/// What `pick` did: every candidate and the index of the one kept.
#[derive(Clone, Debug, Serialize)]
pub struct Picked {
    pub chosen: usize,
    pub candidates: Vec<Candidate>,
}

/// Sample `n` (≥ 1) replies to `with_note` (the prompt's ids with the policy's note)
/// with seeds `opts.sampler.seed + i`, score each against `without_note` (the prompt
/// as the user wrote it), and return the kept reply's generation with the record.
pub fn pick(
    engine: &Engine,
    with_note: &[u32],
    without_note: &[u32],
    opts: &GenerateOptions,
    n: usize,
) -> Result<(Generation, Picked)> {
    let mut gens = Vec::new();
    let mut candidates = Vec::new();
    for i in 0..n.max(1) as u64 {
        let mut o = opts.clone();
        o.sampler.seed = opts.sampler.seed.wrapping_add(i);
        let g = engine.generate(with_note, &o, &mut |_, _| {})?;
        let gain = if g.ids.is_empty() {
            0.0
        } else {
            let with = engine.continuation_logprobs(with_note, &g.ids)?;
            let without = engine.continuation_logprobs(without_note, &g.ids)?;
            let sum: f64 = with
                .iter()
                .zip(&without)
                .map(|(a, b)| f64::from(a - b))
                .sum();
            (sum / g.ids.len() as f64) as f32
        };
        candidates.push(Candidate {
            seed: o.sampler.seed,
            text: g.text.clone(),
            tokens: g.ids.len(),
            asks: asks(&g.text),
            gain,
        });
        gens.push(g);
    }
    let chosen = best(&candidates);
    let g = gens.swap_remove(chosen);
    Ok((g, Picked { chosen, candidates }))
}

/// The candidate kept: the highest gain among those that ask, else among all; the
/// earliest on a tie.
pub fn best(c: &[Candidate]) -> usize {
    let any_asks = c.iter().any(|c| c.asks);
    let mut best: Option<usize> = None;
    for (i, x) in c.iter().enumerate() {
        if any_asks && !x.asks {
            continue;
        }
        if best.is_none_or(|b| x.gain > c[b].gain) {
            best = Some(i);
        }
    }
    best.unwrap_or(0)
}

/// Whether some sentence of `text` ends with a question mark, outside code fences.
pub fn asks(text: &str) -> bool {
    let mut in_code = false;
    for line in text.lines() {
        if line.trim_start().starts_with("```") {
            in_code = !in_code;
            continue;
        }
        if !in_code && line.contains('?') {
            return true;
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    fn c(asks: bool, gain: f32) -> Candidate {
        Candidate {
            seed: 0,
            text: String::new(),
            tokens: 1,
            asks,
            gain,
        }
    }

    #[test]
    fn keeps_the_best_gain_among_questions() {
        assert_eq!(best(&[c(true, 0.5), c(false, 3.0), c(true, 1.5)]), 2);
        // None asks: the best gain of all.
        assert_eq!(best(&[c(false, 0.5), c(false, 3.0)]), 1);
        // Ties keep the earliest.
        assert_eq!(best(&[c(true, 1.0), c(true, 1.0)]), 0);
        assert_eq!(best(&[c(true, 1.0)]), 0);
    }

    #[test]
    fn a_question_is_a_question_mark_outside_code() {
        assert!(asks("Which language should I use?"));
        assert!(asks("Sure.\nWhich city are you in?"));
        assert!(!asks("Here it is:\n```\nx = a ? b : c\n```"));
        assert!(!asks("I cannot know the weather."));
    }
}
