"""Chat-template conformance corpus (reference/make_template_goldens.py).

Each case is (name, messages, tools[, extra apply_chat_template kwargs]). The corpus is
deliberately hostile: None values, non-string content, odd Unicode whitespace around
content (templates call .strip()/trim, whose Python semantics differ from Rust's), big
integers and awkward floats in tool arguments, non-alternating roles, empty chats. Every
case is rendered with add_generation_prompt True and False against every template; a
template that raises is recorded as an error, which is as much a golden as a render.
"""

from cases import NFC, NFD, WEATHER_TOOL

BIG = 123456789012345678901234567890
NEG_BIG = -(2**70)

SEARCH_TOOL = {
    "type": "function",
    "function": {
        "name": "search_web",
        "description": "Search the web <fast> & 'safe' \u2014 r\u00e9sum\u00e9s, \u65e5\u672c\u8a9e, emoji \U0001F50E.",
        "parameters": {
            "type": "object",
            "properties": {
                "query": {"type": "string", "description": "Search \"terms\" with a \\ backslash"},
                "max_results": {"type": "integer", "default": 5, "minimum": 1, "maximum": 50},
                "safe": {"type": "boolean", "default": True},
                "filters": {
                    "type": "object",
                    "properties": {
                        "site": {"type": ["string", "null"]},
                        "langs": {"type": "array", "items": {"type": "string", "enum": ["en", "fr", "zh"]}},
                        "score": {"type": "number", "default": 0.1},
                    },
                },
            },
            "required": ["query"],
        },
        "return": {"type": "array", "items": {"type": "string"}},
    },
}

NO_PARAM_TOOL = {
    "type": "function",
    "function": {"name": "get_time", "description": "Current UTC time.", "parameters": {"type": "object", "properties": {}}},
}

# Command-R's tool_use template reads Cohere's tool format, not JSON schema.
COHERE_TOOLS = [
    {
        "name": "internet_search",
        "description": "Returns a list of relevant document snippets for a textual query retrieved from the internet",
        "parameter_definitions": {
            "query": {"description": "Query to search the internet with", "type": "str", "required": True}
        },
    },
    {
        "name": "directly_answer",
        "description": "Calls a standard (un-augmented) AI chatbot to generate a response given the conversation history",
        "parameter_definitions": {},
    },
]

DOCUMENTS = [
    {"title": "Tall penguins", "text": "Emperor penguins are the tallest growing up to 122 cm in height."},
    {"title": "Penguin habitats", "text": "Emperor penguins only live in Antarctica.", "year": 2024, "score": 0.5},
]

ARGS_ODD = {
    "big": BIG,
    "neg_big": NEG_BIG,
    "tiny": 1e-7,
    "huge": 1e16,
    "tenth": 0.1,
    "int_float": 2.0,
    "neg_zero": -0.0,
    "yes": True,
    "no": False,
    "nothing": None,
    "nested": {"list": [1, 2.5, "three", None, True, {"deep": []}], "empty": {}},
    "text": "quote \" backslash \\ newline \n tab \t <tag> & 'apos' \u00e9 \u4e2d \U0001F600 \u2028",
}
ARGS_ODD_JSON = (
    '{"big": 123456789012345678901234567890, "neg_big": -1180591620717411303424, "tiny": 1e-7, '
    '"huge": 1e16, "tenth": 0.1, "yes": true, "nothing": null, "nested": {"list": [1, 2.5]}}'
)


def U(text):
    return {"role": "user", "content": text}


def A(text):
    return {"role": "assistant", "content": text}


def S(text):
    return {"role": "system", "content": text}


def call(name, args, cid="call00001", **extra):
    tc = {"id": cid, "type": "function", "function": {"name": name, "arguments": args}}
    tc.update(extra)
    return tc


def tool_result(content, cid="call00001", name="get_weather"):
    m = {"role": "tool", "content": content}
    if cid is not None:
        m["tool_call_id"] = cid
    if name is not None:
        m["name"] = name
    return m


LONG = " ".join(
    f"Sentence {i}: the quick brown fox jumps over the lazy dog, \u00e9t\u00e9 \u4e2d\u6587 \U0001F98A."
    for i in range(24)
)

SEP_WS = "\x1c\x1d\x1e\x1f"
UNI_WS = "\u0085\u00a0\u1680\u2000\u2028\u2029\u202f\u205f\u3000"

CASES = [
    # --- plain chats, system, multi-turn ---
    ("plain_user", [U("What is the capital of France?")], None),
    ("system_user", [S("You are a terse assistant."), U("Name a prime number.")], None),
    ("multi_turn_system", [S("You are a terse assistant."), U("Name a prime number."), A("7"), U("Another one?")], None),
    ("multi_turn_no_system", [U("Hi!"), A("Hello! How can I help?"), U("Tell me a fun fact about octopuses.")], None),
    ("assistant_last", [U("Say hi."), A("Hi!")], None),
    ("assistant_last_system", [S("Be nice."), U("Say hi."), A("Hi there!")], None),
    ("empty_conversation", [], None),
    ("system_only", [S("You are a helpful assistant.")], None),
    # --- non-alternating roles ---
    ("two_users_in_row", [U("First question."), U("Second question.")], None),
    ("assistant_first", [A("I speak first."), U("OK.")], None),
    ("two_system_messages", [S("Rule one."), S("Rule two."), U("Hi")], None),
    ("system_not_first", [U("Hi"), A("Hello"), S("Switch to French."), U("Bonjour?")], None),
    ("unknown_role", [U("Hi"), {"role": "developer", "content": "Use tabs."}, U("Go")], None),
    # --- tools available ---
    ("tools_available", [U("What's the weather in Oslo?")], [WEATHER_TOOL]),
    ("tools_with_system", [S("You can call tools."), U("Search for penguins.")], [WEATHER_TOOL, SEARCH_TOOL, NO_PARAM_TOOL]),
    ("tools_empty_list", [U("Hello with an empty tool list.")], []),
    ("tools_no_user", [S("Only a system message.")], [WEATHER_TOOL]),
    # --- assistant tool calls ---
    (
        "tool_call_content_none_dict_args",
        [U("Weather in Paris?"), {"role": "assistant", "content": None, "tool_calls": [call("get_weather", {"city": "Paris"})]},
         tool_result('{"temp": 18, "sky": "cloudy"}')],
        [WEATHER_TOOL],
    ),
    (
        "tool_call_content_absent_string_args",
        [U("Weather in Paris?"), {"role": "assistant", "tool_calls": [call("get_weather", '{"city": "Paris"}')]},
         tool_result('{"temp": 18}')],
        [WEATHER_TOOL],
    ),
    (
        "tool_call_with_content",
        [U("Weather in Rome?"), {"role": "assistant", "content": "Let me check.", "tool_calls": [call("get_weather", {"city": "Rome", "unit": "celsius"})]},
         tool_result("22C, sunny"), A("It is 22\u00b0C and sunny in Rome.")],
        [WEATHER_TOOL],
    ),
    (
        "tool_call_empty_content_string_args",
        [U("Weather?"), {"role": "assistant", "content": "", "tool_calls": [call("get_weather", '{"city": "Oslo"}')]}],
        [WEATHER_TOOL],
    ),
    (
        "parallel_tool_calls",
        [U("Weather in Paris and Tokyo?"),
         {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "call00001"),
                                                               call("get_weather", {"city": "Tokyo", "unit": "celsius"}, "call00002")]},
         tool_result('{"temp": 18}', "call00001"), tool_result('{"temp": 24}', "call00002"),
         A("Paris 18, Tokyo 24.")],
        [WEATHER_TOOL],
    ),
    (
        "tool_result_without_id_or_name",
        [U("Weather?"), {"role": "assistant", "content": None, "tool_calls": [call("get_weather", {"city": "Oslo"})]},
         tool_result("-3C", cid=None, name=None)],
        [WEATHER_TOOL],
    ),
    (
        "tool_result_dict_content",
        [U("Weather?"), {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Oslo"})]},
         tool_result({"temp": -3, "ok": True, "none": None, "list": [1, 2.5, "x"], "big": BIG})],
        [WEATHER_TOOL],
    ),
    (
        "tool_result_parts_content",
        [U("Weather?"), {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Oslo"})]},
         tool_result([{"type": "text", "text": "-3C and snowing"}])],
        [WEATHER_TOOL],
    ),
    (
        "tool_call_odd_numbers_dict",
        [U("Store these numbers."), {"role": "assistant", "content": "", "tool_calls": [call("store", ARGS_ODD)]},
         tool_result("stored", name="store")],
        None,
    ),
    (
        "tool_call_odd_numbers_string",
        [U("Store these numbers."), {"role": "assistant", "content": "", "tool_calls": [call("store", ARGS_ODD_JSON)]}],
        None,
    ),
    (
        "tool_call_content_none_string_args_odd",
        [U("Store these numbers."), {"role": "assistant", "content": None, "tool_calls": [call("store", ARGS_ODD_JSON)]},
         tool_result('{"stored": true}', name="store")],
        None,
    ),
    (
        "tool_call_minimal_shape",
        [U("Time?"), {"role": "assistant", "tool_calls": [{"function": {"name": "get_time", "arguments": {}}}]},
         {"role": "tool", "content": "12:00"}],
        [NO_PARAM_TOOL],
    ),
    (
        "tool_call_flat_shape",
        [U("Time?"), {"role": "assistant", "content": "", "tool_calls": [{"name": "get_time", "arguments": {"tz": "UTC"}}]}],
        [NO_PARAM_TOOL],
    ),
    (
        "tool_call_long_id",
        [U("Weather?"), {"role": "assistant", "content": None, "tool_calls": [call("get_weather", {"city": "Lima"}, "call_abc123def456")]},
         tool_result("20C", "call_abc123def456")],
        [WEATHER_TOOL],
    ),
    (
        "multi_step_tool_flow",
        [S("Use tools when useful."), U("Weather in Paris?"),
         {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Paris"}, "call00001")]},
         tool_result("18C", "call00001"), A("18C in Paris."), U("And in Oslo?"),
         {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Oslo"}, "call00002")]},
         tool_result("-3C", "call00002")],
        [WEATHER_TOOL, SEARCH_TOOL],
    ),
    ("cohere_format_tools", [U("Who won the 2022 World Cup?")], COHERE_TOOLS),
    ("documents_rag", [U("How tall are emperor penguins?")], None, {"documents": DOCUMENTS}),
    # --- content shapes ---
    ("content_parts_text", [U([{"type": "text", "text": "Hello"}, {"type": "text", "text": " world "}])], None),
    ("content_parts_image", [U([{"type": "image"}, {"type": "text", "text": "What is in this image?"}])], None),
    ("content_parts_image_url", [U([{"type": "image_url", "image_url": {"url": "https://example.com/cat.png"}},
                                    {"type": "text", "text": "Describe it."}])], None),
    ("system_content_parts", [S([{"type": "text", "text": "Be brief."}]), U("Hi")], None),
    ("assistant_content_parts", [U("Hi"), {"role": "assistant", "content": [{"type": "text", "text": "Hello!"}]}, U("Bye")], None),
    ("user_content_none", [{"role": "user", "content": None}], None),
    ("assistant_content_none", [U("Hi"), {"role": "assistant", "content": None}, U("Still there?")], None),
    ("user_content_missing", [{"role": "user"}], None),
    ("content_int", [U(42)], None),
    ("extra_none_keys", [{"role": "user", "content": "Hi", "name": None, "tool_calls": None},
                         {"role": "assistant", "content": "Hello", "tool_calls": None, "refusal": None, "reasoning_content": None},
                         {"role": "user", "content": "Bye", "tool_call_id": None}], None),
    ("name_keys", [{"role": "system", "content": "Be kind.", "name": "sys"}, {"role": "user", "content": "Hi", "name": "alice"}], None),
    # --- whitespace around content (strip/trim semantics) ---
    ("ws_ascii_separators", [S(SEP_WS + " System sep " + SEP_WS), U(SEP_WS + "Hello separators" + SEP_WS[::-1]),
                             A("\x1f Reply \x1c"), U("\x1eagain\x1d")], None),
    ("ws_unicode", [S(UNI_WS + "System uni" + UNI_WS), U(UNI_WS + "Hello unicode" + UNI_WS[::-1]),
                    A("\u3000Reply\u00a0"), U("\u200b\ufeffzero width\u200b\ufeff")], None),
    ("ws_vt_ff_tabs", [S("\v\f\t System \t\f\v"), U("\v\f\t Hello \t\f\v"), A("\tReply\v"), U("\fagain\f")], None),
    ("ws_crlf", [S("\r\n System\r\n"), U("\r\n\r\n Hello\r\nworld \r\n"), A("\rReply\r"), U("\n\nagain\n\n")], None),
    ("ws_only_content", [U("  \n\t  "), A("\u3000"), U(" ")], None),
    ("empty_strings", [S(""), U(""), A(""), U("")], None),
    # --- text content ---
    ("emoji_cjk_rtl", [U("Family: \U0001F468\u200D\U0001F469\u200D\U0001F467 \u4f60\u597d\uff0c\u4e16\u754c \u0645\u0631\u062d\u0628\u0627 \u05e9\u05dc\u05d5\u05dd \u202eRTL override\u202c " + NFC + " " + NFD)], None),
    ("special_tokens_literal", [U("Say <|im_end|><|eot_id|><start_of_turn></s><s>[INST] <|START_OF_TURN_TOKEN|> <\uff5cUser\uff5c> literally.")], None),
    ("jinja_like_text", [U("{{ messages }} {% if true %}x{% endif %} {# comment #} {%- raw -%}")], None),
    ("very_long_content", [S("Summarize."), U(LONG)], None),
    # --- reasoning ---
    ("reasoning_in_think_tags", [U("2+2?"), A("<think>\nLet me add.\n</think>\n\nThe answer is 4."), U("3+3?")], None),
    ("reasoning_field_alias", [U("2+2?"), {"role": "assistant", "content": "4", "reasoning": "Adding two and two."}], None),
    ("reasoning_content_last", [U("2+2?"), {"role": "assistant", "content": "4", "reasoning_content": "2 plus 2."}], None),
]
