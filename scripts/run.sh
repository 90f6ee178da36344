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
if [ $# -gt 0 ]; then
  exec build/staticlm run -m "$model" "$@"
fi
build/staticlm run -m "$model" -p "Write a poem about Machine Learning." --chat -n 32 --max-seq 256
# The model's weights are random, so its text is noise; what it shows is that the static
# pipeline computes what an independent execution computes: the inspector's eight steps, on an
# image prompt so that the vision steps run too.
echo
build/staticlm inspect -m "$model" -p "<|image|>Describe the image." --image tests/fixtures/static/photo_640x480.png \
  --set image_fit=fit --max-seq 300 --gen-steps 8
