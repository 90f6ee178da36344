#!/usr/bin/env python3
"""Reference renderings for staticlm's Jinja engine (src/text/jinja/), from the real Python jinja2
set up the way transformers' apply_chat_template sets it up: ImmutableSandboxedEnvironment with
trim_blocks=True, lstrip_blocks=True, the loopcontrols extension, a {% generation %} block that
renders its body, tojson as json.dumps(ensure_ascii=False, indent, separators, sort_keys), and the
raise_exception and strftime_now globals (strftime_now formats a fixed time, 2026-04-02 13:05:09,
so the files do not change from day to day).

Writes, under tests/fixtures/jinja/:
  conversations.json   the conversations (template variables) every corpus template renders
  cases.json           template x conversation x add_generation_prompt -> output or error
  snippets.json        small templates (one construct each) -> output or error

Run:      python3 tools/jinja_reference.py            (rewrites the files)
Check:    python3 tools/jinja_reference.py --check    (renders again; exit 1 on any difference)
Published templates (fetched by scripts/setup.sh, never committed):
          python3 tools/jinja_reference.py --published DIR --out FILE
          (every DIR/*.jinja x conversation x add_generation_prompt, in cases.json's shape)
Needs python3-jinja2 (Debian).
"""
import datetime
import json
import sys
from pathlib import Path

import jinja2
from jinja2 import nodes
from jinja2.ext import Extension, loopcontrols
from jinja2.sandbox import ImmutableSandboxedEnvironment

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests/fixtures/jinja"
NOW = datetime.datetime(2026, 4, 2, 13, 5, 9)


class Generation(Extension):
    """{% generation %}...{% endgeneration %}: renders the body (transformers tracks it)."""
    tags = {"generation"}

    def parse(self, parser):
        lineno = next(parser.stream).lineno
        body = parser.parse_statements(("name:endgeneration",), drop_needle=True)
        return nodes.CallBlock(self.call_method("_render", []), [], [], body).set_lineno(lineno)

    def _render(self, caller):
        return caller()


def make_env():
    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    def strftime_now(fmt):
        return NOW.strftime(fmt)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[Generation, loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception
    env.globals["strftime_now"] = strftime_now
    return env


def text(t):
    return {"type": "text", "text": t}


WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Get the current weather in a city.",
    "parameters": {"type": "object", "properties": {
        "city": {"type": "string", "description": "City name, e.g. Paris"},
        "unit": {"type": "string", "enum": ["celsius", "fahrenheit"]}},
        "required": ["city"]}}}
BOOK = {"type": "function", "function": {
    "name": "book", "description": "Book a table; returns {\"ok\", \"table\"}.",
    "parameters": {"type": "object", "properties": {
        "party": {"type": "integer", "minimum": 1},
        "time": {"type": "string", "pattern": "^[0-2][0-9]:[0-5][0-9]$"},
        "tags": {"type": "array", "items": {"type": "string", "enum": ["window", "quiet"]}},
        "contact": {"type": "object", "properties": {"name": {"type": "string"}, "phone": {"type": ["string", "null"]}}}},
        "required": ["party", "time"], "additionalProperties": False}}}
SEARCH = {"type": "function", "function": {
    "name": "search", "description": "Search the web.",
    "parameters": {"type": "object", "properties": {
        "query": {"type": "string"}, "max_results": {"type": "integer", "default": 5}},
        "required": ["query"]}}}

CONVERSATIONS = {
    "user_only": {"messages": [{"role": "user", "content": "Write a poem about Machine Learning."}]},
    "system_user": {"messages": [{"role": "system", "content": "You are a helpful assistant."},
                                 {"role": "user", "content": "  Hello there!  \n"}]},
    "multi_turn": {"messages": [{"role": "user", "content": "What is 2+2?"},
                                {"role": "assistant", "content": "4"},
                                {"role": "user", "content": "And 3+3?"},
                                {"role": "assistant", "content": "6"},
                                {"role": "user", "content": "Thanks."}]},
    "ends_with_assistant": {"messages": [{"role": "system", "content": "Be brief."},
                                         {"role": "user", "content": "Hi"},
                                         {"role": "assistant", "content": " Hello. "}]},
    "images": {"messages": [{"role": "system", "content": [text("Describe images. ")]},
                            {"role": "user", "content": [{"type": "image", "image": "cow.png"},
                                                         text("What is shown in this image?")]},
                            {"role": "assistant", "content": [text("A cow on a beach.")]},
                            {"role": "user", "content": [{"type": "image"}, {"type": "image"}, text(" Compare these. ")]}]},
    "tools": {"messages": [{"role": "system", "content": "You can call tools."},
                           {"role": "user", "content": "What's the weather in Paris?"},
                           {"role": "assistant", "content": None, "tool_calls": [
                               {"id": "call12345", "type": "function",
                                "function": {"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}}]},
                           {"role": "tool", "tool_call_id": "call12345", "name": "get_weather",
                            "content": "{\"temperature\": 21, \"sky\": \"clear\"}"},
                           {"role": "assistant", "content": "It is 21 °C and clear in Paris."},
                           {"role": "user", "content": "And search for news."}],
              "tools": [WEATHER, SEARCH]},
    "tools_pending": {"messages": [{"role": "user", "content": "Search for cats and the weather in Oslo."},
                                   {"role": "assistant", "content": "", "tool_calls": [
                                       {"id": "abcdefghi", "type": "function",
                                        "function": {"name": "search", "arguments": {"query": "cats", "max_results": 3}}},
                                       {"id": "jklmnopqr", "type": "function",
                                        "function": {"name": "get_weather", "arguments": "{\"city\": \"Oslo\"}"}}]},
                                   {"role": "tool", "tool_call_id": "abcdefghi", "name": "search", "content": "Cats are great."},
                                   {"role": "tool", "tool_call_id": "jklmnopqr", "name": "get_weather", "content": "-3 C"}],
                      "tools": [SEARCH, WEATHER]},
    "thinking_on": {"messages": [{"role": "user", "content": "Why is the sky blue?"},
                                 {"role": "assistant", "content": "<think>\nRayleigh scattering.\n</think>\n\nBecause of scattering.",
                                  "reasoning_content": "Rayleigh scattering."},
                                 {"role": "user", "content": "Explain more."}],
                    "enable_thinking": True},
    "thinking_off": {"messages": [{"role": "system", "content": "Answer directly. /no_think"},
                                  {"role": "user", "content": "Name a prime."},
                                  {"role": "assistant", "content": "<|channel>thought\nsmall<channel|>7"},
                                  {"role": "user", "content": "Another?"}],
                     "enable_thinking": False},
    "documents": {"messages": [{"role": "user", "content": "Where do cats sleep?"}],
                  "documents": [{"title": "Cats", "text": "Cats sleep 12 to 16 hours a day."},
                                {"title": "Beds", "text": "A warm box is a cat's favourite bed."}],
                  "citation_mode": "fast"},
    "tool_strings": {"messages": [{"role": "system", "content": "Use the tools.\nBe exact."},
                                  {"role": "user", "name": "ana", "content": "Book a table for 2 at 19:30."},
                                  {"role": "assistant", "content": "",
                                   "reasoning_content": "Need the booking tool.",
                                   "tool_calls": [{"id": "c1", "type": "function", "function": {
                                       "name": "book", "arguments": "{\"party\": 2, \"time\": \"19:30\", \"tags\": [\"window\"]}"}}]},
                                  {"role": "tool", "tool_call_id": "c1", "content": "{\"ok\": true, \"table\": 7}"},
                                  {"role": "assistant", "content": "Booked: table 7."},
                                  {"role": "user", "content": "Thanks!\n\nBye."}],
                     "tools": [BOOK], "tool_choice": "auto"},
    "llama_builtin": {"messages": [{"role": "user", "content": "What is 2**10? Use the interpreter."},
                                   {"role": "assistant", "content": "", "tool_calls": [{"type": "function", "function": {
                                       "name": "code_interpreter", "arguments": {"code": "print(2**10)"}}}]},
                                   {"role": "ipython", "content": "1024"},
                                   {"role": "user", "content": "And the weather?"}],
                      "tools": [WEATHER], "builtin_tools": ["code_interpreter", "brave_search"],
                      "date_string": "02 Apr 2026", "tools_in_user_message": False},
    "unicode": {"messages": [{"role": "user", "content": "日本語で答えて。\u3000"},
                             {"role": "assistant", "content": "はい、わかりました — «ok» ✓"},
                             {"role": "user", "content": "Tabs\tand \"quotes\" and 'apostrophes' \\ backslash"}]},
}

SPECIAL = {"bos_token": "<bos>", "eos_token": "<eos>"}


def render(env, source, variables):
    try:
        return {"output": env.from_string(source).render(**variables)}
    except jinja2.exceptions.TemplateSyntaxError as e:
        return {"error": "syntax", "message": e.message, "line": e.lineno}
    except jinja2.exceptions.UndefinedError as e:
        return {"error": "undefined", "message": str(e)}
    except jinja2.exceptions.TemplateError as e:
        return {"error": "raised", "message": str(e)}
    except Exception as e:  # noqa: BLE001 - any run-time error is a reference result too
        return {"error": type(e).__name__, "message": str(e)}


def corpus_cases(env, directory=FIX / "templates"):
    cases = []
    for path in sorted(Path(directory).glob("*.jinja")):
        source = path.read_text(encoding="utf-8")
        for name, conv in CONVERSATIONS.items():
            for agp in (True, False):
                variables = {"tools": None, **conv, **SPECIAL, "add_generation_prompt": agp}
                cases.append({"template": path.name, "conversation": name, "add_generation_prompt": agp,
                              **render(env, source, variables)})
    return cases


def snippet_cases(env):
    snippets = json.loads((FIX / "snippets_input.json").read_text(encoding="utf-8"))
    return [{**s, **render(env, s["template"], s.get("vars", {}))} for s in snippets]


def dump(obj):
    return json.dumps(obj, ensure_ascii=False, indent=1) + "\n"


def main():
    env = make_env()
    if "--published" in sys.argv:
        directory = sys.argv[sys.argv.index("--published") + 1]
        out = sys.argv[sys.argv.index("--out") + 1]
        cases = corpus_cases(env, directory)
        if not cases:
            print(f"no *.jinja templates in {directory} (scripts/setup.sh fetches them)", file=sys.stderr)
            sys.exit(1)
        Path(out).write_text(dump({"conversations": CONVERSATIONS, "cases": cases}), encoding="utf-8")
        print(f"rendered {len(cases)} cases of the templates in {directory} (jinja2 {jinja2.__version__})", file=sys.stderr)
        return
    files = {
        "conversations.json": dump(CONVERSATIONS),
        "cases.json": dump(corpus_cases(env)),
        "snippets.json": dump(snippet_cases(env)),
    }
    if "--check" in sys.argv:
        bad = [n for n, text_ in files.items() if (FIX / n).read_text(encoding="utf-8") != text_]
        if bad:
            print(f"jinja2 {jinja2.__version__} renders differently from the committed {', '.join(bad)}", file=sys.stderr)
            sys.exit(1)
        print(f"jinja2 {jinja2.__version__}: all reference files match", file=sys.stderr)
        return
    for n, text_ in files.items():
        (FIX / n).write_text(text_, encoding="utf-8")
    print(f"wrote {', '.join(files)} to {FIX} (jinja2 {jinja2.__version__})", file=sys.stderr)


if __name__ == "__main__":
    main()
