#!/usr/bin/env python3
"""Golden logits from Hugging Face transformers, in the format of `staticlm run --dump-logits`.

Runs transformers' own Gemma 4 on a checkpoint directory (for example one written by
`staticlm make-model`) in float32 with eager attention, greedily, the way staticlm's
generation loop does, and writes:

  prefill_logits  F32 [V]       logits after the last prompt token (they choose tokens[0])
  decode_logits   F32 [n-1, V]  row j: logits after feeding tokens[j] (they choose tokens[j+1])
  tokens          I64 [n]       greedy tokens; stops after an EOS id or n tokens

The EOS ids are the ones staticlm uses: generation_config.json's list when present, else
config.json's. The metadata records how to reproduce the run (the make-model arguments, the
prompt, n, max_seq and the library versions), so tests/ can rebuild the same checkpoint and
compare (tests/integration/golden_test.cc reads tests/fixtures/golden/*.safetensors).

Needs: python3 with torch, safetensors and transformers >= 5.5 (Gemma 4). Example:

  staticlm make-model --preset tiny --seed 1 --dtype f32 --text-only --out /tmp/tiny
  python3 tools/hf_golden.py --model /tmp/tiny --prompt-ids 2,105,2364,107 -n 4 \
      --make-model-args "--preset tiny --seed 1 --dtype f32 --text-only" \
      --out tests/fixtures/golden/tiny_text_f32.safetensors
"""
import argparse
import json
import os
import sys


def parse_ids(text):
    try:
        ids = [int(x) for x in text.split(",")]
    except ValueError:
        sys.exit(f"error: --prompt-ids: {text!r} is not a comma-separated list of integers")
    if not ids:
        sys.exit("error: --prompt-ids is empty")
    return ids


def eos_ids(model_dir):
    # Same rule as staticlm's resolve_eos_ids: generation_config.json's list, else config.json's.
    def as_list(v):
        if v is None:
            return []
        return [int(x) for x in v] if isinstance(v, list) else [int(v)]

    gen_path = os.path.join(model_dir, "generation_config.json")
    if os.path.exists(gen_path):
        with open(gen_path) as f:
            ids = as_list(json.load(f).get("eos_token_id"))
        if ids:
            return ids
    with open(os.path.join(model_dir, "config.json")) as f:
        cfg = json.load(f)
    ids = as_list(cfg.get("eos_token_id"))
    if not ids and isinstance(cfg.get("text_config"), dict):
        ids = as_list(cfg["text_config"].get("eos_token_id"))
    return ids


def load_model(model_dir):
    import torch
    import transformers

    with open(os.path.join(model_dir, "config.json")) as f:
        model_type = json.load(f).get("model_type")
    if model_type == "gemma4":
        cls = getattr(transformers, "Gemma4ForConditionalGeneration", None) or transformers.AutoModelForImageTextToText
    elif model_type == "gemma4_text":
        cls = getattr(transformers, "Gemma4ForCausalLM", None) or transformers.AutoModelForCausalLM
    else:
        sys.exit(f"error: {model_dir}/config.json: model_type {model_type!r}, expected gemma4 or gemma4_text")
    try:
        model = cls.from_pretrained(model_dir, dtype=torch.float32, attn_implementation="eager")
    except TypeError:  # releases that still call it torch_dtype
        model = cls.from_pretrained(model_dir, torch_dtype=torch.float32, attn_implementation="eager")
    model.eval()
    return model


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="checkpoint directory")
    ap.add_argument("--prompt-ids", required=True, help="comma-separated prompt token ids")
    ap.add_argument("-n", type=int, default=4, help="tokens to generate at most")
    ap.add_argument("--max-seq", type=int, default=64, help="the --max-seq the staticlm run should use")
    ap.add_argument("--make-model-args", default="", help="recorded: how the checkpoint was made")
    ap.add_argument("--device", default="cpu", help="torch device (cpu or cuda)")
    ap.add_argument("--out", required=True, help="output .safetensors")
    args = ap.parse_args()

    import torch
    import transformers
    from safetensors.torch import save_file

    prompt = parse_ids(args.prompt_ids)
    if args.n < 1:
        sys.exit("error: -n must be at least 1")
    if len(prompt) + args.n > args.max_seq:
        sys.exit(f"error: prompt {len(prompt)} + n {args.n} does not fit in --max-seq {args.max_seq}")
    eos = eos_ids(args.model)
    model = load_model(args.model).to(args.device)

    tokens, rows = [], []
    with torch.no_grad():
        ids = torch.tensor([prompt], dtype=torch.long, device=args.device)
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True)
        past = out.past_key_values
        logits = out.logits[0, -1].float()
        prefill = logits.detach().cpu().clone()
        length = len(prompt)
        while True:
            tok = int(torch.argmax(logits))  # first maximum, as staticlm's greedy sampler
            tokens.append(tok)
            if tok in eos or len(tokens) == args.n:
                break
            length += 1
            step = torch.tensor([[tok]], dtype=torch.long, device=args.device)
            mask = torch.ones((1, length), dtype=torch.long, device=args.device)
            out = model(input_ids=step, attention_mask=mask, past_key_values=past, use_cache=True)
            past = out.past_key_values
            logits = out.logits[0, -1].float()
            rows.append(logits.detach().cpu().clone())

    vocab = prefill.shape[0]
    decode = torch.stack(rows) if rows else torch.zeros((0, vocab), dtype=torch.float32)
    tensors = {
        "prefill_logits": prefill.contiguous(),
        "decode_logits": decode.contiguous(),
        "tokens": torch.tensor(tokens, dtype=torch.int64),
    }
    metadata = {
        "producer": "tools/hf_golden.py",
        "make_model_args": args.make_model_args,
        "prompt_ids": ",".join(str(i) for i in prompt),
        "max_new_tokens": str(args.n),
        "max_seq": str(args.max_seq),
        "eos_token_ids": ",".join(str(i) for i in eos),
        "torch_version": torch.__version__,
        "transformers_version": transformers.__version__,
        "attn_implementation": "eager",
        "dtype": "float32",
    }
    tmp = args.out + ".tmp"
    save_file(tensors, tmp, metadata=metadata)
    os.replace(tmp, args.out)  # no half-written golden on failure
    print(f"wrote {args.out}: {len(tokens)} tokens {tokens}, vocab {vocab}")


if __name__ == "__main__":
    main()
