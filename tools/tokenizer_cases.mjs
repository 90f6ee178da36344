#!/usr/bin/env node
// Small tokenizer.json files that exercise every component the C++ tokenizer supports, and the
// ids and decoded text the Hugging Face `tokenizers` library (Rust, through its npm binding)
// gives for a list of inputs on each. Writes tests/fixtures/text/cases/NAME.json:
//   {"tokenizer": {...tokenizer.json...}, "cases": [{"text", "ids", "ids_bos", "decoded", "decoded_skip"}]}
// (decoded is null when no token is left to decode: upstream's Strip decoder panics then.)
// Needs the binding: npm install --prefix DIR tokenizers@0.23.2, then
//   node tools/tokenizer_cases.mjs --hf-dir DIR [--out tests/fixtures/text/cases]
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const args = {};
for (let i = 2; i < process.argv.length; i += 2) args[process.argv[i].slice(2)] = process.argv[i + 1];
const outDir = args.out ?? path.join(here, "..", "tests/fixtures/text/cases");
const { Tokenizer } = createRequire(path.join(args["hf-dir"] ?? "/nonexistent", "x.js"))("tokenizers");

// ---- A small BPE vocabulary: characters, merge chains for some words, byte tokens. ----
function makeModel({ bytes = false, unk = "<unk>", fuse = false, ignoreMerges = false, oldMerges = false, space = "\u2581" } = {}) {
  const vocab = {};
  const add = (t) => { if (!(t in vocab)) vocab[t] = Object.keys(vocab).length; };
  for (const t of ["<unk>", "<s>", "</s>", "<pad>"]) add(t);
  for (let c = 0x21; c < 0x7f; ++c) add(String.fromCharCode(c));
  for (const c of [" ", "\u2581", "\n", "\t", "é", "e\u0301", "ü", "日", "本", "語", "⁄", "ℌ", "ﬁ"]) add(c);
  if (bytes) for (let b = 0; b < 256; ++b) add(`<0x${b.toString(16).toUpperCase().padStart(2, "0")}>`);
  const merges = [];
  const merge = (a, b) => {
    if (!merges.some(([x, y]) => x === a && y === b)) merges.push([a, b]);
    add(a + b);
  };
  // Rank competition: "bc" before "ab", and "aa" (leftmost wins in "aaa").
  merge("b", "c"); merge("a", "b"); merge("a", "a"); merge("ab", "c"); merge("a", "bc");
  const words = ["the", "hello", "world", "is", "day", "ing", "token", "fi", "12", "日本"];
  for (const w of words) {
    for (const prefix of [space, ""]) {
      const chars = [...(prefix + w)];
      let cur = chars[0];
      for (let k = 1; k < chars.length; ++k) { merge(cur, chars[k]); cur += chars[k]; }
    }
  }
  merge(space, space); merge(space + space, space);
  merge("l", "l"); merge("e", "l");
  // A token that BPE cannot reach from its characters (only ignore_merges finds it whole).
  add("xyz");
  const model = {
    type: "BPE", dropout: null, unk_token: unk, continuing_subword_prefix: null, end_of_word_suffix: null,
    fuse_unk: fuse, byte_fallback: bytes, ignore_merges: ignoreMerges, vocab,
    merges: oldMerges ? merges.map(([a, b]) => `${a} ${b}`) : merges,
  };
  if (unk === null) delete model.unk_token;
  return model;
}

function added(vocab, list) {
  // [content, {special, lstrip, rstrip, normalized, single_word}]
  const out = [];
  for (const [content, flags] of list) {
    if (!(content in vocab)) vocab[content] = Object.keys(vocab).length;
    out.push({ id: vocab[content], content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false, ...flags });
  }
  return out;
}

const bosTemplate = (vocab) => ({
  type: "TemplateProcessing",
  single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }, { SpecialToken: { id: "</s>", type_id: 0 } }],
  pair: [{ Sequence: { id: "A", type_id: 0 } }, { Sequence: { id: "B", type_id: 1 } }],
  special_tokens: { "<s>": { id: "<s>", ids: [vocab["<s>"]], tokens: ["<s>"] }, "</s>": { id: "</s>", ids: [vocab["</s>"]], tokens: ["</s>"] } },
});

function tokenizerJson({ model, addedTokens = [], normalizer = null, pre = null, post = null, decoder = null }) {
  return { version: "1.0", truncation: null, padding: null, added_tokens: addedTokens, normalizer, pre_tokenizer: pre, post_processor: post, decoder, model };
}

const common = [
  "", " ", "the", " the", "the  the", "  hello world  ", "hello\nworld", "abc", "aaa", "aaaa", "abcabc",
  "ab c", "Hello World!", "day Day DAY", "fine ﬁne", "½ ⅓ ①", "café café", "über", "日本語", "日本",
  "😀 emoji", "Ω unknown", "tab\there", "12 ⁄ 34", "ℌello", "xyz", "xyzxyz", "\u2581the", "a\u2581b",
  "x\u0301", "<s>", "</s>", "<s>the</s>", "a <s> b", "  <mask>  end", "<mask>", "x<mask>y",
  "[SW]", "a [SW] b", "a[SW]b", "_[SW]_", "[SW][SW]", "é[SW]", "Day", "today is a good day",
  "mixed\u3000space\u00a0kinds", "end with space ", " start with space", "the\r\nthe",
];

const cases = {};
{
  const model = makeModel({ fuse: true });
  const at = added(model.vocab, [["<s>", { special: true }], ["</s>", { special: true }], ["<mask>", { lstrip: true, rstrip: true }],
    ["[SW]", { single_word: true }], ["day", { normalized: true }]]);
  cases.metaspace_always = tokenizerJson({ model, addedTokens: at,
    pre: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true },
    post: bosTemplate(model.vocab), decoder: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "always", split: true } });
}
{
  const model = makeModel({ bytes: true, fuse: true });
  const at = added(model.vocab, [["<s>", { special: true }], ["</s>", { special: true }], ["<mask>", { lstrip: true }], ["[SW]", { rstrip: true, single_word: true }]]);
  cases.metaspace_first_nosplit = tokenizerJson({ model, addedTokens: at,
    pre: { type: "Metaspace", replacement: "\u2581", prepend_scheme: "first", split: false },
    post: bosTemplate(model.vocab),
    decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "\u2581" }, content: " " }, { type: "ByteFallback" }, { type: "Fuse" }, { type: "Strip", content: " ", start: 1, stop: 0 }] } });
}
{
  const model = makeModel({ bytes: true, oldMerges: true, ignoreMerges: true });
  const at = added(model.vocab, [["<s>", { special: true }], ["</s>", { special: true, normalized: true }], ["\u2581hello", { normalized: true }], ["Day", { normalized: true, single_word: true }]]);
  cases.nfkc_prepend = tokenizerJson({ model, addedTokens: at,
    normalizer: { type: "Sequence", normalizers: [{ type: "NFKC" }, { type: "Replace", pattern: { String: " " }, content: "\u2581" }, { type: "Prepend", prepend: "\u2581" }] },
    decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "\u2581" }, content: " " }, { type: "ByteFallback" }, { type: "Fuse" }, { type: "Strip", content: "!", start: 0, stop: 2 }] } });
}
{
  const model = makeModel({ unk: "<unk>", fuse: false });
  cases.nfc_regex_replace = tokenizerJson({ model,
    normalizer: { type: "Sequence", normalizers: [{ type: "NFC" }, { type: "Replace", pattern: { Regex: "\\s+" }, content: " " }, { type: "Replace", pattern: { Regex: "q*" }, content: "-" }] },
    pre: { type: "Split", pattern: { Regex: "\\s" }, behavior: "MergedWithNext", invert: false } });
}
{
  const model = makeModel({ unk: null });
  cases.no_unk_no_decoder = tokenizerJson({ model, normalizer: { type: "NFD" },
    pre: { type: "Sequence", pretokenizers: [{ type: "Split", pattern: { String: " " }, behavior: "Removed", invert: false }, { type: "Split", pattern: { Regex: "\\d" }, behavior: "Isolated", invert: false }] } });
}
const behaviors = ["Removed", "Isolated", "MergedWithPrevious", "MergedWithNext", "Contiguous"];
for (const behavior of behaviors) {
  for (const invert of [false, true]) {
    const model = makeModel({ bytes: true });
    const pattern = invert ? { Regex: "\\w+|[^\\w\\s]+" } : { Regex: "\\s+|-" };
    cases[`split_${behavior.toLowerCase()}${invert ? "_invert" : ""}`] = tokenizerJson({ model,
      pre: { type: "Split", pattern, behavior, invert },
      decoder: { type: "Sequence", decoders: [{ type: "ByteFallback" }, { type: "Fuse" }] } });
  }
}
{
  const model = makeModel({ bytes: true });
  cases.split_string_empty_matches = tokenizerJson({ model,
    pre: { type: "Sequence", pretokenizers: [{ type: "Split", pattern: { String: "--" }, behavior: "MergedWithPrevious", invert: false }, { type: "Split", pattern: { Regex: "x*" }, behavior: "Isolated", invert: false }] },
    decoder: { type: "Fuse" } });
}
{
  // The Gemma shape (Replace " " -> "▁", Split " " merged with previous, byte fallback) on a small vocabulary.
  const model = makeModel({ bytes: true, fuse: true });
  const at = added(model.vocab, [["<s>", { special: true }], ["\n", {}], ["\n\n", {}], ["\u2581\u2581", {}], ["<b>", {}]]);
  cases.gemma_shape = tokenizerJson({ model, addedTokens: at,
    normalizer: { type: "Replace", pattern: { String: " " }, content: "\u2581" },
    pre: { type: "Split", pattern: { String: " " }, behavior: "MergedWithPrevious", invert: false },
    post: { type: "TemplateProcessing", single: [{ SpecialToken: { id: "<s>", type_id: 0 } }, { Sequence: { id: "A", type_id: 0 } }], pair: [], special_tokens: { "<s>": { id: "<s>", ids: [model.vocab["<s>"]], tokens: ["<s>"] } } },
    decoder: { type: "Sequence", decoders: [{ type: "Replace", pattern: { String: "\u2581" }, content: " " }, { type: "ByteFallback" }, { type: "Fuse" }] } });
}

// ---- Byte-level BPE (GPT-2 / Llama 3 / Qwen): the model sees every byte as one character. ----
function byteLevelChars() {
  const chars = [];
  let next = 0x100;
  for (let b = 0; b < 256; ++b) {
    const self = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    chars.push(String.fromCodePoint(self ? b : next++));
  }
  return chars;
}
function makeByteLevelModel({ ignoreMerges = false } = {}) {
  const chars = byteLevelChars();
  const spell = (text) => [...new TextEncoder().encode(text)].map((b) => chars[b]).join("");
  const vocab = {};
  const add = (t) => { if (!(t in vocab)) vocab[t] = Object.keys(vocab).length; };
  for (const c of chars) add(c);
  const merges = [];
  for (const w of [" the", "the", " hello", "hello", " world", " day", "ing", "12", " 日本", "é", "  ", "\n\n", " token"]) {
    const cs = [...spell(w)];
    let cur = cs[0];
    for (let k = 1; k < cs.length; ++k) {
      if (!merges.some(([x, y]) => x === cur && y === cs[k])) merges.push([cur, cs[k]]);
      cur += cs[k];
      add(cur);
    }
  }
  add(spell(" xyz"));  // reachable only whole (ignore_merges)
  return { type: "BPE", dropout: null, unk_token: null, continuing_subword_prefix: "", end_of_word_suffix: "",
    fuse_unk: false, byte_fallback: false, ignore_merges: ignoreMerges, vocab, merges };
}
{
  const model = makeByteLevelModel();
  const at = added(model.vocab, [["<s>", { special: true }], ["</s>", { special: true }], ["<mask>", { lstrip: true, rstrip: true }]]);
  cases.bytelevel_gpt2 = tokenizerJson({ model, addedTokens: at,
    pre: { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true },
    post: { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true } });
}
{
  const model = makeByteLevelModel({ ignoreMerges: true });
  const at = added(model.vocab, [["<s>", { special: true }], ["</s>", { special: true }], ["[SW]", { single_word: true }]]);
  cases.bytelevel_split_prefix = tokenizerJson({ model, addedTokens: at, normalizer: { type: "NFC" },
    pre: { type: "Sequence", pretokenizers: [
      { type: "Split", pattern: { Regex: "(?i:'s|'t|'re)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+" }, behavior: "Isolated", invert: false },
      { type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: false }] },
    post: { type: "Sequence", processors: [{ type: "ByteLevel", add_prefix_space: true, trim_offsets: false, use_regex: true }, bosTemplate(model.vocab)] },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true } });
}
for (const individual of [true, false]) {
  const model = makeByteLevelModel();
  cases[`bytelevel_digits_${individual ? "individual" : "runs"}`] = tokenizerJson({ model,
    pre: { type: "Sequence", pretokenizers: [{ type: "Digits", individual_digits: individual },
      { type: "ByteLevel", add_prefix_space: false, trim_offsets: true, use_regex: true }] },
    decoder: { type: "ByteLevel", add_prefix_space: true, trim_offsets: true, use_regex: true } });
}

const extra = ["the-final--countdown", "I'm here, it's 1234567 o'clock!", "don'T STOP", "x12y345 ٣٤ ½Ⅻ 12.5", "\u0000\u0001\u007f\u00ad ctrl", " xyz xyz", "tokens\n\n\nmore", "a - b -- c", "x-y", "-lead", "trail-", "--", "xx", "axxb", "q", "qq aq", "a\u00a0b", "3 4 5", "a1b22c333"];
fs.mkdirSync(outDir, { recursive: true });
for (const [name, tj] of Object.entries(cases)) {
  const tok = Tokenizer.fromString(JSON.stringify(tj));
  const rows = [];
  for (const text of [...common, ...extra]) {
    const ids = (await tok.encode(text, null, { addSpecialTokens: false })).getIds();
    const idsBos = (await tok.encode(text, null, { addSpecialTokens: true })).getIds();
    // tokenizers 0.23.2's Strip decoder panics on a token shorter than `stop`; skip empty decodes.
    const special = new Set(tj.added_tokens.filter((t) => t.special).map((t) => t.id));
    const decode = async (list, skip) =>
      list.filter((id) => !(skip && special.has(id))).length === 0 ? null : await tok.decode(list, skip);
    rows.push({ text, ids, ids_bos: idsBos, decoded: await decode(ids, false), decoded_skip: await decode(idsBos, true) });
  }
  fs.writeFileSync(path.join(outDir, `${name}.json`), JSON.stringify({ tokenizer: tj, cases: rows }) + "\n");
  console.error(`${name}: ${rows.length} inputs`);
}
