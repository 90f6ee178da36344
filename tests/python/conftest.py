"""Shared fixtures: the staticlm binary, a tiny model made by it, and a safetensors reader (so the
tests compare against what the CLI writes, with NumPy alone)."""
import json
import os
import shlex
import subprocess

import numpy as np
import pytest

BIN = os.environ.get("STATICLM_BIN", "staticlm")
FIXTURES = os.environ.get("STATICLM_FIXTURES", os.path.join(os.path.dirname(__file__), "..", "fixtures"))


def run_cli(args):
    """Runs `staticlm ARGS`; returns the CompletedProcess (raises when it fails)."""
    r = subprocess.run([BIN] + shlex.split(args), capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    return r


_DTYPES = {"F32": np.float32, "I64": np.int64, "U8": np.uint8, "BOOL": np.bool_}


def read_safetensors(path):
    """{name: array} of a safetensors file."""
    with open(path, "rb") as f:
        raw = f.read()
    n = int.from_bytes(raw[:8], "little")
    header = json.loads(raw[8:8 + n])
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        begin, end = info["data_offsets"]
        out[name] = np.frombuffer(raw[8 + n + begin:8 + n + end], dtype=_DTYPES[info["dtype"]]).reshape(info["shape"])
    return out


@pytest.fixture(scope="session")
def model_dir(tmp_path_factory):
    d = tmp_path_factory.mktemp("tiny") / "m"
    run_cli(f"make-model --preset tiny --seed 1 --out {d}")
    return str(d)


@pytest.fixture(scope="session")
def image():
    return os.path.join(FIXTURES, "images", "gradient.png")


def cli_tokens(model_dir, args, tmp_path):
    """The greedy tokens `staticlm run` generates (from its logits dump)."""
    dump = tmp_path / "dump.safetensors"
    run_cli(f"run -m {model_dir} {args} --dump-logits {dump}")
    return read_safetensors(dump)["tokens"].tolist()
