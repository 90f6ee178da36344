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

With --steps (the default) it also dumps what `staticlm inspect --reference golden:FILE`
compares, read off forward hooks on the model (so nothing is recomputed outside transformers):

  input_ids           I64 [T]          the processor's ids (image placeholders kept)
  pixel_values        F32 [N, 3p^2]    with --image; image_position_ids I64 [N, 2]
  token_embeddings    F32 [T, D]       embed_tokens(ids, placeholders -> pad id), scaled
  per_layer_inputs    F32 [T, L, P]    what each decoder layer receives as per_layer_input
  image_features      F32 [S_img, D]   the soft tokens (the vision embedder's output)
  inputs_embeds       F32 [T, D]       the language model's input after the image scatter
  rope_cos.{i}, rope_sin.{i}  F32 [T, hd]  position_embeddings given to layer i
  mask_allowed.{i}    U8 [T, T]        layer i's eager attention mask, 1 where a key is allowed
  prefill_hidden.{i}  F32 [T, D]       layer i's output hidden state in the prefill
  decode_hidden.{i}   F32 [n-1, D]     layer i's output at each decode step

A tensor whose hook found nothing is left out with a warning (inspect then fails that step,
naming the tensor), so a transformers release that renamed an argument is noticed.

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


class Hooks:
    """Forward hooks on every decoder layer (and the vision embedder) that keep the tensors the
    inspector compares; `phase` says whether a call is the prefill or a decode step."""

    def __init__(self, model):
        import torch

        self.torch = torch
        self.phase = "prefill"
        self.prefill = {}
        self.decode_hidden = {}
        self.per_layer = {}
        self.handles = []
        layers = self._decoder_layers(model)
        self.num_layers = len(layers)
        for i, layer in enumerate(layers):
            self.handles.append(layer.register_forward_pre_hook(self._pre(i), with_kwargs=True))
            self.handles.append(layer.register_forward_hook(self._post(i)))
        lm = self._language_model(model)
        if lm is not None:
            self.handles.append(lm.register_forward_pre_hook(self._lm_pre, with_kwargs=True))
        for name, module in model.named_modules():
            if name.endswith("embed_vision"):
                self.handles.append(module.register_forward_hook(self._vision))
                break

    @staticmethod
    def _decoder_layers(model):
        for name, module in model.named_modules():
            if name.endswith("language_model.layers") or name == "model.layers":
                return list(module)
        sys.exit("error: no decoder layers (language_model.layers) found in the model")

    @staticmethod
    def _language_model(model):
        for name, module in model.named_modules():
            if name.endswith("language_model") and hasattr(module, "layers"):
                return module
        return getattr(model, "model", None)

    def _tensor(self, x):
        return x.detach().float().cpu().clone()

    def _pre(self, i):
        def hook(module, args, kwargs):
            if self.phase != "prefill":
                return
            pe = kwargs.get("position_embeddings")
            if isinstance(pe, (tuple, list)) and len(pe) == 2:
                self.prefill[f"rope_cos.{i}"] = self._tensor(pe[0][0])
                self.prefill[f"rope_sin.{i}"] = self._tensor(pe[1][0])
            mask = kwargs.get("attention_mask")
            if isinstance(mask, dict):  # some releases pass a mask per layer type
                mask = mask.get(getattr(module, "attention_type", ""), None)
            if isinstance(mask, self.torch.Tensor) and mask.dim() == 4:
                self.prefill[f"mask_allowed.{i}"] = (mask[0, 0] == 0).to(self.torch.uint8).cpu().clone()
            ple = kwargs.get("per_layer_input")
            if ple is None and len(args) > 1 and isinstance(args[1], self.torch.Tensor):
                ple = args[1]
            if isinstance(ple, self.torch.Tensor):
                self.per_layer[i] = self._tensor(ple[0])

        return hook

    def _post(self, i):
        def hook(module, args, output):
            h = output[0] if isinstance(output, (tuple, list)) else output
            h = self._tensor(h[0])
            if self.phase == "prefill":
                self.prefill[f"prefill_hidden.{i}"] = h
            else:
                self.decode_hidden.setdefault(i, []).append(h[-1])

        return hook

    def _lm_pre(self, module, args, kwargs):
        if self.phase == "prefill" and isinstance(kwargs.get("inputs_embeds"), self.torch.Tensor):
            self.prefill["inputs_embeds"] = self._tensor(kwargs["inputs_embeds"][0])

    def _vision(self, module, args, output):
        if self.phase == "prefill":
            out = output[0] if isinstance(output, (tuple, list)) else output
            self.prefill["image_features"] = self._tensor(out.reshape(-1, out.shape[-1]))

    def tensors(self, steps):
        out = dict(self.prefill)
        if len(self.per_layer) == self.num_layers:
            out["per_layer_inputs"] = self.torch.stack([self.per_layer[i] for i in range(self.num_layers)], dim=1).contiguous()
        for i, rows in self.decode_hidden.items():
            if len(rows) == steps:
                out[f"decode_hidden.{i}"] = self.torch.stack(rows).contiguous()
        wanted = ["inputs_embeds", "per_layer_inputs"] + [
            f"{p}.{i}" for p in ("rope_cos", "rope_sin", "mask_allowed", "prefill_hidden") for i in range(self.num_layers)
        ]
        if steps > 0:
            wanted += [f"decode_hidden.{i}" for i in range(self.num_layers)]
        for name in wanted:
            if name not in out:
                print(f"warning: no {name} captured; inspect will report it missing", file=sys.stderr)
        return {k: v.contiguous() for k, v in out.items()}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--model", required=True, help="checkpoint directory")
    ap.add_argument("--prompt-ids", help="comma-separated prompt token ids")
    ap.add_argument("--prompt", help="prompt text for the checkpoint's processor (\"<|image|>\" marks the image)")
    ap.add_argument("--image", help="image file for the processor (with --prompt)")
    ap.add_argument("--logits-only", action="store_true", help="dump only logits and tokens (the older format)")
    ap.add_argument("-n", type=int, default=4, help="tokens to generate at most")
    ap.add_argument("--max-seq", type=int, default=64, help="the --max-seq the staticlm run should use")
    ap.add_argument("--make-model-args", default="", help="recorded: how the checkpoint was made")
    ap.add_argument("--device", default="cpu", help="torch device (cpu or cuda)")
    ap.add_argument("--out", required=True, help="output .safetensors")
    args = ap.parse_args()

    import torch
    import transformers
    from safetensors.torch import save_file

    if (args.prompt_ids is None) == (args.prompt is None):
        sys.exit("error: give exactly one of --prompt-ids and --prompt")
    if args.image and args.prompt is None:
        sys.exit("error: --image goes with --prompt")
    extra = {}
    if args.prompt is not None:
        from transformers import AutoProcessor

        processor = AutoProcessor.from_pretrained(args.model)
        if args.image:
            from PIL import Image

            batch = processor(text=args.prompt, images=Image.open(args.image).convert("RGB"), return_tensors="pt")
        else:
            batch = processor(text=args.prompt, return_tensors="pt")
        prompt = [int(x) for x in batch["input_ids"][0]]
        for key in ("pixel_values", "image_position_ids"):
            if key in batch:
                extra[key] = batch[key]
    else:
        prompt = parse_ids(args.prompt_ids)
    if args.n < 1:
        sys.exit("error: -n must be at least 1")
    if len(prompt) + args.n > args.max_seq:
        sys.exit(f"error: prompt {len(prompt)} + n {args.n} does not fit in --max-seq {args.max_seq}")
    eos = eos_ids(args.model)
    model = load_model(args.model).to(args.device)
    hooks = None if args.logits_only else Hooks(model)
    inputs = {k: v.to(args.device) for k, v in extra.items()}
    if "pixel_values" in inputs:
        inputs["pixel_values"] = inputs["pixel_values"].to(torch.float32)

    tokens, rows = [], []
    with torch.no_grad():
        ids = torch.tensor([prompt], dtype=torch.long, device=args.device)
        if hooks is not None:
            # Step 2's tensor: the scaled embedding of the ids with image placeholders -> pad id.
            cfg = model.config
            image_token = getattr(cfg, "image_token_id", None)
            text_cfg = getattr(cfg, "text_config", cfg)
            emb_ids = ids.clone()
            if image_token is not None:
                emb_ids[emb_ids == image_token] = text_cfg.pad_token_id
            token_embeddings = model.get_input_embeddings()(emb_ids)[0].detach().float().cpu().clone()
        out = model(input_ids=ids, attention_mask=torch.ones_like(ids), use_cache=True, **inputs)
        if hooks is not None:
            hooks.phase = "decode"
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
    if hooks is not None:
        tensors.update(hooks.tensors(len(rows)))
        tensors["input_ids"] = torch.tensor(prompt, dtype=torch.int64)
        tensors["token_embeddings"] = token_embeddings.contiguous()
        if "pixel_values" in extra:
            tensors["pixel_values"] = extra["pixel_values"][0].float().contiguous()
        if "image_position_ids" in extra:
            tensors["image_position_ids"] = extra["image_position_ids"][0].to(torch.int64).contiguous()
    metadata = {
        "producer": "tools/hf_golden.py",
        "make_model_args": args.make_model_args,
        "prompt_ids": ",".join(str(i) for i in prompt),
        "prompt": args.prompt or "",
        "image": os.path.basename(args.image) if args.image else "",
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
