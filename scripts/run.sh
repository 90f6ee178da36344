#!/usr/bin/env bash
# The README's run command: installs, builds, makes the embedded default model (the tiny
# random-weight Gemma 4, seed 1) once, and runs the main job on it. Extra arguments go to it.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
scripts/build.sh >/dev/null
model=models/tiny
if [ ! -f "$model/model.safetensors" ]; then
  build/staticlm make-model --preset tiny --seed 1 --out "$model"
fi
build/staticlm info -m "$model" "$@"
