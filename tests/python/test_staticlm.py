"""The Python module against the CLI on the tiny model: the same greedy tokens as `staticlm run`
(text and image), the same arrays as `staticlm inputs`, tokens streamed as they are produced,
and errors that name the bad value."""
import json
import os
import re
import select
import shlex
import signal
import subprocess
import threading
import time

import numpy as np
import pytest

import staticlm
from conftest import BIN, FIXTURES, cli_tokens, read_safetensors, run_cli


def test_generate_prompt_ids_matches_run(model_dir, tmp_path):
    ids = [2, 105, 2364, 107, 9259]
    expected = cli_tokens(model_dir, "--prompt-ids " + ",".join(map(str, ids)) + " -n 8 --temp 0 --max-seq 256", tmp_path)
    assert len(expected) == 8
    m = staticlm.Model(model_dir)
    s = m.session(max_seq=256)
    assert list(s.generate(prompt_ids=ids, max_new_tokens=8, temperature=0)) == expected


def test_penalties_and_logit_bias_match_run(model_dir, tmp_path):
    ids = [2, 105, 2364, 107, 9259]
    plain = cli_tokens(model_dir, "--prompt-ids " + ",".join(map(str, ids)) + " -n 8 --temp 0 --max-seq 256", tmp_path)
    flags = "--presence-penalty 0.5 --frequency-penalty 1.5 -l %d-100 -l 106+100 --ignore-eos" % plain[0]
    expected = cli_tokens(model_dir, "--prompt-ids " + ",".join(map(str, ids)) + " -n 8 --temp 0 --max-seq 256 " + flags,
                          tmp_path)
    assert len(expected) == 8 and expected[0] != plain[0] and 106 not in expected
    s = staticlm.Model(model_dir).session(max_seq=256)
    got = s.generate(prompt_ids=ids, max_new_tokens=8, temperature=0, presence_penalty=0.5, frequency_penalty=1.5,
                     logit_bias={plain[0]: -100, 106: 100}, ignore_eos=True)
    assert list(got) == expected
    with pytest.raises(ValueError, match="logit_bias: token 262144 is outside the vocabulary"):
        list(s.generate(prompt_ids=ids, max_new_tokens=1, logit_bias={262144: 1.0}))
    # repeat_last_n (run's --repeat-last-n): a penalty below 1 favours the tokens seen, so the window
    # changes the answer; 0 turns the penalty off.
    windowed = cli_tokens(model_dir, "--prompt-ids " + ",".join(map(str, ids)) +
                          " -n 8 --temp 0 --max-seq 256 --repetition-penalty 0.2 --repeat-last-n 2", tmp_path)
    assert windowed != plain
    assert list(s.generate(prompt_ids=ids, max_new_tokens=8, temperature=0, repetition_penalty=0.2, repeat_last_n=2)) == windowed
    assert list(s.generate(prompt_ids=ids, max_new_tokens=8, temperature=0, repetition_penalty=0.2, repeat_last_n=0)) == plain
    with pytest.raises(ValueError, match="repeat_last_n = -2"):
        list(s.generate(prompt_ids=ids, max_new_tokens=1, repeat_last_n=-2))


def test_llama_cpp_samplers_match_run(model_dir, tmp_path):
    ids = [2, 105, 2364, 107, 9259]
    base = "--prompt-ids " + ",".join(map(str, ids)) + " -n 8 --temp 3 -s 5 --max-seq 256"
    plain = cli_tokens(model_dir, base, tmp_path)
    s = staticlm.Model(model_dir).session(max_seq=256)
    for kwargs, flags in [({"top_n_sigma": 1}, "--top-n-sigma 1"), ({"typical_p": 0.2}, "--typical 0.2"),
                          ({"xtc_probability": 1, "xtc_threshold": 0.001}, "--xtc-probability 1 --xtc-threshold 0.001"),
                          ({"mirostat": 2, "mirostat_tau": 3}, "--mirostat 2 --mirostat-ent 3"),
                          ({"mirostat": 1, "mirostat_eta": 0.9}, "--mirostat 1 --mirostat-lr 0.9"),
                          ({"dynatemp_range": 2.5, "dynatemp_exponent": 0.5}, "--dynatemp-range 2.5 --dynatemp-exp 0.5"),
                          ({"top_p": 0.5, "samplers": ["top_p", "temperature"]}, "--top-p 0.5 --sampling-seq pt"),
                          # the older keywords, through the same table
                          ({"top_k": 3}, "--top-k 3"), ({"top_p": 0.2}, "--top-p 0.2"), ({"min_p": 0.9}, "--min-p 0.9"),
                          ({"repetition_penalty": 5, "repeat_last_n": 4}, "--repetition-penalty 5 --repeat-last-n 4"),
                          ({"presence_penalty": 2}, "--presence-penalty 2"),
                          ({"frequency_penalty": -2}, "--frequency-penalty -2"),
                          ({"stop": ["a"], "ignore_eos": True}, "--stop a --ignore-eos")]:
        expected = cli_tokens(model_dir, base + " " + flags, tmp_path)
        assert expected != plain, flags + " changed nothing, so the check is empty"
        assert list(s.generate(prompt_ids=ids, max_new_tokens=8, temperature=3, seed=5, **kwargs)) == expected, flags
    # DRY, greedy: a +50 bias repeats "hello" (23391); a penalty of 100 on continuing a repeat breaks
    # it, as run's flags do; "e" as a breaker ("hello" holds it) leaves the repeat alone.
    hellos = [23391] * 8
    assert list(s.generate(prompt_ids=ids, max_new_tokens=8, temperature=0, logit_bias={23391: 50})) == hellos
    dried = cli_tokens(model_dir, "--prompt-ids " + ",".join(map(str, ids)) +
                       " -n 8 --temp 0 --max-seq 256 -l 23391+50 --dry-multiplier 100 --dry-allowed-length 1", tmp_path)
    assert dried != hellos
    assert list(s.generate(prompt_ids=ids, max_new_tokens=8, temperature=0, logit_bias={23391: 50}, dry_multiplier=100,
                           dry_allowed_length=1)) == dried
    assert list(s.generate(prompt_ids=ids, max_new_tokens=8, temperature=0, logit_bias={23391: 50}, dry_multiplier=100,
                           dry_allowed_length=1, dry_sequence_breakers=["e"])) == hellos
    with pytest.raises(ValueError, match=re.escape("typical_p = 0: expected a number in (0, 1]")):
        list(s.generate(prompt_ids=ids, max_new_tokens=1, typical_p=0))
    with pytest.raises(ValueError, match=re.escape("samplers: unknown sampler 'bogus'")):
        list(s.generate(prompt_ids=ids, max_new_tokens=1, samplers=["top_k", "bogus"]))
    chat = staticlm.Model(model_dir).chat(max_seq=256)
    with pytest.raises(ValueError, match=re.escape("xtc_threshold = 2: expected a number in [0, 1]")):
        chat.say("hi", xtc_threshold=2)


def test_json_schema_matches_run(model_dir, tmp_path):
    schema = {"type": "object", "properties": {"n": {"type": "integer"}, "s": {"type": "string", "maxLength": 4}},
              "required": ["n", "s"], "additionalProperties": False}
    path = tmp_path / "schema.json"
    path.write_text(json.dumps(schema))
    expected = cli_tokens(model_dir, "--prompt-ids 2,105,2364 -n 60 --temp 0 --max-seq 256 --json-schema-file " + str(path),
                          tmp_path)
    s = staticlm.Model(model_dir).session(max_seq=256)
    g = s.generate(prompt_ids=[2, 105, 2364], max_new_tokens=60, temperature=0, json_schema=schema)
    assert list(g) == expected
    # thought_first (Gemma 4's thinking): the bias opens a thought (<|channel>, 100) and closes it
    # (<channel|>, 101) before the value; without it the value comes first.
    tok = staticlm.Model(model_dir).tokenizer
    bias = {100: 40, 101: 50}
    thought = list(s.generate(prompt_ids=[2, 105, 2364], max_new_tokens=20, temperature=0, json_schema={"type": "boolean"},
                              thought_first=True, logit_bias=bias))
    assert thought[:2] == [100, 101]
    assert thought[-1] in (1, 50, 106)  # an end token: nothing but one may follow the value
    assert isinstance(json.loads(tok.decode(thought[2:-1])), bool)
    plain = list(s.generate(prompt_ids=[2, 105, 2364], max_new_tokens=20, temperature=0, json_schema={"type": "boolean"},
                            logit_bias=bias))
    assert plain[0] != 100
    assert plain[-1] in (1, 50, 106)
    assert isinstance(json.loads(tok.decode(plain[:-1])), bool)
    assert g.result["stop_reason"] == "eos"
    value = json.loads(g.result["text"])
    assert sorted(value) == ["n", "s"] and isinstance(value["n"], int) and len(value["s"]) <= 4
    with pytest.raises(ValueError, match="json_schema at /not"):
        list(s.generate(prompt_ids=[2], max_new_tokens=1, json_schema='{"not": {"const": 1}}'))


def test_grammar_matches_run(model_dir, tmp_path):
    grammar = 'root ::= ("yes" | "no") " " [a-z]{2,5} "."\n'
    path = tmp_path / "reply.gbnf"
    path.write_text(grammar)
    expected = cli_tokens(model_dir, "--prompt-ids 2,105,2364 -n 30 --temp 0 --max-seq 256 --grammar-file " + str(path), tmp_path)
    s = staticlm.Model(model_dir).session(max_seq=256)
    g = s.generate(prompt_ids=[2, 105, 2364], max_new_tokens=30, temperature=0, grammar=grammar)
    assert list(g) == expected
    assert g.result["stop_reason"] == "eos"
    assert re.fullmatch(r"(yes|no) [a-z]{2,5}\.", g.result["text"]), g.result["text"]
    with pytest.raises(ValueError, match="grammar: line 1, column 10: rule 'word' is used but never defined"):
        list(s.generate(prompt_ids=[2], max_new_tokens=1, grammar="root ::= word"))


def test_generate_text_matches_run(model_dir, tmp_path):
    expected = cli_tokens(model_dir, "-p 'The quick brown fox' -n 6 --temp 0 --max-seq 64", tmp_path)
    s = staticlm.Model(model_dir).session(max_seq=64, threads=2)
    g = s.generate(prompt="The quick brown fox", max_new_tokens=6, temperature=0)
    assert list(g) == expected
    r = g.result
    assert r["tokens"] == expected
    assert r["stop_reason"] == "max new tokens"
    assert r["stats"]["generated_tokens"] == 6
    tok = staticlm.Tokenizer(model_dir)
    assert r["stats"]["prompt_tokens"] == len(tok.encode("The quick brown fox"))
    assert r["text"] == tok.decode(expected, skip_special_tokens=True)


def test_generate_image_matches_run(model_dir, image, tmp_path):
    prompt = "<|image|>Describe the image."
    expected = cli_tokens(model_dir, f"--image {image} --set image_fit=fit -p '{prompt}' -n 3 --temp 0", tmp_path)
    s = staticlm.Model(model_dir).session(sets={"image_fit": "fit"})
    g = s.generate(prompt=prompt, image=image, max_new_tokens=3, temperature=0)
    assert list(g) == expected
    assert g.result["stats"]["prompt_tokens"] == 270


def test_generate_streams_tokens_as_they_come(model_dir):
    # The worker runs at most a few tokens ahead of the consumer: after one token and close(),
    # the generation stops long before max_new_tokens, by the caller.
    s = staticlm.Model(model_dir).session(max_seq=512)
    g = s.generate(prompt_ids=[2, 105], max_new_tokens=400, temperature=0)
    first = next(g)
    assert g.result is None  # still generating
    g.close()
    r = g.result
    assert r["stop_reason"] == "stopped by caller"
    assert r["tokens"][0] == first
    assert len(r["tokens"]) < 10
    # The session is free again.
    assert len(list(s.generate(prompt_ids=[2, 105], max_new_tokens=2, temperature=0))) == 2


def test_generation_in_a_with_block_and_until_the_cache_is_full(model_dir):
    s = staticlm.Model(model_dir).session(max_seq=64)
    with s.generate(prompt_ids=[2, 105], max_new_tokens=400, temperature=0) as g:
        first = next(g)
    assert g.result["stop_reason"] == "stopped by caller" and g.result["tokens"][0] == first  # closed on leaving
    # max_new_tokens=-1 is run's -n -1: until the cache is full (max_seq 64 holds 63: 2 prompt + 61 fed back).
    g = s.generate(prompt_ids=[2, 105], max_new_tokens=-1, temperature=0, ignore_eos=True)
    assert len(list(g)) == 62
    assert g.result["stop_reason"] == "cache full"
    with pytest.raises(ValueError, match=re.escape("max_new_tokens 0: must be at least 1 (-1: until the cache is full)")):
        list(s.generate(prompt_ids=[2], max_new_tokens=0))


def test_one_generation_at_a_time(model_dir):
    s = staticlm.Model(model_dir).session(max_seq=64)
    g = s.generate(prompt_ids=[2, 105], max_new_tokens=20, temperature=0)
    next(g)
    with pytest.raises(ValueError, match="still generating"):
        s.generate(prompt_ids=[2], max_new_tokens=2)
    del g


def test_close_from_another_thread_ends_the_iteration(model_dir):
    # A "stop" button: another thread closes the generation the main thread iterates. Both join
    # the worker; neither may wait for the other (it deadlocked: the loop joined with the GIL held).
    s = staticlm.Model(model_dir).session(max_seq=512)
    g = s.generate(prompt_ids=[2, 105], max_new_tokens=400, temperature=0)
    closer = threading.Timer(0.05, g.close)
    closer.start()
    got = list(g)
    closer.join()
    assert len(got) < 400
    assert g.result is None or g.result["stop_reason"] == "stopped by caller"
    with pytest.raises(StopIteration):
        next(g)  # closed: nothing more, not a queued token
    assert len(list(s.generate(prompt_ids=[2, 105], max_new_tokens=2, temperature=0))) == 2


def test_a_chat_is_used_by_one_call_at_a_time(model_dir):
    # Two threads saying into one Chat: the second call while the first runs is a ValueError
    # (it corrupted the heap: a Chat serves one call at a time and say() releases the GIL).
    import time
    c = staticlm.Model(model_dir).chat(max_seq=512)

    def long_turn():  # 300 tokens: about half a second
        while True:
            try:
                return c.say("Hello there", max_new_tokens=300, temperature=0, ignore_eos=True)
            except ValueError:  # a reset below got in first: try again
                pass

    t = threading.Thread(target=long_turn)
    t.start()
    time.sleep(0.1)
    errors = []
    while t.is_alive() and not errors:
        try:
            c.reset()
        except ValueError as e:
            errors.append(str(e))
    t.join()
    assert errors and "this chat is in a call already" in errors[0]


def test_ctrl_c_stops_a_generation(model_dir):
    # SIGINT mid-reply is a KeyboardInterrupt within ~0.1 s (it waited for the whole reply), and
    # the generation stops at once.
    import signal
    s = staticlm.Model(model_dir).session(max_seq=2048)
    c = staticlm.Model(model_dir).chat(max_seq=2048)
    g = s.generate(prompt_ids=[2, 105], max_new_tokens=2000, temperature=0, ignore_eos=True)
    for run in (lambda: list(g), lambda: c.say("Hello", max_new_tokens=2000, temperature=0, ignore_eos=True)):
        timer = threading.Timer(0.3, lambda: os.kill(os.getpid(), signal.SIGINT))
        timer.start()
        with pytest.raises(KeyboardInterrupt):
            run()
        timer.join()
    # Stopped early, not after the 2000 tokens (about 3 s of them here).
    assert g.result["stop_reason"] == "stopped by caller" and len(g.result["tokens"]) < 1000
    assert c.context_tokens < 1000
    assert len(list(s.generate(prompt_ids=[2, 105], max_new_tokens=2, temperature=0))) == 2


def test_gil_released_while_generating(model_dir):
    # Another Python thread runs while the prefills compute. Held, the GIL would allow it a tick
    # or two (before and after); released, it ticks through about a second of work, even on a
    # loaded machine.
    s = staticlm.Model(model_dir).session(max_seq=2048, threads=1)
    ticks = []
    stop = threading.Event()

    def count():
        while not stop.is_set():
            ticks.append(1)
            stop.wait(0.001)

    t = threading.Thread(target=count)
    t.start()
    for _ in range(4):
        logits = s.prefill(prompt_ids=list(range(2, 1500)))
    stop.set()
    t.join()
    assert logits.dtype == np.float32 and logits.shape == (staticlm.Model(model_dir).vocab_size,)
    assert len(ticks) >= 5


def test_stepwise_decode_matches_generate(model_dir):
    s = staticlm.Model(model_dir).session(max_seq=32, threads=1)
    ids = [2, 105, 2364, 107]
    expected = list(s.generate(prompt_ids=ids, max_new_tokens=3, temperature=0))
    logits = s.prefill(prompt_ids=ids)
    got = []
    for _ in range(3):
        got.append(int(np.argmax(logits)))
        logits = s.decode(got[-1])
    assert got == expected


@pytest.mark.parametrize("with_image", [False, True])
def test_build_static_inputs_equals_inputs_command(model_dir, image, tmp_path, with_image):
    prompt = "<|image|>Describe the image." if with_image else "Hello there"
    out = tmp_path / "inputs.safetensors"
    extra = f" --image {image} --set image_fit=fit" if with_image else ""
    run_cli(f"inputs -m {model_dir} --prompt '{prompt}' --max-seq 512 --out {out}" + extra)
    expected = read_safetensors(out)
    sets = {"max_seq": 512, "image_fit": "fit"} if with_image else {"max_seq": 512}
    got = staticlm.build_static_inputs(model_dir, prompt, image=image if with_image else None, sets=sets)
    assert sorted(got) == sorted(expected)
    for name, want in expected.items():
        assert got[name].dtype == want.dtype, name
        assert got[name].shape == want.shape, name
        np.testing.assert_array_equal(got[name], want, err_msg=name)
    if with_image:
        pre = staticlm.preprocess_image(model_dir, image, sets={"image_fit": "fit"})
        np.testing.assert_array_equal(pre["pixel_values"], expected["pixel_values"])
        np.testing.assert_array_equal(pre["image_position_ids"], expected["image_position_ids"])


def test_tokenizer_and_chat_template(model_dir):
    tok = staticlm.Tokenizer(model_dir)
    ids = tok.encode("Hello world")
    assert tok.decode(ids) == "Hello world"
    text = tok.apply_chat_template([{"role": "user", "content": "Hi"}])
    # The same text `staticlm chat-format` renders for one user message.
    cli = run_cli(f"chat-format -m {model_dir} --prompt Hi")
    assert text == cli.stdout
    assert tok.chat_prompt("Hi") == cli.stdout
    with pytest.raises(ValueError, match="nope.jinja"):
        tok.chat_prompt("Hi", chat_template="nope.jinja")


def test_errors_name_the_value(model_dir, tmp_path):
    with pytest.raises(ValueError, match="nope"):
        staticlm.Model(str(tmp_path / "nope"))
    m = staticlm.Model(model_dir)
    with pytest.raises(ValueError, match="max_seq 1"):
        m.session(max_seq=1)
    with pytest.raises(ValueError, match="bogus_key"):
        staticlm.build_static_inputs(model_dir, "hi", sets={"bogus_key": 1})
    s = m.session(max_seq=16)
    with pytest.raises(ValueError, match="-3"):
        list(s.generate(prompt_ids=[1, -3], max_new_tokens=2))
    # A value of the wrong type is a TypeError naming the argument (image=5 was a RuntimeError
    # "Unable to cast"); a pathlib.Path is a path.
    with pytest.raises(TypeError, match="image: expected a path"):
        s.generate(prompt="<|image|>x", image=5)
    with pytest.raises(TypeError, match="image: expected a path"):
        s.generate(prompt="<|image|>x", image=["a.png", 5])
    with pytest.raises(TypeError, match="vars: expected a list of 'KEY=JSON' strings, got str"):
        m.chat(max_seq=64, vars="a=1")
    import pathlib
    with pytest.raises((ValueError, staticlm.Error), match="missing.png"):
        list(m.session(max_seq=512).generate(prompt="<|image|>x", image=pathlib.Path(tmp_path / "missing.png"), max_new_tokens=1))


def test_inspect_report_equals_cli_report(model_dir, tmp_path):
    report = tmp_path / "report.json"
    r = subprocess.run([BIN, "inspect", "-m", model_dir, "-p", "Hello there", "--max-seq", "64", "--gen-steps", "2",
                        "--report", str(report)], capture_output=True, text=True)
    assert r.returncode in (0, 1), r.stderr
    got = staticlm.inspect(model_dir, prompt="Hello there", max_seq=64, gen_steps=2)
    want = json.loads(report.read_text())
    assert got["pass"] == want["pass"]
    assert [s["name"] for s in got["steps"]] == [s["name"] for s in want["steps"]]
    assert [s["status"] for s in got["steps"]] == [s["status"] for s in want["steps"]]
    for g, w in zip(got["steps"], want["steps"]):
        assert g.get("metrics") == w.get("metrics"), g["name"]


def test_inspect_records_and_checks_the_backend(model_dir, tmp_path):
    # The static side's subgraph calls go to `record`, as `inspect --record` writes them.
    rec = tmp_path / "rec"
    got = staticlm.inspect(model_dir, prompt="Hello there", max_seq=64, steps="1-2", record=str(rec))
    index = json.loads((rec / "index.json").read_text())
    assert got["pass"] and len(index["calls"]) > 0
    with pytest.raises(ValueError, match="bogus"):
        staticlm.inspect(model_dir, prompt="Hello there", max_seq=64, backend="bogus")
    with pytest.raises(ValueError, match="fallback"):
        staticlm.inspect(model_dir, prompt="Hello there", max_seq=64, fallback="cpu")


def test_chat_matches_the_chat_command(model_dir, tmp_path):
    # The same two turns through `staticlm chat` (one reply per stdout line, a statistics line per
    # turn on stderr) and through Model.chat(): the same replies, prefilled and reused counts.
    turns = ["Hello there", "What comes next?"]
    r = subprocess.run([BIN, "chat", "-m", model_dir, "-n", "5", "--temp", "0", "--max-seq", "256"],
                       input="\n".join(turns) + "\n", capture_output=True, text=True, check=True)
    replies = r.stdout.split("\n")[: len(turns)]
    stats = [line for line in r.stderr.splitlines() if line.startswith("turn ")]
    chat = staticlm.Model(model_dir).chat(max_seq=256)
    said = [chat.say(t, max_new_tokens=5, temperature=0) for t in turns]
    assert [s["text"] for s in said] == replies
    for s, line in zip(said, stats):
        assert f"prefilled {s['prefilled_tokens']} tokens, reused {s['reused_tokens']} from the cache" in line
    # The second turn took the first from the cache and prefilled only its own tokens.
    assert said[1]["reused_tokens"] > 0
    assert said[1]["prefilled_tokens"] < said[1]["context_tokens"] - said[1]["reused_tokens"] + 1
    assert chat.turns == 2
    # Saved and loaded back, the conversation goes on as it would have.
    path = str(tmp_path / "chat.safetensors")
    chat.save(path)
    third = chat.say("And then?", max_new_tokens=3, temperature=0)
    chat.reset()
    assert chat.turns == 0
    chat.load(path)
    assert chat.turns == 2
    assert chat.say("And then?", max_new_tokens=3, temperature=0)["text"] == third["text"]


def test_sampling_keywords_are_checked_by_name(model_dir):
    m = staticlm.Model(model_dir)
    s = m.session(max_seq=64)
    with pytest.raises(TypeError, match="unexpected keyword argument 'temprature'; the sampling keywords are .*temperature"):
        s.generate("Hi", temprature=0.5)
    with pytest.raises(TypeError, match="top_k: cannot take 'five' \\(a str\\)"):
        s.generate("Hi", top_k="five")
    with pytest.raises(TypeError, match="stop: cannot take 'end'"):
        s.generate("Hi", stop="end")  # a list of strings, not one
    with pytest.raises(TypeError, match="unexpected keyword argument 'bogus'"):
        m.chat(max_seq=64).say("Hi", bogus=1)
    # None leaves a setting at its default: the same tokens as not giving it.
    plain = list(s.generate("Hi", max_new_tokens=3, temperature=0))
    assert list(s.generate("Hi", max_new_tokens=3, temperature=0, top_k=None, seed=None, stop=None)) == plain
    # True is not a count; seed=-1 is a random seed (the CLI's --seed -1), below that refused.
    with pytest.raises(TypeError, match="max_new_tokens: cannot take True"):
        s.generate("Hi", max_new_tokens=True)
    with pytest.raises(ValueError, match="seed: -2 is below -1"):
        s.generate("Hi", seed=-2)
    with pytest.raises(ValueError, match="is below -1"):
        s.generate("Hi", seed=np.int64(-5))
    draws = {tuple(s.generate("Hi", max_new_tokens=6, temperature=3, seed=-1)) for _ in range(3)}
    assert len(draws) > 1
    assert len({tuple(s.generate("Hi", max_new_tokens=6, temperature=3, seed=7)) for _ in range(2)}) == 1
    assert "dry_sequence_breakers" in staticlm.Session.generate.__doc__
    assert "mirostat_tau" in staticlm.Chat.say.__doc__


def test_templated_chat_matches_the_chat_command(model_dir, tmp_path):
    # chat(jinja=True, vars=...) against `staticlm chat --jinja --var`: the same replies and counts.
    turns = ["Hello there", "What comes next?"]
    r = subprocess.run([BIN, "chat", "-m", model_dir, "-n", "4", "--temp", "0", "--max-seq", "256", "--jinja",
                        "--var", "enable_thinking=true"],
                       input="\n".join(turns) + "\n", capture_output=True, text=True, check=True)
    stats = [line for line in r.stderr.splitlines() if line.startswith("turn ")]
    chat = staticlm.Model(model_dir).chat(max_seq=256, jinja=True, vars=["enable_thinking=true"])
    said = [chat.say(t, max_new_tokens=4, temperature=0) for t in turns]
    assert [s["text"] for s in said] == r.stdout.split("\n")[: len(turns)]
    for s, line in zip(said, stats):
        assert f"prefilled {s['prefilled_tokens']} tokens, reused {s['reused_tokens']} from the cache" in line
    assert said[1]["reused_tokens"] > 0
    # The variable reached the template: without it the first turn lays out shorter (no <|think|>).
    plain = staticlm.Model(model_dir).chat(max_seq=256, jinja=True).say(turns[0], max_new_tokens=1, temperature=0)
    assert plain["prefilled_tokens"] < said[0]["prefilled_tokens"]
    with pytest.raises(ValueError, match="nowhere.jinja"):
        staticlm.Model(model_dir).chat(max_seq=64, chat_template=str(tmp_path / "nowhere.jinja"))


def test_chat_refuses_an_image_after_the_first_turn(model_dir, tmp_path):
    with pytest.raises(ValueError, match="overflow|error|truncate"):
        staticlm.Model(model_dir).chat(max_seq=64, overflow="sometimes")
    chat = staticlm.Model(model_dir).chat(max_seq=64)
    chat.say("Hi", max_new_tokens=1, temperature=0)
    with pytest.raises(Exception, match="first turn|vision"):
        chat.say("Look", image="x.png", max_new_tokens=1)


def test_tool_calls_match_run(model_dir, tmp_path):
    """tool_call_grammar + generate + parse_tool_calls: the calls `run --tool-choice NAME --json` makes."""
    tools = [{"type": "function", "function": {"name": "set_alarm", "parameters": {
                 "type": "object", "properties": {"loud": {"type": "boolean"}, "tone": {"enum": ["beep", "ring"]}},
                 "required": ["loud", "tone"]}}},
             {"type": "function", "function": {"name": "stop_alarm", "parameters": {
                 "type": "object", "properties": {"now": {"type": "boolean"}}, "required": ["now"]}}}]
    messages = [{"role": "user", "content": "Wake me at seven"}]
    template = os.path.join(FIXTURES, "jinja", "templates", "gemma4_tools.jinja")
    (tmp_path / "m.json").write_text(json.dumps(messages))
    (tmp_path / "t.json").write_text(json.dumps(tools))
    common = f"run -m {model_dir} --messages {tmp_path / 'm.json'} --tools {tmp_path / 't.json'} --chat-template {template}"
    expected = json.loads(run_cli(common + " --tool-choice set_alarm -n 40 --temp 0 --max-seq 512 --json").stdout)
    assert [c["function"]["name"] for c in expected["tool_calls"]] and \
        all(c["function"]["name"] == "set_alarm" for c in expected["tool_calls"]), expected

    m = staticlm.Model(model_dir)
    prompt = m.tokenizer.apply_chat_template(messages, tools=tools, chat_template=template)
    s = m.session(max_seq=512)
    g = s.generate(prompt, max_new_tokens=40, temperature=0, grammar=staticlm.tool_call_grammar(tools, "set_alarm"))
    list(g)
    reply = staticlm.parse_tool_calls(g.result["text"])
    assert reply["text"] == expected["text"]
    assert [(c["name"], c["arguments"]) for c in reply["tool_calls"]] == \
        [(c["function"]["name"], c["function"]["arguments"]) for c in expected["tool_calls"]]
    # One call only, from either tool; JSON text works as the tools too.
    g = s.generate(prompt, max_new_tokens=40, temperature=0,
                   grammar=staticlm.tool_call_grammar(json.dumps(tools), parallel_tool_calls=False))
    list(g)
    one = staticlm.parse_tool_calls(g.result["text"])
    assert one["text"] == "" and len(one["tool_calls"]) == 1 and one["tool_calls"][0]["name"] in ("set_alarm", "stop_alarm")
    assert staticlm.parse_tool_calls("hi <|tool_call>call:f{a:1}<tool_call|>") == \
        {"text": "hi ", "tool_calls": [{"name": "f", "arguments": {"a": 1}}], "reasoning": ""}
    assert staticlm.parse_tool_calls("<|channel>thought\nping it<channel|><|tool_call>call:f{}<tool_call|>ok") == \
        {"text": "ok", "tool_calls": [{"name": "f", "arguments": {}}], "reasoning": "ping it"}
    with pytest.raises(ValueError, match='tool_choice: no tool is named "get_time"'):
        staticlm.tool_call_grammar(tools, "get_time")
    with pytest.raises(ValueError, match='tool_choice "auto": a grammar forces calls'):
        staticlm.tool_call_grammar(tools, "auto")
    with pytest.raises(ValueError, match="tools: expected a JSON array"):
        staticlm.tool_call_grammar("{", "required")


def wait_for_output(proc):
    """Returns once the process has written to stdout (a reply streams, flushed per token)."""
    deadline = time.time() + 60
    while time.time() < deadline:
        ready, _, _ = select.select([proc.stdout], [], [], 1)
        if ready and os.read(proc.stdout.fileno(), 4096):
            return
    raise AssertionError("no reply text within 60 s")


def test_chat_on_a_terminal_ctrl_c_stops_the_reply_not_the_chat(model_dir):
    """`staticlm chat` reading a terminal: SIGINT while a reply streams stops that reply (the turn
    is kept, "stopped by caller") and the chat goes on to the next line, as llama-cli does."""
    master, slave = os.openpty()
    proc = subprocess.Popen([BIN, "chat", "-m", model_dir, "-c", "4096", "-n", "-1", "--ignore-eos", "--temp", "0",
                             "-t", "1"], stdin=slave, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    os.close(slave)
    try:
        os.write(master, b"Tell me a long story\n")
        # The reply has started once its first bytes reach stdout (flushed per token).
        wait_for_output(proc)
        proc.send_signal(signal.SIGINT)
        os.write(master, b"/stats\n/quit\n")
        out, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
        os.close(master)
    err = err.decode()
    assert proc.returncode == 0, err
    assert "[interrupted]" in err, err
    turn = re.search(r"turn 1: .*generated (\d+) tokens .*stopped: (.*?); context", err)
    assert turn, err
    assert turn.group(2) == "stopped by caller"
    assert 0 < int(turn.group(1)) < 4000  # stopped well before the cache was full
    assert "turns 1," in err  # the interrupted turn is kept and /stats still ran


def test_bench_sql_output_loads_into_sqlite(model_dir, tmp_path):
    """`bench -o sql` (llama-bench's) is SQL that SQLite runs: the table has the CSV's columns, a
    row per test with its counts, a text value holding a quote kept whole, and NULL where a test
    has no ceiling's share (pp+tg)."""
    import csv
    import io
    import sqlite3
    quoted = tmp_path / "it's tiny"
    os.symlink(model_dir, quoted)
    args = f"bench -m \"{quoted}\" --max-seq 64 -t 1 -p 8 -n 4,8 -pg 8,4"
    sql = subprocess.run([BIN] + shlex.split(args) + ["-o", "sql"], capture_output=True, text=True)
    assert sql.returncode == 0, sql.stderr
    db = sqlite3.connect(":memory:")
    db.executescript(sql.stdout)
    db.executescript(sql.stdout)  # CREATE TABLE IF NOT EXISTS: a second run appends
    columns = [r[1] for r in db.execute("PRAGMA table_info(test)")]
    out = subprocess.run([BIN] + shlex.split(args) + ["-o", "csv"], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    header = next(csv.reader(io.StringIO(out.stdout)))
    assert columns == header
    rows = db.execute("SELECT model, test, n_prompt, n_gen, threads, repetitions, avg_ts, fraction_of_ceiling, ceiling, "
                      "backend FROM test").fetchall()
    assert len(rows) == 8
    # prefill against the AMX peak where the GEMMs ran on AMX, else the f32 FMA peak
    compute = "AMX" if rows[0][9].endswith("+AMX)") else "FMA"
    want = [("pp8", 8, 0, compute), ("tg4", 0, 4, "bandwidth"), ("tg8", 0, 8, "bandwidth"), ("pp8+tg4", 8, 4, None)]
    for row, (test, n_prompt, n_gen, ceiling) in zip(rows, want * 2):
        assert row[0] == "it's tiny (unquantized)"
        assert row[1:6] == (test, n_prompt, n_gen, 1, 1)
        assert isinstance(row[6], float) and row[6] > 0
        assert row[8] == ceiling
        assert (row[7] is None) == (ceiling is None)


def test_a_long_prompt_is_given_up_part_way(model_dir):
    """close() and Ctrl-C stop a prefill under way (before its next layer), not after it: an
    iterator closed at once yields nothing and leaves the cache empty; a say() interrupted 0.3 s
    into a prefill of ~2 s raises KeyboardInterrupt and keeps no turn. (Before, both waited for
    the whole prefill and kept its tokens.)"""
    long_prompt = "word " * 8000
    m = staticlm.Model(model_dir)
    s = m.session(max_seq=8192, threads=1)
    g = s.generate(long_prompt, max_new_tokens=4)
    g.close()
    assert list(g) == []
    assert s.past_len == 0
    assert len(list(s.generate("Hello", max_new_tokens=2))) == 2  # the session goes on

    c = m.chat(max_seq=8192, threads=1)
    def interrupt(signum, frame):
        raise KeyboardInterrupt
    previous = signal.signal(signal.SIGALRM, interrupt)
    try:
        signal.setitimer(signal.ITIMER_REAL, 0.3)
        with pytest.raises(KeyboardInterrupt):
            c.say(long_prompt, max_new_tokens=4)
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
    assert c.turns == 0
    assert c.past_len == 0
    assert len(c.say("Hello", max_new_tokens=2)["tokens"]) == 2
    assert c.turns == 1


def test_run_ctrl_c_stops_the_reply_and_keeps_what_it_made(model_dir, tmp_path):
    """`staticlm run`: SIGINT while the reply streams stops it (llama-cli's habit): the statistics
    say "stopped by caller", the logits dump holds exactly the tokens generated (a whole file),
    and the exit status is 130."""
    dump = tmp_path / "dump.safetensors"
    proc = subprocess.Popen([BIN, "run", "-m", model_dir, "-p", "Tell me a long story", "-c", "4096", "-n", "-1",
                             "--ignore-eos", "--temp", "0", "-t", "1", "--dump-logits", str(dump)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        wait_for_output(proc)
        proc.send_signal(signal.SIGINT)
        _, err = proc.communicate(timeout=120)
    finally:
        if proc.poll() is None:
            proc.kill()
    err = err.decode()
    assert proc.returncode == 130, err
    assert "[interrupted]" in err, err
    stats = re.search(r"generated (\d+) tokens; stopped: stopped by caller", err)
    assert stats, err
    generated = int(stats.group(1))
    assert 0 < generated < 4000
    assert len(read_safetensors(dump)["tokens"]) == generated
