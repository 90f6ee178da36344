"""Greedy text from a checkpoint directory with the Python module, token by token."""
import sys

import staticlm

model = staticlm.Model(sys.argv[1])
session = model.session(max_seq=256)
tokens = session.generate(prompt="Why is the sky blue?", max_new_tokens=8, temperature=0)
ids = [t for t in tokens]  # each id arrives as soon as it is chosen
print(tokens.result["text"])
