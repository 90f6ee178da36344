#!/usr/bin/env python3
"""Writes tests/fixtures/text/chat_format_cases.json: Gemma 4 prompts rendered by Jinja2 from
the chat_template.jinja that `staticlm make-model` ships (src/model/chat_template.cc), with the
environment Hugging Face's apply_chat_template uses (trim_blocks, lstrip_blocks). The C++ chat
format must give the same bytes. Needs python3-jinja2. Run: python3 tools/chat_format_reference.py
"""
import json
import re
import sys
from pathlib import Path

import jinja2
from jinja2.sandbox import ImmutableSandboxedEnvironment

root = Path(__file__).resolve().parent.parent
source = (root / "src/model/chat_template.cc").read_text(encoding="utf-8")
template_text = re.search(r'R"JINJA\((.*?)\)JINJA"', source, re.S).group(1)
env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True)
template = env.from_string(template_text)


def text(t):
    return {"type": "text", "text": t}


cases = [
    ([{"role": "user", "content": "Write a poem about Machine Learning."}], {}),
    ([{"role": "system", "content": "You are a helpful assistant."},
      {"role": "user", "content": [{"type": "image"}, text("What is shown in this image?")]}], {}),
    ([{"role": "user", "content": "  padded \n"}], {}),
    ([{"role": "system", "content": " Be brief. "}, {"role": "user", "content": "Hi"}], {}),
    ([{"role": "developer", "content": [text(" Be brief. "), text("Be kind.")]}, {"role": "user", "content": "Hi"}], {}),
    ([{"role": "user", "content": "What is 2+2?"}, {"role": "assistant", "content": "4"},
      {"role": "user", "content": "And 3+3?"}], {}),
    ([{"role": "user", "content": "Hi"}, {"role": "assistant", "content": " Hello. "}], {"add_generation_prompt": False}),
    ([{"role": "user", "content": "Why?"}], {"enable_thinking": True}),
    ([{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Why?"}], {"enable_thinking": True}),
    ([{"role": "user", "content": [{"type": "image"}, {"type": "image"}, text(" Compare these. ")]}], {}),
    ([{"role": "user", "content": [text("Before"), {"type": "image"}, text("after"), {"type": "audio"}, {"type": "video"}]}], {}),
    ([{"role": "user", "content": "\u65e5\u672c\u8a9e\u3067\u7b54\u3048\u3066\u3002\u3000"}], {}),
    ([{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}, {"role": "user", "content": "c"},
      {"role": "assistant", "content": "d"}, {"role": "user", "content": "e"}], {"enable_thinking": True}),
]

out = []
for messages, kwargs in cases:
    options = {"add_generation_prompt": True, "enable_thinking": False, **kwargs}
    prompt = template.render(messages=messages, bos_token="<bos>", **options)
    out.append({"messages": messages, **options, "prompt": prompt})
path = Path(sys.argv[1]) if len(sys.argv) > 1 else root / "tests/fixtures/text/chat_format_cases.json"
path.write_text(json.dumps(out, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
print(f"wrote {len(out)} prompts to {path} (jinja2 {jinja2.__version__})", file=sys.stderr)
