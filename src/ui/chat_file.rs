//! A conversation as a file. Three kinds:
//! - JSON (`tinyrustlm-chat`): the whole record (messages with the form the model was
//!   given, settings, seeds, per-turn records); Import reads it back into a new chat.
//! - Markdown, for people.
//! - A replay bundle (`tinyrustlm-replay`) of the last reply: exactly what the page gave
//!   the model and how it sampled, so that `slm generate MODEL --replay FILE` makes the
//!   same text from the same `.slm`.

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use super::conversations::Conversation;
use super::state::ChatMessage;
use crate::protocol::Role;

pub const CHAT_FORMAT: &str = "tinyrustlm-chat";
pub const REPLAY_FORMAT: &str = "tinyrustlm-replay";
const VERSION: u32 = 1;

#[derive(Serialize, Deserialize)]
struct ChatFile {
    format: String,
    version: u32,
    /// Milliseconds since the Unix epoch.
    exported: f64,
    conversation: Conversation,
}

/// `trace`: a reply's token trace by its `TurnStats::trace` id, to add to each reply
/// as "trace" (`slm generate --trace`'s schema); None leaves them out.
pub fn to_json(
    c: &Conversation,
    now_ms: f64,
    trace: Option<&dyn Fn(u64) -> Option<Value>>,
) -> String {
    let mut v = serde_json::to_value(ChatFile {
        format: CHAT_FORMAT.into(),
        version: VERSION,
        exported: now_ms,
        conversation: c.clone(),
    })
    .unwrap_or_default();
    if let Some(trace) = trace {
        add_traces(&c.messages, &mut v["conversation"]["messages"], trace);
    }
    serde_json::to_string_pretty(&v).unwrap_or_default()
}

/// Each reply's trace into its JSON form `out` (the same messages, serialized), its
/// branches' replies included. Import ignores the field.
fn add_traces(messages: &[ChatMessage], out: &mut Value, trace: &dyn Fn(u64) -> Option<Value>) {
    let Some(out) = out.as_array_mut() else {
        return;
    };
    for (m, o) in messages.iter().zip(out) {
        if let Some(t) = m.stats.as_ref().and_then(|s| s.trace).and_then(trace) {
            o["trace"] = t;
        }
        if let Some(alts) = o.get_mut("alts").and_then(Value::as_array_mut) {
            for (branch, out) in m.alts.iter().zip(alts) {
                add_traces(branch, out, trace);
            }
        }
    }
}

/// Read an exported chat, or say what is wrong with the file.
pub fn from_json(text: &str) -> Result<Conversation, String> {
    let v: Value = serde_json::from_str(text).map_err(|e| format!("the file is not JSON ({e})"))?;
    match v["format"].as_str() {
        Some(CHAT_FORMAT) => {}
        Some(other) => {
            return Err(format!(
                "the file's format is \"{other}\", not an exported chat (\"{CHAT_FORMAT}\")"
            ))
        }
        None => {
            return Err(format!(
                "the file has no \"format\" field (an exported chat says \"{CHAT_FORMAT}\")"
            ))
        }
    }
    if v["version"].as_u64() != Some(u64::from(VERSION)) {
        return Err(format!(
            "the file's version is {}, this page reads version {VERSION}",
            v["version"]
        ));
    }
    let f: ChatFile = serde_json::from_value(v)
        .map_err(|e| format!("the chat in the file is unreadable: {e}"))?;
    for (i, m) in f.conversation.messages.iter().enumerate() {
        if m.role == Role::System {
            return Err(format!(
                "message {i} has role \"system\" (the system prompt is a setting)"
            ));
        }
    }
    Ok(f.conversation)
}

pub fn to_markdown(c: &Conversation) -> String {
    let mut out = format!("# {}\n\n", c.head.title);
    if let Some(m) = &c.head.model {
        out += &format!("Model: {} (SHA-256 {})\n\n", m.name, m.sha256);
    }
    if !c.prefs.system.is_empty() {
        out += &format!("**System:**\n\n{}\n\n", c.prefs.system);
    }
    for m in &c.messages {
        let who = match m.role {
            Role::User => "User",
            Role::Assistant => "Assistant",
            Role::System => "System",
            Role::Tool => "Tool",
        };
        out += &format!("**{who}:**\n\n{}\n\n", m.content);
        for call in &m.tool_calls {
            out += &format!(
                "Tool call `{}`:\n\n```json\n{}\n```\n\n",
                call.name,
                serde_json::to_string_pretty(&call.arguments).unwrap_or_default()
            );
        }
        if m.interrupted {
            out += "*(interrupted)*\n\n";
        }
    }
    out
}

/// The replay bundle of the conversation's last reply, or why there is none.
pub fn replay_bundle(c: &Conversation) -> Result<Value, String> {
    let last = c
        .messages
        .iter()
        .rposition(|m| m.role == Role::Assistant)
        .ok_or("the chat has no reply to replay")?;
    let reply = &c.messages[last];
    if reply.interrupted {
        return Err("the last reply was interrupted, so it has no final text to replay".into());
    }
    let stats = reply
        .stats
        .as_ref()
        .ok_or("the last reply has no turn record (it came from an older version)")?;
    if let Some(f) = &stats.fitted {
        return Err(format!("the last reply's prompt was cut to fit the context ({f}); a replay covers whole prompts"));
    }
    if stats.continued {
        return Err("the last reply was continued, so it was made in more than one turn; a replay covers one".into());
    }
    let turn = reply
        .turn
        .as_ref()
        .ok_or("the last reply has no record of its settings")?;
    if !reply.tool_calls.is_empty() {
        return Err("the last reply made tool calls; a replay covers replies without them".into());
    }
    // A reply the clarify policy started: the lead is the user message's, and the
    // reply's text begins with it (the model wrote the rest).
    let lead = c.messages[..last]
        .iter()
        .rfind(|m| m.role == Role::User)
        .and_then(|m| m.policy.as_ref())
        .and_then(|p| p.lead.clone());
    // A reply tried again after attempts that restated the question was barred from
    // their first tokens.
    let barred: Vec<u32> = c.messages[..last]
        .iter()
        .rfind(|m| m.role == Role::User)
        .and_then(|m| m.policy.as_ref())
        .and_then(|p| p.tries.iter().find(|a| a.kept))
        .map(|a| a.barred_start.clone())
        .unwrap_or_default();
    let written = match &lead {
        Some(l) => reply.content.strip_prefix(l.as_str()).ok_or(
            "the last reply does not begin with the words the clarify policy started it with",
        )?,
        None => reply.content.as_str(),
    };
    let mut messages: Vec<Value> = Vec::new();
    if !turn.system.is_empty() {
        messages.push(json!({"role": "system", "content": turn.system}));
    }
    messages.extend(c.messages[..last].iter().map(ChatMessage::for_model));
    let mut bundle = json!({
        "format": REPLAY_FORMAT,
        "version": VERSION,
        "model": {"name": stats.model, "sha256": stats.model_sha256},
        "messages": messages,
        "lead": lead,
        "tools": turn.tools,
        "now": stats.unix_time,
        "prompt_sha256": stats.prompt_sha256,
        "sampler": turn.sampler,
        "max_tokens": turn.max_tokens,
        "stop_strings": turn.stop_strings,
        "loop_detection": turn.loop_detection,
        "expected": {"text": written, "stop_reason": stats.stop_reason},
    });
    // Only where there was a bar: a bundle without one reads in any `slm` of this
    // format's version.
    if !barred.is_empty() {
        bundle["barred_start"] = json!(barred);
    }
    Ok(bundle)
}
