//! What a person types into a settings field, parsed whole or refused by line: a field
//! never drops the part it cannot read.

/// "id:bias" per line (blank lines skipped), or the first line that is not that.
pub fn logit_bias(text: &str) -> Result<Vec<(u32, f32)>, String> {
    text.lines()
        .enumerate()
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| {
            let bad = || {
                format!(
                    "logit bias line {}: {:?} is not id:bias (a token id, a colon, a finite number)",
                    n + 1,
                    l.trim()
                )
            };
            let (id, b) = l.split_once(':').ok_or_else(bad)?;
            let id: u32 = id.trim().parse().map_err(|_| bad())?;
            let b: f32 = b.trim().parse().map_err(|_| bad())?;
            if !b.is_finite() {
                return Err(bad());
            }
            Ok((id, b))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::logit_bias;

    #[test]
    fn bias_lines_parse_or_are_named() {
        assert_eq!(
            logit_bias("2:-100\n\n 5 : 1.5 \n"),
            Ok(vec![(2, -100.0), (5, 1.5)])
        );
        assert_eq!(logit_bias(""), Ok(vec![]));
        for (text, line) in [
            ("2:-100\nfoo", 2),
            ("x:1", 1),
            ("3:inf", 1),
            ("-1:2", 1),
            ("4", 1),
        ] {
            let e = logit_bias(text).unwrap_err();
            assert!(e.starts_with(&format!("logit bias line {line}:")), "{e}");
        }
    }
}
