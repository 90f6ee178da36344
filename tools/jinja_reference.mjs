// Renders the Jinja reference corpus (tests/fixtures/jinja/, written by tools/jinja_reference.py
// from Python jinja2) with the npm package @huggingface/jinja, the engine transformers.js uses,
// and compares every result with jinja2's. Where the two engines disagree, the case must be
// listed (with the reason) in tests/fixtures/jinja/hf_jinja_differences.json; any other
// difference, or a listed case that no longer differs, fails.
//
// Run: node tools/jinja_reference.mjs            (prints the differences; exit 1 on unlisted ones)
//      node tools/jinja_reference.mjs --write    (rewrites hf_jinja_differences.json, keeping reasons)
// Needs .deps/hf-jinja (scripts/setup.sh installs @huggingface/jinja there).
import fs from "node:fs";
import path from "node:path";
import { createRequire } from "node:module";
import { fileURLToPath } from "node:url";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const fix = path.join(root, "tests/fixtures/jinja");
const require = createRequire(path.join(root, ".deps/hf-jinja/package.json"));
const { Template } = require("@huggingface/jinja");
const pkg = JSON.parse(fs.readFileSync(path.join(root, ".deps/hf-jinja/node_modules/@huggingface/jinja/package.json"), "utf8"));

// @huggingface/jinja has its own strftime_now (the real clock), so the templates that print
// the date differ from the fixed-time references; they are listed as known differences.
function render(source, vars) {
  try {
    const t = new Template(source);
    return { output: t.render(vars) };
  } catch (e) {
    return { error: String(e && e.message ? e.message : e) };
  }
}

function same(expected, got) {
  if ("output" in expected) return "output" in got && got.output === expected.output;
  return "error" in got;  // both refuse the template
}

const conversations = JSON.parse(fs.readFileSync(path.join(fix, "conversations.json"), "utf8"));
const cases = JSON.parse(fs.readFileSync(path.join(fix, "cases.json"), "utf8"));
const snippets = JSON.parse(fs.readFileSync(path.join(fix, "snippets.json"), "utf8"));
const sources = {};
const differing = {};
let total = 0;
for (const c of cases) {
  sources[c.template] ??= fs.readFileSync(path.join(fix, "templates", c.template), "utf8");
  const vars = { tools: null, ...conversations[c.conversation], bos_token: "<bos>", eos_token: "<eos>",
    add_generation_prompt: c.add_generation_prompt };
  const key = `${c.template} x ${c.conversation} agp=${c.add_generation_prompt}`;
  const got = render(sources[c.template], vars);
  total++;
  if (!same(c, got)) differing[key] = got;
}
snippets.forEach((s, i) => {
  const got = render(s.template, s.vars ?? {});
  total++;
  if (!same(s, got)) differing[`snippets[${i}]`] = got;
});

// Why a rendering differs, in one line: the package refuses the template, prints the real date,
// or prints a value another way (JS true/false, JSON-style lists and dicts, other number rules).
function reason(got) {
  if ("error" in got) return `@huggingface/jinja refuses it: ${got.error.slice(0, 160)}`;
  if (/Today Date: |\d{4}-\d{2}-\d{2}/.test(got.output)) return "@huggingface/jinja's strftime_now uses the real clock";
  return "@huggingface/jinja prints a value differently (JS-style true/false/lists/dicts, or another Python rule it lacks)";
}

const listPath = path.join(fix, "hf_jinja_differences.json");
const listed = fs.existsSync(listPath) ? JSON.parse(fs.readFileSync(listPath, "utf8")) : {};
if (process.argv.includes("--write")) {
  const out = {};
  for (const [k, got] of Object.entries(differing)) out[k] = listed[k] ?? reason(got);
  fs.writeFileSync(listPath, JSON.stringify(out, null, 1) + "\n");
  console.error(`wrote ${Object.keys(out).length} differences to ${listPath}`);
  process.exit(0);
}
const unlisted = Object.keys(differing).filter((k) => !(k in listed));
const stale = Object.keys(listed).filter((k) => !(k in differing));
for (const k of unlisted) console.error(`unlisted difference: ${k}: ${JSON.stringify(differing[k]).slice(0, 300)}`);
for (const k of stale) console.error(`listed but no longer different: ${k}`);
console.error(`@huggingface/jinja ${pkg.version}: ${total - Object.keys(differing).length}/${total} renderings equal jinja2's; ` +
  `${Object.keys(differing).length} known differences`);
process.exit(unlisted.length || stale.length ? 1 : 0);
