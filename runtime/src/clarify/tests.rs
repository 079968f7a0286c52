//! Hand tables: a message, and the slots the policy must find missing (empty: it
//! must stay silent). These are examples of the rules' intent, written apart from the
//! evaluation set (eval/clarify.jsonl), which `slm eval clarify` scores.

use super::*;
use serde_json::json;

fn slots(text: &str, earlier: &[&str]) -> Vec<&'static str> {
    let mut v: Vec<&str> = decide(assess_text(text, earlier))
        .slots
        .iter()
        .map(|s| s.as_str())
        .collect();
    v.sort();
    v
}

#[test]
fn underspecified_prompts_name_their_missing_slot() {
    let mut bad = Vec::new();
    for (text, want) in [
        ("Translate this sentence.", &["target_language", "text"][..]),
        ("translate pls", &["target_language", "text"]),
        ("Translate it into German.", &["text"]),
        ("Translate 'I am hungry'.", &["target_language"]),
        ("How do you say this in French?", &["text"]),
        ("Can you fix my code?", &["text"]),
        ("What's wrong with this?", &["text"]),
        ("Proofread my cover letter please", &["text"]),
        ("Can you tidy up the grammar in my cover letter? I really want this job.", &["text"]),
        ("Summarize the article.", &["text"]),
        // A catalog or an inventory is data only the user has; its schema is not.
        ("Output the product catalog as JSON please, our API needs it by end of day", &["schema", "text"]),
        ("Create a JSON schema for our product catalog.", &["schema"]),
        ("tl;dr", &["text"]),
        (
            "Write a function that reverses a string.",
            &["programming_language"],
        ),
        (
            "How do I read a file line by line?",
            &["programming_language"],
        ),
        ("What is the best restaurant?", &["location"]),
        ("Where can I get a good haircut near me?", &["location"]),
        ("Give me a JSON object for a customer.", &["schema"]),
        ("Can you structure my notes into JSON?", &["schema", "text"]),
        // Misspelt pointers still point.
        ("Plese translate thsi message into Spanish", &["text"]),
        ("can u summarize teh article", &["text"]),
        // Tests of code the user has and did not paste.
        (
            "Write unit tests for the parser function we added yesterday in Python.",
            &["text"],
        ),
        ("Can you write docstrings for my class? It's Python.", &["text"]),
        ("Could you structure our meeting minutes as JSON?", &["schema", "text"]),
        ("Calculate the area of the rectangle.", &["quantity"]),
        ("How much will 3 tickets cost?", &["quantity"]),
        ("What's 20% of my salary?", &["quantity"]),
        ("Schedule a meeting with Anna.", &["date_time"]),
        ("Remind me to call the bank.", &["date_time"]),
        ("Which one is better?", &["criteria", "items"]),
        ("Is Python or Java better?", &["criteria"]),
        ("Compare the two options.", &["items"]),
        ("What did he say?", &["referent"]),
        ("Is that true?", &["referent"]),
        ("What's the weather like today?", &["live_data", "location"]),
        ("Is the pharmacy open now?", &["live_data", "location"]),
        // Which trains depends on where.
        (
            "Are the trains running on time today? there was a strike announced",
            &["live_data", "location"],
        ),
        ("Are the buses in Leeds running late?", &["live_data"]),
        // Taste picks with nothing said about taste, use or budget.
        ("Suggest a novel for me.", &["criteria"]),
        ("what board game should i buy", &["criteria"]),
        // "Who is she?" asks exactly what the conversation does not say.
        ("My sister keeps quoting her. Who is she?", &["referent"]),
        // Options told about at length but only ever numbered.
        (
            "We're repainting the kitchen and can't agree on which of the paint samples from the store to use. He likes the first one, I like the second one, and the light in there is poor most of the day. Which do you think is better for a kitchen with little light?",
            &["items"],
        ),
        // "the Oscar" is a thing, not a "he".
        ("How many times did he win the Oscar?", &["referent"]),
        ("Did they lose the final?", &["referent"]),
        (
            "Is it a good show? Everyone at work watches it.",
            &["referent"],
        ),
        // Numbers only the user has.
        (
            "How many calories will I burn on a bike ride?",
            &["quantity"],
        ),
        (
            "How many tiles do I need for my kitchen floor? Each box covers 2 square metres.",
            &["quantity"],
        ),
        ("Rewrite it in Rust.", &["text"]),
        // A long message that tells about its text instead of carrying it.
        (
            "I wrote a thank-you note to my host family in Osaka after staying with them for a month, and I really want it to sound natural and polite. Could you translate it into Japanese for me? They were so kind to me and I don't want to embarrass myself with a clumsy version.",
            &["text"],
        ),
        (
            "Please proofread my cover letter before I send it off tonight. It's for a junior designer role at a small studio I really admire, I have rewritten it about five times already, and I keep worrying that the tone is too casual for them.",
            &["text"],
        ),
        // The material's own size is not the floor's.
        (
            "How many tiles will my bathroom floor take? The tiles are 60 by 60 cm, grey.",
            &["quantity"],
        ),
        (
            "how do i say 'good luck' to my coworker? he doesn't speak english",
            &["target_language"],
        ),
        // The phrases after "say" are the text; "those" points back at them.
        (
            "I need to know how to say good morning and see you soon. Can you translate those?",
            &["target_language"],
        ),
        // A text the user received, introduced with "the"; the extracted things name
        // the fields.
        (
            "Pull the dates and amounts out of the invoice I received and give me JSON.",
            &["text"],
        ),
        // A program that reads the weather is not a question about the weather.
        (
            "Port my script to Rust, it checks the weather every morning.",
            &["text"],
        ),
        // "them" are the people who said so, not options.
        (
            "Set up a call with the supplier, they said mornings work best for them.",
            &["date_time"],
        ),
        (
            "What was my average speed if I drove for 3 hours?",
            &["quantity"],
        ),
        // A trip's cost or time between ways to travel turns on the trip.
        ("Would it be quicker to fly or take the bus?", &["location"]),
        ("should i take a taxi or walk, which is cheaper", &["location"]),
        // A known formula with its one input left out.
        ("What would I pay each month on a 15-year loan at 5%?", &["quantity"]),
        ("If I put money in an index fund at 8% a year, how much will I have after 20 years?", &["quantity"]),
        ("We're cycling to the lake at 15 km/h, how long will it take us?", &["quantity"]),
        ("work out the gratuity for me", &["quantity"]),
        ("Halve my grandma's cookie recipe, what amounts do I use?", &["text"]),
        // Code asked for with a data format or a pattern named, not a language.
        ("Please provide an implementation of a trie with insert and search.", &["programming_language"]),
        ("Write a function that reads a YAML file and prints its keys.", &["programming_language"]),
        ("Build a script that checks phone numbers without using regex.", &["programming_language"]),
        // An error message pasted, and the code that raises it not.
        ("I get this error: ValueError: too many values to unpack. Can you fix it?", &["text"]),
        // The target named only as the place's language.
        ("What's 'thank you very much' in the local language? Going there in May.", &["target_language"]),
        ("put this in italian pls thx", &["text"]),
        // A meeting booked on a day, at no time of it.
        ("Schedule a call with Priya on Thursday.", &["date_time"]),
        // Sides pointed at, not named.
        ("Is plan A or plan B the better deal for me, cost-wise?", &["items"]),
        ("Should I buy the blue one or the grey one? I care about battery life.", &["items"]),
        ("Which of these two phones is more reliable?", &["items"]),
        // An earlier answer asked about in the first message.
        ("Can you repeat what you said earlier, but shorter?", &["text"]),
        // Sunset and local time depend on a place; a time converted, on two.
        ("what time does the sun go down today", &["live_data", "location"]),
        ("What's the local time where my cousin lives?", &["live_data", "location"]),
        ("if it's 9am my time, what time is it for my boss?", &["location"]),
        // Round two: a change asked of code the user wrote, counted options, a dated
        // text, a language named by whose it is, a first message pointing back.
        ("Please extend the parser class I wrote last week with a method for dates.", &["text"]),
        ("Rewrite this to use generators instead of lists.", &["text"]),
        ("We shortlisted four suppliers, can you make a pros and cons table?", &["items"]),
        ("Turn today's standup notes into five bullet points.", &["text"]),
        ("how do you write 'welcome home' in my uncle's language?", &["target_language"]),
        ("Make the one you suggested shorter.", &["referent"]),
        ("I save $300 a month at 5% interest, how much will I have?", &["quantity"]),
        ("getting 'cannot read property length of null' pls fix", &["text"]),
        // Round three.
        ("Is it safe to drink?", &["referent"]),
        ("how do i turn it on", &["referent"]),
        ("Port this to async/await, thanks", &["text"]),
        ("Add caching to my database query function.", &["text"]),
        ("Translate it into the other official language of our country.", &["target_language", "text"]),
        ("A car goes at 50 km/h. How long until it reaches the city?", &["quantity"]),
        ("compute the volume", &["quantity"]),
        ("when is bin day", &["location"]),
        ("Java or Kotlin?", &["criteria"]),
        ("Make a JSON array of the books we talked about.", &["schema", "text"]),
    ] {
        let got = slots(text, &[]);
        if got != want {
            bad.push(format!("{text:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn clear_prompts_stay_silent() {
    let mut bad = Vec::new();
    for text in [
        "Translate 'Where is the train station?' into Spanish.",
        "How do you say thank you in Japanese?",
        "Here is a sentence: 'The cat sat.' Translate it into German.",
        "Fix the bug in this code:\n```python\nprint(1 +)\n```",
        "Summarize this: The council met on Monday and approved the new park budget.",
        "Summarize the plot of Hamlet.",
        "Explain recursion in one paragraph.",
        "Write a Python function that checks whether a number is prime.",
        "Write a Python script that downloads today's weather forecast.",
        "Extract the names and emails from this: Ann <ann@x.org>, Bo <bo@y.org>. Give me JSON.",
        "What's a good way to structure a weekly team meeting agenda so it stops running over?",
        "Structure these notes as JSON with keys topic and points: budget approved; launch in May.",
        "Write a haiku about autumn.",
        "Plese translate thsi into French: Good morning, everyone.",
        "Write unit tests in Python for a function that reverses a string.",
        "Write a unit test for this Python function:\n```python\ndef add(a, b):\n    return a + b\n```",
        "What documentation for Rust's standard library is best for beginners?",
        "What is the best restaurant in Lyon for a family dinner?",
        "What's a good recipe for pizza dough?",
        "Create a JSON object for a user with fields name, age and email.",
        "What is the area of a rectangle 5 m by 3 m?",
        "How many legs does a spider have?",
        "How long does it take light to reach Earth from the Sun?",
        "Schedule a meeting with Anna on Tuesday at 3pm.",
        "Is Python or Java better for Android development?",
        "Is it faster to fly or take the train from Paris to Lyon?",
        "Is cycling or driving better for the environment?",
        "Is cycling faster than walking?",
        "Is a plane faster than a train?",
        "Why is flying cheaper than the train in Europe?",
        "Is driving usually cheaper than the train?",
        "What is the capital of Japan?",
        "Is it safe to eat raw eggs?",
        "Python's GIL: what is it?",
        "What is the typical weather in Lisbon in July?",
        "Who wrote Pride and Prejudice?",
        "What is the difference between TCP and UDP?",
        "Hi",
        "Hello",
        "Say hello.",
        "Name a colour.",
        "Name a fruit.",
        "Another one?",
        "Write a long story about a lighthouse keeper.",
        "Write a Python function that adds two numbers.",
        "What is the capital of France?",
        "Recommend a fantasy novel for a twelve-year-old who loved Narnia.",
        "Which laptop should I get for video editing under $1500?",
        "Who is the author of the Harry Potter books?",
        "When did the Beatles split up, and why did they?",
        "How much paint do I need for a wall 4 m by 2.5 m? One litre covers 10 square metres.",
        "How many 20x20 cm tiles do I need for a floor 2 m by 3 m?",
        "The tiles are 60 by 60 cm and the hallway is 5 m by 1.2 m. How many tiles do I need?",
        // A long text pasted on one line, pointed at with "this".
        "Summarize this for me please the council voted on Tuesday to extend the cycle lane by two kilometres and supporters say it will cut congestion while shop owners worry about losing parking and work begins in September and should take about four months to finish according to the city",
        // Told at length, with the text on its own lines.
        "Could you proofread my cover letter? It's for a junior designer role at a small studio I admire, and I keep worrying that the tone is too casual for them, so be honest with me please.\nDear Ms Lee, I am writing to apply for the junior designer role at your studio.",
        "What is a good neighbourhood in the Gracia area of Barcelona for families?",
        "My bedroom gets little light: what is an easy plant to keep alive?",
        "In Excel, why does =A1/B1 give #DIV/0! when B1 is empty?",
        "how do i say 'good luck' in korean? my coworker doesn't speak english",
        "How many calories does a 70 kg person burn running 5 km?",
        // Each formula's input given.
        "What's the monthly payment on a $250,000 mortgage over 30 years at 6%?",
        "How long does it take to drive 180 miles at 60 mph?",
        "Calculate a 15% tip on a $64 bill.",
        "I invest 10k at 5% a year compounded yearly, how much will I have after 8 years?",
        "Scale my pancake recipe from 4 to 6 servings: 200 g flour, 2 eggs, 300 ml milk.",
        // A regex, an error with its code, a general error, a meeting with its time.
        "fix the regex so it also accepts dashes: ^[a-z0-9_]+$",
        "Fix it please: `const xs = data.map(f)` throws TypeError: Cannot read properties of undefined",
        "How do I fix ModuleNotFoundError: No module named requests?",
        "Book a 1:1 with Sam on Friday at 10am.",
        "Set up a sync with the design team next Tuesday 2-3pm.",
        // The language named, the sides named, a time zone of a named place.
        "Write a Python function that parses JSON from a file.",
        "Write a unit test for this function: def is_odd(n): return n % 2 == 1",
        "How do I say 'thank you' in the local language of Brazil, Portuguese?",
        "Which is more reliable, a Toyota Corolla or a Honda Civic?",
        "What time is 3pm in New York for someone in London?",
        "Roughly when does the sun set in Oslo around the summer solstice?",
        "Add a function to our Go codebase that checks whether a year is a leap year.",
        "I save $300 a month at 5% interest, how much will I have after 10 years?",
        "We compared Postgres, MySQL and SQLite; make a pros and cons table of the three.",
        "Is it safe to swim right after eating a big lunch?",
        "My neighbour's puppy chews everything in sight all day long. Is that normal?",
        "What is the sales tax rate in Ontario?",
        "Which is the better deal: quote A at $9,800 with a 10-year warranty or quote B at $8,900 with 2 years?",
        "Turn the lights metaphor into a haiku: the city lights are stars that fell asleep.",
    ] {
        let got = slots(text, &[]);
        if !got.is_empty() {
            bad.push(format!("{text:?}: got {got:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

#[test]
fn earlier_turns_fill_slots() {
    let earlier = [
        "Here is my essay: Cats are the best pets because they are quiet.",
        "Thanks, it reads well.",
    ];
    assert!(slots("Translate it into French.", &earlier).is_empty());
    assert!(slots("Proofread it.", &earlier).is_empty());
    assert!(slots("What did he say?", &earlier).is_empty());
    assert_eq!(
        slots("Now write a function for it.", &["I use Rust at work."]),
        Vec::<&str>::new()
    );
}

#[test]
fn apply_appends_a_visible_note_only_when_it_fires() {
    let mut m = vec![json!({"role": "user", "content": "Translate this sentence."})];
    let d = apply(&mut m);
    assert!(d.clarify);
    let c = m[0]["content"].as_str().unwrap();
    assert!(
        c.starts_with("Translate this sentence.\n\n[Clarify first: "),
        "{c}"
    );
    assert!(c.contains("the sentence to translate"), "{c}");
    let clear = vec![json!({"role": "user", "content": "What is the capital of Japan?"})];
    let mut m = clear.clone();
    let d = apply(&mut m);
    assert!(!d.clarify && d.note.is_none() && d.missing.is_none());
    assert_eq!(m, clear, "left byte for byte");
    let j = d.to_json();
    assert_eq!(j["clarify"], json!(false));
    assert!(j["missing"].is_null());
    assert!(j["lead"].is_null());
    assert!(!start_reply(&mut m, &d), "a silent policy starts no reply");
    assert_eq!(m, clear);
}

#[test]
fn the_reply_starts_with_a_lead_that_names_no_piece() {
    let cases = [
        ("Translate this sentence.", LEAD_PASTE),
        ("Proofread my essay.", LEAD_PASTE),
        ("Translate 'good morning'.", LEAD_NEED),
        ("Write a script to rename files.", LEAD_NEED),
        ("Recommend me a book.", LEAD_NEED),
        ("Why is he so famous?", LEAD_NEED),
        ("Please set an alarm.", LEAD_ASK),
        ("Give me a JSON object for a customer.", LEAD_ASK),
        ("Is the pharmacy still open?", LEAD_LIVE),
        ("Will it rain tomorrow?", LEAD_LIVE),
        // Live data comes first: the text is asked for after the limitation.
        ("Summarize today's news.", LEAD_LIVE),
    ];
    for (text, lead) in cases {
        let mut m = vec![json!({"role": "user", "content": text})];
        let d = apply(&mut m);
        assert_eq!(d.lead.as_deref(), Some(lead), "{text}");
        assert!(start_reply(&mut m, &d));
        assert_eq!(m.len(), 2);
        assert_eq!(m[1], json!({"role": "assistant", "content": lead}));
    }
}

#[test]
fn hostile_messages_get_a_decision_not_a_panic() {
    // Long, odd and non-English messages: the rules read words, never index past them.
    let long = "translate this ".repeat(20_000);
    let t = std::time::Instant::now();
    let d = decide(assess_text(&long, &[]));
    eprintln!("{} words assessed in {:?}", 40_000, t.elapsed());
    // A long message carries its own text; only the language is missing.
    assert_eq!(d.slots, vec![Slot::TargetLanguage]);
    for text in [
        "",
        " ",
        "?",
        "'",
        "\"",
        "```",
        "'a",
        "a'",
        ":",
        "\u{0}",
        "ü'ö'",
        "1:1",
        "20%",
        "%",
        "Übersetze diesen Satz.",
        "这句话翻译一下",
        "this",
        "it?",
        "\n\n\n",
    ] {
        let _ = decide(assess_text(text, &[]));
        let _ = decide(assess_text(text, &[text]));
    }
    let mut m = vec![json!({"role": "user", "content": 42})];
    assert!(!apply(&mut m).clarify, "a non-text content is left alone");
    assert_eq!(m[0]["content"], 42);
}

/// What the note asks for, piece by piece, in the words the rules found: the user's own
/// word for the options, a reminder's own time, the kind of thing a verb says, a
/// circle's radius. A row's slot picks the piece; the others may be asked for too.
#[test]
#[rustfmt::skip]
fn each_piece_is_asked_for_in_the_words_the_rules_found() {
    for (text, slot, want) in [
        // Options the user points at, by name, in the user's word for them.
        ("Compare these two bikes for me.", Slot::Items, "for the names of the bikes being compared"),
        ("Rank those movies from best to worst.", Slot::Items, "for the names of the movies being compared"),
        ("Compare the two insurance plans.", Slot::Items, "for the names of the insurance plans being compared"),
        ("Which is cheaper?", Slot::Items, "for the names of the options being compared"),
        ("Compare both of them.", Slot::Items, "for the names of the options being compared"),
        ("Compare the two options.", Slot::Items, "for the names of the options being compared"),
        ("Which of these two performs better?", Slot::Items, "for the names of the options being compared"),
        ("Compare both, thanks.", Slot::Items, "for the names of the options being compared"),
        // A reminder or an alarm: its own time, not the time of what it is about.
        ("Remind me to renew my passport.", Slot::DateTime, "for the date and time of the reminder"),
        ("Can you set a reminder for the vet?", Slot::DateTime, "for the date and time of the reminder"),
        ("Set an alarm, please.", Slot::DateTime, "for the date and time of the alarm"),
        ("Schedule a meeting with Anna.", Slot::DateTime, "for the date and time"),
        // A thing's kind, where the verb says it.
        ("Who directed that?", Slot::Referent, "which film or show \"that\" is"),
        ("When was it painted?", Slot::Referent, "which painting \"it\" is"),
        ("When did that happen?", Slot::Referent, "what \"that\" refers to"),
        // What "it" is before who "they" are; "they" alone asks who.
        ("why did they ban it", Slot::Referent, "what \"it\" refers to"),
        ("Why did they cancel it?", Slot::Referent, "what \"it\" refers to"),
        ("Why did they say that?", Slot::Referent, "who \"they\" refers to"),
        // A stay is wanted where the user is going.
        ("Could you suggest a hotel close to the city centre for two nights?", Slot::Location, "for the city to stay in"),
        ("Any good sushi places around here?", Slot::Location, "for my location (my city or area)"),
        // A text's quality names the text it is in.
        ("Can you tidy up the grammar in my cover letter?", Slot::Text, "for the cover letter itself"),
        ("Fix the wording of my essay.", Slot::Text, "for the essay itself"),
        ("Fix the grammar.", Slot::Text, "for the grammar itself"),
        // A circle's one dimension; a rectangle's two.
        ("Calculate the circumference of the circle.", Slot::Quantity, "for the radius or the diameter"),
        ("Calculate the area of the rectangle.", Slot::Quantity, "for the dimensions"),
    ] {
        let d = decide(assess_text(text, &[]));
        let asks: Vec<&str> = d
            .pieces
            .iter()
            .filter(|p| p.slot == slot)
            .map(|p| p.ask.as_str())
            .collect();
        assert_eq!(asks, [want], "{text}");
    }
}

/// A reading with `margin` against a threshold of 0, naming `first` then `second`
/// (at margins 2 and `second_margin`).
fn reading(margin: f32, first: Slot, second: Slot, second_margin: f32) -> Reading {
    let mut slots = vec![(first, 2.0), (second, second_margin)];
    slots.extend(
        ALL_SLOTS
            .iter()
            .filter(|s| **s != first && **s != second)
            .map(|&s| (s, -3.0)),
    );
    Reading {
        layer: 7,
        margin,
        threshold: 0.0,
        veto: -5.0,
        slots,
    }
}

/// Where the rules find nothing and the probe fires, the probe decides: its named
/// slots, in general words, with a lead and a note like the rules'; the reading is
/// in the decision and its `why`. Where it does not fire, nothing changes but the
/// `why`. Where the rules fire, their decision stands.
#[test]
fn the_probe_decides_where_the_rules_are_silent() {
    let clear = [json!({"role": "user", "content": "What is the capital of France?"})];
    let rules = assess(&clear);
    assert!(!rules.clarify, "{}", rules.why);

    let r = reading(1.5, Slot::Items, Slot::Criteria, 0.5);
    let d = assess_read(&clear, Some(&r));
    assert!(d.clarify);
    // Equal scores: in slot order, as the rules' findings are.
    assert_eq!(d.slots, vec![Slot::Criteria, Slot::Items]);
    assert_eq!(d.category, Some("probe"));
    assert_eq!(
        d.missing.as_deref(),
        Some("what matters most in the choice and the options to choose between")
    );
    assert_eq!(d.lead.as_deref(), Some(LEAD_NEED));
    assert!(d.note.as_deref().unwrap().contains(
        "asks me for what matters most in the choice and for the names of the options to choose between"
    ), "{:?}", d.note);
    assert!(
        d.why
            .contains("margin at layer 7 is 1.50, at or above its threshold 0.00"),
        "{}",
        d.why
    );
    assert_eq!(d.why.matches("no rule found").count(), 1, "{}", d.why);
    assert_eq!(d.probe.as_ref(), Some(&r));
    assert!(!d.retry_leads.is_empty());

    // A second slot whose own head does not fire is not asked for.
    let d = assess_read(
        &clear,
        Some(&reading(1.5, Slot::Text, Slot::Quantity, -0.1)),
    );
    assert_eq!(d.slots, vec![Slot::Text]);
    assert_eq!(d.lead.as_deref(), Some(LEAD_PASTE));

    // Below the threshold: the rules' decision, the margin in its why.
    let d = assess_read(
        &clear,
        Some(&reading(-0.2, Slot::Items, Slot::Criteria, 0.5)),
    );
    assert!(!d.clarify);
    assert!(d.why.contains("no rule found a missing piece; the clarify probe's margin at layer 7 is -0.20 (threshold 0.00)"), "{}", d.why);

    // The rules fire: theirs stands, whatever the probe names.
    let vague = [json!({"role": "user", "content": "Translate this sentence."})];
    let d = assess_read(
        &vague,
        Some(&reading(3.0, Slot::Location, Slot::Items, 1.0)),
    );
    assert_eq!(d.slots, assess(&vague).slots);
    assert_ne!(d.category, Some("probe"));
    assert!(d.why.contains("margin at layer 7 is 3.00"), "{}", d.why);

    // Far under the veto, the rules' finding is set aside, but never live data's.
    let vague = [json!({"role": "user", "content": "Summarize the article."})];
    let d = assess_read(
        &vague,
        Some(&reading(-6.0, Slot::Location, Slot::Items, 1.0)),
    );
    assert!(!d.clarify);
    assert!(
        d.why.contains(
            "set aside: the clarify probe's margin at layer 7 is -6.00, under its veto -5.00"
        ),
        "{}",
        d.why
    );
    assert!(
        assess_read(
            &vague,
            Some(&reading(-4.0, Slot::Location, Slot::Items, 1.0))
        )
        .clarify
    );
    let live = [json!({"role": "user", "content": "Will it rain tomorrow?"})];
    assert!(assess(&live).slots.contains(&Slot::LiveData));
    assert!(assess_read(&live, Some(&reading(-60.0, Slot::Text, Slot::Items, 1.0))).clarify);
    // Nor a translation's language: "Chinese" names more than one, and the probe reads
    // a language named as given.
    let chinese = [json!({"role": "user", "content": "translate 'see you soon' into chinese"})];
    assert_eq!(assess(&chinese).slots, vec![Slot::TargetLanguage]);
    assert!(
        assess_read(
            &chinese,
            Some(&reading(-60.0, Slot::Text, Slot::Items, 1.0))
        )
        .clarify
    );

    // The note joins the message as the rules' does; live data states the limit.
    let mut m = clear.to_vec();
    let d = apply_read(
        &mut m,
        Some(&reading(1.0, Slot::LiveData, Slot::Text, -1.0)),
    );
    assert_eq!(d.lead.as_deref(), Some(LEAD_LIVE));
    let content = m[0]["content"].as_str().unwrap();
    assert!(content.starts_with("What is the capital of France?\n\n[Clarify first: you have no live data, so you cannot know the current facts this needs."), "{content}");
}

/// A choice the user leaves to the assistant ("any language you want", "your pick",
/// "a fictional spaceship") is not missing, for the rules or the probe; what no
/// grant can supply (the text, live data) still is. A "sample JSON" for the user's
/// own endpoint grants nothing: its fields are theirs.
#[test]
fn a_choice_left_to_the_assistant_is_not_missing() {
    for (text, want) in [
        ("show me hello world in any language you want", &[][..]),
        (
            "Write a short program that does something fun. Language is your call.",
            &[],
        ),
        (
            "Give me the word for 'cat' in three languages, your pick.",
            &[],
        ),
        (
            "translate 'thank you' into whatever language you think sounds the coolest",
            &[],
        ),
        ("make up a json blob describing a fictional spaceship", &[]),
        ("Translate this into any language you like.", &["text"]),
        ("Give me sample JSON for our order endpoint.", &["schema"]),
        (
            "Write a function that reverses a string.",
            &["programming_language"],
        ),
        ("Tiny Python snippet that prints today's date please", &[]),
        ("What's today's date?", &["live_data"]),
    ] {
        assert_eq!(slots(text, &[]), want, "{text}");
    }
    // An order to produce one of a kind grants the choice of which.
    for text in [
        "Name a colour.",
        "Pick a number between 1 and 10.",
        "Give me a random word in French.",
    ] {
        let d = assess_read(
            &[json!({"role": "user", "content": text})],
            Some(&reading(3.0, Slot::Criteria, Slot::Items, 1.0)),
        );
        assert!(!d.clarify, "{text}: {}", d.why);
    }
    assert!(
        assess_read(
            &[json!({"role": "user", "content": "Help me pick a laptop."})],
            Some(&reading(3.0, Slot::Criteria, Slot::Items, 1.0)),
        )
        .clarify
    );
    let fun = [json!({"role": "user", "content": "show me hello world in any language you want"})];
    let d = assess_read(
        &fun,
        Some(&reading(3.0, Slot::ProgrammingLanguage, Slot::Schema, 1.0)),
    );
    assert!(!d.clarify, "{}", d.why);
    assert!(
        d.why.contains("given or left to the assistant"),
        "{}",
        d.why
    );
    // What the probe names beyond the choice is still asked for.
    let d = assess_read(
        &fun,
        Some(&reading(3.0, Slot::ProgrammingLanguage, Slot::Text, 1.0)),
    );
    assert_eq!(d.slots, vec![Slot::Text]);
}

/// What no model can know: today's prices and news, and the user's own accounts.
#[test]
fn todays_news_prices_and_own_accounts_are_live() {
    for (text, want) in [
        ("how much is bitcoin worth today", &["live_data"][..]),
        (
            "Any breaking news I should know about this morning?",
            &["live_data"],
        ),
        (
            "Where's my Amazon order? It said it would arrive today",
            &["live_data"],
        ),
        (
            "Do I have anything on my calendar Thursday morning?",
            &["live_data"],
        ),
        ("What's my checking account balance?", &["live_data"]),
        ("explain how bitcoin works", &[]),
        ("my order total is $45, what's a 15% tip?", &[]),
        (
            "Put the dentist appointment on my calendar.",
            &["date_time"],
        ),
        (
            "write a headline for my bake sale flyer: cookies $1, Saturday 10am at the library",
            &[],
        ),
    ] {
        assert_eq!(slots(text, &[]), want, "{text}");
    }
}

/// Phrasings a new author used for clear prompts that the rules misread: a relative
/// "which is", a stated mood, a total in cents, time (not money) to split, a forecast
/// the user gives.
#[test]
fn clear_prompts_in_new_words_stay_silent() {
    for text in [
        "This works on Postgres 15 but errors in prod, which is MySQL 8: SELECT 1; can you fix it so it runs on both?",
        "recommend me a movie for tonight, something lighthearted",
        "split the bill: total came to 186.40 including tip, there were 4 of us, how much does everyone owe?",
        "I have 3 hours tonight to study for a biology exam on cell structure and genetics. How should I split the time?",
        "forecast says tomorrow in Lyon will be 9°C with showers in the afternoon. what should i wear?",
        "What should I wear to my job interview tomorrow?",
    ] {
        assert_eq!(slots(text, &[]), Vec::<&str>::new(), "{text}");
    }
    // Their underspecified twins still fire.
    for (text, want) in [
        ("Which is better?", &["criteria", "items"][..]),
        ("recommend me a movie, something good", &["criteria"]),
        ("How much should I tip?", &["quantity"]),
        ("what should i wear tomorrow in Lyon?", &["live_data"]),
        (
            "what should i wear tomorrow, gonna be walking around all day",
            &["live_data", "location"],
        ),
    ] {
        assert_eq!(slots(text, &[]), want, "{text}");
    }
}

/// A piece the message plainly gives is not missing, whichever reader names it.
#[test]
fn the_probe_does_not_ask_for_a_piece_the_message_gives() {
    let day = [json!({"role": "user", "content": "plan my day tomorrow"})];
    let d = assess_read(&day, Some(&reading(3.0, Slot::DateTime, Slot::Items, -1.0)));
    assert!(!d.clarify, "{}", d.why);
    assert!(
        d.why.contains("given or left to the assistant"),
        "{}",
        d.why
    );
    let d = assess_read(&day, Some(&reading(3.0, Slot::DateTime, Slot::Items, 1.0)));
    assert_eq!(d.slots, vec![Slot::Items]);
    let party = [json!({"role": "user", "content":
        "My party is on Saturday, 12 October. When should I send the invitations?"})];
    let d = assess_read(
        &party,
        Some(&reading(3.0, Slot::DateTime, Slot::Location, -0.5)),
    );
    assert!(!d.clarify, "{}", d.why);
    let py = [json!({"role": "user", "content": "write me a python script for the thing"})];
    let d = assess_read(
        &py,
        Some(&reading(
            3.0,
            Slot::ProgrammingLanguage,
            Slot::Referent,
            1.0,
        )),
    );
    assert_eq!(d.slots, vec![Slot::Referent]);
    // The language is read as the code rule reads it: a test framework or code shown
    // names it, a language ruled out ("without regex") does not.
    for (text, given) in [
        (
            "write a pytest test that checks sorted([3, 1, 2]) is [1, 2, 3]",
            true,
        ),
        ("what's wrong here: def area(r): return 3.14 * r ** 2", true),
        ("a quick script for it in js", true),
        ("a function that checks an email without using regex", false),
    ] {
        let d = assess_read(
            &[json!({"role": "user", "content": text})],
            Some(&reading(
                3.0,
                Slot::ProgrammingLanguage,
                Slot::Referent,
                1.0,
            )),
        );
        let want = if given {
            vec![Slot::Referent]
        } else {
            vec![Slot::ProgrammingLanguage, Slot::Referent]
        };
        assert_eq!(d.slots, want, "{text}");
    }
    // A span is not a day: the meeting next week still needs one.
    let d = assess_read(
        &[
            json!({"role": "user", "content": "Set up a meeting with the design team next week and draft the invite."}),
        ],
        Some(&reading(3.0, Slot::DateTime, Slot::Items, -1.0)),
    );
    assert_eq!(d.slots, vec![Slot::DateTime]);
    // Without a date, the date is still missing.
    let d = assess_read(
        &[json!({"role": "user", "content": "plan my day"})],
        Some(&reading(3.0, Slot::DateTime, Slot::Items, -1.0)),
    );
    assert_eq!(d.slots, vec![Slot::DateTime]);
}

/// Pieces the rules missed, from the 14th author: an error on a line of unshown code,
/// the user's own place in a time-zone question, a bare lowercase pair, today's prices
/// and news.
#[test]
fn the_fourteenth_authors_gaps_are_found() {
    for (text, want) in [
        ("This keeps throwing a NullPointerException on line 42. What am I doing wrong??", &["text"][..]),
        ("I need to send an email to my client in Tokyo so it arrives at 9am their time. What time is that for me?", &["location"]),
        ("when is a good time to call my mom in australia", &["location"]),
        ("react vs vue?", &["criteria"]),
        ("Please fix the formatting of the table so the columns line up.", &["text"]),
        ("How do I fix the table of contents in Word?", &[]),
        ("how much is bitcoin today", &["live_data"]),
        ("whats the euro to dollar rate rn", &["live_data"]),
        ("Any news about the election?", &["live_data"]),
        // Their clear twins stay silent.
        ("Why do I get a NullPointerException in Java?", &[]),
        ("I'm in London. When is a good time to call my mom in Australia?", &[]),
        ("Can you recommend a hotel in Paris for me?", &[]),
        ("What does 'vs' stand for?", &[]),
    ] {
        assert_eq!(slots(text, &[]), want, "{text}");
    }
}

/// Words the rules misread for a missing piece, from the 12th author's controls and
/// underspecified prompts: a noun taken for a verb, a question about JSON taken for a
/// request for JSON, a pet's "him", documents compared by their names.
#[test]
fn misreadings_of_the_twelfth_author_stay_fixed() {
    for (text, want) in [
        ("is it ok to have comments in a .json file?", &[][..]),
        ("Can JSON have trailing commas?", &[]),
        ("give me a sample morning routine for someone trying to be more productive", &[]),
        (
            "My neighbour's dog barks every time I open my back door. How can I get him used to me?",
            &[],
        ),
        ("my cat keeps scratching the sofa, how do i stop her", &[]),
        (
            "My grandson set up this email thing on my tablet and now it wont stop beeping every few minutes. How do I make it stop",
            &[],
        ),
        ("compare these two job contracts and tell me which is better for me", &["text"]),
        ("how long does it take to get there by train", &["location"]),
        // From the 14th author: events inside a text to translate, a time to go to the
        // gym, a rate and a chance the user gives.
        (
            "can you put this into spanish for me please: 'Sofia will be absent on Friday because she has a dentist appointment.'",
            &[],
        ),
        (
            "I work 9 to 5 Monday to Friday and want to go to the gym 3 times a week. Which days and times would you suggest?",
            &[],
        ),
        ("Today's rate on my bank app is 1 EUR = 1.08 USD. How many dollars will I get for 450 euros?", &[]),
        (
            "My forecast app says 14°C and a 70% chance of rain in Leeds this afternoon. Should I bring an umbrella?",
            &[],
        ),
        ("Could you draft an invite for the book club meeting?", &["date_time"]),
        ("need a book for my flight", &[]),
        // Still asked: a JSON wanted, a pronoun with no one, a text to shorten.
        ("Can you give me some JSON for a user?", &["schema"]),
        ("What did he say about it?", &["referent"]),
        ("make it shorter", &["text"]),
        ("what should i read next", &["criteria"]),
        // From the 13th author, after its blind run.
        ("Compare merge sort and quicksort on time complexity, memory use and stability.", &[]),
        (
            "Can you make 50 sample records in JSON for testing our database? Each needs id (int), email, signup_date (ISO 8601) and is_active (bool).",
            &[],
        ),
        ("I took the one you mentioned and now my stomach hurts, is that normal?", &["referent"]),
        ("Is my train on time?", &["live_data", "location"]),
        ("Is it raining right now?", &["live_data", "location"]),
        ("what should i read next after Dune?", &[]),
    ] {
        assert_eq!(slots(text, &[]), want, "{text}");
    }
}

/// Pieces the rules missed, from the 15th author (blind): a conversion between two
/// currencies with no rate, a target named only vaguely ("Chinese", "Swiss"), and
/// "that movie you mentioned" in a first message. Each with wording of its own.
#[test]
fn the_fifteenth_authors_gaps_are_found() {
    for (text, want) in [
        (
            "how many pesos would i get for 200 dollars?",
            &["live_data"][..],
        ),
        (
            "If 1 USD = 17 MXN, how many pesos do I get for 200 dollars?",
            &[],
        ),
        ("Convert 50 pounds to euros at a rate of 1.17.", &[]),
        (
            "What are 80 Canadian dollars in US dollars these days?",
            &["live_data"],
        ),
        (
            "how do you write 'happy birthday' in chinese",
            &["target_language"],
        ),
        ("write 'happy birthday' in traditional chinese", &[]),
        (
            "how would i say 'good morning' in swiss?",
            &["target_language"],
        ),
        ("how would i say 'good morning' in swiss german?", &[]),
        (
            "Loved that movie you mentioned, got any others like it?",
            &["referent"],
        ),
    ] {
        assert_eq!(slots(text, &[]), want, "{text}");
    }
}

/// The probe does not ask for a place, a text or a target language the message
/// gives ("I'm in Denver", a quoted text, "into Korean").
#[test]
fn the_probe_leaves_a_given_place_text_or_language_alone() {
    let call = [json!({"role": "user", "content":
        "I'm in Denver. When should I call my sister in Rome so neither of us is asleep?"})];
    let d = assess_read(
        &call,
        Some(&reading(3.0, Slot::Location, Slot::Items, -1.0)),
    );
    assert!(!d.clarify, "{}", d.why);
    let line = [json!({"role": "user", "content":
        "Put our slogan 'Fresh every morning' into Korean for the shop window."})];
    let d = assess_read(
        &line,
        Some(&reading(3.0, Slot::Text, Slot::TargetLanguage, 1.0)),
    );
    assert!(!d.clarify, "{}", d.why);
    // Not given: a line named by its name only ("the Northern line"), a text only
    // announced ("[transcript attached]").
    let d = assess_read(
        &[json!({"role": "user", "content": "Is the Circle line running okay?"})],
        Some(&reading(3.0, Slot::Location, Slot::Items, -1.0)),
    );
    assert_eq!(d.slots, vec![Slot::Location], "{}", d.why);
    let d = assess_read(
        &[
            json!({"role": "user", "content": "Summarize the minutes for the team: [minutes attached]"}),
        ],
        Some(&reading(3.0, Slot::Text, Slot::Items, -1.0)),
    );
    assert_eq!(d.slots, vec![Slot::Text], "{}", d.why);
}

/// "It" as the object of a verb that acts on a thing in hand, with nothing before it
/// for "it" to be, is asked for; an "it" with a thing before it, an idiom, or an "it"
/// that is no object is not. Written by hand, after the fifteenth author's "send it
/// today" and "water it".
#[test]
fn an_object_it_with_nothing_to_stand_for_is_asked_for() {
    for text in [
        "Can I freeze it?",
        "should i sell it now or hold",
        "How long should I run it for?",
        "My landlord wants me to sign it by Friday. Is that normal?",
        "is it ok to wash it on hot?",
    ] {
        assert_eq!(slots(text, &[]), ["referent"], "{text}");
        let d = decide(assess_text(text, &[]));
        assert_eq!(
            d.missing.as_deref(),
            Some("what \"it\" refers to"),
            "{text}"
        );
    }
    for text in [
        "I made a big pot of chili on Sunday. Can I freeze it?",
        "How do I take it easy after knee surgery?",
        "My new basil plant is wilting, how often should I water it?",
        "Is it safe to swim right after eating?",
        "How long does it take to boil an egg?",
        "Should I pay it forward?",
    ] {
        assert_eq!(slots(text, &[]), [] as [&str; 0], "{text}");
    }
    // In a follow-up, "it" is what came before.
    assert_eq!(
        slots("Can I freeze it?", &["I made a lasagna."]),
        [] as [&str; 0]
    );
}

/// The probe asks for a referent in the message's own word: "it", "the one", "she";
/// in general words where the message has none.
#[test]
fn the_probe_asks_for_a_referent_in_the_users_word() {
    for (text, want) in [
        (
            "The leaves on it went yellow, what now?",
            Some("what \"it\" refers to"),
        ),
        (
            "Find me a book like the one I just finished.",
            Some("which one \"the one\" is"),
        ),
        ("Why did she leave so early?", Some("who \"she\" is")),
        ("Did they like the gift?", Some("who \"they\" are")),
        ("Is this okay to eat?", Some("what \"this\" refers to")),
        ("Is this book any good?", None),
        (
            "It's broken again, what now?",
            Some("what \"it\" refers to"),
        ),
        (
            "What does that mean for me?",
            Some("what \"that\" refers to"),
        ),
        ("I think that he left early.", Some("who \"he\" is")),
        ("What does the blinking light mean?", None),
    ] {
        assert_eq!(
            super::rules::referent_words(text).as_deref(),
            want,
            "{text}"
        );
    }
    for (text, want) in [
        (
            "Find me a book like the one on the shelf.",
            "which one \"the one\" is",
        ),
        (
            "What does the blinking light mean?",
            "what my message refers to",
        ),
    ] {
        let d = assess_read(
            &[json!({"role": "user", "content": text})],
            Some(&reading(3.0, Slot::Referent, Slot::Items, -1.0)),
        );
        assert!(d.why.starts_with("no rule"), "{text}: {}", d.why);
        assert_eq!(d.missing.as_deref(), Some(want), "{text}");
    }
}

/// The sixteenth author's gaps, each in wording of its own: "how do you say" a quoted
/// text with no language, "her own language", a time "in my time" with the user's zone
/// unsaid, "the thing we talked about" in a first message, "since school" (a time,
/// not a place), rates "this week".
#[test]
fn the_sixteenth_authors_gaps_are_found() {
    for (text, want) in [
        (
            "how would you say \"where is the bathroom\"? we land in two days",
            &["target_language"][..],
        ),
        ("How do you say \"good night\" in Korean?", &[]),
        ("how do you say 'gracias' in English?", &[]),
        (
            "I want to write 'congratulations' in my father-in-law's own language",
            &["target_language"],
        ),
        ("what's 9am PST in my local time?", &["location"]),
        ("what's 9am PST in my local time? I'm in Berlin.", &[]),
        (
            "I tried the thing you mentioned and it didn't work",
            &["referent"],
        ),
        (
            "Any show like the one we talked about yesterday?",
            &["referent"],
        ),
        (
            "At lunch we talked about black holes. How do they form?",
            &[],
        ),
        (
            "I haven't swum since college, can you suggest a beginner routine?",
            &[],
        ),
        ("What are CD rates at this week?", &["live_data"]),
        // "which is why" gives a reason: no comparison, and no "why" question.
        (
            "Work out the area of my garden, it's a trapezoid which is why I'm asking",
            &["quantity"],
        ),
        (
            "My room is 4 m by 5 m which is why I'm confused. What's the area?",
            &[],
        ),
        // A conversion keeps the source's fields; the source is what is missing.
        (
            "Can you give me my settings as JSON instead of XML?",
            &["text"],
        ),
        ("Turn this CSV into JSON:\nname,age\nAna,31\nBen,27", &[]),
        // Read by a reviewer: each of these is clear, or asks for something else.
        ("Can I freeze it? It's homemade chili.", &[]),
        ("How do I email it as an attachment from Gmail?", &[]),
        ("I take it you can't browse the web?", &[]),
        ("How do you say \"no\" to your boss without sounding rude?", &[]),
        ("How would you say \"per my last email\" more politely?", &[]),
        ("My time zone is CET. What's 3pm EST in my time?", &[]),
        (
            "My study group keeps arguing about the movie we talked about last week, Inception. Does the top fall?",
            &[],
        ),
        ("Write a Python script that converts CSV files to JSON", &[]),
        ("Proofread the cover letter we discussed Monday", &["text"]),
    ] {
        assert_eq!(slots(text, &[]), want, "{text}");
    }
    // What the probe may not be told is given: a quote that is an error message or a
    // reviewer's words is not the text; "a Monday" is no day.
    use super::rules::gives;
    assert!(gives(Slot::Text, "Translate 'good luck' into Polish"));
    assert!(!gives(
        Slot::Text,
        "Getting \"TypeError: x is undefined\" on submit, what's wrong?"
    ));
    assert!(!gives(
        Slot::Text,
        "My editor called the intro \"too slow.\" Can you tighten it?"
    ));
    assert!(gives(
        Slot::DateTime,
        "I start on Monday, when do I finish?"
    ));
    assert!(!gives(
        Slot::DateTime,
        "If I start on a Monday, when do I finish?"
    ));
}

#[test]
fn the_seventeenth_authors_gaps_are_found() {
    for (text, want) in [
        // "dont" rules a language out as "don't" does.
        (
            "how do you say \"the shop is closed on Monday\"? my customers mostly dont speak english",
            &["target_language"][..],
        ),
        ("Is now a good time to sell my bitcoin?", &["live_data"]),
        ("Is it a good time to buy gold?", &["live_data"]),
        // A housing market is local.
        ("Is it a good time to buy a house?", &["live_data", "location"]),
        // The user calls from a named place: their own zone is known.
        (
            "What time should I ring my cousin in Sydney in her evening? I'll be calling from Dublin.",
            &[],
        ),
        ("what time should I call my aunt in Manila?", &["location"]),
        // A title after "it's" names the book.
        ("summarize the book for me, it's Pride and Prejudice", &[]),
        ("summarize the book for me", &["text"]),
        // What is taken is left out of the sentence.
        ("Is it ok to take with alcohol?", &["referent"]),
        ("is it safe to mix with bleach", &["referent"]),
        ("Is it safe to take ibuprofen with coffee?", &[]),
        ("Is it safe to swim with a cold?", &[]),
        ("Is it okay to eat with braces?", &[]),
        // A cup of flour and a cup of honey weigh apart.
        ("how many grams is 3 cups", &["items"]),
        ("convert 2 cups of flour to grams", &[]),
        ("How many ounces in a cup of rice?", &[]),
        ("convert 8 fl oz to cups", &[]),
        // A season or a day is a time named: general advice, not live.
        ("Is winter a good time to sell a house?", &[]),
        ("Is Black Friday a good time to buy a TV?", &[]),
        ("summarize the report for me, it's Monday and I'm late", &["text"]),
        (
            "What time should I call my aunt in Manila? I'll be calling from Zoom.",
            &["location"],
        ),
        // How long a sum takes to double turns on its rate, whoever owns it.
        ("how long does it take for money to double", &["quantity"]),
        ("How long does it take money to double at 7% a year?", &[]),
        ("Explain how long it takes money to double with compound interest", &[]),
    ] {
        assert_eq!(slots(text, &[]), want, "{text}");
    }
}

/// The eighteenth author's blind set found these; each is asked in other words here,
/// beside the clear requests next to it that must stay silent.
#[test]
fn the_eighteenth_authors_gaps_are_found() {
    for (text, want) in [
        // "at 3pm" is a time, not a place.
        (
            "The webinar is at 10am my time. What time is that for my colleague?",
            &["location"][..],
        ),
        (
            "The webinar is at 10am my time (Chicago). What time is that in Berlin?",
            &[],
        ),
        // "rn" is "right now"; a stock "at" is its price.
        ("how much is gold rn", &["live_data"]),
        ("where is tesla stock at", &["live_data"]),
        ("im so tired rn, give me a quick breathing exercise", &[]),
        ("is the pharmacy open rn", &["live_data", "location"]),
        ("hows the crypto market looking rn", &["live_data"]),
        (
            "recommend a good lunch spot, we have a break at 12-1pm",
            &["location"],
        ),
        // A thing of the user's, never named.
        (
            "recommend a game like the one i just played, it was so good",
            &["referent"],
        ),
        ("I want a phone like the one I had, a Pixel 6", &[]),
        // "put it down" is no request to put a text into JSON.
        (
            "Dune was so good I couldn't put it down, any similar books?",
            &[],
        ),
        // A trip planned to nowhere.
        (
            "plan my trip, 4 days, I love hiking and hate crowds",
            &["location"],
        ),
        ("Plan a 3-day itinerary for Lisbon", &[]),
        ("what should a travel itinerary include?", &[]),
        // A part of a show or a book, never named.
        ("recap the last episode for me", &["referent"]),
        ("What happens in the last episode of Breaking Bad?", &[]),
        // A measure with nothing to convert it to.
        ("convert 100 pounds", &["criteria"]),
        ("convert 30 degrees to fahrenheit", &[]),
        // The event's date decides how early to start.
        ("When should I start studying for the exam?", &["date_time"]),
        ("When should I start studying for my exam on 12 June?", &[]),
        // A JSON file by its name; a config file is no code.
        ("create a settings.json for my project", &["schema"]),
        // Everyone's free hours decide a shared time.
        (
            "find us a slot next week that works for everyone",
            &["date_time"],
        ),
        (
            "find a time that works for everyone on Monday or Tuesday afternoon",
            &[],
        ),
        // "go" the verb is not Go the language.
        (
            "write a function that works out the tax on an order, it will go into our shop",
            &["programming_language"],
        ),
        ("write a function in go that reverses a string", &[]),
        // A review's counter-examples: clear messages the new rules must leave alone,
        // and wordings they must still catch.
        ("As an RN, what's a normal resting heart rate?", &[]),
        (
            "Can I leave chicken stock at room temperature overnight?",
            &[],
        ),
        (
            "How do I find a time that works for everyone on my team?",
            &[],
        ),
        (
            "What's a good meeting time that works for both the US and UK offices?",
            &[],
        ),
        ("When should I start saving for my retirement?", &[]),
        ("When should I start solids for my baby?", &[]),
        ("Is it too late in the season to plant garlic?", &[]),
        ("How do I know if the episode was a panic attack?", &[]),
        (
            "Give me a banana bread recipe, the one I tried last week was too dry",
            &[],
        ),
        ("plan my trip to kyoto, 4 days, I want to go hiking", &[]),
        ("i want to go to lisbon in may, plan my trip", &[]),
        ("plan my trip, I want to relax and eat well", &["location"]),
        (
            "My airline changed my itinerary, am I entitled to a refund?",
            &[],
        ),
        ("Plan a 5-day trip for me, I like museums", &["location"]),
        (
            "Generate a tsconfig.json for a strict TypeScript project",
            &[],
        ),
        ("convert 90 minutes", &[]),
        ("any good pizza near 42nd st?", &[]),
        ("our backend is go, write a function to hash passwords", &[]),
        ("how is btc doing rn", &["live_data"]),
        // General knowledge and history, not today's figures.
        (
            "How are exchange rates set, and what makes a currency go up or down?",
            &[],
        ),
        (
            "Who won the 1998 World Cup final, and what was the score?",
            &[],
        ),
        // Which game, too, since the 22nd author (five authors wrote "whats the score"
        // and labelled the game as missing).
        ("what's the score of the game?", &["live_data", "referent"]),
    ] {
        assert_eq!(slots(text, &[]), want, "{text}");
    }
}

/// The 19th author's gaps (written apart from that set, in other words).
#[test]
fn the_nineteenth_authors_gaps_are_found() {
    let mut bad = Vec::new();
    for (text, want) in [
        // A change to the user's own program, in no language.
        (
            "please add a search bar to my website",
            &["programming_language"][..],
        ),
        ("add a search bar to my Django website", &[]),
        ("How do I add a user to my app's admin page?", &[]),
        ("What should I add to my website to get more visitors?", &[]),
        // "make me" a JSON makes a new one: its fields are missing, not a text.
        ("make me the JSON my dashboard expects", &["schema"]),
        ("make my essay shorter", &["text"]),
        // Days left to a date given: counted from today.
        (
            "my exam is on June 3rd, how many days do I have left?",
            &["live_data"],
        ),
        ("how many days are there between March 3 and April 9?", &[]),
        ("If it's Monday, how many days until Friday?", &[]),
        // Moved "a bit": by how much, or to when?
        ("can you move my 4pm back a little", &["date_time"]),
        ("Move my 4pm to 5pm", &[]),
        // How often, and not when.
        (
            "set up a monthly review meeting with the board",
            &["date_time"],
        ),
        ("Set up a daily sync with the design team at 9:30", &[]),
        ("Schedule a weekly 1:1 with Sam, Mondays at 10am", &[]),
        // A length with no unit, in a sum.
        ("the wall is 12 long and a roll covers 0.5m, how many rolls?", &["quantity"]),
        ("the wall is 12m long and a roll covers 0.5m, how many rolls?", &[]),
        // A fuel cost with no distance.
        (
            "I drive to work and back 5 days a week, how much does the petrol cost me a month? 40 mpg",
            &["quantity"],
        ),
        (
            "I drive 30 miles to work and back 5 days a week at 40 mpg; petrol is £6 a gallon. What does that cost a month?",
            &[],
        ),
        // Trains running today: on which line, and whether they run.
        (
            "are the trains running normally this morning? heard about a strike",
            &["live_data", "location"],
        ),
        ("Why do trains in the UK run on the left?", &[]),
        // A price the user states.
        (
            "Gold is at $2,300 right now; what are my 3 ounces worth?",
            &[],
        ),
        (
            "I bought gold at $1,800, what is it worth right now?",
            &["live_data"],
        ),
        // "stop taking it": what "it" is, never said.
        (
            "the nurse said I should stop taking it a week before, is that normal?",
            &["referent"],
        ),
        (
            "The nurse said I should stop taking aspirin a week before, is that normal?",
            &[],
        ),
    ] {
        let got = slots(text, &[]);
        if got != want {
            bad.push(format!("{text:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The 20th author's gaps (written apart from that set, in other words), each beside a
/// clear twin where one reads alike.
#[test]
fn the_twentieth_authors_gaps_are_found() {
    let mut bad = Vec::new();
    for (text, want) in [
        // A language ruled out with a measure between.
        (
            "My in-laws barely speak any English. Could you translate \"dinner is at seven\" for them?",
            &["target_language"][..],
        ),
        ("Could you translate \"dinner is at seven\" into Polish for my in-laws?", &[]),
        // A request written as a letter carries no text on its further lines.
        (
            "Dear team,\n\nPlease translate the attached letter into Spanish for our client.\n\nBest regards,\nAna",
            &["text"],
        ),
        // What a note in a named language says.
        ("There's a sign on the gate in Portuguese. What does it say?", &["text"]),
        ("What does 'obrigado' mean in Portuguese?", &[]),
        // Work's acronyms are not names.
        ("Write a summary of the Q2 sales minutes for the board", &["text"]),
        ("pls summarise the diff for my PR", &["text"]),
        // A numbered part of a text the user has.
        ("give me the key points of chapter 4, quiz in the morning", &["text"]),
        ("can you do q7 from the homework sheet", &["text"]),
        ("Summarise chapter 4 of Pride and Prejudice", &[]),
        // "fix it" after the text it names.
        (
            "the macro almost works now but can you fix it so it skips the header row too",
            &["text"],
        ),
        ("my component throws 'undefined is not a function' on click, fix my component please", &["text"]),
        // Code asked for by its noun, or set up, or for a board on a fish tank.
        ("set up the rate-limiting middleware for our API", &["programming_language"]),
        ("set up rate-limiting middleware for our Express API", &[]),
        ("login form component with email and password fields", &["programming_language"]),
        ("check my script for typos", &["text"]),
        ("my fish tank has a little sensor board, could you write the code to log the pH?", &["programming_language"]),
        // Live: the newest of a kind, and a market now.
        ("which is the newest Galaxy phone?", &["live_data"]),
        ("How do I update to the latest version of npm?", &[]),
        ("is it a sensible time to buy a house right now, or should we wait?", &["live_data", "location"]),
        ("good time to sell my shares at the moment?", &["live_data"]),
        // A sunny spot is a place, not the weather.
        ("It's March in Lyon and I have a sunny balcony. What herbs should I plant now?", &[]),
        // Told use is a criterion.
        (
            "Canon R50 or Sony ZV-E10? Mostly 4K travel vlogs, 2 kg bag limit. Which would you get?",
            &[],
        ),
        ("Which is sweeter, a Fuji or a Gala apple?", &[]),
        ("iPhone or Android? be honest", &["criteria"]),
        // A volume given, a length in a name, a list of fields.
        ("My 60 litre tank needs 1.022 SG, how many grams of salt is that?", &[]),
        ("how many grams of salt do I need to bring my tank to 1.022 SG?", &["quantity"]),
        ("How far can a Model 3 Long Range go on one charge?", &[]),
        ("our shop's API wants JSON with fields id, title, price, stock. Items: A1 Mug 8.00 12", &[]),
        // A person named by kin or by age.
        ("my granny's stew serves 4 and I'm cooking for the whole street, how much beef?", &["quantity"]),
        ("My 11 year old loved the trilogy she just read, what else is like it?", &["referent"]),
        // Referents asked after as if shared.
        ("is it still ok to drink", &["referent"]),
        ("tastes a bit funny but is it still ok to drink", &["referent"]),
        ("how long does it take to dry properly?", &["referent"]),
        ("How long does it take to dry oak planks in a shed?", &[]),
        ("can you send me the link to it again", &["referent"]),
        ("why is it still not fixed? need an answer today", &["referent"]),
        ("how do I get the thing out of the other thing", &["referent"]),
        // Scheduling: a day around fixed appointments, a countdown with no date, a dose.
        ("plan tomorrow around the vet and my physio appointment", &["date_time"]),
        ("plan tomorrow around the vet at 9 and my physio at 2pm", &[]),
        ("how many days have I got left before the deadline?", &["date_time"]),
        ("The pills are every 6 hours. When should I take the next one?", &["date_time"]),
        ("The pills are every 6 hours and I took one at 7am. When should I take the next one?", &[]),
        // A garden's calendar is its climate's.
        ("when should I sow my pepper seeds so they're ready for the last frost?", &["location"]),
        ("I'm near Leeds; when should I sow my pepper seeds before the last frost?", &[]),
        // Terms referred to and not given.
        ("What's the monthly payment on $20,000 over the agreed term at the quoted rate?", &["quantity"]),
        ("What's the monthly payment on $20,000 over 4 years at 6%?", &[]),
        // Recommendations: a venue, and podcast recs.
        ("could you advise on a suitable venue for a 40th birthday?", &["location"]),
        ("any audiobook recs", &["criteria"]),
        ("Which of the four tents would you take?", &["items"]),
        // A config file made anew asks for its fields; a text made over asks for the text.
        ("make the JSON settings file for the bot with the values we agreed on", &["schema"]),
        ("make my cover letter sound more confident", &["text"]),
        // What was discussed, by its noun.
        (
            "Draw up a comparison of the two phones across the criteria we discussed last week",
            &["items", "text"],
        ),
    ] {
        let got = slots(text, &[]);
        if got != want {
            bad.push(format!("{text:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The gaps a twenty-first author's blind set showed, in words of our own, each with
/// a twin that gives the piece (or a near-miss the rules must leave alone).
#[test]
fn the_twenty_first_authors_gaps_are_found() {
    let mut bad = Vec::new();
    for (text, want) in [
        // A placeholder where the text should be is no text.
        ("Here are the meeting notes:\n\n[notes]\n\nPull out the action items please.", &["text"][..]),
        ("Here are the meeting notes:\n\nBob will email the vendor. Ana books the room.\n\nPull out the action items please.", &[]),
        ("Sort this list: [banana, apple, cherry]", &[]),
        // A verdict quoted of a text is not the text; a title read is not the chapter.
        ("my teacher says my essay sounds 'too stiff'. can you fix it up for me?", &["text"]),
        ("Proofread 'their going to the park tomorow'", &[]),
        // A long story of a bug still asks for its code.
        (
            "Two evenings on this now. My Python class for the weather station throws KeyError: 'temp' whenever the sensor drops out. I copied the pattern from the docs, added a check, wrapped it in try/except, and it still dies on boot. Please just fix the code.",
            &["text"],
        ),
        // A text the user wrote, in the present tense of a learner.
        ("Please translate into French the letter I write this morning for the parents.", &["text"]),
        // A language referred to and never named; a choice granted still grants it.
        ("write the export part in the same language as the billing service", &["programming_language"]),
        ("write a function that reverses a list, whatever language you like", &[]),
        // A pace with no total; a pace with one.
        ("I paint 3 fence panels an hour. How long until the fence is done?", &["quantity"]),
        ("I paint 3 fence panels an hour and there are 24. How long until the fence is done?", &[]),
        // A duration of a process is no length, and "them" needs its thing.
        ("how long should I marinate them for?", &["referent"]),
        ("I bought chicken thighs. How long should I marinate them for?", &[]),
        // A measure said "before", in a conversation with no before.
        ("How much mulch do I need? Same area as last year, 5 cm deep.", &["quantity"]),
        ("How much mulch do I need? 20 square metres, 5 cm deep.", &[]),
        ("order is mg/kg twice daily, child is 20 kg, what's one dose?", &["quantity"]),
        ("order is 10 mg/kg twice daily, child is 20 kg, what's one dose?", &[]),
        // A label before the question is not a text; a word problem after one is.
        ("Pool math: how many litres is my pool? It's round, 40 cm deep.", &["quantity"]),
        // Places: a doctor nearby, a spot within a drive; a phrase said in a named place.
        ("Can you recommend a dentist nearby who takes walk-ins?", &["location"]),
        ("Where should I go fishing on Sunday? Somewhere within an hour's drive.", &["location"]),
        ("How do I say 'thank you' at a dinner in Lisbon?", &[]),
        ("How do I say 'thank you so much for dinner'? It's for a card.", &["target_language"]),
        // The other side's zone, when only the user's is given.
        ("I'm in Leeds. My sister rings from her ship at 0800 her time. What time is that here?", &["location"]),
        ("I'm in Leeds. My sister rings from Perth at 0800 her time. What time is that here?", &[]),
        ("Book a call with our Berlin office, pick a time next week within working hours for both of us", &["location"]),
        ("Book a call with our Berlin office, I'm in Toronto; pick a time next week within working hours for both of us", &[]),
        // Dates of the user's own, exams, shifts and chores.
        ("which day of the week is our anniversary next year?", &["date_time"]),
        ("which day of the week is our anniversary next year? It's 9 June.", &[]),
        ("make me a revision timetable for my exams", &["date_time"]),
        ("sign me up for whichever class slot starts after my shift ends", &["date_time"]),
        ("a weekly chore chart for the house please", &["items"]),
        ("a weekly chore chart for me, Jo and Sam: dishes, bins, hoovering", &[]),
        // JSON to match a format of the user's, or a schema of their own objects.
        ("Turn these into JSON that matches our booking API:\n- Ana, 2 guests\n- Raj, 4 guests", &["schema"]),
        ("write a JSON Schema for the invoice objects we store", &["schema"]),
        ("write a JSON Schema for the invoice objects we store, each has a number, a date and a total", &[]),
        // Controls the rules misread: a child by age, options named after "between", a
        // relative "which" after a time, and a rate that is a noun.
        ("My 9-year-old loves dinosaurs. What books would you recommend for him?", &[]),
        ("Between the Kindle Paperwhite and the Kobo Clara, which one is lighter?", &[]),
        ("pick up the cake at 4pm which is a 20 min walk from home, then plan the rest of my afternoon from 2pm", &[]),
        ("The kiosk gives 0.85 pounds per euro and the mid-market rate is 0.87. How much do I lose on 500 euros?", &[]),
        // Live: the reigning holder, a release asked about, and a version to upgrade to.
        ("who's the reigning Wimbledon champion?", &["live_data"]),
        ("what's the newest Firefox version? planning to upgrade", &["live_data"]),
    ] {
        let got = slots(text, &[]);
        if got != want {
            bad.push(format!("{text:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}

/// The 22nd author's gaps (docs/behaviour.md, "A 22nd author blind"), in wording of
/// our own, each beside a clear twin where one reads differently.
#[test]
#[rustfmt::skip]
fn the_twenty_second_authors_gaps_are_found() {
    let mut bad = Vec::new();
    for (text, want) in [
        // A long message that ends where its text should start carries none.
        (
            "Picked up an old crochet pattern at a car boot sale in Porto. It is all in Portuguese and the stitch names mean nothing to me, and I have only ever followed English patterns before. I copied the first two rows of the instructions out just below so you can walk me through them:",
            &["text"][..],
        ),
        // Languages known only to the user; words described and never quoted.
        ("can you do my holiday auto-reply in the other three languages our shop uses?", &["target_language"]),
        ("how do u say the thing my nonna says before every meal, in english?", &["text"]),
        ("how do u say the thing my nonna says before every meal, \"buon appetito\", in english?", &[]),
        // English as a school subject is no language to translate into.
        ("Summarise the plot of Of Mice and Men for me, it's the book we're studying in English.", &[]),
        // Work from a conversation this one does not have.
        ("fix the race condition we were chasing yesterday, same idea as before", &["text"]),
        // A language referred to by what runs it; the pick left to the assistant.
        ("write the firmware to read the sensor, in whatever language that little board runs", &["programming_language"]),
        ("write a function that reverses a string, in whatever language that works best", &[]),
        // A spreadsheet's macro needs its app; the app named.
        ("write the macro for our spreadsheet that emails the rota every friday", &["programming_language"]),
        ("write a Google Apps Script for our rota spreadsheet that emails it every friday", &[]),
        // Places known only to the user.
        ("Dinner for 9 after the quiz, must do vegan, walking distance from our office. Suggestions?", &["location"]),
        ("Can you suggest a vet for rabbits? Somewhere near my mum would be easiest.", &["location"]),
        // JSON: a format "needs to be" something unsaid; the user's own API; typed fields.
        ("turn my book club list into JSON, the app says it needs to be 'the proper shape'", &["schema", "text"]),
        ("give me the JSON body for the refund endpoint on our payments API", &["schema"]),
        ("give me a sample JSON for our payments API, each with refund_id, order_id and amount", &[]),
        ("Make this JSON: Ana (table 3), Raj (table 1). The app wants objects with name (string) and table (number).", &[]),
        // A dose per kilogram and no weight; the weight given.
        ("ward round: order is 15 mg/kg, stock is 120 mg/5 mL, how many mL?", &["quantity"]),
        ("ward round: order is 15 mg/kg, child weighs 12 kg, stock is 120 mg/5 mL, how many mL?", &[]),
        // A planting date is the climate's; a date counted from an undated event.
        ("When should I get my tulip bulbs in the ground?", &["location"]),
        ("When should I get my tulip bulbs in the ground? I'm near Utrecht.", &[]),
        ("The bake sale is the weekend before the school fair. Which dates should I put on the flyer?", &["date_time"]),
        ("The bake sale is the weekend before the school fair on 14 June. Which dates should I put on the flyer?", &[]),
        // Live: a game never named, a market's prices this week, a wait right now.
        ("who's winning?? stuck in a meeting", &["live_data", "referent"]),
        ("what are calves fetching at the mart this week?", &["live_data", "location"]),
        ("how long is the wait at urgent care right now?", &["live_data"]),
        // A weather station is a thing to build, not today's weather.
        ("What sensors should go in a school weather station?", &[]),
    ] {
        let got = slots(text, &[]);
        if got != want {
            bad.push(format!("{text:?}: got {got:?}, want {want:?}"));
        }
    }
    assert!(bad.is_empty(), "{}", bad.join("\n"));
}
