//! Clarify first: decide whether the user's last message is materially
//! underspecified, and if so, tell the model to ask for the missing piece.
//!
//! The decision is a small rule layer over the message's words (`rules.rs`): a request
//! that acts on a text it does not carry ("translate this sentence"), code with no
//! language, a recommendation with no place, JSON with no fields, maths with a number
//! missing, scheduling with no date, a verdict with no criteria or no items, a pronoun
//! with nothing to refer to, and live data the model cannot have. The rules decide
//! first: they are deterministic, the same for every model, and can say exactly which
//! piece is missing and why (`Decision::why`). Their limit, measured: on prompts by an
//! author they were not written against they fire on about 70% of the underspecified
//! ones (eval/probes, docs/behaviour.md); a judge from the model's own yes/no logits
//! did no better.
//!
//! Where the rules find nothing, a model that carries a clarify probe (`probe.rs`)
//! decides: a linear read of its residual stream at the end of the prompt, fitted on
//! the evaluation sets, whose slot head names the missing piece in general words
//! (`assess_read`). The caller runs the model and passes the reading in; this module
//! stays free of the engine.
//!
//! The question itself comes from the model: the policy appends a visible note to the
//! user's message (`Decision::note`) naming the missing piece, and the model writes
//! the question in its own words. The note is part of the transcript, so the rendered
//! prompt shows exactly what the model was given.
//!
//! The policy also starts the reply with a short lead (`Decision::lead`, `lead_for`):
//! "Could you paste" where the text itself is missing, "Could you tell me" where a date
//! or a JSON's fields are, "To help with that, I need to know" where another piece is,
//! "Sorry, I can't know" where the answer is live data. The lead says what kind of reply
//! this is, never what to ask: the model writes every word after it, and the lead stays
//! in the reply as the transcript holds it (rendered as transformers'
//! `continue_final_message` does). Measured: without a lead, a small model answers a
//! pronoun or a live question with an invented fact ("It was built in 1980.", "The
//! pharmacy is still open.") about half the time; with one lead for every kind, it asks
//! about the text instead of for it, or asks the user's question back
//! (docs/behaviour.md).
//!
//! The policy then checks the reply it led (`check.rs`): when the sentence the lead
//! starts names none of the missing pieces in a word the user did not write ("To help
//! with that, I need to know what you're asking."), the reply is set aside and tried
//! again with the next of `retry_leads`; the first attempt that names a piece is
//! kept, or else the first (`Session::settle`). Every attempt is recorded
//! (`Turn::tries`), and each is the model's own words after a lead.
//!
//! Invariant: with the policy off, or when it does not fire, the messages are left
//! byte for byte as they were.

mod check;
mod lexicon;
pub mod probe;
mod rules;
mod text;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::EndAt;

pub use check::{kept_attempt, restates_request};
pub use probe::{ClarifyProbe, Reading};
pub use rules::assess_text;

/// A piece of information a request needs and does not give.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Slot {
    /// The text, code or data the request acts on.
    Text,
    TargetLanguage,
    ProgrammingLanguage,
    Location,
    Schema,
    Quantity,
    DateTime,
    Criteria,
    Items,
    Referent,
    /// Live data (weather, opening hours, the time) no model can have.
    LiveData,
}

impl Slot {
    /// A slot whose every answer serves the request once the user leaves it to the
    /// assistant ("in any language", "your pick"): the language, the fields, the
    /// options, what matters. The text, a place, a date, a number, a referent or live
    /// data stay missing whatever the user grants.
    pub fn is_a_choice(self) -> bool {
        matches!(
            self,
            Slot::TargetLanguage
                | Slot::ProgrammingLanguage
                | Slot::Schema
                | Slot::Criteria
                | Slot::Items
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Slot::Text => "text",
            Slot::TargetLanguage => "target_language",
            Slot::ProgrammingLanguage => "programming_language",
            Slot::Location => "location",
            Slot::Schema => "schema",
            Slot::Quantity => "quantity",
            Slot::DateTime => "date_time",
            Slot::Criteria => "criteria",
            Slot::Items => "items",
            Slot::Referent => "referent",
            Slot::LiveData => "live_data",
        }
    }

    pub fn parse(s: &str) -> Option<Slot> {
        ALL_SLOTS.iter().copied().find(|x| x.as_str() == s)
    }
}

pub const ALL_SLOTS: [Slot; 11] = [
    Slot::Text,
    Slot::TargetLanguage,
    Slot::ProgrammingLanguage,
    Slot::Location,
    Slot::Schema,
    Slot::Quantity,
    Slot::DateTime,
    Slot::Criteria,
    Slot::Items,
    Slot::Referent,
    Slot::LiveData,
];

/// One rule's finding: what is missing, in the user's terms.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Finding {
    /// The kind of request ("translate", "code", "math", …).
    pub category: &'static str,
    pub slot: Slot,
    /// The missing piece as the note and the diagnostics name it, in the user's
    /// words where the message has them ("the essay itself").
    pub missing: String,
    /// How sure the rule is, 0 to 1 (see `THRESHOLD`).
    pub score: f32,
    /// The evidence, for the diagnostics.
    pub why: String,
    /// How the note names the piece (not in the diagnostics).
    #[serde(skip)]
    pub wording: Wording,
    /// The message refers to the piece as given elsewhere ("same acreage as last
    /// year", "the format our API expects"), so it reads as complete to the probe,
    /// whose veto does not set the finding aside (`vetoable`).
    #[serde(skip)]
    pub referred: bool,
}

/// How the note asks for a finding's piece.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Wording {
    /// In the slot's general words: "for what matters most in the choice".
    #[default]
    Slot,
    /// In the finding's own words, which are narrower than the slot's: "for the unit to
    /// convert to", "for the ingredient being measured".
    AsWritten,
    /// As written, and a place other than where the user is (a stay, a trip's
    /// destination): a question about where the user is does not ask for it.
    Elsewhere,
}

impl Finding {
    /// The same finding, asked for in `wording`.
    pub fn worded(self, wording: Wording) -> Finding {
        Finding { wording, ..self }
    }

    /// The same finding, of a piece referred to as given elsewhere.
    pub fn referred(self) -> Finding {
        Finding {
            referred: true,
            ..self
        }
    }
}

/// A rule fires at or above this score.
pub const THRESHOLD: f32 = 0.5;

/// The policy's decision on one user message.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Decision {
    pub clarify: bool,
    /// The missing pieces, joined ("the text to translate and the target language"),
    /// or None.
    pub missing: Option<String>,
    pub slots: Vec<Slot>,
    pub category: Option<&'static str>,
    /// The highest finding's score (0 when none).
    pub score: f32,
    pub why: String,
    /// The words appended to the user's message when `clarify`.
    pub note: Option<String>,
    /// The words the reply starts with (`lead_for`: `LEAD_LIVE`, `LEAD_PASTE`,
    /// `LEAD_ASK` or `LEAD_NEED`); the model continues them. Some exactly when `clarify`.
    pub lead: Option<String>,
    /// What the note asks the question to ask for, one piece per finding: what
    /// `reply_names_a_piece` checks the reply against.
    pub pieces: Vec<Piece>,
    /// The leads to try again with, in order, when a reply names no missing piece
    /// (`retry_leads`; none for live data, whose reply states a limitation).
    pub retry_leads: Vec<String>,
    /// The clarify probe's reading of the message (`probe.rs`), when the model
    /// carries a probe and it ran.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub probe: Option<Reading>,
    /// A finding's piece is referred to as given elsewhere (`Finding::referred`).
    #[serde(skip)]
    pub referred: bool,
}

/// One missing piece as the note asks for it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Piece {
    pub slot: Slot,
    /// The note's words after "asks me" ("for the city or area", `who "he" refers to`).
    pub ask: String,
    /// How the finding asked to word it (not in the diagnostics).
    #[serde(skip)]
    pub wording: Wording,
}

/// The reply's first words where the policy asks for a missing piece other than the
/// text, a date or a JSON's fields: the model says what it needs. After "Could you tell me", Qwen
/// mostly asked the user's own question back ("Could you tell me how many calories you
/// burn running?"); after this lead it names a piece ("the distance you run").
pub const LEAD_NEED: &str = "To help with that, I need to know";
/// The lead where only a date or time, or the fields of a JSON, are missing: a question
/// begins. After `LEAD_NEED`, Qwen asked about the subject of the thing to make ("what
/// kind of event", "the name of the book" for a table to book) instead of its fields or
/// its date.
pub const LEAD_ASK: &str = "Could you tell me";
/// The lead where the missing piece is the text itself (the essay to proofread, the
/// code to fix): the question asks for it to be given, not described. After "Could you
/// tell me", Qwen asked about the text instead ("which line is causing the issue?",
/// "what the report is about"); docs/behaviour.md has the figures.
pub const LEAD_PASTE: &str = "Could you paste";
/// The lead where the answer is live data: the model says what it cannot know. After
/// "Sorry," alone, Qwen often said only "Sorry, but I can't assist with that."
pub const LEAD_LIVE: &str = "Sorry, I can't know";

/// The lead of a retry where the text itself is missing: after "Could you paste", Qwen
/// asked for something about the text ("the first part of your pull request", "the
/// title of the book"); after this, for the text ("Please paste your blog post here.").
pub const LEAD_PASTE_AGAIN: &str = "Please paste";

/// The lead of a retry where live data and another piece are missing ("Did they win
/// last night?"): the limitation is stated, and the question begins. After
/// `LEAD_LIVE`, Qwen stated the limitation and then asked for "the relevant
/// information" or "any live data" (2 of 3 such prompts); after this, who "they" are.
/// The sentence it starts with is the policy's own, and true of every model here.
pub const LEAD_LIVE_ASK: &str = "Sorry, I can't know that without live data. Could you tell me";

/// The leads a clarifying reply is tried again with, in order, when the reply after
/// `lead` names no missing piece (`Decision::reply_names_a_piece`). After the live lead
/// only when another piece is missing too (`decide`): a live question alone asks for
/// nothing. Measured on Qwen's 56 misses of the
/// twenty-second session (docs/behaviour.md, "Trying again"): each lead alone made 9
/// ("To help with that"), 22 ("Could you tell me"), 24 ("First, could you tell me")
/// and 29 ("To answer that") of them useful; tried in this order, 38. The last two,
/// on the 17 replies where none of the first four named a piece (twenty-ninth
/// session): "To do that, please tell me" named one in 8 ("the specific fields you
/// need in your JSON output"), "So that I can help, please tell me" in 7, 10 the two
/// together; "To work that out, I need to know" 3, "Before I can help, could you tell
/// me" 1, "Please tell me" 5.
pub fn retry_leads(lead: &str) -> &'static [&'static str] {
    const TO_ANSWER: &str = "To answer that, I need to know";
    const FIRST: &str = "First, could you tell me";
    const TO_DO: &str = "To do that, please tell me";
    const SO_THAT: &str = "So that I can help, please tell me";
    match lead {
        LEAD_PASTE => &[LEAD_PASTE_AGAIN, TO_ANSWER, FIRST, TO_DO, SO_THAT],
        LEAD_NEED => &[TO_ANSWER, FIRST, LEAD_ASK, TO_DO, SO_THAT],
        LEAD_ASK => &[TO_ANSWER, FIRST, LEAD_NEED, TO_DO, SO_THAT],
        LEAD_LIVE => &[LEAD_LIVE_ASK],
        _ => &[],
    }
}

/// Where a reply the policy's `lead` starts ends: at the lead's sentence, which is the
/// request ("To help with that, I need to know the distance you run."); after the live
/// lead, whose sentence states the limitation, at the question the note asks for next.
/// SmolLM2 went on after the request with an answer it invented ("To answer that, I
/// need to know your hourly wage, which is 80 dollars per hour."): ending there took
/// its fabrication from 32.2% to 11.4% (docs/behaviour.md).
pub fn reply_end(lead: &str) -> EndAt {
    match lead {
        LEAD_LIVE => EndAt::Question,
        _ => EndAt::Sentence,
    }
}

/// The lead for the findings of a decision that fires: live data first, then the
/// text, then a date or a JSON's fields alone, then any other piece.
fn lead_for(findings: &[Finding]) -> &'static str {
    if findings.iter().any(|f| f.slot == Slot::LiveData) {
        LEAD_LIVE
    } else if findings.iter().any(|f| f.slot == Slot::Text) {
        LEAD_PASTE
    } else if findings
        .iter()
        .all(|f| matches!(f.slot, Slot::DateTime | Slot::Schema))
    {
        LEAD_ASK
    } else {
        LEAD_NEED
    }
}

/// Decide on the last user message of `messages` (OpenAI-style), with the earlier
/// messages as context: a "this" or a language named earlier counts as given. The
/// rules alone: `assess_read` adds a probe's reading.
pub fn assess(messages: &[Value]) -> Decision {
    assess_read(messages, None)
}

/// The rules' decision, or where they find nothing and the probe's `reading` of
/// the same messages fires, the probe's: the pieces its slot head names, in general
/// words (`probe_missing`). The reading is kept in the decision either way.
pub fn assess_read(messages: &[Value], reading: Option<&Reading>) -> Decision {
    let mut d = assess_rules(messages);
    let Some(r) = reading else {
        return d;
    };
    // A choice the user left to the assistant is not a missing piece, whichever
    // reader names it (`rules::choice_granted`), nor is a piece the message plainly
    // gives (`rules::gives`).
    let text = last_user(messages)
        .and_then(|i| messages[i]["content"].as_str())
        .unwrap_or("");
    let granted = rules::choice_granted(text);
    let slots: Vec<Slot> = r
        .named_slots()
        .into_iter()
        .filter(|s| !(rules::gives(*s, text) || granted && s.is_a_choice()))
        .collect();
    let at = format!(
        "the clarify probe's margin at layer {} is {:.2}",
        r.layer, r.margin
    );
    d = match (d.clarify, r.fires()) {
        (false, true) if slots.is_empty() => Decision {
            why: format!(
                "{}; {at}, at or above its threshold {:.2}, but what it names is given or left to the assistant",
                d.why, r.threshold
            ),
            ..d
        },
        (false, true) => {
            let why = format!(
                "no rule found a missing piece; {at}, at or above its threshold {:.2}",
                r.threshold
            );
            decide(
                slots
                    .into_iter()
                    .map(|slot| Finding {
                        category: "probe",
                        slot,
                        missing: probe_missing(slot, text),
                        score: sigmoid(r.margin - r.threshold).max(THRESHOLD),
                        why: why.clone(),
                        wording: Wording::Slot,
                        referred: false,
                    })
                    .collect(),
            )
        }
        (true, _) if r.vetoes() && vetoable(&d) => {
            Decision::none(
                &format!("{}; set aside: {at}, under its veto {:.2}", d.why, r.veto),
            )
        }
        _ => Decision {
            why: format!("{}; {at} (threshold {:.2})", d.why, r.threshold),
            ..d
        },
    };
    d.probe = Some(r.clone());
    d
}

/// Whether the probe's veto may set aside the rules' decision naming `slots`. Live data
/// is no piece of the prompt for the probe to read. A language named but ambiguous
/// ("into Chinese") or only referred to ("her own language") reads as given to it: over
/// nineteen authors and both models its veto set aside no translation control, and six
/// translations that lacked their language. Nor is a piece the message refers to as
/// given elsewhere (`Finding::referred`): "same acreage as last year" and "the format
/// our API expects" read as complete to it (the 21st author's three such prompts had
/// margins of −2.6 to −5.5 for Qwen), and no control of sets 1 to 21 has such a finding.
pub fn vetoable(d: &Decision) -> bool {
    !d.referred
        && !d
            .slots
            .iter()
            .any(|s| matches!(s, Slot::LiveData | Slot::TargetLanguage))
}

fn sigmoid(x: f32) -> f32 {
    1.0 / (1.0 + (-x).exp())
}

/// A missing piece the probe names, in words that fit any request (the rules name
/// it in the user's own words; the probe has only the slot). A referent is asked
/// for in the message's own pronoun where it has one (`rules::referent_words`).
fn probe_missing(slot: Slot, text: &str) -> String {
    match slot {
        Slot::Referent => rules::referent_words(text),
        _ => None,
    }
    .unwrap_or_else(|| general_words(slot).to_string())
}

fn general_words(slot: Slot) -> &'static str {
    match slot {
        Slot::Text => "the text itself",
        Slot::TargetLanguage => "the language to translate into",
        Slot::ProgrammingLanguage => "the programming language",
        Slot::Location => "my location",
        Slot::Schema => "the fields the JSON should have",
        Slot::Quantity => "the numbers the answer depends on",
        Slot::DateTime => "the dates and times",
        Slot::Criteria => "what matters most in the choice",
        Slot::Items => "the options to choose between",
        Slot::Referent => "what my message refers to",
        Slot::LiveData => "the current facts this needs",
    }
}

/// The index of the last user message, the one the policy decides on.
fn last_user(messages: &[Value]) -> Option<usize> {
    messages
        .iter()
        .rposition(|m| m["role"].as_str() == Some("user"))
}

fn assess_rules(messages: &[Value]) -> Decision {
    let Some(last) = last_user(messages) else {
        return Decision::none("no user message");
    };
    let Some(text) = messages[last]["content"].as_str() else {
        return Decision::none("the user message is not plain text");
    };
    let earlier: Vec<&str> = messages[..last]
        .iter()
        .filter(|m| m["role"].as_str() != Some("system"))
        .filter_map(|m| m["content"].as_str())
        .collect();
    decide(assess_text(text, &earlier))
}

/// Turn the rules' findings into a decision and its note.
pub fn decide(mut findings: Vec<Finding>) -> Decision {
    findings.retain(|f| f.score >= THRESHOLD);
    if findings.is_empty() {
        return Decision::none("no rule found a missing piece");
    }
    findings.sort_by(|a, b| b.score.total_cmp(&a.score).then(a.slot.cmp(&b.slot)));
    // Each slot once, at its best score: a place asked for by two rules is one piece.
    let mut seen: Vec<Slot> = Vec::new();
    findings.retain(|f| {
        let first = !seen.contains(&f.slot);
        seen.push(f.slot);
        first
    });
    let top = &findings[0];
    let missing = join(findings.iter().map(|f| f.missing.as_str()));
    // Each reason once: the probe's findings share theirs.
    let mut whys: Vec<&str> = Vec::new();
    for f in &findings {
        if !whys.contains(&f.why.as_str()) {
            whys.push(&f.why);
        }
    }
    let why = whys.join("; ");
    let live = findings.iter().any(|f| f.slot == Slot::LiveData);
    let mut asks: Vec<&Finding> = findings
        .iter()
        .filter(|f| f.slot != Slot::LiveData)
        .collect();
    // The text first: "paste the sentence, and which language".
    asks.sort_by_key(|f| f.slot);
    let pieces: Vec<Piece> = asks
        .iter()
        .map(|f| Piece {
            slot: f.slot,
            ask: ask_for(f, live),
            wording: f.wording,
        })
        .collect();
    let asks = join_with(pieces.iter().map(|p| p.ask.clone()), "and");
    let note = if live {
        let what = findings
            .iter()
            .find(|f| f.slot == Slot::LiveData)
            .map(|f| f.missing.as_str())
            .unwrap_or("live information");
        if asks.is_empty() {
            format!(
                "[Clarify first: you have no live data, so you cannot know {what}. Do not guess. Reply with one short sentence that says so and suggests where I can check it.]"
            )
        } else {
            format!(
                "[Clarify first: you have no live data, so you cannot know {what}. Do not guess. Reply with one short sentence that says so, then one short question that asks me {asks}.]"
            )
        }
    } else {
        format!(
            "[Clarify first: my request does not say {missing}. Do not guess, and do not answer yet. Reply with one short question that asks me {asks}.]"
        )
    };
    let lead = lead_for(&findings);
    let retry_leads = match pieces.is_empty() {
        true => Vec::new(),
        false => retry_leads(lead).iter().map(|l| l.to_string()).collect(),
    };
    Decision {
        clarify: true,
        missing: Some(missing),
        slots: findings.iter().map(|f| f.slot).collect(),
        category: Some(top.category),
        score: top.score,
        why,
        note: Some(note),
        lead: Some(lead.to_string()),
        pieces,
        retry_leads,
        probe: None,
        referred: findings.iter().any(|f| f.referred),
    }
}

fn join<'a>(parts: impl Iterator<Item = &'a str>) -> String {
    join_with(parts.map(String::from), "and")
}

fn join_with(parts: impl Iterator<Item = String>, and: &str) -> String {
    let v: Vec<String> = parts.collect();
    match v.len() {
        0 => String::new(),
        1 => v[0].clone(),
        n => format!("{} {and} {}", v[..n - 1].join(", "), v[n - 1]),
    }
}

/// What the model's question should ask for, after "asks me": a noun phrase or a "who"
/// clause with no "I" in it. An indirect question in the user's voice ("which city I
/// mean") came back verbatim after the lead ("Could you tell me which city I mean?").
/// The place is asked for as "my location (my city or area)" where the note asks a
/// question: "the city or area" drew "which restaurant you're looking for" on 4 of 19
/// of Qwen's recommendations. The policy's check refuses an echo in the user's voice
/// ("where I live", `check::users_voice`), so that another lead is tried. After the
/// live lead the note keeps "the city or area": "my city" there came back as "my city
/// is [insert your city]". A finding worded `AsWritten` or `Elsewhere` is asked for in its
/// own words, which are narrower than its slot's.
fn ask_for(f: &Finding, live: bool) -> String {
    let thing = f.missing.trim_end_matches(" itself");
    if f.wording != Wording::Slot {
        return format!("for {thing}");
    }
    match f.slot {
        Slot::Text => {
            let t = thing
                .strip_suffix(" to translate")
                .or(thing.strip_suffix(" to summarize"))
                .or(thing.strip_suffix(" in question"))
                .unwrap_or(thing);
            if t.contains(" and ") || t.contains('(') {
                format!("for {t}")
            } else {
                format!("for {t} itself")
            }
        }
        Slot::TargetLanguage => "for the language to translate into".into(),
        Slot::ProgrammingLanguage => "for the programming language to use".into(),
        Slot::Location if live => "for the city or area".into(),
        Slot::Location => "for my location (my city or area)".into(),
        Slot::Schema => "for the fields the JSON should have".into(),
        Slot::Quantity => format!("for {thing}"),
        // "the date and time of the reminder": whose time it is.
        Slot::DateTime => format!("for {thing}"),
        Slot::Criteria => "for what matters most in the choice".into(),
        // "the phones being compared" → "for the names of the phones being compared".
        Slot::Items => format!("for the names of {thing}"),
        // `who "he" is` → `who "he" refers to`; `which movie "it" is` stays.
        Slot::Referent => match thing.strip_suffix(" is").or(thing.strip_suffix(" are")) {
            Some(t) if !t.starts_with("which ") => format!("{t} refers to"),
            _ => thing.to_string(),
        },
        Slot::LiveData => String::new(),
    }
}

impl Decision {
    fn none(why: &str) -> Decision {
        Decision {
            clarify: false,
            missing: None,
            slots: Vec::new(),
            category: None,
            score: 0.0,
            why: why.to_string(),
            note: None,
            lead: None,
            pieces: Vec::new(),
            retry_leads: Vec::new(),
            probe: None,
            referred: false,
        }
    }

    /// One line for people: what was asked for, the score and why; or why not.
    pub fn summary(&self) -> String {
        match &self.missing {
            Some(m) if self.clarify => format!(
                "Clarify first: asked for {m} (score {:.2}: {})",
                self.score, self.why
            ),
            _ => format!("Clarify first: not needed ({})", self.why),
        }
    }

    /// The `--json` form: `{"clarify", "missing", "score", …}`.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).expect("a decision serializes")
    }
}

/// Apply the policy to `messages`: when it fires, the last user message gets the
/// note appended (separated by a blank line). Returns the decision either way. The
/// reply's lead is not added here: see `start_reply`.
pub fn apply(messages: &mut [Value]) -> Decision {
    apply_read(messages, None)
}

/// `apply` with a probe's reading of the messages as they stand (`assess_read`).
pub fn apply_read(messages: &mut [Value], reading: Option<&Reading>) -> Decision {
    let d = assess_read(messages, reading);
    if let (Some(note), Some(i)) = (&d.note, last_user(messages)) {
        let content = messages[i]["content"].as_str().unwrap_or_default();
        messages[i]["content"] = Value::String(format!("{content}\n\n{note}"));
    }
    d
}

/// Start the reply with the decision's lead: an assistant message that the caller
/// then continues (`TextSide::render_prompt` with `continues`). True when one was
/// added.
pub fn start_reply(messages: &mut Vec<Value>, d: &Decision) -> bool {
    match &d.lead {
        Some(lead) => {
            messages.push(serde_json::json!({"role": "assistant", "content": lead}));
            true
        }
        _ => false,
    }
}

#[cfg(test)]
mod tests;
