//! Tool calls as data. A model that was given tools answers a request with a call in
//! the syntax its chat template teaches; the session parses that call out of the
//! reply and stores it the way HF chat templates read it back
//! (`message.tool_calls[i].function.{name, arguments}`), so that the tool's answer
//! (a `tool` message) continues the turn through the same template.
//!
//! Two syntaxes, told apart by the template's own text:
//! - `Hermes`: `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, one block per
//!   call, with free text around them (Qwen2.5, Qwen3, Hermes, SmolLM3). Small models
//!   often drop the tags: a reply with no block that is one JSON object with both
//!   `name` and `arguments` is that call too (Qwen2.5-Coder-0.5B answers so, greedy).
//!   The template renders the call back with its tags, so the next turn's prompt
//!   differs from the tokens generated, and the session's divergence flag says so.
//! - `LlamaJson`: the whole reply is one JSON object `{"name": …, "parameters": {…}}`,
//!   optionally after `<|python_tag|>` (Llama 3.1 to 3.3).
//!
//! Nothing is dropped silently: a block that is not a well-formed call stays in the
//! text, and the reason is reported beside the calls.

use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ToolCallSyntax {
    Hermes,
    LlamaJson,
}

const OPEN: &str = "<tool_call>";
const CLOSE: &str = "</tool_call>";
const PYTHON_TAG: &str = "<|python_tag|>";

impl ToolCallSyntax {
    /// The syntax a chat template teaches its model, or None when the template
    /// renders no tool calls at all.
    pub fn of_template(template: &str) -> Option<ToolCallSyntax> {
        if template.contains(OPEN) {
            Some(ToolCallSyntax::Hermes)
        } else if template.contains("tool_call") && template.contains("\"parameters\"") {
            Some(ToolCallSyntax::LlamaJson)
        } else {
            None
        }
    }
}

/// One call: the function's name and its arguments object.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub name: String,
    pub arguments: Value,
}

impl ToolCall {
    /// As an assistant message's `tool_calls` entry (OpenAI's and HF's form).
    pub fn to_message_value(&self) -> Value {
        json!({"type": "function", "function": {"name": self.name, "arguments": self.arguments}})
    }
}

/// A reply split into its text and its calls.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
pub struct ParsedReply {
    /// The reply without its well-formed call blocks, trimmed.
    pub content: String,
    pub calls: Vec<ToolCall>,
    /// Why a block that looked like a call was left in the text.
    pub errors: Vec<String>,
}

impl ParsedReply {
    /// The transcript message for this reply.
    pub fn to_message(&self) -> Value {
        let mut m = Map::new();
        m.insert("role".into(), "assistant".into());
        m.insert("content".into(), self.content.clone().into());
        if !self.calls.is_empty() {
            let calls = self.calls.iter().map(ToolCall::to_message_value).collect();
            m.insert("tool_calls".into(), Value::Array(calls));
        }
        Value::Object(m)
    }
}

/// A call object: `name` (a string) and `args_key` (an object, or a string holding
/// JSON of one, as some models write it).
fn call_from(v: &Value, args_key: &str) -> Result<ToolCall, String> {
    let o = v.as_object().ok_or("a tool call must be a JSON object")?;
    let name = o
        .get("name")
        .and_then(Value::as_str)
        .ok_or("a tool call needs a \"name\" string")?;
    let arguments = match o.get(args_key) {
        None => Value::Object(Map::new()),
        Some(Value::String(s)) => serde_json::from_str(s)
            .map_err(|e| format!("\"{args_key}\" is a string that is not JSON: {e}"))?,
        Some(a) => a.clone(),
    };
    if !arguments.is_object() {
        return Err(format!("\"{args_key}\" must be an object"));
    }
    Ok(ToolCall {
        name: name.to_string(),
        arguments,
    })
}

/// A reply that is one JSON call as a whole (`call` parsed from it): the call, or the
/// text kept, with why it is not one.
fn whole_reply(text: &str, call: Result<ToolCall, String>) -> ParsedReply {
    match call {
        Ok(call) => ParsedReply {
            content: String::new(),
            calls: vec![call],
            errors: vec![],
        },
        Err(e) => ParsedReply {
            content: text.trim().to_string(),
            calls: vec![],
            errors: vec![format!("a JSON reply is not a tool call: {e}")],
        },
    }
}

fn parse_hermes(text: &str) -> ParsedReply {
    if !text.contains(OPEN) {
        let bare = serde_json::from_str::<Value>(text.trim()).ok();
        if let Some(v) = bare.filter(|v| v.get("name").is_some() && v.get("arguments").is_some()) {
            return whole_reply(text, call_from(&v, "arguments"));
        }
    }
    let mut out = ParsedReply::default();
    let mut content = String::new();
    let mut rest = text;
    while let Some(i) = rest.find(OPEN) {
        let after = &rest[i + OPEN.len()..];
        let Some(j) = after.find(CLOSE) else {
            out.errors
                .push("a <tool_call> block has no </tool_call>: kept as text".into());
            break;
        };
        let body = after[..j].trim();
        match serde_json::from_str::<Value>(body)
            .map_err(|e| format!("not JSON: {e}"))
            .and_then(|v| call_from(&v, "arguments"))
        {
            Ok(call) => {
                content.push_str(&rest[..i]);
                out.calls.push(call);
            }
            Err(e) => {
                out.errors
                    .push(format!("a <tool_call> block was kept as text: {e}"));
                content.push_str(&rest[..i + OPEN.len() + j + CLOSE.len()]);
            }
        }
        rest = &after[j + CLOSE.len()..];
    }
    content.push_str(rest);
    out.content = content.trim().to_string();
    out
}

fn parse_llama_json(text: &str) -> ParsedReply {
    let body = text.trim();
    let body = body.strip_prefix(PYTHON_TAG).unwrap_or(body).trim();
    if !body.starts_with('{') {
        return ParsedReply {
            content: text.trim().to_string(),
            ..Default::default()
        };
    }
    let parsed = serde_json::from_str::<Value>(body).map_err(|e| format!("not JSON: {e}"));
    let key = match parsed.as_ref().ok().and_then(Value::as_object) {
        Some(o) if o.contains_key("parameters") => "parameters",
        _ => "arguments",
    };
    whole_reply(text, parsed.and_then(|v| call_from(&v, key)))
}

/// Tools as a chat template takes them: a JSON list of function schemas (objects).
pub fn check_tools(tools: &Value) -> Result<(), String> {
    match tools.as_array() {
        Some(a) if a.iter().all(Value::is_object) => Ok(()),
        _ => Err("the tools must be a JSON list of function schemas (objects)".into()),
    }
}

/// Split `text` (a whole reply) into its content and calls.
pub fn parse(syntax: ToolCallSyntax, text: &str) -> ParsedReply {
    match syntax {
        ToolCallSyntax::Hermes => parse_hermes(text),
        ToolCallSyntax::LlamaJson => parse_llama_json(text),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            name: name.into(),
            arguments: args,
        }
    }

    #[test]
    fn hermes_blocks_become_calls_and_the_text_around_them_stays() {
        let r = parse(
            ToolCallSyntax::Hermes,
            "Let me check.\n<tool_call>\n{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\", \"days\": 2}}\n</tool_call>\n<tool_call>\n{\"name\": \"now\", \"arguments\": \"{}\"}\n</tool_call>",
        );
        assert_eq!(r.content, "Let me check.");
        assert_eq!(
            r.calls,
            vec![
                call("get_weather", json!({"city": "Paris", "days": 2})),
                call("now", json!({}))
            ]
        );
        assert!(r.errors.is_empty());
        // Argument order is the model's (serde_json's preserve_order).
        let args = serde_json::to_string(&r.calls[0].arguments).unwrap();
        assert_eq!(args, r#"{"city":"Paris","days":2}"#);
    }

    #[test]
    fn a_bare_json_call_without_tags_is_a_call_but_json_answers_are_not() {
        let r = parse(
            ToolCallSyntax::Hermes,
            "{\"name\": \"get_weather\", \"arguments\": {\"city\": \"Paris\"}}",
        );
        assert_eq!(r.calls, vec![call("get_weather", json!({"city": "Paris"}))]);
        assert_eq!(r.content, "");
        for answer in [
            "{\"name\": \"Ada\", \"age\": 36}",
            "[1, 2]",
            "{\"arguments\": {}}",
        ] {
            let r = parse(ToolCallSyntax::Hermes, answer);
            assert!(r.calls.is_empty() && r.errors.is_empty(), "{answer}: {r:?}");
            assert_eq!(r.content, answer);
        }
        let bad = parse(
            ToolCallSyntax::Hermes,
            "{\"name\": \"f\", \"arguments\": 3}",
        );
        assert!(bad.calls.is_empty() && bad.errors[0].contains("must be an object"));
    }

    #[test]
    fn a_malformed_or_unclosed_block_stays_text_and_says_why() {
        let r = parse(
            ToolCallSyntax::Hermes,
            "<tool_call>{\"name\": 3}</tool_call> and <tool_call>{\"name\": \"x\"",
        );
        assert!(r.calls.is_empty());
        assert_eq!(
            r.content,
            "<tool_call>{\"name\": 3}</tool_call> and <tool_call>{\"name\": \"x\""
        );
        assert_eq!(r.errors.len(), 2, "{:?}", r.errors);
        assert!(r.errors[0].contains("\"name\" string"), "{:?}", r.errors);
        assert!(r.errors[1].contains("no </tool_call>"), "{:?}", r.errors);
        let bad = parse(
            ToolCallSyntax::Hermes,
            "<tool_call>{\"name\": \"f\", \"arguments\": [1]}</tool_call>",
        );
        assert!(bad.calls.is_empty() && bad.errors[0].contains("must be an object"));
    }

    #[test]
    fn llama_json_is_the_whole_reply_with_or_without_the_python_tag() {
        let want = vec![call("get_weather", json!({"city": "Oslo"}))];
        for text in [
            "{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
            "<|python_tag|>{\"name\": \"get_weather\", \"parameters\": {\"city\": \"Oslo\"}}",
            " {\"name\": \"get_weather\", \"arguments\": {\"city\": \"Oslo\"}} ",
        ] {
            let r = parse(ToolCallSyntax::LlamaJson, text);
            assert_eq!(r.calls, want, "{text}");
            assert_eq!(r.content, "");
        }
        let prose = parse(ToolCallSyntax::LlamaJson, "It is sunny in Oslo.");
        assert!(prose.calls.is_empty() && prose.errors.is_empty());
        let json_only = parse(ToolCallSyntax::LlamaJson, "{\"answer\": 4}");
        assert!(json_only.calls.is_empty());
        assert_eq!(json_only.content, "{\"answer\": 4}");
        assert_eq!(json_only.errors.len(), 1);
    }

    #[test]
    fn the_message_has_hf_tool_calls_only_when_there_are_calls() {
        let r = parse(
            ToolCallSyntax::Hermes,
            "<tool_call>{\"name\": \"f\", \"arguments\": {\"a\": 1}}</tool_call>",
        );
        assert_eq!(
            r.to_message(),
            json!({"role": "assistant", "content": "", "tool_calls": [
                {"type": "function", "function": {"name": "f", "arguments": {"a": 1}}}]})
        );
        let plain = parse(ToolCallSyntax::Hermes, "hi");
        assert_eq!(
            plain.to_message(),
            json!({"role": "assistant", "content": "hi"})
        );
    }

    #[test]
    fn the_syntax_comes_from_the_template() {
        let qwen = "{{- '<tool_call>\\n{\"name\": \"' }}";
        let llama = "{%- for tool_call in message.tool_calls %}{{- '{\"name\": \"' + tool_call.name + '\", ' }}{{- '\"parameters\": ' }}";
        assert_eq!(
            ToolCallSyntax::of_template(qwen),
            Some(ToolCallSyntax::Hermes)
        );
        assert_eq!(
            ToolCallSyntax::of_template(llama),
            Some(ToolCallSyntax::LlamaJson)
        );
        assert_eq!(ToolCallSyntax::of_template("{{ messages }}"), None);
    }
}
