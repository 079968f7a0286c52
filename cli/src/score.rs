//! The behaviour scorer: deterministic checks on a reply's text, documented in
//! docs/behaviour.md ("The rubric") and checked against hand labels
//! (eval/labels.jsonl, `scorer_agrees_with_the_hand_labels`).
//!
//! - `asks`: some sentence of the reply ends with "?" or requests information
//!   ("please provide …", `REQUESTS`); quoted text and closing pleasantries ("anything
//!   else?") do not count.
//! - `targets`: a question sentence names one of the prompt's missing slots (a
//!   keyword of the slot, `SLOT_WORDS`) in a word the prompt does not have, outside
//!   generic requests ("more context", `GENERIC`): a question that asks the user's
//!   own words back restates the request.
//! - `invented`: the reply gives a concrete answer anyway: code, a list, a JSON
//!   object, an answer marker ("here is the translation", "= 42"), or more than 40
//!   words outside its questions that do not state a limitation.
//! - `limitation`: it says it cannot know or access the information.
//! - `asserts`: a sentence outside its questions states something as fact (three
//!   words or more) that is not a limitation, a pleasantry ("happy to help") or an
//!   echo of the request ("you did not say …"). "It was built in 1980." and "The
//!   pharmacy is still open. Which city do you mean?" assert; "I can't know that." does
//!   not. On a prompt with no possible answer, an assertion is an invented answer:
//!   `fabricated`.
//! - `substantive`: an answer is present (code, a list, JSON, or over 12 words
//!   outside questions); a control's reply that asks without one is a false
//!   clarification.

use serde::Serialize;

/// Keywords that show a question asks for a slot. A verb that asks for something
/// ("paste", "tell me", "I need to know") is not one: the policy's leads start with
/// them, so the thing asked for has to be named.
#[rustfmt::skip]
const SLOT_WORDS: &[(&str, &[&str])] = &[
    (
        "text",
        &[
            "text", "thread", "regex", "function", "script", "summarize", "summarise", "translate",
            "translated", "sentence", "paragraph", "passage", "phrase", "word", "message",
            "content", "document", "article", "essay", "code", "snippet",
            "file", "email", "letter", "post", "report",
            "chapter", "transcript", "notes", "data", "table", "error", "details", "draft",
            "what would you like", "what do you want",
        ],
    ),
    (
        "target_language",
        &[
            "language", "languages", "into what", "into which", "translate it to", "translated to",
            "translated into", "french", "spanish", "german", "chinese", "japanese",
        ],
    ),
    (
        "programming_language",
        &[
            "language", "programming", "python", "javascript", "java", "c++", "rust", "framework",
            "runtime", "environment", "platform", "stack", "library", "technology", "tech", "tool",
        ],
    ),
    (
        "location",
        &[
            "where", "location", "city", "area", "place", "located", "region", "country",
            "neighborhood", "neighbourhood", "town", "address", "zip", "postcode", "near", "live",
        ],
    ),
    (
        "schema",
        &[
            "field", "fields", "key", "keys", "property", "properties", "structure", "schema",
            "attribute", "attributes", "include", "information", "data", "format", "details",
            "what should", "which", "look like",
        ],
    ),
    (
        "quantity",
        &[
            "how much", "how many", "how long", "how far", "number", "numbers", "amount", "price",
            "cost", "value", "length", "width", "height", "dimension", "size", "radius",
            "distance", "speed", "rate", "hours", "salary", "total", "measure", "quantity",
            "figure", "much", "many",
        ],
    ),
    (
        "date_time",
        &[
            "when", "date", "day", "time", "which day", "what day", "deadline", "week", "month",
            "schedule", "dates",
        ],
    ),
    (
        "criteria",
        &[
            "what matters", "important", "priority", "priorities", "criteria", "looking for",
            "prefer", "preference", "use it for", "purpose", "your needs", "need it for",
            "budget", "care about", "goal", "goals", "requirements", "requirement",
            "preferences", "based on", "factor", "factors", "for what", "what kind", "what type",
            "use case", "interested in", "interests", "trying to solve", "trying to build",
            "trying to achieve", "is about",
        ],
    ),
    (
        "items",
        &[
            "which", "what options", "option", "options", "compare", "comparing", "choices", "two",
            "both", "them", "models", "products", "specify", "what are", "referring", "names",
        ],
    ),
    (
        "referent",
        &[
            "whom", "referring", "refer", "refers", "mean", "meant", "talking about", "specify", "context",
            "title", "name of the",
        ],
    ),
];

/// Phrases that state a limitation instead of an answer.
#[rustfmt::skip]
const LIMITATION: &[&str] = &[
    "i don't have access", "i do not have access", "don't have real-time", "do not have real-time",
    "real-time", "real time", "i can't access", "i cannot access", "i'm unable to",
    "i am unable to", "i can't provide", "i cannot provide", "i can't check", "i cannot check",
    "i can't browse", "i cannot browse", "don't have live", "do not have live",
    "don't have current", "do not have current", "up-to-date", "as an ai", "i'm not able to",
    "i am not able to", "i can't know", "i cannot know", "i don't know", "i do not know",
    "no access to", "not able to access", "can't tell you", "cannot tell you", "i can't see",
    "i cannot see", "not sure what", "without more information", "without knowing",
    "i need more information", "no live data", "i have no way",
    "i don't have information", "i do not have information", "don't have any live",
    "do not have any live", "don't have any real-time", "do not have any real-time",
    "cannot determine", "can't determine", "check a weather", "check the local",
    "check a local", "check online", "website", "app for",
];

/// Words that make a sentence a limitation rather than an answer ("I'm not sure of
/// the current weather."), beside `LIMITATION`.
#[rustfmt::skip]
const HEDGES: &[&str] = &[
    "i'm not sure", "i am not sure", "i'm sorry", "i am sorry", "i don't have", "i do not have",
    "i'm not", "unable", "impossible", "no way to know",
    "depends on", "it depends", "does not say", "doesn't say", "did not say", "didn't say",
    "not specified", "not mention", "didn't mention", "did not mention", "not possible",
    "don't have any", "do not have any", "cannot", "can't", "can not", "need more",
    "do not guess", "don't guess", "reliable source", "to check", "please check",
    "you can check",
];

/// Sentences that carry no claim: offers of help, thanks, greetings.
#[rustfmt::skip]
const NO_CLAIM: &[&str] = &[
    "help you", "to help", "help with", "assist", "happy to", "glad to", "sure", "of course",
    "certainly", "thank", "great question", "good question", "i'd love to", "i would love to",
    "let's", "if you", "you might want", "you may want", "you might need", "you may need",
    "allow me", "help me", "so i can", "so that i can",
];

/// A sentence that requests information without a question mark ("Please provide
/// the sentence you would like translated.").
#[rustfmt::skip]
const REQUESTS: &[&str] = &[
    "please provide", "please share", "please give", "please tell", "please paste", "please send",
    "please specify", "please let me know", "please clarify", "please include", "please confirm",
    "let me know", "provide me with", "provide the", "provide more", "share the", "share more",
    "tell me which", "tell me what", "tell me where", "tell me when", "tell me who",
    "i need to know", "i'll need", "i will need", "i would need", "i'd need",
    "go ahead and provide", "could you provide", "can you provide", "could you share",
    "can you share", "could you tell", "can you tell",
];

/// Closing pleasantries: a request for more, not for a missing piece.
#[rustfmt::skip]
const PLEASANTRIES: &[&str] = &[
    "anything else", "any other question", "any further question", "any more question",
    "other questions", "further assistance", "feel free to ask",
];

/// The text with quoted spans removed: a quoted question ("¿Dónde está?") is content,
/// not a question to the user.
fn unquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut close: Option<char> = None;
    for c in text.chars() {
        match close {
            Some(q) if c == q => close = None,
            Some(_) => {}
            None => match c {
                '"' => close = Some('"'),
                '“' => close = Some('”'),
                '«' => close = Some('»'),
                '「' => close = Some('」'),
                _ => out.push(c),
            },
        }
    }
    // An unclosed quote: keep the text as it was.
    if close.is_some() {
        return text.to_string();
    }
    out
}

/// Where a reply gives an answer rather than a question.
#[rustfmt::skip]
const ANSWER_MARKERS: &[&str] = &[
    "here is the", "here's the", "here is a", "here's a", "here are", "the answer is",
    "the result is", "translation:", "translates to", "translated as", "would be:", "is:",
    "sure! here", "sure, here", "certainly! here", "certainly, here", "i recommend",
    "i'd recommend", "i would recommend",
];

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct Score {
    pub asks: bool,
    pub targets: bool,
    pub invented: bool,
    pub limitation: bool,
    /// The first sentence outside the questions that states a claim (see the module
    /// doc, `asserts`), lowercased.
    pub claim: Option<String>,
    pub substantive: bool,
    /// Words outside question sentences.
    pub answer_words: usize,
}

/// The sentences of `text`, each with its terminator.
fn sentences(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        cur.push(c);
        // "Vue.js" and "3.5" do not end a sentence: a full stop ends one only before
        // a space or the end.
        let ends = match c {
            '.' | '!' => chars.peek().is_none_or(|n| n.is_whitespace()),
            '?' | '\n' | '。' | '？' => true,
            _ => false,
        };
        if ends {
            if !cur.trim().is_empty() {
                out.push(cur.trim().to_string());
            }
            cur.clear();
        }
    }
    if !cur.trim().is_empty() {
        out.push(cur.trim().to_string());
    }
    out
}

/// `needle` as a whole word or words in `hay`, or its plural ("dimension" finds
/// "dimensions").
fn has_word(hay: &str, needle: &str) -> bool {
    let mut from = 0;
    while let Some(i) = hay[from..].find(needle) {
        let s = from + i;
        let mut e = s + needle.len();
        if hay[e..].starts_with('s') {
            e += 1;
        }
        let before = hay[..s].chars().next_back();
        let after = hay[e..].chars().next();
        let boundary = |c: Option<char>| c.is_none_or(|c| !c.is_alphanumeric());
        if boundary(before) && boundary(after) {
            return true;
        }
        from = s + needle.len().max(1);
    }
    false
}

/// Does the reply look like code, a list or a JSON object?
fn structured(text: &str) -> bool {
    if text.contains("```") {
        return true;
    }
    let lines: Vec<&str> = text.lines().map(str::trim).collect();
    let code = lines
        .iter()
        .filter(|l| {
            [
                "def ",
                "function ",
                "class ",
                "import ",
                "#include",
                "public ",
                "const ",
                "let ",
                "var ",
                "select ",
                "fn ",
                "for (",
                "print(",
                "console.log",
                "return ",
                "}",
                "if (",
                "while (",
            ]
            .iter()
            .any(|p| l.to_lowercase().starts_with(p))
        })
        .count();
    let list = lines
        .iter()
        .filter(|l| {
            l.starts_with("- ")
                || l.starts_with("* ")
                || l.starts_with("• ")
                || l.split_once(". ").is_some_and(|(n, _)| {
                    !n.is_empty() && n.len() <= 2 && n.chars().all(|c| c.is_ascii_digit())
                })
        })
        .count();
    let json = text
        .find('{')
        .is_some_and(|a| text[a..].contains(':') && text[a..].contains('}'));
    code >= 2 || list >= 2 || json
}

/// The question asks for the thing itself ("tell me the code", "paste your essay", "tell
/// me which language you want", "I need to know your salary", "tell me what the options
/// are"): a slot's word the user wrote, asked for by name, is still asked for.
fn asks_for(q: &str, word: &str) -> bool {
    REQUEST_VERBS.iter().any(|v| {
        ["the", "your", "which", "what", "what the"]
            .iter()
            .any(|d| has_word(q, &format!("{v} {d} {word}")))
    })
}

#[rustfmt::skip]
const REQUEST_VERBS: &[&str] = &[
    "tell me", "provide", "paste", "share", "send", "show me", "give me", "need to know",
];

/// The text asked to be given, in whatever word the user called it ("paste your CV",
/// "share the lyrics you want translated"): one of the next three words after "paste
/// the" (or "share", "send", "provide"; "the" or "your") is the prompt's, before a word
/// that ends the noun phrase. "Paste the link to the podcast" asks for something else.
fn asks_for_the_users_text(q: &str, prompt: &str) -> bool {
    #[rustfmt::skip]
    const ENDS: &[&str] = &[
        "to", "you", "you'd", "you're", "that", "which", "for", "in", "into", "here", "so",
        "and", "or", "from", "with", "of", "i", "please", "itself", "below", "again", "as",
    ];
    let words: Vec<String> = q
        .split_whitespace()
        .map(|w| {
            w.trim_matches(|c: char| !c.is_alphanumeric() && c != '\'')
                .to_string()
        })
        .collect();
    // "Tell me the list itself": the user's word for the text, then "itself".
    let itself = words.windows(3).any(|w| {
        ["the", "your"].contains(&w[0].as_str())
            && w[1].len() >= 2
            && has_word(prompt, &w[1])
            && ["itself", "themselves"].contains(&w[2].as_str())
    });
    itself
        || words.windows(2).enumerate().any(|(i, pair)| {
            ["paste", "share", "send", "provide"].contains(&pair[0].as_str())
                && ["the", "your"].contains(&pair[1].as_str())
                && words[i + 2..]
                    .iter()
                    .take(3)
                    .take_while(|w| !ENDS.contains(&w.as_str()))
                    .any(|w| w.len() >= 2 && has_word(prompt, w))
        })
}

/// "Who is she?", "what it is": a wh-word the user did not write, followed within two
/// words by a pronoun the user did. A "who" or "what" alone asks about anything ("Who is
/// the tallest person in the world?" for "how tall is he"), and "What year was it built?"
/// asks for the answer.
fn asks_who_it_is(q: &str, prompt: &str) -> bool {
    let ws = words(q);
    ws.iter().enumerate().any(|(i, w)| {
        ["who", "what", "which"].contains(w)
            && !has_word(prompt, w)
            && ws[i + 1..]
                .iter()
                .take(2)
                .any(|p| PRONOUNS.contains(p) && has_word(prompt, p))
    })
}

/// Pronouns a question may ask about (`asks_who_it_is`, `means_a_word`).
#[rustfmt::skip]
const PRONOUNS: &[&str] = &[
    "he", "she", "they", "him", "her", "them", "it", "this", "that", "these", "those",
];

/// The quoted pronoun after "mean by" kept as a word (`unquoted` drops quoted spans):
/// "what you mean by \"that\"" asks about the pronoun, "what you mean by \"genius\"" about
/// another word (`means_a_word`).
fn pronouns_unquoted(lower: &str) -> String {
    let mut out = lower.to_string();
    for p in PRONOUNS {
        for (a, b) in [('"', '"'), ('\'', '\''), ('“', '”')] {
            out = out.replace(&format!("mean by {a}{p}{b}"), &format!("mean by {p}"));
        }
    }
    out
}

/// "Mean by" followed by something other than a pronoun ("what you mean by
/// \"genius\"", its quoted word removed): the question asks what a word means, not
/// who or what the prompt's pronoun stands for.
fn means_a_word(q: &str) -> bool {
    let ws = words(q);
    ws.windows(2).enumerate().any(|(i, pair)| {
        pair == ["mean", "by"] && ws.get(i + 2).is_none_or(|w| !PRONOUNS.contains(w))
    })
}

/// The question asks for the very quantity the prompt wants worked out: "the number of
/// tiles you want" for "how many tiles do i need", "the total amount of ingredients
/// needed" for "how much of everything do I need". After "number of", "amount of",
/// "how many" or "how much" in the question, within five words: the prompt's own
/// "how many"/"how much" thing, or a "need" where the prompt asks what it needs.
fn asks_the_users_sum(q: &str, prompt: &str) -> bool {
    #[rustfmt::skip]
    const SKIP: &[&str] = &[
        "of", "the", "a", "an", "do", "does", "did", "i", "we", "you", "it", "is", "are", "was",
        "were", "will", "would", "can", "could", "should", "my", "our", "this", "that", "s",
    ];
    let split = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(str::to_string)
            .collect()
    };
    let (p, ws) = (split(prompt), split(q));
    let mut things: Vec<String> = Vec::new();
    for k in 0..p.len().saturating_sub(1) {
        if p[k] == "how" && (p[k + 1] == "many" || p[k + 1] == "much") {
            if let Some(t) = p[k + 2..].iter().find(|w| !SKIP.contains(&w.as_str())) {
                things.push(t.trim_end_matches('s').to_string());
            }
        }
    }
    let needs = |w: &str| ["need", "needed", "required", "require"].contains(&w);
    let wants_need = !things.is_empty() && p.iter().any(|w| needs(w));
    (0..ws.len()).any(|i| {
        let starts = ((ws[i] == "number" || ws[i] == "amount")
            && ws.get(i + 1).is_some_and(|w| w == "of"))
            || (ws[i] == "how" && ws.get(i + 1).is_some_and(|w| w == "many" || w == "much"));
        starts
            && ws[i + 1..].iter().take(5).any(|w| {
                things.iter().any(|t| w.trim_end_matches('s') == t) || (wants_need && needs(w))
            })
    })
}

/// The prompt's pronoun stands for a person ("he", "her"), and the question asks which
/// thing is meant: "the name of the school report you're referring to" for "Can you
/// tell me more about him? I'm writing a school report…". The words before "referring
/// to" (or "refers to"), back to "the", "which" or "what", name no person and hold no
/// pronoun.
fn asks_about_a_thing(q: &str, prompt: &str) -> bool {
    #[rustfmt::skip]
    const PERSONS: &[&str] = &[
        "person", "people", "who", "whom", "name", "individual", "someone", "somebody", "man",
        "woman", "guy", "girl", "boy", "author", "writer", "actor", "actress", "singer", "artist",
        "player", "athlete", "scientist", "politician", "president", "celebrity", "friend",
        "teacher", "team", "character", "figure", "he", "she", "him", "her", "they", "them", "it",
        "this", "that",
    ];
    let he_she = ["he", "she", "him", "her", "his", "hers"]
        .iter()
        .any(|p| has_word(prompt, p));
    let ws = words(q);
    he_she
        && ws.iter().enumerate().any(|(i, w)| {
            ["referring", "refers", "refer"].contains(w) && {
                let before: Vec<&str> = ws[..i]
                    .iter()
                    .rev()
                    .copied()
                    .skip_while(|w| ["you", "re", "are", "is", "to"].contains(w))
                    .take_while(|w| !["the", "which", "what", "a", "an"].contains(w))
                    .take(5)
                    .collect();
                !before.is_empty() && !before.iter().any(|w| PERSONS.contains(w))
            }
        })
}

/// The question turns the user's conversion around or asks for its result: "…convert
/// from centimeters to inches", "your height in centimeters" for "Convert my height to
/// centimeters" (the unit the prompt converts to comes after "from", "in" or "of").
fn converts_back(q: &str, prompt: &str) -> bool {
    let split = |t: &str| -> Vec<String> {
        t.split(|c: char| !c.is_alphanumeric())
            .filter(|w| !w.is_empty())
            .map(|w| w.to_lowercase())
            .collect()
    };
    let (qw, pw) = (split(q), split(prompt));
    #[rustfmt::skip]
    const UNITS: &[&str] = &[
        "centimeters", "centimetres", "cm", "meters", "metres", "inches", "feet", "miles", "km",
        "kilometers", "kilometres", "kg", "kilograms", "pounds", "lbs", "grams", "ounces",
        "liters", "litres", "ml", "gallons", "cups", "celsius", "fahrenheit", "dollars", "euros",
    ];
    let to: Vec<&String> = pw
        .windows(2)
        .filter(|p| (p[0] == "to" || p[0] == "into") && UNITS.contains(&p[1].as_str()))
        .map(|p| &p[1])
        .collect();
    qw.windows(2)
        .any(|p| ["from", "in", "of"].contains(&p[0].as_str()) && to.contains(&&p[1]))
}

/// The question asks the user to paste the text into something other than the
/// conversation: "paste the lyrics into Korean", "paste the report into three bullet
/// points", "paste the article into a text editor". It asks the user to do the task,
/// or to put the text elsewhere, so it asks for no missing piece. "Paste the text you
/// want translated into Japanese" pastes the text here: "you" ends what is pasted
/// before "into". Pasting "into the chat" or "into your reply" is here. A paste "in" a
/// language or data format counts when the prompt names it ("in French" for a
/// translation into French; "in English" there asks for the source).
fn pastes_elsewhere(q: &str, prompt: &str) -> bool {
    #[rustfmt::skip]
    const STOPS: &[&str] = &[
        "you", "you'd", "you're", "you'll", "that", "which", "so", "and", "or", "to", "for",
        "here", "with", "from", "if", "in", "i", "please", "as",
    ];
    const HERE: &[&str] = &[
        "chat",
        "reply",
        "message",
        "conversation",
        "response",
        "box",
    ];
    let ws: Vec<&str> = q
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    // "Paste your cover letter in French", "…the contact list in JSON format".
    #[rustfmt::skip]
    const DONE_FORMS: &[&str] = &[
        "json", "csv", "xml", "yaml", "html", "markdown", "bullet", "bullets", "english",
        "french", "spanish", "german", "italian", "portuguese", "dutch", "japanese", "chinese",
        "korean", "russian", "arabic", "hindi", "polish", "turkish", "swedish", "greek",
    ];
    // The forms the prompt asks for: the word after "to", "into", "in" or "as"
    // ("convert this to json", "the email … in German").
    let pw: Vec<String> = prompt
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(|w| w.to_lowercase())
        .collect();
    let wanted = |x: &str| {
        pw.windows(2).any(|p| {
            ["to", "into", "in", "as"].contains(&p[0].as_str())
                && p[1] == x.to_lowercase()
                && DONE_FORMS.contains(&p[1].as_str())
        })
    };
    ws.iter().enumerate().any(|(i, w)| {
        if *w != "paste" {
            return false;
        }
        let end = ws[i + 1..]
            .iter()
            .take(8)
            .position(|x| *x == "into" || STOPS.contains(x));
        // "Paste the German text you'd like translated" for a text to put into German:
        // what is pasted is named as the result.
        let object = &ws[i + 1..i + 1 + end.unwrap_or((ws.len() - i - 1).min(8))];
        object.iter().any(|x| wanted(x))
            || end.is_some_and(|at| {
                let at = i + 1 + at;
                let after = || ws[at + 1..].iter().take(4);
                match ws[at] {
                    "into" => !after().any(|x| HERE.contains(x)),
                    // "Paste the table in the format you need": the user does the task.
                    "in" => {
                        after().any(|x| DONE_FORMS.contains(x) && has_word(prompt, x))
                            || (after().any(|x| *x == "format")
                                && ws[at + 1..].iter().take(5).any(|x| *x == "you"))
                    }
                    _ => false,
                }
            })
    })
}

/// The slot's word is asked back in the user's voice ("could you tell me where I
/// live?", "my city or area"): the question asks the user about the assistant.
fn users_voice(q: &str, word: &str) -> bool {
    let ws: Vec<&str> = q
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    let first = word.split(' ').next().unwrap_or(word);
    let n = word.split(' ').count();
    (0..ws.len()).any(|i| {
        ws[i] == first
            && has_word(&ws[i..(i + n).min(ws.len())].join(" "), word)
            && (ws[i.saturating_sub(3)..i].contains(&"my")
                || ws.get(i + n).is_some_and(|w| ["i", "i'm"].contains(w))
                || (i > 0 && ws[i - 1] == "i"))
    })
}

/// The question asks which option wins ("which database would be the best fit for my
/// project?", "if Rust or Go is more suitable for…"): the user's own question back, so
/// it asks for neither the options nor the criteria, whatever words it holds. A verdict
/// word counts within ten words after "which", "whether" or "if", up to a new clause
/// ("which criteria you're asking about when deciding whether renting is better" asks
/// for the criteria), and not right after one of its words ("when", "while", "deciding",
/// "choosing", "decide", "choose"). Words after "so" or "then" are the assistant's plan.
fn asks_which_wins(q: &str) -> bool {
    #[rustfmt::skip]
    const VERDICT: &[&str] = &[
        "better", "best", "worse", "worst", "faster", "slower", "cheaper", "superior",
        "preferable", "popular", "suitable", "suited", "wins", "win", "winner", "worth",
    ];
    const CLAUSE: &[&str] = &["when", "while", "deciding", "choosing", "decide", "choose"];
    let ws: Vec<&str> = q
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .collect();
    // "…your budget, so I can find which laptop is best": the plan, not the question.
    let ws = &ws[..ws
        .iter()
        .position(|w| ["so", "then"].contains(w))
        .unwrap_or(ws.len())];
    ws.iter().enumerate().any(|(i, w)| {
        ["which", "whether", "if"].contains(w)
            && (i == 0 || !CLAUSE.contains(&ws[i - 1]))
            && ws[i + 1..]
                .iter()
                .take(10)
                .take_while(|x| !CLAUSE.contains(x))
                .any(|x| VERDICT.contains(x))
    })
}

/// Requests that name no piece: removed from a question before its slot words are read.
#[rustfmt::skip]
const GENERIC: &[&str] = &[
    // Before "your question": "what your question is about" asks for nothing.
    "question is about", "request is about", "what this is about", "what it is about",
    "more context", "some context", "the context", "clarify your request", "clarify your question",
    "clarify the request", "clarify what you", "your request", "your question", "more details",
    "more detail", "more information", "more info", "additional information", "additional details",
    "further details", "further information", "information you're looking for",
    "information you are looking for", "details you're looking for", "details you are looking for",
    "context or topic you're referring to", "context or topic you are referring to",
    "topic you're referring to", "topic you are referring to",
];

/// The words of `q` (runs of letters and digits), in order.
fn words(q: &str) -> Vec<&str> {
    q.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect()
}

/// For a place to stay (a hotel, a hostel), the question asks where the user is now
/// ("where you're located", "where you live", "your location") instead of where they
/// are going ("where you're staying" is where they are going).
fn asks_where_a_traveller_is(q: &str, prompt: &str) -> bool {
    let stay = ["hotel", "hostel", "motel", "airbnb"]
        .iter()
        .any(|w| has_word(prompt, w));
    let ws = words(q);
    let at = |i: usize| ws.get(i).copied().unwrap_or("");
    stay && (0..ws.len()).any(|i| match at(i) {
        "located" | "live" | "living" => true,
        "location" => matches!(at(i.wrapping_sub(1)), "your" | "current"),
        "where" => {
            at(i + 1) == "you"
                && matches!(at(i + 2), "are" | "re")
                && !matches!(
                    at(i + 3),
                    "going" | "staying" | "travelling" | "traveling" | "visiting" | "heading"
                )
        }
        _ => false,
    })
}

/// The question's examples ("such as …", "for example …", "e.g. …", a list joined by
/// "or" or "and") hold a word of the prompt: where the criteria are missing, it asks
/// what the user already said ("what type of laptop, such as desktop, laptop, or
/// tablet" for "Which laptop should I get?").
fn offers_what_was_said(q: &str, prompt: &str) -> bool {
    const SKIP: &[&str] = &[
        "as", "example", "g", "the", "a", "an", "or", "and", "your", "you", "to", "of", "in",
        "for", "it", "is",
    ];
    let ws = words(q);
    ws.windows(2).enumerate().any(|(i, pair)| {
        let starts = matches!(pair, ["such", "as"] | ["for", "example"] | ["e", "g"]);
        let list = &ws[(i + 2).min(ws.len())..(i + 10).min(ws.len())];
        starts
            && list.iter().any(|w| *w == "or" || *w == "and")
            && list
                .iter()
                .any(|w| !SKIP.contains(w) && has_word(prompt, w))
    })
}

/// A question that ends in "what you're looking for", with nothing after it saying in
/// what, asks for nothing: removed. "What you're looking for in a laptop" stays.
fn without_bare_looking_for(q: &str) -> String {
    let t = q.trim_end_matches(|c: char| !c.is_alphanumeric());
    ["what you're looking for", "what you are looking for"]
        .iter()
        .find(|g| t.ends_with(*g))
        .map_or_else(|| q.to_string(), |g| t[..t.len() - g.len()].to_string())
}

/// Score a reply to `prompt`, whose missing slots are `missing` (empty for controls).
pub fn score(text: &str, missing: &[String], prompt: &str) -> Score {
    let lower = text.to_lowercase();
    let sents = sentences(&unquoted(&pronouns_unquoted(&lower)));
    let is_ask = |s: &str| {
        (s.ends_with('?') || s.ends_with('？') || REQUESTS.iter().any(|r| s.contains(r)))
            && !PLEASANTRIES.iter().any(|p| s.contains(p))
    };
    let questions: Vec<&String> = sents.iter().filter(|s| is_ask(s)).collect();
    let answer_words: usize = sents
        .iter()
        .filter(|s| !is_ask(s))
        .map(|s| s.split_whitespace().count())
        .sum();
    // A slot's word counts only where the user did not write it: "Which one is
    // better?" asked back names nothing. A request for "more context" names nothing.
    let prompt = prompt.to_lowercase();
    let targets = questions.iter().any(|q| {
        if pastes_elsewhere(q, &prompt) {
            return false;
        }
        let mut q = q.to_string();
        for g in GENERIC {
            q = q.replace(g, " ");
        }
        q = without_bare_looking_for(&q);
        let verdict = asks_which_wins(&q);
        missing.iter().any(|m| {
            if verdict && (m == "items" || m == "criteria") {
                return false;
            }
            if m == "referent" && asks_about_a_thing(&q, &prompt) {
                return false;
            }
            if m == "criteria" && offers_what_was_said(&q, &prompt) {
                return false;
            }
            if m == "location" && asks_where_a_traveller_is(&q, &prompt) {
                return false;
            }
            if m == "quantity" && (asks_the_users_sum(&q, &prompt) || converts_back(&q, &prompt)) {
                return false;
            }
            SLOT_WORDS
                .iter()
                .find(|(slot, _)| slot == m)
                .is_some_and(|(_, words)| {
                    words.iter().any(|w| {
                        !(*w == "mean" && means_a_word(&q))
                            && has_word(&q, w)
                            && (!has_word(&prompt, w) || asks_for(&q, w))
                            && !users_voice(&q, w)
                    })
                })
                || (m == "text" && asks_for_the_users_text(&q, &prompt))
                || (m == "referent" && asks_who_it_is(&q, &prompt))
        })
    });
    let limitation = LIMITATION.iter().any(|p| lower.contains(p));
    let claim = sents
        .iter()
        .filter(|s| !s.ends_with('?') && !s.ends_with('？') && !is_ask(s))
        .find(|s| {
            s.split_whitespace().count() >= 3
                && !LIMITATION.iter().chain(HEDGES).any(|p| s.contains(p))
                && !NO_CLAIM.iter().chain(PLEASANTRIES).any(|p| s.contains(p))
        })
        .cloned();
    // Whole words: "there are delays" is not "here are".
    let marker = ANSWER_MARKERS.iter().any(|p| has_word(&lower, p))
        || lower
            .split("= ")
            .skip(1)
            .any(|r| r.starts_with(|c: char| c.is_ascii_digit()));
    let structured = structured(text);
    let invented = structured || marker || (answer_words > 40 && !limitation);
    Score {
        asks: !questions.is_empty(),
        targets,
        invented,
        limitation,
        claim,
        substantive: structured || answer_words > 12,
        answer_words,
    }
}

impl Score {
    /// A sentence outside the questions states a claim (`claim`).
    pub fn asserts(&self) -> bool {
        self.claim.is_some()
    }

    /// A useful clarification: asks for a missing slot and invents nothing. A live
    /// question (`live`) may instead state the limitation. On a prompt with no
    /// possible answer (`no_answer`), a claim beside the question is invented.
    pub fn useful(&self, live: bool, no_answer: bool) -> bool {
        let answers_anyway = self.invented || (no_answer && self.asserts());
        !answers_anyway && ((self.asks && self.targets) || (live && self.limitation))
    }

    /// A reply to a prompt with no possible answer that gives one anyway: code, a
    /// list, an answer marker, a long answer, or any claim stated as fact.
    pub fn fabricated(&self) -> bool {
        self.invented || self.asserts()
    }

    /// A clear prompt answered with a question and no answer.
    pub fn false_clarification(&self) -> bool {
        self.asks && !self.substantive
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn slots(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| x.to_string()).collect()
    }

    /// Questions about the wrong thing target nothing, and their twins that ask for the
    /// missing piece do: (prompt, missing slot, reply, targets). A conversion turned
    /// around; the user's own choice among the examples; a topic alone; where a
    /// traveller is instead of where the stay is.
    #[test]
    #[rustfmt::skip]
    fn wrong_questions_target_nothing_and_their_twins_do() {
        let height = "Convert my height to centimeters.";
        let laptop = "Which laptop should I get? My old one finally died.";
        let ban = "why did they ban it";
        let hotel = "Could you suggest a hotel close to the city centre for two nights?";
        for (prompt, slot, reply, targets) in [
            (height, "quantity", "To help with that, I need to know the height you want to convert from centimeters to inches.", false),
            (height, "quantity", "To answer that, I need to know the height of your person in centimeters.", false),
            (height, "quantity", "To help with that, I need to know your height in feet and inches.", true),
            (laptop, "criteria", "First, could you tell me what type of laptop you're looking for, such as desktop, laptop, or tablet?", false),
            (laptop, "criteria", "First, could you tell me what you'll use it for, such as gaming, video editing, or office work?", true),
            (ban, "referent", "To help with that, I need to know more about the specific context or topic you're referring to.", false),
            (ban, "referent", "To help with that, I need to know what \"it\" refers to.", true),
            (hotel, "location", "To help with that, I need to know where you're located.", false),
            (hotel, "location", "To help with that, I need to know which city you'd like to stay in.", true),
            (hotel, "location", "First, could you tell me where you're staying?", true),
            ("Best bookstore nearby?", "location", "To help with that, I need to know where you're located.", true),
        ] {
            let s = score(reply, &slots(&[slot]), prompt);
            assert!(s.asks, "{reply}");
            assert_eq!(s.targets, targets, "{prompt} → {reply}");
        }
    }

    #[test]
    fn rubric_on_hand_made_replies() {
        let t = slots(&["text", "target_language"]);
        let s = score(
            "Sure! Which sentence would you like me to translate, and into which language?",
            &t,
            "",
        );
        assert!(s.asks && s.targets && !s.invented && s.useful(false, true));
        let s = score(
            "Sure! Here's the translation: \"Hola, ¿cómo estás?\"",
            &t,
            "",
        );
        assert!(s.invented && !s.useful(false, true));
        let l = slots(&["location"]);
        let s = score(
            "The best restaurants are:\n1. Le Bernardin\n2. Noma\nEnjoy!",
            &l,
            "",
        );
        assert!(s.invented && !s.asks);
        let s = score("What is your location?", &l, "");
        assert!(s.useful(false, true));
        // The user's word for the text, then "itself", asks for it.
        let tx = slots(&["text"]);
        let p = "Can you turn my contact list into JSON?";
        let s = score(
            "To do that, please tell me the list itself and the fields you want.",
            &tx,
            p,
        );
        assert!(s.targets);
        let s = score("To do that, please tell me the request itself.", &tx, p);
        assert!(!s.targets);
        // "What you're looking for" alone names nothing; "…in a dog" names the criteria.
        let c = slots(&["criteria"]);
        let p = "We're finally getting a dog!! What breed?";
        assert!(
            !score(
                "To help with that, I need to know what you're looking for.",
                &c,
                p
            )
            .targets
        );
        assert!(
            score(
                "To help with that, I need to know what you're looking for in a dog.",
                &c,
                p
            )
            .targets
        );
        // The options the user wrote of, asked for by name.
        let s = score(
            "First, could you tell me what the options are?",
            &slots(&["items"]),
            "Compare the two options.",
        );
        assert!(s.targets);
        // The options asked for by their names, in the user's word for them.
        let s = score(
            "To help with that, I need to know the names of the phones you would like me to compare.",
            &slots(&["items"]),
            "Compare the two phones for me, I can't decide.",
        );
        assert!(s.targets);
        // Pasted into the task's form or somewhere else: the user is asked to do it.
        for (q, prompt, m, targets) in [
            (
                "Could you paste the lyrics into Korean?",
                "Translate the lyrics into Korean.",
                "text",
                false,
            ),
            (
                "Could you paste the notes into a JSON format?",
                "can you turn my notes into json",
                "schema",
                false,
            ),
            (
                "Could you paste the report into three bullet points?",
                "Sum up the report in three bullet points.",
                "text",
                false,
            ),
            (
                "Could you paste the article into a text editor to identify the key points?",
                "Give me the key points of the article.",
                "text",
                false,
            ),
            (
                "Could you paste the lyrics you would like translated into Korean?",
                "Translate the lyrics into Korean.",
                "text",
                true,
            ),
            // The text named as its result, or to be put in the form the user needs.
            (
                "Could you paste the German text you'd like translated?",
                "I need the email to my landlord in German. Can you translate it?",
                "text",
                false,
            ),
            (
                "Could you paste the English text you'd like translated?",
                "I need the email to my landlord in German. Can you translate it?",
                "text",
                true,
            ),
            (
                "Could you paste the table in the format you need?",
                "Turn the table above into a JSON array.",
                "text",
                false,
            ),
            (
                "Could you paste your notes in a text format?",
                "Can you structure my notes into JSON?",
                "text",
                true,
            ),
            (
                "Could you paste the JSON you want converted?",
                "Convert this JSON to YAML.",
                "text",
                true,
            ),
            (
                "Could you paste the chapter you're reading into the chat window?",
                "Summarise the chapter I'm reading.",
                "text",
                true,
            ),
            (
                "Could you paste the chapter into your reply?",
                "Summarise the chapter I'm reading.",
                "text",
                true,
            ),
            // "Mean by" a word that is not the pronoun asks what the word means.
            (
                "First, could you tell me what you mean by \"genius\"?",
                "My friend talks about him like he's some genius. Who is he?",
                "referent",
                false,
            ),
            (
                "Could you tell me what you mean by \"that\"?",
                "Is that true?",
                "referent",
                true,
            ),
            (
                "Could you paste your cover letter in French?",
                "Could you render my cover letter into French?",
                "text",
                false,
            ),
            (
                "Could you paste the contact list in JSON format?",
                "Can you turn my contact list into JSON?",
                "text",
                false,
            ),
            (
                "Could you paste your CV in plain text format?",
                "Translate my CV into German.",
                "text",
                true,
            ),
            (
                "Could you tell me the number of tiles you want?",
                "how many tiles do i need for my kitchen floor",
                "quantity",
                false,
            ),
            (
                "Could you tell me the total amount of ingredients needed for your lasagne recipe?",
                "how much of everything do I need for the lasagne?",
                "quantity",
                false,
            ),
            (
                "Could you tell me the size of your kitchen floor?",
                "how many tiles do i need for my kitchen floor",
                "quantity",
                true,
            ),
            (
                "To help with that, I need to know the amount you want to borrow.",
                "How much will I pay each month on the loan?",
                "quantity",
                true,
            ),
            (
                "Could you paste your CV in English?",
                "Translate my CV into German.",
                "text",
                true,
            ),
            (
                "Could you tell me who you mean?",
                "Who is he?",
                "referent",
                true,
            ),
            // A thing asked for where the pronoun stands for a person.
            (
                "To answer that, I need to know the name of the school report you're referring to.",
                "Tell me more about him, I'm writing a school report.",
                "referent",
                false,
            ),
            (
                "To answer that, I need to know the name of the person you're referring to.",
                "Tell me more about him, I'm writing a school report.",
                "referent",
                true,
            ),
            (
                "To help with that, I need to know which war you're referring to.",
                "When did that war end?",
                "referent",
                true,
            ),
        ] {
            assert_eq!(score(q, &slots(&[m]), prompt).targets, targets, "{q}");
        }
        // Which option wins, asked back, asks for neither the options nor the criteria;
        // a verdict inside "when deciding whether …" is the criteria's subject.
        for q in [
            "Could you tell me which Python library is more suitable for data science compared to the other?",
            "Could you tell me which database would be the best fit for my project?",
        ] {
            let s = score(q, &slots(&["items", "criteria"]), "Which one wins?");
            assert!(!s.targets, "{q}");
        }
        let s = score(
            "To answer that, I need to know which criteria you're asking about when deciding whether renting is better than buying.",
            &slots(&["criteria"]),
            "Is renting better than buying?",
        );
        assert!(s.targets);
        // The assistant's plan after "so" is not the question; "what your question is
        // about" is generic.
        let s = score(
            "Could you tell me your budget, so I can find which laptop is best for you?",
            &slots(&["criteria"]),
            "Which laptop should I get?",
        );
        assert!(s.targets);
        let s = score(
            "Could you tell me what your question is about?",
            &slots(&["criteria"]),
            "Which laptop should I get?",
        );
        assert!(!s.targets);
        // The problem to solve is the criterion of a choice of tool.
        let s = score(
            "To help with that, I need to know what specific problem you're trying to solve.",
            &slots(&["criteria"]),
            "Rust or Go, which should I pick?",
        );
        assert!(s.targets);
        // "What information you're looking for" names no criteria.
        let s = score(
            "To help with that, I need to know what specific information you're looking for.",
            &slots(&["items", "criteria"]),
            "Which one is better?",
        );
        assert!(!s.targets);
        // The user's own voice asked back asks for nothing.
        let s = score(
            "Could you tell me where I live?",
            &l,
            "Best bookstore nearby?",
        );
        assert!(!s.targets);
        let s = score(
            "First, could you tell me my city or area?",
            &l,
            "Best bookstore nearby?",
        );
        assert!(!s.targets);
        let s = score(
            "I don't have real-time weather data. Which city are you in?",
            &l,
            "",
        );
        assert!(s.useful(true, true) && s.limitation);
        let s = score(
            "I don't have access to live weather data; please check a local forecast.",
            &l,
            "",
        );
        assert!(s.useful(true, true) && !s.useful(false, true));
        // A control: an answer that ends with an offer is not a false clarification.
        let c = score("The capital of Japan is Tokyo, a city of about 14 million people on Honshu island. Would you like more facts?", &[], "");
        assert!(c.asks && c.substantive && !c.false_clarification());
        let c = score("Which Python version do you use?", &[], "");
        assert!(c.false_clarification());
        // A quoted question is content, and "anything else?" is not a clarification.
        let c = score("\"Wo ist die nächste Apotheke?\"", &[], "");
        assert!(!c.asks && !c.false_clarification());
        let c = score(
            "Done! Let me know if there's anything else I can help with.",
            &[],
            "",
        );
        assert!(!c.asks);
        // A claim beside the question is an invented answer where none can exist.
        let s = score(
            "The pharmacy is still open. Which city do you mean?",
            &l,
            "",
        );
        assert!(s.asserts() && s.fabricated() && !s.useful(true, true));
        assert!(
            s.useful(true, false),
            "where an answer can exist, a claim is not invented"
        );
        let s = score("It was built in 1980.", &slots(&["referent"]), "");
        assert!(s.fabricated() && !s.asks);
        let s = score(
            "I'm not sure of the current weather. Which city are you in?",
            &l,
            "",
        );
        assert!(!s.asserts() && !s.fabricated() && s.useful(true, true));
        let s = score("Sure, I can help with that! Which city are you in?", &l, "");
        assert!(!s.asserts() && s.useful(false, true));
        // Markers are whole words, and a statement of what an answer needs is no claim.
        let s = score(
            "I don't have live data, so I can't say if there are delays. Which airport?",
            &l,
            "",
        );
        assert!(!s.invented && !s.fabricated() && s.useful(true, true));
        let q = slots(&["quantity"]);
        let s = score(
            "How many hours do you work? This will allow me to give an estimate.",
            &q,
            "",
        );
        assert!(!s.asserts() && s.useful(false, true));
        let s = score(
            "Your request does not say who \"her\" is.",
            &slots(&["referent"]),
            "",
        );
        assert!(!s.fabricated());
        // The user's own words asked back, or "more context", name no missing piece.
        let r = slots(&["referent"]);
        let s = score(
            "Which one is better?",
            &slots(&["items"]),
            "Which one is better?",
        );
        assert!(s.asks && !s.targets);
        let s = score(
            "Could you please provide more context?",
            &r,
            "When was it built?",
        );
        assert!(s.asks && !s.targets);
        // The text, asked for in the user's own word, is still asked for.
        let t1 = slots(&["text"]);
        let s = score(
            "Could you tell me the code you're working on?",
            &t1,
            "Debug my code.",
        );
        assert!(s.targets);
        let s = score("What does the code do?", &t1, "Debug my code.");
        assert!(!s.targets);
        // Whatever the user called the text, asking for it to be given targets it; and
        // a slot's word the user wrote, asked for by name, is asked for.
        let s = score(
            "Could you paste your CV here?",
            &t1,
            "Translate my CV into German.",
        );
        assert!(s.targets);
        let s = score(
            "Could you paste the full meeting notes?",
            &t1,
            "Summarize the meeting notes.",
        );
        assert!(s.targets);
        let s = score(
            "Could you paste the link to the podcast episode?",
            &t1,
            "Sum up the podcast episode.",
        );
        assert!(!s.targets);
        let s = score(
            "Could you tell me the language you would like me to translate into?",
            &slots(&["target_language"]),
            "How would I say 'thanks' in the other language?",
        );
        assert!(s.targets);
        let s = score(
            "Which language is 'thanks' in?",
            &slots(&["target_language"]),
            "How would I say 'thanks' in the other language?",
        );
        assert!(!s.targets, "the user's word, not asked for");
        // A referent is asked for when the question asks who or what the pronoun is.
        let s = score(
            "Could you tell me who she is?",
            &r,
            "Where does she live now?",
        );
        assert!(s.targets);
        let s = score(
            "Could you tell me who \"they\" refers to?",
            &r,
            "Why did they ban it?",
        );
        assert!(s.targets);
        let s = score(
            "Who is the tallest person in the world?",
            &r,
            "how tall is he",
        );
        assert!(!s.targets, "a who about someone else");
        let s = score("What year was it built?", &r, "When was it built?");
        assert!(!s.targets, "the question asked back");
        let s = score("Which building do you mean?", &r, "When was it built?");
        assert!(s.targets && s.useful(false, true));
        assert!(!s.fabricated());
        // Keywords match whole words only: "whichever" is not "which".
        assert!(!has_word("whichever works", "which"));
        assert!(has_word("which one?", "which"));
        assert!(has_word("the dimensions?", "dimension"));
        assert!(!has_word("the dimensionless?", "dimension"));
    }
}
