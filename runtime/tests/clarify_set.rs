//! The clarify-first decision on the evaluation set (eval/clarify.jsonl), with no
//! model: how often the rules fire on the underspecified prompts, whether they name
//! a slot the set says is missing, and how often they fire on the clear controls.
//!
//! The set is split by id: odd numbers ("-u01", "-c03") are the development half the
//! rules were tuned on; even numbers are held out. Both halves must pass, and so must
//! eval/clarify_heldout.jsonl (a second author) and eval/clarify_fresh.jsonl (a third,
//! who saw neither the rules nor the other sets). Each first met the rules untuned; the
//! first-contact figures are in docs/behaviour.md.

use serde_json::Value;
use slm_runtime::clarify::{assess, Slot};

struct Case {
    id: String,
    underspecified: bool,
    prompt: String,
    missing: Vec<String>,
}

fn cases(file: &str) -> Vec<Case> {
    let path = format!("{}/../eval/{file}", env!("CARGO_MANIFEST_DIR"));
    std::fs::read_to_string(&path)
        .expect("an eval set")
        .lines()
        .map(|l| {
            let v: Value = serde_json::from_str(l).expect("a JSON line");
            Case {
                id: v["id"].as_str().unwrap().to_string(),
                underspecified: v["set"] == "underspecified",
                prompt: v["prompt"].as_str().unwrap().to_string(),
                missing: v["missing"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|s| s.as_str().unwrap().to_string())
                    .collect(),
            }
        })
        .collect()
}

fn held_out(id: &str) -> bool {
    id.chars()
        .last()
        .and_then(|c| c.to_digit(10))
        .is_some_and(|d| d % 2 == 0)
}

#[test]
fn decisions_on_the_evaluation_set() {
    let mut report = String::new();
    let mut rates = Vec::new();
    for (file, half) in [
        ("clarify.jsonl", false),
        ("clarify.jsonl", true),
        ("clarify_heldout.jsonl", true),
        ("clarify_fresh.jsonl", true),
    ] {
        let (mut fired, mut right_slot, mut under, mut false_fire, mut controls) = (0, 0, 0, 0, 0);
        for c in cases(file)
            .iter()
            .filter(|c| held_out(&c.id) == half || file != "clarify.jsonl")
        {
            let d = assess(&[serde_json::json!({"role": "user", "content": c.prompt})]);
            if c.underspecified {
                under += 1;
                // The live slot stands for "no live data": the set names the place or
                // date the live question also lacks.
                let slot_ok = d
                    .slots
                    .iter()
                    .any(|s| c.missing.iter().any(|m| m == s.as_str()))
                    || (d.slots.contains(&Slot::LiveData) && c.id.contains("live-"));
                fired += d.clarify as usize;
                // The note names what to ask for, in no one's voice: an indirect
                // question in the user's ("which city I mean") came back verbatim
                // after the lead.
                if let Some((_, ask)) = d.note.as_deref().and_then(|n| n.rsplit_once("asks me ")) {
                    assert!(
                        !ask.contains(" I ") && !ask.starts_with("I ") && ask.len() > 6,
                        "{}: the note asks {ask:?}",
                        c.id
                    );
                }
                right_slot += (d.clarify && slot_ok) as usize;
                if !(d.clarify && slot_ok) {
                    report += &format!(
                        "MISS {} {:?} want {:?} got {:?}\n",
                        c.id, c.prompt, c.missing, d.slots
                    );
                }
            } else {
                controls += 1;
                false_fire += d.clarify as usize;
                if d.clarify {
                    report += &format!(
                        "FALSE {} {:?} got {:?}: {}\n",
                        c.id, c.prompt, d.slots, d.why
                    );
                }
            }
        }
        let name = match (file, half) {
            ("clarify.jsonl", false) => "development",
            ("clarify.jsonl", true) => "held-out",
            ("clarify_heldout.jsonl", _) => "fresh",
            _ => "third",
        };
        report += &format!(
            "{name}: fired {fired}/{under}, right slot {right_slot}/{under}, false {false_fire}/{controls}\n"
        );
        // Regression floors, a little under what the rules reach today (docs/behaviour.md
        // gives the figures, and the first-contact figures on each half).
        let (floor, ceiling) = match name {
            "fresh" => (0.88, 0.05),
            "third" => (0.93, 0.03),
            _ => (0.93, 0.03),
        };
        rates.push((
            name,
            right_slot as f64 / under as f64 >= floor,
            false_fire as f64 / controls as f64 <= ceiling,
        ));
    }
    println!("{report}");
    for (name, slot_ok, false_ok) in rates {
        assert!(slot_ok && false_ok, "{name} below its floor:\n{report}");
    }
}
