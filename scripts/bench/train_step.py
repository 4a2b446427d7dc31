#!/usr/bin/python3
"""The PyTorch side of the training-update benchmark (scripts/bench/train_step.sh, figures in
docs/bench/grpo.md).

The same update as scripts/bench/trainstep (the Go side), written the way a PyTorch user writes it:
a Qwen2 decoder as nn.Modules (RMSNorm in float32, RoPE with rotate_half, grouped key/value heads
repeated, the same scaled-dot-product attention op as the shim, SwiGLU), the head over every scored
position at once in float32, cross-entropy, loss.backward() and torch.optim.AdamW. It loads the
weights and token ids that `trainstep -init` wrote and answers the same commands on stdin with the
same JSON lines (see scripts/bench/trainstep/main.go).

Run it with Debian's /usr/bin/python3 (python3-torch 1.13, the libtorch the shim links) and with
-P or from another directory: the checkout's torch/ folder would shadow the torch package. On a GPU
host (--device cuda, scripts/gpu/run.sh) it runs under the PyTorch 2.x there, the model in the
checkpoint's dtype, each phase ended by a synchronisation.
"""
import argparse
import json
import math
import os
import resource
import struct
import sys
import time

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

DTYPES = {"F32": np.float32, "F64": np.float64, "I64": np.int64, "BF16": np.int16}


def load_safetensors(path):
    """A minimal safetensors reader: the file's tensors as torch tensors (F32, F64, I64, BF16)."""
    with open(path, "rb") as f:
        raw = f.read()
    (n,) = struct.unpack("<Q", raw[:8])
    header = json.loads(raw[8:8 + n])
    data = memoryview(raw)[8 + n:]
    out = {}
    for name, info in header.items():
        if name == "__metadata__":
            continue
        if info["dtype"] not in DTYPES:
            raise SystemExit(f"{path}: {name}: dtype {info['dtype']} not handled (export float32)")
        b, e = info["data_offsets"]
        arr = np.frombuffer(data[b:e], dtype=DTYPES[info["dtype"]]).reshape(info["shape"])
        t = torch.from_numpy(arr.copy())
        out[name] = t.view(torch.bfloat16) if info["dtype"] == "BF16" else t
    return out


class RMSNorm(nn.Module):
    def __init__(self, n, eps):
        super().__init__()
        self.weight = nn.Parameter(torch.ones(n))
        self.eps = eps

    def forward(self, x):
        xf = x.float()
        xf = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + self.eps)
        return self.weight * xf.to(x.dtype)


def sdpa(q, k, v, mask, causal=None):
    """Scaled-dot-product attention, causal when mask is None unless causal says otherwise: the
    public op of PyTorch 2.x, the private one of 1.13 (the same kernel the shim calls there)."""
    causal = mask is None if causal is None else causal
    if hasattr(F, "scaled_dot_product_attention"):
        return F.scaled_dot_product_attention(q, k, v, attn_mask=mask, is_causal=causal)
    return F._scaled_dot_product_attention(q, k, v, mask, 0.0, False, causal)[0]


def rotate_half(x):
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), dim=-1)


def repeat_kv(x, rep):
    if rep == 1:
        return x
    b, h, t, d = x.shape
    return x[:, :, None].expand(b, h, rep, t, d).reshape(b, h * rep, t, d)


class Attention(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.heads, self.kv = c["num_attention_heads"], c["num_key_value_heads"]
        self.d = c["hidden_size"] // self.heads
        h = c["hidden_size"]
        self.q_proj = nn.Linear(h, self.heads * self.d, bias=True)
        self.k_proj = nn.Linear(h, self.kv * self.d, bias=True)
        self.v_proj = nn.Linear(h, self.kv * self.d, bias=True)
        self.o_proj = nn.Linear(self.heads * self.d, h, bias=False)

    def forward(self, x, cos, sin, mask):
        b, t, _ = x.shape
        q = self.q_proj(x).view(b, t, self.heads, self.d).transpose(1, 2)
        k = self.k_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        v = self.v_proj(x).view(b, t, self.kv, self.d).transpose(1, 2)
        q, k = q * cos + rotate_half(q) * sin, k * cos + rotate_half(k) * sin
        rep = self.heads // self.kv
        k, v = repeat_kv(k, rep), repeat_kv(v, rep)
        o = sdpa(q, k, v, mask)
        return self.o_proj(o.transpose(1, 2).reshape(b, t, -1))


class MLP(nn.Module):
    def __init__(self, c):
        super().__init__()
        h, i = c["hidden_size"], c["intermediate_size"]
        self.gate_proj = nn.Linear(h, i, bias=False)
        self.up_proj = nn.Linear(h, i, bias=False)
        self.down_proj = nn.Linear(i, h, bias=False)

    def forward(self, x):
        return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))


class Layer(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.input_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.self_attn = Attention(c)
        self.post_attention_layernorm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        self.mlp = MLP(c)

    def forward(self, x, cos, sin, mask):
        h = x + self.self_attn(self.input_layernorm(x), cos, sin, mask)
        return h + self.mlp(self.post_attention_layernorm(h))


class Qwen2Model(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.embed_tokens = nn.Embedding(c["vocab_size"], c["hidden_size"], padding_idx=c.get("pad_token_id"))
        self.layers = nn.ModuleList(Layer(c) for _ in range(c["num_hidden_layers"]))
        self.norm = RMSNorm(c["hidden_size"], c["rms_norm_eps"])
        d = c["hidden_size"] // c["num_attention_heads"]
        self.inv_freq = 1.0 / (c["rope_theta"] ** (torch.arange(0, d, 2, dtype=torch.float32) / d))

    def forward(self, ids, mask):
        """The final hidden states before the norm (the norm goes with the head below). mask is None
        (every row one whole sequence: causal) or the bool attention mask [B, 1, T, T]."""
        x = self.embed_tokens(ids)
        freqs = torch.outer(torch.arange(ids.shape[1], dtype=torch.float32, device=ids.device),
                            self.inv_freq.to(ids.device))
        emb = torch.cat((freqs, freqs), dim=-1)
        cos, sin = emb.cos().to(x.dtype), emb.sin().to(x.dtype)
        for layer in self.layers:
            x = layer(x, cos, sin, mask)
        return x


class Qwen2ForCausalLM(nn.Module):
    """Module names as transformers', so the checkpoint's names load as they are."""

    def __init__(self, c):
        super().__init__()
        self.model = Qwen2Model(c)
        self.lm_head = nn.Linear(c["hidden_size"], c["vocab_size"], bias=False)
        if c.get("tie_word_embeddings"):
            self.lm_head.weight = self.model.embed_tokens.weight

    def loss(self, batch):
        """Mean negative log-likelihood of every sequence's tokens after its first: the head over
        all positions but the last (padding included, as a padded batch does), float32 log-softmax
        over the vocabulary (cross-entropy, padding ignored)."""
        x = self.model(batch.ids, batch.mask)
        logits = self.lm_head(self.model.norm(x[:, :-1])).float()
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), batch.targets.reshape(-1), ignore_index=-100)


class Batch:
    """Sequences right-padded to the longest, with the mask a padded batch needs (none when all
    have the same length) and the targets (-100 at padding)."""

    def __init__(self, seqs, device="cpu"):
        lens = [len(s) for s in seqs]
        t = max(lens)
        self.tokens = sum(lens)
        self.ids = torch.zeros(len(seqs), t, dtype=torch.int64)
        for i, s in enumerate(seqs):
            self.ids[i, :len(s)] = torch.tensor(s)
        n = torch.tensor(lens)
        self.targets = self.ids[:, 1:].masked_fill(torch.arange(1, t)[None, :] >= n[:, None], -100)
        self.mask = None
        if min(lens) != t:
            i, j = torch.arange(t)[:, None], torch.arange(t)[None, :]
            self.mask = ((j <= i) & (j < n[:, None, None]))[:, None]
        self.ids, self.targets = self.ids.to(device), self.targets.to(device)
        if self.mask is not None:
            self.mask = self.mask.to(device)


def status_kb(name):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(name + ":"):
                return int(line.split()[1])
    raise SystemExit(f"no {name} in /proc/self/status")


def cpu_seconds():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def profile(m, opt, batch):
    def step():
        opt.zero_grad(set_to_none=True)
        m.loss(batch).backward()
        opt.step()

    step()
    with torch.autograd.profiler.profile() as prof:
        step()
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=20))


def reply(obj):
    print(json.dumps(obj), flush=True)


def adamw(m, a):
    """torch.optim.AdamW as the side asks for it, and the side's name."""
    kw = dict(lr=a.lr, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.01)
    if not a.fused:
        return torch.optim.AdamW(m.parameters(), **kw), "pytorch"
    try:
        opt = torch.optim.AdamW(m.parameters(), fused=True, **kw)
        if a.device == "cpu" and tuple(int(x) for x in torch.__version__.split(".")[:2]) < (2, 4):
            raise RuntimeError("no fused AdamW on the CPU before 2.4")
        return opt, "pytorch_fused"
    except (RuntimeError, TypeError):
        return torch.optim.AdamW(m.parameters(), foreach=True, **kw), "pytorch_foreach"


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--model", required=True, help="directory written by trainstep -init")
    ap.add_argument("--threads", type=int, default=1, help="torch.set_num_threads")
    ap.add_argument("--lr", type=float, default=1e-5)
    ap.add_argument("--device", default="cpu", help="cpu, cuda or cuda:N")
    ap.add_argument("--fused", action="store_true",
                    help="AdamW(fused=True), side pytorch_fused; where this PyTorch has no fused AdamW for "
                         "the device (before 2.4 on the CPU), AdamW(foreach=True), side pytorch_foreach")
    ap.add_argument("--profile", action="store_true",
                    help="instead of the protocol: one warm-up step, then one step under the autograd profiler, "
                         "and print its per-op table (the Go side runs the same ATen ops)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with open(os.path.join(a.model, "config.json")) as f:
        c = json.load(f)
    m = Qwen2ForCausalLM(c)
    sd = load_safetensors(os.path.join(a.model, "model.safetensors"))
    dtype = sd["model.embed_tokens.weight"].dtype  # the model trains in the checkpoint's dtype
    missing, unexpected = m.load_state_dict(sd, strict=False)
    missing = [k for k in missing if k != "lm_head.weight" or not c.get("tie_word_embeddings")]
    if missing or unexpected:
        raise SystemExit(f"weights: missing {missing}, unexpected {unexpected}")
    del sd  # the file's copy; the model holds its own
    dev = torch.device(a.device)
    cuda = dev.type == "cuda"
    m = m.to(device=dev, dtype=dtype)
    sync = torch.cuda.synchronize if cuda else (lambda: None)
    with open(os.path.join(a.model, "ids.json")) as f:
        batch = Batch(json.load(f), dev)
    if a.profile:
        opt, _ = adamw(m, a)
        profile(m, opt, batch)
        return
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")
    base = status_kb("VmRSS")
    if cuda:
        torch.cuda.reset_peak_memory_stats(dev)
        cuda_base = torch.cuda.memory_allocated(dev)
    opt, side = adamw(m, a)
    reply({"ready": True, "side": side, "threads": a.threads,
           "openblas_threads": os.environ.get("OPENBLAS_NUM_THREADS", ""), "tokens": batch.tokens,
           "base_rss_mb": base / 1024, "config": f"torch {torch.__version__} {dtype} {dev}"})
    for line in sys.stdin:
        cmd = line.strip()
        if cmd == "step":
            c0, t0 = cpu_seconds(), time.perf_counter()
            opt.zero_grad(set_to_none=True)
            loss = m.loss(batch)
            lv = loss.item()
            t1 = time.perf_counter()
            loss.backward()
            sync()
            t2 = time.perf_counter()
            opt.step()
            sync()
            t3 = time.perf_counter()
            reply({"wall_s": t3 - t0, "cpu_s": cpu_seconds() - c0, "forward_s": t1 - t0, "backward_s": t2 - t1,
                   "optimizer_s": t3 - t2, "loss": lv})
        elif cmd == "done":
            res = {"peak_growth_mb": (status_kb("VmHWM") - base) / 1024}
            if cuda:
                res["peak_cuda_mb"] = (torch.cuda.max_memory_allocated(dev) - cuda_base) / 2**20
            reply(res)
            return
        else:
            raise SystemExit(f"unknown command {cmd!r} (step, done)")


if __name__ == "__main__":
    main()
