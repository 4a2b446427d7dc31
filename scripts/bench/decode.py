#!/usr/bin/env python3
"""The PyTorch sides of the decode-throughput benchmark of scripts/gpu/run.sh (the engine's side is
scripts/bench/decode): the same model, prompts and work as `decode`, written two ways.

  pytorch       a Qwen2 decoder in plain PyTorch (the modules of train_step.py) with a static KV cache
                preallocated for prompt + output, one prefill of the whole batch, then one forward
                per generated token under torch.inference_mode(), greedy (argmax) — the loop a
                PyTorch user writes, without CUDA graphs or fused kernels.
  transformers  model.generate(do_sample=False, min_new_tokens = max_new_tokens), when transformers
                is importable (skipped with a note otherwise).

Every batch size is run once untimed with --warmup new tokens, then timed with --new. Writes one
JSON object with both sides' results (tokens/s counts the generated tokens over the wall time,
prefill included, as the engine's side does).

    decode.py --model DIR --device cuda --batches 1,16,64 --prompt 128 --new 128 --out python.json
"""
import argparse
import json
import os
import sys
import time

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from train_step import Qwen2ForCausalLM, load_safetensors, repeat_kv, rotate_half, sdpa  # noqa: E402


def prompts(batch, n, vocab):
    """The prompts of decode/main.go's decodePrompt."""
    span = min(vocab, 10000)
    return [[(1 + 31 * i + 17 * j * j) % span for j in range(n)] for i in range(batch)]


def load(model_dir, dev):
    with open(os.path.join(model_dir, "config.json")) as f:
        c = json.load(f)
    if c.get("model_type") != "qwen2":
        raise SystemExit(f"decode.py: {model_dir} is {c.get('model_type')}; the plain-PyTorch side is Qwen2 only")
    m = Qwen2ForCausalLM(c)
    sd = {}
    names = sorted(f for f in os.listdir(model_dir) if f.endswith(".safetensors"))
    for name in names:
        sd.update(load_safetensors(os.path.join(model_dir, name)))
    dtype = sd["model.embed_tokens.weight"].dtype
    missing, unexpected = m.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight" or not c.get("tie_word_embeddings")]
    if missing or unexpected:
        raise SystemExit(f"weights: missing {missing}, unexpected {unexpected}")
    return m.to(device=dev, dtype=dtype).eval(), c


@torch.inference_mode()
def generate_plain(m, c, ids, new):
    """Greedy decoding of ids [B, P] for new tokens with a static KV cache; returns [B, new]."""
    b, p = ids.shape
    layers, kv = m.model.layers, c["num_key_value_heads"]
    d = c["hidden_size"] // c["num_attention_heads"]
    dt, dev = m.model.embed_tokens.weight.dtype, ids.device
    ck = torch.empty(len(layers), b, kv, p + new, d, dtype=dt, device=dev)
    cv = torch.empty_like(ck)
    inv = m.model.inv_freq.to(dev)
    out = torch.empty(b, new, dtype=torch.int64, device=dev)
    x, pos = ids, 0
    for s in range(new):
        t = x.shape[1]
        h = m.model.embed_tokens(x)
        freqs = torch.outer(torch.arange(pos, pos + t, dtype=torch.float32, device=dev), inv)
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(dt), emb.sin().to(dt)
        for li, layer in enumerate(layers):
            at = layer.self_attn
            a = layer.input_layernorm(h)
            q = at.q_proj(a).view(b, t, at.heads, at.d).transpose(1, 2)
            k = at.k_proj(a).view(b, t, at.kv, at.d).transpose(1, 2)
            v = at.v_proj(a).view(b, t, at.kv, at.d).transpose(1, 2)
            q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
            ck[li, :, :, pos:pos + t], cv[li, :, :, pos:pos + t] = k, v
            rep = at.heads // at.kv
            keys, vals = repeat_kv(ck[li, :, :, :pos + t], rep), repeat_kv(cv[li, :, :, :pos + t], rep)
            # The prefill is causal; a decoded token attends to everything before it.
            o = sdpa(q, keys, vals, None, causal=t > 1)
            h = h + at.o_proj(o.transpose(1, 2).reshape(b, t, -1))
            h = h + layer.mlp(layer.post_attention_layernorm(h))
        logits = m.lm_head(m.model.norm(h[:, -1]))
        nxt = logits.argmax(-1)
        out[:, s] = nxt
        x, pos = nxt[:, None], pos + t
    return out


def timed(fn, dev):
    """fn's result, wall seconds and the process's CPU seconds (user + system) over it."""
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    t0, c0 = time.perf_counter(), time.process_time()
    r = fn()
    if dev.type == "cuda":
        torch.cuda.synchronize(dev)
    return r, time.perf_counter() - t0, time.process_time() - c0


def side_plain(a, dev, batches):
    m, c = load(a.model, dev)
    res = []
    for b in batches:
        ids = torch.tensor(prompts(b, a.prompt, c["vocab_size"]), device=dev)
        generate_plain(m, c, ids, a.warmup)
        if dev.type == "cuda":
            torch.cuda.reset_peak_memory_stats(dev)
        out, secs, cpu = timed(lambda: generate_plain(m, c, ids, a.new), dev)
        r = {"batch": b, "prompt": a.prompt, "new": a.new, "seconds": secs, "cpu_s": cpu,
             "tokens_per_s": out.numel() / secs}
        if dev.type == "cuda":
            r["peak_cuda_bytes"] = torch.cuda.max_memory_allocated(dev)
        res.append(r)
    del m
    return {"side": "pytorch", "torch": torch.__version__, "results": res}


def side_transformers(a, dev, batches):
    try:
        import transformers
        from transformers import AutoModelForCausalLM
    except Exception as e:  # not installed (Debian's python3-torch has no transformers)
        return {"side": "transformers", "skipped": f"transformers not importable: {e}"}
    v5 = int(transformers.__version__.split(".")[0]) >= 5
    m = AutoModelForCausalLM.from_pretrained(a.model, **{"dtype" if v5 else "torch_dtype": "auto"}).to(dev).eval()
    res = []
    for b in batches:
        ids = torch.tensor(prompts(b, a.prompt, m.config.vocab_size), device=dev)
        mask = torch.ones_like(ids)

        def gen(n):
            with torch.inference_mode():
                return m.generate(input_ids=ids, attention_mask=mask, do_sample=False, max_new_tokens=n,
                                  min_new_tokens=n, pad_token_id=0)
        gen(a.warmup)
        out, secs, _ = timed(lambda: gen(a.new), dev)
        n = (out.shape[1] - a.prompt) * b
        res.append({"batch": b, "prompt": a.prompt, "new": a.new, "seconds": secs, "tokens_per_s": n / secs})
    return {"side": "transformers", "transformers": transformers.__version__, "results": res}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--batches", default="1,16,64")
    ap.add_argument("--prompt", type=int, default=128)
    ap.add_argument("--new", type=int, default=128)
    ap.add_argument("--warmup", type=int, default=8)
    ap.add_argument("--sides", default="pytorch,transformers")
    ap.add_argument("--threads", type=int, default=0, help="torch.set_num_threads (0: PyTorch's default)")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    if a.threads:
        torch.set_num_threads(a.threads)
    dev = torch.device(a.device)
    if dev.type == "cuda":
        dev = torch.device("cuda", dev.index or 0)  # set_device refuses a bare "cuda"
        torch.cuda.set_device(dev)
    batches = [int(x) for x in a.batches.split(",")]
    sides = {"pytorch": side_plain, "transformers": side_transformers}
    out = {"device": str(dev), "sides": []}
    for name in a.sides.split(","):
        try:
            out["sides"].append(sides[name](a, dev, batches))
        except Exception as e:  # one side's failure must not lose the other's figures
            out["sides"].append({"side": name, "error": f"{type(e).__name__}: {e}"})
        with open(a.out, "w") as f:
            json.dump(out, f, indent=2)
    print(json.dumps(out))


if __name__ == "__main__":
    main()
