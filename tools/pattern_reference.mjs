#!/usr/bin/env node
// ECMA-262 verdicts for JSON Schema patterns, from node's own RegExp with the u flag (code
// points; \p{...} Unicode properties from node's ICU tables): for each line {"pattern": P,
// "text": T} of FILE prints 1 when P is found in T (JSON Schema's "anywhere unless anchored"),
// else 0. tests/unit/text/json_pattern_test.cc holds src/text/json_pattern.h to it.
//
// Run: node tools/pattern_reference.mjs FILE
import fs from "node:fs";

const file = process.argv[2];
if (!file) {
  console.error("usage: node tools/pattern_reference.mjs FILE");
  process.exit(2);
}
const out = [];
for (const line of fs.readFileSync(file, "utf8").split("\n")) {
  if (line.trim() === "") continue;
  const c = JSON.parse(line);
  out.push(new RegExp(c.pattern, "u").test(c.text) ? "1" : "0");
}
process.stdout.write(out.join("\n") + "\n");
