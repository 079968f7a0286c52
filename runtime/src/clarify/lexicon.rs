//! Word lists the clarify rules read. English only: a prompt in another language
//! matches no trigger, so the policy stays silent on it (never a false question).
//! Every entry is lowercase; multi-word entries are matched as consecutive words.

/// Human languages a translation can target.
#[rustfmt::skip]
pub const LANGUAGES: &[&str] = &[
    "english", "french", "spanish", "german", "italian", "portuguese", "dutch", "russian",
    "ukrainian", "polish", "czech", "slovak", "hungarian", "romanian", "bulgarian", "greek",
    "turkish", "arabic", "hebrew", "persian", "farsi", "urdu", "hindi", "bengali", "punjabi",
    "tamil", "telugu", "marathi", "gujarati", "chinese", "mandarin", "cantonese", "japanese",
    "korean", "vietnamese", "thai", "indonesian", "malay", "tagalog", "filipino", "swahili",
    "swedish", "norwegian", "danish", "finnish", "icelandic", "estonian", "latvian", "lithuanian",
    "serbian", "croatian", "bosnian", "slovenian", "albanian", "catalan", "basque", "galician",
    "irish", "welsh", "latin", "esperanto", "afrikaans", "zulu", "xhosa", "amharic", "somali",
    "yoruba", "igbo", "hausa", "nepali", "sinhala", "burmese", "khmer", "lao", "mongolian",
    "kazakh", "uzbek", "georgian", "armenian", "azerbaijani", "pashto", "kurdish", "maori",
    "hawaiian", "yiddish", "klingon", "pig latin",
];

/// Programming languages, runtimes, frameworks and tools that fix what code to write.
/// One-letter names ("c", "r") count only in the phrases of `SHORT_LANGUAGE_PHRASES`.
#[rustfmt::skip]
pub const PROGRAMMING: &[&str] = &[
    "python", "python3", "javascript", "typescript", "js", "ts", "rust", "go", "golang", "java",
    "kotlin", "swift", "ruby", "php", "perl", "scala", "haskell", "lua", "dart", "julia", "c++",
    "cpp", "c#", "csharp", "f#", "bash", "shell", "sh", "zsh", "fish", "powershell", "batch",
    "sql", "mysql", "postgres", "postgresql", "sqlite", "t-sql", "plsql", "html", "css", "scss",
    "matlab", "octave", "excel", "vba", "vb", "vb.net", "node", "nodejs", "node.js", "deno", "bun",
    "react", "vue", "angular", "svelte", "django", "flask", "fastapi", "rails", "spring", "dotnet",
    ".net", "unity", "pandas", "numpy", "jquery", "elixir", "erlang", "clojure", "fortran",
    "cobol", "assembly", "asm", "solidity", "objective-c", "groovy", "ocaml", "zig", "nim",
    "verilog", "vhdl", "latex", "dockerfile", "docker", "terraform", "ansible", "arduino",
    "kubernetes", "awk", "sed", "jq", "pyspark", "spark", "tensorflow", "pytorch", "wasm",
    "webassembly", "regex", "lisp", "scheme", "racket", "prolog", "pascal", "delphi", "apex",
    "abap", "cuda", "opencl", "glsl", "hlsl", "gdscript", "godot", "wordpress", "laravel",
    "express", "nextjs", "next.js", "svelte", "tailwind", "bootstrap", "android", "ios", "linux",
    "windows", "macos", "unix", "cmd", "makefile", "cmake", "yaml", "json", "cron", "crontab",
    "excel formula", "google sheets", "spreadsheet", "apps script", "office scripts",
];

/// Phrases that name a one-letter language.
#[rustfmt::skip]
pub const SHORT_LANGUAGE_PHRASES: &[&str] = &[
    "in c", "c code", "c function", "c program", "c language", "ansi c", "c99", "c11", "in r",
    "r code", "r function", "r script", "using c", "using r", "with c",
];

/// What a request to write code asks for. A bare "job" is not one ("I really want
/// this job"): a job is code as a "cron job" or a "job that" does something.
#[rustfmt::skip]
pub const CODE_NOUNS: &[&str] = &[
    "function", "script", "program", "class", "method", "snippet", "code", "algorithm", "app",
    "application", "api", "endpoint", "cli", "tool", "bot", "scraper", "module", "library",
    "query", "loop", "parser", "server", "game", "website", "web page", "webpage", "component",
    "unit test", "unit tests", "test", "tests", "implementation", "procedure", "macro",
    "one-liner", "command", "handler", "cron", "cron job", "batch job", "background job",
    "scheduled job", "job that", "job to", "job which", "hook", "middleware",
    "migration", "controller", "service", "worker", "pipeline", "automation", "http",
    "http request", "post request", "get request", "logic",
];

#[rustfmt::skip]
pub const CODE_VERBS: &[&str] = &[
    "write", "create", "implement", "make", "generate", "build", "code", "give me", "show me",
    "develop", "program", "need", "want", "help me write", "can you write", "gimme", "provide",
    "writing", "draft", "put together", "set up", "wire up",
];

/// Verbs that act on a text, code or data the user supplies. The value is the
/// category a missing text is reported under.
#[rustfmt::skip]
pub const TEXT_VERBS: &[(&str, &str)] = &[
    ("translate", "translate"),
    ("fix", "fix"),
    ("debug", "fix"),
    ("correct", "fix"),
    ("proofread", "fix"),
    ("proof-read", "fix"),
    ("review", "fix"),
    ("improve", "fix"),
    ("clean up", "fix"),
    ("refactor", "fix"),
    ("validate", "fix"),
    ("optimize", "fix"),
    ("optimise", "fix"),
    ("edit", "fix"),
    ("polish", "fix"),
    ("check", "fix"),
    ("critique", "fix"),
    ("grade", "fix"),
    ("rate", "fix"),
    ("look at", "fix"),
    ("look over", "fix"),
    ("go over", "fix"),
    ("what's wrong with", "fix"),
    ("what is wrong with", "fix"),
    ("whats wrong with", "fix"),
    ("spot the error in", "fix"),
    ("find the bug in", "fix"),
    ("find the error in", "fix"),
    ("rewrite", "fix"),
    ("rephrase", "fix"),
    ("reword", "fix"),
    ("paraphrase", "fix"),
    ("simplify", "fix"),
    ("format", "fix"),
    ("explain", "summarize"),
    ("summarize", "summarize"),
    ("summarise", "summarize"),
    ("summary of", "summarize"),
    ("sum up", "summarize"),
    ("condense", "summarize"),
    ("recap", "summarize"),
    ("shorten", "summarize"),
    ("tl;dr", "summarize"),
    ("tldr", "summarize"),
    ("gist of", "summarize"),
    ("key points of", "summarize"),
    ("main points of", "summarize"),
    ("main idea of", "summarize"),
    ("takeaways from", "summarize"),
    ("outline", "summarize"),
    ("overview of", "summarize"),
    ("boil", "summarize"),
    ("distill", "summarize"),
    ("break down", "summarize"),
    ("shorter version of", "summarize"),
    ("sumarize", "summarize"),
    ("summerize", "summarize"),
    ("make", "fix"),
    ("port", "fix"),
    ("tidy", "fix"),
    ("rework", "fix"),
    ("jazz up", "fix"),
    ("punch up", "fix"),
    ("touch up", "fix"),
    ("tweak", "fix"),
    ("short version of", "summarize"),
    ("spot", "fix"),
    ("find the typo", "fix"),
    ("find the mistake", "fix"),
    ("analyze", "summarize"),
    ("analyse", "summarize"),
    ("convert", "json"),
    // "Can you structure my notes into JSON?": the notes are the data, and not here.
    ("structure", "json"),
    ("turn", "json"),
    ("parse", "json"),
    ("extract", "json"),
    ("put", "json"),
    ("output", "json"),
    ("return", "json"),
    ("pull", "json"),
    // "write a unit test for the discount function we added": tests of code the user
    // has, and the message does not carry it.
    ("unit test for", "fix"),
    ("unit tests for", "fix"),
    ("test for", "fix"),
    ("tests for", "fix"),
    ("docstring for", "fix"),
    ("docstrings for", "fix"),
    ("docstring to", "fix"),
    ("docstrings to", "fix"),
    ("documentation for", "fix"),
    ("comments to", "fix"),
    ("type hints to", "fix"),
];

/// Units a quantity is converted between ("convert my height to centimeters").
#[rustfmt::skip]
pub const UNITS: &[&str] = &[
    "centimeters", "centimetres", "cm", "millimeters", "millimetres", "mm", "meters", "metres",
    "m", "kilometers", "kilometres", "km", "inches", "inch", "feet", "foot", "ft", "yards",
    "miles", "kilograms", "kg", "grams", "g", "pounds", "lbs", "lb", "ounces", "oz", "stone",
    "liters", "litres", "l", "ml", "milliliters", "millilitres", "gallons", "cups", "quarts",
    "pints", "celsius", "fahrenheit", "kelvin", "mph", "kph", "knots", "seconds", "minutes",
    "hours", "days", "weeks", "dollars", "euros", "yen", "usd", "eur", "gbp",
];

/// Misspellings of words the rules read, each with its spelling: "translate thsi
/// message" points at a message as "this message" does. Only forms that are no other
/// word.
#[rustfmt::skip]
pub const RESPELLINGS: &[(&str, &str)] = &[
    ("thsi", "this"), ("tihs", "this"), ("htis", "this"), ("thiss", "this"),
    ("teh", "the"), ("hte", "the"),
    ("taht", "that"), ("thta", "that"), ("tht", "that"),
    ("plese", "please"), ("pleae", "please"), ("pleasee", "please"),
    ("translte", "translate"), ("tranlsate", "translate"), ("transalte", "translate"),
    ("traslate", "translate"), ("translat", "translate"),
    ("sumarise", "summarise"), ("summery", "summary"),
    ("mesage", "message"), ("messge", "message"), ("emial", "email"),
];

/// Objects that point at a text the message would have to carry.
#[rustfmt::skip]
pub const DEICTIC: &[&str] = &[
    "this", "that", "it", "these", "those", "the following", "the above", "the attached",
    "the text", "the below", "below", "above", "attached", "here",
];

/// Possessives: "my essay" is a text only the user has.
#[rustfmt::skip]
pub const POSSESSIVE: &[&str] = &["my", "our", "his", "her", "their"];

/// Nouns of a text the user would have to paste.
#[rustfmt::skip]
pub const TEXT_NOUNS: &[&str] = &[
    "text", "sentence", "sentences", "paragraph", "paragraphs", "passage", "phrase", "word",
    "words", "message", "messages", "email", "e-mail", "letter", "document", "doc", "article",
    "essay", "story", "report", "paper", "code", "function", "script", "program", "snippet", "bug",
    "bugs", "error", "errors", "file", "chapter", "data", "list", "table", "query", "post", "poem",
    "speech", "notes", "resume", "résumé", "cv", "transcript", "draft", "thesis", "abstract",
    "summary", "review", "answer", "homework", "assignment", "output", "log", "logs",
    "stack trace", "traceback", "config", "configuration", "spreadsheet", "csv", "json", "xml",
    "html", "page", "lyrics", "quote", "caption", "tweet", "bio", "cover letter", "proposal",
    "contract", "lease", "memo", "minutes", "recipe", "instructions", "description", "regex", "sql",
    "class", "method", "loop", "formula", "equation", "translation", "statement", "content",
    "input", "response", "reply", "blog post", "newsletter", "slide", "slides", "book", "video",
    "podcast", "lecture", "meeting", "thread", "conversation", "chat", "discussion", "call",
    "interview", "question", "stuff", "grammar", "writing", "work", "dataset", "records", "info",
    "information", "details", "pull request", "pr", "commit", "diff", "patch", "changes", "css",
    "stylesheet", "blog", "thread", "repo", "repository", "codebase", "project", "app", "website",
    "site", "menu", "sign", "label", "flyer", "poster", "brochure", "leaflet", "card", "invitation",
    "results", "msg", "msgs", "abbreviations", "rows", "terms", "agreement", "policy", "wording", "lines", "sentence", "invoice", "receipt",
    "catalog", "catalogue", "inventory", "component", "components", "module", "macro",
    "indentation",
];

/// Words that carry no content: what is left of a request without them is the
/// thing it acts on.
#[rustfmt::skip]
pub const FILLER: &[&str] = &[
    "a", "an", "the", "this", "that", "it", "these", "those", "please", "pls", "plz", "can",
    "could", "would", "will", "you", "u", "me", "for", "to", "into", "in", "from", "of", "and",
    "or", "i", "i'd", "i'm", "need", "want", "like", "help", "kindly", "quickly", "just", "now",
    "thx", "hey", "hi", "hello", "ok", "okay", "some", "something", "following", "above", "below",
    "attached", "here", "there", "is", "are", "be", "my", "our", "your", "with", "again", "also",
    "too", "say", "how", "do", "does", "what", "language", "languages", "version", "mean", "means",
    "get", "translated", "translation", "translate", "translating", "word", "words", "sentence",
    "sentences", "text", "phrase", "message", "paragraph", "so", "one", "real", "really", "quick",
    "fast", "short", "this:", "possible", "if", "let's", "lets", "let", "go", "on", "at", "which",
    "should", "we", "us", "don't", "know",
];

/// Places one goes to or a service one hires: a recommendation needs a location.
#[rustfmt::skip]
pub const PLACE_NOUNS: &[&str] = &[
    "restaurant", "restaurants", "cafe", "cafes", "café", "coffee shop", "trip", "vacation",
    "getaway", "day out", "place to", "places to", "bar", "bars", "pub", "pubs", "hotel", "hotels",
    "hostel", "motel", "airbnb", "dentist", "doctor", "doctors", "gym", "gyms", "school",
    "schools", "hospital", "pharmacy", "mechanic", "garage", "hairdresser", "barber", "haircut",
    "salon", "pizza", "pizzeria", "sushi", "burger", "burgers", "tacos", "ramen", "brunch",
    "breakfast", "lunch", "dinner", "bakery", "park", "parks", "beach", "beaches", "museum",
    "museums", "store", "stores", "shop", "shops", "supermarket", "grocery", "mall", "club",
    "clubs", "nightclub", "spa", "plumber", "electrician", "vet", "veterinarian", "lawyer",
    "attorney", "accountant", "daycare", "kindergarten", "library", "place to eat",
    "place to stay", "places to eat", "places to stay", "things to do", "thing to do",
    "something to do", "trails", "hiking trails", "farmers market", "market", "markets",
    "neighborhood", "venue", "venues", "pediatrician", "paediatrician", "optometrist",
    "dermatologist", "groomer", "babysitter", "go fishing", "fishing spot", "fishing spots", "campsite", "campground",
    "neighbourhood", "apartment", "realtor", "therapist", "physiotherapist", "chiropractor",
    "clinic", "tailor", "florist", "car wash", "hiking trail", "hike", "hikes", "trail",
    "campsite", "camping", "ski resort", "neighborhoods", "museums", "bookstore", "bookshop",
    "cinema", "movie theater", "theatre", "theater", "venue", "concert", "market",
    "farmers market", "butcher", "optician", "optometrist", "pediatrician", "dermatologist",
    "tutor", "driving school", "yoga studio", "pool", "swimming pool", "playground", "zoo",
    "steakhouse", "bistro", "diner", "food truck", "ice cream", "gelato", "bbq", "barbecue",
    "wine bar", "brewery", "winery", "laundromat", "dry cleaner", "bank", "atm", "gas station",
    "petrol station", "parking", "car rental", "bike shop", "pet store", "nail salon", "tattoo",
    "photographer", "wedding venue", "coworking", "co-working", "dog park",
];

/// What a recommendation asks: "the best X", "recommend a X", "where can I get X".
#[rustfmt::skip]
pub const RECOMMEND_CUES: &[&str] = &[
    "best", "good", "great", "recommend", "recommendation", "recommendations", "suggest",
    "where can i", "where should i", "where do i", "where to", "find me", "find a", "top",
    "nearest", "closest", "nearby", "near me", "around here", "cheap", "decent", "favorite",
    "favourite", "any", "nice", "recomend", "which", "should i join", "should i go to", "must-see",
    "must see", "worth visiting", "worth a visit", "safest", "cheapest", "nicest", "quietest",
    "coolest", "tastiest", "popular", "top-rated", "highly rated", "where should we",
    "where can we", "take my", "fun", "looking for", "need a", "know any", "know a", "suitable",
    "advise on", "suggestions", "walking distance",
];

/// What follows "in"/"near" that is not a place.
#[rustfmt::skip]
pub const NOT_A_PLACE: &[&str] = &[
    "me", "my", "the", "a", "an", "this", "that", "our", "your", "here", "there", "town", "city",
    "area", "neighborhood", "neighbourhood", "general", "summer", "winter", "spring", "autumn",
    "fall", "the morning", "advance", "mind", "order", "total", "terms", "case", "fact", "time",
    "person", "budget", "style", "particular", "world", "today", "tonight", "tomorrow", "january",
    "february", "march", "april", "may", "june", "july", "august", "september", "october",
    "november", "december", "it", "them", "which", "what", "one", "two", "english", "french",
    "spanish", "german", "python", "javascript", "java", "rust", "go", "c", "c++", "sql", "json",
    "years", "minutes", "hours", "days", "weeks", "months", "detail", "details", "short", "brief",
    "words", "simple", "plain", "mine", "ours", "yours", "use", "school", "life", "bed", "class",
    "front", "line", "person", "public", "private", "bulk", "cash", "stock", "store", "person",
    "advance", "front", "range", "season", "all", "every", "some", "lots", "circles", "reason",
    "moderation", "limits", "boxes", "debt", "paperwork", "trouble", "tears", "pain", "love",
    "shock", "charge", "between", "her", "him", "us", "you", "same",
];

/// Words of a date or a time.
#[rustfmt::skip]
pub const DATE_WORDS: &[&str] = &[
    "monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday", "mon", "tue",
    "tues", "wed", "thu", "thurs", "fri", "sat", "sun", "january", "february", "march", "april",
    "may", "june", "july", "august", "september", "october", "november", "december", "jan", "feb",
    "mar", "apr", "jun", "jul", "aug", "sep", "sept", "oct", "nov", "dec", "today", "tomorrow",
    "tonight", "yesterday", "noon", "midnight", "weekend", "am", "pm", "a.m.", "p.m.", "o'clock",
    "christmas", "easter", "thanksgiving", "asap", "now",
];

/// Phrases of a relative date.
#[rustfmt::skip]
pub const DATE_PHRASES: &[&str] = &[
    "next week", "next month", "next year", "this week", "this month", "this afternoon",
    "this evening", "this morning", "this weekend", "end of the day", "end of day",
    "end of the week", "end of the month", "in an hour", "in a week", "in a month", "right now",
    "the day after", "every day", "every morning", "every week", "daily", "weekly", "monthly",
    "every evening", "each morning", "each day",
];

/// Comparatives and nouns that say what "better" means.
#[rustfmt::skip]
pub const CRITERIA: &[&str] = &[
    "for", "in terms of", "when it comes to", "regarding", "based on", "faster", "cheaper",
    "easier", "safer", "healthier", "quicker", "lighter", "stronger", "smaller", "bigger",
    "larger", "longer", "shorter", "simpler", "harder", "more", "less", "fewer", "performance",
    "price", "speed", "cost", "battery", "quality", "reliability", "durability", "security",
    "privacy", "readability", "efficiency", "efficient", "beginners", "beginner", "taste",
    "nutrition", "calories", "comfort", "mileage", "value", "budget", "salary", "career", "deal",
    "learning", "memory", "scalability", "maintenance", "environment", "climate", "warmer",
    "colder", "quieter", "louder", "lower", "higher", "best at", "better at", "suited", "ideal",
    "recommended", "which has", "which uses", "which costs", "which runs", "because", "to learn",
    "to use", "to buy", "under", "around", "within", "if i", "if my", "priority", "main concern",
    "care about", "important to me", "mostly", "mainly", "need it for", "use it for",
];

/// Kinds of product whose "best" depends on what the buyer needs.
#[rustfmt::skip]
pub const PRODUCT_NOUNS: &[&str] = &[
    "laptop", "laptops", "phone", "phones", "smartphone", "car", "cars", "tv", "camera",
    "headphones", "earbuds", "bike", "tablet", "monitor", "keyboard", "mouse", "printer", "router",
    "console", "watch", "smartwatch", "mattress", "vacuum", "blender", "programming language",
    "framework", "database", "editor", "ide", "browser", "os", "operating system", "distro",
    "cloud provider", "vpn", "bank", "credit card", "insurance", "diet", "workout", "stroller",
    "tent", "backpack", "shoes", "sneakers", "running shoes", "guitar", "piano", "gpu",
    "graphics card", "cpu", "processor", "ssd",
];

/// Things one picks by taste, use or budget: "recommend me a book" has as many right
/// answers as readers.
#[rustfmt::skip]
pub const TASTE_NOUNS: &[&str] = &[
    "book", "books", "novel", "novels", "movie", "movies", "film", "films", "show", "shows",
    "tv show", "series", "podcast", "podcasts", "album", "albums", "song", "songs", "music",
    "band", "bands", "video game", "video games", "board game", "board games", "game", "games",
    "hobby", "hobbies", "gift", "gifts", "present", "presents", "anime", "manga", "wine",
    "instrument", "sport", "pet", "dog breed", "breed", "perfume", "cologne", "plant", "plants",
    "houseplant", "houseplants", "colour", "color", "savings account", "account", "credit card",
    "audiobook", "audiobooks", "documentary", "documentaries", "playlist", "comic", "comics",
];

/// What a taste pick can be fitted to: a genre, a liking, a use, a budget, a recipient's
/// interests.
#[rustfmt::skip]
pub const PREFERENCES: &[&str] = &[
    "like", "likes", "liked", "love", "loves", "loved", "enjoy", "enjoys", "enjoyed", "fan of",
    "similar to", "in the style of", "genre", "is into", "am into", "really into", "who's into",
    "interested in", "obsessed with", "budget", "under", "less than", "max", "cheap",
    "affordable", "inexpensive", "expensive", "sci-fi", "science fiction", "fantasy", "mystery",
    "thriller", "romance", "horror", "comedy", "biography", "non-fiction", "nonfiction",
    "history", "classic", "funny", "outdoors", "outdoor", "indoor", "indoors", "relaxing",
    "creative", "active", "social", "gaming", "coding", "programming", "editing",
    "travel", "students", "student", "school", "college", "work", "kids", "toddler", "teen",
    "teenager", "beginner", "beginners", "about", "set in", "written by",
];

/// Cues of a comparison or a choice.
#[rustfmt::skip]
pub const COMPARE_CUES: &[&str] = &[
    "better", "best", "compare", "comparison", "versus", "vs", "vs.", "which one",
    "which should i", "should i choose", "should i pick", "should i buy", "should i use",
    "should i go with", "prefer", "preferable", "pros and cons", "superior", "worse",
    "difference between", "which is", "which would", "which do you", "choose between",
    "pick between", "decide between", "which one's", "torn between", "help me decide",
    "help me choose", "help me pick", "worth upgrading", "worth it", "upgrade", "which of these",
    "which of those", "which of the two", "which of the",
];

/// Deictic stand-ins for the items of a comparison.
#[rustfmt::skip]
pub const DEICTIC_ITEMS: &[&str] = &[
    "which one", "them", "these", "those", "the two", "both", "the options", "the two options",
    "either", "this or that", "the first or the second", "the first one", "the second one",
    "option a", "option b", "these two", "the choices", "the alternatives", "one or the other",
    "my options", "the new one", "the old one", "the new model", "the old model",
    "the new version", "the old version", "those frameworks", "the two apartments", "which one's",
    "the other one", "the better one", "the cheaper one", "which of the", "the other option",
];

/// Questions whose answer changes from hour to hour and place to place: the model
/// cannot know them, whatever the prompt adds.
#[rustfmt::skip]
pub const LIVE_CUES: &[&str] = &[
    "who's winning", "whos winning", "who is winning", "at the mart", "the wait in",
    "how long is the wait", "wait times", "waiting times", "prices this week",
    "weather", "forecast", "rain today", "raining", "snowing", "temperature outside",
    "temperature today", "temperature now", "open now", "open today", "open right now",
    "still open", "closing time", "next train", "next bus", "next flight", "next ferry",
    "next tram", "traffic", "stock price", "share price", "exchange rate", "score of the game",
    "the score", "who won the game", "who won last night", "news today", "latest news",
    "today's news", "what time is it", "current time", "time is it", "today's date",
    "what day is it", "what's the date", "what is the date", "gas prices", "petrol prices",
    "is it open", "are they open", "wait time", "air quality", "pollen", "sunset today",
    "sunrise today", "sunset time", "sunrise time", "uv index", "humidity", "delayed",
    "running late", "on time", "currently playing", "showtimes", "right now", "umbrella", "delays",
    "concerts", "events this", "rain", "snow", "sunny", "windy", "storm", "sunset", "sunrise",
    "playing at", "showing at", "playing tonight", "events are happening", "what's happening",
    "events happening", "any events", "what's on", "happening tonight", "happening this weekend",
    "open on", "opening hours", "open this", "open tomorrow", "the game last night",
    "last night's game", "the match last night", "last night's match", "win last night",
    "won last night", "lose last night", "lost last night", "petrol today", "gas today",
    "fuel today", "diesel today", "price of petrol", "price of gas", "price of fuel", "fuel prices",
    "sun set", "sun rise", "sun go down", "sun come up", "get dark", "gets dark", "local time",
    "events going on", "going on this weekend", "going on tonight", "going on today",
    "breaking news", "headlines", "bitcoin worth", "bitcoin price", "price of bitcoin",
    "btc price", "ethereum price", "price of ethereum", "stock market today", "market today",
    "trading at", "worth today", "price today", "anything on my calendar",
    "what's on my calendar", "what is on my calendar", "my calendar look",
    "bitcoin today", "bitcoin right now", "how much is bitcoin", "how much is btc",
    "how much is ethereum", "rate today", "rates today",
    "any news", "news about the", "latest on the", "any updates on the", "rates this week",
    "rates at this week", "rate this week", "prices this week", "it a good time to buy",
    "it a good time to sell", "it a good time to invest", "now a good time to buy",
    "now a good time to sell", "now a good time to invest", "it the right time to buy",
    "it the right time to sell", "now the right time to buy", "now the right time to sell",
    "it a bad time to buy", "it a bad time to sell", "running normally", "running as normal",
    "reigning", "current champion", "current world champion", "come out yet", "came out yet",
    "released yet", "been released yet", "available yet", "dropped yet",
    "trains running", "buses running", "trains are running", "buses are running",
];

/// What only the user's own accounts hold ("my Amazon order", "my checking account
/// balance"), after "my" and up to three words: no model can see them. A calendar is
/// not one: "put the dentist on my calendar" asks for a time, and only "what's on my
/// calendar" is live (`LIVE_CUES`).
#[rustfmt::skip]
pub const OWN_ACCOUNTS: &[&str] = &[
    "order", "package", "parcel", "delivery", "inbox", "balance", "emails",
];

/// Live questions that depend on a place.
#[rustfmt::skip]
pub const LOCAL_LIVE_CUES: &[&str] = &[
    "at the mart", "the wait in", "how long is the wait", "wait times", "waiting times",
    "weather", "forecast", "rain", "raining", "snowing", "temperature", "open", "closing", "train",
    "bus", "flight", "ferry", "tram", "traffic", "gas prices", "petrol prices", "air quality",
    "pollen", "sunset", "sunrise", "uv index", "humidity", "wait time", "showtimes", "playing",
    "umbrella", "delays", "concerts", "events", "what's on", "happening", "opening hours",
    "petrol", "gas", "fuel", "diesel", "trains", "buses", "flights", "ferries", "trams", "subway",
    "metro", "tube", "sun", "dark", "local time", "there", "going on", "wear", "jacket", "coat",
    "buy a house", "sell a house", "sell my house", "buy a home", "sell my home",
    "buy property", "buy an apartment", "buy a flat", "buy a condo",
];

/// Maths cues, and what each needs.
#[rustfmt::skip]
pub const MATH_CUES: &[&str] = &[
    "calculate", "compute", "how much", "how many", "how long", "how far", "how fast",
    "what is the area", "what's the area", "area of", "perimeter", "volume of", "circumference",
    "total", "average", "mean of", "sum of", "percent", "%", "tip", "interest", "split the bill",
    "split", "divide", "multiply", "convert", "per hour", "per month", "per year", "discount",
    "tax", "profit", "margin", "solve", "monthly payment", "mortgage", "loan", "bmi",
    "square root", "factorial",
];

/// Shapes and surfaces, with how many numbers a measure of each needs.
pub const SHAPE_NEEDS: &[(&str, usize)] = &[
    ("rectangle", 2),
    ("triangle", 2),
    ("parallelogram", 2),
    ("trapezoid", 3),
    ("box", 3),
    ("cuboid", 3),
    ("cylinder", 2),
    ("cone", 2),
    ("circle", 1),
    ("square", 1),
    ("cube", 1),
    ("sphere", 1),
    ("room", 2),
    ("garden", 2),
    ("wall", 2),
    ("walls", 2),
    ("floor", 2),
    ("yard", 2),
    ("pool", 3),
    ("tank", 3),
    ("hypotenuse", 2),
    ("average speed", 2),
    ("speed", 2),
    ("trip", 2),
    ("journey", 2),
];

/// A pace's span: "14 rows an hour", "3 pages per day".
#[rustfmt::skip]
pub const PER_SPAN: &[&str] = &[
    "an hour", "per hour", "a day", "per day", "a week", "per week", "a minute", "per minute",
    "an evening", "a night", "per night", "each day", "each week", "every day", "every week",
];

/// Shapes and surfaces whose area is a measure, not a district.
#[rustfmt::skip]
pub const SHAPES: &[&str] = &[
    "rectangle", "triangle", "parallelogram", "trapezoid", "circle", "square", "polygon",
    "hexagon", "room", "garden", "wall", "walls", "floor", "yard", "lawn", "plot", "field",
    "surface", "shape", "sector", "ellipse", "rhombus", "kite",
];

/// Materials bought by the area or volume they cover.
#[rustfmt::skip]
pub const MATERIALS: &[&str] = &[
    "paint", "tiles", "tile", "carpet", "wallpaper", "flooring", "turf", "mulch", "soil", "gravel",
    "concrete", "grass seed", "fabric", "laminate", "plaster", "grout", "sand",
];

/// Number words a maths question may use instead of digits.
#[rustfmt::skip]
pub const NUMBER_WORDS: &[&str] = &[
    "zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten",
    "eleven", "twelve", "thirteen", "fourteen", "fifteen", "sixteen", "seventeen", "eighteen",
    "nineteen", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety",
    "hundred", "thousand", "million", "billion", "half", "dozen", "quarter", "double", "triple",
    "twice", "pi",
];

/// Third-person pronouns that need someone to refer to.
#[rustfmt::skip]
pub const PERSON_PRONOUNS: &[&str] = &[
    "he", "she", "they", "him", "her", "them", "his", "hers", "their", "theirs", "he's", "she's",
    "they're", "he'd", "she'd", "they'd", "himself", "herself", "themselves",
];

/// The plural forms of `PERSON_PRONOUNS`: often people in general ("why do they put
/// fluoride in water?"), where "he" and "she" always stand for someone.
pub const THEY_FORMS: &[&str] = &[
    "they",
    "them",
    "their",
    "theirs",
    "they're",
    "they'd",
    "themselves",
];

/// Pronouns that need a thing to refer to (only in short questions: "is it safe to
/// swim?" uses "it" for nothing in particular).
#[rustfmt::skip]
pub const THING_PRONOUNS: &[&str] = &["it", "that", "this", "those", "these", "it's", "that's"];

/// Function words, question words and general verbs: a short question made only of
/// these and a pronoun says nothing about what the pronoun is.
#[rustfmt::skip]
pub const NO_CONTENT: &[&str] = &[
    "a", "an", "the", "is", "are", "was", "were", "be", "been", "being", "do", "does", "did",
    "done", "doing", "have", "has", "had", "can", "could", "will", "would", "should", "shall",
    "may", "might", "must", "what", "what's", "whats", "why", "how", "when", "where", "who",
    "who's", "whom", "whose", "which", "it", "that", "this", "these", "those", "it's", "that's",
    "he", "she", "they", "him", "her", "them", "his", "their", "hers", "i", "you", "me", "my",
    "your", "we", "us", "our", "to", "of", "in", "on", "at", "for", "with", "about", "from", "by",
    "up", "out", "so", "not", "no", "yes", "true", "false", "right", "wrong", "correct", "real",
    "really", "actually", "mean", "means", "meant", "say", "says", "said", "tell", "told",
    "happen", "happened", "happens", "work", "works", "worked", "start", "started", "end", "ended",
    "begin", "began", "come", "came", "go", "went", "gone", "make", "made", "built", "build",
    "cost", "costs", "get", "got", "take", "took", "give", "gave", "think", "know", "known",
    "like", "want", "wanted", "need", "needed", "use", "used", "still", "again", "then", "there",
    "here", "now", "ever", "anymore", "good", "bad", "okay", "ok", "fine", "important", "possible",
    "legal", "safe", "worth", "much", "many", "long", "old", "big", "new", "tall", "heavy", "far",
    "wide", "deep", "high", "expensive", "cheap", "please", "explain", "why's", "hows", "how's",
    "did", "didn't", "doesn't", "don't", "isn't", "wasn't", "aren't", "weren't", "can't", "won't",
    "just", "also", "even", "else", "all", "any", "some", "more", "most", "very", "thing",
    "things", "one", "ones", "name", "called", "win", "won", "lose", "lost", "leave", "left",
    "die", "died", "live", "lived", "born", "decide", "decided", "cancel", "canceled", "cancelled",
    "stop", "stopped", "agree", "agreed", "react", "reacted", "respond", "responded", "answer",
    "answered", "find", "found", "release", "released", "open", "opened", "close", "closed",
    "happening", "true?", "mean?", "supposed", "going", "gonna", "refer", "refers", "referring",
    "part", "point", "feel", "felt", "look", "looks", "sound", "sounds", "seem", "seems", "write",
    "wrote", "written", "play", "played", "sing", "sang", "sung", "invent", "invented", "discover",
    "discovered", "quit", "resign", "resigned", "retire", "retired", "marry", "married",
    "filmed", "shot", "recorded", "directed", "published", "painted",
];

/// Verbs whose object is a thing the user has in hand: "send it", "water it", "take it
/// with food". "It" after one of them stands for that thing, never for nothing in
/// particular as in "is it safe" or "make it work".
#[rustfmt::skip]
pub const OBJECT_VERBS: &[&str] = &[
    "take", "taking", "send", "water", "feed", "sell", "return", "wash", "cook", "freeze", "reheat",
    "microwave", "bake", "boil", "fry", "grill", "thaw", "defrost", "refrigerate", "install",
    "uninstall", "charge", "plug", "unplug", "repot", "prune", "trim", "mail", "post", "ship",
    "submit", "sign", "store", "paint", "replace", "repair", "clean", "dry", "iron", "renew",
    "recycle", "wear", "drink", "eat", "swallow", "chew", "crush", "print", "upload", "email",
    "forward", "deliver", "pack", "update", "upgrade", "restart", "reboot", "reset", "delete",
    "throw", "toss", "donate", "hang", "mount", "run", "spray", "mow", "plant", "bathe", "walk",
    "sand", "seal", "stain", "polish", "cancel", "refund", "pay", "park", "drive", "tow",
    "soak", "peel", "rinse", "marinate", "season", "steam", "roast", "harvest", "fertilize",
];

/// Words that can come before such an "it" and still give it nothing to stand for:
/// who said so, when, how often, whether. A noun of any other kind may be the thing.
#[rustfmt::skip]
pub const NO_ANTECEDENT: &[&str] = &[
    "or", "and", "if", "whether", "but", "i'm", "im", "we're", "i'll", "we'll", "i've", "we've",
    "let", "try", "trying", "planning", "plan", "today", "tomorrow", "tonight", "yet", "soon",
    "early", "late", "later", "every", "each", "day", "daily", "week", "often", "before",
    "after", "first", "better", "best", "way", "time", "alright", "asked", "wants", "needs",
    "should've", "shouldn't", "wouldn't", "couldn't", "hey", "hi", "hello", "um", "quick",
    "question", "wondering", "wonder", "sure", "idea", "tips",
];

/// Animals a "he" or a "she" can be.
#[rustfmt::skip]
pub const PET_NOUNS: &[&str] = &[
    "dog", "dogs", "puppy", "cat", "cats", "kitten", "horse", "pony", "bird", "parrot", "budgie",
    "hamster", "rabbit", "bunny", "guinea pig", "tortoise", "turtle", "goldfish", "pet", "pup",
    "lab", "labrador", "retriever", "terrier", "spaniel", "beagle", "poodle", "collie",
];

/// People a pronoun can stand for, when the message names one.
#[rustfmt::skip]
pub const PERSON_NOUNS: &[&str] = &[
    "friend", "friends", "brother", "sister", "mom", "mum", "dad", "mother", "father", "son",
    "daughter", "wife", "husband", "partner", "boyfriend", "girlfriend", "boss", "manager",
    "coworker", "colleague", "teacher", "professor", "student", "doctor", "nurse", "pharmacist",
    "dentist", "surgeon", "therapist", "president", "author",
    "writer", "singer", "actor", "actress", "player", "team", "king", "queen", "prime minister",
    "ceo", "founder", "neighbor", "neighbour", "grandfather", "grandmother", "grandma", "grandpa",
    "uncle", "aunt", "cousin", "kid", "kids", "child", "children", "baby", "people", "person",
    "man", "woman", "guy", "girl", "boy", "customer", "client", "landlord", "roommate",
    "brother-in-law", "sister-in-law", "mother-in-law", "father-in-law", "son-in-law",
    "daughter-in-law", "in-laws", "nephew", "niece", "fiance", "fiancé", "fiancée", "stepdad",
    "stepmom", "stepmum", "buddy", "mate", "bestie", "godson", "goddaughter", "grandson",
    "granddaughter", "nan", "nana", "nanna", "gran", "granny", "grandad", "granddad", "grandmum",
    "grandmom", "abuela", "abuelo", "auntie", "aunty", "toddler", "teen", "teenager",
    "scientists", "researchers", "company", "government", "police",
];

/// Things a "that" can point at without naming ("that company", "this guy").
#[rustfmt::skip]
pub const REFERENT_NOUNS: &[&str] = &[
    "company", "guy", "person", "man", "woman", "movie", "film", "show", "series", "song", "band",
    "singer", "actor", "place", "restaurant", "game", "app", "product", "team", "player",
    "politician", "brand", "website", "channel", "author", "artist", "celebrity",
];

/// Words that leave a choice to the assistant ("in any language you like", "your
/// call", "a fictional spaceship"): any answer to that choice serves, so asking for
/// it would cost a turn. A "sample JSON" or "whatever fields the backend expects" is
/// not one of them: it must match something on the user's side.
#[rustfmt::skip]
pub const CHOICE_GRANTED: &[&str] = &[
    "any language", "any programming language", "whatever language", "some language",
    "a language of your choice", "language of your choice", "of your choice", "of your choosing",
    "your call", "your pick", "your choice", "up to you", "you decide", "you choose",
    "dealer's choice", "surprise me", "doesn't matter which", "does not matter which",
    "don't mind which", "any sentence", "any word", "any phrase", "any text you", "any format",
    "any fields", "any example", "fictional", "imaginary", "made-up", "you think sounds",
    "whichever you", "whatever you", "any you", "any sample", "an example of",
    "give me an example", "show me an example", "might look like", "could look like", "random",
    "at random", "think of a", "think of an",
];

/// A talk the user says "we" had: in a first message there was none, so what it
/// settled (a text, a format, which thing) is not here (`rules::referent`, the JSON
/// and text rules).
pub const WE_TALKED: &[&str] = &[
    "we talked about",
    "we discussed",
    "we spoke about",
    "we were talking about",
];
