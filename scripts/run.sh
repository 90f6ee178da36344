#!/usr/bin/env bash
# The README's run command: installs, builds, makes the embedded default model (the tiny
# random-weight Gemma 4, seed 1) once, and generates with it (`staticlm run`). Extra arguments
# replace the default prompt and settings.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
model=models/tiny
if [ ! -f "$model/model.safetensors" ]; then
  build/staticlm make-model --preset tiny --seed 1 --out "$model"
fi
if [ $# -eq 0 ]; then
  set -- -p "Write a poem about Machine Learning." --chat -n 32 --max-seq 256
fi
build/staticlm run -m "$model" "$@"
