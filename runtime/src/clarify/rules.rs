//! One rule per kind of missing piece. Each reads the message's words (and the
//! earlier messages, which may supply what this one leaves out) and reports what is
//! missing, how sure it is, and why. A rule that is unsure stays silent: a question
//! asked of a clear prompt costs the user a turn.

use super::lexicon::*;
use super::text::{delimited_payload, is_long, quoted, without_possessive, Words};
use super::{Finding, Slot, Wording};

/// Every rule's findings on `text`, with `earlier` messages as context.
#[rustfmt::skip]
pub fn assess_text(text: &str, earlier: &[&str]) -> Vec<Finding> {
    let m = Words::new(text);
    let ctx = Context::new(text, earlier);
    let mut out = Vec::new();
    live(&m, &ctx, &mut out);
    time_zones(&m, &ctx, &mut out);
    if !out.iter().any(|f| f.slot == Slot::Location) {
        local_facts(&m, &ctx, &mut out);
    }
    translate(&m, &ctx, &mut out);
    acts_on_text(&m, &ctx, &mut out);
    error_without_code(&m, &ctx, &mut out);
    code(&m, &ctx, &mut out);
    recommendation(&m, &ctx, &mut out);
    json(&m, &ctx, &mut out);
    math(&m, &ctx, &mut out);
    if !out.iter().any(|f| f.slot == Slot::Quantity) {
        formula(&m, &ctx, &mut out);
    }
    scaled_recipe(&m, &ctx, &mut out);
    volume_to_weight(&m, &ctx, &mut out);
    bare_conversion(&m, &ctx, &mut out);
    unitless_length(&m, &ctx, &mut out);
    fuel_cost(&m, &ctx, &mut out);
    scheduling(&m, &ctx, &mut out);
    lead_time(&m, &ctx, &mut out);
    // Times and seasons no other rule reads: the first that finds one speaks.
    if !ctx.has_text() && out.is_empty() {
        let rules: [fn(&Words, &Context) -> Option<Finding>; 9] = [
            day_plan, undated_countdown, next_dose, growing_season, own_date, exam_plan,
            after_own_hours, shared_chores, after_an_event,
        ];
        out.extend(rules.iter().find_map(|rule| rule(&m, &ctx)));
    }
    unstated_terms(&m, &ctx, &mut out);
    comparison(&m, &ctx, &mut out);
    trip(&m, &ctx, &mut out);
    destination(&m, &ctx, &mut out);
    // A "this" already reported as a missing text is not also a missing referent.
    if !out.iter().any(|f| f.slot == Slot::Text) {
        referent(&m, &ctx, &mut out);
    }
    taste(&m, &ctx, &mut out);
    if grants_choice(&m) {
        out.retain(|f| !f.slot.is_a_choice());
    }
    out
}

/// Does the message leave a choice to the assistant (`CHOICE_GRANTED`)? Then a slot
/// that is a choice (`Slot::is_a_choice`) is not missing: any answer to it serves.
/// An order to produce one of a kind ("Name a colour.", "Pick a number between 1 and
/// 10.") grants the choice too, as does "random".
pub fn choice_granted(text: &str) -> bool {
    grants_choice(&Words::new(text))
}

fn grants_choice(m: &Words) -> bool {
    let ordered = (0..m.len().saturating_sub(1)).any(|i| {
        m.sentence_initial[i]
            && ["name", "pick", "choose"].contains(&m.w[i].as_str())
            && ["a", "an", "one", "any", "some"].contains(&m.w[i + 1].as_str())
    });
    // "whatever language you like", "whichever is easiest", "whatever language that
    // works" leave the pick to the assistant; "whatever language the club uses" and
    // "whatever language that kind of board runs" name a choice already made.
    const PICK: &[&str] = &[
        "", "you", "u", "you'd", "you're", "is", "works", "suits", "fits", "makes", "seems",
        "sounds", "it's", "would", "will", "please", "pls",
    ];
    let granted = CHOICE_GRANTED.iter().any(|g| {
        m.find(g).is_some_and(|i| {
            let k = i + g.split(' ').count();
            let at = |k: usize| m.w.get(k).map_or("", String::as_str);
            let next = if ["that", "which"].contains(&at(k)) {
                at(k + 1)
            } else {
                at(k)
            };
            !(g.starts_with("whatever") || g.starts_with("whichever")) || PICK.contains(&next)
        })
    });
    ordered || granted
}

/// The words the message uses for what it refers to, as the probe's referent piece
/// asks for them: `what "it" refers to`, `who "she" is`. The probe names the slot
/// and not the word; asked in general words ("what my message refers to"), Qwen asked
/// for "the specific topic or content of your message", which names nothing. `None`
/// where the message has no such word.
pub fn referent_words(text: &str) -> Option<String> {
    let m = Words::new(text);
    let at = |p: &str| m.find(p);
    let bare = |i: usize| {
        m.w.get(i + 1)
            .is_none_or(|n| NO_CONTENT.contains(&n.as_str()) && !TEXT_NOUNS.contains(&n.as_str()))
    };
    if at("it").or(at("it's")).is_some() {
        return Some("what \"it\" refers to".into());
    }
    if at("the one").is_some() {
        return Some("which one \"the one\" is".into());
    }
    if let Some(p) = ["this", "these", "those"]
        .into_iter()
        .find(|p| at(p).is_some_and(bare))
    {
        return Some(format!("what \"{p}\" refers to"));
    }
    if let Some(p) = ["he", "she", "him", "her", "they"]
        .into_iter()
        .find(|p| at(p).is_some())
    {
        let be = if p == "they" { "are" } else { "is" };
        return Some(format!("who \"{p}\" {be}"));
    }
    // Last, as "that" is often no pronoun ("I think that …"): "what does that mean?".
    at("that")
        .is_some_and(bare)
        .then(|| "what \"that\" refers to".to_string())
}

/// Does the message plainly give `slot` itself? A day ("tomorrow", "Saturday, 12
/// October") or a time of day gives the date and time; a span ("next week", "weekly")
/// does not: "set up a meeting next week" still needs its day. A programming language
/// named, as the code rule reads it (by name, a test framework, code shown), gives
/// the language. The probe reads a message as a whole and can name a
/// piece the words hold: for "plan my day tomorrow" its slot head named the date.
pub fn gives(slot: Slot, text: &str) -> bool {
    let m = Words::new(text);
    match slot {
        Slot::DateTime => names_a_day(&m) || has_time_of_day(&m),
        Slot::ProgrammingLanguage => names_a_language(&m, &m, text),
        // A capitalized name after "in", "near", "around" or "from": "I'm in Chicago".
        // Not any name: "the Northern line" is no place of the user's.
        Slot::Location => (1..m.len()).any(|i| {
            ["in", "near", "around", "from"].contains(&m.w[i - 1].as_str())
                && m.cased[i].starts_with(char::is_uppercase)
        }),
        // A quoted text: "translate 'Built to last' into …". Not "[transcript
        // attached]", and not a quote that is only part of the story: an error message
        // ("Getting \"TypeError: …\"") or what someone said ("the reviewer said it's
        // \"too passive\"") beside a text never given.
        Slot::Text => {
            #[rustfmt::skip]
            const STORY: &[&str] = &[
                "error", "exception", "getting", "said", "says", "called", "wrote", "told",
            ];
            quoted(text) && m.any(STORY).is_none()
        }
        Slot::TargetLanguage => names_a_target(&m),
        _ => false,
    }
}

/// A single day: a weekday, "today", "tomorrow", or a month with a number.
#[rustfmt::skip]
fn names_a_day(m: &Words) -> bool {
    const DAYS: &[&str] = &[
        "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "today",
        "tomorrow", "tonight", "yesterday",
    ];
    const MONTHS: &[&str] = &[
        "january", "february", "march", "april", "may", "june", "july", "august", "september",
        "october", "november", "december",
    ];
    // "on a Monday", "every Friday": a kind of day, not the day.
    let a_kind = |i: usize| i > 0 && ["a", "every", "any", "each"].contains(&m.w[i - 1].as_str());
    (0..m.len()).any(|i| DAYS.contains(&without_possessive(&m.w[i])) && !a_kind(i))
        || (m.any(MONTHS).is_some() && m.numbers() > 0)
}

/// What the conversation as a whole gives.
struct Context {
    /// The message carries a text of its own.
    payload: bool,
    /// An earlier message carries something a "this" can point at.
    earlier_text: bool,
    /// All messages' words, for slots an earlier turn may have filled.
    all: String,
    /// No message came before this one.
    first: bool,
}

impl Context {
    fn new(text: &str, earlier: &[&str]) -> Context {
        Context {
            // "… I typed out the first rounds just below:" and nothing after the colon:
            // a long message that ends where its text should start carries none.
            payload: delimited_payload(text)
                || (is_long(text)
                    && !names_its_text_from_afar(&Words::new(text))
                    && !text.trim_end().ends_with(':')),
            earlier_text: earlier.iter().any(|e| e.split_whitespace().count() >= 4),
            first: earlier.is_empty(),
            all: earlier
                .iter()
                .copied()
                .chain(std::iter::once(text))
                .collect::<Vec<_>>()
                .join("\n"),
        }
    }

    /// Is there a text, here or earlier, for a "this" to mean?
    fn has_text(&self) -> bool {
        self.payload || self.earlier_text
    }

    fn words(&self) -> Words<'_> {
        Words::new(&self.all)
    }
}

#[rustfmt::skip]
fn finding(
    category: &'static str,
    slot: Slot,
    missing: impl Into<String>,
    score: f32,
    why: impl Into<String>,
) -> Finding {
    Finding {
        category,
        slot,
        missing: missing.into(),
        score,
        why: why.into(),
        wording: Wording::Slot,
        referred: false,
    }
}

/// The object of a text verb at word `i` (the verb is `n` words long): Some(noun or
/// "") when it points at a text the message does not carry ("this", "my essay",
/// "the article"), None when it names something ("recursion", "the book Dune").
#[rustfmt::skip]
fn deictic_object(m: &Words, i: usize, n: usize) -> Option<String> {
    let mut j = i + n;
    // "fix up this", "check over my", "summarize for me the".
    while m.w.get(j).is_some_and(|x| {
        [
            "me", "up", "over", "out", "for", "quickly", "please", "pls", "through", "down",
        ]
        .contains(&x.as_str())
    }) {
        j += 1;
    }
    let first = m.w.get(j)?.as_str();
    let first_two = m.w.get(j..j + 2).map(|s| s.join(" "));
    if [
        "this", "that", "it", "these", "those", "here", "below", "above", "attached",
    ]
    .contains(&first)
        || first_two.as_deref().is_some_and(|p| DEICTIC.contains(&p))
    {
        // "this sentence" → "this sentence"; a bare "this" → "".
        let noun = m.w.get(j + 1).filter(|x| is_text_noun(x));
        if let Some(noun) = noun {
            if identified_after(m, j + 2) {
                return None;
            }
            return Some(noun.clone());
        }
        // "this is …", "it will …": a pronoun subject, not an object. "this to" is one
        // too ("want this to work"), unless a language or format follows: "port this to
        // Go", "turn it into JSON".
        let destination = m.w.get(j + 2).is_some_and(|x| {
            // "refactor this to use async/await": a change asked of the text.
            ["use", "support", "handle", "accept", "return", "match", "async"].contains(&x.as_str())
                || LANGUAGES.contains(&x.as_str())
                || PROGRAMMING.contains(&x.as_str())
                || ["json", "csv", "xml", "yaml", "markdown", "sql", "html"].contains(&x.as_str())
        });
        if m.w.get(j + 1).is_some_and(|x| {
            [
                "is", "was", "will", "would", "can", "has", "should", "does", "to",
            ]
            .contains(&x.as_str())
                && !(x == "to" && destination)
        }) {
            return None;
        }
        return Some(String::new());
    }
    // "yesterday's meeting notes": a text of the user's day.
    let dated = ["yesterday's", "today's", "tonight's", "this morning's", "week's", "month's"]
        .contains(&first);
    if POSSESSIVE.contains(&first) || first == "the" || dated {
        // "my essay", "the email I got from my boss", "my cover letter".
        for k in j + 1..(j + 4).min(m.len()) {
            let one = m.w[k].as_str();
            let two = m.w.get(k..k + 2).map(|s| s.join(" "));
            let hit = two
                .as_deref()
                .filter(|p| TEXT_NOUNS.contains(p))
                .map(|p| (p.to_string(), k + 2))
                .or_else(|| {
                    is_text_noun(one).then(|| (one.trim_end_matches("'s").to_string(), k + 1))
                });
            if let Some((noun, after)) = hit {
                if identified_after(m, after) || (first == "the" && m.has_name()) {
                    return None;
                }
                // "the grammar in my cover letter": the text is the cover letter.
                if ASPECTS.contains(&noun.as_str())
                    && m.w.get(after).is_some_and(|x| x == "in" || x == "of")
                {
                    if let Some(text) = deictic_object(m, after, 1).filter(|t| !t.is_empty()) {
                        return Some(text);
                    }
                }
                return Some(noun);
            }
            if ["of", "and", "to", "in", "about", "for", "on"].contains(&one) {
                break;
            }
        }
    }
    None
}

/// Nouns of a quality of a text, not of the text itself: "the grammar in my cover
/// letter" asks for the cover letter.
const ASPECTS: &[&str] = &[
    "grammar",
    "wording",
    "writing",
    "spelling",
    "punctuation",
    "tone",
    "style",
    "phrasing",
    "formatting",
    "flow",
];

/// A noun of a text, in the singular or plural, possessive or not ("contract's").
#[rustfmt::skip]
fn is_text_noun(w: &str) -> bool {
    let base = w.trim_end_matches("'s").trim_end_matches('’');
    TEXT_NOUNS.contains(&base)
        || base
            .strip_suffix('s')
            .is_some_and(|b| TEXT_NOUNS.contains(&b))
}

/// "this document", "my paragraph", "the following text" anywhere in the message:
/// a text the user has and did not paste. `definite` also counts "the essay".
#[rustfmt::skip]
fn mentions_absent_text(m: &Words, definite: bool) -> Option<String> {
    (0..m.len()).find_map(|i| {
        let d = m.w[i].as_str();
        // "the email I got", "the function we added last sprint": a text the user (or
        // the user's team) has, however it is introduced.
        let possessed = |after: usize| {
            m.w.get(after..after + 2).is_some_and(|p| {
                // "the cover letter he wrote": a text of someone the user speaks for.
                ["i", "we", "he", "she", "they"].contains(&p[0].as_str())
                    && [
                        "got", "received", "wrote", "have", "was", "just", "drafted", "added",
                        "made", "built", "created", "use", "discussed", "agreed", "were", "sent",
                        "write", "prepared", "typed",
                    ]
                    .contains(&p[1].as_str())
            })
        };
        let pointer = m.w.get(i..i + 2).is_some_and(|p| {
            ["the following", "the attached", "the above", "the below"]
                .contains(&p.join(" ").as_str())
        });
        // A bare "the" counts when `definite`, or when the text is the user's.
        let the = d == "the" && !pointer && !definite;
        let opens = ["this", "that", "these", "those", "my", "our"].contains(&d)
            || d == "the"
            || pointer;
        if !opens {
            return None;
        }
        (i + 1..(i + 4).min(m.len())).find_map(|k| {
            let two = m.w.get(k..k + 2).map(|s| s.join(" "));
            let (noun, after) = match two.as_deref().filter(|p| TEXT_NOUNS.contains(p)) {
                Some(p) => (p.to_string(), k + 2),
                None if is_text_noun(&m.w[k]) => (m.w[k].trim_end_matches("'s").to_string(), k + 1),
                None => return None,
            };
            (!identified_after(m, after) && (!the || possessed(after)))
                .then_some(noun)
        })
    })
}

/// A long message that names its text only as something elsewhere ("my resignation
/// email", "translate it") and never as something here ("this", "the following",
/// "below") describes that text instead of carrying it: "My grandmother only speaks
/// Portuguese … Can you translate it for me? She turns 90 next week …" is 47 words
/// and holds no message to translate. A text pasted on its own lines or set apart by
/// a colon or quotes counts however it is named (`delimited_payload`).
fn names_its_text_from_afar(m: &Words) -> bool {
    let here = m
        .any(&[
            "this",
            "these",
            "the following",
            "below",
            "here is",
            "here's",
            "as follows",
        ])
        .is_some();
    // With no "this" or "here", a text verb's deictic object is "it", "that" or "the
    // above", and an absent text is "my …" or "our …": both point elsewhere.
    let verb_on_it = TEXT_VERBS.iter().any(|(verb, _)| {
        m.find(verb)
            .is_some_and(|i| deictic_object(m, i, verb.split(' ').count()).is_some())
    });
    !here && (verb_on_it || mentions_absent_text(m, false).is_some())
}

/// "the show we talked about" asks which show (`referent`), and "at lunch we talked
/// about black holes" names its topic: neither is a text that did not come through,
/// as "the email we discussed" is.
fn talk_of_a_thing(m: &Words, cue: &str) -> bool {
    if !WE_TALKED.contains(&cue) {
        return false;
    }
    let Some(i) = m.find(cue) else { return false };
    // "like we discussed", "as we discussed": the talk is pointed at, with no topic.
    if i > 0 && ["like", "as"].contains(&m.w[i - 1].as_str()) {
        return false;
    }
    let after = m.w.get(i + cue.split(' ').count()).map(String::as_str);
    // A topic after the talk, unless the thing came before it: "the cover letter we
    // discussed Monday" is a text that did not come through.
    let before = i >= 2 && POINTING.contains(&m.w[i - 2].as_str());
    let topic = !before
        && after.is_some_and(|a| {
            !NO_CONTENT.contains(&a)
                && !NO_ANTECEDENT.contains(&a)
                && !["last", "earlier", "yesterday", "before"].contains(&a)
        });
    topic || talked_of(m, i).is_some()
}

/// "the one we talked about", "that show we discussed": a thing (`REFERENT_NOUNS`, or
/// "one" and "thing") before the talk at `i`. "the books we talked about" are a list
/// to work on, a text.
fn talked_of<'w>(m: &'w Words, i: usize) -> Option<&'w str> {
    let noun = m.w.get(i.checked_sub(1)?)?.as_str();
    let det = i >= 2 && POINTING.contains(&m.w[i - 2].as_str());
    (det && (REFERENT_NOUNS.contains(&noun) || ["one", "thing"].contains(&noun))).then_some(noun)
}

/// Capitalized words that say when, not what: "it's Monday and I'm late".
#[rustfmt::skip]
const CALENDAR_WORDS: &[&str] = &[
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "january",
    "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "christmas", "thanksgiving", "easter", "halloween", "ramadan",
    "diwali", "eid", "hanukkah",
];

/// "it's The Kite Runner", "it is Dune": the thing is named by a title after "it's".
fn named_as_it(m: &Words) -> bool {
    (0..m.len()).any(|i| {
        let k = match m.w[i].as_str() {
            "it's" => i + 1,
            "it" if m.w.get(i + 1).is_some_and(|x| x == "is") => i + 2,
            _ => return false,
        };
        // "It's Python" says the code's language, not the text's title.
        m.cased.get(k).is_some_and(|c| {
            !m.sentence_initial[k]
                && c != "I"
                && !c.starts_with("I'")
                && c.starts_with(char::is_uppercase)
                && !PROGRAMMING.contains(&m.w[k].as_str())
                && !LANGUAGES.contains(&m.w[k].as_str())
                && !CALENDAR_WORDS.contains(&m.w[k].as_str())
        })
    })
}

/// Does the word at `k` name the text ("the book Dune", "the poem called …")?
#[rustfmt::skip]
fn identified_after(m: &Words, k: usize) -> bool {
    m.w.get(k)
        .is_some_and(|x| ["called", "titled", "named", "entitled"].contains(&x.as_str()))
        || m.cased.get(k).is_some_and(|c| {
            !m.sentence_initial[k]
                && c != "I"
                && !c.starts_with("I'")
                && c.chars()
                    .next()
                    .is_some_and(|ch| ch.is_uppercase() || ch.is_ascii_digit())
        })
}

/// Translation: a text to translate and a language to translate into.
#[rustfmt::skip]
fn translate(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    // "a note in what I reckon is Italian. Can you tell me what it says?": the meaning
    // of a text in a language named, asked as a translation.
    let reads = m
        .any(&[
            "what it says", "what does it say", "what this says", "what does this say",
            "what that says", "what does that say", "what it means", "what does it mean",
        ])
        .filter(|_| m.w.iter().any(|x| LANGUAGES.contains(&x.as_str()) && x != "english"));
    let verb = m.starts("translat").or_else(|| reads.and_then(|r| m.find(r)));
    let say = m.any(&[
        "how do you say", "how do i say", "how to say", "how would you say", "how would i say",
        "how do u say", "how would u say", "what's the word for", "what is the word for",
    ]);
    // "need this in german asap pls": courtesy words after the language.
    let end = m.len()
        - m.w
            .iter()
            .rev()
            .take_while(|x| {
                [
                    "please", "pls", "plz", "asap", "thanks", "thx", "ty", "quickly", "now", "quick",
                    "today", "urgently", "for", "me",
                ]
                .contains(&x.as_str())
            })
            .count();
    let lang_at_end = end >= 2
        && ["in", "into", "to"].contains(&m.w[end - 2].as_str())
        && LANGUAGES.contains(&m.w[end - 1].as_str())
        && !school_subject(m, end - 1);
    // "What's the Japanese for that?", "render the following text in Dutch".
    let lang_for = m.w.iter().enumerate().any(|(i, x)| {
        LANGUAGES.contains(&x.as_str())
            && (m.w.get(i + 1).is_some_and(|n| n == "for" || n == "version")
                || (i > 0
                    && ["in", "into", "to"].contains(&m.w[i - 1].as_str())
                    && !school_subject(m, i)
                    && mentions_absent_text(m, true).is_some()))
    });
    let other_language = m.any(&[
        "another language", "other language", "different language", "foreign language",
        "other languages", "a second language", "local language", "their language",
        "her language", "his language", "native language", "mother tongue", "own language",
        "language they speak", "language spoken there", "the language there",
    ]);
    // "in my grandmother's language": a language named by whose it is; "in the other
    // two languages we use": languages known only to the user.
    let other_language = other_language.or_else(|| {
        (1..m.len())
            .any(|i| {
                ["language", "languages"].contains(&m.w[i].as_str())
                    && (m.w[i - 1].ends_with("'s")
                        || i > 1 && m.w[i - 2] == "other"
                        || m.w[i - 1] == "native" && i > 1 && m.w[i - 2].ends_with("'s"))
            })
            .then_some("someone's language")
    });
    if verb.is_none() && say.is_none() && !lang_at_end && !lang_for && other_language.is_none() {
        return;
    }
    let all = ctx.words();
    let target = names_a_target(&all);
    let excluded = all
        .w
        .iter()
        .enumerate()
        .any(|(i, x)| LANGUAGES.contains(&x.as_str()) && language_ruled_out(&all, i));
    if !ctx.has_text() {
        let content = m.content(&[FILLER, LANGUAGES, TEXT_NOUNS, POSSESSIVE]);
        // "how to say hello, thank you and where's the toilet. can you translate those":
        // the words after "say" are the text, and "those" points back at them.
        let said = say.and_then(|s| m.find(s).map(|i| i + s.split(' ').count()));
        let said_words = said.is_some_and(|k| {
            m.w.get(k).is_some_and(|w| {
                !THING_PRONOUNS.contains(&w.as_str())
                    && !["something", "a", "the", "my", "our", "in", "to", "into"]
                        .contains(&w.as_str())
            })
        });
        // "how do u say the thing my abuela always says …, in english": the words are
        // described, not given (unless quoted).
        let said_described = said.is_some_and(|k| {
            m.w.get(k..k + 2).is_some_and(|p| {
                p[0] == "the" && ["thing", "phrase", "saying", "expression", "words"].contains(&p[1].as_str())
                    || p[0] == "what"
            })
        }) && !quoted(m.raw);
        // "What does it say?" points at the text with its own "it".
        let text_given = !said_described
            && (said_words
            || (reads.is_none()
                && !content.is_empty()
                && deictic_object(m, verb.unwrap_or(0), 1).is_none()
                && mentions_absent_text(m, false).is_none()
                && !(lang_for && m.any(THING_PRONOUNS).is_some())));
        if !text_given && (verb.is_some() || say.is_some() || lang_for) {
            out.push(finding(
                "translate",
                Slot::Text,
                "the text to translate",
                0.9,
                "asks for a translation but gives no text to translate",
            ));
        } else if !text_given && lang_at_end && m.any(THING_PRONOUNS).is_some() {
            out.push(finding(
                "translate",
                Slot::Text,
                "the text to translate",
                0.8,
                "asks for a text in another language but gives no text",
            ));
        }
    }
    if other_language.is_some() && !target {
        out.push(finding(
            "translate",
            Slot::TargetLanguage,
            "the language to translate into",
            0.85,
            format!(
                "asks for \"{}\" without naming it",
                other_language.unwrap_or_default()
            ),
        ));
    } else if !target && verb.is_some() {
        out.push(finding(
            "translate",
            Slot::TargetLanguage,
            "the language to translate into",
            0.8,
            "asks for a translation but names no target language",
        ));
    } else if !target
        && say.is_some()
        && (excluded
            || quoted(m.raw)
                && !all.has("english")
                && vague_target(&all).is_none()
                && !english_usage(m)
                // "how do I say 'cheers' at a wedding in Hungary": said where the
                // place's language is the one asked for.
                && !said_in_a_place(&all))
    {
        out.push(finding(
            "translate",
            Slot::TargetLanguage,
            "the language to say it in",
            0.8,
            if excluded {
                "asks how to say something to someone who does not speak the language named"
            } else {
                "asks how to say a quoted text and names no language to say it in"
            },
        ));
    } else if let Some((name, which)) = vague_target(&all) {
        out.push(finding(
            "translate",
            Slot::TargetLanguage,
            which,
            0.8,
            format!("\"{name}\" names more than one language or script"),
        ));
    }
}

/// "the book we're doing in English", "for French class": the language at word `i` is
/// a school subject, not a language to put a text into.
fn school_subject(m: &Words, i: usize) -> bool {
    const STUDY: &[&str] = &[
        "doing", "studying", "study", "covering", "learning", "taught",
    ];
    const LESSON: &[&str] = &[
        "class",
        "classes",
        "lesson",
        "lessons",
        "lit",
        "literature",
        "homework",
        "teacher",
        "exam",
        "gcse",
        "a-level",
    ];
    i >= 2 && m.w[i - 1] == "in" && STUDY.contains(&m.w[i - 2].as_str())
        || m.w.get(i + 1).is_some_and(|n| LESSON.contains(&n.as_str()))
}

/// "at a wedding in Hungary", "we fly out to Budapest": a named place the words are
/// said in (not a day: "closes early on Sundays").
fn said_in_a_place(all: &Words) -> bool {
    (1..all.len()).any(|k| {
        ["in", "to", "visiting", "from"].contains(&all.w[k - 1].as_str())
            && all.cased[k].starts_with(char::is_uppercase)
            && !all.sentence_initial[k]
            && !DATE_WORDS.contains(&all.w[k].as_str())
            && !LANGUAGES.contains(&all.w[k].as_str())
    })
}

/// "How do you say \"no\" to your boss without sounding rude?", "… more politely?": a
/// question about saying it in English, to someone or in some manner.
fn english_usage(m: &Words) -> bool {
    #[rustfmt::skip]
    const MANNER: &[&str] = &[
        "politely", "nicely", "more", "without", "professionally", "formally", "casually",
        "differently", "better", "kindly", "gently", "to my", "to your", "to a", "to someone",
        "to him", "to her", "to them", "to people",
    ];
    m.any(MANNER).is_some()
}

/// "she doesn't speak English", "he speaks no English": the language at word `i` is
/// ruled out.
fn language_ruled_out(all: &Words, i: usize) -> bool {
    const KNOWS: &[&str] = &[
        "speak",
        "speaks",
        "understand",
        "understands",
        "read",
        "reads",
    ];
    #[rustfmt::skip]
    const NOT: &[&str] = &[
        "doesn't", "don't", "not", "can't", "cannot", "barely", "never", "hardly", "didn't",
        "doesnt", "dont", "cant", "didnt", "won't", "wont",
    ];
    // "they don't speak much English", "can't read a word of Greek": a measure may
    // stand between the verb and the language.
    const MEASURE: &[&str] = &[
        "much", "any", "a", "word", "of", "lot", "very", "good", "great", "fluent",
    ];
    if i == 0 || all.w[i - 1] == "no" {
        return i > 0;
    }
    let Some(k) = (i.saturating_sub(4)..i)
        .rev()
        .find(|&k| KNOWS.contains(&all.w[k].as_str()))
    else {
        return false;
    };
    all.w[k + 1..i]
        .iter()
        .all(|x| MEASURE.contains(&x.as_str()))
        && all.w[k.saturating_sub(3)..k]
            .iter()
            .any(|x| NOT.contains(&x.as_str()))
}

/// A language to translate into is named: one not after "from" (the source) and not
/// ruled out.
fn names_a_target(all: &Words) -> bool {
    all.w.iter().enumerate().any(|(i, x)| {
        LANGUAGES.contains(&x.as_str())
            && (i == 0 || all.w[i - 1] != "from")
            && !language_ruled_out(all, i)
    }) || all.has("pig latin")
}

/// A target named only vaguely: written Chinese is simplified or traditional and
/// spoken Chinese Mandarin or Cantonese (four authors of fifteen asked which, and
/// their controls said "traditional characters" or "Simplified Chinese … mainland
/// China"); "Swiss" is Swiss German, French or Italian.
#[rustfmt::skip]
fn vague_target(all: &Words) -> Option<(&'static str, &'static str)> {
    let qualified = all
        .any(&[
            "simplified", "traditional", "mandarin", "cantonese", "taiwan", "taiwanese", "taipei",
            "hong kong", "mainland", "china", "beijing", "shanghai", "singapore", "pinyin",
        ])
        .is_some();
    if all.has("chinese") && !qualified {
        return Some((
            "Chinese",
            "which Chinese: simplified or traditional characters (Mandarin or Cantonese)",
        ));
    }
    let named = all.w.iter().any(|x| LANGUAGES.contains(&x.as_str()));
    if all.has("swiss") && !named {
        return Some(("Swiss", "which language: Swiss German, French or Italian"));
    }
    None
}

/// "Here's the error I get: TypeError: … Fix it please.": the error came, the code
/// that raises it did not. Silent where any code is given (a fence, an indented line,
/// an assignment, braces, a statement), and for errors whose fix is general ("No
/// module named requests").
#[rustfmt::skip]
fn error_without_code(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    // A long story of a bug ends in its own request: "… Please just fix the code."
    let asked = m.any(&["fix the code", "fix my code", "fix the script", "fix my script", "fix the bug"]);
    if ctx.earlier_text || m.len() > if asked.is_some() { 100 } else { 60 } {
        return;
    }
    // "This keeps throwing a NullPointerException on line 42. What am I doing wrong?":
    // a question about code pointed at ("this", "line 42") asks for it as "fix" does.
    let pointed = m.any(&["this", "it", "on line", "at line"]).is_some();
    let Some(verb) = m.any(&["fix", "debug", "solve", "resolve", "get rid of"]).or_else(|| {
        m.any(&[
            "what am i doing wrong", "what's wrong", "whats wrong", "what is wrong", "keeps throwing",
            "keeps giving me", "why am i getting", "why do i keep getting",
        ])
        .filter(|_| pointed)
    }) else {
        return;
    };
    // The user's own code: "fix it", "fix my script".
    // "pls fix my component": a code noun of the user's.
    const CODE_OWNED: &[&str] = &[
        "code", "script", "program", "app", "function", "test", "tests", "component", "class",
        "module", "query", "page", "endpoint", "route", "handler", "hook", "service",
    ];
    // "My Python class": the language between.
    let owned_code = (1..m.len()).any(|i| {
        let by = |k: usize| ["my", "our"].contains(&m.w[k].as_str());
        CODE_OWNED.contains(&m.w[i].as_str())
            && (by(i - 1) || i > 1 && PROGRAMMING.contains(&m.w[i - 1].as_str()) && by(i - 2))
    });
    if m.any(THING_PRONOUNS).is_none()
        && !owned_code
        && m.len() > 15
    {
        return;
    }
    let raw = m.raw;
    let error = m
        .any(&[
            "error", "exception", "traceback", "stack trace", "segfault", "segmentation fault",
            "panicked", "nullpointerexception", "cannot read properties", "cannot read property",
            "of null", "is not a function",
            "is not defined", "undefined",
        ])
        .is_some()
        || raw.contains("Error:")
        || raw.contains("Exception");
    let general = m
        .any(&[
            "no module named", "module not found", "command not found", "permission denied",
            "is not recognized", "not installed", "pip install", "npm install",
        ])
        .is_some();
    let code = raw.contains("```")
        || raw.lines().skip(1).any(|l| l.starts_with("    ") || l.starts_with('\t'))
        || [";", "{", "}", " = ", "=>", "==", "def ", "function ", "return ", "import ", "#include", "const ", "let ", "var ", "print(", "console."]
            .iter()
            .any(|k| raw.contains(k));
    if !error || general || code {
        return;
    }
    out.push(finding(
        "fix",
        Slot::Text,
        "the code itself",
        0.8,
        format!("\"{verb}\" an error whose code the message does not include"),
    ));
}

/// A verb that acts on a text ("fix", "summarize", "proofread", "convert") whose
/// object is "this", "my essay" or "the article", when no text came with it.
#[rustfmt::skip]
fn acts_on_text(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.has_text() {
        return;
    }
    for (verb, category) in TEXT_VERBS {
        let Some(i) = m.find(verb) else { continue };
        let n = verb.split(' ').count();
        // "turn it off" switches a thing and "couldn't put this book down" praises one:
        // a particle two or three words on. "turn it back into JSON" and "put them
        // together in a table" convert a text: the particle is followed by "into", "in"
        // or "as".
        let particle = (i + 2..=i + 3).any(|k| {
            m.w.get(k).is_some_and(|x| {
                ["off", "on", "up", "down", "away", "back", "aside", "out", "together"]
                    .contains(&x.as_str())
            }) && !m.w.get(k + 1).is_some_and(|n| ["into", "in", "as"].contains(&n.as_str()))
        });
        if ["turn", "put"].contains(verb) && particle {
            continue;
        }
        // "Today's rate on my bank app", "the check came to $80", "a parking spot":
        // after a determiner or a possessive these words are nouns, not a request to
        // act on a text. ("Whats the fix" still asks to fix something unshown.)
        // "the mid-market rate is 17.1": a noun before its verb.
        let noun_before_verb = m.w.get(i + 1).is_some_and(|x| ["is", "was", "of", "for", "at"].contains(&x.as_str()));
        if ["rate", "check", "spot", "port", "grade", "format", "make"].contains(verb)
            && i > 0
            && (DETERMINERS.contains(&m.w[i - 1].as_str())
                || m.w[i - 1].ends_with("'s")
                || m.w[i - 1].ends_with("’s")
                || noun_before_verb)
        {
            continue;
        }
        // "make me the JSON config my app expects" makes a new thing for the user;
        // "make my essay shorter" edits a text.
        // "Make the JSON config file for the app with the settings we agreed": made anew,
        // with no change asked ("make it shorter", "make my essay more formal").
        let changed = m.w[i + 1..(i + 7).min(m.len())].iter().any(|x| {
            (x.len() > 4 && x.ends_with("er") && !["other", "under", "after", "order"].contains(&x.as_str()))
                || ["more", "less", "sound", "look", "read", "flow", "fit", "clear", "formal", "concise", "simple", "professional", "better", "work"]
                    .contains(&x.as_str())
        });
        let made_anew = *verb == "make"
            && !changed
            && m.w[i + 1..(i + 6).min(m.len())]
                .iter()
                .any(|x| ["file", "config"].contains(&x.as_str()));
        if made_anew || *verb == "make" && m.w.get(i + 1).is_some_and(|x| x == "me" || x == "us") {
            continue;
        }
        // "make it stop" makes a thing do something; "make it shorter" edits a text.
        if *verb == "make"
            && m.w.get(i + 2).is_some_and(|x| {
                [
                    "stop", "work", "go", "run", "load", "start", "quit", "happen", "appear",
                    "disappear", "play", "ring", "beep", "connect", "sync", "open", "close",
                    "louder", "quieter", "charge", "boot",
                ]
                .contains(&x.as_str())
            })
        {
            continue;
        }
        // Some verbs end in their object already ("what's wrong with" it).
        let object = if verb.ends_with(" with")
            || verb.ends_with(" in")
            || verb.ends_with(" of")
            || verb.ends_with(" from")
        {
            deictic_object(m, i, n).or_else(|| (i + n == m.len()).then(String::new))
        } else {
            deictic_object(m, i, n)
        };
        // "tl;dr" alone, "sum up", "recap" alone (or with a "pls").
        let rest_is_filler = m.w[i + n..]
            .iter()
            .all(|x| ["pls", "plz", "please", "thx", "thanks", "me", "for"].contains(&x.as_str()));
        let bare = rest_is_filler
            && [
                "tl;dr", "tldr", "sum up", "recap", "summarize", "summarise", "proofread",
                "translate",
            ]
            .contains(verb);
        // A bare "it" in a long message usually points at what the message describes.
        let bare_it = object
            .as_ref()
            .is_some_and(|n| n.is_empty() && m.len() >= 15 && m.any(&["this", "these"]).is_none());
        let object = object.filter(|_| !bare_it);
        // "Please fix the formatting of the table": an order to work on "the" text
        // points at one the user has; a question ("how do I fix the table of
        // contents in Word?") may not.
        let ordered = m.sentence_initial[i]
            || (i > 0
                && ["please", "pls", "plz"].contains(&m.w[i - 1].as_str())
                && m.sentence_initial[i - 1]);
        // "ok the regex mostly works now but fix it so …": in a longer request the "it"
        // set aside above is the text named before it ("the regex"), which is absent.
        let requested = m.any(&["how do i", "how can i", "how to", "how would i", "how do you"]).is_none();
        let it_named = bare_it && requested && *category == "fix";
        // "make up three records for my app" invents; "make" acts only on its own object.
        let object = if *verb == "make" {
            object
        } else {
            object
                .or_else(|| mentions_absent_text(m, ordered && *category == "fix"))
                .or_else(|| it_named.then(|| mentions_absent_text(m, true)).flatten())
        };
        let Some(noun) = object.or_else(|| bare.then(String::new)) else {
            continue;
        };
        // "summarize the book for my club - it's The Kite Runner": named after all.
        if !noun.is_empty() && named_as_it(m) {
            continue;
        }
        let missing = match (noun.as_str(), *category) {
            ("", "summarize") => "the text to summarize".to_string(),
            ("", "translate") => "the text to translate".to_string(),
            ("", "json") => "the data to convert".to_string(),
            ("", _) => "the text or code in question".to_string(),
            ("indentation", _) => "the code itself".to_string(),
            (n, "translate") => format!("the {n} to translate"),
            (n, "summarize") => format!("the {n} to summarize"),
            (n, _) => format!("the {n} {}", if plural(n) { "themselves" } else { "itself" }),
        };
        let slot_category = if *category == "json" && !m.has("json") {
            "fix"
        } else {
            category
        };
        out.push(finding(
            slot_category,
            Slot::Text,
            missing,
            0.95,
            format!("\"{verb}\" points at a text the message does not include"),
        ));
        return;
    }
    // "summarize chapter 7 in bullet points", "solve q4 from the worksheet": a numbered
    // part of a text the user has, from no book or sheet the message names.
    if let Some(part) = numbered_part(m).filter(|_| !m.has_name()) {
        let verb = TEXT_VERBS
            .iter()
            .map(|(v, _)| *v)
            .find(|v| m.has(v))
            .or_else(|| m.any(&["summary", "solve", "answer", "work out", "do", "help with", "key points"]));
        if let Some(v) = verb {
            let missing = if part.starts_with("chapter") || part.starts_with("section") {
                format!("the text of {part} (or the book it is from)")
            } else {
                format!("{part} itself")
            };
            out.push(finding(
                "fix",
                Slot::Text,
                missing,
                0.85,
                format!("\"{v}\" {part} of a text the message does not include"),
            ));
            return;
        }
    }
    // "I pasted my CSS below": a text announced and not there.
    if let Some(cue) = m.any(&[
        "pasted", "attached", "below", "here is my", "here's my", "here is the", "here's the",
        "here are the", "here are my",
        "see above", "the above", "as follows", "in the pdf", "in the attachment", "in the doc",
        "i showed you", "i sent you", "i gave you", "i shared", "we talked about", "we discussed",
        // "fix the off-by-one we were chasing on Friday": work from a conversation
        // this one does not have. ("what we were talking about yesterday" asks which
        // thing, `referent`.)
        "we were chasing", "we were working on", "we were debugging", "we were looking at",
    ]).filter(|c| !talk_of_a_thing(m, c)).filter(|_| !m.has("same language as")) {
        // "across the criteria we discussed on Tuesday": what was discussed, by its noun.
        const DISCUSSED: &[&str] = &["criteria", "requirements", "priorities", "factors", "points", "terms"];
        let what = m
            .find(cue)
            .filter(|&k| k >= 2 && m.w[k - 2] == "the" && DISCUSSED.contains(&m.w[k - 1].as_str()))
            .map(|k| format!("the {} you discussed (it did not come through)", m.w[k - 1]));
        out.push(finding(
            "fix",
            Slot::Text,
            what.unwrap_or_else(|| "the text or code itself (it did not come through)".into()),
            0.9,
            format!("says \"{cue}\" but the message carries no text"),
        ));
        return;
    }
    // "Why doesn't my regex match?": a problem with a text of the user's, not shown.
    if let Some(noun) = mentions_absent_text(m, false) {
        if let Some(p) = m.any(&[
            "doesn't", "don't", "isn't", "won't", "not", "never", "wrong", "fail", "fails",
            "error", "bug", "broken", "issue", "problem", "crash", "crashes", "weird", "slow",
            "stuck", "keeps", "returning", "duplicate", "help",
        ]) {
            out.push(finding(
                "fix",
                Slot::Text,
                format!("the {noun} itself"),
                0.9,
                format!("a problem (\"{p}\") with a {noun} the message does not show"),
            ));
            return;
        }
        // "Add input validation to the signup function I wrote yesterday": a change
        // asked of a text the user says is theirs ("I wrote") and is not here. "Add a
        // function to our codebase" adds to it, and needs none of it.
        const CONTAINERS: &[&str] = &[
            "codebase", "project", "app", "repo", "repository", "website", "site", "blog",
        ];
        let theirs = !CONTAINERS.contains(&noun.as_str())
            || m
            .any(&[
                "i wrote", "we wrote", "i've written", "i have written", "i drafted", "i made",
                "we made", "i created", "we created", "i built", "we built", "we discussed",
            ])
            .is_some();
        if let Some(v) = m.any(&[
            "add", "change", "update", "extend", "modify", "improve", "optimize", "optimise",
            "shorten", "expand", "speed up", "clean up", "tidy", "polish", "edit", "rework",
            "adapt", "adjust", "simplify", "document", "comment", "rename",
        ])
        .filter(|_| theirs)
        {
            out.push(finding(
                "fix",
                Slot::Text,
                format!("the {noun} itself"),
                0.85,
                format!("\"{v}\" asks a change of a {noun} the message does not show"),
            ));
            return;
        }
    }
    // "The test fails with an IndexError, what's the problem?": a failure of code the
    // message does not show.
    let failure = m.any(&[
        "fails", "failing", "failed", "error", "exception", "crashes", "crashing",
        "keeps crashing", "doesn't work", "does not work", "not working", "won't compile",
        "doesn't compile", "segfault", "segmentation fault", "fault", "throws", "broken",
        "traceback", "#value", "#ref", "#name", "#div", "#n", "#num", "#null", "#spill",
    ]);
    let asks = m.any(&[
        "what's the problem", "what is the problem", "why", "what's wrong", "what is wrong",
        "how do i fix", "how can i fix", "how to fix", "fix it", "help", "what's going on",
        "any idea", "find the bug", "debug", "can you",
    ]);
    let owned = m.any(&[
        "my", "our", "the test", "the build", "the script", "the code", "the app", "the program",
        "the formula", "the macro", "the query", "the function", "it", "this",
    ]);
    if let (Some(f), Some(_), Some(_)) = (failure, asks, owned) {
        // A spreadsheet's "#VALUE!" is the error; the formula is what is missing.
        let (missing, why) = if f.starts_with('#') {
            ("the formula itself", format!("reports \"{f}\" but does not show the formula"))
        } else {
            (
                "the code and the exact error message",
                format!("reports \"{f}\" but shows neither the code nor the error"),
            )
        };
        out.push(finding(
            "fix",
            Slot::Text,
            missing,
            0.9,
            why,
        ));
    }
}

/// "chapter 7", "question 4", "q4": a numbered part of a text, as the note names it.
fn numbered_part(m: &Words) -> Option<String> {
    const PARTS: &[&str] = &[
        "chapter", "section", "question", "exercise", "problem", "page", "q",
    ];
    (0..m.len())
        .find_map(|i| {
            let w = m.w[i].as_str();
            if PARTS.contains(&w)
                && m.w
                    .get(i + 1)
                    .is_some_and(|n| n.chars().all(|c| c.is_ascii_digit()) && !n.is_empty())
            {
                let name = if w == "q" { "question" } else { w };
                return Some(format!("{name} {}", m.w[i + 1]));
            }
            // "q4", "Q12".
            let digits = w
                .strip_prefix('q')
                .filter(|d| !d.is_empty() && d.len() <= 2 && d.chars().all(|c| c.is_ascii_digit()));
            digits.map(|d| format!("question {d}"))
        })
        // A question or a page is of a sheet the user names as such ("the Q3 board minutes"
        // are a quarter's); a chapter or a section is of a text whatever it is.
        .filter(|p| {
            p.starts_with("chapter")
                || p.starts_with("section")
                || m.any(&[
                    "worksheet",
                    "homework",
                    "sheet",
                    "exam",
                    "paper",
                    "textbook",
                    "quiz",
                    "assignment",
                    "test",
                ])
                .is_some()
        })
}

/// Code with no language, runtime or framework.
#[rustfmt::skip]
fn code(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    let asks_code = CODE_VERBS.iter().any(|v| {
        m.find(v).is_some_and(|i| {
            let after = i + v.split(' ').count();
            (after..(after + 6).min(m.len())).any(|k| {
                CODE_NOUNS.contains(&m.w[k].as_str())
                    || m.w
                        .get(k..k + 2)
                        .is_some_and(|p| CODE_NOUNS.contains(&p.join(" ").as_str()))
            })
        })
    });
    // "code for …", "countdown component to a given date showing …": a request made of
    // its noun alone, in its first words.
    let starts_with_code = (0..m.len().min(3)).any(|i| {
        // "check my code for bugs" acts on the user's code; it asks for none.
        let owned = m.w[..i].iter().any(|x| POSSESSIVE.contains(&x.as_str()) || DETERMINERS.contains(&x.as_str()));
        let noun = [
            "code", "script", "function", "program", "snippet", "component", "widget", "endpoint",
            "hook", "middleware",
        ]
        .contains(&m.w[i].as_str());
        let asked = m.w.get(i + 1).is_some_and(|x| {
            ["for", "to", "that", "which", "showing", "with"].contains(&x.as_str())
        });
        !owned && noun && asked
    });
    // "add a dark mode toggle to my app": a change to the user's own program, asked
    // for ("can you add", "Add …"), not "how do I add a user to my app?" or "what
    // should I add to my website?".
    let asked = (0..m.len()).any(|i| {
        ["add", "implement", "integrate"].contains(&m.w[i].as_str())
            && (m.sentence_initial[i]
                || (i > 0 && ["you", "please", "pls", "me"].contains(&m.w[i - 1].as_str())))
    });
    let changes_own_program = asked
        && m.any(&[
            "to my app", "to our app", "into my app", "in my app", "to my website", "to our website",
            "to my site", "to our site", "to my web app", "to my program", "to my game", "to my bot",
            "to my extension", "to my plugin",
        ])
        .is_some()
        && m.any(&["how do i", "how can i", "how to", "how would i", "is it possible"]).is_none();
    let asks_code = asks_code
        || changes_own_program
        || starts_with_code
        || m.any(&["implement", "code up", "program a", "program that"])
            .is_some();
    let how_to = m
        .any(&[
            "how do i", "how can i", "how to", "how would i", "what's the code to",
            "what is the code to",
        ])
        .is_some()
        && m.any(&[
            "string", "array", "list in", "dictionary", "dict", "hashmap", "hash map", "a file",
            "json file", "csv file", "integer", "variable", "exception", "http request",
            "api call", "linked list", "substring", "regex", "recursion", "loop", "a list",
        ])
        .is_some();
    // "in the same language as the pairing tool", "whatever language the club uses":
    // a language referred to and never named.
    let referred = m
        .any(&[
            "same language as", "whatever language", "whichever language", "the language we use",
            "the language our", "the language the", "same stack as", "rest of our stack",
            "rest of the stack", "our usual language", "our usual stack", "the usual language",
        ])
        .filter(|_| m.any(&["code", "plugin", "script", "program", "app", "function", "write", "build"]).is_some())
        .filter(|_| m.any(&["translate", "speak", "speaks", "spoken"]).is_none());
    if let Some(r) = referred.filter(|_| !names_a_language(m, &ctx.words(), &ctx.all)) {
        out.push(finding(
            "code",
            Slot::ProgrammingLanguage,
            "the programming language by name",
            0.85,
            format!("\"{r}\" refers to a language the conversation never names"),
        ));
        return;
    }
    if !asks_code && !how_to {
        return;
    }
    // "make me a config.json for my app": a file of settings, in no language of code.
    let config_file = m.w.iter().any(|x| {
        [".json", ".yaml", ".yml", ".toml", ".ini", ".env"].iter().any(|e| x.ends_with(e))
    });
    // "Build a CLI tool that reads config.yaml" asks for code; the app a config is for
    // does not.
    let code_asked = m.w.iter().any(|x| {
        CODE_NOUNS.contains(&x.as_str()) && !["app", "application", "project"].contains(&x.as_str())
    });
    if config_file && !code_asked {
        return;
    }
    if names_a_language(m, &ctx.words(), &ctx.all) {
        return;
    }
    // "a function that …" with no language: the model can pick one, but the user's
    // stack decides which answer is useful.
    out.push(finding(
        "code",
        Slot::ProgrammingLanguage,
        "the programming language (and runtime or framework)",
        0.7,
        "asks for code but names no language, runtime or framework",
    ));
}

/// What a request for code asks for, beyond a JSON, YAML or regex of its own.
#[rustfmt::skip]
const CODE_KINDS: &[&str] = &[
    "function", "script", "program", "class", "method", "implementation", "http", "unit tests",
    "tests",
];

/// The conversation names the language of the code asked for in `m`: a language by
/// name, a test framework, or code given inline (`raw`, the conversation's text).
fn names_a_language(m: &Words, all: &Words, raw: &str) -> bool {
    // JSON, YAML and regex name the language only of a request for one of them: "a
    // function that validates an email without using regex" or "sends a JSON body" is
    // code in a language not named. A name after "without", "no" or "not" rules itself out.
    let names = |i: usize| {
        let x = all.w[i].as_str();
        let negated = all.w[i.saturating_sub(2)..i]
            .iter()
            .any(|p| ["without", "no", "not", "avoid"].contains(&p.as_str()));
        // "It'll go straight into our checkout": the verb. Go the language is written
        // "Go" mid-sentence, or asked for by name: "in go", "a go function".
        let capital_go = all.cased[i] == "Go" && !all.sentence_initial[i];
        let named_go = i
            .checked_sub(1)
            .is_some_and(|p| ["in", "using", "use", "with", "is"].contains(&all.w[p].as_str()))
            || all.w.get(i + 1).is_some_and(|n| {
                CODE_NOUNS.contains(&n.as_str())
                    || ["struct", "structs", "func", "package", "routine", "backend"]
                        .contains(&n.as_str())
            });
        let verb_go = x == "go" && !capital_go && !named_go;
        // "a little board on my fish tank": the animal, unless the shell is asked for.
        let animal = x == "fish"
            && !all.w.get(i + 1).is_some_and(|n| {
                ["shell", "script", "function", "config", "prompt"].contains(&n.as_str())
            })
            && !i
                .checked_sub(1)
                .is_some_and(|p| ["in", "using", "for"].contains(&all.w[p].as_str()));
        // "the macro for our spreadsheet thing": Excel's VBA or Google's Apps Script.
        let which_sheet = x == "spreadsheet" && m.any(&["macro", "script", "automation"]).is_some();
        PROGRAMMING.contains(&x)
            && !negated
            && !which_sheet
            && !verb_go
            && !animal
            && (!["json", "yaml", "regex"].contains(&x) || m.any(CODE_KINDS).is_none())
    };
    (0..all.len()).any(names)
        || PROGRAMMING.iter().any(|p| p.contains(' ') && all.has(p))
        || all.any(SHORT_LANGUAGE_PHRASES).is_some()
        || all.any(&["pytest", "unittest", "jest", "junit", "rspec", "mocha"]).is_some()
        // Code given inline shows its language: "for this function: def is_even(n): …".
        || ["```", "def ", "=>", "#include", "public static", "console.log"]
            .iter()
            .any(|k| raw.contains(k))
}

/// A recommendation of a place or a local service, with no place given.
#[rustfmt::skip]
fn recommendation(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.payload {
        return;
    }
    // "my apartment gets little light": a place of the user's own is not one to go to.
    // "haven't run since school", "since the gym closed": a time, not a place to go.
    let Some(noun) = PLACE_NOUNS.iter().copied().find(|p| {
        let mut from = 0;
        while let Some(i) = m.find_from(p, from) {
            from = i + 1;
            let since = m.w[i.saturating_sub(2)..i].iter().any(|x| x == "since");
            if (i == 0 || !POSSESSIVE.contains(&m.w[i - 1].as_str())) && !since {
                return true;
            }
        }
        false
    }) else {
        return;
    };
    if m.any(RECOMMEND_CUES).is_none() {
        return;
    }
    // "want to go to the gym 3 times a week … which days and times would you suggest?":
    // a time to go is asked for, not a place.
    if m.any(&["which days", "what days", "which times", "what times", "what time", "which day", "when should"]).is_some() {
        return;
    }
    // "a good recipe for pizza", "the history of the museum": not a place to go.
    if m.any(&[
        "recipe", "recipes", "cook", "bake", "make", "history", "toppings", "ingredients",
        "how to", "how do", "invented", "etiquette", "tips for", "name for", "names for", "slogan",
        "logo", "business plan", "open a", "start a", "write", "design",
    ])
    .is_some()
    {
        return;
    }
    if ctx.words().has_place() {
        return;
    }
    // A place to stay is where the user is going, not where they are: asked for the
    // location, Qwen asked "where you're located" for a hotel for two nights.
    let stay = ["hotel", "hotels", "hostel", "motel", "airbnb"].contains(&noun);
    let why = format!("asks for a {noun} recommendation but gives no place");
    out.push(if stay {
        // Where the user is going, which "where are you located?" does not ask.
        finding("recommendation", Slot::Location, "the city to stay in", 0.8, why)
            .worded(Wording::Elsewhere)
    } else {
        finding("recommendation", Slot::Location, "the location (city or area)", 0.8, why)
    });
}

/// A trip to plan with nowhere named: "Plan out a 5-day itinerary for me, I leave on
/// the 14th!". Every day of the plan turns on the destination.
#[rustfmt::skip]
fn destination(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.payload || !out.is_empty() {
        return;
    }
    // "plan my trip", "Plan a 5-day trip for me": a plan, then the trip within three
    // words; or an itinerary asked for.
    let trip_planned = m.find("plan").is_some_and(|i| {
        m.w[i + 1..(i + 4).min(m.len())].iter().any(|x| {
            ["trip", "vacation", "holiday", "honeymoon", "getaway", "roadtrip", "road"]
                .contains(&x.as_str())
        })
    });
    let itinerary = m.has("itinerary")
        && m.any(&["plan", "make", "create", "build", "put together", "give me", "draft", "suggest", "write", "need", "help"])
            .is_some();
    let cue = match (trip_planned, itinerary) {
        (true, _) => "plan a trip",
        (_, true) => "itinerary",
        _ => return,
    };
    // "a trip to kyoto", "i want to go to lisbon": whatever follows a "to" that is not
    // a verb's is where (lowercase or not).
    let to_somewhere = (1..m.len()).any(|i| {
        let n = m.w[i].as_str();
        m.w[i - 1] == "to"
            && !NOT_A_PLACE.contains(&n)
            && !Words::is_number(n)
            && ![
                "a", "the", "my", "our", "be", "go", "do", "see", "visit", "include", "make",
                "plan", "have", "get", "take", "travel", "spend", "stay", "relax", "explore",
                "eat", "avoid", "keep", "fit", "start",
            ]
            .contains(&n)
    });
    // "what should an itinerary include", "an itinerary app in React": about itineraries.
    if ctx.words().has_place()
        || to_somewhere
        || m.any(&[
            "how to", "how do", "tips", "template", "app", "code", "script", "function",
            "website", "what is", "what's an", "include", "explain", "from this", "these notes",
        ])
        .is_some()
    {
        return;
    }
    // Where the trip goes, not where the user is.
    out.push(
        finding(
            "recommendation",
            Slot::Location,
            "the place the trip is to",
            0.8,
            format!("\"{cue}\" with no destination named"),
        )
        .worded(Wording::Elsewhere),
    );
}

/// JSON with no fields named and no data given.
#[rustfmt::skip]
fn json(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    // "make me a config.json": a JSON file by its name, made (not read or uploaded), and
    // not one whose fields a tool fixes (package.json, tsconfig.json).
    const STANDARD: &[&str] = &[
        "package.json", "tsconfig.json", "jsconfig.json", "composer.json", "launch.json",
        "tasks.json", "manifest.json", "package-lock.json", "devcontainer.json",
    ];
    let named_file = m.w.iter().enumerate().any(|(i, x)| {
        x.ends_with(".json")
            && !STANDARD.contains(&x.as_str())
            && m.w[i.saturating_sub(4)..i]
                .iter()
                .any(|v| ["make", "create", "generate", "write", "give", "produce", "need", "build"].contains(&v.as_str()))
    });
    if !m.has("json") && !named_file {
        return;
    }
    let no_fields = || {
        finding(
            "json",
            Slot::Schema,
            "the fields the JSON should have",
            0.75,
            "asks for JSON but names no fields or schema",
        )
    };
    // "wants JSON with fields sku, name, price": the fields, listed after their word.
    let raw = m.raw.to_lowercase();
    // "objects with name (string), table (number) and dietary (string or null)": the
    // fields by their types.
    let typed = ["(string", "(number", "(int", "(integer", "(bool", "(float", "(date", "(array"]
        .iter()
        .map(|t| raw.matches(t).count())
        .sum::<usize>();
    let listed = typed >= 2
        || ["fields", "keys", "properties", "columns"].iter().any(|f| {
            raw.find(f)
                .is_some_and(|i| raw[i..].matches(',').count() >= 2)
        });
    // "the JSON request body for the create-invoice endpoint on our billing API": a
    // format the user's own service fixes.
    let our_service = (0..m.len()).find_map(|i| {
        (m.w[i] == "our")
            .then(|| m.w[i + 1..(i + 4).min(m.len())].iter().find(|x| ["api", "endpoint", "backend", "server"].contains(&x.as_str())))
            .flatten()
            .map(|_| "our API")
    })
    .filter(|_| m.any(&["parse", "parses", "parsing", "reads", "loads", "deserialize", "validate", "validates"]).is_none())
    // "… for our orders endpoint, each with order_id, customer_name, total and status".
    .filter(|_| {
        m.any(&["each with", "each has", "each one has", "with fields", "with keys", "containing", "including"]).is_none()
            && m.w.iter().filter(|x| x.contains('_') && x.len() > 2).count() < 2
    });
    // "matching the format my frontend wants": a schema the user has and did not give.
    if let Some(v) = m.any(&[
        "matching the format", "the format my", "the format our", "whatever format",
        "the usual format", "the format the", "expects", "wants", "the right format",
        "the right fields", "whatever fields", "the same format", "match our", "matches our",
        "matching our", "that match our", "conform to our", "compatible with our", "fit our",
        "the right shape", "right shape",
    ]).or(our_service).filter(|_| !listed && !ctx.all.contains('{')) {
        out.push(finding(
            "json",
            Slot::Schema,
            "the fields the JSON should have",
            0.85,
            format!("\"{v}\": a format the message does not give"),
        ).referred());
        return;
    }
    // "a JSON Schema that validates the order objects we send": a schema of the user's
    // own objects, whose fields the message does not give.
    let ours = m.any(&["we send", "we receive", "we get", "we store", "we use", "our"]).is_some();
    let described = m
        .any(&[
            "each one has", "each has", "each needs", "each with", "containing", "including",
            "that has", "that have", "having", "with fields", "with keys", "with properties",
        ])
        .is_some();
    if m.has("json schema") && ours && !listed && !described && !ctx.payload && !ctx.all.contains('{') {
        out.push(no_fields());
        return;
    }
    // "a function that parses JSON from a file": JSON read, whatever its fields.
    if ctx.payload
        || m.any(&["parse", "parses", "parsing", "reads", "loads", "deserialize", "deserializes", "validate", "validates", "pretty-print"]).is_some()
    {
        return;
    }
    // "Is it ok to have comments in a .json file?": a question about JSON, with no
    // verb that asks for one.
    const MAKE: &[&str] = &[
        "give", "create", "generate", "make", "output", "return", "write", "produce", "format",
        "convert", "structure", "build", "turn", "put", "need", "want", "show",
    ];
    let question = m.w.first().is_some_and(|x| {
        ["is", "are", "can", "could", "does", "do", "should", "why", "will", "what's", "whats"]
            .contains(&x.as_str())
    }) && m.raw.trim_end().ends_with('?');
    if question && m.any(MAKE).is_none() {
        return;
    }
    let produce = m.any(&[
        "give", "create", "generate", "make", "output", "return", "write", "produce", "format",
        "convert", "structure", "build", "as json", "json object", "json format", "to json",
        "into json", "json for", "json of", "json response", "json payload", "json file",
        "sample json", "example json", "need", "want",
    ]);
    if produce.is_none() {
        return;
    }
    let fields = m
        .any(&[
            "field", "fields", "key", "keys", "property", "properties", "attribute", "attributes",
            "column", "columns", "containing", "including", "that has", "that have",
            "having",
        ])
        .is_some()
        // "JSON with id and name"; not "I'm hopeless with this stuff".
        || (1..m.len()).any(|i| {
            m.w[i] == "with"
                && !m.w.get(i + 1).is_some_and(|n| THING_PRONOUNS.contains(&n.as_str()) || ["me", "my", "the"].contains(&n.as_str()))
        })
        || ctx.all.contains('{')
        || extracts_named_fields(m)
        // "Each needs id (int), email, signup_date (ISO 8601)": fields listed as such.
        || m.any(&["each needs", "each has", "each should have", "each one needs", "each one has", "each with"]).is_some()
        || m.w.iter().filter(|x| x.contains('_') && x.len() > 2).count() >= 2;
    let vague = m
        .any(&[
            "any fields", "appropriate fields", "the usual fields", "it needs",
        ])
        .is_some()
        // "use the fields we discussed" as a first message: nothing was discussed here.
        || (ctx.first
            && m
                .any(&["we agreed", "as discussed", "like last time", "from before", "i mentioned"])
                .or_else(|| m.any(WE_TALKED))
                .is_some());
    if fields && !vague {
        return;
    }
    // "I need the config as JSON instead of YAML": a conversion keeps the source's
    // fields; what is missing is the source itself.
    // The source is the format after "from" or "instead of", or before "to json".
    let source = ["yaml", "yml", "xml", "toml", "csv"].into_iter().find(|f| {
        m.find(f).is_some_and(|i| {
            let before = m.w[..i].iter().rev().take(2).any(|x| x == "from" || x == "of");
            // "csv to json", "csv files into json".
            let after = (i + 1..(i + 3).min(m.len())).any(|k| {
                ["to", "into", "as"].contains(&m.w[k].as_str())
                    && m.w.get(k + 1).is_some_and(|x| x == "json")
            });
            before || after
        })
    });
    // A program that converts ("a Python script that converts CSV files to JSON")
    // works on whatever file it is given.
    if let Some(from) = source {
        if m.any(CODE_KINDS).is_none() && !out.iter().any(|f| f.slot == Slot::Text) {
            out.push(finding(
                "json",
                Slot::Text,
                format!("the {} to convert", from.to_uppercase()),
                0.8,
                format!("converts {} to JSON and does not include it", from.to_uppercase()),
            ));
        }
        return;
    }
    out.push(no_fields());
}

/// "Pull the names and phone numbers out of the email": what is extracted names the
/// JSON's fields. "Extract the data from it" names none.
#[rustfmt::skip]
fn extracts_named_fields(m: &Words) -> bool {
    const VAGUE: &[&str] = &[
        "the", "all", "any", "data", "info", "information", "details", "everything", "it", "them",
        "stuff", "text", "content", "fields", "relevant", "important", "useful", "out", "key",
        "main",
    ];
    ["extract", "pull"].iter().any(|v| {
        m.find(v).is_some_and(|i| {
            let end = ["out", "from"]
                .iter()
                .filter_map(|e| m.find_from(e, i + 1))
                .min();
            end.is_some_and(|e| m.w[i + 1..e].iter().any(|w| !VAGUE.contains(&w.as_str())))
        })
    })
}

/// Words of a journey: "how long" with one of these is a travel sum, and a pace in
/// them ("60 mph") is a speed, not a rate of work with a total to reach.
#[rustfmt::skip]
const MOTION: &[&str] = &[
    "speed", "trip", "journey", "mph", "km", "kilometres", "kilometers", "miles", "drive",
    "driving", "fly", "walk",
];

/// A calculation with a number missing.
#[rustfmt::skip]
fn math(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    // "How long is the wait in A&E at the moment?": a live figure (`live`), not a sum.
    if out.iter().any(|f| f.slot == Slot::LiveData) && m.any(&["the wait", "wait times", "waiting times"]).is_some() {
        return;
    }
    // "a good area for dinner", "the Alfama area of Lisbon": a district, not a measure.
    let district = m.find("area").is_some_and(|i| {
        m.any(SHAPES).is_none()
            && (m.w.get(i + 1).is_none_or(|n| n != "of")
                || m.cased.get(i + 2).is_some_and(|c| c.starts_with(char::is_uppercase)))
    });
    let shape_cue = m
        .any(&["area", "perimeter", "volume", "circumference", "hypotenuse"])
        .filter(|c| !(*c == "area" && district));
    let travel = m.any(&[
        "drive there", "get there", "walk there", "fly there", "cycle there", "bike there",
    ]);
    // "How many calories do I burn running?", "how long to double my savings": a
    // measure of the user's own that depends on numbers only the user has.
    let own_measure = m
        .any(&[
            "calories", "burn", "double my", "pay off", "pay it off", "save up", "retire", "afford",
        ])
        .or_else(|| m.any(MATERIALS));
    // A conversion between currencies needs a rate, and a count of days to a given date
    // needs today's date (`live`), not a measure.
    // "Plan my day around the dentist … two hours for the tax return": a day to lay
    // out, not a sum.
    let plans_time = m.any(DAY_PLANS).or(m.any(&["timetable", "rota", "schedule my"])).is_some();
    if converts_currency(m) || countdown(m, &ctx.words()) || plans_time {
        return;
    }
    let Some(cue) = m
        .any(MATH_CUES)
        .filter(|c| !(c.starts_with("area") && district))
        .or(shape_cue)
        .or(travel)
    else {
        return;
    };
    // "Split the bill fairly: I had the pasta…": a colon, but no prices after it.
    let bill = m.any(&["split the bill", "split the check", "the bill", "the check"]).is_some()
        && ctx.words().numbers() < 2;
    if (ctx.payload && !bill)
        || m.any(PROGRAMMING).is_some()
        || m.any(&["code", "function", "script", "program"]).is_some()
    {
        return;
    }
    // "which is why I'm confused" gives a reason; it asks none.
    let why = (0..m.len()).any(|i| m.w[i] == "why" && !m.reason_clause(i));
    if why
        || m.any(&[
            "formula", "formulas", "how do you calculate", "how do i calculate", "how to calculate",
            "how is", "what does", "explain", "definition", "define", "meaning",
            // "how many days before surgery is normal?": a norm, not the user's sum.
            "is normal", "is typical", "is usual", "is recommended", "is it normal",
            "is that normal",
        ])
        .is_some()
    {
        return;
    }
    let all = ctx.words();
    let numbers = all.numbers();
    let personal = m
        .any(&[
            "i", "my", "me", "we", "our", "us", "i'm", "i've", "i'll", "mine",
        ])
        .is_some();
    let deictic = m
        .any(&[
            "it", "this", "that", "these", "those", "get there", "drive there", "go there",
            "walk there", "fly there", "the bill", "the total", "the numbers", "the rectangle",
            "the triangle", "the circle", "the square", "the room", "the price", "the cost",
            "the trip", "the loan", "them", "each",
        ])
        .is_some();
    let money = ctx.all.contains(['$', '€', '£', '¥'])
        || all
            .any(&[
                "dollar", "dollars", "euro", "euros", "pound", "pounds", "usd", "eur", "gbp",
                "yen", "bucks", "cents", "rupees", "each", "per", "apiece",
            ])
            .is_some();
    // How long a sum takes to double turns on its growth rate alone: "how long for
    // money to double" ("does paying biweekly double the interest savings" asks no time).
    let grows = m
        .any(&["to double", "to triple", "double my", "triple my", "double our", "doubles", "triples"])
        .is_some()
        && m.any(&["how long", "when", "how many years", "how much time"]).is_some()
        && m
            .any(&["savings", "money", "investment", "investments", "portfolio", "deposit", "interest"])
            .is_some();
    // "How long should I soak them?": a duration, not a length.
    let duration = m.find("how long").is_some_and(|i| {
        m.w.get(i + 2).is_some_and(|x| {
            [
                "should", "do", "does", "did", "will", "would", "can", "to", "until", "till",
                "before", "after", "have", "has",
            ]
            .contains(&x.as_str())
        })
    }) && m.any(MOTION).is_none();
    // Nor a sum: what "them" are comes first, as the referent rule asks ("how long does
    // it take to get there" and "for money to double" are sums still).
    if duration && cue == "how long" && own_measure.is_none() && numbers == 0 && travel.is_none() && !grows {
        return;
    }
    let price_question = m
        .any(&[
            "cost", "costs", "pay", "price", "spend", "owe", "tip", "bill", "tax", "discount",
            "change back", "rent", "split the bill", "split the check", "split the cost",
            "split the rent",
        ])
        .is_some();
    // "square metres" is a unit, not a square.
    let unit = m.find("square").and_then(|i| m.w.get(i + 1)).is_some_and(|u| {
        [
            "metres", "meters", "metre", "meter", "m", "feet", "foot", "ft", "km", "miles", "mile",
            "inches", "inch", "yards", "yard", "cm", "centimetres", "centimeters",
        ]
        .contains(&u.as_str())
    });
    let shape_need = SHAPE_NEEDS
    .iter()
    .find(|(s, _)| m.has(s) && !(*s == "square" && unit))
    .map(|&(_, n)| n)
    // "the Alfama area of Lisbon" is a place, not a shape's area.
    .filter(|_| shape_cue.is_none() || !ctx.words().has_place() || numbers > 0);
    let why;
    let what;
    // "How long does it take to get there by train?" with no place anywhere: where
    // "there" is comes before any distance.
    if let Some(t) = travel.filter(|_| numbers == 0 && !all.has_place()) {
        out.push(finding(
            "math",
            Slot::Location,
            "where \"there\" is (and where the trip starts)",
            0.8,
            format!("\"{t}\" to a place the conversation never names"),
        ));
        return;
    }
    if travel.is_some() && numbers < 2 {
        what = "the distance";
        why = format!("\"{cue}\" to a place the message gives no distance for");
    } else if let Some(need) = shape_need.filter(|_| {
        m.any(&[
            "area", "perimeter", "volume", "circumference", "diagonal", "hypotenuse", "speed",
            "how much", "how many", "paint", "tiles", "carpet", "water", "fill", "cover",
        ])
        .is_some()
            || m.has("how long") && !duration
    }) {
        // A material's coverage ("one litre covers 10 square metres") or coat count
        // says nothing of the size of what is to be covered.
        let given = if m.any(MATERIALS).is_some() { all.measures() } else { numbers };
        // "a 200 litre tank": its volume, which is what a fill or a dose of it needs
        // (not "one litre covers 10 square metres", a paint's coverage).
        let container = m.any(&["tank", "pool", "box", "cuboid", "cylinder", "cube", "sphere", "aquarium"]).is_some()
            && m.any(MATERIALS).is_none();
        let volume = container && (1..m.len()).any(|i| {
            Words::is_number(&m.w[i - 1])
                && ["litre", "litres", "liter", "liters", "l", "gallon", "gallons", "gal", "cubic"]
                    .contains(&m.w[i].as_str())
        });
        if given >= need || volume {
            return;
        }
        // A speed or a trip needs a distance and a time, not a shape's dimensions.
        let motion = m.any(&["speed", "trip", "journey"]).is_some();
        let time = m.any(&["hour", "hours", "minute", "minutes", "mins", "seconds"]);
        let length = m.any(&["km", "kilometres", "kilometers", "miles", "mile", "metres", "meters"]);
        what = match (motion, time.is_some(), length.is_some()) {
            // A circle's one dimension has a name: asked for "the dimensions", Qwen asked
            // "what specific information you're looking for about the circle's dimensions".
            (false, _, _) if m.any(&["circle", "circular", "sphere", "disc", "disk"]).is_some() => {
                "the radius or the diameter"
            }
            (false, _, _) => "the dimensions",
            (true, true, false) => "the distance",
            (true, false, true) => "the time it took",
            (true, _, _) => "the distance and the time",
        };
        why = format!("a measure of a shape or trip with {given} of the {need} numbers it needs");
    } else if m
        .any(&["an hour", "per hour", "hourly", "a day", "per day"])
        .is_some()
        && m.any(&[
            "a week", "per week", "a month", "per month", "a year", "per year", "weekly",
            "monthly", "yearly", "annually",
        ])
        .is_some()
        && numbers < 2
    {
        what = "the number of hours or days";
        why =
            "converts a rate to a longer period without saying how many hours or days".to_string();
    } else if m.any(PER_SPAN).is_some()
        && numbers < 2
        && m.any(&["how long until", "how long till", "how long will it take", "how long to finish", "when will"]).is_some()
        && m.any(MOTION).is_none()
    {
        // "If I knit 14 rows an hour, how long until the scarf is finished?": a pace,
        // and no total to reach at it.
        what = "the total to get through (how many in all)";
        why = "asks how long at a pace but gives no total to reach".to_string();
    } else if m.any(&["my goal", "my target", "our goal", "our target"]).is_some() && numbers < 2 {
        what = "the target amount";
        why = "asks how long to reach a goal the message does not quantify".to_string();
    } else if price_question && !money && (numbers > 0 || personal || deictic) {
        what = "the price or amount";
        why = "asks what something costs but gives no price".to_string();
    } else if numbers == 0 && grows {
        // "how long does it take for money to double": anyone's money, and still the
        // answer turns on a rate no one gave.
        what = "the yearly interest or growth rate";
        why = format!("\"{cue}\" for a sum to grow, with no rate given");
    } else if numbers == 0
        && (personal || deictic)
        && (!["how many", "how long", "how far", "how fast", "how much"].contains(&cue)
            || own_measure.is_some()
            || m.any(&[
                "my", "our", "work out", "figure out", "calculate", "compute",
            ])
            .is_some())
    {
        what = "the numbers to use";
        why = format!("asks to {cue} but gives no numbers");
    } else if numbers == 0
        && deictic
        && m.any(&[
            "get there", "drive there", "this", "that", "the trip", "the numbers", "the bill",
            "the total", "them", "the distance",
        ])
        .is_some()
    {
        what = "the numbers to use";
        why = format!("\"{cue}\" about something the message does not quantify");
    } else if numbers <= 1
        && (m.has("%") || m.has("percent"))
        // A doubling time at a rate is the same for any sum; "10% of my paycheck" is
        // still a share of an amount not given.
        && (!grows || m.has("of my"))
        && (personal || deictic || m.has("off"))
        // "a 70% chance of rain", "my battery is at 15%": a percentage that is the
        // answer's fact, not one to take of an amount.
        && m.any(&["chance", "probability", "likely", "likelihood", "odds", "humidity", "battery", "accuracy", "confidence"]).is_none()
    {
        what = "the amount to take the percentage of";
        why = "a percentage of an amount the message does not give".to_string();
    } else if numbers == 0
        && m.any(&["calculate", "compute", "work out", "figure out"]).is_some()
        && m.len() <= 8
    {
        // "calculate the area": a measure of nothing given.
        what = if shape_cue.is_some() { "the shape and its dimensions" } else { "the numbers to use" };
        why = format!("\"{cue}\" with nothing to calculate from");
    } else {
        return;
    }
    // "Convert this to async/await": code to convert, a text already asked for.
    if cue == "convert" && out.iter().any(|f| f.slot == Slot::Text) {
        return;
    }
    out.push(finding("math", Slot::Quantity, what, 0.8, why));
}

/// What a known calculation needs and the message may leave out: rate and term given,
/// the amount not.
#[derive(Clone, Copy, PartialEq)]
enum Input {
    /// A sum of money: a currency sign or word, or a number of 1,000 or more.
    Amount,
    /// A distance: a number with a length unit that is not part of a speed.
    Distance,
    /// A length of time: a number of years, months or decades, or a year to reach.
    Term,
}

/// Calculations with a fixed formula, each needing one input a person often leaves
/// out: a payment without the loan's amount, a balance without the sum invested, a
/// travel time at a speed without the distance, a tip without the bill. Each row:
/// (cues, any of which; companions, any of which, or none needed; the input; what the
/// note asks for).
#[rustfmt::skip]
const FORMULAS: &[(&[&str], &[&str], Input, &str)] = &[
    (&["mortgage", "loan", "car loan", "student loan", "auto loan"],
     &["payment", "payments", "per month", "a month", "monthly", "repayment", "repayments", "pay back", "interest"],
     Input::Amount, "the loan amount"),
    (&["invest", "investing", "invested", "investment", "compounded", "compound interest", "savings account", "deposit", "index fund", "put money", "etf"],
     &["how much will", "how much would", "end up with", "worth", "grow", "after", "in 10 years", "will i have", "would i have"],
     Input::Amount, "the amount invested (and any regular deposits)"),
    (&["invest", "investing", "invested", "investment", "compounded", "compound interest", "savings", "put away", "save", "saving"],
     &["how much will", "how much would", "end up with", "will i have", "would i have"],
     Input::Term, "how many years (or months) it grows"),
    (&["mph", "km h", "kph", "kmh", "miles per hour", "kilometers per hour", "kilometres per hour", "knots", "miles an hour"],
     &["how long", "how many hours", "how many minutes", "when will i", "when will we", "what time will", "arrive"],
     Input::Distance, "the distance"),
    (&["tip", "gratuity"],
     &["calculate", "how much", "work out", "figure out", "compute", "what should", "what's", "what is"],
     Input::Amount, "the bill amount (and the tip percentage)"),
];

/// A calculation of `FORMULAS` with its input missing.
#[rustfmt::skip]
fn formula(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    // A colon does not give an input ("My son's homework: a train travels at 60 mph…"):
    // each input is looked for in the words.
    if m.any(PROGRAMMING).is_some()
        || m.any(&["code", "function", "script", "program", "formula", "formulas", "explain", "how does", "how do you calculate", "what does"]).is_some()
    {
        return;
    }
    let all = ctx.words();
    // How long a sum takes to double turns on the rate, not the amount.
    if m.any(&["double", "doubles", "triple", "triples"]).is_some() {
        return;
    }
    let amount = ctx.all.contains(['$', '€', '£', '¥', '₹'])
        || all
            .any(&[
                "dollar", "dollars", "euro", "euros", "pound", "pounds", "usd", "eur", "gbp", "yen",
                "bucks", "rupees", "grand", "bill was", "bill is", "bill came", "total came",
                "total was", "total is", "came to", "comes to",
            ])
            .is_some()
        // "25k", "4500", or "186.40" (a sum in cents is money, whatever its sign).
        || all.w.iter().any(|x| {
            let d: String = x.chars().filter(|c| c.is_ascii_digit() || *c == '.').collect();
            let cents = x.split_once('.').is_some_and(|(_, c)| c.len() == 2 && c.chars().all(|d| d.is_ascii_digit()));
            Words::is_number(x)
                && (x.ends_with('k') || cents || d.split('.').next().is_some_and(|n| n.len() >= 4))
        });
    const LENGTHS: &[&str] = &[
        "miles", "mile", "km", "kilometers", "kilometres", "kilometer", "kilometre", "meters",
        "metres", "yards", "nautical",
    ];
    let distance = all.w.iter().enumerate().any(|(i, x)| {
        LENGTHS.contains(&x.as_str())
            && i > 0
            && Words::is_number(&all.w[i - 1])
            // "15 km/h" is split at the slash: "km" then "h".
            && all.w.get(i + 1).is_none_or(|n| !["per", "an", "a", "h", "hr", "hour"].contains(&n.as_str()))
    });
    let term = all.w.iter().enumerate().any(|(i, x)| {
        ["year", "years", "yr", "yrs", "month", "months", "decade", "decades"].contains(&x.as_str())
            && i > 0
            && Words::is_number(&all.w[i - 1])
    }) || all.any(&["retire", "retirement", "by then", "in a decade"]).is_some()
        || all.w.iter().any(|x| x.len() == 4 && x.starts_with("20") && x.chars().all(|c| c.is_ascii_digit()));
    for &(cues, companions, input, what) in FORMULAS {
        let Some(cue) = m.any(cues) else { continue };
        if !companions.is_empty() && m.any(companions).is_none() {
            continue;
        }
        let given = match input {
            Input::Amount => amount,
            Input::Distance => distance,
            Input::Term => term,
        };
        if !given {
            out.push(finding(
                "math",
                Slot::Quantity,
                what,
                0.8,
                format!("\"{cue}\": a calculation without {what}"),
            ));
            return;
        }
    }
}

/// A recipe to scale ("for 14 people instead of the usual") with the recipe not given:
/// its ingredients and how many it serves are the numbers to scale.
#[rustfmt::skip]
fn scaled_recipe(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    // "It uses 500 g mince, 12 sheets of pasta and 400 ml of bechamel": the recipe given.
    // "my granny's stew serves 4": a dish with its yield is a recipe too.
    let yield_at = (1..m.len()).find(|&i| {
        ["makes", "serves", "feeds", "yields"].contains(&m.w[i - 1].as_str()) && Words::is_number(&m.w[i])
    });
    if ctx.has_text() || !(m.has("recipe") || yield_at.is_some()) || m.numbers() >= 3 {
        return;
    }
    let Some(cue) = m.any(&[
        "double", "halve", "triple", "scale", "scaling", "instead of", "how much of each",
        "each ingredient", "adjust", "people", "servings", "serve", "portions", "feed",
        "cooking for", "enough for",
    ]) else {
        return;
    };
    // "a recipe for 6 people", "a good lasagna recipe": asking for a recipe, not one to scale.
    if m.any(&["my", "our", "mom's", "mum's", "grandma's", "this", "the recipe", "her", "his"]).is_none() {
        return;
    }
    // "Her original makes 12 … to feed the whole church group": what it yields is told,
    // and how many it must feed is not.
    // ("so it serves 8 people instead" gives the number to feed).
    let yields = yield_at.is_some()
        && m.any(&["instead", "so it", "so that it"]).is_none()
        && m.numbers() == 1;
    if yields {
        out.push(finding(
            "math",
            Slot::Quantity,
            "how many it needs to feed (and the recipe's amounts)",
            0.8,
            format!("\"{cue}\" scales a recipe to a number of people the message does not give"),
        ));
        return;
    }
    out.push(finding(
        "math",
        Slot::Text,
        "the recipe itself (its ingredients and how many it serves)",
        0.8,
        format!("\"{cue}\" scales a recipe the message does not give"),
    ));
}

/// A booking, reminder or meeting with no date or time.
#[rustfmt::skip]
fn scheduling(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    const VERBS: &[&str] = &[
        "schedule", "reschedule", "rescedule", "shedule", "create", "set", "inviting", "invite",
        "invitation", "book", "booking", "reserve", "arrange", "organize", "organise", "set up", "put", "add",
        "move", "make", "plan", "get", "find", "confirm", "block", "invite",
    ];
    const EVENTS: &[&str] = &[
        "meeting", "call", "appointment", "reservation", "table", "flight", "flights", "ticket",
        "tickets", "room", "hotel", "session", "interview", "demo", "sync", "standup", "stand-up",
        "1:1", "one-on-one", "catch-up", "party", "event", "visit", "consultation", "haircut",
        "massage", "lesson", "train", "taxi", "uber", "ride", "slot", "seat", "seats", "checkup",
        "check-up", "exam", "delivery", "pickup", "dinner", "lunch", "breakfast", "date", "trip",
        "vacation", "holiday", "zoom", "webinar", "class", "workout", "review", "time", "it",
        "that", "this", "timetable", "calendar", "reminder", "alarm", "launch", "farewell", "team",
        "everyone", "evening", "afternoon", "morning", "day", "conference",
    ];
    let cue = m
        .any(&[
            "move my", "push my", "remind me", "set a reminder", "set an alarm", "set a timer", "wake me",
            "send an invite", "send a calendar invite", "send an invitation", "calendar invite",
            "an invite for", "an invitation for",
            "to my calendar", "on my calendar", "in my calendar", "to the calendar",
            "on the calendar", "with a deadline", "set a deadline", "due date", "out-of-office",
            "out of office", "when i'm back", "when i am back", "i'll be away", "i will be away",
            "while i'm away", "when should i send", "when should we send", "to my schedule",
            "on my schedule", "in my schedule", "to my agenda", "until my", "how long until",
            "days until", "countdown to",
        ])
        .or_else(|| {
            VERBS.iter().copied().find(|v| {
                m.find(v).is_some_and(|i| {
                    let after = i + v.split(' ').count();
                    // "the book we're reading in class", "my plan for the day": after a
                    // determiner the word is a noun, not a request to book or plan ("an
                    // invite" is still an event).
                    let noun = ["book", "plan", "set", "block"].contains(v)
                        && i > 0
                        && DETERMINERS.contains(&m.w[i - 1].as_str());
                    // "book a table", "schedule me a call": the event within three words.
                    !noun
                        && (after..(after + 4).min(m.len())).any(|k| EVENTS.contains(&m.w[k].as_str()))
                        && (![
                            "get", "find", "make", "plan", "put", "add", "move", "invite",
                            "create", "set",
                        ]
                        .contains(v)
                            || m.any(&[
                                "appointment", "reservation", "booking", "meeting", "calendar",
                                "call", "1:1", "one-on-one", "sync", "standup", "interview",
                                "session", "lesson", "class", "timetable", "exam", "event",
                                "reminder", "alarm",
                            ])
                            .is_some())
                })
            })
        });
    // "find a time next week that works for the three of us": only the people's free
    // hours decide, and the message gives none.
    let all = ctx.words();
    // "us" as people, not "the US" (written in capitals).
    let people = m.w.iter().zip(&m.cased).any(|(w, c)| w == "us" && c != "US")
        || m.any(&["everyone", "everybody", "all of us", "the team", "the group", "both of us"])
            .is_some();
    let shared = m
        .any(&[
            "works for", "work for", "suits", "we're all free", "we are all free",
            "everyone is free", "everyone's free", "everybody is free",
        ])
        .filter(|_| m.any(&["time", "times", "slot", "slots"]).is_some() && people)
        // "How do I find a time that works for everyone?": advice, not a booking.
        .filter(|_| m.any(&["how do i", "how to", "how can i", "tips", "tool", "app", "explain"]).is_none())
        .filter(|_| !ctx.payload && !has_time_of_day(&all) && !names_a_day(&all));
    if let Some(c) = shared {
        // "spread over three time zones": which zones comes first, unless the places
        // are named (their overlap can be worked out).
        if m.any(&["time zones", "timezones", "time zone", "timezone"]).is_some() {
            if !all.has_place() {
                // Everyone's zone, of which the user's is one.
                out.push(
                    finding(
                        "scheduling",
                        Slot::Location,
                        "each person's time zone",
                        0.8,
                        format!("\"{c}\" across time zones the message does not name"),
                    )
                    .worded(Wording::AsWritten),
                );
            }
            return;
        }
        out.push(finding(
            "scheduling",
            Slot::DateTime,
            "when each person is free",
            0.8,
            format!("\"{c}\": a time only everyone's free hours decide, and none are given"),
        ));
        return;
    }
    let Some(cue) = cue else { return };
    // "put this into Spanish: 'Sofia will be absent on Friday, she has a dentist
    // appointment'": the event is in the text to work on, not one to book.
    let works_on_payload = m
        .any(&["translate", "proofread", "rewrite", "reword", "summarize", "summarise", "correct"])
        .is_some()
        || (1..m.len()).any(|i| {
            ["into", "to", "in"].contains(&m.w[i - 1].as_str()) && LANGUAGES.contains(&m.w[i].as_str())
        });
    if ctx.payload && works_on_payload {
        return;
    }
    // A request to write about an event ("write an email inviting …") is scheduling
    // only when it books or reminds.
    if m.any(&[
        "how do i", "how to", "how can i", "tips", "what should i", "explain", "should i",
        "should we", "which area", "where should",
    ])
    .is_some()
        && !cue.starts_with("when should")
    {
        return;
    }
    // "If I save £200 a month, how long until I reach £5,000?" is arithmetic, and "if
    // I put a bit aside every month, how long until I have enough" lacks its numbers.
    // "If I knit 14 rows an hour, how long until it's finished?" is a rate's sum too.
    if cue == "how long until"
        && (ctx.all.contains(['$', '€', '£', '¥'])
            || m.any(&["save", "saving", "savings", "pay off", "afford", "invest", "aside", "enough for"]).is_some()
            || m.any(PER_SPAN).is_some())
    {
        return;
    }
    // "Move my 3pm to later": the time it has is the one to leave.
    let vague = m
        .any(&[
            "to later", "till later", "until later", "to another day", "to another time",
            "to a different day", "to a different time", "to some other time", "back a bit",
            "back a little", "a bit later", "a little later", "a bit earlier",
            "a little earlier", "forward a bit", "back a few",
        ])
        .is_some();
    // A meeting booked ("schedule", "set up"), not one spoken of.
    let booked = m.any(&["book", "schedule", "set up", "arrange", "put"]).is_some()
        && m.any(&[
            "meeting", "call", "1:1", "one-on-one", "sync", "interview", "demo", "appointment",
            "consultation", "session", "standup", "stand-up",
        ])
        .is_some();
    // "Schedule a weekly standup": how often it meets, not on which day or at what time.
    let recurrence = all
        .any(&["weekly", "daily", "monthly", "biweekly", "fortnightly", "every week", "every day"])
        .filter(|_| {
            booked
                && all.any(DATE_WORDS).is_none()
                && !names_a_day(&all)
                && !has_time_of_day(&all)
        });
    if let Some(r) = recurrence {
        out.push(finding(
            "scheduling",
            Slot::DateTime,
            "the day and time",
            0.75,
            format!("\"{cue}\" {r}, on no day and at no time"),
        ));
        return;
    }
    if all.has_date() && !vague {
        // "Book a 30 min 1:1 with Kenji on Tuesday": a meeting booked on a day, at no
        // time of that day.
        let day = all
            .any(&[
                "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday",
                "tomorrow",
            ])
            .filter(|_| booked && !has_time_of_day(&all));
        if let Some(day) = day {
            let day = format!("{}{}", day[..1].to_uppercase(), &day[1..]);
            out.push(finding(
                "scheduling",
                Slot::DateTime,
                format!("the time on {day}"),
                0.75,
                format!("\"{cue}\" on {day}, at no time of day"),
            ));
        }
        return;
    }
    // A reminder's own time: asked for "the date and time", Qwen asked for "the date and
    // time of your appointment" to "set a reminder to call the dentist".
    let what = match m.any(&["alarm", "wake me", "remind", "reminder", "reminders"]) {
        Some("alarm") | Some("wake me") => "the date and time of the alarm",
        Some(_) => "the date and time of the reminder",
        None => "the date and time",
    };
    out.push(finding(
        "scheduling",
        Slot::DateTime,
        what,
        0.8,
        format!("\"{cue}\" with no date or time"),
    ));
}

/// How early to start for an event whose date is never said: "When should I start
/// training if I want to run the half marathon?". The start counts back from that date.
#[rustfmt::skip]
fn lead_time(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.payload || !ctx.first || !out.is_empty() {
        return;
    }
    let Some(cue) = m.any(&[
        "when should i start", "when should we start", "when do i need to start",
        "when do we need to start", "how early should i start", "how early should we start",
        "how soon should i start", "when should i begin", "how far ahead should i",
        "how far in advance should i",
    ]) else {
        return;
    };
    // An event on a date the start counts back to: "for the exam", "if I want to run
    // the half marathon". ("saving for my retirement" or "solids for my baby" count
    // back from no date.)
    let event = m
        .any(&[
            "exam", "exams", "finals", "test", "race", "marathon", "half", "10k", "5k",
            "triathlon", "wedding", "trip", "interview", "competition", "tournament", "recital",
            "audition", "deadline", "move", "presentation", "surgery", "due date", "launch",
        ])
        .is_some();
    let all = ctx.words();
    if !event || all.has_date() || names_a_day(&all) {
        return;
    }
    out.push(finding(
        "scheduling",
        Slot::DateTime,
        "the date of the event",
        0.75,
        format!("\"{cue}\" for an event with no date given"),
    ));
}

/// Documents a user compares by their text: two contracts to weigh are read, not named.
#[rustfmt::skip]
const DOCUMENTS: &[&str] = &[
    "contract", "lease", "essay", "draft", "resume", "résumé", "cv", "cover letter", "proposal",
    "paragraph", "sentence", "email", "letter", "report", "document", "doc", "poem", "snippet",
    "function", "script", "query", "policy", "intro", "introduction", "headline", "slogan",
    "offer letter", "version", "translation", "bio", "abstract",
];

/// Determiners that point at one known thing: "the one we talked about", "that show
/// you mentioned".
const POINTING: &[&str] = &["the", "that", "this", "those"];

/// Words after which a verb is a noun.
const DETERMINERS: &[&str] = &[
    "the", "a", "an", "my", "your", "our", "his", "her", "their", "this", "that", "its",
];

/// A time of day: "3pm", "15:30", "at 9", "noon", "in the morning", "9 o'clock", "now".
/// A day or a week to lay out: a plan of time, never a sum (`math`), and with fixed
/// appointments, their times (`day_plan`).
#[rustfmt::skip]
const DAY_PLANS: &[&str] = &[
    "plan my day", "plan my week", "plan out my", "plan my morning", "plan my afternoon",
    "plan tomorrow", "plan today",
];

/// "Plan my day tomorrow around the dentist and the kids' swimming lesson": a day laid
/// out around fixed appointments whose times the message does not give.
fn day_plan(m: &Words, ctx: &Context) -> Option<Finding> {
    let plan = m.any(DAY_PLANS);
    let fixed = m.any(&["around the", "around my", "around a", "around our"]);
    let (Some(p), Some(_)) = (plan, fixed) else {
        return None;
    };
    (!has_time_of_day(&ctx.words())).then(|| {
        finding(
            "scheduling",
            Slot::DateTime,
            "the times of the fixed appointments",
            0.8,
            format!("\"{p}\" around appointments whose times are not given"),
        )
    })
}

/// "deadline's creeping up, how many days have i got left": a count of days to a date
/// the message never gives (with a date given it is today's date that is missing:
/// `countdown`).
fn undated_countdown(m: &Words, ctx: &Context) -> Option<Finding> {
    let counts = m
        .any(&[
            "how many days",
            "how many weeks",
            "how long have i got",
            "how much time have i got",
            "how long do i have",
        ])
        .is_some()
        && m.any(&["left", "until", "till", "to go", "remaining"])
            .is_some();
    let all = ctx.words();
    let dated = all.has_date() || gives_a_day(&all);
    (counts && !dated).then(|| {
        finding(
            "scheduling",
            Slot::DateTime,
            "the date you are counting to",
            0.8,
            "counts the days left to a date the message does not give",
        )
    })
}

/// "take medicine every 8 hours … When I take next dose?": the next dose is counted
/// from the last, whose time the message does not give.
fn next_dose(m: &Words, ctx: &Context) -> Option<Finding> {
    let next = m.any(&[
        "next dose",
        "next pill",
        "next tablet",
        "next one",
        "next injection",
    ]);
    let when = m.any(&["when", "what time"]);
    let (Some(n), Some(_)) = (next, when) else {
        return None;
    };
    // A clock time, not a "now": "now I land in other country" is when it is asked.
    (m.has("every") && !has_clock_time(&ctx.words())).then(|| {
        finding(
            "scheduling",
            Slot::DateTime,
            "the time of the last dose (in the time where you are now)",
            0.8,
            format!("\"{n}\" is counted from a last dose whose time is not given"),
        )
    })
}

/// A day the conversation gives by number, ordinal or name ("the 14th", "9 June",
/// "Friday"); "next year" says when, not the day.
fn gives_a_day(all: &Words) -> bool {
    all.numbers() > 0 || all.w.iter().any(|x| Words::is_ordinal(x)) || all.any(DATE_WORDS).is_some()
}

/// "what day of the week is my daughter's birthday next year?": a date of the user's
/// own, asked about and never given.
#[rustfmt::skip]
fn own_date(m: &Words, ctx: &Context) -> Option<Finding> {
    let asked = m.any(&["what day", "which day", "day of the week", "what weekday", "falls on", "fall on"])?;
    let event = m.w.iter().enumerate().find_map(|(i, x)| {
        let owned = i > 0 && (POSSESSIVE.contains(&m.w[i - 1].as_str()) || m.w[i - 1].ends_with("'s"));
        (owned && ["birthday", "anniversary", "due date", "wedding", "graduation"].contains(&x.as_str()))
            .then_some(x.as_str())
    })?;
    (!gives_a_day(&ctx.words())).then(|| finding(
        "scheduling",
        Slot::DateTime,
        format!("the day and month of the {event}"),
        0.8,
        format!("\"{asked}\" of a {event} whose date is not given"),
    ))
}

/// "Help me plan a study schedule for my exams": a plan counted back from exam dates
/// the message never gives.
#[rustfmt::skip]
fn exam_plan(m: &Words, ctx: &Context) -> Option<Finding> {
    let plan = m.any(&[
        "study schedule", "study plan", "revision timetable", "revision schedule", "revision plan",
        "study timetable", "study calendar",
    ])?;
    let exams = m.any(&["exam", "exams", "finals", "tests", "boards", "a-levels", "gcses"])?;
    let all = ctx.words();
    (!all.has_date() && !gives_a_day(&all)).then(|| finding(
        "scheduling",
        Slot::DateTime,
        "the date of each exam",
        0.8,
        format!("\"{plan}\" for {exams} whose dates are not given"),
    ))
}

/// "Book me in for whichever slot starts after my shift ends": a time set by the
/// user's own hours, which the message does not give.
#[rustfmt::skip]
fn after_own_hours(m: &Words, ctx: &Context) -> Option<Finding> {
    let after = m.any(&[
        "after my shift", "when my shift ends", "once my shift", "after i finish work",
        "after my classes", "after my class", "after i get off",
    ])?;
    let booked = m.any(&["book", "slot", "schedule", "reserve", "sign me up", "put me down"])?;
    let all = ctx.words();
    (!has_clock_time(&all) && !has_time_of_day(&all)).then(|| finding(
        "scheduling",
        Slot::DateTime,
        "when your shift ends (and on which day)",
        0.8,
        format!("\"{booked}\" a time \"{after}\", which the message does not give"),
    ))
}

/// "make me a weekly cleaning rota for the flat": shares of chores among people the
/// message never names or counts.
#[rustfmt::skip]
fn shared_chores(m: &Words, ctx: &Context) -> Option<Finding> {
    let rota = m.any(&["rota", "chore chart", "chore schedule", "chores chart", "cleaning schedule", "roster"])?;
    // "the macro that emails the weekly rota": code about a rota, not a rota to draw up.
    if m.any(&["macro", "script", "code", "formula", "spreadsheet"]).is_some() {
        return None;
    }
    let all = ctx.words();
    let people = all.has_name()
        || all.numbers() > 0
        || all.any(&["two of us", "three of us", "four of us", "me and"]).is_some();
    (!people).then(|| finding(
        "scheduling",
        Slot::Items,
        "who shares the chores (names or how many people) and which chores",
        0.8,
        format!("a \"{rota}\" shared among people the message does not name"),
    ))
}

/// "the weekend after the club AGM. Which dates should I book?": a date counted from an
/// event whose own date the message never gives.
#[rustfmt::skip]
fn after_an_event(m: &Words, ctx: &Context) -> Option<Finding> {
    const SPANS: &[&str] = &[
        "weekend", "week", "day", "night", "month", "monday", "tuesday", "wednesday", "thursday",
        "friday", "saturday", "sunday",
    ];
    const EVENTS: &[&str] = &[
        "agm", "meeting", "wedding", "party", "conference", "match", "race", "festival", "fair",
        "concert", "launch", "election", "tournament", "ceremony", "funeral", "graduation",
        "recital", "fete", "reunion", "show", "exams", "exam",
    ];
    let asked = m.any(&[
        "which dates", "what dates", "which date", "what date", "which weekend", "what weekend",
        "which day", "what day", "when is that", "when would that be",
    ])?;
    let event = (1..m.len()).find_map(|i| {
        (["after", "before"].contains(&m.w[i].as_str()) && SPANS.contains(&m.w[i - 1].as_str()))
            .then(|| m.w[i + 1..(i + 5).min(m.len())].iter().find(|x| EVENTS.contains(&x.as_str())))
            .flatten()
    })?;
    let all = ctx.words();
    const MONTHS: &[&str] = &[
        "january", "february", "march", "april", "june", "july", "august", "september",
        "october", "november", "december", "jan", "feb", "mar", "apr", "jun", "jul", "aug",
        "sep", "sept", "oct", "nov", "dec",
    ];
    let dated = all.numbers() > 0 || all.w.iter().any(|x| Words::is_ordinal(x)) || all.any(MONTHS).is_some();
    (!dated).then(|| finding(
        "scheduling",
        Slot::DateTime,
        format!("the date of the {}", if event == "agm" { "AGM" } else { event }),
        0.8,
        format!("\"{asked}\" counted from a {event} whose date is not given"),
    ))
}

/// "What should I be planting right now …?", "the date to sow my tomatoes so they're
/// ready after the last frost": a garden's calendar is its climate's.
fn growing_season(m: &Words, ctx: &Context) -> Option<Finding> {
    #[rustfmt::skip]
    let grows = m.any(&[
        "what should i plant", "what should i be planting", "what can i plant", "what to plant",
        "what should i sow", "what can i sow", "what to sow", "what should i grow",
        "what can i grow", "when should i sow", "when should i plant", "when to sow",
        "when to plant", "when do i plant", "when do i sow", "should sow", "should plant",
        "i sow", "to sow", "in the ground",
    ]);
    // "When should I get my garlic in the ground?": a planting date is the climate's.
    let when = m.any(&[
        "when should",
        "when do",
        "when to",
        "when's the best",
        "when is the best",
        "what month",
    ]);
    let season = m.any(&[
        "right now",
        "now",
        "this time of year",
        "this month",
        "at the moment",
        "last frost",
        "first frost",
        "frost date",
        "this season",
    ]);
    let (Some(_), Some(s)) = (grows, season.or(when)) else {
        return None;
    };
    let all = ctx.words();
    (!all.has_place() && all.any(CALENDAR_WORDS).is_none()).then(|| {
        finding(
            "recommendation",
            Slot::Location,
            "where you garden (the region or climate)",
            0.8,
            format!("\"{s}\" in a garden turns on its climate, and no place is named"),
        )
    })
}

/// "the monthly repayment on £18,000 over the agreed term at the rate quoted": numbers
/// the sum needs, referred to and not given.
fn unstated_terms(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    // "paeds ward: order is 5 mg/kg …": a dose reads the same after a colon.
    if let Some(f) = unnumbered_rate(m).filter(|_| !ctx.earlier_text) {
        out.push(f);
        return;
    }
    if ctx.has_text() {
        return;
    }
    if let Some(f) = referred_earlier(m, ctx) {
        out.push(f);
        return;
    }
    if m.any(MATH_CUES).is_none() {
        return;
    }
    #[rustfmt::skip]
    const REFERRED: &[(&str, &str)] = &[
        ("the agreed term", "term"), ("the term agreed", "term"), ("the rate quoted", "rate"),
        ("the quoted rate", "rate"), ("the agreed rate", "rate"), ("the rate they quoted", "rate"),
        ("the rate we agreed", "rate"), ("the agreed price", "price"), ("the price quoted", "price"),
        ("the quoted price", "price"), ("the agreed amount", "amount"), ("the amount we agreed", "amount"),
        ("the usual rate", "rate"), ("the going rate", "rate"),
    ];
    let named: Vec<&str> = REFERRED
        .iter()
        .filter(|(p, _)| m.has(p))
        .map(|&(_, n)| n)
        .collect();
    if named.is_empty() || out.iter().any(|f| f.slot == Slot::Quantity) {
        return;
    }
    let what = named.join(" and the ");
    out.push(finding(
        "math",
        Slot::Quantity,
        format!("the {what} as numbers"),
        0.85,
        format!(
            "refers to the {what} without giving {}",
            if named.len() > 1 { "them" } else { "it" }
        ),
    ));
}

/// "Same acreage as last year", "Budget is the figure I mentioned earlier": a measure
/// the user refers to as said before, in a conversation that has no before.
fn referred_earlier(m: &Words, ctx: &Context) -> Option<Finding> {
    #[rustfmt::skip]
    const MEASURES: &[&str] = &[
        "acreage", "area", "size", "amount", "budget", "figure", "number", "numbers", "quantity",
        "price", "rate", "dose", "distance", "weight", "total", "sum", "salary", "income",
        "dimensions", "measurements", "headcount", "square footage",
    ];
    const BEFORE: &[&str] = &["last", "before", "usual", "previous", "the"];
    const SAID: &[&str] = &["mentioned", "gave", "told", "said", "sent", "quoted"];
    if !ctx.first {
        return None;
    }
    let at = |i: usize| m.w.get(i).map_or("", String::as_str);
    let i = (1..m.len()).find(|&i| {
        MEASURES.contains(&at(i))
            && (at(i - 1) == "same" && at(i + 1) == "as" && BEFORE.contains(&at(i + 2))
                || at(i - 1) == "the"
                    && ["i", "we"].contains(&at(i + 1))
                    && SAID.contains(&at(i + 2)))
    })?;
    // "Budget is the figure I mentioned": the measure by the name it has.
    let noun = if m.has("budget") { "budget" } else { at(i) };
    let recommends = m.any(RECOMMEND_CUES).is_some();
    Some(
        finding(
            if recommends { "recommendation" } else { "math" },
            if recommends {
                Slot::Criteria
            } else {
                Slot::Quantity
            },
            format!("the {noun} as a number"),
            0.85,
            format!(
                "refers to the {noun} as said before, in a conversation with nothing before it"
            ),
        )
        .referred(),
    )
}

/// "order is mg/kg/day divided q8h": a dose by weight with its number left out.
fn unnumbered_rate(m: &Words) -> Option<Finding> {
    // The words as written: the tokenizer splits "mg/kg/day" at its slashes.
    let t: Vec<String> = m
        .raw
        .split_whitespace()
        .map(|x| {
            x.trim_matches(|c: char| !c.is_alphanumeric() && c != '/')
                .to_lowercase()
        })
        .collect();
    let per_kg = |i: usize| {
        ["mg/kg", "mcg/kg", "ml/kg", "units/kg", "g/kg"]
            .iter()
            .any(|u| t[i].starts_with(u))
    };
    // "order is 5 mg/kg, vial is 50 mg/mL, how many mL? Weight is on the chart": the
    // dose has its number and the weight it scales by has none.
    let weighed = (0..t.len()).any(|i| {
        let kg = t[i] == "kg"
            || t[i] == "kgs"
            || t[i].ends_with("kg") && Words::is_number(t[i].trim_end_matches("kg"));
        kg && (i > 0 && Words::is_number(&t[i - 1]) || t[i] != "kg" && t[i] != "kgs")
    }) || m
        .any(&["weighs", "weighing", "lb", "lbs", "pounds", "stone"])
        .is_some();
    if let Some(i) = (0..t.len()).find(|&i| per_kg(i) && i > 0 && Words::is_number(&t[i - 1])) {
        if !weighed
            && m.any(&[
                "how many",
                "how much",
                "what dose",
                "what volume",
                "dose is",
                "calculate",
            ])
            .is_some()
        {
            return Some(
                finding(
                    "math",
                    Slot::Quantity,
                    "the patient's weight in kg",
                    0.85,
                    format!("a dose in \"{}\" and no weight to scale it by", t[i]),
                )
                .referred(),
            );
        }
    }
    let i = (0..t.len()).find(|&i| {
        (per_kg(i) || t[i].starts_with("mg/m2")) && !(i > 0 && Words::is_number(&t[i - 1]))
    })?;
    Some(
        finding(
            "math",
            Slot::Quantity,
            format!("the dose in {}", t[i]),
            0.85,
            format!("a dose in \"{}\" with no number before it", t[i]),
        )
        .referred(),
    )
}

/// A clock time ("7:30", "3pm", "at 9"), and not a word of the day's parts.
fn has_clock_time(m: &Words) -> bool {
    m.w.iter().enumerate().any(|(i, x)| {
        Words::is_clock(x)
            || (Words::is_number(x) && i > 0 && ["at", "by", "from"].contains(&m.w[i - 1].as_str()))
    })
}

/// A time of day: a clock time, or a part of the day ("noon", "evening", "now").
fn has_time_of_day(m: &Words) -> bool {
    has_clock_time(m)
        || m.any(&[
            "noon",
            "midday",
            "morning",
            "afternoon",
            "evening",
            "tonight",
            "night",
            "lunchtime",
            "lunch",
            "o'clock",
            "eod",
            "end of day",
            "first thing",
            "asap",
            "now",
            "any time",
            "anytime",
            "whenever",
            "free slot",
            "open slot",
            "when we're both free",
        ])
        .is_some()
}

/// A verdict ("which is better?") with no criteria, or over items it does not name.
#[rustfmt::skip]
fn comparison(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    // "Python or R?": two names and nothing else, so nothing of what they are for.
    // "react vs vue?", "python vs javascript": two names typed in lowercase are a
    // bare pair too.
    // "Mac or PC? Be honest": the pair, then a word or three that ask nothing more.
    let (pair, tail) = m.raw.trim_end().split_once('?').unwrap_or((m.raw, ""));
    let tagged = tail.split_whitespace().count() <= 3
        && !tail.trim().is_empty()
        && pair.split_whitespace().count() <= 4
        && m.any(CRITERIA).is_none();
    let bare_pair = (m.len() <= 4 || tagged)
        && ((m.has("or") && m.has_name() && (m.raw.trim_end().ends_with('?') || tagged))
            || (m.len() == 3 && ["vs", "vs.", "versus"].contains(&m.w[1].as_str())));
    let Some(cue) = m.any(COMPARE_CUES).or(bare_pair.then_some("or")) else {
        return;
    };
    // "errors in prod, which is MySQL 8": a relative clause naming a thing, not a
    // question of which ("two offers, which should I take?").
    // "It's L-shaped which is why I'm confused": "which is why" (how, what) is a
    // relative clause wherever it stands but at a sentence's start.
    let relative = |i: usize| {
        let reason = m.w.get(i + 1).is_some_and(|x| x == "is")
            && m.reason_clause(i + 2)
            && !m.sentence_initial[i];
        // "pick up my mom at 1pm which is a 40 min drive": after a number or a time.
        let after_number = i > 0
            && !m.sentence_initial[i]
            && m.w[i - 1].chars().any(|c| c.is_ascii_digit());
        reason
            || after_number
            || i > 0
            && m.ends_clause[i - 1]
            && !m.sentence_initial[i]
            && m.w.get(i + 1).is_some_and(|x| ["is", "was", "are", "were"].contains(&x.as_str()))
            && m.cased.get(i + 2).is_some_and(|x| {
                x.starts_with(char::is_uppercase) || Words::is_number(&x.to_lowercase())
            })
    };
    if cue.starts_with("which ")
        && m.w.iter().enumerate().filter(|(_, x)| *x == "which").all(|(i, _)| relative(i))
    {
        return;
    }
    // "they said afternoons work best for them": "them" are people who were named.
    let people = m
        .any(&[
            "they said", "they told", "they want", "they prefer", "they like", "client", "clients",
            "customer", "boss", "colleague", "colleagues", "friends", "family", "team",
        ])
        .is_some();
    let deictic_items = DEICTIC_ITEMS
        .iter()
        .copied()
        .find(|d| m.has(d) && !(people && ["them", "either"].contains(d)));
    // "between React and Svelte" names them; "between the two" does not.
    // "Between the 2019 Toyota Corolla and the 2019 Fiat 500" names them by a name.
    let between_named = m.find("between").is_some_and(|i| {
        let Some(and) = m.find_from("and", i) else { return false };
        m.w.get(i + 1).is_some_and(|x| {
            !["the", "those", "these", "them", "both", "my", "our"].contains(&x.as_str())
        }) || (i + 1..and).any(|k| {
            m.cased[k].starts_with(char::is_uppercase)
                && m.w[k] != "i"
                && !DATE_WORDS.contains(&m.w[k].as_str())
        })
    });
    // "python vs the other one", "the cheaper plan or the premium one": a side pointed
    // at by a word about it ("the X one"), not named.
    let half_named = m
        .any(&["the other one", "the other option", "the better one", "the cheaper one"])
        .or_else(|| {
            (1..m.len())
                .find(|&i| {
                    m.w[i] == "one"
                        && (m.w[i - 1] == "the" && m.w.get(i + 1).is_some_and(|n| !["of", "and"].contains(&n.as_str()))
                            || i > 1 && m.w[i - 2] == "the")
                })
                .map(|_| "the … one")
        });
    // "She likes the first one and I like the second one": options numbered, never
    // named. A long message tells a story around them; it does not carry them.
    // "plan A or plan B": one noun, lettered.
    let lettered = (1..m.len()).any(|i| {
        m.w[i] == "a"
            && m.w[i - 1] != "or"
            && (1..m.len()).any(|j| m.w[j] == "b" && m.w[j - 1] == m.w[i - 1])
    });
    let numbered_only = (lettered
        || m
            .any(&["the first one", "the second one", "the first or the second", "option a", "option b"])
            .is_some())
        && !delimited_payload(m.raw)
        && !ctx.earlier_text;
    let items_named = half_named.is_none()
        && !numbered_only
        && (m.has("or")
        || m.has("vs")
        || m.has("vs.")
        || m.has("versus")
        || m.has("than")
        || between_named
        || (deictic_items.is_none()
            && (m.has("compare") || m.has("comparison"))
            && (m.has("and") || m.has("with") || m.has("to"))));
    let verdict = m
        .any(&[
            "better", "best", "superior", "worse", "prefer", "preferable", "should i", "which one",
            "which is", "which would", "which do you", "recommend", "choose", "pick", "winner",
        ])
        .is_some()
        || bare_pair;
    let items = match items_noun(m) {
        Some(noun) => format!("the {noun} being compared"),
        None => "the options being compared".to_string(),
    };
    // "the blue one or the grey one": both sides pointed at.
    // "narrowed it down to three vendors": counted, not named.
    let counted = (1..m.len()).find_map(|i| {
        (["two", "three", "four", "five", "2", "3", "4", "5"].contains(&m.w[i - 1].as_str())
            && plural(&m.w[i])
            && !m.has_name())
        .then_some("a number of options")
    });
    let pointed = deictic_items
        .or(half_named.filter(|_| m.has("or")))
        .or(counted.filter(|_| !items_named))
        .or(lettered.then_some("A or B"));
    // "compare these two job contracts": documents of the user's, pointed at and not
    // pasted. What is missing is their text, not which ones they are.
    let documents = items_noun(m).filter(|n| {
        let head = n.rsplit(' ').next().unwrap_or(n);
        DOCUMENTS.iter().any(|d| head == *d || head.strip_suffix('s') == Some(d))
    });
    if let Some(n) = documents.filter(|_| deictic_items.is_some() && !ctx.has_text()) {
        out.push(finding(
            "comparison",
            Slot::Text,
            format!("the {n} themselves"),
            0.9,
            format!("\"{n}\" pointed at and not pasted"),
        ));
        return;
    }
    if !items_named && (!ctx.has_text() || numbered_only) {
        if let Some(d) = pointed {
            out.push(finding(
                "comparison",
                Slot::Items,
                items,
                0.9,
                format!("\"{d}\" with no options named"),
            ));
        } else if cue == "compare"
            || cue == "comparison"
            || cue == "difference between"
            || (m.has("which") && m.len() <= 5)
        {
            out.push(finding(
                "comparison",
                Slot::Items,
                items,
                0.8,
                "asks to compare but names nothing to compare",
            ));
        }
    }
    if !verdict {
        return;
    }
    // What "better" means: a stated purpose or a measure. "Which is sweeter" names its
    // measure in the comparative.
    // "which is the newest", "the cheapest": a superlative too.
    let graded = |ending: &str, min: usize, after: &[&str], not: &[&str]| {
        (1..m.len()).any(|i| {
            let w = m.w[i].as_str();
            after.contains(&m.w[i - 1].as_str()) && w.len() > min && w.ends_with(ending) && !not.contains(&w)
        })
    };
    let comparative = graded("er", 4, &["is", "are", "one's", "was", "gets"], &[
        "better", "other", "either", "whether", "never", "over", "rather", "proper", "after",
        "under", "later", "number",
    ]);
    let superlative = graded("est", 5, &["the", "is", "are"], &[
        "interest", "forest", "request", "contest", "honest", "modest", "harvest", "suggest",
        "protest", "biggest",
    ]);
    let mut criteria = m.any(CRITERIA).is_some() || comparative || superlative;
    if m.any(&[
        "for me", "for us", "for you", "for my", "for him", "for her",
    ])
    .is_some()
        && m.w.iter().filter(|x| x.as_str() == "for").nth(1).is_none()
    {
        criteria = m.any(&CRITERIA[1..]).is_some();
    }
    // "Oase or Fluval? 180 litre planted tank with shrimp. Which would you go with?": a
    // use told with its measures is what "better" is judged by.
    let told_use = items_named && m.has_name() && m.len() >= 15 && m.numbers() >= 1;
    if criteria || told_use {
        return;
    }
    let product = m.any(PRODUCT_NOUNS);
    if items_named
        || deictic_items.is_some()
        || m.has("which")
        || bare_pair
        || (product.is_some()
            && m.any(&[
                "best", "better", "should i buy", "should i get", "recommend",
            ])
            .is_some())
    {
        out.push(finding(
            "comparison",
            Slot::Criteria,
            "the criteria for the choice (what matters most)",
            0.7,
            format!("\"{cue}\" with no criteria for the verdict"),
        ));
    }
}

/// The cost or the time of a trip compared between ways to travel ("is it cheaper to
/// drive or take the train?") with no trip named: the answer turns on where from and
/// where to. Only for a trip of the user's ("is it…", "should I…"); silent where another
/// rule has spoken, where a place, a distance or a number is given ("… from Manchester
/// to London"), or where the question is about travel in general.
#[rustfmt::skip]
fn trip(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.payload || !out.is_empty() {
        return;
    }
    let Some(measure) = m.any(&[
        "cheaper", "cheapest", "faster", "fastest", "quicker", "quickest", "more expensive",
        "take longer", "costs more", "costs less",
    ]) else {
        return;
    };
    const MODES: &[&[&str]] = &[
        &["drive", "driving", "car"], &["train", "rail"], &["fly", "flying", "flight", "plane"],
        &["bus", "coach"], &["ferry", "boat"], &["cycle", "cycling", "bike"], &["walk", "walking"],
        &["taxi", "uber", "cab"],
    ];
    let modes = MODES.iter().filter(|ws| m.any(ws).is_some()).count();
    if modes < 2 || m.any(&["or", "vs", "versus", "than"]).is_none() {
        return;
    }
    // A trip of the user's: "is it cheaper to drive…", "should I fly or…". "Is cycling
    // faster than walking?" compares the ways in general.
    if m.any(&["is it", "would it", "will it", "should i", "should we", "for me", "for us"]).is_none() {
        return;
    }
    // "Why is flying usually cheaper than the train?" asks about travel in general.
    let general = m
        .any(&["why", "usually", "generally", "in general", "typically", "on average"])
        .is_some();
    if general || ctx.words().has_place() || m.has("from") || m.numbers() > 0 || m.measures() > 0
    {
        return;
    }
    // A route, not where the user is.
    out.push(
        finding(
            "comparison",
            Slot::Location,
            "the trip (where from and where to)",
            0.75,
            format!("compares ways to travel by \"{measure}\" with no trip named"),
        )
        .worded(Wording::AsWritten),
    );
}

/// The user's own name for the options a comparison points at, plural: "the two
/// offers I got" → "offers", "these three laptops" → "laptops", "the two job offers"
/// → "job offers", "the tile options" → "tile options". A plural noun (`plural`)
/// right after "these", "those", "both" or a number up to five (one more number and
/// one word before the noun may come between), or a word before "options" or
/// "choices" after "the". None where the options have no name ("compare them", "which
/// is faster?"). The note asks for their names in the user's word: asked "for the
/// options being compared", Qwen asked "which phone you're referring to" or "what
/// you're asking"; asked for "the names of the phones being compared", for the names.
fn items_noun(m: &Words) -> Option<String> {
    const POINTERS: &[&str] = &["these", "those", "both"];
    const NUMBERS: &[&str] = &["two", "three", "four", "five"];
    let w = &m.w;
    let at = |i: usize| w.get(i).map(String::as_str).unwrap_or("");
    for i in 0..w.len() {
        // "the two offers", "these three laptops"; not "for two adults".
        let pointer = POINTERS.contains(&at(i))
            || (NUMBERS.contains(&at(i))
                && i > 0
                && ["the", "my", "our", "these", "those", "both"].contains(&at(i - 1)));
        if pointer {
            let j = if NUMBERS.contains(&at(i + 1)) {
                i + 2
            } else {
                i + 1
            };
            if plural(at(j)) {
                return Some(at(j).to_string());
            }
            if !FUNCTION_WORDS.contains(&at(j)) && plural(at(j + 1)) {
                return Some(format!("{} {}", at(j), at(j + 1)));
            }
        }
        if at(i) == "the"
            && ["options", "choices"].contains(&at(i + 2))
            && !POINTERS.contains(&at(i + 1))
            && !NUMBERS.contains(&at(i + 1))
            && !FUNCTION_WORDS.contains(&at(i + 1))
        {
            return Some(format!("{} {}", at(i + 1), at(i + 2)));
        }
    }
    None
}

/// Words that join or point, never the modifier of a noun ("both of them").
const FUNCTION_WORDS: &[&str] = &[
    "of", "and", "or", "the", "a", "an", "are", "is", "were", "was", "to", "for", "in", "on",
    "with", "my", "your", "our", "their", "you", "i", "we", "they", "that", "which", "have",
];

/// A plural noun, by its ending: "offers", "laptops", "apartments"; not "this", "does",
/// "class", "pros", or the "ones" that name nothing.
#[rustfmt::skip]
fn plural(word: &str) -> bool {
    // Words of four letters or more that end in a lone "s" and are no plural noun (or,
    // like "options", name nothing beyond the default).
    const NOT: &[&str] = &[
        "this", "these", "those", "does", "pros", "cons", "always", "perhaps", "sometimes",
        "ones", "options", "thanks", "adults", "kids", "years", "days", "hours", "minutes",
        "weeks", "months",
        // Verbs in the third person: "which of these two performs better?"
        "performs", "lasts", "uses", "needs", "tastes", "feels", "handles", "scales", "matters",
        "means", "comes", "gets", "gives", "takes", "pays", "seems", "looks", "sounds", "costs",
        "works", "wins", "runs", "goes", "makes",
    ];
    word.len() >= 4
        && word.ends_with('s')
        && !word.ends_with("ss")
        && !word.ends_with("us")
        // "thesis", "analysis", "synopsis".
        && !word.ends_with("is")
        && word.chars().all(|c| c.is_ascii_alphabetic())
        && !NOT.contains(&word)
}

/// A pick of something chosen by taste, use or budget ("recommend me a book", "which
/// laptop should I get?", "suggest a gift for my coworker") with nothing said about
/// any of them: as many right answers as people asking. Silent where another rule has
/// spoken, or where a title, a genre, a liking, a use or a price is given.
#[rustfmt::skip]
fn taste(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.has_text() || !out.is_empty() || m.has_name() || m.numbers() > 0 {
        return;
    }
    // "what should i read next": the verb names the kind of pick.
    let verb_only = m.any(&[
        "what should i read", "what should i watch", "what should we watch", "what should i listen to",
        "what should i play", "what to watch tonight", "what to read next", "what should i binge",
    ]);
    let Some(noun) = m
        .any(TASTE_NOUNS)
        .or_else(|| m.any(PRODUCT_NOUNS))
        .or(verb_only.map(|_| "pick"))
    else {
        return;
    };
    let Some(ask) = m.any(&[
        "recommend", "recommendation", "recommendations", "suggest", "suggestion",
        "suggestions", "should i get", "should i buy", "should i read", "should i watch",
        "should i play", "should i try", "should i pick up", "should i take up",
        "should i start", "should i listen to", "what to get", "what to buy", "what to read",
        "what to watch", "ideas for", "idea for", "any good", "a good", "any ideas", "ideas",
        "recomend", "reccomend", "reccommend", "recs", "rec", "recos", "reccs", "what breed", "which breed", "what colour",
        "what color", "which colour", "which color", "should i paint", "should i adopt",
    ]).or(verb_only) else {
        return;
    };
    let all = ctx.words();
    if all.any(PREFERENCES).is_some() || all.any(&CRITERIA[1..]).is_some() {
        return;
    }
    // "something lighthearted", "something to read on the plane": a liking or a use;
    // "something good" says nothing.
    let described = m.find("something").and_then(|i| m.w.get(i + 1)).is_some_and(|x| {
        !["good", "nice", "great", "decent", "cool", "special", "different", "new", "interesting", "else"]
            .contains(&x.as_str())
    });
    if described || m.any(&["nothing too", "not too"]).is_some() {
        return;
    }
    // "a good book on the history of Rome", "a movie about whales": a subject is a
    // criterion.
    let subject = m.find(noun).and_then(|i| m.w.get(i + noun.split(' ').count()));
    if subject.is_some_and(|x| ["on", "about", "that", "which", "with", "where"].contains(&x.as_str()))
        || m.any(&["for learning", "to learn", "to help", "that teaches"]).is_some()
    {
        return;
    }
    out.push(finding(
        "recommendation",
        Slot::Criteria,
        "what they like, what it is for, or the budget",
        0.7,
        format!("\"{ask}\" a {noun} with nothing said about taste, use or budget"),
    ));
}

/// A pronoun with nothing to refer to, in the first message of a conversation.
#[rustfmt::skip]
fn referent(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.has_text() || m.len() > 40 {
        return;
    }
    // "Explain what you said earlier again" as the first message: there is no earlier
    // answer to mean, so it is asked for as a text.
    // "I took the one you mentioned": which one is the question, asked below.
    let one = m
        .any(&["the one you mentioned", "the one you suggested", "the one you gave", "the one from before"])
        .is_some();
    // "the one we talked about": in a first message, "we" had no talk. Only after "the
    // <noun>": "at work we talked about microservices" is a talk of the user's.
    // "the movie we talked about last week, Inception": named, and "we" are people.
    let ours = m.any(WE_TALKED).filter(|_| !m.has_name());
    if let Some(q) = m.any(&[
        "what you said", "you said earlier", "you mentioned", "you told me", "your last answer",
        "your previous answer", "your earlier answer", "what you wrote", "you explained",
        "your explanation", "your last message", "your previous message", "your last reply",
    ]).or(ours) {
        // "that show you told me about", "the thing you mentioned": which show, which
        // thing is the question, not the earlier answer as a text.
        let noun = m.find(q).filter(|&i| i >= 2).and_then(|i| {
            if ours == Some(q) {
                return talked_of(m, i);
            }
            let det = POINTING.contains(&m.w[i - 2].as_str());
            let noun = m.w[i - 1].as_str();
            let named = !NO_CONTENT.contains(&noun) || ["thing", "one"].contains(&noun);
            (det && named && !TEXT_NOUNS.contains(&noun)).then_some(noun)
        });
        if let Some(noun) = noun.filter(|_| ctx.first) {
            out.push(finding(
                "referent",
                Slot::Referent,
                format!("which {noun} you mean"),
                0.85,
                format!("\"the {noun} {q}\" in the first message: nothing was said before"),
            ));
            return;
        }
        if ctx.first && !one && ours != Some(q) {
            out.push(finding(
                "referent",
                Slot::Text,
                "the earlier answer (this conversation has none)",
                0.85,
                format!("\"{q}\" in the first message: nothing was said before"),
            ));
            return;
        }
    }
    if m.has_person_name() {
        return;
    }
    // "Who is he exactly?": a question about who someone is, with no name anywhere, asks
    // for the one thing the conversation does not say, even after "my friend …".
    if let Some(q) = m.any(&[
        "who is he", "who's he", "who is she", "who's she", "who was he", "who was she",
        "who are they", "who were they", "who is this guy", "who is that guy", "who's that guy",
        "who is this person", "who is that person", "who is this woman", "who is that woman",
    ]) {
        out.push(finding(
            "referent",
            Slot::Referent,
            format!("who \"{}\" is", q.rsplit(' ').next().unwrap_or("they")),
            0.9,
            format!("\"{q}\" asks who someone is, and no one is named"),
        ));
        return;
    }
    // "Did they win the game last night?": "they" as a side in a contest is a team or a
    // party, never people in general.
    if let Some(c) = m.any(&[
        "did they win", "did they lose", "they won", "they lost", "did they beat",
        "did they make the playoffs", "did they qualify", "did they score", "did they draw",
    ]) {
        if !m.has_name() {
            out.push(finding(
                "referent",
                Slot::Referent,
                "who \"they\" are",
                0.85,
                format!("\"{c}\": a side in a contest no one named"),
            ));
            return;
        }
    }
    // "Can you tell me more about it?" as a first message: the "it" is all there is.
    if let Some(q) = m.any(&[
        "more about it", "more about that", "tell me about it", "what do you know about it",
        "what do you think of it", "what do you think about it", "what's it about",
        "what is it about", "your thoughts on it", "heard about it",
    ]) {
        if !m.has_name() {
            out.push(finding(
                "referent",
                Slot::Referent,
                "what \"it\" refers to",
                0.85,
                format!("\"{q}\" with nothing in the conversation for \"it\" to be"),
            ));
            return;
        }
    }
    // "Is it safe to eat?", "How do I turn it off?", "Is that normal for a 3-year-old?":
    // the thing itself is never said.
    let safe_to = (0..m.len().saturating_sub(4)).any(|i| {
        m.w[i..i + 4].join(" ") == "is it safe to" && i + 5 == m.len()
    });
    // "smells a bit off but is it still safe to eat": only words of how it seems
    // before.
    const SEEMS: &[&str] = &[
        "smells", "smell", "looks", "look", "tastes", "taste", "seems", "feels", "a", "bit",
        "little", "off", "weird", "funny", "strange", "odd", "but", "and", "so", "ok", "okay",
        "hmm", "slightly", "kinda", "kind", "of",
    ];
    let still_safe = (0..m.len()).find_map(|i| {
        let k = m.w[i..].iter().take(4).position(|x| ["safe", "ok", "okay", "fine"].contains(&x.as_str()))? + i;
        let opens = m.w[i..k].join(" ");
        let asks = ["is it still", "is it really", "is it even", "is it"].contains(&opens.as_str());
        let eaten = m.w.get(k + 1).is_some_and(|x| x == "to")
            && m.w.get(k + 2).is_some_and(|x| ["eat", "drink", "use", "wear"].contains(&x.as_str()))
            && k + 3 == m.len();
        (asks && eaten && m.w[..i].iter().all(|x| SEEMS.contains(&x.as_str())))
            .then_some("is it safe to")
    });
    // "How long does it take to charge fully?": the "it" of a thing's own process.
    let process = (0..m.len()).find_map(|i| {
        let opens = m.w.get(i..i + 5).is_some_and(|p| p.join(" ") == "how long does it take");
        let verb = m.w.get(i + 6).filter(|_| m.w.get(i + 5).is_some_and(|t| t == "to"))?;
        #[rustfmt::skip]
        const OWN: &[&str] = &[
            "charge", "heal", "cook", "dry", "cure", "set", "thaw", "defrost", "boil", "arrive",
            "ship", "load", "install", "recover", "ripen", "germinate", "sprout", "cool", "warm",
        ];
        let rest = &m.w[i + 7..];
        (opens && i == 0 && OWN.contains(&verb.as_str())
            && rest.iter().all(|x| ["fully", "completely", "properly", "up", "down", "out"].contains(&x.as_str())))
            .then_some("how long does it take")
    });
    // "Send me the link to that again?", "Why is it still not done.": a thing asked
    // after as if already shared.
    let again = m.any(&[
        "link to that", "link to it", "link for that", "that link again", "send it again",
        "send that again", "resend it", "resend that", "is it still not", "it still isn't",
        "it still isnt", "why isn't it done", "why isnt it done", "is it done yet", "is it ready yet",
        "is it finished yet", "the thingy", "the whatsit", "the doohickey", "thingamajig",
    ])
    // "get the thing off the other thing": two things, neither named.
    .or((m.has("the thing") && m.has("the other thing")).then_some("the thing … the other thing"));
    let q = m
        .any(&[
            "turn it off", "turn it on", "turn that off", "turn this off", "is that normal",
            "is this normal", "is it normal", "the same thing but", "do the same thing",
            "do the same for", "same thing but for", "did that come out", "did it come out",
        ])
        .or(safe_to.then_some("is it safe to"))
        .or(still_safe)
        .or(process);
    // A longer message tells what "that" is ("…she says it sleeps 18 hours a day. Is that
    // normal for them?"); "smells a bit off but is it still safe to eat" says how it
    // seems, not what it is; a thing asked after "again" may come with a story.
    let short = if still_safe.is_some() { 14 } else { 10 };
    let asked = again
        .filter(|_| m.len() <= 30)
        .map(|q| (q, &["that", "it", "thing", "thingy", "whatsit", "doohickey", "thingamajig"][..], "it"))
        .or_else(|| {
            q.filter(|_| m.len() <= short)
                .map(|q| (q, &["that", "this", "it"][..], "the same thing"))
        });
    if let Some((q, pronouns, default)) = asked.filter(|_| ctx.first && !m.has_name()) {
        let p = pronouns
            .iter()
            .copied()
            .find(|p| q.split(' ').any(|w| w == *p))
            .unwrap_or(default);
        let p = if p == "thing" { "the thing" } else { p };
        out.push(finding(
            "referent",
            Slot::Referent,
            format!("what \"{p}\" refers to"),
            0.85,
            format!("\"{q}\" with nothing in the conversation for it to be"),
        ));
        return;
    }
    // "summarize the latest episode": a part of a show that is never named. "the last
    // episode", "the latest season", "episode 3"; not "in the season" (of the year),
    // "last season" (a team's), nor "the last episode of severance". A chapter is not
    // asked here: "Summarise chapter 7" asks for the chapter's text, which the user has.
    const PARTS: &[&str] = &["episode", "episodes", "season", "finale"];
    let before = |i: usize, k: usize| i.checked_sub(k).map(|p| m.w[p].as_str());
    let part = (0..m.len()).find(|&i| {
        let which = ["latest", "newest"].contains(&before(i, 1).unwrap_or(""))
            || (["last", "new", "final"].contains(&before(i, 1).unwrap_or(""))
                && before(i, 2) == Some("the"))
            || m.w.get(i + 1).is_some_and(|n| Words::is_number(n));
        let of_named = m.w.get(i + 1).is_some_and(|n| n == "of")
            && m.w.get(i + 2).is_some_and(|n| !POINTING.contains(&n.as_str()));
        PARTS.contains(&m.w[i].as_str()) && which && !of_named
    });
    if let Some(i) = part.filter(|_| ctx.first && !m.has_name()) {
        out.push(finding(
            "referent",
            Slot::Referent,
            "which show you mean",
            0.85,
            format!("\"{}\" of a show the message never names", m.w[i]),
        ));
        return;
    }
    // "any books like the one i just finished?": more of a thing the user had and never
    // names. ("a phone like the one I had, a Pixel 6" names it.)
    const HAD: &[&str] = &[
        "finished", "read", "watched", "saw", "seen", "played", "heard", "bought", "tried",
        "had", "loved", "liked", "used", "ate", "visited", "listened", "got",
    ];
    let one_had = ["the one i", "the last one i", "the one we", "the last one we"]
        .into_iter()
        .find(|q| {
            m.find(q).is_some_and(|i| {
                let k = i + q.split(' ').count();
                m.w[k..].iter().take(2).any(|x| HAD.contains(&x.as_str()))
            })
        })
        .map(|q| (q.to_string(), "one"))
        // "just finished the series she was obsessed with and wants something similar":
        // a kind of work someone had, never named.
        .or_else(|| {
            (1..m.len().saturating_sub(2)).find_map(|i| {
                let work = [
                    "series", "book", "books", "show", "film", "movie", "game", "author", "band",
                    "trilogy", "saga", "novel", "novels", "podcast", "album", "comic", "manga",
                    "anime",
                ]
                    .iter()
                    .find(|w| m.w[i] == **w)
                    .filter(|_| m.w[i - 1] == "the");
                let who = ["she", "he", "they", "i", "we"].contains(&m.w[i + 1].as_str());
                let had = m.w[i + 2..(i + 5).min(m.len())]
                    .iter()
                    .any(|x| HAD.contains(&x.as_str()) || ["obsessed", "into", "hooked"].contains(&x.as_str()));
                work.filter(|_| who && had)
                    .map(|w| (format!("the {w} {}", m.w[i + 1]), *w))
            })
        });
    // More like it is asked for: "the one I tried last week was too dry" asks no match.
    let alike = m
        .any(&["like the", "similar to", "another", "more like", "something like", "like it", "like that", "something similar", "similar"])
        .is_some();
    if let Some((q, noun)) = one_had.filter(|_| ctx.first && alike && !m.has_name()) {
        out.push(finding(
            "referent",
            Slot::Referent,
            format!("which {noun} you mean"),
            0.85,
            format!("\"{q} …\": a thing of the user's the conversation never names"),
        ));
        return;
    }
    // "Can you make the one from before shorter?" as a first message: nothing came before.
    if let Some(q) = m.any(&[
        "the one from before", "the one you mentioned", "the one you suggested",
        "the one you gave", "the second option", "the first option", "the last option",
        "the same one", "the other version",
    ]) {
        if ctx.first && !m.has_name() {
            out.push(finding(
                "referent",
                Slot::Referent,
                format!("what \"{q}\" refers to"),
                0.85,
                format!("\"{q}\" in the first message: nothing was given before"),
            ));
            return;
        }
    }
    // "Should I send it today or wait until Monday?", "My doctor told me to take it with
    // food": "it" as the object of a verb that acts on a thing in hand, with nothing
    // before it that could be that thing, and nothing after that says what it is.
    if let Some((verb, it)) = object_it(m).filter(|_| ctx.first) {
        out.push(finding(
            "referent",
            Slot::Referent,
            format!("what \"{it}\" refers to"),
            0.85,
            format!("\"{verb} {it}\": nothing in the conversation for \"{it}\" to be"),
        ));
        return;
    }
    if let Some(verb) = elided_object(m).filter(|_| ctx.first) {
        out.push(finding(
            "referent",
            Slot::Referent,
            format!("what you want to {verb}"),
            0.85,
            format!("\"safe to {verb} with\": what is taken is never named"),
        ));
        return;
    }
    // Past here a capitalized name ("the Eiffel Tower") can be what "it" stands for.
    let singular = m.w.iter().any(|x| {
        PERSON_PRONOUNS.contains(&x.as_str()) && !THEY_FORMS.contains(&x.as_str())
    });
    if m.has_name() && !singular {
        return;
    }
    let content: Vec<&str> = m.content(&[NO_CONTENT, PERSON_PRONOUNS]);
    if let Some(p) = m.w.iter().find(|x| PERSON_PRONOUNS.contains(&x.as_str())) {
        // "What did he say?": no one named, no "my friend" to be "he". "They" is often
        // people in general ("why do they put fluoride in water?"), so it needs a
        // message that says almost nothing else.
        // "my neighbour's dog … get him used to me": a pet or a person's possessive is
        // someone for "him" to be.
        // "My 9 year old … she": a child by age.
        let by_age = m.any(&["year old", "year-old", "yr old", "yo"]).is_some()
            || m.w.iter().any(|x| x.ends_with("-year-old") || x.ends_with("-yr-old"));
        let someone = m.any(PERSON_NOUNS).is_some()
            || m.any(PET_NOUNS).is_some()
            || by_age
            || m.w.iter().any(|x| PERSON_NOUNS.contains(&without_possessive(x)));
        let generic = THEY_FORMS.contains(&p.as_str());
        if !someone
            && (!generic || content.len() <= 2)
            && (generic || m.len() <= 40)
            && !(m.len() > 14 && generic)
        {
            // "Why did they ban it?": what "it" is matters more than who "they" are, and
            // names them too (what was banned says by whom). Asked who "they" are, Qwen
            // asked only that, which a reader found not enough.
            let (missing, why) = if generic && m.has("it") {
                (
                    "what \"it\" refers to".to_string(),
                    format!("\"it\" and \"{p}\" refer to nothing named in the conversation"),
                )
            } else {
                (
                    format!("who \"{p}\" is"),
                    format!("\"{p}\" refers to no one named in the conversation"),
                )
            };
            out.push(finding("referent", Slot::Referent, missing, 0.85, why));
            return;
        }
    }
    // "Was it a good movie? My friend keeps recommending it.": a thing said to be a
    // movie, a book, a place, and never named.
    if !m.has_name() {
        let kind = (0..m.len().saturating_sub(2)).find_map(|i| {
            let is = ["is", "was", "isn't", "wasn't"].contains(&m.w[i].as_str());
            let pron = ["it", "that", "this"].contains(&m.w[i + 1].as_str());
            let article = ["a", "an"].contains(&m.w[i + 2].as_str());
            (is && pron && article)
                .then(|| {
                    m.w[i + 3..(i + 6).min(m.len())]
                        .iter()
                        .find(|n| REFERENT_NOUNS.contains(&n.as_str()) || is_text_noun(n))
                })
                .flatten()
        });
        if let Some(noun) = kind {
            out.push(finding(
                "referent",
                Slot::Referent,
                format!("which {noun} \"it\" is"),
                0.8,
                format!("a {noun} referred to and never named"),
            ));
            return;
        }
    }
    if m.len() > 14 || m.has_name() {
        return;
    }
    // "Tell me more about that company": a thing pointed at and never named.
    if let Some(i) = m.w.iter().position(|x| x == "that" || x == "this") {
        if let Some(noun) =
            m.w.get(i + 1)
                .filter(|n| REFERENT_NOUNS.contains(&n.as_str()))
        {
            out.push(finding(
                "referent",
                Slot::Referent,
                format!("which {noun} \"{} {noun}\" is", m.w[i]),
                0.8,
                format!("\"{} {noun}\" is never named", m.w[i]),
            ));
            return;
        }
    }
    // "Is this safe to eat?", "What is this?": "this" stands for something the user sees
    // and the model does not.
    if m.len() <= 8 && !ctx.payload {
        let this = m.w.iter().enumerate().find(|(i, x)| {
            ["this", "these"].contains(&x.as_str())
                && m.w.get(i + 1).is_none_or(|n| {
                    NO_CONTENT.contains(&n.as_str()) && !TEXT_NOUNS.contains(&n.as_str())
                })
        });
        if let Some((_, p)) = this {
            out.push(finding(
                "referent",
                Slot::Referent,
                format!("what \"{p}\" refers to"),
                0.8,
                format!("\"{p}\" points at something the conversation does not show"),
            ));
            return;
        }
    }
    if m.len() <= 8 {
        if let Some(p) = m.w.iter().enumerate().find_map(|(i, x)| {
            // "this" before a noun is a determiner ("this book"), unless the noun is
            // empty of content ("this thing").
            let pronoun = THING_PRONOUNS.contains(&x.as_str())
                && m.w
                    .get(i + 1)
                    .is_none_or(|n| NO_CONTENT.contains(&n.as_str()));
            pronoun.then_some(x)
        }) {
            if content.is_empty() {
                // "Where was that filmed?": the verb says what kind of thing "that" is.
                let missing = match THING_KINDS.iter().find(|(verbs, _)| m.any(verbs).is_some()) {
                    Some((_, kind)) => format!("which {kind} \"{p}\" is"),
                    None => format!("what \"{p}\" refers to"),
                };
                out.push(finding(
                    "referent",
                    Slot::Referent,
                    missing,
                    0.85,
                    format!("\"{p}\" refers to nothing in the conversation"),
                ));
            }
        }
    }
}

/// The verb and the pronoun of the first "it" (or "them": "how long should I soak
/// them") that stands for a thing in hand and for nothing the
/// message says (`OBJECT_VERBS`): every word before the verb is a function word, a
/// person, or a word of time or manner (`NO_ANTECEDENT`); no "it's <word>" anywhere
/// says what the thing is, and no name is given. Idioms ("take it easy", "take it
/// from me") are not things in hand.
fn object_it<'w>(m: &'w Words) -> Option<(&'w str, &'w str)> {
    #[rustfmt::skip]
    const IDIOMS: &[&str] = &[
        "easy", "personally", "seriously", "slow", "from", "forward", "you", "that", "we", "they",
    ];
    // "It's homemade chili", "It's ibuprofen": a word of content after "it's" says what
    // the thing is; a name ("from Gmail") may be the thing, or make it not matter.
    let named_after = (0..m.len().saturating_sub(1)).any(|i| {
        let is = m.w[i] == "it's" || m.w[i] == "it" && m.w[i + 1] == "is";
        let k = if m.w[i] == "it's" { i + 1 } else { i + 2 };
        is && m
            .w
            .get(k)
            .is_some_and(|x| !NO_CONTENT.contains(&x.as_str()) || x == "a" || x == "an")
    });
    if m.len() > 25 || named_after || m.has_name() {
        return None;
    }
    let plain = |w: &str| {
        NO_CONTENT.contains(&w)
            // "i should stop taking it": when, not what.
            || ["stop", "keep", "quit", "avoid", "continue"].contains(&w)
            || NO_ANTECEDENT.contains(&w)
            || PERSON_NOUNS.contains(&w)
            || PERSON_PRONOUNS.contains(&w)
            || Words::is_number(w)
    };
    (1..m.len())
        .filter(|&i| {
            ["it", "them"].contains(&m.w[i].as_str()) && OBJECT_VERBS.contains(&m.w[i - 1].as_str())
        })
        .find(|&i| {
            // "take it easy", "pay it forward", "I take it you can't …".
            let idiom = m.w.get(i + 1).is_some_and(|n| IDIOMS.contains(&n.as_str()));
            !idiom && m.w[..i - 1].iter().all(|w| plain(w))
        })
        .map(|i| (m.w[i - 1].as_str(), m.w[i].as_str()))
}

/// "is it safe to take with ibuprofen?", "ok to mix with alcohol?": the thing taken
/// is left out of the sentence, and no word of the message names it (the "it" is the
/// sentence's own, as in "is it safe to swim"). Returns the verb.
fn elided_object<'w>(m: &'w Words) -> Option<&'w str> {
    const JUDGED: &[&str] = &["safe", "ok", "okay", "fine", "alright", "bad", "dangerous"];
    // Not "eat" or "drink": "is it ok to eat with braces" speaks of how.
    const TAKEN: &[&str] = &["take", "mix", "combine"];
    if m.len() > 20 || m.has_name() {
        return None;
    }
    (2..m.len().saturating_sub(1)).find_map(|i| {
        let elided = m.w[i - 1] == "to"
            && JUDGED.contains(&m.w[i - 2].as_str())
            && TAKEN.contains(&m.w[i].as_str())
            && ["with", "together", "alongside"].contains(&m.w[i + 1].as_str());
        // Only what the judgement speaks of may come before: "is it safe to", "is it ok to".
        let plain = m.w[..i - 2].iter().all(|w| {
            ["is", "it", "it's", "was", "would", "be", "really", "still"].contains(&w.as_str())
        });
        (elided && plain).then_some(m.w[i].as_str())
    })
}

/// Verbs that say what kind of thing their object is, and the kind: the note asks
/// "which film or show "that" is" for "Where was that filmed?". Asked what "that"
/// refers to, Qwen asked "which specific location you're referring to", the answer's
/// kind, after every lead.
const THING_KINDS: &[(&[&str], &str)] = &[
    (&["filmed", "directed"], "film or show"),
    (&["painted"], "painting"),
    (&["sung", "sang", "recorded"], "song or record"),
    (&["wrote", "written", "published"], "book or text"),
    (&["built"], "building or structure"),
];

/// A local rule or service ("what's the sales tax here", "which day is trash pickup",
/// "do I need a permit to build a fence") with no place: the answer is the place's.
#[rustfmt::skip]
fn local_facts(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    let Some(cue) = m.any(&[
        "trash pickup", "trash day", "garbage pickup", "garbage collection", "bin day",
        "recycling pickup", "recycling day", "sales tax", "permit", "zoning", "minimum wage",
        "drinking age", "speed limit", "buses running", "trains running", "last bus", "last train",
    ]) else {
        return;
    };
    // The user's own place: "my", "here", or a question of when ("which day is trash pickup").
    let local = m
        .any(&[
            "here", "my", "i", "we", "our", "tonight", "today", "when is", "which day", "what day",
            "how late",
        ])
        .is_some();
    if !local
        || ctx.words().has_place()
        || m.any(&["what is a", "what's a", "explain", "how does", "why", "history"]).is_some()
    {
        return;
    }
    out.push(finding(
        "live",
        Slot::Location,
        "the location (city or area)",
        0.8,
        format!("\"{cue}\" differs from place to place, and no place is named"),
    ));
}

/// What a call is made with, not where from: "calling from Zoom".
#[rustfmt::skip]
const APPS: &[&str] = &[
    "zoom", "whatsapp", "skype", "teams", "facetime", "meet", "slack", "discord", "signal",
    "telegram", "viber", "messenger", "webex",
];

/// A volume converted to a weight, or back, with nothing said of what is measured:
/// "convert 5 cups to grams". A cup of flour weighs about 120 g and one of honey
/// about 340 g: the answer turns on the ingredient.
#[rustfmt::skip]
fn volume_to_weight(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    const VOLUME: &[&str] = &[
        "cup", "cups", "tablespoon", "tablespoons", "tbsp", "teaspoon", "teaspoons", "tsp", "ml",
        "milliliters", "millilitres", "liter", "liters", "litre", "litres", "quart", "quarts",
        "pint", "pints", "gallon", "gallons",
    ];
    const WEIGHT: &[&str] = &[
        "gram", "grams", "g", "kg", "kilogram", "kilograms", "ounce", "ounces", "oz", "pound",
        "pounds", "lb", "lbs",
    ];
    // The words of asking for a conversion, which name nothing measured.
    const ASKING: &[&str] = &[
        "convert", "conversion", "to", "into", "in", "how", "many", "much", "is", "are", "a",
        "an", "the", "of", "please", "pls", "what", "what's", "whats", "does", "do", "weigh",
        "weighs", "equal", "equals", "that", "it", "me", "can", "you", "for", "would", "be",
    ];
    let volume = m.any(VOLUME).is_some();
    let weight = m.any(WEIGHT).is_some();
    // "8 fl oz to cups" is volume to volume.
    let fluid = m.any(&["fl", "fluid"]).is_some();
    if !ctx.first || !volume || !weight || fluid || m.len() > 15 {
        return;
    }
    let named = m.w.iter().any(|w| {
        !VOLUME.contains(&w.as_str())
            && !WEIGHT.contains(&w.as_str())
            && !ASKING.contains(&w.as_str())
            && !Words::is_number(w)
    });
    if !named {
        // One thing, asked for by name.
        out.push(
            finding(
                "math",
                Slot::Items,
                "the ingredient being measured",
                0.8,
                "converts a volume to a weight without saying what is measured",
            )
            .worded(Wording::AsWritten),
        );
    }
}

/// A measure to convert with nothing to convert it to: "convert 30 degrees" may be
/// Celsius to Fahrenheit or degrees to radians.
fn bare_conversion(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    let Some(i) = m.find("convert") else { return };
    let rest: Vec<&str> = m.w[i + 1..]
        .iter()
        .map(String::as_str)
        .filter(|x| !["pls", "plz", "please", "for", "me", "thx", "thanks"].contains(x))
        .collect();
    // Units with more than one reading: degrees of heat or of angle, pounds of weight
    // or of money, fluid or dry ounces, short or metric tons, US or imperial gallons.
    const AMBIGUOUS: &[&str] = &[
        "degrees", "degree", "pounds", "pound", "lbs", "lb", "ounces", "ounce", "oz", "tons",
        "ton", "gallons", "gallon", "cups", "cup", "quarts", "quart", "pints", "pint",
    ];
    // A number and such a unit, and nothing after.
    let bare =
        matches!(rest.as_slice(), [n, unit] if Words::is_number(n) && AMBIGUOUS.contains(unit));
    if !ctx.first || ctx.payload || !bare {
        return;
    }
    out.push(
        finding(
            "math",
            Slot::Criteria,
            "the unit to convert to",
            0.8,
            format!("\"convert {}\" names no unit to convert to", rest.join(" ")),
        )
        .worded(Wording::AsWritten),
    );
}

/// A length in a sum with no unit: "the fence is 40 long, panels are 1.8m wide: how many
/// panels?". Metres or feet change the answer.
fn unitless_length(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.payload || !out.is_empty() || m.any(MATH_CUES).is_none() {
        return;
    }
    let digits = |x: &str| !x.is_empty() && x.chars().all(|c| c.is_ascii_digit() || c == '.');
    // "40 long", not "2 x 40 long" (a size whose unit comes after it).
    let bare = (1..m.len()).find(|&i| {
        ["long", "wide", "tall", "high", "deep"].contains(&m.w[i].as_str())
            && digits(&m.w[i - 1])
            && (i < 2 || !["x", "by"].contains(&m.w[i - 2].as_str()))
            // "a Tesla Model 3 Long Range": the number is part of a name.
            && (i < 2
                || !(m.cased[i - 2].starts_with(char::is_uppercase)
                    || ["model", "version", "series", "gen", "mark", "mk", "no", "number", "type"]
                        .contains(&m.w[i - 2].as_str())))
    });
    let Some(i) = bare else { return };
    let n = &m.w[i - 1];
    out.push(
        finding(
            "math",
            Slot::Quantity,
            format!("the unit of the {n} (metres, feet or another)"),
            0.75,
            format!("\"{n} {}\" gives a length with no unit", m.w[i]),
        )
        .worded(Wording::AsWritten),
    );
}

/// What the fuel for trips costs, with the car's economy but no distance: "I drive to
/// my mum's and back every weekend, how much do I spend on petrol? 45 mpg".
#[rustfmt::skip]
fn fuel_cost(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.payload || !out.is_empty() {
        return;
    }
    let fuel = m.any(&["petrol", "gas", "fuel", "diesel"]).is_some()
        && m.any(&["how much", "cost", "costs", "spend", "spending", "spent"]).is_some()
        && m.any(&["mpg", "miles per gallon", "l/100km", "km per litre", "km/l", "per gallon", "per litre"]).is_some();
    let distance = m.any(&["km", "kilometres", "kilometers", "miles", "mile", "mi"]).is_some();
    if !fuel || distance {
        return;
    }
    let price = ctx.all.contains(['$', '€', '£', '¥']);
    out.push(
        finding(
            "math",
            Slot::Quantity,
            match price {
                true => "the distance of the trip",
                false => "the distance of the trip (and the fuel price)",
            },
            0.75,
            "a fuel cost from the car's economy, with no distance",
        )
        .worded(Wording::AsWritten),
    );
}

/// A time converted between the user's zone and someone else's ("what time is 3pm my
/// time for my client?") with neither place named.
#[rustfmt::skip]
fn time_zones(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    // "my client in Tokyo … what time is that for me?", "a good time to call my mom
    // in australia": the other side's place is given, the user's is not.
    const OWN_PLACE: &[&str] = &[
        "i'm in", "i am in", "im in", "i live in", "we're in", "we are in", "based in", "here in",
        "i'm on", "i am on", "my time zone is", "my timezone is",
    ];
    const ZONES: &[&str] = &["est", "pst", "cst", "mst", "gmt", "utc", "cet", "bst", "ist", "jst", "aest"];
    // "what time should I call from London": the user calls from a named place.
    let calls_from = (1..m.len().saturating_sub(1)).any(|i| {
        m.w[i] == "from"
            && ["call", "calling", "phone", "phoning", "ring", "ringing", "dial"].contains(&m.w[i - 1].as_str())
            && m.cased[i + 1].starts_with(char::is_uppercase)
            && !APPS.contains(&m.w[i + 1].as_str())
    });
    // "10am my time (Chicago)": the zone named right after, in brackets.
    let zone_after = {
        let raw = m.raw.to_lowercase();
        ["my time (", "my local time ("].iter().any(|c| raw.contains(c))
    };
    let lives = m.any(OWN_PLACE).is_some() || calls_from || zone_after;
    let own_place_said = lives || m.any(ZONES).is_some();
    // "what time is 3pm EST in my time": the zone converted from is given, the user's
    // own is not (an "EST" here is the other side's). "in my time off" is no zone.
    if let Some(c) = m
        .any(&[
            "in my time", "to my time", "in my local time", "to my local time", "my local time",
            "in my timezone", "to my timezone", "in my time zone", "to my time zone",
        ])
        .filter(|_| !lives && ctx.first && has_time_of_day(m))
        // "3pm my time (Chicago)": the zone named right after.
        .filter(|c| {
            let after = m.find(c).map_or(0, |i| i + c.split(' ').count());
            !m.cased.get(after).is_some_and(|n| n.starts_with(char::is_uppercase))
                && m.w.get(after).is_none_or(|n| n != "off")
        })
    {
        out.push(finding(
            "live",
            Slot::Location,
            "where I am (my city or time zone)",
            0.8,
            format!("\"{c}\": a time converted into the user's zone, which is not named"),
        ));
        return;
    }
    // "a slot … within business hours for both of us" with "our Singapore office":
    // the office's hours are known, the user's are not.
    if let Some(c) = m
        .any(&[
            "for me", "my time", "good time to call", "best time to call", "time to call",
            "when should i call", "what time should i call", "good time to phone",
            "for both of us", "business hours for both", "working hours for both",
        ])
        .filter(|_| ctx.words().has_place() && !own_place_said && ctx.first)
        .filter(|_| {
            m.any(&[
                "what time", "when is", "when should", "time to call", "time to phone", "time to ring",
                "pick a slot", "pick a time", "find a slot", "find a time",
            ])
            .is_some()
        })
    {
        if m.has("in") || m.has("their time") || m.any(&["office", "branch", "headquarters", "hq"]).is_some() {
            out.push(finding(
                "live",
                Slot::Location,
                "where I am (my city or time zone)",
                0.8,
                format!("\"{c}\": the other side's place is given, the user's is not"),
            ));
            return;
        }
    }
    // "I'm in Denver. My son is calling from his base overseas at 0600 his time": the
    // user's place is given, the other side's is not (one name, and it is the user's).
    let names = (0..m.len())
        .filter(|&i| m.cased[i].starts_with(char::is_uppercase) && !m.sentence_initial[i] && m.w[i] != "i")
        .count();
    if let Some(c) = m
        .any(&["his time", "her time", "their time", "his local time", "her local time", "their local time"])
        .filter(|_| lives && ctx.first && names <= 1 && has_time_of_day(m))
    {
        out.push(finding(
            "live",
            Slot::Location,
            "where the other person is (their city or time zone)",
            0.8,
            format!("\"{c}\": the user's place is given, the other side's is not"),
        ));
        return;
    }
    let Some(cue) = m.any(&[
        "my time", "their time", "his time", "her time", "time difference", "time zone",
        "timezone", "time zones", "timezones", "my timezone", "my time zone",
    ]) else {
        return;
    };
    if m.any(&["what time", "when", "convert", "what's", "what is", "how many hours"]).is_none()
        || ctx.words().has_place()
        || m.any(&["explain", "why", "how do time zones", "what are time zones"]).is_some()
    {
        return;
    }
    // The user's own place is only one of the two.
    out.push(
        finding(
            "live",
            Slot::Location,
            "the two places (cities or time zones)",
            0.8,
            format!("\"{cue}\" converts a time between places the message does not name"),
        )
        .worded(Wording::AsWritten),
    );
}

/// "my Amazon order", "my checking account balance": the thing (`OWN_ACCOUNTS`) only
/// the user's own accounts hold, named after "my" and at most three other words.
fn own_account(m: &Words) -> Option<&'static str> {
    (0..m.len()).filter(|&i| m.w[i] == "my").find_map(|i| {
        m.w[i + 1..(i + 5).min(m.len())]
            .iter()
            .find_map(|x| OWN_ACCOUNTS.iter().copied().find(|a| a == x))
    })
}

/// Live data: the weather, opening hours, the next train, the time.
#[rustfmt::skip]
/// Two currencies in one message and no rate between them: "how much is 250 dollars
/// in euros", not "if 1 USD is 0.92 EUR …", "1 eur = 162 jpy" or "1.08 dollars per
/// euro".
fn converts_currency(m: &Words) -> bool {
    const CURRENCIES: &[(&str, &str)] = &[
        ("dollar", "usd"), ("dollars", "usd"), ("usd", "usd"), ("euro", "eur"), ("euros", "eur"),
        ("eur", "eur"), ("yen", "jpy"), ("jpy", "jpy"), ("pound", "gbp"), ("pounds", "gbp"),
        ("gbp", "gbp"), ("sterling", "gbp"), ("rupee", "inr"), ("rupees", "inr"), ("inr", "inr"),
        ("peso", "mxn"), ("pesos", "mxn"), ("yuan", "cny"), ("rmb", "cny"), ("franc", "chf"),
        ("francs", "chf"), ("chf", "chf"), ("baht", "thb"), ("lira", "try"), ("zloty", "pln"),
        ("krona", "sek"), ("kronor", "sek"), ("krone", "nok"), ("rand", "zar"),
        ("dirham", "aed"), ("dirhams", "aed"), ("ringgit", "myr"), ("won", "krw"),
    ];
    let mut seen: Vec<&str> = Vec::new();
    for (i, x) in m.w.iter().enumerate() {
        // "won" is a currency only after a number ("50,000 won").
        if x == "won" && !(i > 0 && Words::is_number(&m.w[i - 1])) {
            continue;
        }
        if let Some(&(_, code)) = CURRENCIES.iter().find(|(w, _)| w == x) {
            // "Canadian dollars" are not US dollars.
            let code = match (code, i.checked_sub(1).map(|j| m.w[j].as_str())) {
                ("usd", Some("canadian")) => "cad",
                ("usd", Some("australian")) => "aud",
                ("usd", Some("singapore")) => "sgd",
                ("usd", Some("hong")) | ("usd", Some("kong")) => "hkd",
                _ => code,
            };
            if !seen.contains(&code) {
                seen.push(code);
            }
        }
    }
    let rate_given = m.raw.contains('=')
        || m.has("per")
        || m
            .any(&[
                "rate is", "rate of", "rate was", "at a rate", "at the rate", "rate being",
                "if 1", "if one", "assuming 1", "assume 1", "assuming a rate", "rate at",
            ])
            .is_some();
    seen.len() >= 2 && !rate_given
}

/// "how many days have I got left? it's due Friday the 13th", "how long until June 3":
/// counted from today, which no model knows unless told ("Today is 2 May"). The date
/// counted to is given (without it, `scheduling` asks for the date).
fn countdown(m: &Words, all: &Words) -> bool {
    m.any(&[
        "how many days",
        "how many weeks",
        "how many hours",
        "how many months",
        "how long",
    ])
    .is_some()
        && m.any(&["left", "until", "till", "away", "to go", "remaining"])
            .is_some()
        && m.any(&[
            "between",
            "from",
            "after",
            "since",
            "before",
            "today is",
            "today's date is",
            "if it's",
            "if it is",
            "if today",
        ])
        .is_none()
        && (names_a_day(all)
            || all.any(DATE_WORDS).is_some()
            || all.w.iter().any(|x| Words::is_ordinal(x)))
}

/// "rn" is "right now" ("As an RN, …" is a nurse, in capitals): live when asked of a
/// price or a market ("how much is gold rn", "how's tesla stock rn"), of a place open
/// ("is the pharmacy open rn") or of where a thing is at ("where's btc at rn"). The cue
/// it counts as.
fn right_now(m: &Words) -> Option<&'static str> {
    let i =
        m.w.iter()
            .zip(&m.cased)
            .position(|(w, c)| w == "rn" && c != "RN")?;
    let before = i.checked_sub(1).map_or("", |j| m.w[j].as_str());
    if before == "open" {
        return Some("open rn");
    }
    let market = m.any(&[
        "how much", "price", "prices", "worth", "cost", "costs", "rate", "rates", "trading",
        "bitcoin", "btc", "ethereum", "crypto", "stock", "stocks", "shares", "market",
    ]);
    if market.is_some() {
        return Some("price rn");
    }
    ["at", "doing"].contains(&before).then_some("at rn")
}

/// "What's the latest iPhone model out?", "what are reviewers saying about the newest
/// Pixel phone": which is newest changed after the model's training. A product, a
/// release or a named thing within two words of "latest" or "newest".
fn newest(m: &Words) -> Option<&'static str> {
    #[rustfmt::skip]
    const RELEASES: &[&str] = &[
        "phone", "phones", "iphone", "pixel", "galaxy", "model", "models", "version", "release",
        "console", "laptop", "macbook", "ipad", "tablet", "update", "chip", "gpu", "car", "album",
        "film", "movie", "book", "game", "smartphone", "watch", "headphones", "earbuds",
    ];
    (0..m.len())
        .find_map(|i| {
            let new = ["latest", "newest"].contains(&m.w[i].as_str());
            let after = &m.w[i + 1..(i + 3).min(m.len())];
            let released = after.iter().any(|x| RELEASES.contains(&x.as_str()))
                || m.cased
                    .get(i + 1)
                    .is_some_and(|c| c.starts_with(char::is_uppercase));
            (new && released).then_some("the newest release")
        })
        // "upgrade to the latest version": the tool installs whichever it is; "what's
        // the newest LTS? want to upgrade" asks which it is.
        .filter(|_| {
            m.any(&["upgrade", "update to", "install", "download", "migrate"])
                .is_none()
                || m.any(&["what's the", "what is the", "whats the", "which is the"])
                    .is_some_and(|q| {
                        m.find(q)
                            .zip(m.any(&["latest", "newest"]).and_then(|n| m.find(n)))
                            .is_some_and(|(a, b)| b == a + q.split(' ').count())
                    })
        })
}

/// "Good time to buy a used car at the moment?": a market asked of now (the cues
/// "is it a good time to buy" carry their own "now").
fn market_now(m: &Words) -> Option<&'static str> {
    let deal = m.any(&[
        "time to buy",
        "time to sell",
        "time to invest",
        "buy now or",
        "sell now or",
    ]);
    let now = m.any(&[
        "at the moment",
        "right now",
        "currently",
        "these days",
        "this month",
        "atm",
    ]);
    deal.and(now).map(|_| "market now")
}

fn live(m: &Words, ctx: &Context, out: &mut Vec<Finding>) {
    if ctx.payload {
        return;
    }
    // "port my script to Go; it scrapes a weather site every hour": a program that
    // fetches the data, not a question about it.
    if m.any(&[
        "weather station",
        "script",
        "scraper",
        "scrapes",
        "scrape",
        "program",
        "code",
        "function",
        "app",
        "api",
        "port",
        "snippet",
        "one-liner",
        "prints",
        "print out",
        "python",
        "javascript",
        "typescript",
        "bash",
        "powershell",
        "sql",
        "regex",
    ])
    .is_some()
    {
        return;
    }
    // "Roughly how many euros is 500 US dollars these days?": a conversion needs
    // today's rate (seven authors of fifteen wrote one, each control with its rate).
    // "what makes the dollar go up against the euro" asks how rates move, not one.
    let how_rates_move = m
        .any(&[
            "how are",
            "how do",
            "how does",
            "what makes",
            "what causes",
            "why",
            "explain",
        ])
        .is_some();
    if converts_currency(m) && !how_rates_move {
        out.push(finding(
            "live",
            Slot::LiveData,
            "today's exchange rate",
            0.9,
            "converts between two currencies and gives no rate",
        ));
        return;
    }
    // "When does the farmers market open?": opening hours are live too.
    let opens = m.has("open")
        && m.any(&[
            "when does",
            "what time does",
            "is the",
            "are the",
            "when do",
            "does the",
            "is it",
        ])
        .is_some();
    // "what should i wear tomorrow": the day's weather decides; "what should I wear to
    // my interview tomorrow" is about the occasion.
    let wear = m
        .any(&[
            "what should i wear",
            "what to wear",
            "should i wear",
            "do i need a jacket",
            "do i need a coat",
        ])
        .filter(|_| {
            m.any(&["wear to", "wear for", "wear at", "wear on"])
                .is_none()
        })
        .filter(|_| {
            m.any(&[
                "today",
                "tomorrow",
                "tonight",
                "this weekend",
                "this afternoon",
                "this evening",
            ])
            .is_some()
        });
    // "where is tesla stock at": a price "at", ending the question.
    let stock_at = m.w.len() >= 2
        && m.w[m.len() - 1] == "at"
        && ["stock", "stocks", "shares"].contains(&m.w[m.len() - 2].as_str());
    let Some(cue) = market_now(m)
        .or(m.any(LIVE_CUES))
        .or(right_now(m))
        .or(newest(m))
        .or(stock_at.then_some("stock at"))
        .or(countdown(m, &ctx.words()).then_some("days left"))
        .or(wear)
        .or(opens.then_some("open"))
        // "my order total is $45, what's a 15% tip?" gives what it asks about.
        .or(own_account(m).filter(|_| m.numbers() == 0))
    else {
        return;
    };
    // "forecast says tomorrow in Lyon will be 9°C with showers": the user gives it.
    if m.raw.contains('°')
        || m.any(&[
            "forecast says",
            "forecast said",
            "forecast shows",
            "app says",
            "weather says",
            "forecast is for",
        ])
        .is_some()
    {
        return;
    }
    // "Bitcoin is at $64,000 right now": the user gives the price ("bought it at
    // $30,000" is no price of now, and "how much is $100 in euros" asks for one).
    let raw = m.raw.to_lowercase();
    let states_price = [
        "is at ",
        "'s at ",
        "are at ",
        "is now ",
        "is currently ",
        "is trading at ",
    ]
    .iter()
    .any(|p| {
        raw.match_indices(p)
            .any(|(i, _)| raw[i + p.len()..].starts_with(['$', '€', '£', '¥']))
    });
    if states_price {
        return;
    }
    // "what's 9am PST in my local time?": a stated time converted, not the time now.
    if cue == "local time" && has_time_of_day(m) {
        return;
    }
    // "compare merge sort and quicksort on time complexity": "on time" is a train's or
    // a parcel's, never a topic's.
    if [
        "on time",
        "delayed",
        "delays",
        "running late",
        "running normally",
        "running as normal",
    ]
    .contains(&cue)
        && m.any(&[
            "train", "trains", "bus", "buses", "flight", "flights", "plane", "ferry", "tram",
            "delivery", "package", "parcel", "order", "shipment", "subway", "metro", "tube",
        ])
        .is_none()
    {
        return;
    }
    // "Between renting and buying, which makes more sense for me right now?": the
    // user's own situation now, not the world's.
    if cue == "right now"
        && m.any(&[
            "for me",
            "for us",
            "should i",
            "should we",
            "makes more sense",
            "make more sense",
            "worth it",
            "better",
            "i'm",
            "i am",
            "i feel",
            "i have",
        ])
        .is_some()
    {
        return;
    }
    // "a plant for a sunny windowsill": a kind of place, not today's weather; "a sunny
    // raised bed … what should I plant now?" describes the bed however the question is
    // dated.
    let described = m.find(cue).is_some_and(|i| {
        i > 0
            && ["a", "an", "the", "my", "our", "very", "quite", "fairly"]
                .contains(&m.w[i - 1].as_str())
    });
    if ["sunny", "windy"].contains(&cue) && described {
        return;
    }
    if ["sunny", "windy", "storm", "snow", "rain"].contains(&cue)
        && m.any(&[
            "today",
            "tomorrow",
            "tonight",
            "now",
            "this weekend",
            "this afternoon",
            "this evening",
            "this morning",
            "later",
            "will it",
            "is it going",
            "going to",
            "is it",
            "outside",
            "currently",
        ])
        .is_none()
    {
        return;
    }
    // "If it is 15:00 in London, what time is it in Tokyo?" is arithmetic.
    if ["what time is it", "current time", "time is it"].contains(&cue) && m.has_date() {
        return;
    }
    // "Does it rain a lot in Seattle in November?": a month, not today, is climate.
    let month = m.any(&[
        "january",
        "february",
        "march",
        "april",
        "june",
        "july",
        "august",
        "september",
        "october",
        "november",
        "december",
    ]);
    if month.is_some()
        && cue != "days left"
        && m.any(&[
            "today",
            "tomorrow",
            "tonight",
            "now",
            "this week",
            "this weekend",
        ])
        .is_none()
    {
        return;
    }
    // "typical weather in July", "how do forecasts work": general knowledge ("are trains
    // running normally today?" still asks of today's service).
    #[rustfmt::skip]
    const GENERAL: &[&str] = &[
        "typical",
        "typically",
        "usually",
        "usual",
        "average",
        "generally",
        "normally",
        "climate",
        "how do",
        "how does",
        "why",
        "what causes",
        "explain",
        "history",
        "forecast model",
        "write",
        "poem",
        "story",
        "best time",
        "in general",
        "tend to",
        "annual",
        "annually",
        "per year",
        "on average",
        "in season",
        "seasons",
        "which season",
        "what season",
        "a lot",
        "on sundays",
        "on thanksgiving",
        "on christmas",
        "on holidays",
        "on weekends",
        "on public holidays",
        "on new year's",
        "solstice",
        "equinox",
        "roughly",
        "how are",
        "what makes",
    ];
    if GENERAL
        .iter()
        .any(|w| !(*w == "normally" && cue.contains("running")) && m.any(&[*w]).is_some())
    {
        return;
    }
    // "Who won the 2014 World Cup final and what was the score?": a result of a year
    // gone by is history.
    let year = m.w.iter().any(|w| {
        w.len() == 4
            && (w.starts_with("19") || w.starts_with("20"))
            && w.chars().all(|c| c.is_ascii_digit())
    });
    if year && ["the score", "score of the game", "who won the game"].contains(&cue) {
        return;
    }
    let what = match cue {
        "weather" | "forecast" | "rain" | "rain today" | "raining" | "snow" | "snowing"
        | "sunny" | "windy" | "storm" | "umbrella" | "humidity" | "uv index" | "air quality"
        | "pollen" | "what should i wear" | "what to wear" | "should i wear"
        | "do i need a jacket" | "do i need a coat" => "the current weather",
        "what time is it" | "current time" | "time is it" | "local time" => "the current time",
        "today's date" | "what day is it" | "what's the date" | "what is the date"
        | "days left" => "today's date",
        "stock price" | "share price" | "exchange rate" | "gas prices" | "petrol prices"
        | "bitcoin worth" | "bitcoin price" | "price of bitcoin" | "btc price"
        | "ethereum price" | "price of ethereum" | "stock market today" | "market today"
        | "trading at" | "worth today" | "price today" | "stock at" | "price rn" | "market now" => {
            "today's prices"
        }
        "breaking news" | "headlines" => "today's news",
        "the newest release" => "what the newest release is now",
        _ if OWN_ACCOUNTS.contains(&cue) || cue.contains("calendar") => {
            "what is in my own accounts (orders, calendar, mail, bank)"
        }
        "score of the game" | "the score" | "who won the game" | "who won last night" => {
            "recent results"
        }
        "who's winning" | "whos winning" | "who is winning" => "the live score",
        "the wait in" | "how long is the wait" | "wait times" | "waiting times" => {
            "the waiting time now"
        }
        "at the mart" | "prices this week" => "this week's prices",
        _ if cue.contains("last night") => "recent results",
        "news today" | "latest news" | "today's news" => "today's news",
        _ if cue.contains("open") || cue == "closing time" => "whether it is open right now",
        _ if cue.starts_with("next ")
            || cue == "delayed"
            || cue.contains("running")
            || cue == "on time" =>
        {
            "the current timetable"
        }
        _ => "live information",
    };
    out.push(finding(
        "live",
        Slot::LiveData,
        what,
        0.9,
        format!("\"{cue}\" needs live data"),
    ));
    let all = ctx.words();
    // "who's winning??" and "what's the score" of a game never named: which game too.
    let score = [
        "who's winning",
        "whos winning",
        "who is winning",
        "the score",
        "score of the game",
    ];
    if score.contains(&cue) && !all.has_name() && !all.has_place() {
        out.push(finding(
            "live",
            Slot::Referent,
            "which game or match you mean",
            0.9,
            format!("\"{cue}\" of a game the message does not name"),
        ));
    }
    if m.any(LOCAL_LIVE_CUES).is_some() && !all.has_place() {
        out.push(finding(
            "live",
            Slot::Location,
            "the location (city or area)",
            0.9,
            format!("\"{cue}\" depends on a place the message does not name"),
        ));
    }
}
