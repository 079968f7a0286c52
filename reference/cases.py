"""Prompt cases shared by every golden. Each case is a chat (messages [+ tools]); the
plain-text tokenizer cases reuse every user message's content as raw text."""

WEATHER_TOOL = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Get the current weather for a city.",
        "parameters": {
            "type": "object",
            "properties": {
                "city": {"type": "string", "description": "City name, e.g. \"Paris\""},
                "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]},
            },
            "required": ["city"],
        },
    },
}

NFC = "Caf\u00e9 na\u00efve r\u00e9sum\u00e9 \u00c5ngstr\u00f6m"
NFD = "Cafe\u0301 nai\u0308ve re\u0301sume\u0301 A\u030angstro\u0308m"


def user(text):
    return [{"role": "user", "content": text}]


CASES = [
    ("plain_ascii", user("What is the capital of France?"), None),
    ("spaces", user("  leading, trailing   and    repeated spaces   "), None),
    ("tabs_crlf", user("col1\tcol2\t\tcol3\r\nline two\r\n\r\nline four\n"), None),
    ("punctuation", user("Wait...!!! What?!?! ---- ((nested)) [[x]] {{y}} ;;; ,,, ..."), None),
    ("json", user('Parse this: {"name": "Ada", "age": 36, "tags": ["math", "code"], "ok": true, "x": null}'), None),
    ("code_fence", user("Fix my code:\n```python\ndef add(a, b):\n    return a+b  # sum\n```\nThanks!"), None),
    ("xml_tags", user("<tool_call>\n{\"name\": \"f\"}\n</tool_call> and <tag attr=\"1\">text</tag>"), None),
    ("empty_content", user(""), None),
    ("digits", user("Compute 12345 * 6789 = 83810205, pi ~ 3.14159, year 2024."), None),
    ("nfc", user(NFC), None),
    ("nfd", user(NFD), None),
    ("emoji_zwj", user("Family: \U0001F468\u200D\U0001F469\u200D\U0001F467\u200D\U0001F466 flags \U0001F1EB\U0001F1F7 thumbs \U0001F44D\U0001F3FD"), None),
    ("cjk", user("\u4f60\u597d\uff0c\u4e16\u754c\uff01\u3053\u3093\u306b\u3061\u306f\u4e16\u754c\u3002\ud55c\uad6d\uc5b4 \ud14c\uc2a4\ud2b8"), None),
    ("rtl", user("\u0645\u0631\u062d\u0628\u0627 \u0628\u0627\u0644\u0639\u0627\u0644\u0645 and \u05e9\u05dc\u05d5\u05dd \u05e2\u05d5\u05dc\u05dd mixed"), None),
    ("special_in_text", user("Say <|im_end|> then <|im_start|>assistant and <|endoftext|> literally."), None),
    (
        "multi_turn_system",
        [
            {"role": "system", "content": "You are a terse assistant."},
            {"role": "user", "content": "Name a prime number."},
            {"role": "assistant", "content": "7"},
            {"role": "user", "content": "Another one?"},
        ],
        None,
    ),
    (
        "multi_turn_no_system",
        [
            {"role": "user", "content": "Hi!"},
            {"role": "assistant", "content": "Hello! How can I help?"},
            {"role": "user", "content": "Tell me a fun fact about octopuses."},
        ],
        None,
    ),
    (
        "tool_messages",
        [
            {"role": "user", "content": "Weather in Paris and Tokyo?"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [
                    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Paris"}}},
                    {"type": "function", "function": {"name": "get_weather", "arguments": {"city": "Tokyo", "unit": "celsius"}}},
                ],
            },
            {"role": "tool", "content": "{\"temp\": 18, \"sky\": \"cloudy\"}"},
            {"role": "tool", "content": "{\"temp\": 24, \"sky\": \"clear\"}"},
        ],
        [WEATHER_TOOL],
    ),
    ("tools_available", user("What's the weather in Oslo?"), [WEATHER_TOOL]),
    ("long_prose", user("Explain, step by step, why the sky is blue. " * 4), None),
]

# Cases whose greedy continuation is part of the golden (kept short for CI time).
GREEDY_CASES = ["plain_ascii", "code_fence", "multi_turn_system", "cjk", "tools_available", "digits"]
GREEDY_MAX_NEW = 40
