//! HF chat templates rendered as transformers 5 renders them.
//!
//! Before rendering, `apply_chat_template` normalizes the conversation: an empty one is
//! refused, keys whose value is `None` are dropped from each message (top level only),
//! and the reasoning fields are aliased. The environment is jinja2's as transformers
//! configures it (`trim_blocks`, `lstrip_blocks`, loop controls, `raise_exception`,
//! `strftime_now`, `tojson` as `json.dumps(ensure_ascii=False)`), with Python's
//! semantics where templates see them ([`python`]): `str()` of values, string
//! whitespace, float and string `repr`. Rendering is bounded by fuel so a hostile
//! template cannot hang the UI.

pub mod limits;
pub mod python;

use minijinja::value::{Kwargs, Value, ValueKind};
use minijinja::{Environment, Error, ErrorKind, State};
use serde_json::Map;

use crate::error::{Result, SlmError};

/// Fuel for one render: far above what real chat templates need (~10⁴ for long chats).
const FUEL: u64 = 50_000_000;

/// transformers' message for an empty conversation, verbatim.
pub const EMPTY_CONVERSATION: &str =
    "Cannot apply chat template to an empty conversation. Provide at least one message.";

/// What a template is rendered with.
pub struct RenderInput<'a> {
    /// OpenAI-style messages: a template value, so that JSON integers of any width stay
    /// integers ([`parse_json`]); `Value::from_serialize` turns serde values into one.
    pub messages: Value,
    pub tools: Option<Value>,
    /// RAG documents (`documents=` of `apply_chat_template`), None when not given.
    pub documents: Option<Value>,
    pub add_generation_prompt: bool,
    /// Template variables such as `bos_token`, `eos_token`.
    pub special_tokens: &'a Map<String, serde_json::Value>,
    /// Seconds since the Unix epoch for `strftime_now`; the caller owns the clock
    /// (wasm32 has no `SystemTime`), and tests pin it.
    pub now_unix: i64,
}

/// Parse JSON text with Python's `json.loads` number semantics: integers stay integers
/// at any width up to 128 bits (wider ones are refused, never rounded to a float), and
/// object keys keep their order (a repeated key keeps its first place and last value).
pub fn parse_json(text: &str) -> Result<Value> {
    let v = jiter::JsonValue::parse(text.as_bytes(), false)
        .map_err(|e| SlmError::Invalid(format!("JSON: {}", e.description(text.as_bytes()))))?;
    from_jiter(&v, 0)
}

pub(crate) const MAX_JSON_DEPTH: usize = 256;

fn from_jiter(v: &jiter::JsonValue, depth: usize) -> Result<Value> {
    use jiter::JsonValue as J;
    use num_traits::ToPrimitive;
    if depth > MAX_JSON_DEPTH {
        return Err(SlmError::Invalid(format!(
            "JSON nested deeper than {MAX_JSON_DEPTH}"
        )));
    }
    Ok(match v {
        J::Null => Value::from(()),
        J::Bool(b) => Value::from(*b),
        J::Int(i) => Value::from(*i),
        J::BigInt(b) => match (b.to_i128(), b.to_u128()) {
            (Some(i), _) => Value::from(i),
            (None, Some(u)) => Value::from(u),
            _ => {
                return Err(SlmError::Invalid(format!(
                    "JSON integer {b} is wider than 128 bits: not supported"
                )))
            }
        },
        J::Float(f) => Value::from(*f),
        J::Str(s) => Value::from(s.as_ref()),
        J::Array(a) => Value::from(
            a.iter()
                .map(|x| from_jiter(x, depth + 1))
                .collect::<Result<Vec<_>>>()?,
        ),
        // Collected into minijinja's insertion-ordered map, which keeps a repeated
        // key at its first place with its last value, as Python's dict does.
        J::Object(o) => Value::from_iter(
            o.iter()
                .map(|(k, x)| Ok((k.to_string(), from_jiter(x, depth + 1)?)))
                .collect::<Result<Vec<_>>>()?,
        ),
    })
}

/// `apply_chat_template`'s normalization (transformers 5.24,
/// `_normalize_chat_messages` and `_alias_reasoning_fields`): refuse an empty
/// conversation; drop every top-level key whose value is None; where a reasoning field
/// is set, the message becomes `{"thinking": r, **message, "reasoning_content": r}`.
pub fn normalize_messages(messages: &Value) -> Result<Value> {
    let invalid = |m: String| SlmError::Invalid(m);
    if messages.kind() != ValueKind::Seq {
        return Err(invalid("messages must be a list".into()));
    }
    let n = messages.len().unwrap_or(0);
    if n == 0 {
        return Err(SlmError::Template(EMPTY_CONVERSATION.into()));
    }
    let mut out = Vec::with_capacity(n);
    for (i, m) in messages
        .try_iter()
        .map_err(|e| invalid(e.to_string()))?
        .enumerate()
    {
        if m.kind() != ValueKind::Map {
            return Err(invalid(format!(
                "message {i} is a {}: chat messages should be dicts",
                m.kind()
            )));
        }
        let mut kv: Vec<(String, Value)> = Vec::new();
        for k in m.try_iter().map_err(|e| invalid(e.to_string()))? {
            let v = m.get_item(&k).unwrap_or_default();
            if !v.is_none() && !v.is_undefined() {
                kv.push((
                    k.as_str()
                        .map(String::from)
                        .unwrap_or_else(|| k.to_string()),
                    v,
                ));
            }
        }
        let reasoning = ["reasoning_content", "thinking", "reasoning"]
            .iter()
            .find_map(|f| kv.iter().find(|(k, _)| k == f).map(|(_, v)| v.clone()));
        // Python's `{"thinking": r, **message, "reasoning_content": r}`: the map keeps
        // each key's first place and its last value.
        let kv: Vec<(String, Value)> = match reasoning {
            Some(r) => std::iter::once(("thinking".to_string(), r.clone()))
                .chain(kv)
                .chain(std::iter::once(("reasoning_content".to_string(), r)))
                .collect(),
            None => kv,
        };
        out.push(Value::from_iter(kv));
    }
    Ok(Value::from(out))
}

/// Python's `None` where transformers passes it for an absent `tools` or `documents`:
/// minijinja iterates its own none as an empty list, jinja2 raises "'NoneType' object
/// is not iterable". This value is falsy, prints `None`, serializes to `null`, passes
/// the `none` test (overridden below), and refuses iteration, as Python's does.
#[derive(Debug)]
struct PyNone;

impl minijinja::value::Object for PyNone {
    fn repr(self: &std::sync::Arc<Self>) -> minijinja::value::ObjectRepr {
        minijinja::value::ObjectRepr::Plain
    }
    fn is_true(self: &std::sync::Arc<Self>) -> bool {
        false
    }
    fn render(self: &std::sync::Arc<Self>, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("None")
    }
}

fn py_none() -> Value {
    Value::from_object(PyNone)
}

/// Whether `v` is None to a template: minijinja's none or [`PyNone`].
pub fn is_py_none(v: &Value) -> bool {
    v.is_none() || v.downcast_object_ref::<PyNone>().is_some()
}

pub struct ChatTemplate {
    env: Environment<'static>,
}

impl ChatTemplate {
    pub fn new(source: &str) -> Result<ChatTemplate> {
        limits::check_source(source).map_err(SlmError::Template)?;
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        // jinja2 drops one trailing newline of the template source.
        env.set_keep_trailing_newline(false);
        env.set_fuel(Some(FUEL));
        limits::install_clock();
        env.set_unknown_method_callback(python_methods);
        minijinja_contrib::add_to_environment(&mut env);
        env.set_formatter(|out, _state, value| {
            out.write_str(&python::py_str(value)).map_err(Error::from)
        });
        env.add_filter("tojson", tojson);
        env.add_filter("batch", limits::batch);
        env.add_test("none", |v: Value| is_py_none(&v));
        env.add_filter("string", |v: Value| Value::from(python::py_str(&v)));
        // jinja2's trim is `str(value).strip(chars)`: undefined trims to "".
        env.add_filter("trim", |v: Value, chars: Option<String>| {
            Value::from(python::strip(
                &python::py_str(&v),
                chars.as_deref(),
                true,
                true,
            ))
        });
        env.add_function(
            "raise_exception",
            |msg: String| -> std::result::Result<Value, Error> {
                Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("template raised: {msg}"),
                ))
            },
        );
        env.add_template_owned("chat", source.to_string())
            .map_err(template_err)?;
        Ok(ChatTemplate { env })
    }

    /// Render with serde JSON inputs (integers within 64 bits).
    pub fn render(
        &self,
        messages: &serde_json::Value,
        tools: Option<&serde_json::Value>,
        add_generation_prompt: bool,
        special_tokens: &Map<String, serde_json::Value>,
        now_unix: i64,
    ) -> Result<String> {
        self.render_values(&RenderInput {
            messages: Value::from_serialize(messages),
            tools: tools.map(Value::from_serialize),
            documents: None,
            add_generation_prompt,
            special_tokens,
            now_unix,
        })
    }

    pub fn render_values(&self, input: &RenderInput) -> Result<String> {
        let messages = normalize_messages(&input.messages)?;
        let tmpl = self.env.get_template("chat").map_err(template_err)?;
        let now = input.now_unix;
        let mut ctx = Value::from_serialize(input.special_tokens);
        let extra = minijinja::context! {
            messages => messages,
            tools => input.tools.clone().unwrap_or_else(py_none),
            documents => input.documents.clone().unwrap_or_else(py_none),
            add_generation_prompt => input.add_generation_prompt,
            strftime_now => Value::from_function(move |fmt: String| -> std::result::Result<String, Error> { Ok(strftime(now, &fmt)) }),
        };
        ctx = minijinja::context! { ..extra, ..ctx };
        let mut out = limits::Bounded(String::new());
        let _clock = limits::RenderClock::start();
        tmpl.render_captured_to(ctx, &mut out)
            .map_err(template_err)?;
        Ok(out.0)
    }
}

/// String methods with Python's whitespace (`strip`, `lstrip`, `rstrip`, `split`,
/// `isspace`); every other method as minijinja-contrib's pycompat has it.
fn python_methods(
    state: &State,
    value: &Value,
    method: &str,
    args: &[Value],
) -> std::result::Result<Value, Error> {
    if let Some(s) = value.as_str() {
        let arg_str = |i: usize| -> std::result::Result<Option<&str>, Error> {
            match args.get(i) {
                None => Ok(None),
                Some(v) if v.is_none() => Ok(None),
                Some(v) => v.as_str().map(Some).ok_or_else(|| {
                    Error::new(
                        ErrorKind::InvalidOperation,
                        format!("{method}: argument must be str or None"),
                    )
                }),
            }
        };
        match method {
            "strip" | "lstrip" | "rstrip" if args.len() <= 1 => {
                let chars = arg_str(0)?;
                return Ok(Value::from(python::strip(
                    s,
                    chars,
                    method != "rstrip",
                    method != "lstrip",
                )));
            }
            "split" if arg_str(0)?.is_none() && args.len() <= 2 => {
                let max = match args.get(1) {
                    Some(v) => i64::try_from(v.clone())?,
                    None => -1,
                };
                return Ok(Value::from(python::split_whitespace(s, max)));
            }
            "isspace" if args.is_empty() => {
                return Ok(Value::from(
                    !s.is_empty() && s.chars().all(python::is_space),
                ));
            }
            // pycompat's, once the result's length is known to be within bounds.
            "replace" => {
                if let (Some(from), Some(to)) = (arg_str(0)?, arg_str(1)?) {
                    let mut n = if from.is_empty() {
                        s.chars().count() + 1
                    } else {
                        s.matches(from).count()
                    };
                    if let Some(c) = args.get(2).and_then(|v| i64::try_from(v.clone()).ok()) {
                        if c >= 0 {
                            n = n.min(c as usize);
                        }
                    }
                    limits::check_value_len(
                        s.len()
                            .saturating_add(n.saturating_mul(to.len()))
                            .saturating_sub(n.saturating_mul(from.len())),
                    )?;
                }
            }
            "join" => {
                if let Some(items) = args.first().and_then(|v| v.try_iter().ok()) {
                    let mut len = 0usize;
                    for (i, x) in items.enumerate() {
                        let item = x.as_str().map_or_else(|| x.to_string().len(), str::len);
                        len = len
                            .saturating_add(if i > 0 { s.len() } else { 0 })
                            .saturating_add(item);
                        limits::check_value_len(len)?;
                    }
                }
            }
            _ => {}
        }
    }
    minijinja_contrib::pycompat::unknown_method_callback(state, value, method, args)
}

fn template_err(e: Error) -> SlmError {
    let mut msg = format!("{}", e.kind());
    if let Some(d) = e.detail() {
        msg.push_str(": ");
        msg.push_str(d);
    }
    // A write failure's reason (the sandbox's output bound) is its source.
    if let Some(src) = std::error::Error::source(&e) {
        msg.push_str(": ");
        msg.push_str(&src.to_string());
    }
    if let Some(line) = e.line() {
        msg.push_str(&format!(" (line {line})"));
    }
    SlmError::Template(msg)
}

/// transformers' `tojson`: `json.dumps(x, ensure_ascii=False, indent=indent,
/// separators=separators, sort_keys=sort_keys)`.
fn tojson(v: Value, kwargs: Kwargs) -> std::result::Result<Value, Error> {
    let indent: Option<usize> = kwargs.get("indent")?;
    let sort_keys: Option<bool> = kwargs.get("sort_keys")?;
    let separators: Option<Vec<String>> = kwargs.get("separators")?;
    kwargs.assert_all_used()?;
    let (item_sep, key_sep) = match &separators {
        Some(s) if s.len() == 2 => (s[0].clone(), s[1].clone()),
        Some(_) => {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                "separators must be a pair",
            ))
        }
        None if indent.is_some() => (",".into(), ": ".into()),
        None => (", ".into(), ": ".into()),
    };
    let mut out = String::new();
    python::PyJson {
        indent,
        item_sep,
        key_sep,
        sort_keys: sort_keys.unwrap_or(false),
    }
    .write(&v, 0, &mut out)?;
    Ok(Value::from_safe_string(out))
}

/// The subset of C `strftime` that chat templates use.
pub fn strftime(unix: i64, fmt: &str) -> String {
    const MONTHS: [&str; 12] = [
        "January",
        "February",
        "March",
        "April",
        "May",
        "June",
        "July",
        "August",
        "September",
        "October",
        "November",
        "December",
    ];
    const DAYS: [&str; 7] = [
        "Thursday",
        "Friday",
        "Saturday",
        "Sunday",
        "Monday",
        "Tuesday",
        "Wednesday",
    ];
    let days = unix.div_euclid(86400);
    let secs = unix.rem_euclid(86400);
    // Howard Hinnant's civil_from_days.
    let z = days + 719468;
    let era = z.div_euclid(146097);
    let doe = z - era * 146097;
    let yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + if m <= 2 { 1 } else { 0 };
    let wd = days.rem_euclid(7) as usize;
    let mut out = String::new();
    let mut it = fmt.chars();
    while let Some(c) = it.next() {
        if c != '%' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('Y') => out.push_str(&y.to_string()),
            Some('y') => out.push_str(&format!("{:02}", y.rem_euclid(100))),
            Some('m') => out.push_str(&format!("{m:02}")),
            Some('d') => out.push_str(&format!("{d:02}")),
            Some('-') => match it.next() {
                Some('d') => out.push_str(&d.to_string()),
                Some('m') => out.push_str(&m.to_string()),
                Some(o) => out.extend(['%', '-', o]),
                None => out.push_str("%-"),
            },
            Some('B') => out.push_str(MONTHS[(m - 1) as usize]),
            Some('b') => out.push_str(&MONTHS[(m - 1) as usize][..3]),
            Some('A') => out.push_str(DAYS[wd]),
            Some('a') => out.push_str(&DAYS[wd][..3]),
            Some('H') => out.push_str(&format!("{:02}", secs / 3600)),
            Some('M') => out.push_str(&format!("{:02}", secs % 3600 / 60)),
            Some('S') => out.push_str(&format!("{:02}", secs % 60)),
            Some('j') => out.push_str(&format!("{:03}", doy_jan(y, m, d))),
            Some('%') => out.push('%'),
            Some(o) => out.extend(['%', o]),
            None => out.push('%'),
        }
    }
    out
}

fn doy_jan(y: i64, m: i64, d: i64) -> i64 {
    let leap = (y % 4 == 0 && y % 100 != 0) || y % 400 == 0;
    let cum = [0, 31, 59, 90, 120, 151, 181, 212, 243, 273, 304, 334];
    cum[(m - 1) as usize] + d + if leap && m > 2 { 1 } else { 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn render(template: &str) -> Result<String> {
        ChatTemplate::new(template)?.render(
            &serde_json::json!([{"role": "user", "content": "hi"}]),
            None,
            false,
            &Map::new(),
            0,
        )
    }

    /// Python's json.loads: a repeated key keeps its first place and its last value;
    /// integers beyond 64 bits stay integers.
    #[test]
    fn parse_json_is_pythons() {
        let v = parse_json(r#"{"a": 1, "b": 2, "a": 123456789012345678901234567890}"#).unwrap();
        let keys: Vec<String> = v.try_iter().unwrap().map(|k| k.to_string()).collect();
        assert_eq!(keys, ["a", "b"]);
        assert_eq!(
            v.get_attr("a").unwrap().to_string(),
            "123456789012345678901234567890"
        );
        assert!(parse_json("[1, 2").is_err());
    }

    #[test]
    fn strftime_known_dates() {
        // 2024-07-26 00:00:00 UTC was a Friday.
        assert_eq!(
            strftime(1721952000, "%d %B %Y %a %H:%M:%S %j"),
            "26 July 2024 Fri 00:00:00 208"
        );
        assert_eq!(strftime(0, "%Y-%m-%d %A"), "1970-01-01 Thursday");
    }

    /// Expected strings are Python's `json.dumps(x, ensure_ascii=False, ...)` output.
    #[test]
    fn tojson_is_python_json_dumps() {
        let x =
            r#"{'a': 1, 'b': [1.5, 'é<"'], 'c': none, 'd': true, 'e': 0.00001, 'f': 2.0, 'g': {}}"#;
        let out = render(&format!("{{{{ {x} | tojson }}}}")).unwrap();
        assert_eq!(
            out,
            r#"{"a": 1, "b": [1.5, "é<\""], "c": null, "d": true, "e": 1e-05, "f": 2.0, "g": {}}"#
        );
        let out = render(&format!("{{{{ {x} | tojson(indent=2) }}}}")).unwrap();
        assert_eq!(
            out,
            "{\n  \"a\": 1,\n  \"b\": [\n    1.5,\n    \"é<\\\"\"\n  ],\n  \"c\": null,\n  \"d\": true,\n  \"e\": 1e-05,\n  \"f\": 2.0,\n  \"g\": {}\n}"
        );
        let out = render(&format!(
            "{{{{ {x} | tojson(separators=[',', ':'], sort_keys=true) }}}}"
        ))
        .unwrap();
        assert_eq!(
            out,
            r#"{"a":1,"b":[1.5,"é<\""],"c":null,"d":true,"e":1e-05,"f":2.0,"g":{}}"#
        );
        let out = render("{{ [1, 2] | tojson(indent=1, separators=[', ', ': ']) }}").unwrap();
        assert_eq!(out, "[\n 1, \n 2\n]");
    }

    #[test]
    fn raise_exception_is_an_error_with_message() {
        let e = render("{{ raise_exception('no system role') }}").unwrap_err();
        assert!(e.to_string().contains("no system role"), "{e}");
    }

    #[test]
    fn fuel_bounds_runaway_templates() {
        let e = render(
            "{% for i in range(100000) %}{% for j in range(100000) %}x{% endfor %}{% endfor %}",
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("fuel") || e.to_string().contains("range"),
            "{e}"
        );
    }

    #[test]
    fn template_syntax_errors_carry_the_line() {
        let e = render("line one\n{% if %}").unwrap_err();
        assert!(e.to_string().contains("line 2"), "{e}");
    }
}
