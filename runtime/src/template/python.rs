//! Python semantics that chat templates rely on, since transformers renders them with
//! jinja2 on Python objects: `str()` of values (`True`, `None`, a list's repr), string
//! whitespace (`str.isspace`, `strip`, `split`), `repr` of floats and strings, and
//! `json.dumps` as transformers' `tojson` calls it. Each function names the Python
//! behaviour it reproduces; the template conformance suite checks them against
//! transformers 5.24 on real templates.

use std::fmt::Write;

use minijinja::value::{Value, ValueKind};
use minijinja::{Error, ErrorKind};

/// Python's `str.isspace` for one character: the Unicode White_Space set plus the
/// information separators U+001C–U+001F (Python's "bidirectional class B/S/WS").
pub fn is_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `str.strip()`, `lstrip()`, `rstrip()`: with no argument Python's whitespace, else
/// the given characters.
pub fn strip<'a>(s: &'a str, chars: Option<&str>, left: bool, right: bool) -> &'a str {
    let hit = |c: char| match chars {
        Some(set) => set.contains(c),
        None => is_space(c),
    };
    let s = if left { s.trim_start_matches(hit) } else { s };
    if right {
        s.trim_end_matches(hit)
    } else {
        s
    }
}

/// `str.split()` with no separator: runs of Python whitespace split, empty strings
/// dropped; `maxsplit` as Python (negative means no limit).
pub fn split_whitespace(s: &str, maxsplit: i64) -> Vec<Value> {
    let mut out = Vec::new();
    let mut rest = s.trim_start_matches(is_space);
    while !rest.is_empty() {
        if maxsplit >= 0 && out.len() as i64 == maxsplit {
            out.push(Value::from(rest));
            break;
        }
        match rest.find(is_space) {
            Some(i) => {
                out.push(Value::from(&rest[..i]));
                rest = rest[i..].trim_start_matches(is_space);
            }
            None => {
                out.push(Value::from(rest));
                break;
            }
        }
    }
    out
}

/// Python's `repr(float)`: shortest round-trip digits, exponent form outside
/// [1e-4, 1e16), `inf`/`nan` as Python spells them (`json.dumps` differs: see
/// [`json_float`]).
pub fn float_repr(f: f64) -> String {
    if f.is_nan() {
        return "nan".into();
    }
    if f.is_infinite() {
        return if f > 0.0 { "inf".into() } else { "-inf".into() };
    }
    let a = f.abs();
    if a != 0.0 && !(1e-4..1e16).contains(&a) {
        let s = format!("{f:e}");
        let (m, e) = s.split_once('e').unwrap_or((&s, "0"));
        let e: i32 = e.parse().unwrap_or(0);
        return format!("{m}e{}{:02}", if e < 0 { '-' } else { '+' }, e.abs());
    }
    let s = format!("{f}");
    if s.contains('.') {
        s
    } else {
        format!("{s}.0")
    }
}

/// `json.dumps` of a float: `repr`, with `NaN` and `Infinity` for the specials.
fn json_float(f: f64) -> String {
    if f.is_nan() {
        "NaN".into()
    } else if f.is_infinite() {
        if f > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else {
        float_repr(f)
    }
}

/// Whether Python's `str.isprintable` holds for `c` (what `repr` leaves unescaped):
/// false for controls (Cc), format characters (Cf), separators other than the ASCII
/// space (Zs, Zl, Zp), surrogates and private use.
fn is_printable(c: char) -> bool {
    let u = c as u32;
    if c == ' ' {
        return true;
    }
    if u < 0x20 || (0x7f..=0xa0).contains(&u) || c.is_whitespace() {
        return false;
    }
    !matches!(u,
        0xad | 0x600..=0x605 | 0x61c | 0x6dd | 0x70f | 0x890..=0x891 | 0x8e2 | 0x180e
        | 0x200b..=0x200f | 0x202a..=0x202e | 0x2060..=0x2064 | 0x2066..=0x206f
        | 0xfeff | 0xfff9..=0xfffb | 0x110bd | 0x110cd | 0x13430..=0x1343f
        | 0x1bca0..=0x1bca3 | 0x1d173..=0x1d17a | 0xe0001 | 0xe0020..=0xe007f
        | 0xe000..=0xf8ff | 0xf0000..=0xffffd | 0x100000..=0x10fffd)
}

/// Python's `repr(str)`: single quotes unless the text has a `'` and no `"`.
pub fn str_repr(s: &str, out: &mut String) {
    let q = if s.contains('\'') && !s.contains('"') {
        '"'
    } else {
        '\''
    };
    out.push(q);
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if c == q => {
                out.push('\\');
                out.push(c);
            }
            c if is_printable(c) => out.push(c),
            c if (c as u32) < 0x100 => {
                let _ = write!(out, "\\x{:02x}", c as u32);
            }
            c if (c as u32) < 0x10000 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => {
                let _ = write!(out, "\\U{:08x}", c as u32);
            }
        }
    }
    out.push(q);
}

/// An integer value (minijinja keeps `42` apart from `42.0`) as decimal digits.
fn int_digits(v: &Value) -> Option<String> {
    if !v.is_integer() {
        return None;
    }
    if let Ok(i) = i128::try_from(v.clone()) {
        return Some(i.to_string());
    }
    u128::try_from(v.clone()).ok().map(|u| u.to_string())
}

/// Python's `str()` of a value as jinja2 prints it (`{{ x }}`, `|string`).
pub fn str_of(v: &Value, out: &mut String) {
    match v.kind() {
        ValueKind::Undefined => {}
        ValueKind::String => out.push_str(v.as_str().unwrap_or_default()),
        _ => repr(v, out),
    }
}

/// Python's `str()` as a new string.
pub fn py_str(v: &Value) -> String {
    let mut s = String::new();
    str_of(v, &mut s);
    s
}

/// Python's `repr()`.
pub fn repr(v: &Value, out: &mut String) {
    match v.kind() {
        ValueKind::Undefined => {}
        ValueKind::None => out.push_str("None"),
        ValueKind::Bool => out.push_str(if v.is_true() { "True" } else { "False" }),
        ValueKind::Number => match int_digits(v) {
            Some(d) => out.push_str(&d),
            _ => out.push_str(&float_repr(f64::try_from(v.clone()).unwrap_or(f64::NAN))),
        },
        ValueKind::String => str_repr(v.as_str().unwrap_or_default(), out),
        ValueKind::Seq | ValueKind::Iterable => {
            out.push('[');
            if let Ok(it) = v.try_iter() {
                for (i, x) in it.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    repr(&x, out);
                }
            }
            out.push(']');
        }
        ValueKind::Map => {
            out.push('{');
            if let Ok(it) = v.try_iter() {
                for (i, k) in it.enumerate() {
                    if i > 0 {
                        out.push_str(", ");
                    }
                    repr(&k, out);
                    out.push_str(": ");
                    repr(&v.get_item(&k).unwrap_or_default(), out);
                }
            }
            out.push('}');
        }
        _ => {
            let _ = write!(out, "{v}");
        }
    }
}

/// `json.dumps(x, ensure_ascii=False, indent=…, separators=…, sort_keys=…)`, walking
/// template values directly so that integers wider than 64 bits stay exact.
/// `tojson`'s output bound: the sandbox's output limit.
fn check_json_len(len: usize) -> Result<(), Error> {
    if len > super::limits::MAX_OUTPUT {
        return Err(Error::new(
            ErrorKind::InvalidOperation,
            format!(
                "tojson: the JSON is over the sandbox's {} byte limit",
                super::limits::MAX_OUTPUT
            ),
        ));
    }
    Ok(())
}

pub struct PyJson {
    pub indent: Option<usize>,
    pub item_sep: String,
    pub key_sep: String,
    pub sort_keys: bool,
}

impl PyJson {
    fn newline(&self, depth: usize, out: &mut String) -> Result<(), Error> {
        if let Some(n) = self.indent {
            let width = n.saturating_mul(depth);
            check_json_len(out.len().saturating_add(width))?;
            out.push('\n');
            out.push_str(&" ".repeat(width));
        }
        Ok(())
    }

    /// Writes `v` as JSON. Bounded as it goes: nesting deeper than
    /// `MAX_JSON_DEPTH` and output past the sandbox's `MAX_OUTPUT` are errors (a
    /// structure that shares itself can be exponentially larger than its values).
    pub fn write(&self, v: &Value, depth: usize, out: &mut String) -> Result<(), Error> {
        if depth > super::MAX_JSON_DEPTH {
            return Err(Error::new(
                ErrorKind::InvalidOperation,
                format!("tojson: nested deeper than {}", super::MAX_JSON_DEPTH),
            ));
        }
        check_json_len(out.len())?;
        match v.kind() {
            ValueKind::Undefined => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    "tojson: Object of type Undefined is not JSON serializable",
                ))
            }
            ValueKind::None => out.push_str("null"),
            _ if super::is_py_none(v) => out.push_str("null"),
            ValueKind::Bool => out.push_str(if v.is_true() { "true" } else { "false" }),
            ValueKind::Number => match int_digits(v) {
                Some(d) => out.push_str(&d),
                _ => out.push_str(&json_float(f64::try_from(v.clone()).unwrap_or(f64::NAN))),
            },
            ValueKind::String => json_string(v.as_str().unwrap_or_default(), out),
            ValueKind::Seq | ValueKind::Iterable => {
                let items: Vec<Value> = v.try_iter()?.collect();
                if items.is_empty() {
                    out.push_str("[]");
                    return Ok(());
                }
                out.push('[');
                for (i, x) in items.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item_sep);
                    }
                    self.newline(depth + 1, out)?;
                    self.write(x, depth + 1, out)?;
                }
                self.newline(depth, out)?;
                out.push(']');
            }
            ValueKind::Map => {
                let mut keys: Vec<Value> = v.try_iter()?.collect();
                if keys.is_empty() {
                    out.push_str("{}");
                    return Ok(());
                }
                if self.sort_keys {
                    keys.sort();
                }
                out.push('{');
                for (i, k) in keys.iter().enumerate() {
                    if i > 0 {
                        out.push_str(&self.item_sep);
                    }
                    self.newline(depth + 1, out)?;
                    // json.dumps turns int, float, bool and None keys into strings.
                    let key = match k.kind() {
                        ValueKind::String => k.as_str().unwrap_or_default().to_string(),
                        ValueKind::Bool => (if k.is_true() { "true" } else { "false" }).into(),
                        ValueKind::None => "null".into(),
                        _ => {
                            let mut s = String::new();
                            repr(k, &mut s);
                            s
                        }
                    };
                    json_string(&key, out);
                    out.push_str(&self.key_sep);
                    self.write(&v.get_item(k)?, depth + 1, out)?;
                }
                self.newline(depth, out)?;
                out.push('}');
            }
            _ => {
                return Err(Error::new(
                    ErrorKind::InvalidOperation,
                    format!("tojson: a {} is not JSON serializable", v.kind()),
                ))
            }
        }
        Ok(())
    }
}

/// A JSON string as `json.dumps(ensure_ascii=False)` writes it.
fn json_string(s: &str, out: &mut String) {
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
            c if (c as u32) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", c as u32);
            }
            c => out.push(c),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn isspace_is_pythons() {
        for c in [
            '\u{1c}', '\u{1f}', '\u{85}', '\u{a0}', '\u{2028}', '\u{3000}', '\u{b}', '\u{c}',
        ] {
            assert!(is_space(c), "{c:?}");
        }
        for c in ['\u{200b}', '\u{feff}', 'x', '\u{1b}'] {
            assert!(!is_space(c), "{c:?}");
        }
        assert_eq!(strip("\u{1c} a \u{1f}\u{3000}", None, true, true), "a");
        assert_eq!(strip("xxaxx", Some("x"), true, false), "axx");
    }

    #[test]
    fn split_is_pythons() {
        let s = |v: Vec<Value>| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
        assert_eq!(
            s(split_whitespace("  a \u{1c}b\t c  ", -1)),
            ["a", "b", "c"]
        );
        assert_eq!(s(split_whitespace("a b  c", 1)), ["a", "b  c"]);
        assert!(split_whitespace(" \u{1f} ", -1).is_empty());
    }

    /// Expected strings are Python 3's `str()` and `repr()`.
    #[test]
    fn str_and_repr_are_pythons() {
        let v = Value::from_serialize(serde_json::json!(
            [{"type": "text", "text": "it's"}, true, null, 1.0, 1e-7, 2, "a\"b'c", "\u{200d}\u{a0}\n"]
        ));
        let mut out = String::new();
        str_of(&v, &mut out);
        assert_eq!(
            out,
            r#"[{'type': 'text', 'text': "it's"}, True, None, 1.0, 1e-07, 2, 'a"b\'c', '\u200d\xa0\n']"#
        );
        let mut out = String::new();
        str_of(&Value::from(1e16), &mut out);
        assert_eq!(out, "1e+16");
    }
}
