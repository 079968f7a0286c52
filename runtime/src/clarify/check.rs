//! Did the model's question ask for what the note asked it to? The policy's own check
//! on its clarifying reply, which decides whether to try again with another lead
//! (`Decision::retry_leads`, `Session::settle`).
//!
//! A question passes when it names one of the missing pieces in a word the user did not
//! write: a word of the piece as the note put it (`Piece::ask`, "the city or area"), or
//! one of the slot's few other names (`other_names`: "where", "location"). "Could you
//! tell me where she lives now?" for "Where does she live now?" names nothing: every
//! word of it is the user's. A text asked for must be asked for as itself: "paste the
//! essay", not "paste the title of the essay".
//!
//! This is the policy checking its own instruction, not the evaluation's judge:
//! `slm eval clarify` scores replies with its own rubric (cli/src/score.rs), which
//! shares no code with this one, so the policy cannot grade itself. The check errs on
//! the strict side: a question it misses costs one more short generation, and when no
//! attempt passes, the first reply is kept.

use super::{Decision, Slot};
use crate::engine::first_sentence_end;

/// Words of a note's request that name nothing on their own.
#[rustfmt::skip]
const FILLER: &[&str] = &[
    "for", "the", "a", "an", "and", "or", "to", "of", "in", "it", "is", "are", "be", "being",
    "should", "have", "itself", "what", "who", "which", "most", "me", "my", "use", "with",
    "that", "this", "you", "your", "i", "am", "at", "on", "by", "as", "into", "in", "question",
];

/// Other words that name a slot's piece, beside the note's own.
fn other_names(slot: Slot) -> &'static [&'static str] {
    match slot {
        Slot::Text => &["text", "code", "content"],
        Slot::TargetLanguage => &["language"],
        Slot::ProgrammingLanguage => &["language", "framework", "runtime"],
        Slot::Location => &[
            "city",
            "area",
            "location",
            "located",
            "where",
            "town",
            "neighborhood",
            "neighbourhood",
            "region",
            "country",
            "postcode",
            "zip",
            "where you are",
            "where you re",
            "where you live",
        ],
        Slot::Schema => &[
            "fields",
            "keys",
            "structure",
            "schema",
            "properties",
            "attributes",
        ],
        Slot::Quantity => &[
            "how much",
            "how many",
            "how long",
            "how far",
            "amount",
            "number",
            "price",
            "cost",
            "total",
            "distance",
            "dimensions",
            "length",
            "width",
            "height",
            "size",
            "weight",
            "hours",
            "rate",
        ],
        Slot::DateTime => &["date", "time", "when", "day"],
        Slot::Criteria => &[
            "matters",
            "criteria",
            "budget",
            "prefer",
            "preferences",
            "looking for",
            "use it for",
            "purpose",
            "important",
            "priorities",
            "needs",
            "goals",
            "requirements",
            "trying to solve",
            "trying to build",
            "trying to achieve",
            "use case",
            "is about",
        ],
        // "Choices" as a phrase, matched whole: the single word would match "choice", and
        // "what matters most in the choice" asks for the criteria.
        Slot::Items => &[
            "options",
            "compared",
            "comparing",
            "the choices",
            "your choices",
            "names",
        ],
        Slot::Referent => &["refers", "referring", "mean"],
        Slot::LiveData => &[],
    }
}

/// Requests that name nothing, whatever words they hold: "what specific information
/// you're looking for" asks for no criteria though "looking for" names them elsewhere
/// ("what you're looking for in a laptop").
const GENERIC: &[&str] = &[
    "information you re looking for",
    "information you are looking for",
    "details you re looking for",
    "details you are looking for",
    "information you re referring to",
    "information you are referring to",
    "context you re referring to",
    "context you are referring to",
    "topic you re referring to",
    "topic you are referring to",
    "question is about",
    "request is about",
    "this is about",
    "it is about",
];

/// Is `ws[i]` inside one of the `GENERIC` requests?
fn in_generic(ws: &[String], i: usize) -> bool {
    GENERIC.iter().any(|g| {
        let g = words(g);
        (i.saturating_sub(g.len() - 1)..=i)
            .any(|s| s + g.len() <= ws.len() && ws[s..s + g.len()] == g[..])
    })
}

/// Words of a verdict: a question about the options or the criteria that asks which
/// (or whether) one is better asks the user's question back ("which option is more popular among data
/// scientists?", "which of the two options is best suited for your situation?")
/// instead of asking for them.
#[rustfmt::skip]
const VERDICTS: &[&str] = &[
    "better", "best", "worse", "worst", "faster", "slower", "cheaper", "superior", "preferable",
    "popular", "suitable", "suited", "wins", "win", "winner", "worth",
];

/// Words that start a new clause: a verdict after them is not the question's own
/// ("which criteria matter to you when deciding whether renting is better").
const CLAUSE_STARTS: &[&str] = &["when", "while", "deciding", "choosing", "decide", "choose"];

/// A "which", "whether" or "if" with a verdict (`VERDICTS`) within its next ten words,
/// before a new clause: the question asks which option wins. What follows "so" or
/// "then" is the assistant's own plan ("your budget, so I can find which laptop is
/// best"), not its question.
fn asks_which_wins(ws: &[String]) -> bool {
    let is = |w: &String, list: &[&str]| list.contains(&w.as_str());
    let ws = &ws[..ws
        .iter()
        .position(|w| is(w, &["so", "then"]))
        .unwrap_or(ws.len())];
    ws.iter().enumerate().any(|(i, w)| {
        is(w, &["which", "whether", "if"])
            && (i == 0 || !is(&ws[i - 1], CLAUSE_STARTS))
            && ws[i + 1..]
                .iter()
                .take(10)
                .take_while(|x| !is(x, CLAUSE_STARTS))
                .any(|x| is(x, VERDICTS))
    })
}

/// Words that end the noun phrase after "paste the" ("paste the essay you wrote").
#[rustfmt::skip]
const PHRASE_ENDS: &[&str] = &[
    "to", "you", "that", "which", "for", "in", "into", "here", "so", "and", "or", "from",
    "with", "of", "i", "please", "itself", "below", "again", "as",
];

/// What of a reply the check reads: after the live lead, the whole reply (the
/// limitation comes first and the question ends it, `reply_end`); after any other, the
/// sentence the lead starts (`lead_sentence`).
fn request<'a>(lead: &str, wrote: &'a str) -> &'a str {
    match lead {
        super::LEAD_LIVE => wrote,
        _ => lead_sentence(wrote),
    }
}

/// The sentence the lead starts: what the model wrote up to the end of its first
/// sentence (`engine::first_sentence_end`, where a clarifying reply also stops). What
/// follows it is not the request ("… which park you're looking for. Please provide
/// more context.").
fn lead_sentence(wrote: &str) -> &str {
    first_sentence_end(wrote).map_or(wrote, |at| &wrote[..at])
}

/// Lowercase words: letters and digits, split at everything else ("where's" is
/// "where" and "s").
fn words(s: &str) -> Vec<String> {
    s.split(|c: char| !c.is_alphanumeric())
        .filter(|w| !w.is_empty())
        .map(str::to_lowercase)
        .collect()
}

/// The same word up to an ending: "refers" and "referring", "option" and "options",
/// "compared" and "comparing". Both words share all but their last two letters, and at
/// least four ("area" is not "are").
fn same_word(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    let n = a.len().min(b.len()).saturating_sub(2).max(4);
    a.len() >= n && b.len() >= n && a.as_bytes()[..n] == b.as_bytes()[..n]
}

/// Does `phrase` (one or more words) occur in `ws` at `i`?
fn phrase_at(ws: &[String], i: usize, phrase: &[String]) -> bool {
    phrase.len() <= ws.len() - i
        && phrase.iter().zip(&ws[i..]).all(|(p, w)| {
            if phrase.len() == 1 {
                same_word(p, w)
            } else {
                p == w
            }
        })
}

/// The attempt a clarifying reply keeps, of attempts that named a piece or not
/// (`named`, in order) and asked amiss or not (`amiss`, `Decision::reply_asks_amiss`):
/// the first that named one; else the first that asked nothing amiss; else the first.
/// A question that names nothing ("the context you're asking about") asks the user
/// for more and invents nothing, where one that asks amiss ("paste the meeting notes
/// into three bullet points") asks the user to do the task, or asks their question
/// back: of Qwen's 17 replies where no attempt named a piece (twenty-ninth session,
/// before its two last leads), 3 had kept such a first attempt with a plain one
/// behind it.
pub fn kept_attempt(named: &[bool], amiss: &[bool]) -> usize {
    named
        .iter()
        .position(|n| *n)
        .or_else(|| (0..named.len()).find(|&i| !amiss.get(i).copied().unwrap_or(false)))
        .unwrap_or(0)
}

impl Decision {
    /// The lead of the next attempt at the clarifying reply, after attempts that named
    /// a piece or not (`named`, in order): the decision's lead first, then
    /// `retry_leads` while no attempt has named a piece. None once one has, or when the
    /// leads are spent.
    pub fn next_lead(&self, named: &[bool]) -> Option<&str> {
        match named.len() {
            0 => self.lead.as_deref(),
            _ if named.contains(&true) => None,
            n => self.retry_leads.get(n - 1).map(String::as_str),
        }
    }

    /// The pieces a clarifying reply is read against: every missing one but live data,
    /// which no question can supply.
    fn asked_pieces(&self) -> Vec<&super::Piece> {
        self.pieces
            .iter()
            .filter(|p| p.slot != Slot::LiveData)
            .collect()
    }

    /// Does a clarifying reply (`lead`, then what the model `wrote` after it) do what a
    /// question must not, beyond naming no piece? It begins the answer (a backtick or a
    /// brace), asks the user to put the text elsewhere or in the result's form
    /// (`puts_it_elsewhere`), asks the user's own question back (`asks_the_answer_back`,
    /// `names_the_answer`, `asks_which_wins`), or asks about another word than the
    /// pronoun (`means_another_word`, `refers_to_a_thing`). Each is a reason
    /// `reply_names_a_piece` gives false; this tells those replies from the ones that
    /// only name nothing, for `kept_attempt`.
    pub fn reply_asks_amiss(&self, prompt: &str, lead: &str, wrote: &str) -> bool {
        let asks = self.asked_pieces();
        if asks.is_empty() {
            return false;
        }
        let read = request(lead, wrote);
        if read.contains(['`', '{']) {
            return true;
        }
        let user = words(prompt);
        let ws = words(read);
        asks.iter().any(|piece| match piece.slot {
            Slot::Text => paste_objects(lead, &ws).any(|from| puts_it_elsewhere(&ws, from, &user)),
            Slot::Referent => {
                asks_the_wrong_thing(piece, &ws, &user)
                    || (0..ws.len()).any(|i| {
                        !in_generic(&ws, i)
                            && (means_another_word(&ws, i) || refers_to_a_thing(&ws, i, &user))
                    })
            }
            _ => asks_the_wrong_thing(piece, &ws, &user),
        })
    }

    /// Does a clarifying reply (`lead`, then what the model `wrote` after it) ask for
    /// one of the missing pieces, in words the user's `prompt` does not have? The
    /// lead's own words do not count. Always true for a decision that asks for nothing
    /// (live data alone).
    pub fn reply_names_a_piece(&self, prompt: &str, lead: &str, wrote: &str) -> bool {
        let asks = self.asked_pieces();
        if asks.is_empty() {
            return true;
        }
        // An example of the result ("…in the format you want, such as `[{name:
        // 'Alice', …}]`") is an answer begun, not a question: Qwen wrote it after
        // "Please paste" for "Can you turn my contact list into JSON?".
        let read = request(lead, wrote);
        if read.contains(['`', '{']) {
            return false;
        }
        let user = words(prompt);
        let said = |w: &String| user.iter().any(|u| same_word(u, w));
        let ws = words(read);
        let first = first_needed(&asks);
        asks.iter().any(|piece| {
            if !first.is_empty() && !first.contains(&piece.slot) {
                return false;
            }
            if asks_the_wrong_thing(piece, &ws, &user) {
                return false;
            }
            let own: Vec<String> = words(&piece.ask)
                .into_iter()
                .filter(|w| !FILLER.contains(&w.as_str()))
                .collect();
            if piece.slot == Slot::Text {
                return asks_for_the_text(lead, &ws, &own, &user);
            }
            // A quantity's names include the user's own amounts ("my salary"): a word the
            // user wrote, so it counts only when asked for by name ("your current salary").
            let amounts = match piece.slot {
                Slot::Quantity => users_amounts(&user),
                _ => Vec::new(),
            };
            let names: Vec<Vec<String>> = own
                .iter()
                .chain(&amounts)
                .map(|w| vec![w.clone()])
                .chain(other_names(piece.slot).iter().map(|p| words(p)))
                .collect();
            // A phrase counts unless the user wrote it whole ("where you are" after
            // "a coffee shop where I can work"); a word, unless the user wrote it.
            let users = |n: &[String]| match n.len() {
                1 => said(&n[0]),
                _ => (0..user.len()).any(|j| phrase_at(&user, j, n)),
            };
            (0..ws.len()).any(|i| {
                names.iter().any(|n| {
                    phrase_at(&ws, i, n)
                        && !in_generic(&ws, i)
                        && !bare_looking_for(&ws, i)
                        && (piece.slot != Slot::Referent
                            || !(means_another_word(&ws, i) || refers_to_a_thing(&ws, i, &user)))
                        && (!users(n) || by_name(&ws, i))
                        && !users_voice(&ws, i, n.len())
                })
            })
        })
    }
}

/// The pieces a question must ask for before any other, when they are missing: the
/// text itself (a target language or a JSON's fields are no use until the text is
/// given: "return the results in json format" asked only for "the specific fields you
/// need in your JSON output"), else the options (what matters in a choice is no use
/// while the options are unknown: "which one is better?" asked only "what matters
/// most in the choice?"), or whom a pronoun stands for, which names them. Empty when
/// neither is missing: then any piece will do.
fn first_needed(asks: &[&super::Piece]) -> &'static [Slot] {
    let has = |s: Slot| asks.iter().any(|p| p.slot == s);
    if has(Slot::Text) {
        &[Slot::Text]
    } else if has(Slot::Items) {
        &[Slot::Items, Slot::Referent]
    } else {
        &[]
    }
}

/// "What you're looking for" ending the request (`ws[i]` is "looking"), with nothing
/// after "for" to say in what: it asks for nothing ("We're finally getting a dog!! What
/// breed?" → "…I need to know what you're looking for."). "What you're looking for in
/// a laptop" asks for the criteria.
fn bare_looking_for(ws: &[String], i: usize) -> bool {
    ws[i] == "looking"
        && i + 2 == ws.len()
        && i >= 3
        && ws[i - 3] == "what"
        && ws[i - 2] == "you"
        && ["re", "are"].contains(&ws[i - 1].as_str())
}

/// The question asks where the user is ("where you're located", "where you live",
/// "your location"), not where they are going ("where you're staying" does not count).
/// For a place worded `Wording::Elsewhere` (a stay, a destination) that is the wrong place.
fn asks_where_the_user_is(ws: &[String]) -> bool {
    const GOING: &[&str] = &[
        "going",
        "staying",
        "travelling",
        "traveling",
        "visiting",
        "heading",
        "planning",
        "looking",
        "hoping",
        "wanting",
    ];
    let at = |i: usize| ws.get(i).map(String::as_str).unwrap_or("");
    (0..ws.len()).any(|i| match at(i) {
        "located" | "live" | "living" => true,
        "location" => ["your", "current"].contains(&at(i.wrapping_sub(1))),
        "where" => {
            at(i + 1) == "you" && ["are", "re"].contains(&at(i + 2)) && !GOING.contains(&at(i + 3))
        }
        _ => false,
    })
}

/// The question offers, as examples of what it asks ("such as …", "for example …",
/// "e.g. …", a list joined by "or" or "and"), a word the user wrote: it asks what the user has
/// already said. Qwen asked "what type of laptop you're looking for, such as desktop,
/// laptop, or tablet" for "Which laptop should I get?". Read only where the criteria
/// are missing: where the options are, a question may well name the one the user gave
/// ("which language you're comparing with Python, such as Java or Go").
fn offers_what_was_said(ws: &[String], user: &[String]) -> bool {
    let starts = |i: usize| {
        (ws[i] == "such" && ws.get(i + 1).is_some_and(|w| w == "as"))
            || (ws[i] == "for" && ws.get(i + 1).is_some_and(|w| w == "example"))
            || (ws[i] == "e" && ws.get(i + 1).is_some_and(|w| w == "g"))
    };
    (0..ws.len()).filter(|&i| starts(i)).any(|i| {
        let list: Vec<&String> = ws[i + 1..]
            .iter()
            .take(8)
            .take_while(|w| !CLAUSE_STARTS.contains(&w.as_str()))
            .collect();
        list.iter().any(|w| *w == "or" || *w == "and")
            && list.iter().any(|w| {
                !FILLER.contains(&w.as_str())
                    && !["as", "g", "example"].contains(&w.as_str())
                    && user.iter().any(|u| same_word(u, w))
            })
    })
}

/// "What you mean by \"genius\"" (`ws[i]` is "mean") asks about a word of the message,
/// not whom or what its pronoun stands for: Qwen wrote it for "…talking about him like
/// he's some genius. Who is he exactly?". "What you mean by \"it\"" asks for the
/// referent.
fn means_another_word(ws: &[String], i: usize) -> bool {
    use super::lexicon::{PERSON_PRONOUNS, THING_PRONOUNS};
    ws[i] == "mean"
        && ws.get(i + 1).is_some_and(|w| w == "by")
        && ws.get(i + 2).is_some_and(|w| {
            !PERSON_PRONOUNS.contains(&w.as_str()) && !THING_PRONOUNS.contains(&w.as_str())
        })
}

/// "The name of the school report you're referring to" (`ws[i]` is "referring") for
/// "Can you tell me more about him? I'm writing a school report…": the user wrote "he"
/// or "she", so the referent is a person, and the words before "referring" (back to
/// "the", "which", "what" or "who") name no person, no pronoun and no "who". Qwen asked
/// that for the report, not for "him".
fn refers_to_a_thing(ws: &[String], i: usize, user: &[String]) -> bool {
    use super::lexicon::{PERSON_NOUNS, PERSON_PRONOUNS, THEY_FORMS, THING_PRONOUNS};
    const HE_SHE: &[&str] = &[
        "he", "she", "him", "her", "his", "hers", "himself", "herself",
    ];
    if !["refers", "referring", "refer"].contains(&ws[i].as_str())
        || !user.iter().any(|w| HE_SHE.contains(&w.as_str()))
    {
        return false;
    }
    let before: Vec<&str> = ws[..i]
        .iter()
        .rev()
        .map(String::as_str)
        .skip_while(|w| ["you", "re", "are", "were", "s", "is", "to"].contains(w))
        .take_while(|w| !["the", "which", "what", "whom", "a", "an"].contains(w))
        .take(5)
        .collect();
    let person = |w: &&str| {
        PERSON_NOUNS.contains(w)
            || PERSON_PRONOUNS.contains(w)
            || THING_PRONOUNS.contains(w)
            || THEY_FORMS.contains(w)
            || [
                "who",
                "name",
                "individual",
                "someone",
                "somebody",
                "character",
                "figure",
            ]
            .contains(w)
    };
    !before.is_empty() && !before.iter().any(person)
}

/// The question asks for the quantity the user asked to have worked out: "the number
/// of tiles you want" for "how many tiles do i need", "the total amount of ingredients
/// needed" for "…how much of everything do I need?". A quantity word ("number",
/// "amount", "how many", "how much") with, within its next five words, the thing the
/// user asked "how many" or "how much" of, or "need"/"needed"/"required" where the user
/// asked what they need.
fn asks_the_answer_back(ws: &[String], user: &[String]) -> bool {
    const QUANTITY: &[&str] = &["number", "amount", "many", "much", "quantity"];
    // Words between "how much" and the thing it asks of: "how much of the paint", "how
    // much will it cost" (no thing).
    #[rustfmt::skip]
    const AUXILIARIES: &[&str] = &[
        "of", "the", "a", "an", "do", "does", "did", "i", "we", "you", "it", "is", "are", "was",
        "were", "will", "would", "can", "could", "should", "my", "our", "this", "that", "s",
    ];
    const NEEDS: &[&str] = &["need", "needed", "required", "require"];
    let asked: Vec<&String> = (0..user.len())
        .filter(|&j| {
            user[j] == "how" && user.get(j + 1).is_some_and(|w| w == "many" || w == "much")
        })
        .filter_map(|j| {
            user[j + 2..]
                .iter()
                .find(|w| !AUXILIARIES.contains(&w.as_str()))
        })
        .collect();
    let asked_need = !asked.is_empty() && user.iter().any(|w| NEEDS.contains(&w.as_str()));
    ws.iter().enumerate().any(|(i, w)| {
        QUANTITY.contains(&w.as_str())
            && ws[i + 1..].iter().take(5).any(|n| {
                asked.iter().any(|a| same_word(a, n)) || (asked_need && NEEDS.contains(&n.as_str()))
            })
    })
}

/// The question asks the wrong thing for `piece`, whatever words it names: the
/// options' verdict asked back (`asks_which_wins`), the user's own choice offered back
/// where the criteria are missing (`offers_what_was_said`), the referent's answer named
/// (`names_the_answer`), the quantity the user wants worked out asked back or the
/// conversion turned around (`asks_the_answer_back`, `converts_backwards`), or where the
/// user is for a stay (`asks_where_the_user_is`). Both reply readers refuse it:
/// `reply_names_a_piece` as naming nothing, `reply_asks_amiss` as amiss.
fn asks_the_wrong_thing(piece: &super::Piece, ws: &[String], user: &[String]) -> bool {
    if parrots_the_note(ws) {
        return true;
    }
    match piece.slot {
        Slot::Items => asks_which_wins(ws),
        Slot::Criteria => asks_which_wins(ws) || offers_what_was_said(ws, user),
        Slot::Referent => names_the_answer(ws, user),
        Slot::Quantity => asks_the_answer_back(ws, user) || converts_backwards(ws, user),
        Slot::Location => piece.wording == super::Wording::Elsewhere && asks_where_the_user_is(ws),
        _ => false,
    }
}

/// The reply tells the user to ask the model, in the note's own words ("one short
/// question that asks me for the city or area"): "Please ask me for the city or area."
/// Qwen wrote that after "Sorry, I can't know" for "Is the post office open today?".
fn parrots_the_note(ws: &[String]) -> bool {
    ws.windows(2)
        .any(|p| ["ask", "asks"].contains(&p[0].as_str()) && p[1] == "me")
}

/// The question turns the conversion around, or asks for its result: "the height you
/// want to convert from centimeters to inches", "your height in centimeters", "the
/// number of centimeters in your height" for "Convert my height to centimeters". The
/// unit the user converts to (the word after "to" or "into") comes after "from", "in"
/// or "of" in the question ("converted to centimeters" only says it again).
fn converts_backwards(ws: &[String], user: &[String]) -> bool {
    use super::lexicon::UNITS;
    let targets: Vec<&String> = user
        .windows(2)
        .filter(|p| ["to", "into"].contains(&p[0].as_str()) && UNITS.contains(&p[1].as_str()))
        .map(|p| &p[1])
        .collect();
    ws.windows(2).any(|p| {
        ["from", "in", "of"].contains(&p[0].as_str()) && targets.iter().any(|t| same_word(t, &p[1]))
    })
}

/// The word at `ws[i]` is asked for by name, as the lead's object: "I need to know the
/// distance" for "…if it covered the distance in 2 hours" asks for the distance,
/// though the user wrote the word. "Could you tell me how many tiles…" is the user's
/// question asked back.
fn by_name(ws: &[String], i: usize) -> bool {
    // "your current salary": one word that says which of it may come between.
    let d = match i.checked_sub(1).map(|j| ws[j].as_str()) {
        Some(w) if WHICH_OF_IT.contains(&w) => i - 1,
        _ => i,
    };
    d > 0
        && ["the", "your"].contains(&ws[d - 1].as_str())
        && ws[..d - 1]
            .iter()
            .all(|w| ["what", "is", "s"].contains(&w.as_str()))
}

/// The amounts the user calls their own: a word of `AMOUNTS` with "my" one or two
/// words before it ("my salary", "my monthly rent"). A number missing from the user's
/// own thing is asked for as that thing: "I need to know your current salary" for
/// "Convert my salary to hourly". "Your kitchen floor" asks for no number, and "what
/// your goal is" asks what, not how much.
fn users_amounts(user: &[String]) -> Vec<String> {
    #[rustfmt::skip]
    const AMOUNTS: &[&str] = &[
        "salary", "income", "savings", "budget", "rent", "wage", "wages", "pay", "paycheck",
        "loan", "mortgage", "debt", "bill", "earnings", "pension", "allowance",
    ];
    (0..user.len())
        .filter(|&j| AMOUNTS.contains(&user[j].as_str()))
        .filter(|&j| user[j.saturating_sub(2)..j].iter().any(|w| w == "my"))
        .map(|j| user[j].clone())
        .collect()
}

/// Words between "your" and a thing asked for by name that say which of it: "your
/// current salary", "the exact distance".
#[rustfmt::skip]
const WHICH_OF_IT: &[&str] = &[
    "current", "exact", "total", "annual", "monthly", "weekly", "yearly", "actual", "full",
    "approximate", "usual",
];

/// A referent asked for as the answer: for "Where was that filmed?", "which specific
/// location you're referring to" asks where, not what "that" is. The kinds of answer
/// each question word wants.
const ANSWER_NOUNS: &[(&str, &[&str])] = &[
    (
        "where",
        &["location", "place", "city", "area", "country", "address"],
    ),
    ("when", &["date", "time", "day", "year"]),
];

/// Does the reply (`ws`) name the kind of answer the prompt's question word wants
/// (`ANSWER_NOUNS`)? The prompt's first word is its question word.
fn names_the_answer(ws: &[String], user: &[String]) -> bool {
    let Some(q) = user.first() else {
        return false;
    };
    ANSWER_NOUNS
        .iter()
        .find(|(w, _)| w == q)
        .is_some_and(|(_, nouns)| ws.iter().any(|w| nouns.iter().any(|n| same_word(n, w))))
}

/// The piece named at `ws[i..i + len]` is the user's own, asked back in the user's
/// voice: "my city or area", "where I live". After a note that asks "for my location",
/// Qwen wrote "Could you tell me where I live?", which asks the user for the
/// assistant's place.
fn users_voice(ws: &[String], i: usize, len: usize) -> bool {
    ws[i.saturating_sub(3)..i].iter().any(|w| w == "my")
        || ws.get(i + len).is_some_and(|w| w == "i")
}

/// The text is asked for as itself: after the paste lead, the noun phrase that follows
/// (up to three words) holds the text's noun ("the essay", "your code"); with another
/// lead, "paste", "share", "send" or "provide" is followed by one, or the noun by
/// "itself" or "themselves" ("please tell me the list itself and the fields you
/// want").
fn asks_for_the_text(lead: &str, ws: &[String], own: &[String], user: &[String]) -> bool {
    let nouns: Vec<String> = own
        .iter()
        .cloned()
        .chain(other_names(Slot::Text).iter().map(|w| w.to_string()))
        .collect();
    let phrase_names_it = |from: usize| {
        ws[from.min(ws.len())..]
            .iter()
            .take_while(|w| !PHRASE_ENDS.contains(&w.as_str()))
            .take(3)
            .any(|w| nouns.iter().any(|n| same_word(n, w)))
    };
    let asks_here = |from: usize| phrase_names_it(from) && !puts_it_elsewhere(ws, from, user);
    let named_itself = |i: usize| {
        ["itself", "themselves"].contains(&ws[i].as_str())
            && i > 0
            && nouns.iter().any(|n| same_word(n, &ws[i - 1]))
    };
    paste_objects(lead, ws).any(asks_here) || (0..ws.len()).any(named_itself)
}

/// Where the objects of a request for a text start in `ws`: at 0 after the paste lead
/// ("Could you paste" + "the essay…"), and after each "paste", "share", "send" or
/// "provide".
fn paste_objects<'a>(lead: &str, ws: &'a [String]) -> impl Iterator<Item = usize> + 'a {
    const PASTE_VERBS: &[&str] = &["paste", "share", "send", "provide"];
    let pasting = words(lead).last().is_some_and(|w| w == "paste");
    pasting.then_some(0).into_iter().chain(
        (0..ws.len())
            .filter(|&i| PASTE_VERBS.contains(&ws[i].as_str()))
            .map(|i| i + 1),
    )
}

/// Words that end the object of "paste" before what it is pasted into: "the content
/// of your cover letter" runs on past "of", "the essay you wrote" ends at "you".
#[rustfmt::skip]
const OBJECT_ENDS: &[&str] = &[
    "to", "you", "that", "which", "for", "so", "and", "or", "from", "with", "i", "please",
    "here", "below", "again", "as", "if", "because", "in",
];

/// Places in the conversation a text can be pasted into: "into the chat window", "into
/// your reply".
const CONVERSATION: &[&str] = &[
    "chat",
    "reply",
    "message",
    "conversation",
    "response",
    "thread",
    "box",
    "here",
];

/// The object of "paste" (from `ws[from]`) is pasted into something other than the
/// conversation: "paste the lyrics into Korean", "paste the report into three bullet
/// points", "paste your script into Go", "paste the article into a text editor". Such
/// a question asks the user to do the task, or to put the text somewhere else, and
/// Qwen2.5-Coder wrote it after "Could you paste" on about one text request in
/// twenty. "Paste the text you would like translated into Japanese" pastes the text:
/// its "into" belongs to "translated", after the object ends at "you". A paste "in"
/// the language or data format the user's message asks for ("paste your cover letter
/// in French" for "render my cover letter into French") asks for the result too; "in
/// English" for a translation into French asks for the source, and passes.
fn puts_it_elsewhere(ws: &[String], from: usize, user: &[String]) -> bool {
    use super::lexicon::LANGUAGES;
    let rest = &ws[from.min(ws.len())..];
    let end = rest
        .iter()
        .take(8)
        .position(|w| w == "into" || OBJECT_ENDS.contains(&w.as_str()));
    // "Could you paste the German text you'd like translated?" for an email to put
    // into German, "the JSON data you want to convert" for "convert this to json": the
    // object named in the form the user wants it turned into is the result.
    let object = &rest[..end.unwrap_or(rest.len().min(8))];
    if object.iter().any(|w| result_forms(user).any(|t| t == w)) {
        return true;
    }
    let Some(at) = end else {
        return false;
    };
    let after = || rest[at + 1..].iter().take(4);
    match rest[at].as_str() {
        "into" => !after().any(|w| CONVERSATION.contains(&w.as_str())),
        // "Paste your cover letter in French", "…the contact list in JSON format": the
        // text asked for already done. "Paste the table in the format you need" asks
        // the user to do it ("in a text format" names the text's own form).
        "in" => {
            after().any(|w| {
                (LANGUAGES.contains(&w.as_str()) || TARGET_FORMS.contains(&w.as_str()))
                    && user.contains(w)
            }) || (after().any(|w| w == "format")
                && rest[at + 1..].iter().take(5).any(|w| w == "you"))
        }
        _ => false,
    }
}

/// The languages and data forms the user's message asks a text to be turned into: the
/// word after "to", "into", "in" or "as" ("convert this to json", "the email … in
/// German"). A language after "from" is the source and not among them.
fn result_forms(user: &[String]) -> impl Iterator<Item = &String> + '_ {
    use super::lexicon::LANGUAGES;
    user.windows(2).filter_map(|p| {
        (["to", "into", "in", "as"].contains(&p[0].as_str())
            && (LANGUAGES.contains(&p[1].as_str()) || TARGET_FORMS.contains(&p[1].as_str())))
        .then_some(&p[1])
    })
}

/// Forms a text can be asked to come in that are the task's result ("in JSON format",
/// "in three bullet points").
#[rustfmt::skip]
const TARGET_FORMS: &[&str] = &[
    "json", "csv", "xml", "yaml", "html", "markdown", "bullet", "bullets",
];

/// How a user asks, at a reply's start: in the first person, or asking the assistant
/// to explain. An assistant that opens so is asking the user's question back as its
/// own (`restates_request`). An impersonal opening ("What is the error message …?")
/// may be a clarifying question, and is not here.
#[rustfmt::skip]
const USER_VOICE: &[&str] = &[
    "how can i", "how do i", "how should i", "how would i", "how could i", "how to",
    "can you explain", "could you explain", "can you please explain", "could you please explain",
    "can you describe", "could you describe", "can you tell me how", "could you tell me how",
    "can you show me how", "could you show me how", "can you help me", "could you help me",
    "is there a way to",
];

/// Requests whose right answer may be a question in the user's voice: a question
/// reworded, corrected, translated or written ("Rewrite more politely: how do I get a
/// refund").
#[rustfmt::skip]
const WRITES_A_QUESTION: &[&str] = &[
    "rewrite", "rephrase", "reword", "paraphrase", "grammar", "proofread", "correct",
    "translate", "polite", "politely", "question", "questions", "quiz", "faq", "interview",
];

/// Words of a restated question that say nothing of its topic.
#[rustfmt::skip]
const COMMON: &[&str] = &[
    "the", "a", "an", "and", "or", "to", "of", "in", "on", "for", "with", "by", "as", "at",
    "is", "are", "was", "be", "do", "does", "did", "i", "me", "my", "it", "its", "s", "t",
    "this", "that", "these", "there", "between", "about", "from", "into", "how", "what",
    "why", "when", "can", "could", "would", "should", "please", "more", "some", "any", "vs",
    "versus", "so", "if", "not", "just", "way",
];

/// Words by which a question asks the user for something of theirs: a clarifying
/// question, never a restated one.
#[rustfmt::skip]
const ASKS_THE_USER: &[&str] = &[
    "you", "your", "yours", "yourself", "re", "ve", "ll", "d", "which", "specify", "specific",
    "provide", "paste", "share", "clarify", "mean", "meant",
];

/// Does `reply` restate the user's request as a question of its own, instead of
/// answering it? Asked "What's the difference between a virus and a bacterium?",
/// Qwen2.5-Coder-0.5B replied "Can you explain the difference between a virus and a
/// bacterium with an example?" with the policy silent: the user's question, in the
/// user's voice. Of its 8 false clarifications on the first 353 controls, 6 were this.
/// Such a reply:
/// - is one question and nothing else;
/// - opens as a user asks (`USER_VOICE`: "how can i", "can you explain");
/// - asks nothing of the user after its opening (`ASKS_THE_USER`: no "you", "your",
///   "which", "specify"), as a clarifying question does;
/// - is of the user's words: at least two of its words of substance are the user's
///   (`same_word`), and they are half of its own or half of the user's.
pub fn restates_request(user: &str, reply: &str) -> bool {
    let r = reply.trim();
    if words(user)
        .iter()
        .any(|w| WRITES_A_QUESTION.contains(&w.as_str()))
    {
        return false;
    }
    let one_question = r.ends_with('?') && r.matches('?').count() == 1 && !r.contains('\n');
    if !one_question || first_sentence_end(r).is_some() {
        return false;
    }
    let ws = words(r);
    let Some(open) = USER_VOICE
        .iter()
        .map(|v| words(v))
        .find(|v| ws.starts_with(v))
    else {
        return false;
    };
    let rest = &ws[open.len()..];
    if rest.iter().any(|w| ASKS_THE_USER.contains(&w.as_str())) {
        return false;
    }
    let substance = |ws: &[String]| -> Vec<String> {
        ws.iter()
            .filter(|w| !COMMON.contains(&w.as_str()) && !FILLER.contains(&w.as_str()))
            .cloned()
            .collect()
    };
    let (mine, theirs) = (substance(rest), substance(&words(user)));
    let said = |of: &[String], by: &[String]| {
        of.iter()
            .filter(|w| by.iter().any(|u| same_word(u, w)))
            .count()
    };
    let (kept, covered) = (said(&mine, &theirs), said(&theirs, &mine));
    kept >= 2 && (2 * kept >= mine.len() || 2 * covered >= theirs.len())
}

#[cfg(test)]
mod tests {
    use super::super::{assess, retry_leads, Decision, LEAD_ASK, LEAD_LIVE, LEAD_NEED, LEAD_PASTE};
    use serde_json::json;

    /// Every lead a clarifying reply can start with.
    fn leads() -> Vec<&'static str> {
        let mut v = vec![LEAD_NEED, LEAD_ASK, LEAD_PASTE];
        v.extend(retry_leads(LEAD_NEED));
        v.extend(retry_leads(LEAD_PASTE));
        v
    }

    fn decision(prompt: &str) -> Decision {
        let d = assess(&[json!({"role": "user", "content": prompt})]);
        assert!(d.clarify, "{prompt}");
        d
    }

    /// Replies Qwen2.5-Coder-0.5B wrote (eval/results), and whether each asks for the
    /// missing piece.
    #[test]
    fn a_question_passes_when_it_names_a_piece_the_user_did_not() {
        for (prompt, reply, named) in [
            ("Where can I get a good haircut?", "To help with that, I need to know what specific haircut you're looking for.", false),
            ("Where can I get a good haircut?", "First, could you tell me where you are located?", true),
            ("Best bookstore nearby?", "Could you tell me where I live?", false),
            ("Best bookstore nearby?", "First, could you tell me my city or area?", false),
            ("Best bookstore nearby?", "First, could you tell me where you live?", true),
            ("Suggest a coffee shop where I can work.", "To help with that, I need to know where you are.", true),
            ("What's the average speed if it covered the distance in 2 hours?", "To answer that, I need to know the distance.", true),
            ("What's the average speed if it covered the distance in 2 hours?", "To help with that, I need to know the distance covered in 2 hours.", true),
            ("how many tiles do i need for my kitchen floor", "Could you tell me how many tiles are needed for your kitchen floor?", false),
            ("Which one is better?", "To help with that, I need to know what specific information you're looking for.", false),
            ("Which laptop should I get?", "To help with that, I need to know what you're looking for in a laptop.", true),
            ("Where does she live now?", "Could you tell me where she lives now?", false),
            ("How old is she?", "To help with that, I need to know more about the context or information you're looking for.", false),
            ("How old is she?", "First, could you tell me who \"she\" refers to?", true),
            ("What did he say?", "To help with that, I need to know the context or information you're referring to.", false),
            ("How old is she?", "To answer that, I need to know the name of the person you're referring to.", true),
            ("How many calories do I burn running?", "Could you tell me how many calories you burn running?", false),
            ("How many calories do I burn running?", "To answer that, I need to know the distance you run.", true),
            ("Book a flight to Rome for me.", "Could you tell me the destination city?", false),
            ("Book a flight to Rome for me.", "First, could you tell me what date and time you're interested in?", true),
            ("Can you structure my notes into JSON?", "Could you tell me what kind of notes you would like to structure?", false),
            ("Review my pull request and tell me what to improve.", "Could you paste the first part of your pull request?", false),
            ("Proofread my essay.", "Could you paste your essay here?", true),
            ("Summarize the book.", "Could you paste the title of the book you would like me to summarize?", false),
            // Pasted into the task's own form, or somewhere else: the user is asked to do it.
            ("Translate the lyrics into Korean.", "Could you paste the lyrics into Korean?", false),
            ("Can you sum up the report in three bullet points?", "Could you paste the report into three bullet points?", false),
            ("Can you port my script to Go? It's about 200 lines.", "Could you paste your Python script into Go?", false),
            ("Give me the key points of the article.", "Could you paste the article into a text editor or a tool like Markdown to easily identify the key points?", false),
            ("Can you tidy up the grammar in my cover letter?", "Could you paste the content of your cover letter into a text editor or an IDE so I can review it?", false),
            ("The spreadsheet formula gives #VALUE! in column D. any idea how to fix it?", "Could you paste the entire formula into a cell and let me know which sheet it is on?", false),
            ("Could you summarise the chapter I'm reading?", "Could you paste the chapter you're reading into the chat window?", true),
            ("Could you summarise the chapter I'm reading?", "Could you paste the chapter into the chat?", true),
            ("Could you render my cover letter into French?", "Could you paste your cover letter in French?", false),
            ("Can you turn my contact list into JSON?", "Could you paste the contact list in JSON format?", false),
            ("Can you turn my contact list into JSON?", "Could you paste the contact list in the chat?", true),
            ("Convert my height to centimeters.", "To help with that, I need to know your height in feet and inches.", true),
            ("Convert my height to centimeters.", "Could you tell me the height you want converted to centimeters?", true),
            // The text named in its result's form, or to be put in the form the user needs.
            ("convert this to json", "Could you paste the JSON data you want to convert into a JSON format?", false),
            ("convert this to json", "Could you paste the data you want to convert?", true),
            ("Turn the table above into a JSON array.", "Could you paste the table in the format you need?", false),
            ("Turn the table above into a JSON array.", "Could you paste the table?", true),
            ("I need the email I'm about to send my landlord in German, he barely reads English. Can you translate it?", "Could you paste the German text you'd like translated?", false),
            ("I need the email I'm about to send my landlord in German, he barely reads English. Can you translate it?", "Could you paste the English text you'd like translated?", true),
            ("Convert this JSON to YAML.", "Could you paste the JSON you want converted?", true),
            ("Translate my CV into German.", "Could you paste your CV in plain text format?", true),
            ("Translate my CV into German.", "Could you paste your CV in English?", true),
            // The user's own quantity asked back.
            ("how many tiles do i need for my kitchen floor", "Could you tell me the number of tiles you want?", false),
            ("I want to scale my lasagne recipe for the party, how much of everything do I need?", "Could you tell me the total amount of ingredients needed for your lasagne recipe?", false),
            ("how many tiles do i need for my kitchen floor", "Could you tell me the size of your kitchen floor?", true),
            ("How much paint do I need for the bedroom?", "To help with that, I need to know the size of the walls.", true),
            // An example of the result is an answer begun.
            ("Can you turn my contact list into JSON?", "Please paste your contact list in the format you want, such as `[{name: 'Alice'}]`.", false),
            ("Can you turn my contact list into JSON?", "Please paste your contact list like {\"name\": \"Alice\"}.", false),
            ("Translate the lyrics into Korean.", "Could you paste the lyrics you would like translated into Korean?", true),
            ("Write an executive summary of our Q2 results for the board deck.", "Could you paste the Q2 results for the board deck into your reply?", true),
            // "What you mean by" a word that is not the pronoun.
            ("My friend keeps talking about him like he's some genius. Who is he exactly?", "First, could you tell me what you mean by \"genius\"?", false),
            ("Is that true?", "Could you tell me what you mean by \"that\"?", true),
            // What is referred to, when the pronoun stands for a person.
            ("Can you tell me more about him? I'm writing a school report on him.", "To answer that, I need to know the name of the school report you're referring to.", false),
            ("Can you tell me more about him? I'm writing a school report on him.", "To answer that, I need to know the name of the person you're referring to.", true),
            ("Why is he so famous?", "To help with that, I need to know which actor you're referring to.", true),
            ("How old is she?", "Could you tell me more about the character you're referring to, please?", true),
            ("What year did she win the Nobel Prize?", "To help with that, I need to know the year you're referring to.", false),
            ("What year did she win the Nobel Prize?", "To answer that, I need to know who \"she\" refers to.", true),
            ("When did that happen?", "To help with that, I need to know which event you're referring to.", true),
            ("Is renting better than buying?", "Could you tell me what matters most in choosing between renting and buying?", true),
            // The options asked for by the user's word for them, and the question back.
            ("Compare the two offers I got and tell me which to take", "To help with that, I need to know the names of the offers you received.", true),
            ("python vs the other one for data science, which wins", "Could you tell me which option is more popular among data scientists?", false),
            ("Which one is better?", "To answer that, I need to know which of the two options you're referring to is best suited for your specific situation or task.", false),
            ("what's the best laptop", "To help with that, I need to know what matters most to you in the best laptop.", true),
            ("Is renting better than buying?", "To answer that, I need to know which criteria you're asking about when deciding whether renting is better than buying.", true),
            ("Which database should I use for my project?", "First, could you tell me what your project is about?", true),
            // The user's own thing whose number is missing, asked for by name.
            ("Convert my salary to hourly, I work full time.", "To help with that, I need to know your current salary and your working hours.", true),
            ("Convert my salary to hourly, I work full time.", "To help with that, I need to know your job.", false),
            ("How long until I reach my goal if I save 200 a month?", "To help with that, I need to know what your goal is.", false),
            ("how many tiles do i need for my kitchen floor", "To help with that, I need to know your kitchen floor.", false),
            // The assistant's plan after "so" is not its question.
            ("Which laptop should I get?", "Could you tell me your budget, so I can find which laptop is best for you?", true),
            ("Which laptop should I get?", "Could you tell me what your question is about?", false),
            // A word the user wrote, asked for by name after a word that says which.
            ("What's the average speed if it covered the distance in 2 hours?", "To help with that, I need to know the exact distance.", true),
            ("how many tiles do i need for my kitchen floor", "To help with that, I need to know the current tiles.", false),
            ("Where was that filmed?", "To help with that, I need to know which specific location you're referring to.", false),
            ("Where was that filmed?", "To help with that, I need to know which movie you're referring to.", true),
            ("Which programming language is the best?", "To help with that, I need to know which programming language you're interested in.", false),
            // The text before its target language or fields; the options before what
            // matters in the choice; and "what you're looking for" alone names nothing.
            ("return the results in json format", "To do that, please tell me the specific fields you need in your JSON output.", false),
            ("return the results in json format", "Could you paste the results you want in JSON, and the fields it should have?", true),
            ("Can you turn my contact list into JSON?", "To do that, please tell me the list itself and the fields you want to include in your JSON.", true),
            ("Can you turn my contact list into JSON?", "To do that, please tell me the fields you want to include in your JSON.", false),
            ("Translate this sentence.", "Could you tell me which language to translate into?", false),
            ("Translate this sentence.", "Could you paste the sentence you would like translated?", true),
            ("which one is better?", "First, could you tell me what matters most in the choice?", false),
            ("which one is better?", "First, could you tell me what the options are?", true),
            ("Which one is better?", "To help with that, I need to know what matters most in the choice and the names of the options.", true),
            ("Is renting better than buying?", "Could you tell me what matters most to you?", true),
            ("We're finally getting a dog!! What breed?", "To help with that, I need to know what you're looking for.", false),
            ("We're finally getting a dog!! What breed?", "To help with that, I need to know what you're looking for in a dog.", true),
            ("what's the best laptop", "To help with that, I need to know what you are looking for.", false),
            // For a stay, where the user is is the wrong place.
            ("Could you suggest a hotel close to the city centre for two nights?", "To help with that, I need to know where you're located.", false),
            ("Could you suggest a hotel close to the city centre for two nights?", "To help with that, I need to know which city you're located in.", false),
            ("Could you suggest a hotel close to the city centre for two nights?", "To help with that, I need to know which city you'd like to stay in.", true),
            ("Could you suggest a hotel close to the city centre for two nights?", "First, could you tell me where you're staying?", true),
            ("Best bookstore nearby?", "To help with that, I need to know where you're located.", true),
            // The user's own choice offered among examples; the topic alone.
            ("Which laptop should I get? My old one finally died.", "First, could you tell me what type of laptop you're looking for, such as desktop, laptop, or tablet?", false),
            ("Which laptop should I get? My old one finally died.", "First, could you tell me what you'll use it for, such as gaming, video editing, or office work?", true),
            ("which one is better?", "First, could you tell me the options, such as the two phones you're choosing between?", true),
            ("why did they ban it", "To help with that, I need to know more about the specific context or topic you're referring to.", false),
            ("why did they ban it", "To help with that, I need to know what \"it\" refers to.", true),
            // Only the sentence the lead starts is the request.
            ("What is the best restaurant?", "To help with that, I need to know which restaurant you're looking for. Please tell me the city.", false),
            ("Where does she live now?", "To help with that, I need to know where she lives now.\n\nDo you mean your sister?", false),
        ] {
            let d = decision(prompt);
            let lead = leads().into_iter().find(|l| reply.starts_with(*l)).expect("a lead");
            let wrote = &reply[lead.len()..];
            assert_eq!(d.reply_names_a_piece(prompt, lead, wrote), named, "{prompt} → {reply}");
        }
    }

    /// Replies that name no piece, Qwen's (eval/results) and others, and whether each
    /// asks amiss or only names nothing.
    #[test]
    fn a_question_that_names_nothing_asks_amiss_or_only_vaguely() {
        for (prompt, reply, amiss) in [
            // The user asked to do the task, or to give the result.
            ("Can you boil down the meeting notes into three bullet points?", "Could you paste the meeting notes into three bullet points?", true),
            ("Can you boil down the meeting notes into three bullet points?", "Please paste the meeting notes into three bullet points.", true),
            ("Can you boil down the meeting notes into three bullet points?", "To answer that, I need to know the specific meeting notes you would like me to summarize before lunch.", false),
            ("Could you render my cover letter into French?", "Please paste your cover letter in French.", true),
            ("Can you turn my contact list into JSON?", "Please paste your contact list in the format you want, such as `[{name: 'Alice'}]`.", true),
            ("Can you turn my contact list into JSON?", "To answer that, I need to know the specific list you would like to convert into JSON.", false),
            ("return the results in json format", "Could you paste the request so I can assist you better?", false),
            ("Summarize the book.", "Could you paste the title of the book you would like me to summarize?", false),
            ("Translate the lyrics into Korean.", "To help with that, I need to know which song you mean, and could you share it into Korean?", true),
            // The user's own question asked back.
            ("how many tiles do i need for my kitchen floor", "To help with that, I need to know how many tiles you want on your kitchen floor.", true),
            ("how many tiles do i need for my kitchen floor", "First, could you tell me how many tiles are in your kitchen floor?", true),
            ("I want to scale my lasagne recipe for the party, how much of everything do I need?", "To help with that, I need to know what specific lasagne recipe you're referring to.", false),
            // The conversion turned around.
            ("Convert my height to centimeters.", "To help with that, I need to know the height you want to convert from centimeters to inches.", true),
            ("Convert my height to centimeters.", "To answer that, I need to know the height of your person in centimeters.", true),
            ("Convert my height to centimeters.", "Could you tell me the number of centimeters in your height?", true),
            ("Where does she live now?", "First, could you tell me where she currently lives?", false),
            ("Where was that filmed?", "To help with that, I need to know which specific location you're referring to.", true),
            ("python vs the other one for data science, which wins", "Could you tell me which option is more popular among data scientists?", true),
            ("python vs the other one for data science, which wins", "To help with that, I need to know the specific context or problem you're trying to solve with data science.", false),
            // Another word than the pronoun, or a thing for a person.
            ("My friend keeps talking about him like he's some genius. Who is he exactly?", "First, could you tell me what you mean by \"genius\"?", true),
            ("My friend keeps talking about him like he's some genius. Who is he exactly?", "To help with that, I need to know the specific context or information you're referring to.", false),
            ("Can you tell me more about him? I'm writing a school report on him.", "To answer that, I need to know the name of the school report you're referring to.", true),
            ("Can you tell me more about him? I'm writing a school report on him.", "To help with that, I need to know what your school report is about.", false),
            ("Which laptop should I get? My old one finally died.", "First, could you tell me what type of laptop you're looking for, such as desktop, laptop, or tablet?", true),
            ("why did they ban it", "To help with that, I need to know more about the specific context or topic you're referring to.", false),
            ("Could you suggest a hotel close to the city centre for two nights?", "To help with that, I need to know where you're located.", true),
            // Named nothing, and asked nothing else.
            ("Translate this message for my grandma, she only speaks her native language.", "Could you tell me which language you speak?", false),
            ("Give me a JSON object for a new user record.", "To answer that, I need to know what kind of user record you're referring to.", false),
        ] {
            let d = decision(prompt);
            let lead = leads().into_iter().find(|l| reply.starts_with(*l)).expect("a lead");
            let wrote = &reply[lead.len()..];
            assert!(!d.reply_names_a_piece(prompt, lead, wrote), "{prompt} → {reply} names a piece");
            assert_eq!(d.reply_asks_amiss(prompt, lead, wrote), amiss, "{prompt} → {reply}");
        }
        // Live data alone asks for nothing, so nothing is amiss.
        let d = decision("What time is it?");
        assert!(!d.reply_asks_amiss("What time is it?", LEAD_LIVE, " the time. `12:00`"));
    }

    /// The first attempt that names a piece; else the first that asks nothing amiss;
    /// else the first.
    #[test]
    fn the_kept_attempt_names_a_piece_or_asks_nothing_amiss() {
        use super::kept_attempt;
        assert_eq!(kept_attempt(&[], &[]), 0);
        assert_eq!(
            kept_attempt(&[false, false, true], &[true, false, false]),
            2
        );
        assert_eq!(
            kept_attempt(&[false, false, false, false], &[true, true, false, false]),
            2
        );
        assert_eq!(
            kept_attempt(&[false, false, false, false], &[false, true, false, true]),
            0
        );
        assert_eq!(kept_attempt(&[false, false, false], &[true, true, true]), 0);
        assert_eq!(kept_attempt(&[true, false], &[true, false]), 0);
        // Attempts recorded before `asks_amiss` existed read as not amiss.
        assert_eq!(kept_attempt(&[false, false], &[]), 0);
    }

    /// Qwen's replies to a live question about "they" (eval/results).
    #[test]
    fn a_live_reply_is_read_to_its_question() {
        let p = "Did they win the game last night?";
        let d = decision(p);
        assert_eq!(d.lead.as_deref(), Some(LEAD_LIVE));
        assert_eq!(d.retry_leads, [super::super::LEAD_LIVE_ASK]);
        let asks_nothing =
            " the current results. Can you please provide me with the relevant information?";
        assert!(!d.reply_names_a_piece(p, LEAD_LIVE, asks_nothing));
        let asks_who = " the result. Could you tell me who \"they\" refers to?";
        assert!(d.reply_names_a_piece(p, LEAD_LIVE, asks_who));
        assert!(d.reply_names_a_piece(p, super::super::LEAD_LIVE_ASK, " who \"they\" refers to?"));
    }

    #[test]
    fn live_data_alone_asks_for_nothing_so_any_reply_passes() {
        let d = decision("What time is it?");
        assert!(d.retry_leads.is_empty());
        assert!(d.reply_names_a_piece("What time is it?", LEAD_LIVE, " the current time."));
    }

    /// Qwen2.5-Coder-0.5B's replies to clear messages, as recorded in the evaluation's
    /// runs with the policy silent: the user's question restated, and replies that ask
    /// the user for something or answer.
    #[test]
    fn a_restated_question_is_told_from_a_clarifying_one() {
        use super::restates_request;
        let restated = [
            ("how do I read a file line by line in rust", "How can I read a file line by line in Rust?"),
            ("How do I read a file line by line in Go?", "How can I handle errors when reading a file line by line in Go?"),
            ("What's the difference between a virus and a bacterium?", "Can you explain the difference between a virus and a bacterium with an example?"),
            ("In JavaScript, what's the difference between == and ===? a quick example would help", "Can you explain the difference between `==` and `===` in JavaScript?"),
            ("Python's GIL: what is it?", "Can you explain the concept of Global Interpreter Lock (GIL) in Python and how it affects performance?"),
            ("Why does Python raise 'IndentationError: unexpected indent'?", "Can you explain the purpose of indentation in Python?"),
            ("how do i pretty-print a json file from the command line with jq", "How can I pretty-print a JSON file using jq?"),
        ];
        for (user, reply) in restated {
            assert!(restates_request(user, reply), "{user} → {reply}");
        }
        let not = [
            // Asks the user for something of theirs.
            ("write me a fun little python program, whatever you want", "What's a fun little Python program you'd like to write?"),
            ("fix my code it keeps crashing", "Could you paste your code here?"),
            ("translate the menu", "Which language should I translate the menu into?"),
            ("How do I read a file in Go?", "How can I help you read a file in Go?"),
            // More than one sentence: an answer, or a greeting first.
            ("remind me to call the vet tomorrow at 9am", "Sure! I can remind you to call the vet tomorrow at 9am. How can I assist you today?"),
            ("How do I read a file in Go?", "How can I read a file in Go? Use bufio.Scanner."),
            // Not the user's words, or not in the user's voice.
            ("translate hello into French", "What is the target language?"),
            ("How do I read a file in Go?", "Do you mean a text file or a binary file?"),
            ("What's the capital of France?", "Paris."),
            // A question is the answer asked for.
            ("Rewrite more politely: how do I get a refund", "How can I get a refund?"),
            ("fix the grammar: how i can read file in go?", "How can I read a file in Go?"),
            // An impersonal question may ask the user for something.
            ("my script crashes when reading the file, how do I fix the error?", "What is the error message when reading the file?"),
        ];
        for (user, reply) in not {
            assert!(!restates_request(user, reply), "{user} → {reply}");
        }
    }
}
