//! Diagnostic: the residual stream of the last prompt position after each layer, for
//! every prompt of some clarify sets, to fit and test a clarify probe offline.
//! cargo run --release --example hidden_dump -- M.slm OUT.f32 SET.jsonl...
//! Writes OUT.f32 ([prompts, layers, hidden] little-endian f32) and OUT.f32.jsonl
//! (one line per prompt: file, id, set, category).
use slm_runtime::engine::Engine;
use slm_runtime::model::Scratch;
use std::io::{BufRead, Write};
fn main() {
    let a: Vec<String> = std::env::args().collect();
    let eng = Engine::load_file(a[1].as_ref()).unwrap();
    let mut out = std::io::BufWriter::new(std::fs::File::create(&a[2]).unwrap());
    let mut meta = std::fs::File::create(format!("{}.jsonl", a[2])).unwrap();
    for f in &a[3..] {
        for line in std::io::BufReader::new(std::fs::File::open(f).unwrap()).lines() {
            let line = line.unwrap();
            let v: serde_json::Value = serde_json::from_str(&line).unwrap();
            let msgs = vec![serde_json::json!({"role": "user", "content": v["prompt"]})];
            let text = eng.text.render_prompt(&msgs, None, false, 0).unwrap();
            let ids = eng.text.encode_rendered(&text).unwrap();
            let mut s = Scratch::new(&eng.model.cfg, ids.len());
            s.capture_hidden(&eng.model.cfg);
            let mut cache = eng.model.new_cache(ids.len());
            eng.model.prefill(&ids, &mut cache, &mut s).unwrap();
            for x in &s.hidden {
                out.write_all(&x.to_le_bytes()).unwrap();
            }
            let m = serde_json::json!({"file": f, "id": v["id"], "set": v["set"], "category": v["category"]});
            writeln!(meta, "{m}").unwrap();
        }
    }
}
