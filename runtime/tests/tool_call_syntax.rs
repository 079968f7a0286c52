//! Which tool-call syntax each real chat template teaches (the committed template
//! goldens: templates as their model repositories ship them). Hermes-style tags for the
//! Qwen family and MiniCPM, Llama 3.2's JSON form, and none for templates that render
//! no calls or use a syntax the parser does not read (DeepSeek V3's and Mistral's
//! special-token forms, Command R's action blocks): their replies stay plain text.

use slm_runtime::tool_calls::ToolCallSyntax::{self, Hermes, LlamaJson};

const EXPECTED: &[(&str, Option<ToolCallSyntax>)] = &[
    ("aya_expanse-default", None),
    ("chatglm3", None),
    ("command_r_plus-default", None),
    ("command_r_plus-rag", None),
    ("command_r_plus-tool_use", None),
    ("deepseek_v3", None),
    ("gemma3", None),
    ("gguf-qwen2.5-coder", Some(Hermes)),
    ("gguf-smollm2", None),
    ("internlm2", None),
    ("llama2-chat", None),
    ("llama3", None),
    ("llama3_1", None),
    ("llama3_2", Some(LlamaJson)),
    ("minicpm_v4_5", Some(Hermes)),
    ("mistral_nemo", None),
    ("qwen1_5", None),
    ("qwen2_5", Some(Hermes)),
    ("qwen3", Some(Hermes)),
];

#[test]
fn each_real_template_gets_its_own_syntax() {
    let dir =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../reference/goldens/templates");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let golden: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(&path).unwrap()).unwrap();
        let template = golden["template"].as_str().unwrap();
        let want = EXPECTED
            .iter()
            .find(|(n, _)| *n == name)
            .unwrap_or_else(|| {
                panic!("{name}: a new template golden needs its expected syntax here")
            })
            .1;
        assert_eq!(ToolCallSyntax::of_template(template), want, "{name}");
        seen += 1;
    }
    assert_eq!(seen, EXPECTED.len());
}
