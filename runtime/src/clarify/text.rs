//! The message as the rules read it: lowercase words, phrase lookup, and whether the
//! message carries a payload (quoted text, a code block, text after a colon or on its
//! own lines, or a long message) that a deictic "this" could point at.

use super::lexicon::{
    DATE_PHRASES, DATE_WORDS, LANGUAGES, MATERIALS, NOT_A_PLACE, NUMBER_WORDS, RESPELLINGS,
};

/// Acronyms of formats, languages and work, capitalized without naming anything.
const FORMAT_WORDS: &[&str] = &[
    "json", "csv", "xml", "html", "css", "sql", "pdf", "api", "url", "yaml", "http", "https",
    "rest", "ui", "ux", "ai", "ok", "tl;dr", "tldr", "asap",
    // Work's abbreviations: "the diff for the PR", "the Q3 board minutes", "the SOP".
    "pr", "sop", "eta", "eod", "fyi", "hr", "kpi", "kpis", "roi", "faq", "q1", "q2", "q3", "q4",
];

/// Characters trimmed from both ends of a word.
const TRIM: &[char] = &[
    '"', '\'', '“', '”', '‘', '’', '«', '»', '(', ')', '[', ']', '{', '}', '<', '>', ',', '.', '!',
    '?', ':', ';', '*', '_', '`', '~', '¿', '¡', '$', '€', '£', '¥',
];

/// A message split into lowercase words, with the raw text kept for case and quotes.
pub struct Words<'a> {
    pub raw: &'a str,
    pub w: Vec<String>,
    /// The raw (cased) form of each word, same indices as `w`.
    pub cased: Vec<String>,
    /// Index of each word's sentence start (the first word of a sentence is
    /// capitalized for grammar, not because it names something).
    pub sentence_initial: Vec<bool>,
    /// Each word that ends a clause: a comma, semicolon, colon or full stop follows it.
    pub ends_clause: Vec<bool>,
}

impl<'a> Words<'a> {
    pub fn new(raw: &'a str) -> Words<'a> {
        let mut w = Vec::new();
        let mut cased = Vec::new();
        let mut initial = Vec::new();
        let mut ends_clause = Vec::new();
        let mut at_start = true;
        for chunk in raw.split(|c: char| c.is_whitespace() || c == '/' || c == '—') {
            let ends_sentence = chunk.ends_with(['.', '!', '?', ':', '\n']);
            let clause = ends_sentence
                || chunk
                    .trim_end_matches(['"', '\'', ')'])
                    .ends_with([',', ';']);
            let t = chunk.trim_matches(TRIM);
            if t.is_empty() {
                at_start |= ends_sentence;
                continue;
            }
            // "20%" is a number and a percent sign.
            if let Some(n) = t.strip_suffix('%') {
                if !n.is_empty() {
                    w.push(n.to_lowercase());
                    cased.push(n.to_string());
                    initial.push(at_start);
                    ends_clause.push(false);
                }
                w.push("%".into());
                cased.push("%".into());
                initial.push(false);
                ends_clause.push(clause);
            } else {
                let lower = t.to_lowercase();
                let word = RESPELLINGS
                    .iter()
                    .find(|(typo, _)| *typo == lower)
                    .map_or(lower, |(_, word)| word.to_string());
                w.push(word);
                cased.push(t.to_string());
                initial.push(at_start);
                ends_clause.push(clause);
            }
            at_start = ends_sentence;
        }
        Words {
            raw,
            w,
            cased,
            sentence_initial: initial,
            ends_clause,
        }
    }

    pub fn len(&self) -> usize {
        self.w.len()
    }

    /// Index of the first occurrence of `phrase` (words separated by spaces).
    pub fn find(&self, phrase: &str) -> Option<usize> {
        self.find_from(phrase, 0)
    }

    pub fn find_from(&self, phrase: &str, from: usize) -> Option<usize> {
        let p: Vec<&str> = phrase.split(' ').collect();
        if p.len() > self.w.len() {
            return None;
        }
        (from..=self.w.len() - p.len()).find(|&i| p.iter().zip(&self.w[i..]).all(|(a, b)| a == b))
    }

    pub fn has(&self, phrase: &str) -> bool {
        self.find(phrase).is_some()
    }

    /// The first entry of `list` the message contains, as a phrase.
    pub fn any<'l>(&self, list: &[&'l str]) -> Option<&'l str> {
        list.iter().copied().find(|p| self.has(p))
    }

    /// Is word `k` the "why" (how, what) of a reason clause, "… which is why I'm
    /// asking", "that's how it broke"? It gives a reason; it asks none.
    pub fn reason_clause(&self, k: usize) -> bool {
        k > 0
            && self
                .w
                .get(k)
                .is_some_and(|x| ["why", "how", "what"].contains(&x.as_str()))
            && ["is", "that's", "thats"].contains(&self.w[k - 1].as_str())
    }

    /// Does some word start with `prefix` ("translat" for translate, translation…)?
    pub fn starts(&self, prefix: &str) -> Option<usize> {
        self.w.iter().position(|x| x.starts_with(prefix))
    }

    pub fn is_number(word: &str) -> bool {
        let digits = word.trim_start_matches(['-', '+']);
        (!digits.is_empty()
            && digits.chars().next().is_some_and(|c| c.is_ascii_digit())
            && digits
                .chars()
                .all(|c| c.is_ascii_digit() || ",._kmx:".contains(c)))
            || NUMBER_WORDS.contains(&word)
    }

    /// "3pm", "9:30am", "3-4pm", "14:30": a time of day ("1:1" is a meeting).
    pub fn is_clock(word: &str) -> bool {
        let digit = |c: char| c.is_ascii_digit();
        let d = word.trim_end_matches("am").trim_end_matches("pm");
        (d.len() < word.len()
            && d.starts_with(digit)
            && d.chars().all(|c| digit(c) || ":.-".contains(c)))
            || (word.contains(':') && word != "1:1" && word.starts_with(digit))
    }

    /// "5th", "the 13th", "June 3rd": a day of a month.
    pub fn is_ordinal(word: &str) -> bool {
        ["st", "nd", "rd", "th"].iter().any(|s| {
            word.strip_suffix(s)
                .is_some_and(|d| !d.is_empty() && d.chars().all(|c| c.is_ascii_digit()))
        })
    }

    /// "2h", "10min", "45mins", "30s": a span of time.
    fn is_span(word: &str) -> bool {
        let unit = word.trim_start_matches(|c: char| c.is_ascii_digit() || c == '.');
        unit.len() < word.len()
            && word.starts_with(|c: char| c.is_ascii_digit())
            && ["h", "hr", "hrs", "min", "mins", "m", "s", "sec", "secs"].contains(&unit)
    }

    /// Numbers the message states (digits or number words).
    pub fn numbers(&self) -> usize {
        // "one" is a determiner or a pronoun far more often than a quantity, and "1:1"
        // is a meeting.
        (0..self.len()).filter(|&i| self.is_quantity(i)).count()
    }

    /// Is word `i` a number the message states? "one" is a determiner or a pronoun far
    /// more often than a quantity, "1:1" is a meeting, and "double my savings" and "for
    /// money to double" are verbs.
    fn is_quantity(&self, i: usize) -> bool {
        let x = self.w[i].as_str();
        let verb = ["double", "triple", "halve"].contains(&x)
            && (i
                .checked_sub(1)
                .is_some_and(|p| ["to", "will", "would"].contains(&self.w[p].as_str()))
                || self.w.get(i + 1).is_some_and(|n| {
                    [
                        "my", "our", "your", "the", "it", "its", "his", "her", "their", "this",
                        "that", "money",
                    ]
                    .contains(&n.as_str())
                }));
        Self::is_number(x) && x != "one" && x != "1:1" && !verb
    }

    /// Numbers that measure the thing asked about, not a rate, a count of coats or the
    /// material's own size: "one litre covers about 10 square metres", "two coats" and
    /// "the tiles are 30 by 30 cm" give no wall's or floor's size.
    pub fn measures(&self) -> usize {
        (0..self.len())
            .filter(|&i| {
                let rate = (i.saturating_sub(2)..i).any(|k| {
                    ["covers", "cover", "per", "every", "each", "covering"]
                        .contains(&self.w[k].as_str())
                }) || self.w.get(i + 1).is_some_and(|n| {
                    ["coats", "coat", "layers", "layer", "per", "times"].contains(&n.as_str())
                });
                self.is_quantity(i) && !rate && !self.sizes_material(i)
            })
            .count()
    }

    /// Is number `i` a size of the material itself: "tiles are 30 by 30 cm", "tiles
    /// measuring 30x30", "30 by 30 cm tiles"? Only within one clause: in "the floor is
    /// 2.4m x 1.8m, tiles are 30x30 cm" the first two size the floor.
    fn sizes_material(&self, i: usize) -> bool {
        const LINKS: &[&str] = &[
            "are",
            "is",
            "measure",
            "measuring",
            "each",
            "of",
            "at",
            "about",
            "sized",
            "size",
        ];
        const SIZE_WORDS: &[&str] = &[
            "by",
            "x",
            "×",
            "cm",
            "mm",
            "m",
            "in",
            "inch",
            "inches",
            "ft",
            "foot",
            "feet",
            "centimetre",
            "centimetres",
            "centimeter",
            "centimeters",
            "millimetre",
            "millimetres",
            "square",
            "large",
            "big",
            "small",
        ];
        let material = |k: usize| MATERIALS.contains(&self.w[k].as_str());
        let sizing = |x: &String| Self::is_number(x) || SIZE_WORDS.contains(&x.as_str());
        let one_clause = |a: usize, b: usize| !self.ends_clause[a..b].iter().any(|&e| e);
        let before = (i.saturating_sub(4)..i).any(|k| {
            material(k)
                && one_clause(k, i)
                && self.w[k + 1..i]
                    .iter()
                    .all(|x| LINKS.contains(&x.as_str()) || sizing(x))
        });
        let after = (i + 1..(i + 6).min(self.len()))
            .any(|k| material(k) && one_clause(i, k) && self.w[i + 1..k].iter().all(sizing));
        before || after
    }

    /// A word capitalized where grammar would not capitalize it: a name.
    pub fn has_name(&self) -> bool {
        (0..self.len()).any(|i| self.is_name(i))
    }

    /// A name that can be a person's: not part of a capitalized run opened by "the" or
    /// a place preposition ("the Nobel Prize", "at Wimbledon" name things and places,
    /// never a "she").
    pub fn has_person_name(&self) -> bool {
        let mut thing_run = false;
        for i in 0..self.len() {
            let name = self.is_name(i);
            // "the Nobel Prize", "at Wimbledon", "in Malibu": a thing or a place.
            let opens_run = i > 0
                && [
                    "the", "at", "in", "on", "from", "to", "into", "near", "around", "of",
                ]
                .contains(&self.w[i - 1].as_str());
            let continues = i > 0 && self.is_name(i - 1);
            thing_run = name && (opens_run || (continues && thing_run));
            if name && !thing_run {
                return true;
            }
        }
        false
    }

    fn is_name(&self, i: usize) -> bool {
        let c = &self.cased[i];
        !self.sentence_initial[i]
            && c != "I"
            && !c.starts_with("I'")
            && c.chars().next().is_some_and(|ch| ch.is_uppercase())
            // Weekdays, months and nationalities are capitalized but name no one.
            && !DATE_WORDS.contains(&self.w[i].as_str())
            && !LANGUAGES.contains(&self.w[i].as_str())
            // JSON, CSV, SQL: formats, not names.
            && !FORMAT_WORDS.contains(&self.w[i].as_str())
    }

    /// Does the message say a date or a time?
    pub fn has_date(&self) -> bool {
        if self.any(DATE_WORDS).is_some() || self.any(DATE_PHRASES).is_some() {
            return true;
        }
        self.w.iter().enumerate().any(|(i, x)| {
            let next = self.w.get(i + 1).map(String::as_str).unwrap_or("");
            let prev = if i > 0 { self.w[i - 1].as_str() } else { "" };
            // 3pm, 15:30, 12/05 (split at '/'), 5th, "at 3", "in 10 minutes".
            Self::is_clock(x)
                || Self::is_ordinal(x)
                || (Self::is_number(x) && (prev == "at" || next == "o'clock"))
                || (Self::is_number(x)
                    && prev == "in"
                    && [
                        "minutes", "minute", "hours", "hour", "days", "day", "weeks", "mins",
                    ]
                    .contains(&next))
                || (x.len() == 4 && x.starts_with("20") && x.chars().all(|c| c.is_ascii_digit()))
        }) || self.raw.split_whitespace().any(|t| {
            let parts: Vec<&str> = t.trim_matches(TRIM).split(['/', '-']).collect();
            parts.len() >= 2
                && parts
                    .iter()
                    .all(|p| !p.is_empty() && p.len() <= 4 && p.chars().all(|c| c.is_ascii_digit()))
        })
    }

    /// Does the message name a place ("in Lyon", "near Shibuya station", "Paris")?
    pub fn has_place(&self) -> bool {
        if self.has_name() {
            return true;
        }
        for prep in [
            "in", "near", "around", "at", "close to", "within", "downtown",
        ] {
            let mut from = 0;
            while let Some(i) = self.find_from(prep, from) {
                from = i + 1;
                let mut j = i + prep.split(' ').count();
                while self
                    .w
                    .get(j)
                    .is_some_and(|x| x == "downtown" || x == "central")
                {
                    j += 1;
                }
                let Some(next) = self.w.get(j) else { continue };
                // "in the bay area" names a place; "in the area" does not.
                if next == "the" {
                    if let Some(after) = self.w.get(j + 1) {
                        if !NOT_A_PLACE.contains(&after.as_str())
                            && !["city", "area", "neighborhood", "region", "country"]
                                .contains(&after.as_str())
                            && self.w.get(j + 2).is_some_and(|a| {
                                ["area", "city", "region", "valley", "district", "coast"]
                                    .contains(&a.as_str())
                            })
                        {
                            return true;
                        }
                    }
                    continue;
                }
                // "at 3pm", "in 2h": a time or a span, never a place ("near 42nd st" is).
                if !NOT_A_PLACE.contains(&next.as_str())
                    && !Self::is_number(next)
                    && !Self::is_clock(next)
                    && !Self::is_span(next)
                {
                    return true;
                }
            }
        }
        false
    }

    /// Words of this message outside `drop`.
    pub fn content<'s>(&'s self, drop: &[&[&str]]) -> Vec<&'s str> {
        self.w
            .iter()
            .map(String::as_str)
            .filter(|x| !drop.iter().any(|l| l.contains(x)))
            .collect()
    }
}

/// Over 45 words: long enough to be a text pasted into one line, or a request told
/// at length (which `rules` tells apart by how it names its text).
pub fn is_long(raw: &str) -> bool {
    raw.split_whitespace().count() > 45
}

/// A text the message sets apart: a code block, a quotation, two or more words after a
/// colon, or further lines.
pub fn delimited_payload(raw: &str) -> bool {
    let bare = without_placeholders(&without_verdicts(raw));
    let t = bare.trim();
    if t.contains("```")
        || t.lines()
            .skip(1)
            .any(|l| l.starts_with("    ") || l.starts_with('\t'))
    {
        return true;
    }
    if quoted(t) || inline_code(t) {
        return true;
    }
    // Where a placeholder stands on a line of its own for the text, the lines around
    // it frame a text that is not there ("Dear [Name]," fills a name in a text).
    let alone = raw.lines().any(|l| {
        let l = l.trim();
        l.len() > 2 && without_placeholders(l).trim().is_empty()
    });
    if alone {
        return false;
    }
    // "Summarize this: <text>".
    // "Aquarium math: how many gallons …", "Quick question: …": a label, then the
    // request itself.
    if let Some((before, after)) = t.split_once(':') {
        // "My son's homework: a train travels at 60 mph …" gives the problem itself.
        let asks = after.split_whitespace().next().is_some_and(|w| {
            [
                "how", "what", "what's", "whats", "which", "when", "where", "why", "who", "is",
                "are", "can", "could", "do", "does", "should", "will",
            ]
            .contains(&w.to_lowercase().as_str())
        });
        let label = asks
            && before.split_whitespace().count() <= 3
            && before.split_whitespace().last().is_some_and(|w| {
                ["math", "maths", "question", "q", "problem", "help"]
                    .contains(&w.to_lowercase().as_str())
            });
        if after.split_whitespace().count() >= 2 && !label {
            return true;
        }
    }
    let lines = letter_body(t);
    lines
        .iter()
        .skip(1)
        .map(|l| l.split_whitespace().count())
        .sum::<usize>()
        >= 3
}

/// The message without the placeholders a template leaves where a text should go:
/// "Here's the transcript: [transcript]" or "<paste here>" carries no text. A
/// bracket of one to four words of letters alone is a placeholder; one with digits,
/// commas or signs ("[5, 3, 8]", "<a href=…>") is data.
fn without_placeholders(raw: &str) -> String {
    let mut out = String::with_capacity(raw.len());
    let mut rest = raw;
    while let Some(open) = rest.find(['[', '<']) {
        let close = if rest[open..].starts_with('[') {
            ']'
        } else {
            '>'
        };
        let inner_end = rest[open + 1..].find(close).map(|k| open + 1 + k);
        let placeholder = inner_end.is_some_and(|e| {
            let inner = &rest[open + 1..e];
            let words = inner.split_whitespace().count();
            (1..=4).contains(&words)
                && inner.chars().any(char::is_alphabetic)
                && inner
                    .chars()
                    .all(|c| c.is_alphabetic() || c == ' ' || c == '-' || c == '_')
        });
        match inner_end.filter(|_| placeholder) {
            Some(e) => {
                out.push_str(&rest[..open]);
                rest = &rest[e + 1..];
            }
            None => {
                out.push_str(&rest[..open + 1]);
                rest = &rest[open + 1..];
            }
        }
    }
    out.push_str(rest);
    out
}

/// The message without the quotes that judge or name a text rather than give it: "my
/// sister says it sounds 'like a robot wrote it'", "said to read 'the Keynes chapter'",
/// "it needs to be 'the right shape'".
fn without_verdicts(raw: &str) -> String {
    const ASIDE: &[&str] = &[
        "sounds", "sound", "sounded", "looks", "feels", "called", "titled", "read", "to be",
    ];
    let mut t = raw.to_string();
    for v in ASIDE {
        for (open, close) in [('\'', '\''), ('"', '"'), ('‘', '’'), ('“', '”')] {
            let cue = format!("{v} {open}");
            // A word of its own: "proofread 'Their going'" gives the text.
            let lower = t.to_ascii_lowercase();
            let Some(a) = lower
                .match_indices(&cue)
                .map(|(a, _)| a)
                .find(|&a| !lower[..a].ends_with(|c: char| c.is_alphanumeric()))
            else {
                continue;
            };
            let from = a + v.len() + 1;
            if let Some(b) = t[from + open.len_utf8()..].find(close) {
                t.replace_range(from..from + open.len_utf8() + b + close.len_utf8(), "");
            }
        }
    }
    t
}

/// The non-blank lines of a message, without a letter's frame: a greeting line
/// ("Dear Sir or Madam,", "Hi team,") and a sign-off ("Kind regards,") with the name
/// under it. A request written as a letter carries no text on its further lines.
fn letter_body(t: &str) -> Vec<&str> {
    #[rustfmt::skip]
    const GREETINGS: &[&str] = &[
        "dear", "hi", "hello", "hey", "good morning", "good afternoon", "good evening",
        "to whom", "greetings",
    ];
    #[rustfmt::skip]
    const SIGN_OFFS: &[&str] = &[
        "regards", "kind regards", "best regards", "warm regards", "best", "thanks",
        "many thanks", "thank you", "thanks in advance", "sincerely", "yours sincerely",
        "yours faithfully", "yours truly", "cheers", "all the best", "best wishes",
    ];
    let bare = |l: &str| l.trim().trim_end_matches([',', '.', '!']).to_lowercase();
    let mut lines: Vec<&str> = t.lines().filter(|l| !l.trim().is_empty()).collect();
    let greeting = lines.first().is_some_and(|l| {
        let b = bare(l);
        l.split_whitespace().count() <= 5
            && l.trim_end().ends_with([',', '!', ':'])
            && GREETINGS.iter().any(|g| b.starts_with(g))
    });
    if greeting && lines.len() > 1 {
        lines.remove(0);
    }
    // The sign-off and at most two short lines of name and title after it.
    if let Some(k) = lines
        .iter()
        .rposition(|l| SIGN_OFFS.contains(&bare(l).as_str()))
    {
        let tail = &lines[k + 1..];
        if k > 0 && tail.len() <= 2 && tail.iter().all(|l| l.split_whitespace().count() <= 4) {
            lines.truncate(k);
        }
    }
    lines
}

/// Code or a formula written inline: "=A2+B2", "len(xs)", "arr[i]", "x==y" (an `=`
/// before a letter or digit, or brackets opened right after one and closed), or a
/// pattern dense with regex symbols ("^[a-z0-9]+$").
fn inline_code(t: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    t.split_whitespace().any(|tok| {
        let c: Vec<char> = tok
            .trim_end_matches(['.', ',', '?', '!', ';', ':'])
            .chars()
            .collect();
        let symbols = c.iter().filter(|&&ch| "^$[]{}|\\*+".contains(ch)).count();
        symbols >= 3 && c.len() >= 4
            || c.iter().enumerate().any(|(i, &ch)| match ch {
                '=' => c
                    .get(i + 1)
                    .is_some_and(|&n| word(n) || n == '(' || n == '='),
                '(' | '[' => {
                    let close = if ch == '(' { ')' } else { ']' };
                    i > 0 && word(c[i - 1]) && c[i + 1..].contains(&close)
                }
                _ => false,
            })
    })
}

/// A word without its possessive ending: "neighbour's" → "neighbour".
pub fn without_possessive(w: &str) -> &str {
    w.strip_suffix("'s")
        .or_else(|| w.strip_suffix("’s"))
        .unwrap_or(w)
}

/// Is some span quoted? Double quotes, typographic quotes and guillemets always
/// count; a single quote only where it cannot be an apostrophe.
pub fn quoted(t: &str) -> bool {
    for (open, close) in [
        ('"', '"'),
        ('“', '”'),
        ('«', '»'),
        ('„', '“'),
        ('‘', '’'),
        ('`', '`'),
    ] {
        if let Some(a) = t.find(open) {
            let rest = &t[a + open.len_utf8()..];
            if let Some(b) = rest.find(close) {
                if !rest[..b].trim().is_empty() {
                    return true;
                }
            }
        }
    }
    // 'hello world': opened after a space, a colon or the start; closed before a
    // space, punctuation or the end.
    let chars: Vec<char> = t.chars().collect();
    let mut open = None;
    for (i, &c) in chars.iter().enumerate() {
        if c != '\'' {
            continue;
        }
        let before = if i == 0 { ' ' } else { chars[i - 1] };
        let after = chars.get(i + 1).copied().unwrap_or(' ');
        match open {
            None if (before.is_whitespace() || "(:[".contains(before))
                && !after.is_whitespace() =>
            {
                open = Some(i)
            }
            Some(o)
                if !before.is_whitespace()
                    && (after.is_whitespace() || ".,!?;:)]".contains(after))
                    && i > o + 1 =>
            {
                return true;
            }
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn payloads() {
        for (s, want) in [
            ("Translate this sentence.", false),
            ("Translate 'I am hungry'.", true),
            ("Translate \"hola\" into English", true),
            ("Summarize this: The meeting moved to Friday.", true),
            ("Summarize this:", false),
            ("Fix this:\n```\nx = 1 +\n```", true),
            ("What's wrong with my code?", false),
            ("Proofread my essay\nIt was the best of times it was", true),
            ("Don't you think it's late?", false),
            ("It's John's book 'Dune' I mean", true),
        ] {
            assert_eq!(delimited_payload(s), want, "{s}");
        }
    }

    #[test]
    fn dates_places_numbers() {
        let d = |s| Words::new(s).has_date();
        assert!(d("Schedule it for Monday"));
        assert!(d("book a table at 7pm"));
        assert!(d("remind me in 10 minutes"));
        assert!(d("on 12/05 please"));
        assert!(d("on the 5th"));
        assert!(!d("Schedule a meeting with Anna."));
        assert!(!d("Book a flight to Rome for me"));
        let p = |s| Words::new(s).has_place();
        assert!(p("What is the best restaurant in Lyon?"));
        assert!(p("best sushi in tokyo"));
        assert!(p("a good dentist near Shibuya station"));
        assert!(p("a bar in the bay area"));
        assert!(!p("What is the best restaurant?"));
        assert!(!p("Where can I get a good haircut near me?"));
        assert!(!p("best pizza in town"));
        assert!(!p("Recommend a cheap hotel in the area."));
        let n = |s| Words::new(s).numbers();
        assert_eq!(n("How much will 3 tickets cost at $12.50 each?"), 2);
        assert_eq!(n("What's 20% of my salary?"), 1);
        assert_eq!(n("Which one is better?"), 0);
        assert_eq!(n("a rectangle five by three"), 2);
    }
}
