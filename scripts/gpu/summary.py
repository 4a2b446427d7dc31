#!/usr/bin/env python3
"""The figures of scripts/gpu/run.sh (docs/bench/gpu.md says how to read them).

  summary.py decode OUT   decode-mtgrpo.json + decode-python.json -> result lines: tokens/s of each
                          side and batch, the fraction of the memory-bandwidth bound reached, the
                          engine's CUDA graphs (capture time, pool size, tokens equal to eager)
  summary.py update OUT   update-raw.jsonl (interleave.py's replies) -> result lines: median step
                          time and phases of each side, tokens/s, peak CUDA memory, the ratio
  summary.py train OUT    results.jsonl + train-RUN-plan.json -> result lines: each run's plan, its
                          measured peak over the plan's, the single process's update time over
                          the data-parallel one's
  summary.py plan OUT RUN 7b-RUN-plan.json (mtgrpo plan --json) -> result lines: the plan of part
                          7b's RUN by category, in GiB
  summary.py 7b OUT       results.jsonl -> OUT/7b.md (part 7b's tables) and result lines: each
                          run's measured peaks over the plan's
  summary.py table OUT    results.jsonl -> OUT/summary.md (printed too)
  summary.py check OUT [PARTS]  exits 1, naming them, when figures every complete run of PARTS
                          (comma-separated; default all but 7b) gives are missing

The bandwidth bound of greedy decoding: the first token comes from the prefill; each of the other
new - 1 steps must read every weight once and the KV cache of every sequence so far, so step s
(1 <= s < new) reads W + batch * (prompt + s) * kv bytes, W = 2 bytes x parameters (bf16; a tied
embedding counted once, as the head's read), kv = layers x 2 x kv_heads x head_dim x 2 bytes per
token. The ideal time is the sum over the steps divided by the peak bandwidth (PEAK_BW_GBS, else
the device's name: H100 SXM 3350, H100 PCIe 2000, H200 4800, A100 80GB 2039, A100 40GB 1555 GB/s).
The measured time includes the prefill, so the fraction is conservative. No bound on the CPU.
"""
import json
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))  # run as python -P: no script dir
from bandwidth import model_bytes, peak_bandwidth  # noqa: E402


def line(part, key, value, unit=""):
    print(json.dumps({"part": part, "key": key, "value": value, "unit": unit}))


def device_bandwidth(device):
    """The peak bandwidth of the GPU the decode ran on (None on the CPU or for an unknown GPU)."""
    if os.environ.get("PEAK_BW_GBS") or not device.startswith("cuda"):
        return peak_bandwidth("")
    import torch
    return peak_bandwidth(torch.cuda.get_device_name(0))


def decode(out):
    with open(os.path.join(out, "model", "config.json")) as f:
        _, w, kvb = model_bytes(json.load(f))
    sides = []
    try:
        with open(os.path.join(out, "decode-mtgrpo.json")) as f:
            g = json.load(f)
        sides += g["sides"]
        device = g.get("device", "cpu")
    except (OSError, ValueError) as e:
        line("decode", "mtgrpo.error", str(e))
        device = "cpu"
    try:
        with open(os.path.join(out, "decode-python.json")) as f:
            sides += json.load(f)["sides"]
    except (OSError, ValueError) as e:
        line("decode", "python.error", str(e))
    bw = device_bandwidth(device)
    if bw:
        line("decode", "peak_bandwidth", bw / 1e9, "GB/s")
    rates = {}
    for s in sides:
        name = s["side"]
        for k in ("skipped", "error"):
            if k in s:
                line("decode", f"{name}.{k}", s[k])
        for r in s.get("results", []):
            b, p, n = r["batch"], r["prompt"], r["new"]
            rates[name, b] = r["tokens_per_s"]
            line("decode", f"{name}.batch{b}.tokens_per_s", round(r["tokens_per_s"], 1), "tok/s")
            for k in ("forward_s", "sample_s", "capture_s"):
                if k in r:
                    line("decode", f"{name}.batch{b}.{k}", round(r[k], 3), "s")
            for k in ("steps", "static_steps", "captures"):
                if k in r:
                    line("decode", f"{name}.batch{b}.{k}", r[k])
            if "graph_pool_bytes" in r:
                line("decode", f"{name}.batch{b}.graph_pool_gb", round(r["graph_pool_bytes"] / 2**30, 3), "GiB")
            if "tokens_equal" in r:
                line("decode", f"{name}.batch{b}.tokens_equal", r["tokens_equal"])
            if "peak_cuda_bytes" in r:
                line("decode", f"{name}.batch{b}.peak_cuda_gb", round(r["peak_cuda_bytes"] / 2**30, 3), "GiB")
            if bw:
                ideal = sum(w + b * (p + s_) * kvb for s_ in range(1, n)) / bw
                line("decode", f"{name}.batch{b}.bandwidth_fraction", round(ideal / r["seconds"], 3))
    for (name, b), r in sorted(rates.items()):
        if name != "mtgrpo" and ("mtgrpo", b) in rates:
            line("decode", f"mtgrpo_over_{name}.batch{b}", round(rates["mtgrpo", b] / r, 3), "x")


def update(out):
    steps, ready, done = {}, {}, {}
    path = os.path.join(out, "update-raw.jsonl")
    if not os.path.exists(path):
        line("update", "error", "no update-raw.jsonl: the benchmark did not start")
        return
    with open(path) as f:
        for raw in f:
            r = json.loads(raw)
            side = r.get("side") or ("mtgrpo" if os.path.basename(r["argv"]) == "trainstep" else "pytorch")
            if r.get("ready"):
                ready[side] = r
            elif "wall_s" in r:
                steps.setdefault(side, []).append(r)
            else:
                done[side] = r
    # interleave.py counts the warm-up steps' replies in the raw file too: the first is left out.
    for side, rs in steps.items():
        rs = rs[1:] or rs
        med = lambda k: statistics.median(x[k] for x in rs)
        line("update", f"{side}.step_s", round(med("wall_s"), 4), "s")
        for k in ("forward_s", "backward_s", "optimizer_s"):
            line("update", f"{side}.{k}", round(med(k), 4), "s")
        line("update", f"{side}.tokens_per_s", round(ready[side]["tokens"] / med("wall_s"), 1), "tok/s")
        if "peak_cuda_mb" in done.get(side, {}):
            line("update", f"{side}.peak_cuda_gb", round(done[side]["peak_cuda_mb"] / 1024, 3), "GiB")
        # The CUDA allocator's counters and the host syncs per step (trainstep reports them).
        for k in ("cuda_allocs", "cuda_mallocs", "cuda_alloc_retries", "host_syncs"):
            if k in rs[0]:
                line("update", f"{side}.{k}", statistics.median(x[k] for x in rs), "per step")
        steps[side] = rs
    for ref in ("pytorch", "pytorch_fused", "pytorch_foreach"):
        if "mtgrpo" in steps and ref in steps:
            a = statistics.median(x["wall_s"] for x in steps["mtgrpo"])
            b = statistics.median(x["wall_s"] for x in steps[ref])
            line("update", f"mtgrpo_over_{ref}.step_time", round(a / b, 3), "x")


def train(out):
    """Part train's figures beside each other: each run's plan (train-RUN-plan.json) and its
    measured peak over the plan's (the CUDA allocator's peak over the last step, rollout and
    update, against the plan's larger phase; on the CPU no peak is measured), and the single
    process's update time over the data-parallel one's at world size 1."""
    got = results(out)
    g = lambda k: got.get(("train", k))
    for run in ("single", "eager", "dp", "zero1"):
        path = os.path.join(out, f"train-{run}-plan.json")
        if not os.path.exists(path):
            continue
        with open(path) as f:
            p = json.load(f)["bytes"]
        for k in ("activations", "logits", "step_grads", "peak_rollout", "peak_train", "peak"):
            line("train", f"{run}.plan.{k}_gib", round(p[k] / GIB, 3), "GiB")
        peak = g(f"{run}.last.perf/max_memory_allocated_gb")
        if peak is not None and p["peak"]:
            line("train", f"{run}.peak_allocated_over_plan", round(peak * GIB / p["peak"], 3), "x")
    a, b = g("single.last.timing_s/update_actor"), g("dp.last.timing_s/update_actor")
    if a is not None and b:
        line("train", "single_over_dp.update_actor", round(a / b, 3), "x")


GIB = 2**30
# The plan's categories (mtgrpo plan --json's "bytes") in the order of its table, and their labels.
PLAN_ROWS = [("weights", "weights"), ("adapters", "LoRA adapters (fp32)"), ("grads", "gradients"),
             ("masters", "master weights (fp32)"), ("moments", "AdamW moments (fp32)"),
             ("comm", "gradient buckets"), ("reference", "reference model"), ("kv_cache", "KV cache"),
             ("cuda_graph_pool", "decode step: CUDA graph pool (est.)"), ("persistent", "= persistent"), ("activations", "activations (as configured)"),
             ("head_budget", "head: whole logits up to (budget)"), ("logits_tensor", "head: largest logits tensor (fp32)"),
             ("logits", "head: logits at the pass's peak"), ("step_grads", "AdamW step's fp32 gradients"), ("peak_rollout", "= peak, rollout"),
             ("peak_train", "= peak, training"), ("peak", "= peak")]


def plan(out, run):
    with open(os.path.join(out, f"7b-{run}-plan.json")) as f:
        p = json.load(f)
    for k, _ in PLAN_ROWS:
        line("7b", f"{run}.plan.{k}_gib", round(p["bytes"][k] / GIB, 3), "GiB")
    line("7b", f"{run}.plan.device_gib", round(p["device_bytes"] / GIB, 3), "GiB")
    line("7b", f"{run}.plan.gradient_checkpointing", p["gradient_checkpointing"])
    line("7b", f"{run}.plan.micro_tokens", p["micro_tokens"], "tokens")
    line("7b", f"{run}.plan.fits", p["fits"])


def results(out):
    got = {}
    with open(os.path.join(out, "results.jsonl")) as f:
        for raw in f:
            if raw.strip():
                r = json.loads(raw)
                got[r["part"], r["key"]] = r["value"]
    return got


def fmt(v, spec):
    return "" if v is None else format(v, spec)


def part7b(out):
    """Part 7b's two tables in docs/bench/gpu.md's layout, and each run's measured peak over the
    plan's (the CUDA allocator's peak over the step, rollout and update, against the plan's
    larger phase)."""
    got = results(out)
    runs = [r for r in ("full", "lora") if ("7b", f"{r}.run") in got]
    g = lambda run, k: got.get(("7b", f"{run}.{k}"))
    t1 = ["| run | settings | step s | gen s | old log-prob s | update_actor s | tokens/s | peak allocated GiB "
          "| peak reserved GiB | plan peak GiB | allocated / plan | reserved / plan | logprob diff mean / max |",
          "|" + "---|" * 13]
    for run in runs:
        plan_peak = g(run, "plan.peak_gib")
        ck = "on" if g(run, "plan.gradient_checkpointing") else "off"
        settings = f"checkpointing {ck}, micro {g(run, 'plan.micro_tokens')} tokens"
        if g(run, "run") != "ran":
            t1.append(f"| {run} | {settings} | {g(run, 'run')}: plan {fmt(plan_peak, '.1f')} GiB "
                      f"of {fmt(g(run, 'plan.device_gib'), '.1f')} GiB |" + " |" * 10)
            continue
        last = lambda k: g(run, f"last.{k}")
        alloc, res = last("perf/max_memory_allocated_gb"), last("perf/max_memory_reserved_gb")
        for name, v in (("allocated", alloc), ("reserved", res)):
            if v is not None and plan_peak:
                line("7b", f"{run}.peak_{name}_over_plan", round(v / plan_peak, 3), "x")
        ratio = lambda v: fmt(v / plan_peak if v is not None and plan_peak else None, ".2f")
        diff = f"{fmt(last('rollout_corr/logprob_abs_diff_mean'), '.4f')} / {fmt(last('rollout_corr/logprob_abs_diff_max'), '.3f')}"
        t1.append(f"| {run} | {settings} | {fmt(last('timing_s/step'), '.2f')} | {fmt(last('timing_s/gen'), '.2f')} "
                  f"| {fmt(last('timing_s/old_log_prob'), '.2f')} | {fmt(last('timing_s/update_actor'), '.2f')} "
                  f"| {fmt(last('perf/throughput'), ',.0f')} | {fmt(alloc, '.1f')} | {fmt(res, '.1f')} "
                  f"| {fmt(plan_peak, '.1f')} | {ratio(alloc)} | {ratio(res)} | {diff} |")
    t2 = ["| plan, GiB | " + " | ".join(runs) + " |", "|---|" + "---:|" * len(runs)]
    for k, label in PLAN_ROWS:
        t2.append(f"| {label} | " + " | ".join(fmt(g(r, f"plan.{k}_gib"), ".2f") for r in runs) + " |")
    text = "\n".join(t1) + "\n\n" + "\n".join(t2) + "\n"
    with open(os.path.join(out, "7b.md"), "w") as f:
        f.write(text)


# The figures a complete run gives (scripts/gpu/run.sh --dry-run must give them all).
EXPECTED = [("shim", "status", "ok"), ("tests", "status", "ok"), ("train", "status", "ok"),
            ("decode", "status", "ok"), ("update", "status", "ok")] + [
    ("train", f"{run}.last.{k}", None) for run in ("single", "eager", "dp", "zero1")
    for k in ("timing_s/step", "timing_s/gen", "timing_s/update_actor", "rollout_corr/logprob_abs_diff_mean")] + [
    ("decode", f"{side}.batch1.tokens_per_s", None) for side in ("mtgrpo", "mtgrpo_eager", "pytorch")] + [
    ("decode", "mtgrpo_eager.batch1.tokens_equal", True)] + [
    ("update", f"{side}.step_s", None) for side in ("mtgrpo", "pytorch")] + [
    ("update", "mtgrpo_over_pytorch.step_time", None), ("train", "single.plan.peak_gib", None),
    ("train", "single_over_dp.update_actor", None), ("7b", "status", "ok")] + [
    ("7b", f"{run}.{k}", None) for run in ("full", "lora") for k in ("run", "plan.peak_gib", "plan.fits")]
# Part 7b's figures of a run that ran (a run that no candidate fits has only its plan).
EXPECTED_7B_RAN = ["timing_s/step", "timing_s/gen", "timing_s/old_log_prob", "timing_s/update_actor", "perf/throughput",
                   "rollout_corr/logprob_abs_diff_mean"]


def check(out, parts="shim,tests,train,decode,update"):
    got = results(out)
    parts = parts.split(",")
    want = [e for e in EXPECTED if e[0] in parts]
    if "7b" in parts:
        want += [("7b", f"{run}.last.{k}", None) for run in ("full", "lora")
                 if got.get(("7b", f"{run}.run")) == "ran" for k in EXPECTED_7B_RAN]
    if "update" in parts and not any(("update", f"mtgrpo_over_pytorch_{a}.step_time") in got for a in ("fused", "foreach")):
        want.append(("update", "mtgrpo_over_pytorch_fused.step_time", None))  # nor foreach where PyTorch has no fused one
    bad = [f"{p} {k}" + (f" = {got.get((p, k))!r}, want {v!r}" if (p, k) in got else " missing")
           for p, k, v in want if (p, k) not in got or (v is not None and got[p, k] != v)]
    if bad:
        raise SystemExit("gpu/run: incomplete results:\n  " + "\n  ".join(bad))


def table(out):
    rows = []
    with open(os.path.join(out, "results.jsonl")) as f:
        for raw in f:
            if raw.strip():
                rows.append(json.loads(raw))
    lines = ["| part | figure | value | unit |", "|---|---|---|---|"]
    for r in rows:
        v = r["value"]
        if isinstance(v, float):
            v = f"{v:.6g}"
        lines.append(f"| {r['part']} | {r['key']} | {v} | {r.get('unit', '')} |")
    text = "\n".join(lines) + "\n"
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(text)
    print(text, end="")


if __name__ == "__main__":
    cmds = {"decode": decode, "update": update, "train": train, "table": table, "check": check, "plan": plan, "7b": part7b}
    if len(sys.argv) not in (3, 4) or sys.argv[1] not in cmds:
        raise SystemExit("usage: summary.py train|decode|update|table|7b OUT | check OUT [PARTS] | plan OUT RUN")
    cmds[sys.argv[1]](*sys.argv[2:])
