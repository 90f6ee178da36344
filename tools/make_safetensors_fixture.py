#!/usr/bin/env python3
"""Writes small safetensors files with nothing but the standard library (struct, json), as an
independent reference for staticlm's reader and writer.

Outputs (in tests/fixtures/safetensors/ unless a directory is given):
  reference.safetensors          canonical layout: data ordered by element width, then name, compact header with
                                 sorted keys, padded with spaces to a multiple of 8 bytes
  reference_shuffled.safetensors the same tensors with the data in reverse name order and an
                                 indented header in another key order (still valid)
  reference.json                 what the files hold: per tensor its dtype, shape, raw bytes (hex),
                                 decoded values, and for BF16/F16 the f32 values they came from

BF16 rounding is done here on the integer bits (round to nearest, ties to even); F16 uses
struct's 'e' format, which rounds the same way.
"""
import json
import math
import os
import struct
import sys


def f32(x):
    """x rounded to the nearest f32, as a Python float."""
    return struct.unpack("<f", struct.pack("<f", x))[0]


def f32_bits(x):
    return struct.unpack("<I", struct.pack("<f", x))[0]


def bits_f32(u):
    return struct.unpack("<f", struct.pack("<I", u))[0]


def bf16_bits(x):
    u = f32_bits(x)
    upper, lower = u >> 16, u & 0xFFFF
    if lower > 0x8000 or (lower == 0x8000 and upper & 1):
        upper += 1
    return upper


def encode(dtype, values):
    """Raw little-endian bytes and decoded values (what a reader must see) of a value list."""
    if dtype == "F32":
        return struct.pack("<%df" % len(values), *values), [f32(v) for v in values]
    if dtype == "BF16":
        bits = [bf16_bits(v) for v in values]
        return struct.pack("<%dH" % len(bits), *bits), [bits_f32(b << 16) for b in bits]
    if dtype == "F16":
        raw = struct.pack("<%de" % len(values), *values)
        return raw, list(struct.unpack("<%de" % len(values), raw))
    if dtype == "I4":  # two signed nibbles per byte, low nibble first
        nibbles = [v & 0xF for v in values] + [0] * (len(values) % 2)
        raw = bytes(nibbles[i] | (nibbles[i + 1] << 4) for i in range(0, len(nibbles), 2))
        return raw, list(values)
    fmt = {"I8": "b", "U8": "B", "I32": "i", "I64": "q", "BOOL": "?"}[dtype]
    raw = struct.pack("<%d%s" % (len(values), fmt), *values)
    return raw, [int(v) for v in values]


TENSORS = [  # name, dtype, shape, values (f32 inputs for the float types)
    ("a.f32", "F32", [2, 3], [0.0, -1.5, 3.25, 1e-3, -65504.0, 123456.789]),
    ("b.bf16", "BF16", [2, 4], [1.0, -2.5, math.sqrt(1536.0), 0.1, 3.0e38, -0.0,
                                bits_f32(0x3F808000), bits_f32(0x3F818000)]),  # two ties to even
    ("c.f16", "F16", [6], [1.0, 0.1, 65504.0, -(2.0 ** -14), 2.0 ** -24, 1.0 + 2.0 ** -11]),
    ("d.i8", "I8", [3], [-128, 0, 127]),
    ("e.u8", "U8", [2, 2], [0, 1, 200, 255]),
    ("f.i32", "I32", [3], [-2147483648, 7, 2147483647]),
    ("g.i64", "I64", [2], [-(2 ** 40) - 3, 2 ** 62 + 1]),
    ("h.bool", "BOOL", [3], [True, False, True]),
    ("i.scalar", "F32", [], [2.0]),
    ("j.empty", "F32", [0, 4], []),
    ("k.i4", "I4", [5], [-8, -1, 0, 7, 3]),
]
METADATA = {"format": "pt", "made_by": "tools/make_safetensors_fixture.py"}


def pack(header_text, blobs):
    header = header_text.encode("utf-8")
    header += b" " * (-len(header) % 8)
    return struct.pack("<Q", len(header)) + header + b"".join(blobs)


def layout(entries, order):
    """Header entries and data blobs with the data laid out in the given name order."""
    header, blobs, offset = {}, [], 0
    for name in order:
        dtype, shape, raw = entries[name]
        header[name] = {"dtype": dtype, "shape": shape, "data_offsets": [offset, offset + len(raw)]}
        blobs.append(raw)
        offset += len(raw)
    return header, blobs


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join(
        os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "safetensors")
    os.makedirs(out_dir, exist_ok=True)
    entries, expected = {}, {}
    for name, dtype, shape, values in TENSORS:
        raw, decoded = encode(dtype, values)
        entries[name] = (dtype, shape, raw)
        expected[name] = {"dtype": dtype, "shape": shape, "hex": raw.hex(), "values": decoded}
        if dtype in ("BF16", "F16"):
            expected[name]["source_f32"] = [f32(v) for v in values]
    names = sorted(entries)
    # Data order of the official writer: wider elements first, then by name (staticlm's writer
    # puts the tensors of whole cache lines first; none of these has a nonzero such size).
    bits = {"F64": 64, "I64": 64, "F32": 32, "I32": 32, "F16": 16, "BF16": 16, "I8": 8, "U8": 8, "BOOL": 8, "I4": 4}
    aligned = sorted(names, key=lambda n: (-bits[entries[n][0]], n))

    header, blobs = layout(entries, aligned)
    header["__metadata__"] = METADATA
    canonical = pack(json.dumps(header, sort_keys=True, separators=(",", ":")), blobs)

    header, blobs = layout(entries, list(reversed(names)))
    shuffled_header = {name: header[name] for name in names[::2] + names[1::2]}
    shuffled_header["__metadata__"] = METADATA
    shuffled = pack(json.dumps(shuffled_header, indent=1), blobs)

    for file_name, data in (("reference.safetensors", canonical), ("reference_shuffled.safetensors", shuffled)):
        with open(os.path.join(out_dir, file_name), "wb") as f:
            f.write(data)
    with open(os.path.join(out_dir, "reference.json"), "w") as f:
        json.dump({"metadata": METADATA, "tensors": expected}, f, indent=1, sort_keys=True)
        f.write("\n")


if __name__ == "__main__":
    main()
