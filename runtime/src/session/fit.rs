//! When a turn's prompt does not fit the session's context: the three policies.
//!
//! - `Stop`: refuse the turn and say by how much it is over (the transcript is kept;
//!   the person clears, starts a new chat or enlarges the context).
//! - `DropOldest`: leave out the oldest turns, the system message kept.
//! - `TruncateMiddle`: leave out the turns between the first exchange and the latest,
//!   so the conversation's opening and the system message stay (and their KV cache
//!   keeps being reused from one turn to the next).
//!
//! A dropping policy that must cut cuts down to half the context (as llama.cpp's
//! context shift discards half), and the turns after keep that cut while they fit:
//! their prompts extend the KV cache instead of re-prefilling it every turn. (Cutting
//! only what the turn needs would change the prompt's start on every turn of a full
//! chat, and so re-prefill the whole context each time.)
//!
//! Turns are left out whole: a user message and everything up to the next user
//! message, so the roles still alternate as templates require. The latest user
//! message and what follows it are never left out. The transcript itself keeps every
//! message; only the prompt is shorter, and the divergence flag says so.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What to do when a turn's prompt does not fit.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Overflow {
    #[default]
    Stop,
    DropOldest,
    TruncateMiddle,
}

impl Overflow {
    pub fn describe(self) -> &'static str {
        match self {
            Overflow::Stop => "stop and explain",
            Overflow::DropOldest => "drop the oldest turns, keep the system prompt",
            Overflow::TruncateMiddle => "drop the middle turns, keep the first exchange",
        }
    }
}

/// What a turn's prompt left out to fit.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Fitted {
    pub policy: Overflow,
    /// Indices (into the transcript) of the messages left out.
    pub dropped_messages: Vec<usize>,
    /// Prompt tokens of the whole transcript, and of the prompt that was used.
    pub whole_tokens: usize,
    pub prompt_tokens: usize,
    pub explanation: String,
}

/// Whole turns that may be left out, in the order the policy leaves them out: each a
/// range of message indices. Protected: a leading system message, the latest user
/// message and all after it, and with `TruncateMiddle` the first exchange.
pub fn removable_turns(messages: &[Value], policy: Overflow) -> Vec<std::ops::Range<usize>> {
    let role = |i: usize| messages[i]["role"].as_str().unwrap_or_default();
    let users: Vec<usize> = (0..messages.len()).filter(|&i| role(i) == "user").collect();
    let Some(&last_user) = users.last() else {
        return vec![];
    };
    let mut turns: Vec<std::ops::Range<usize>> = users
        .windows(2)
        .map(|w| w[0]..w[1])
        .filter(|r| r.end <= last_user)
        .collect();
    match policy {
        Overflow::Stop => vec![],
        Overflow::DropOldest => turns,
        Overflow::TruncateMiddle => {
            if !turns.is_empty() {
                turns.remove(0);
            }
            turns
        }
    }
}

/// The transcript without the first `n` turns of `turns`, and the indices left out.
pub fn without(
    messages: &[Value],
    turns: &[std::ops::Range<usize>],
    n: usize,
) -> (Vec<Value>, Vec<usize>) {
    let gone: Vec<usize> = turns[..n].iter().flat_map(|r| r.clone()).collect();
    let kept = messages
        .iter()
        .enumerate()
        .filter(|(i, _)| !gone.contains(i))
        .map(|(_, m)| m.clone())
        .collect();
    (kept, gone)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn chat(roles: &[&str]) -> Vec<Value> {
        roles
            .iter()
            .map(|r| json!({"role": r, "content": "x"}))
            .collect()
    }

    #[test]
    fn turns_are_left_out_whole_oldest_first_and_the_latest_is_kept() {
        // 0 system, 1 user, 2 assistant, 3 user, 4 assistant, 5 tool, 6 user, 7 assistant, 8 user
        let m = chat(&[
            "system",
            "user",
            "assistant",
            "user",
            "assistant",
            "tool",
            "user",
            "assistant",
            "user",
        ]);
        assert_eq!(
            removable_turns(&m, Overflow::DropOldest),
            vec![1..3, 3..6, 6..8]
        );
        assert_eq!(
            removable_turns(&m, Overflow::TruncateMiddle),
            vec![3..6, 6..8]
        );
        assert!(removable_turns(&m, Overflow::Stop).is_empty());
        let (kept, gone) = without(&m, &removable_turns(&m, Overflow::DropOldest), 2);
        assert_eq!(gone, vec![1, 2, 3, 4, 5]);
        let roles: Vec<_> = kept.iter().map(|m| m["role"].as_str().unwrap()).collect();
        assert_eq!(roles, ["system", "user", "assistant", "user"]);
        // A single turn has nothing to leave out.
        assert!(removable_turns(&chat(&["system", "user"]), Overflow::DropOldest).is_empty());
        // A reply being continued is part of the latest turn.
        let c = chat(&["user", "assistant", "user", "assistant"]);
        assert_eq!(removable_turns(&c, Overflow::DropOldest), vec![0..2]);
    }
}
