#!/usr/bin/env python3
"""How often the argmax of N(0,1) logits over the Gemma vocabulary survives added noise.

A random-weight model's logits are close to Gaussian, so the gap between its two largest is a
small fraction of their spread; this gives the top-1 agreement to expect from a logits NMSE
alone (docs/quantization.md). Usage: /usr/bin/python3 tools/top1_noise_sim.py [NMSE...]
"""
import sys

import numpy as np

VOCAB = 262144
DRAWS = 400


def agreement(nmse, rng):
    same = 0
    for _ in range(DRAWS):
        logits = rng.standard_normal(VOCAB, dtype=np.float32)
        noisy = logits + rng.standard_normal(VOCAB, dtype=np.float32) * np.float32(np.sqrt(nmse))
        same += int(logits.argmax() == noisy.argmax())
    return same / DRAWS


def main():
    rng = np.random.default_rng(0)
    for nmse in [float(a) for a in sys.argv[1:]] or [1e-4, 2.5e-4, 5e-4, 1e-3, 3e-3]:
        print(f"NMSE {nmse:g}: top-1 agreement {100 * agreement(nmse, rng):.1f}% ({DRAWS} draws)")


if __name__ == "__main__":
    main()
