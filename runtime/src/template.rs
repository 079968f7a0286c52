//! HF chat templates rendered with minijinja, configured like transformers'
//! `render_jinja_template`: trim_blocks + lstrip_blocks, loop controls, Python string
//! methods (pycompat), `tojson` as Python's `json.dumps(ensure_ascii=False)`,
//! `raise_exception`, `strftime_now`, and the special-token variables. Rendering is
//! bounded by fuel so a hostile template cannot hang the UI.

use minijinja::value::{Kwargs, Value};
use minijinja::{Environment, Error, ErrorKind};
use serde_json::Map;

use crate::error::{Result, SlmError};

/// Fuel for one render: far above what real chat templates need (~10⁴ for long chats).
const FUEL: u64 = 50_000_000;

/// What a template is rendered with.
pub struct RenderInput<'a> {
    /// OpenAI-style messages.
    pub messages: &'a serde_json::Value,
    pub tools: Option<&'a serde_json::Value>,
    pub add_generation_prompt: bool,
    /// Template variables such as `bos_token`, `eos_token`.
    pub special_tokens: &'a Map<String, serde_json::Value>,
    /// Seconds since the Unix epoch for `strftime_now`; the caller owns the clock
    /// (wasm32 has no `SystemTime`), and tests pin it.
    pub now_unix: i64,
}

pub struct ChatTemplate {
    env: Environment<'static>,
}

impl ChatTemplate {
    pub fn new(source: &str) -> Result<ChatTemplate> {
        let mut env = Environment::new();
        env.set_trim_blocks(true);
        env.set_lstrip_blocks(true);
        env.set_fuel(Some(FUEL));
        env.set_unknown_method_callback(minijinja_contrib::pycompat::unknown_method_callback);
        minijinja_contrib::add_to_environment(&mut env);
        env.add_filter("tojson", tojson);
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

    pub fn render(&self, input: &RenderInput) -> Result<String> {
        let tmpl = self.env.get_template("chat").map_err(template_err)?;
        let now = input.now_unix;
        let mut ctx = serde_json::Map::new();
        for (k, v) in input.special_tokens {
            ctx.insert(k.clone(), v.clone());
        }
        let mut ctx = Value::from_serialize(&ctx);
        let extra = minijinja::context! {
            messages => Value::from_serialize(input.messages),
            tools => input.tools.map(Value::from_serialize).unwrap_or(Value::from(())),
            documents => Value::from(()),
            add_generation_prompt => input.add_generation_prompt,
            strftime_now => Value::from_function(move |fmt: String| -> std::result::Result<String, Error> { Ok(strftime(now, &fmt)) }),
        };
        ctx = minijinja::context! { ..extra, ..ctx };
        tmpl.render(ctx).map_err(template_err)
    }
}

fn template_err(e: Error) -> SlmError {
    let mut msg = format!("{}", e.kind());
    if let Some(d) = e.detail() {
        msg.push_str(": ");
        msg.push_str(d);
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
    let json: serde_json::Value = serde_json::to_value(&v)
        .map_err(|e| Error::new(ErrorKind::InvalidOperation, format!("tojson: {e}")))?;
    let mut out = String::new();
    let style = PyJson {
        indent,
        item_sep,
        key_sep,
        sort_keys: sort_keys.unwrap_or(false),
    };
    style.write(&json, 0, &mut out);
    Ok(Value::from_safe_string(out))
}

struct PyJson {
    indent: Option<usize>,
    item_sep: String,
    key_sep: String,
    sort_keys: bool,
}

impl PyJson {
    fn newline(&self, depth: usize, out: &mut String) {
        if let Some(n) = self.indent {
            out.push('\n');
            out.push_str(&" ".repeat(n * depth));
        }
    }

    /// The item separator. With an indent the default is "," (chosen in `tojson`);
    /// explicit separators are used verbatim, trailing space and all, as Python does.
    fn sep(&self) -> &str {
        &self.item_sep
    }

    fn write(&self, v: &serde_json::Value, depth: usize, out: &mut String) {
        use serde_json::Value as J;
        match v {
            J::Null => out.push_str("null"),
            J::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
            J::Number(n) => {
                if let Some(f) = n.as_f64().filter(|_| n.is_f64()) {
                    out.push_str(&py_float_repr(f));
                } else {
                    out.push_str(&n.to_string());
                }
            }
            J::String(s) => py_json_string(s, out),
            J::Array(a) => {
                if a.is_empty() {
                    out.push_str("[]");
                    return;
                }
                out.push('[');
                for (i, x) in a.iter().enumerate() {
                    if i > 0 {
                        out.push_str(self.sep());
                    }
                    self.newline(depth + 1, out);
                    self.write(x, depth + 1, out);
                }
                self.newline(depth, out);
                out.push(']');
            }
            J::Object(o) => {
                if o.is_empty() {
                    out.push_str("{}");
                    return;
                }
                let mut items: Vec<_> = o.iter().collect();
                if self.sort_keys {
                    items.sort_by(|a, b| a.0.cmp(b.0));
                }
                out.push('{');
                for (i, (k, x)) in items.into_iter().enumerate() {
                    if i > 0 {
                        out.push_str(self.sep());
                    }
                    self.newline(depth + 1, out);
                    py_json_string(k, out);
                    out.push_str(&self.key_sep);
                    self.write(x, depth + 1, out);
                }
                self.newline(depth, out);
                out.push('}');
            }
        }
    }
}

fn py_json_string(s: &str, out: &mut String) {
    out.push('"');
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
    out.push('"');
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form outside [1e-4, 1e16).
fn py_float_repr(f: f64) -> String {
    if f.is_nan() {
        return "NaN".into();
    }
    if f.is_infinite() {
        return if f > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let a = f.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        let s = format!("{f:e}");
        let (m, e) = s.split_once('e').unwrap();
        let e: i32 = e.parse().unwrap();
        let m = if m.contains('.') {
            m.to_string()
        } else {
            m.to_string()
        };
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let s = format!("{f}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
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
        ChatTemplate::new(template)?.render(&RenderInput {
            messages: &serde_json::json!([]),
            tools: None,
            add_generation_prompt: false,
            special_tokens: &Map::new(),
            now_unix: 0,
        })
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
