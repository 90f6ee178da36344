#!/usr/bin/env bash
# The README's three usage examples (examples/hello.{sh,c,py}): each must appear in README.md
# verbatim, and each run on a tiny model must print the same greedy text. The C one is built the
# way the README says, from an install (`cmake --install`) through pkg-config.
#   tests/readme_examples.sh SOURCE_DIR BUILD_DIR STATICLM_BIN PYTHON
set -euo pipefail
src=$1 build=$2 bin=$3 python=$4
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

for f in hello.sh hello.c hello.py; do
  "$python" - "$src/README.md" "$src/examples/$f" <<'PY'
import sys
readme, example = (open(p, encoding="utf-8").read() for p in sys.argv[1:])
if example not in readme:
    sys.exit(f"README.md does not show {sys.argv[2]} verbatim")
PY
done

"$bin" make-model --preset tiny --seed 1 --out "$work/m" >/dev/null 2>"$work/make-model.err" || { cat "$work/make-model.err"; exit 1; }
cmake --install "$build" --prefix "$work/prefix" >/dev/null
export PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig:$work/prefix/lib/x86_64-linux-gnu/pkgconfig"
libdir=$(pkg-config --variable=libdir staticlm)
# shellcheck disable=SC2046  # the flags are words
cc -std=c11 -Wall -Werror -o "$work/hello" "$src/examples/hello.c" $(pkg-config --cflags --libs staticlm) -Wl,-rpath,"$libdir"

PATH="$(dirname "$bin"):$PATH" sh "$src/examples/hello.sh" "$work/m" >"$work/cli.txt" 2>"$work/cli.err"
"$work/hello" "$work/m" >"$work/c.txt"
PYTHONPATH="$build/python" "$python" "$src/examples/hello.py" "$work/m" >"$work/py.txt"

test -s "$work/cli.txt" || { echo "the CLI example printed nothing"; exit 1; }
grep -q "generated 8 tokens" "$work/cli.err" || { echo "the CLI example did not generate 8 tokens:"; cat "$work/cli.err"; exit 1; }
cmp "$work/cli.txt" "$work/c.txt" || { echo "C example differs from the CLI:"; od -c "$work/c.txt" | head; od -c "$work/cli.txt" | head; exit 1; }
cmp "$work/cli.txt" "$work/py.txt" || { echo "Python example differs from the CLI:"; od -c "$work/py.txt" | head; exit 1; }
echo "the three README examples print the same $(wc -c <"$work/cli.txt")-byte text"
