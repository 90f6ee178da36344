#!/usr/bin/env python3
"""Writes tests/fixtures/text/corpus.jsonl: the tokenizer test corpus, one JSON string per line.

Deterministic (fixed seed, no network). The categories follow issue 3's list: prose, code,
whitespace runs, CRLF, emoji and ZWJ sequences, CJK, RTL scripts, combining marks, characters
that need byte fallback, special-token strings and near misses, the empty string, a 20 KB input,
plus random mixes. Run: python3 tools/make_text_corpus.py [OUT]
"""
import json
import random
import sys

rng = random.Random(20260403)
items = []


def add(*texts):
    items.extend(texts)


# Prose.
add("Hello world",
    "The quick brown fox jumps over the lazy dog.",
    "Write a poem about Machine Learning.",
    "What is shown in this image?",
    "You are a helpful assistant.",
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was the age of foolishness.",
    "Call me Ishmael. Some years ago - never mind how long precisely - having little or no money in my purse...",
    "Don't stop believin'! Hold on to that feelin'.",
    "She said, \"I'll be there at 5 o'clock,\" and left.",
    "Mr. and Mrs. Dursley, of number four, Privet Drive, were proud to say that they were perfectly normal.",
    "Über den Wolken muss die Freiheit wohl grenzenlos sein.",
    "Le cœur a ses raisons que la raison ne connaît point.",
    "¿Dónde está la biblioteca? ¡Aquí está!",
    "Ça va? Très bien, merci.",
    "Привет, как дела? Всё хорошо.",
    "Γειά σου Κόσμε! Η γλώσσα μου έδωσαν ελληνική.",
    "Tôi yêu tiếng Việt, một ngôn ngữ có nhiều dấu thanh.",
    "नमस्ते दुनिया, यह एक परीक्षण है।",
    "สวัสดีครับ ยินดีที่ได้รู้จัก",
    "გამარჯობა მსოფლიო",
    "Բարեւ աշխարհ",
    "Sawubona mhlaba. Jambo dunia. Habari yako?",
    "e.g. i.e. etc. vs. approx. 3.14159 ≈ π",
    "ALL CAPS SENTENCE WITH SHOUTING!!!",
    "mIxEd CaSe TeXt wItH oDd CaPiTaLiZaTiOn",
    "antidisestablishmentarianism pneumonoultramicroscopicsilicovolcanoconiosis",
    "a", "I", "x y z", "ab", ".", "?!", "...", "—", "–", "…")

for _ in range(12):
    words = ["the", "model", "token", "is", "a", "of", "and", "runtime", "fixed", "shape", "graph", "device",
             "cache", "attention", "layer", "prompt", "image", "We", "They", "quickly", "measure", "every", "step"]
    n = rng.randint(5, 40)
    sent = " ".join(rng.choice(words) for _ in range(n))
    add(sent[0].upper() + sent[1:] + rng.choice([".", "!", "?", ";", ""]))

# Code.
add("def f(x):\n    return x * 2\n",
    "for (int i = 0; i < n; ++i) {\n\tsum += a[i];\n}",
    "#include <stdio.h>\nint main(void) { printf(\"hi\\n\"); return 0; }\n",
    "const add = (a, b) => a + b; // arrow\nconsole.log(add(1, 2));",
    "{\"key\": [1, 2, 3], \"nested\": {\"a\": null, \"b\": true}}",
    "SELECT id, name FROM users WHERE age >= 21 ORDER BY name DESC;",
    "if [ -f \"$FILE\" ]; then\n  echo \"found\" | tee -a log.txt\nfi",
    "<html><body><div class=\"x\"><p>Hi</p></div></body></html>",
    "<table><tr><td>1</td><td>2</td></tr></table>",
    "fn main() -> Result<(), Box<dyn Error>> { Ok(()) }",
    "x = [i**2 for i in range(10) if i % 2 == 0]",
    "    indented with four spaces\n        and eight\n",
    "\t\ttabs\tand\ttabs\t\t\n",
    "a == b && c != d || !e",
    "std::vector<std::pair<int, std::string>> v{{1, \"a\"}};",
    "regex: ^\\s*(\\d+)\\.(\\d+)$ and path C:\\Users\\name\\file.txt",
    "https://example.com/path?query=1&other=two#frag",
    "user.name+tag@example.co.uk",
    "## Heading\n\n- item one\n- item two\n\n**bold** and _italic_ and `code`",
    "| a | b |\n|---|---|\n| 1 | 2 |",
    "0x1F 0b1010 1e-9 -42 +3.5 1,000,000 12:30:45 2026-04-03",
    "1234567890 3.141592653589793 2.718281828459045 6.022e23",
    "😀 = U+1F600; \\u00e9 = é; \\n is newline")

# Whitespace runs.
for n in (1, 2, 3, 4, 5, 8, 15, 16, 17, 30, 31, 32, 33, 40, 64):
    add(" " * n)
for n in (1, 2, 3, 5, 31, 32, 40):
    add("\n" * n)
for n in (1, 2, 3, 31, 32):
    add("\t" * n)
add("word" + " " * 7 + "word", "  leading", "trailing  ", "  both  ", " a b  c   d    e     f ",
    "\n\nparagraph\n\n\nanother\n", "mixed \t \n \r\n \u3000 \u00a0 space kinds",
    "line1\nline2\n\nline4\n\n\n\nline8", " \n \n ", "\r", "\r\r\r", "\v\f", "x\u2028y\u2029z")

# CRLF.
add("line one\r\nline two\r\n", "\r\n", "\r\n\r\n\r\n", "a\r\nb\rc\nd", "Windows\r\n\r\nstyle\r\n",
    "mixed\r\nendings\nhere\r\n", "  \r\n  indented\r\n", "\r\n\tcode();\r\n}")

# Emoji and ZWJ sequences.
add("😀", "👍🏽", "👨‍👩‍👧‍👦", "👩🏾‍💻", "🏳️‍🌈", "🇫🇷🇯🇵🇺🇸", "❤️", "1️⃣ 2️⃣ #️⃣",
    "🧑‍🤝‍🧑", "🤷‍♀️", "👁️‍🗨️", "🐕‍🦺", "Great job! 🎉🎉🎉", "emoji🙂inside🙃words",
    "😀😃😄😁😆😅🤣😂🙂🙃😉😊😇", "🏴󠁧󠁢󠁳󠁣󠁴󠁿", "☺︎ ☺️", "👨🏻‍🦰 👩🏿‍🦱", "🫠🫡🫢", "🧬🦠🧫")

# CJK.
add("日本語のテキストです。", "你好，世界！", "我爱自然语言处理。", "안녕하세요 세계", "東京都渋谷区",
    "中文、日本語、한국어 mixed with English.", "ｆｕｌｌｗｉｄｔｈ　ｔｅｘｔ　１２３", "半角ｶﾀｶﾅ",
    "繁體中文與簡體中文", "ひらがな カタカナ 漢字", "これはペンです。That is a pen.", "「引用」『二重』【括弧】",
    "𠀀𠀁𠀂 CJK extension B", "〇一二三四五六七八九十", "한글 자모: ㄱㄴㄷㄹ ㅏㅑㅓㅕ")

# RTL scripts.
add("مرحبا بالعالم", "שלום עולם", "سلام دنیا", "اللغة العربية جميلة", "עברית מימין לשמאל",
    "English then عربي then English", "\u200fRLM mark\u200e LRM mark", "\u202eRTL override\u202c",
    "١٢٣٤٥٦٧٨٩٠", "אבג 123 דהו", "کتاب‌ها (ZWNJ)", "ئۇيغۇرچە")

# Combining marks.
add("e\u0301", "cafe\u0301 vs café", "n\u0303", "a\u0308o\u0308u\u0308", "Z\u0351\u0352\u0353a\u0354\u0355l\u0356g\u0357o\u0358",
    "\u0301 leading combining", "o\u0302\u0323", "ḗ e\u0304\u0301", "क्षत्रिय", "ที่", "Å Å Å", "ﬁ ﬂ ﬃ",
    "x\u20d7 \u20dd", "ǅ ǆ Ǆ", "\u0338=", "g\u0308\u0301", "Ω Ω", "K K", "ⅷ Ⅻ", "①②③")

# Characters that need byte fallback (rare or unassigned in the vocabulary).
add("\x00", "\x01\x02\x03", "\x1b[31mred\x1b[0m", "\x7f", "\ufffd", "\ue000\ue001", "\U000f0000",
    "\U0010fffd", "\ufeffBOM", "\u200b zero width", "\U0001d400\U0001d401", "𐀀 Linear B",
    "\U0001f9ff\U0001fa70", "\u2603\u2604", "\U00013000 hieroglyph", "\u0f00\u0f01", "tags \U000e0041\U000e0042",
    "\ufff9\ufffa\ufffb", "\ufdd0", "\U0002a6d6 \U0002b734")

# Special-token strings and near misses (both vocabularies).
add("<bos>", "<eos>", "<pad>", "<unk>", "<mask>", "[multimodal]", "<bos><bos>", "text<eos>more",
    "<start_of_turn>user\nHello<end_of_turn>\n", "<start_of_image>", "<end_of_image>", "<image_soft_token>",
    "<|turn>user\nHi<turn|>\n<|turn>model\n", "<|image|>", "<|image>", "<image|>", "<|audio|>", "<|audio>",
    "<audio|>", "<|video|>", "<|think|>", "<|channel>thought\n<channel|>", "<|tool>", "<tool|>",
    "<|tool_call>call:f{}<tool_call|>", "<|tool_response>", "<tool_response|>", '<|"|>',
    "<unused0>", "<unused40>", "<unused6226>", "<unused6241>", "<unused99999>", "<unused>",
    "< bos>", "<bos", "bos>", "<BOS>", "<<bos>>", "<bos >", "<|turn >", "<| turn>", "<turn||>",
    "<|imag|>", "<|image||>", "<start_of_turn >", "<start_of_turnx>", "<end_of_turn", "[multimodal",
    "<table>", "</td>", "<tr >", "<h1>Title</h1>", "<0x41>", "<0xFF>", "<0x4>", "\u2581", "\u2581\u2581hi",
    "a\u2581b", "▁▁▁▁", "<bos> spaced <eos>", "x<mask>y", "<pad><unk><mask>")

# Empty and tiny.
add("", " ", "\n", "\t", "0", "00", "000", "\u00a0", "\u3000", "~")

# Random mixes from a pool of characters.
pool = list("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?'\"()[]{}<>/\\|-_=+*&^%$#@`~\n\t") + \
    list("éüñøßçàèìòùâêîôûëïÿœæ") + list("日本語中文한국어") + list("مرحباשלום") + \
    ["😀", "👍", "🏽", "\u200d", "\u0301", "\u0308", "\r\n", "\u2581", "<bos>", "<eos>", "<|turn>", "<turn|>",
     "<|image|>", "\x00", "\ue000", "𝐀", "  ", "\n\n"]
for _ in range(45):
    n = rng.randint(1, 120)
    add("".join(rng.choice(pool) for _ in range(n)))

# A 20 KB input: prose, code and other scripts interleaved.
parts = []
size = 0
while size < 20 * 1024:
    p = rng.choice(items[:200])
    parts.append(p)
    size += len(p.encode("utf-8")) + 1
add(" ".join(parts))
# And one long run without any space or newline.
add("".join(rng.choice("abcdefghij日本😀") for _ in range(3000)))

out = sys.argv[1] if len(sys.argv) > 1 else "tests/fixtures/text/corpus.jsonl"
with open(out, "w", encoding="utf-8") as f:
    for t in items:
        f.write(json.dumps(t, ensure_ascii=True) + "\n")
print(f"wrote {len(items)} inputs to {out}", file=sys.stderr)
