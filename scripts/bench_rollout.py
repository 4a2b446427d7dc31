#!/usr/bin/env python3
"""Generation throughput, nano-vllm's protocol: the engine against transformers' generate().

scripts/bench_rollout.sh runs the three steps:

  prepare OUT   OUT/workload.json: 256 sequences, prompt ids uniform in [0, 10000), input and
                output lengths uniform in 100..1024 (seed 0), temperature 0.6, ignore_eos —
                the settings of nano-vllm's bench.py.
  hf OUT        transformers generate() on OUT/model (bf16, CUDA) with the same prompts:
                left-padded batches of --batch sequences; generate() has one max_new_tokens per
                batch, so each batch runs to its longest output (min_new_tokens = max_new_tokens
                stands in for ignore_eos). Counted as nano-vllm counts: the requested output tokens
                (Σ output lengths) over the wall time; the tokens generated beyond a sequence's own
                length are reported as waste. Writes OUT/python.json.
  summary OUT   the memory-bandwidth bound of the workload and the fraction of it each side reached;
                prints and writes OUT/summary.txt.

The bound: every decode step must read the weights once and the KV cache of every running
sequence. With all 256 sequences in the cache from the start (they fit), decode step s reads
W + Σ_{i: out_i > s} (in_i + s)·kv bytes, W = 2 bytes × parameters (bf16; the tied embedding counted
once, as the lm_head read), kv = layers × 2 × kv_heads × head_dim × 2 bytes per token. The ideal
time is Σ_s bytes_s / peak bandwidth; prefill (compute-bound) is left out, so the bound is
optimistic and the fractions conservative. Peak bandwidth: PEAK_BW_GBS, else the device name
(H100 SXM 3350, H100 PCIe 2000, H200 4800, A100 80GB 2039, A100 40GB 1555 GB/s).
"""
import json
import os
import random
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "gpu"))
from bandwidth import model_bytes, peak_bandwidth  # noqa: E402

N, LO, HI, VOCAB_IDS, TEMPERATURE = 256, 100, 1024, 10000, 0.6


def prepare(out):
    rng = random.Random(0)
    ins = [rng.randint(LO, HI) for _ in range(N)]
    outs = [rng.randint(LO, HI) for _ in range(N)]
    prompts = [[rng.randrange(VOCAB_IDS) for _ in range(n)] for n in ins]
    with open(os.path.join(out, "workload.json"), "w") as f:
        json.dump({"prompts": prompts, "max_new": outs, "temperature": TEMPERATURE}, f)
    print(f"workload: {N} sequences, {sum(ins)} prompt tokens, {sum(outs)} output tokens")


def load_workload(out):
    with open(os.path.join(out, "workload.json")) as f:
        return json.load(f)


def hf(out, batch):
    import torch
    import transformers
    from transformers import AutoModelForCausalLM

    w = load_workload(out)
    dev = torch.device("cuda")
    v5 = int(transformers.__version__.split(".")[0]) >= 5
    dtype_kw = {"dtype" if v5 else "torch_dtype": torch.bfloat16}  # 5.x deprecates torch_dtype
    model = AutoModelForCausalLM.from_pretrained(os.path.join(out, "model"), **dtype_kw).to(dev).eval()
    pad = model.config.eos_token_id if isinstance(model.config.eos_token_id, int) else 0

    def run(idx, cap=None):
        prompts = [w["prompts"][i] for i in idx]
        new = max(w["max_new"][i] for i in idx) if cap is None else cap
        width = max(len(p) for p in prompts)
        ids = torch.tensor([[pad] * (width - len(p)) + p for p in prompts], device=dev)
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in prompts], device=dev)
        with torch.no_grad():
            model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=w["temperature"],
                           top_k=0, top_p=1.0, max_new_tokens=new, min_new_tokens=new, pad_token_id=pad)
        return new * len(idx)

    run(list(range(min(8, N))), cap=16)  # warm-up
    torch.cuda.synchronize()
    torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    generated = 0
    for s in range(0, N, batch):
        generated += run(list(range(s, min(N, s + batch))))
    torch.cuda.synchronize()
    wall = time.time() - t0
    useful = sum(w["max_new"])
    res = {"sequences": N, "batch": batch, "output_tokens": useful, "generated_tokens": generated, "seconds": wall,
           "tokens_per_s": useful / wall, "waste_fraction": 1 - useful / generated,
           "peak_allocated_bytes": torch.cuda.max_memory_allocated(), "torch": torch.__version__,
           "device_name": torch.cuda.get_device_name(0)}
    with open(os.path.join(out, "python.json"), "w") as f:
        json.dump(res, f, indent=2)
    print(json.dumps(res, indent=2))


def summary(out):
    w = load_workload(out)
    with open(os.path.join(out, "model", "config.json")) as f:
        c = json.load(f)
    params, weight_bytes, kv_bytes = model_bytes(c)
    ins = [len(p) for p in w["prompts"]]
    outs = w["max_new"]
    total = 0
    for s in range(max(outs)):
        total += weight_bytes + sum((i + s) * kv_bytes for i, o in zip(ins, outs) if o > s)
    lines = []
    py = {}
    if os.path.exists(os.path.join(out, "python.json")):
        with open(os.path.join(out, "python.json")) as f:
            py = json.load(f)
    name = py.get("device_name") or os.environ.get("DEVICE_NAME", "")
    bw = peak_bandwidth(name)
    if bw is None:
        sys.exit(f"unknown device {name!r}: set PEAK_BW_GBS")
    ideal = total / bw
    lines.append(f"device {name}, peak bandwidth {bw / 1e9:.0f} GB/s; model {params / 1e6:.1f}M parameters "
                 f"({weight_bytes / 1e9:.2f} GB), KV {kv_bytes} B/token")
    lines.append(f"workload: {len(ins)} sequences, {sum(ins)} prompt + {sum(outs)} output tokens; decode reads "
                 f"{total / 1e9:.1f} GB -> bound {ideal:.2f} s = {sum(outs) / ideal:.0f} tokens/s")
    for side, fname in (("engine", "go.json"), ("transformers", "python.json")):
        p = os.path.join(out, fname)
        if not os.path.exists(p):
            lines.append(f"{side}: {fname} missing")
            continue
        with open(p) as f:
            r = json.load(f)
        lines.append(f"{side}: {r['output_tokens']} tokens in {r['seconds']:.2f} s = {r['tokens_per_s']:.0f} tokens/s, "
                     f"{ideal / r['seconds']:.1%} of the bandwidth bound; peak memory "
                     f"{r.get('peak_allocated_bytes', 0) / 2**30:.1f} GiB")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.txt"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    cmd, out = sys.argv[1], sys.argv[2]
    if cmd == "prepare":
        prepare(out)
    elif cmd == "hf":
        batch = int(sys.argv[3]) if len(sys.argv) > 3 else 64
        hf(out, batch)
    elif cmd == "summary":
        summary(out)
    else:
        sys.exit(f"unknown step {cmd}")
