//! The generation contract on the real SmolLM2: seeded sampling repeats byte for byte,
//! stop strings split across tokens stop exactly with nothing of them emitted, loops are
//! detected and named, and the stream never breaks UTF-8. The f32 conversion, so that the
//! greedy texts are transformers' (q8_0 flips the France prompt's 0.08-logit near-tie).

mod common;

use common::*;
use slm_runtime::engine::{Engine, GenerateOptions};
use slm_runtime::sampling::SamplerConfig;
use slm_runtime::stopping::{LoopConfig, StopReason};

fn engine() -> Engine {
    Engine::load_file(&slm("smollm2", "f32")).unwrap()
}

fn prompt(eng: &Engine, text: &str) -> Vec<u32> {
    let r = eng
        .text
        .render(
            &serde_json::json!([{"role": "user", "content": text}]),
            None,
            true,
            NOW,
        )
        .unwrap();
    eng.text.encode_rendered(&r).unwrap()
}

/// Run and also collect what the stream handed out.
fn run(
    eng: &Engine,
    ids: &[u32],
    opts: &GenerateOptions,
) -> (slm_runtime::engine::Generation, String) {
    let mut streamed = String::new();
    let g = eng
        .generate(ids, opts, &mut |piece, _| {
            assert!(
                !piece.contains('\u{FFFD}'),
                "stream emitted a broken character: {piece:?}"
            );
            streamed.push_str(piece)
        })
        .unwrap();
    (g, streamed)
}

#[test]
fn seeded_sampling_is_reproducible() {
    let eng = engine();
    let ids = prompt(&eng, "Write a haiku about the sea.");
    let mut opts = GenerateOptions::greedy(24);
    opts.sampler = SamplerConfig {
        seed: 1234,
        ..SamplerConfig::preset("creative").unwrap()
    };
    let (a, sa) = run(&eng, &ids, &opts);
    let (b, sb) = run(&eng, &ids, &opts);
    assert_eq!(a.ids, b.ids);
    assert_eq!(sa, sb);
    assert_eq!(a.text, b.text);
}

#[test]
fn stop_string_across_tokens_stops_exactly() {
    let eng = engine();
    let ids = prompt(&eng, "What is the capital of France?");
    // Greedy answer: "The capital of France is Paris." — "l of Fr" spans three tokens.
    let full = eng.greedy(&ids, 20).unwrap();
    assert!(
        full.text.starts_with("The capital of France"),
        "{}",
        full.text
    );
    let mut opts = GenerateOptions::greedy(20);
    opts.stop_strings = vec!["l of Fr".into()];
    let (g, streamed) = run(&eng, &ids, &opts);
    assert_eq!(g.stop_reason, StopReason::StopString);
    assert_eq!(g.text, "The capita");
    assert_eq!(
        streamed, "The capita",
        "nothing of the stop string is emitted"
    );
    assert_eq!(g.stop_detail["start"], 10);
}

#[test]
fn stop_token_id_is_recorded() {
    let eng = engine();
    let ids = prompt(&eng, "What is the capital of France?");
    let full = eng.greedy(&ids, 20).unwrap();
    let mut opts = GenerateOptions::greedy(20);
    opts.stop_token_ids = vec![full.ids[2]];
    let (g, _) = run(&eng, &ids, &opts);
    assert_eq!(g.stop_reason, StopReason::StopTokenId);
    assert_eq!(g.ids, full.ids[..2]);
    assert_eq!(g.stop_detail["token"], full.ids[2]);
}

#[test]
fn loop_detection_stops_a_degenerate_run_and_names_the_pattern() {
    let eng = engine();
    let ids = prompt(&eng, "Say hello.");
    let hello = eng.text.tokenizer.encode("hello", false).unwrap();
    assert_eq!(hello.len(), 1);
    let mut opts = GenerateOptions::greedy(200);
    opts.sampler.logit_bias = vec![(hello[0], 100.0)];
    opts.loop_detection = Some(LoopConfig::default());
    let (g, streamed) = run(&eng, &ids, &opts);
    assert_eq!(g.stop_reason, StopReason::LoopDetected);
    assert_eq!(g.stop_detail["pattern"], serde_json::json!([hello[0]]));
    assert_eq!(g.stop_detail["pattern_text"], "hello");
    assert_eq!(g.ids.len(), LoopConfig::default().min_span);
    assert_eq!(streamed, g.text);
}

#[test]
fn streaming_text_equals_the_final_text_for_cjk_and_emoji() {
    let eng = engine();
    for text in [
        "\u{4f60}\u{597d}\u{ff0c}\u{4e16}\u{754c}\u{ff01}",
        "Reply with three emoji: \u{1F600}\u{1F468}\u{200D}\u{1F469}\u{200D}\u{1F467}",
    ] {
        let ids = prompt(&eng, text);
        let (g, streamed) = run(&eng, &ids, &GenerateOptions::greedy(40));
        assert_eq!(streamed, g.text, "{text}");
    }
}

#[test]
fn trace_records_every_step() {
    let eng = engine();
    let ids = prompt(&eng, "Name a color.");
    let mut opts = GenerateOptions::greedy(8);
    opts.sampler = SamplerConfig {
        seed: 5,
        ..SamplerConfig::preset("chat").unwrap()
    };
    opts.trace = true;
    let (g, _) = run(&eng, &ids, &opts);
    // One step per generated token, plus the step that drew the EOS if it ended there.
    let extra = (g.stop_reason == StopReason::EosToken) as usize;
    assert_eq!(g.steps.len(), g.ids.len() + extra);
    for (st, id) in g.steps.iter().zip(&g.ids) {
        assert_eq!(st.token, *id);
        assert!(st.draw.is_some_and(|u| (0.0..1.0).contains(&u)));
        assert!(st.prob > 0.0 && st.prob <= 1.0);
        assert_eq!(st.candidates.first().map(|c| c.0), Some("temperature"));
        assert!(st.top.iter().any(|(t, _)| t == id));
        // The stages in HF's order, each count matching the per-filter counts.
        let names: Vec<&str> = st.stages.iter().map(|s| s.stage.as_str()).collect();
        assert_eq!(
            names,
            ["raw", "penalized", "temperature", "top_k", "top_p", "min_p"]
        );
        for (s, (name, n)) in st.stages[2..].iter().zip(&st.candidates) {
            assert_eq!((s.stage.as_str(), s.count), (*name, *n));
        }
        assert_eq!(
            st.stages.last().unwrap().pick.unwrap().1.to_bits(),
            st.prob.to_bits()
        );
        let check = st
            .stop_check
            .as_ref()
            .expect("a traced step has its stop check");
        assert!(check.stopped.is_none() || st.token == *g.ids.last().unwrap());
    }
    let last = g.steps.last().unwrap().stop_check.as_ref().unwrap();
    assert_eq!(last.stopped.as_deref(), Some(g.stop_reason.as_str()));
    assert!(g.timings.prefill_tok_s > 0.0);
}

#[test]
fn second_turn_prefills_only_its_new_tokens() {
    use slm_runtime::session::Session;
    let eng = engine();
    let mut chat = Session::new(&eng, 2048);
    let opts = GenerateOptions::greedy(24);
    let t1 = chat
        .send("What is the capital of France?", &opts, NOW, &mut |_, _| {})
        .unwrap();
    assert_eq!(t1.generation.reused_tokens, 0);
    assert!(t1.divergence.is_none());
    let held = chat.kv_len();
    assert_eq!(held, t1.generation.prompt_tokens + t1.generation.ids.len());
    assert!(
        chat.divergence(NOW).unwrap().is_none(),
        "the reply re-tokenizes to the same ids"
    );

    let t2 = chat
        .send("And of Italy?", &opts, NOW, &mut |_, _| {})
        .unwrap();
    assert!(t2.divergence.is_none());
    assert_eq!(
        t2.generation.reused_tokens, held,
        "every token of turn 1 is reused"
    );
    assert_eq!(
        t2.generation.prefilled_tokens,
        t2.generation.prompt_tokens - held
    );
    assert!(
        t2.generation.prefilled_tokens < 20,
        "only the new turn is prefilled"
    );
    // Same logits as a cold run of the whole transcript: prefix reuse changes nothing.
    let cold = eng
        .greedy(
            &chat.transcript_ids(true, NOW).unwrap()[..t2.generation.prompt_tokens],
            24,
        )
        .unwrap();
    assert_eq!(cold.ids, t2.generation.ids);
}

/// The lead a page prefills after a load (the template's system prompt and a user
/// message's opening) is reused by the first turn, which prefills only its own tokens,
/// and the reply is bit for bit a cold turn's, step records included. No divergence is
/// flagged before or in that turn. A lead the turn does not share (another system
/// prompt) is recomputed from where it differs, still unflagged. Nothing is prefilled
/// once the transcript holds a turn.
#[test]
fn a_lead_prefilled_ahead_is_reused_bit_for_bit() {
    use slm_runtime::session::Session;
    let eng = engine();
    let mut opts = GenerateOptions::greedy(16);
    opts.trace = true;
    let user = "What is the capital of France?";
    let steps =
        |t: &slm_runtime::session::Turn| serde_json::to_string(&t.generation.steps).unwrap();

    let mut cold = Session::new(&eng, 2048);
    let c = cold.send(user, &opts, NOW, &mut |_, _| {}).unwrap();

    let mut warm = Session::new(&eng, 2048);
    let n = warm.prefill_lead(NOW).unwrap();
    let prompt = cold.context_tokens()[..c.generation.prompt_tokens].to_vec();
    assert!(
        n > 10 && n < prompt.len() - 5,
        "lead {n} of {}",
        prompt.len()
    );
    assert_eq!(
        warm.context_tokens(),
        &prompt[..n],
        "the lead is the prompt's start"
    );
    assert_eq!(warm.kv_len(), n);
    assert!(warm.divergence(NOW).unwrap().is_none());
    let w = warm.send(user, &opts, NOW, &mut |_, _| {}).unwrap();
    assert!(w.divergence.is_none());
    assert_eq!(w.generation.reused_tokens, n);
    assert_eq!(w.generation.prefilled_tokens, prompt.len() - n);
    assert_eq!(w.generation.ids, c.generation.ids);
    assert_eq!(steps(&w), steps(&c), "the same logits, bit for bit");
    assert_eq!(warm.prefill_lead(NOW).unwrap(), 0, "a turn is held");
    warm.reset_context();
    assert_eq!(
        warm.prefill_lead(NOW).unwrap(),
        0,
        "the transcript holds a turn"
    );

    // Another system prompt than the one the lead was prefilled with.
    let system = serde_json::json!({"role": "system", "content": "Answer in one word."});
    let mut cold = Session::new(&eng, 2048);
    cold.messages.push(system.clone());
    let c = cold.send(user, &opts, NOW, &mut |_, _| {}).unwrap();
    let mut warm = Session::new(&eng, 2048);
    let n = warm.prefill_lead(NOW).unwrap();
    warm.messages.push(system.clone());
    let w = warm.send(user, &opts, NOW, &mut |_, _| {}).unwrap();
    assert!(w.divergence.is_none());
    assert!(w.generation.reused_tokens > 0 && w.generation.reused_tokens < n);
    assert_eq!(w.generation.ids, c.generation.ids);
    assert_eq!(steps(&w), steps(&c));

    // With the system prompt in the transcript, the lead holds it.
    let mut warm = Session::new(&eng, 2048);
    warm.messages.push(system);
    let n = warm.prefill_lead(NOW).unwrap();
    let w = warm.send(user, &opts, NOW, &mut |_, _| {}).unwrap();
    assert_eq!(w.generation.reused_tokens, n);
    assert_eq!(w.generation.ids, c.generation.ids);
}

#[test]
fn reset_context_and_clear_transcript_do_different_things() {
    use slm_runtime::session::Session;
    let eng = engine();
    let mut chat = Session::new(&eng, 2048);
    let opts = GenerateOptions::greedy(12);
    chat.send("Name a fruit.", &opts, NOW, &mut |_, _| {})
        .unwrap();
    let messages = chat.messages.len();

    // Reset: the messages stay, the KV cache is empty, the next turn re-prefills all.
    chat.reset_context();
    assert_eq!(chat.kv_len(), 0);
    assert_eq!(chat.messages.len(), messages);
    let t = chat.send("Another?", &opts, NOW, &mut |_, _| {}).unwrap();
    assert_eq!(t.generation.reused_tokens, 0);
    assert_eq!(t.generation.prefilled_tokens, t.generation.prompt_tokens);

    // Clear: the messages go, the cache stays, and the transcript no longer extends
    // the context, so the divergence flag is raised and explained.
    let kv = chat.kv_len();
    chat.clear_transcript();
    assert_eq!(chat.kv_len(), kv);
    assert!(chat.messages.is_empty());
    let flagged = chat
        .divergence(NOW)
        .unwrap()
        .expect("flag right after the clear");
    assert_eq!((flagged.context_tokens, flagged.transcript_tokens), (kv, 0));
    let t = chat.send("Hi", &opts, NOW, &mut |_, _| {}).unwrap();
    let d = t
        .divergence
        .expect("divergence after clearing the transcript");
    assert!(d.position > 0 && d.position < kv, "{d:?}");
    assert!(d.explanation.contains("transcript"), "{}", d.explanation);
    assert_eq!(
        t.generation.reused_tokens, d.position,
        "the common prefix (system prompt) is reused"
    );
}

#[test]
fn an_over_long_transcript_is_refused_before_compute_with_the_numbers() {
    use slm_runtime::session::Session;
    let eng = engine();
    let mut chat = Session::new(&eng, 64);
    let e = chat
        .send(
            &"word ".repeat(100),
            &GenerateOptions::greedy(8),
            NOW,
            &mut |_, _| {},
        )
        .unwrap_err()
        .to_string();
    assert!(e.contains("positions") && e.contains("holds 64"), "{e}");
    assert!(
        chat.messages.is_empty(),
        "a refused turn leaves the transcript as it was"
    );
}

#[test]
fn abort_ends_with_its_own_reason_and_keeps_the_text() {
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let eng = engine();
    let ids = prompt(&eng, "Count from one to twenty.");
    let flag = Arc::new(AtomicBool::new(false));
    let mut opts = GenerateOptions::greedy(100);
    opts.abort = Some(flag.clone());
    let mut pieces = 0;
    let g = eng
        .generate(&ids, &opts, &mut |_, _| {
            pieces += 1;
            if pieces == 3 {
                flag.store(true, Ordering::Relaxed);
            }
        })
        .unwrap();
    assert_eq!(g.stop_reason, StopReason::Aborted);
    assert_eq!(g.ids.len(), 3);
    assert_eq!(g.text, eng.text.tokenizer.decode(&g.ids, true).unwrap());
}

/// The prompt goes in as parts of `PREFILL_STEP` tokens, one per step, with progress
/// after each; the logits at the end are bit for bit those of a whole-prompt prefill.
/// Stopped during the prefill, the turn ends as aborted, naming how far it got, and
/// the session keeps what was prefilled as a reusable prefix.
#[test]
fn prefill_runs_in_parts_with_progress_and_can_be_stopped() {
    use slm_runtime::engine::{prefill_part_end, PREFILL_STEP};
    use slm_runtime::session::Session;
    use std::sync::atomic::{AtomicBool, Ordering};
    use std::sync::Arc;
    let eng = engine();
    let long = "Tell me about rivers, lakes and the sea. ".repeat(8);
    let ids = prompt(&eng, &long);
    assert!(ids.len() > 2 * PREFILL_STEP, "{} tokens", ids.len());
    let whole = eng.first_logits(&ids).unwrap();
    let opts = GenerateOptions::greedy(2);

    // Stepping by hand: progress after every part.
    let mut chat = Session::new(&eng, 2048);
    chat.messages
        .push(serde_json::json!({"role": "user", "content": long}));
    let mut p = chat.begin_reply(&opts, NOW).unwrap();
    let n = p.prompt_ids().len();
    assert_eq!(p.prompt_ids(), &ids[..]);
    let mut seen = vec![];
    while p.prefill_progress().0 < n {
        assert!(!chat.step(&mut p, &mut |_, _| panic!("no text while prefilling")));
        seen.push(p.prefill_progress().0);
    }
    let mut want = vec![prefill_part_end(0, n)];
    while want[want.len() - 1] < n {
        want.push(prefill_part_end(want[want.len() - 1], n));
    }
    assert_eq!(seen, want);
    assert!(want.len() >= 2 && want[0] == PREFILL_STEP, "{want:?}");
    let t = chat.finish(p, &mut |_, _| {});
    assert_eq!(t.generation.stop_reason, StopReason::Aborted);
    assert_eq!(chat.kv_len(), n, "the whole prompt stays as a prefix");

    // The same logits as one whole prefill, bit for bit.
    let m = &eng.model;
    let mut cache = m.new_cache(ids.len());
    let mut s = slm_runtime::model::Scratch::new(&m.cfg, ids.len());
    let parts: Vec<&[u32]> = ids.chunks(PREFILL_STEP).collect();
    for (i, part) in parts.iter().enumerate() {
        m.prefill_part(part, &mut cache, &mut s, i + 1 == parts.len())
            .unwrap();
    }
    assert_eq!(cache.len, ids.len());
    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
    assert_eq!(bits(&s.logits), bits(&whole));

    // Stopped after the first part.
    let flag = Arc::new(AtomicBool::new(false));
    let mut opts = GenerateOptions::greedy(8);
    opts.abort = Some(flag.clone());
    let mut chat = Session::new(&eng, 2048);
    chat.messages
        .push(serde_json::json!({"role": "user", "content": long}));
    let mut p = chat.begin_reply(&opts, NOW).unwrap();
    assert!(!chat.step(&mut p, &mut |_, _| {}));
    flag.store(true, Ordering::Relaxed);
    assert!(chat.step(&mut p, &mut |_, _| {}));
    let t = chat.finish(p, &mut |_, _| {});
    let g = &t.generation;
    assert_eq!(g.stop_reason, StopReason::Aborted);
    assert_eq!(g.stop_detail["prefilled"], PREFILL_STEP);
    assert_eq!(g.stop_detail["prompt_tokens"], n);
    assert_eq!(g.prefilled_tokens, PREFILL_STEP);
    assert!(g.ids.is_empty());
    assert_eq!(chat.kv_len(), PREFILL_STEP);
}

/// The page's load-time warm-up (template, tokenizer, every kernel of prefill and
/// decode) runs on buffers of its own: it succeeds, and the next generation is the
/// one it would have been without it.
#[test]
fn warm_up_runs_every_kernel_and_leaves_nothing_behind() {
    let eng = engine();
    let ids = prompt(&eng, "Name a colour.");
    let before = eng.greedy(&ids, 6).unwrap().ids;
    eng.text.warm_up(NOW);
    eng.model.warm_up().unwrap();
    assert_eq!(eng.greedy(&ids, 6).unwrap().ids, before);
}

/// Teacher forcing (`Engine::continuation_logprobs`) gives, for each token of a
/// continuation, the log-softmax of the logits a fresh prefill of everything before
/// it ends with: the greedy reply's tokens are each their step's most likely token.
#[test]
fn continuation_logprobs_match_a_prefill_of_each_prefix() {
    let eng = engine();
    let ids = prompt(&eng, "Name a colour.");
    let reply = eng.greedy(&ids, 5).unwrap().ids;
    assert!(!reply.is_empty());
    let lp = eng.continuation_logprobs(&ids, &reply).unwrap();
    assert_eq!(lp.len(), reply.len());
    for (i, &t) in reply.iter().enumerate() {
        let mut prefix = ids.clone();
        prefix.extend(&reply[..i]);
        let logits = eng.first_logits(&prefix).unwrap();
        let m = logits.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let lse = f64::from(m)
            + logits
                .iter()
                .map(|&v| (f64::from(v) - f64::from(m)).exp())
                .sum::<f64>()
                .ln();
        let want = (f64::from(logits[t as usize]) - lse) as f32;
        assert!(
            (lp[i] - want).abs() < 1e-4,
            "token {i}: {} vs {want}",
            lp[i]
        );
        assert_eq!(logits[t as usize], m, "token {i} is greedy's pick");
        assert!(lp[i] <= 0.0);
    }
    // A token outside the vocabulary is an error, not a panic.
    let v = eng.model.cfg.vocab_size as u32;
    assert!(eng.continuation_logprobs(&ids, &[v]).is_err());
    assert!(eng.continuation_logprobs(&[], &reply).is_err());
}

/// The page's read-ahead measurement (`Model::tune_read_ahead`) runs its decode steps
/// on buffers of its own, times every mode with the clock it is given, keeps the
/// fastest (the one reading ahead less within 2%), and leaves the next generation as
/// it was. Natively there is nothing to choose: `tune_read_ahead` is None, and the
/// measurement itself is run.
#[test]
fn read_ahead_is_measured_every_way_and_changes_no_result() {
    use slm_runtime::kernels::{read_ahead, set_read_ahead, ReadAhead};
    let eng = engine();
    let ids = prompt(&eng, "Name a colour.");
    let before = eng.greedy(&ids, 6).unwrap().ids;
    // Clocks that read a given number of ms per call in each mode (off, page, line;
    // dyadic, so that the differences of their sums are exact),
    // and the mode each must choose.
    let cases = [
        ([1.0, 10.0, 10.0], ReadAhead::Off),
        ([10.0, 5.0, 6.0], ReadAhead::Page),
        ([10.0, 5.0, 4.0], ReadAhead::Line),
        // Within 2% of a mode that reads ahead less: the lesser one.
        ([1.0, 1.0, 1.0], ReadAhead::Off),
        ([8.0, 4.0, 3.96875], ReadAhead::Page),
    ];
    for (ms, want) in cases {
        let t = std::cell::Cell::new(0.0);
        let clock = || {
            t.set(t.get() + ms[read_ahead() as usize]);
            t.get()
        };
        let r = eng.model.measure_read_ahead(&clock).unwrap();
        assert_eq!((r.mode, read_ahead()), (want, want), "{ms:?}: {r:?}");
        assert_eq!([r.ms_off, r.ms_page, r.ms_line], ms);
    }
    assert_eq!(
        eng.model.tune_read_ahead(&|| 0.0).unwrap().is_some(),
        slm_runtime::kernels::HAS_READ_AHEAD
    );
    assert_eq!(eng.greedy(&ids, 6).unwrap().ids, before);
    set_read_ahead(ReadAhead::Page);
}

/// A long chat in a small context, under each overflow policy: `Stop` refuses with
/// the numbers; `DropOldest` leaves out the oldest whole turns and keeps the system
/// message; `TruncateMiddle` keeps the first exchange too. The transcript keeps every
/// message, and the divergence flag says that the context holds less.
#[test]
fn context_policies_fit_a_long_chat_or_refuse_it() {
    use slm_runtime::session::{Overflow, Session};
    let eng = engine();
    let mut opts = GenerateOptions::greedy(16);
    opts.loop_detection = None;
    let history = |s: &mut Session| {
        s.messages
            .push(serde_json::json!({"role": "system", "content": "You are brief."}));
        for (q, a) in [
            ("First question: what is red?", "A colour."),
            (
                "Second question: what is a cat?",
                "An animal that purrs and sleeps a lot.",
            ),
            (
                "Third question: what is rain?",
                "Water falling from clouds in drops.",
            ),
        ] {
            s.messages
                .push(serde_json::json!({"role": "user", "content": q}));
            s.messages
                .push(serde_json::json!({"role": "assistant", "content": a}));
        }
        s.push_user("Last question: what is snow?", NOW);
    };
    let whole = {
        let mut s = Session::new(&eng, 512);
        history(&mut s);
        s.transcript_ids(true, NOW).unwrap().len()
    };
    // Room for the prompt but not for the reply's 16 tokens.
    let cap = whole + 4;

    let mut s = Session::new(&eng, cap);
    history(&mut s);
    let p = s.begin_reply(&opts, NOW).unwrap();
    assert!(p.fitted().is_none(), "Stop still runs a prompt that fits");
    drop(p);
    let mut s = Session::new(&eng, whole - 1);
    history(&mut s);
    let e = s.begin_reply(&opts, NOW).err().unwrap().to_string();
    assert!(e.contains("context policy: stop and explain"), "{e}");
    assert_eq!(s.messages.len(), 8, "a refused turn keeps the transcript");

    for (policy, kept_first) in [
        (Overflow::DropOldest, false),
        (Overflow::TruncateMiddle, true),
    ] {
        let mut s = Session::new(&eng, cap);
        s.overflow = policy;
        history(&mut s);
        let mut p = s.begin_reply(&opts, NOW).unwrap();
        let f = p.fitted().cloned().expect("a turn was left out");
        let text = p.prompt_text().to_string();
        assert_eq!(
            p.prompt_ids(),
            &eng.text.encode_rendered(&text).unwrap()[..]
        );
        assert!(p.prompt_ids().len() + 16 <= cap, "{f:?}");
        assert!(text.contains("You are brief.") && text.contains("Last question"));
        assert_eq!(
            text.contains("First question"),
            kept_first,
            "{policy:?}: {text}"
        );
        if kept_first {
            assert!(
                !text.contains("Second question"),
                "the oldest middle turn goes first: {text}"
            );
        }
        assert_eq!(
            f.dropped_messages[..2],
            if kept_first { [3, 4] } else { [1, 2] }
        );
        assert_eq!(f.whole_tokens, whole);
        while !s.step(&mut p, &mut |_, _| {}) {}
        let t = s.finish(p, &mut |_, _| {});
        assert_eq!(t.fitted.as_ref(), Some(&f));
        assert_eq!(s.messages.len(), 9, "the transcript keeps every message");
        let d = s
            .divergence(NOW)
            .unwrap()
            .expect("the context holds less than the transcript");
        assert!(
            d.explanation
                .starts_with("the context no longer holds the whole transcript"),
            "{}",
            d.explanation
        );
    }
}

/// A chat that keeps overflowing a small context with drop-oldest: each new cut takes
/// the prompt down to half the context, and the turns after it keep that cut while
/// they fit, so their prompts extend the KV cache (reused tokens) instead of
/// re-prefilling it. Most turns of a long full chat are then cheap.
#[test]
fn a_full_chat_cuts_to_half_and_the_next_turns_reuse_the_cache() {
    use slm_runtime::session::{Overflow, Session};
    let eng = engine();
    let mut opts = GenerateOptions::greedy(8);
    opts.loop_detection = None;
    let cap = 192;
    let mut s = Session::new(&eng, cap);
    s.overflow = Overflow::DropOldest;
    s.messages
        .push(serde_json::json!({"role": "system", "content": "You are brief."}));
    let (mut cuts, mut reusing, mut last_cut) = (0, 0, None::<Vec<usize>>);
    for turn in 0..16 {
        s.push_user(
            &format!("Question {turn}: name one more colour, please."),
            NOW,
        );
        let mut p = s.begin_reply(&opts, NOW).unwrap();
        let prompt = p.prompt_ids().len();
        while !s.step(&mut p, &mut |_, _| {}) {}
        let t = s.finish(p, &mut |_, _| {});
        let cut = t.fitted.as_ref().map(|f| f.dropped_messages.clone());
        if cut.is_some() && cut != last_cut {
            cuts += 1;
            assert!(
                prompt <= cap / 2,
                "turn {turn}: a new cut leaves {prompt} of {cap}"
            );
        } else if cut.is_some() {
            // The same cut as the turn before: only the new tokens are prefilled.
            assert!(
                t.generation.reused_tokens + 40 >= prompt,
                "turn {turn}: {} of {prompt} reused",
                t.generation.reused_tokens
            );
            reusing += 1;
        }
        assert!(prompt + 8 <= cap);
        last_cut = cut;
    }
    assert!(
        cuts >= 2,
        "the chat overflowed more than once ({cuts} cuts)"
    );
    assert!(reusing > cuts, "{reusing} turns reused a cut, {cuts} cuts");
}

/// A reply cut at 6 tokens and continued for 6 more is the 12-token greedy reply: the
/// continuing prompt ends with the reply's text (transformers' continue_final_message),
/// reuses the cache, and the new text joins the same message.
#[test]
fn a_cut_reply_continues_as_if_it_had_not_been_cut() {
    use slm_runtime::session::Session;
    let eng = engine();
    let mut opts = GenerateOptions::greedy(12);
    opts.loop_detection = None;
    // A session that has answered the prompt with at most `opts.max_tokens` tokens.
    fn answered<'e>(
        eng: &'e Engine,
        opts: &GenerateOptions,
    ) -> (Session<'e>, slm_runtime::session::Turn) {
        let mut s = Session::new(eng, 256);
        let prompt = "Describe the sea in two sentences.";
        let t = s.send(prompt, opts, NOW, &mut |_, _| {}).unwrap();
        (s, t)
    }
    let (_, full) = answered(&eng, &opts);
    opts.max_tokens = 6;
    let (mut s, first) = answered(&eng, &opts);
    assert_eq!(first.generation.stop_reason, StopReason::MaxTokens);
    let kv = s.kv_len();
    let mut p = s.begin_continue(&opts, NOW).unwrap();
    assert!(p.prompt_text().ends_with(&first.generation.text));
    while !s.step(&mut p, &mut |_, _| {}) {}
    let more = s.finish(p, &mut |_, _| {});
    assert_eq!(
        more.generation.reused_tokens, kv,
        "the whole cache is reused"
    );
    assert_eq!(s.messages.len(), 2);
    assert_eq!(
        s.messages[1]["content"].as_str().unwrap(),
        full.generation.text,
        "6 + 6 tokens make the 12-token reply"
    );
    // Only a reply can be continued.
    s.push_user("Thanks.", NOW);
    let e = s.begin_continue(&opts, NOW).err().unwrap().to_string();
    assert!(e.contains("can be continued"), "{e}");
}

/// With the policy on, the reply to an underspecified message starts with the policy's
/// lead, which the model continues (the prompt ends with it, as transformers'
/// `continue_final_message` renders it); a regenerated reply starts with it again; a
/// clear follow-up gets none.
#[test]
fn a_clarifying_reply_starts_with_the_lead_and_the_model_continues_it() {
    use slm_runtime::clarify::LEAD_PASTE;
    use slm_runtime::session::Session;
    let eng = engine();
    let mut chat = Session::new(&eng, 2048);
    chat.clarify_first = true;
    let opts = GenerateOptions::greedy(12);
    let t = chat
        .send("Translate this sentence.", &opts, NOW, &mut |_, _| {})
        .unwrap();
    let d = t.policy.as_ref().unwrap();
    assert!(d.clarify);
    assert_eq!(d.lead.as_deref(), Some(LEAD_PASTE));
    assert_eq!(t.lead.as_deref(), Some(LEAD_PASTE));
    let reply = chat.messages.last().unwrap();
    assert_eq!(reply["role"], "assistant");
    let content = reply["content"].as_str().unwrap().to_string();
    assert_eq!(content, format!("{LEAD_PASTE}{}", t.generation.text));
    // The prompt ended with the lead: the same ids as the rendered user turn and the lead.
    let user_turn = eng
        .text
        .render(
            &serde_json::Value::Array(chat.messages[..1].to_vec()),
            None,
            true,
            NOW,
        )
        .unwrap();
    let given = eng
        .text
        .encode_rendered(&format!("{user_turn}{LEAD_PASTE}"))
        .unwrap();
    assert_eq!(t.generation.prompt_tokens, given.len());
    let cold = eng.greedy(&given, 12).unwrap();
    assert!(
        cold.ids.starts_with(&t.generation.ids),
        "the model continued the lead"
    );
    // The reply ends at its question: here the model stops there itself; where it
    // goes on, the session ends it after its sentence (`EndAt::Sentence`, the eval's
    // `stop_string` replies).
    assert!(content.ends_with('?'), "{content}");
    assert!(
        t.generation.stop_reason == slm_runtime::stopping::StopReason::EosToken
            || t.generation.stop_detail["rule"] == "end_at_sentence",
        "{:?}",
        t.generation.stop_detail
    );

    // Regenerate (as the page does): drop the reply, reply again.
    chat.messages.pop();
    let again = chat.reply(&opts, NOW, &mut |_, _| {}).unwrap();
    assert_eq!(again.lead.as_deref(), Some(LEAD_PASTE));
    assert_eq!(chat.messages.last().unwrap()["content"], content.as_str());

    // A clear follow-up: no lead.
    let t2 = chat
        .send("What is the capital of France?", &opts, NOW, &mut |_, _| {})
        .unwrap();
    assert!(!t2.policy.unwrap().clarify);
    assert!(t2.lead.is_none());
    assert_eq!(
        chat.messages.last().unwrap()["content"],
        t2.generation.text.as_str()
    );
}

/// `EndAt::Question`: the reply is the same generation cut just after its first
/// question, the "?" kept, and the stop says which rule ended it.
#[test]
fn end_at_question_cuts_the_same_reply_after_its_first_question() {
    use slm_runtime::engine::first_question_end;
    let eng = engine();
    let ids = prompt(
        &eng,
        "Write three short questions about cats, one per line.",
    );
    let full = eng.greedy(&ids, 48).unwrap();
    let at = first_question_end(&full.text).expect("the reply asks a question and goes on");
    let mut opts = GenerateOptions::greedy(48);
    opts.end_at = slm_runtime::engine::EndAt::Question;
    let mut shown = String::new();
    let cut = eng
        .generate(&ids, &opts, &mut |piece, _| shown.push_str(piece))
        .unwrap();
    assert_eq!(cut.text, full.text[..at]);
    assert_eq!(shown, cut.text, "what was streamed is the reply");
    assert!(full.ids.starts_with(&cut.ids));
    assert_eq!(cut.stop_detail["rule"], "end_at_question");
}

/// The user turn with the policy's note, rendered with the assistant opener: the
/// prompt every attempt at a clarifying reply shares, before its lead.
fn noted_turn(eng: &Engine, chat: &slm_runtime::session::Session) -> String {
    eng.text
        .render(
            &serde_json::Value::Array(chat.messages[..1].to_vec()),
            None,
            true,
            NOW,
        )
        .unwrap()
}

/// A clarifying reply that names no missing piece is set aside, and the next lead
/// starts another attempt (`Session::settle`): each attempt is what the model writes
/// after the noted prompt and its lead, the first that names a piece is kept, and the
/// next turn extends the context it left.
#[test]
fn a_clarifying_reply_that_names_no_piece_is_tried_with_the_next_lead() {
    use slm_runtime::session::Session;
    let eng = engine();
    let mut chat = Session::new(&eng, 2048);
    chat.clarify_first = true;
    let opts = GenerateOptions::greedy(24);
    let asked = "What year did she win the Nobel Prize?";
    let mut streamed = String::new();
    let t = chat
        .send(asked, &opts, NOW, &mut |s, _| streamed.push_str(s))
        .unwrap();
    let d = t.policy.clone().unwrap();
    let leads: Vec<&str> = t.tries.iter().map(|a| a.lead.as_str()).collect();
    assert_eq!(leads[0], d.lead.as_deref().unwrap());
    assert_eq!(
        leads[1..],
        d.retry_leads.iter().map(String::as_str).collect::<Vec<_>>()[..leads.len() - 1]
    );
    // SmolLM2 answers with a year twice ("the year "she" won…"), then asks.
    let named: Vec<bool> = t.tries.iter().map(|a| a.names_a_piece).collect();
    assert_eq!(named, [false, false, true], "{:?}", t.tries);
    let kept: Vec<bool> = t.tries.iter().map(|a| a.kept).collect();
    assert_eq!(kept, [false, false, true]);
    let opener = noted_turn(&eng, &chat);
    let mut each = GenerateOptions::greedy(24);
    // (`end_at` is set per attempt below, from its lead.)
    for a in &t.tries {
        assert_eq!(
            d.reply_names_a_piece(asked, &a.lead, &a.text),
            a.names_a_piece
        );
        let given = eng
            .text
            .encode_rendered(&format!("{opener}{}", a.lead))
            .unwrap();
        each.end_at = slm_runtime::clarify::reply_end(&a.lead);
        let cold = eng.generate(&given, &each, &mut |_, _| {}).unwrap();
        assert_eq!(cold.text, a.text, "attempt with {:?}", a.lead);
    }
    // Every attempt's text was streamed, in order; the turn is the kept one.
    let all: String = t.tries.iter().map(|a| a.text.as_str()).collect();
    assert_eq!(streamed, all);
    assert_eq!(t.lead.as_deref(), Some(leads[2]));
    assert_eq!(t.generation.text, t.tries[2].text);
    let content = chat.messages.last().unwrap()["content"].as_str().unwrap();
    assert_eq!(content, format!("{}{}", leads[2], t.tries[2].text));
    let next = chat
        .send("Marie Curie.", &opts, NOW, &mut |_, _| {})
        .unwrap();
    assert!(next.divergence.is_none(), "{:?}", next.divergence);
    assert!(next.generation.reused_tokens > 0);
}

/// When no attempt names a piece and the first that asks nothing amiss is a middle
/// one, that one is kept: SmolLM2 (greedy) asks for the notes "into three bullet
/// points" twice (the user asked to do the task), then "the meeting to summarize",
/// then three questions that name nothing. The transcript holds the third, its text
/// is what the model writes after its lead from the noted prompt, and the next turn
/// extends the context without a divergence.
#[test]
fn when_no_attempt_names_a_piece_the_first_that_asks_nothing_amiss_is_kept() {
    use slm_runtime::session::Session;
    let eng = engine();
    let mut chat = Session::new(&eng, 2048);
    chat.clarify_first = true;
    let opts = GenerateOptions::greedy(24);
    let asked = "Can you boil down the meeting notes into three bullet points?";
    let t = chat.send(asked, &opts, NOW, &mut |_, _| {}).unwrap();
    let d = t.policy.clone().unwrap();
    assert_eq!(t.tries.len(), 1 + d.retry_leads.len(), "{:?}", t.tries);
    assert!(t.tries.iter().all(|a| !a.names_a_piece), "{:?}", t.tries);
    let amiss: Vec<bool> = t.tries.iter().map(|a| a.asks_amiss).collect();
    assert_eq!(
        amiss,
        [true, true, false, false, false, false],
        "{:?}",
        t.tries
    );
    for a in &t.tries {
        assert_eq!(d.reply_asks_amiss(asked, &a.lead, &a.text), a.asks_amiss);
    }
    let kept: Vec<bool> = t.tries.iter().map(|a| a.kept).collect();
    assert_eq!(kept, [false, false, true, false, false, false]);
    let k = &t.tries[2];
    assert_eq!(t.lead.as_deref(), Some(k.lead.as_str()));
    assert_eq!(t.generation.text, k.text);
    let content = chat.messages.last().unwrap()["content"].as_str().unwrap();
    assert_eq!(content, format!("{}{}", k.lead, k.text));
    let opener = noted_turn(&eng, &chat);
    let given = eng
        .text
        .encode_rendered(&format!("{opener}{}", k.lead))
        .unwrap();
    let mut each = GenerateOptions::greedy(24);
    each.end_at = slm_runtime::clarify::reply_end(&k.lead);
    let cold = eng.generate(&given, &each, &mut |_, _| {}).unwrap();
    assert_eq!(cold.text, k.text);
    let prompt_len = eng.text.encode_rendered(&opener).unwrap().len();
    let next = chat
        .send(
            "Here they are: budget approved; launch moved to May.",
            &opts,
            NOW,
            &mut |_, _| {},
        )
        .unwrap();
    assert!(next.divergence.is_none(), "{:?}", next.divergence);
    assert!(next.generation.reused_tokens >= prompt_len);
}

/// When no attempt names a piece and none asks amiss, the first is kept: the
/// transcript holds it again, and the next turn extends the context without a
/// divergence.
#[test]
fn when_no_attempt_names_a_piece_the_first_is_kept() {
    use slm_runtime::session::Session;
    let eng = engine();
    let mut chat = Session::new(&eng, 2048);
    chat.clarify_first = true;
    let opts = GenerateOptions::greedy(24);
    let t = chat
        .send("Where does she live now?", &opts, NOW, &mut |_, _| {})
        .unwrap();
    let d = t.policy.clone().unwrap();
    assert_eq!(t.tries.len(), 1 + d.retry_leads.len());
    assert!(t.tries.iter().all(|a| !a.names_a_piece), "{:?}", t.tries);
    assert!(t.tries.iter().all(|a| !a.asks_amiss), "{:?}", t.tries);
    let kept: Vec<bool> = t.tries.iter().map(|a| a.kept).collect();
    assert!(kept[0], "the first is kept");
    assert!(kept[1..].iter().all(|k| !k));
    assert_eq!(t.lead, d.lead);
    assert_eq!(t.generation.text, t.tries[0].text);
    let content = chat.messages.last().unwrap()["content"].as_str().unwrap();
    assert_eq!(content, format!("{}{}", t.tries[0].lead, t.tries[0].text));
    let prompt_len = eng
        .text
        .encode_rendered(&noted_turn(&eng, &chat))
        .unwrap()
        .len();
    assert!(chat.kv_len() >= prompt_len, "the noted prompt stays cached");
    let next = chat
        .send("My aunt Rosa.", &opts, NOW, &mut |_, _| {})
        .unwrap();
    assert!(next.divergence.is_none(), "{:?}", next.divergence);
    assert!(next.generation.reused_tokens >= prompt_len);
}

/// A probe on `eng` whose margin is a fixed mix of layer 20's residual stream, firing
/// at `threshold`, naming the items first.
fn attach_probe(eng: &mut Engine, threshold: f32) {
    use slm_runtime::clarify::{probe::ProbeFit, ClarifyProbe, Slot, ALL_SLOTS};
    let h = eng.model.cfg.hidden_size;
    let items = ALL_SLOTS.iter().position(|&s| s == Slot::Items).unwrap();
    let mut slot_bias = vec![-1.0; ALL_SLOTS.len()];
    slot_bias[items] = 1.0;
    eng.text.manifest.clarify_probe = Some(ClarifyProbe {
        layer: 20,
        weights: (0..h)
            .map(|i| ((i * 7919) % 13) as f32 / 13.0 - 0.5)
            .collect(),
        bias: 0.25,
        threshold,
        veto: f32::MIN,
        slot_weights: vec![0.0; h * ALL_SLOTS.len()],
        slot_bias,
        fit: ProbeFit {
            source_sha256: Vec::new(),
            quant: "f32".into(),
            sets: Vec::new(),
            control_quantile: 0.97,
            veto_quantile: 0.01,
            held_out: Vec::new(),
        },
    });
}

/// The clarify probe reads the prompt in the session's own cache: its margin is the
/// one a fresh prefill of the same ids gives, bit for bit; a probe that does not fire
/// leaves the reply and the next turn exactly as without it (the turn reuses all
/// but the prompt's last token), and neither turn is flagged as diverging. One that
/// fires appends its note, and the reply to the noted prompt is not flagged either:
/// no turn was conditioned on what the probe prefilled.
#[test]
fn the_clarify_probe_reads_in_the_session_cache_and_changes_nothing_else() {
    use slm_runtime::session::Session;
    let plain = engine();
    let mut eng = engine();
    attach_probe(&mut eng, f32::MAX);
    let opts = GenerateOptions::greedy(12);
    let q1 = "What is the capital of France?";
    let want = plain.probe_reading(&prompt(&plain, q1)).unwrap();
    assert!(want.is_none(), "no probe, no reading");
    let fresh = eng.probe_reading(&prompt(&eng, q1)).unwrap().unwrap();

    let mut a = Session::new(&plain, 2048);
    let mut b = Session::new(&eng, 2048);
    for s in [&mut a, &mut b] {
        s.clarify_first = true;
    }
    let ta = a.send(q1, &opts, NOW, &mut |_, _| {}).unwrap();
    let tb = b.send(q1, &opts, NOW, &mut |_, _| {}).unwrap();
    let d = tb.policy.as_ref().unwrap();
    assert!(!d.clarify, "{}", d.why);
    assert_eq!(
        d.probe.as_ref(),
        Some(&fresh),
        "the session's reading is a fresh prefill's"
    );
    assert!(
        d.why.contains("clarify probe's margin at layer 20"),
        "{}",
        d.why
    );
    assert!(ta.policy.as_ref().unwrap().probe.is_none());
    assert_eq!(ta.generation.ids, tb.generation.ids);
    assert_eq!(tb.generation.reused_tokens, tb.generation.prompt_tokens - 1);
    assert!(tb.divergence.is_none());
    let q2 = "What is the capital of Italy?";
    let ta = a.send(q2, &opts, NOW, &mut |_, _| {}).unwrap();
    let tb = b.send(q2, &opts, NOW, &mut |_, _| {}).unwrap();
    assert_eq!(ta.generation.ids, tb.generation.ids);
    assert!(tb.divergence.is_none());
    assert!(b.divergence(NOW).unwrap().is_none());

    // A probe that fires on every prompt: the note and lead are its own.
    attach_probe(&mut eng, f32::MIN);
    let mut c = Session::new(&eng, 2048);
    c.clarify_first = true;
    let t = c.send(q1, &opts, NOW, &mut |_, _| {}).unwrap();
    let d = t.policy.as_ref().unwrap();
    assert!(d.clarify);
    assert_eq!(d.category, Some("probe"));
    assert_eq!(d.slots[0], slm_runtime::clarify::Slot::Items);
    assert!(t.divergence.is_none());
    assert!(c.messages[0]["content"]
        .as_str()
        .unwrap()
        .contains("the options to choose between"));
    // With the probe switched off, the rules decide alone.
    let mut e = Session::new(&eng, 2048);
    e.clarify_first = true;
    e.clarify_probe = false;
    let t = e.send(q1, &opts, NOW, &mut |_, _| {}).unwrap();
    assert!(t.policy.as_ref().unwrap().probe.is_none());
}
