#!/usr/bin/env node
// Reference token ids for the C++ tokenizer tests, from independent implementations:
//   lenml:      @lenml/tokenizers (a JavaScript port of transformers.js' tokenizers), which
//               scripts/setup.sh installs under .deps/node;
//   tokenizers: the Hugging Face `tokenizers` library itself (Rust, through its npm binding
//               `tokenizers`), when it is installed (npm install --prefix DIR tokenizers@0.23.2).
// Both run on every input when both are present; any disagreement is printed. The output file
// holds one JSON array of ids per input line, from --engine (default: tokenizers if present).
//
// Usage:
//   node tools/tokenizer_reference.mjs --tokenizer FILE [--config FILE] [--gemma4]
//        --corpus IN.jsonl --out OUT.jsonl [--engine lenml|tokenizers] [--hf-dir DIR]
//        [--digest OUT.json] [--bos] [--decode-out OUT.json [--decode-cases N]]
// --gemma4 applies spec/gemma4.md §6.1 to a Gemma 3 tokenizer.json (19 renamed ids, <unusedN>
// renumbered, 262144 dropped) before encoding, and --digest writes a summary of that vocabulary
// (FNV-1a 64 of "id\ttoken\n" over all ids, the special ids, the renamed ids) for the C++ test
// of gemma4_tokenizer_json. --decode-out writes N (default 300) random id sequences (a third of
// the ids below 256 or from the top of the vocabulary, where byte tokens and special tokens sit)
// with the `tokenizers` library's decode of each, special tokens kept and skipped.
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
const root = path.resolve(here, "..");
const args = {};
for (let i = 2; i < process.argv.length; ++i) {
  const a = process.argv[i];
  if (!a.startsWith("--")) throw new Error(`unexpected argument ${a}`);
  const key = a.slice(2);
  if (["gemma4", "bos"].includes(key)) args[key] = true;
  else args[key] = process.argv[++i];
}
for (const k of ["tokenizer", "corpus", "out"]) if (!args[k]) throw new Error(`--${k} is required`);

const GEMMA4_RENAMES = {
  46: "<|tool>", 47: "<tool|>", 48: "<|tool_call>", 49: "<tool_call|>", 50: "<|tool_response>",
  51: "<tool_response|>", 52: '<|"|>', 98: "<|think|>", 100: "<|channel>", 101: "<channel|>",
  105: "<|turn>", 106: "<turn|>", 255999: "<|image>", 256000: "<|audio>", 258880: "<|image|>",
  258881: "<|audio|>", 258882: "<image|>", 258883: "<audio|>", 258884: "<|video|>",
};
// Control (special) tokens of Gemma 4 (spec §6.1); all other added tokens are not special.
const GEMMA4_SPECIAL = new Set([0, 1, 2, 3, 4, 46, 47, 98, 105, 106, 255999, 256000, 258880, 258881, 258882, 258883, 258884]);

function toGemma4(tj) {
  const byId = new Map();
  for (const [tok, id] of Object.entries(tj.model.vocab)) byId.set(id, tok);
  const newName = new Map();
  let unused = 0;
  const ids = [...byId.keys()].sort((a, b) => a - b);
  for (const id of ids) {
    if (GEMMA4_RENAMES[id] !== undefined) newName.set(id, GEMMA4_RENAMES[id]);
    else if (/^<unused\d+>$/.test(byId.get(id))) newName.set(id, `<unused${unused++}>`);
  }
  const vocab = {};
  for (const id of ids) vocab[newName.get(id) ?? byId.get(id)] = id;
  const added = tj.added_tokens
    .filter((t) => t.id < 262144)
    .map((t) => ({ ...t, content: newName.get(t.id) ?? t.content, special: GEMMA4_SPECIAL.has(t.id) }));
  return { ...tj, model: { ...tj.model, vocab }, added_tokens: added };
}

// FNV-1a 64 over "id\ttoken\n" for every id of the vocabulary (added tokens win).
function vocabDigest(tj) {
  const tokens = new Map();
  for (const [tok, id] of Object.entries(tj.model.vocab)) tokens.set(id, tok);
  for (const t of tj.added_tokens) tokens.set(t.id, t.content);
  let limit = 0;
  for (const id of tokens.keys()) limit = Math.max(limit, id + 1);
  let h = 0xcbf29ce484222325n;
  const prime = 0x100000001b3n, mask = (1n << 64n) - 1n;
  const enc = new TextEncoder();
  for (let id = 0; id < limit; ++id) {
    if (!tokens.has(id)) continue;
    for (const b of enc.encode(`${id}\t${tokens.get(id)}\n`)) h = ((h ^ BigInt(b)) * prime) & mask;
  }
  return { id_limit: limit, tokens_fnv1a64: h.toString(16).padStart(16, "0") };
}

let tokenizerJSON = JSON.parse(fs.readFileSync(args.tokenizer, "utf8"));
const configPath = args.config ?? path.join(path.dirname(args.tokenizer), "tokenizer_config.json");
const tokenizerConfig = fs.existsSync(configPath) ? JSON.parse(fs.readFileSync(configPath, "utf8")) : {};
if (args.gemma4) tokenizerJSON = toGemma4(tokenizerJSON);
if (args.digest) {
  const d = vocabDigest(tokenizerJSON);
  d.special_ids = tokenizerJSON.added_tokens.filter((t) => t.special).map((t) => t.id).sort((a, b) => a - b);
  d.renamed = GEMMA4_RENAMES;
  fs.writeFileSync(args.digest, JSON.stringify(d, null, 1) + "\n");
}

const engines = {};
let hfTokenizer = null;  // the tokenizers library's, for --decode-out
const requireFrom = (dir) => createRequire(path.join(dir, "noop.js"));
try {
  const { TokenizerLoader } = requireFrom(path.join(root, ".deps/node"))("@lenml/tokenizers");
  const tok = TokenizerLoader.fromPreTrained({ tokenizerJSON, tokenizerConfig: { tokenizer_class: "GemmaTokenizer", ...tokenizerConfig } });
  engines.lenml = async (text) => tok.encode(text, { add_special_tokens: !!args.bos });
} catch (e) {
  console.error(`lenml: not available (${e.message.split("\n")[0]})`);
}
try {
  const hfDir = args["hf-dir"] ?? path.join(root, ".deps/hf");
  const { Tokenizer } = requireFrom(hfDir)("tokenizers");
  const tok = Tokenizer.fromString(JSON.stringify(tokenizerJSON));
  engines.tokenizers = async (text) => (await tok.encode(text, null, { addSpecialTokens: !!args.bos })).getIds();
  hfTokenizer = tok;
} catch (e) {
  console.error(`tokenizers: not available (${e.message.split("\n")[0]})`);
}
const engine = args.engine ?? (engines.tokenizers ? "tokenizers" : "lenml");
if (!engines[engine]) throw new Error(`engine ${engine} is not available`);

const lines = fs.readFileSync(args.corpus, "utf8").split("\n").filter((l, i, all) => l.length > 0 || i < all.length - 1);
const out = [];
let disagreements = 0;
for (const [i, line] of lines.entries()) {
  const text = JSON.parse(line);
  const results = {};
  for (const [name, run] of Object.entries(engines)) results[name] = JSON.stringify(Array.from(await run(text)));
  const names = Object.keys(results);
  if (names.length > 1 && new Set(Object.values(results)).size > 1) {
    ++disagreements;
    console.error(`line ${i + 1} ${JSON.stringify(text).slice(0, 80)}: ${names.map((n) => `${n}=${results[n].slice(0, 120)}`).join(" ")}`);
  }
  out.push(results[engine]);
}
fs.writeFileSync(args.out, out.join("\n") + "\n");
console.error(`${lines.length} inputs, ids from ${engine}; engines: ${Object.keys(engines).join(", ")}; disagreements: ${disagreements}`);

if (args["decode-out"]) {
  if (!hfTokenizer) throw new Error("--decode-out needs the tokenizers library (--hf-dir)");
  const size = hfTokenizer.getVocabSize(true);
  let seed = 12345;  // a fixed LCG: the same cases every run
  const rnd = () => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed / 2147483648; };
  const cases = [];
  for (let i = 0; i < Number(args["decode-cases"] ?? 300); ++i) {
    const ids = [];
    for (let k = 1 + Math.floor(rnd() * 12); k > 0; --k) {
      const r = rnd();
      ids.push(r < 0.15 ? Math.floor(rnd() * 256) : r < 0.3 ? size - 1 - Math.floor(rnd() * 300) : Math.floor(rnd() * size));
    }
    cases.push({ ids, text: await hfTokenizer.decode(ids, false), text_skip: await hfTokenizer.decode(ids, true) });
  }
  fs.writeFileSync(args["decode-out"], JSON.stringify(cases) + "\n");
  console.error(`${cases.length} decode cases from tokenizers`);
}
