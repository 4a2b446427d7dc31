#!/usr/bin/env python3
"""Runs benchmark sides step by step in turn and summarises them (scripts/bench/train_step.sh).

Each side is a command that speaks the protocol of scripts/bench/trainstep/main.go on stdin/stdout
(ready; step / done) and names itself in its ready line. For every repetition all sides are started
fresh and do WARMUP untimed steps, then STEPS timed steps, one side after the other in an order that
rotates every step, so that a shared machine's changing load falls on all of them alike. Prints per side the median and range of the wall-clock and CPU
time per step, the phases, tokens/s and the peak memory growth, then every side's per-step ratios
to the last side (the reference) — each step's time over the reference's step taken right next to
it — and writes every reply to --raw as JSON lines.

    interleave.py --reps 3 --steps 4 --raw out.jsonl "COMMAND A" "COMMAND B" ["COMMAND C" ...]
"""
import argparse
import json
import shlex
import statistics
import subprocess
import sys


class Side:
    def __init__(self, argv, raw, rep):
        self.argv, self.raw, self.rep = argv, raw, rep
        self.p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, bufsize=1)
        self.info = self.read()
        if not self.info.get("ready"):
            raise SystemExit(f"{argv[0]}: no ready line: {self.info}")
        self.name = self.info["side"]

    def read(self):
        line = self.p.stdout.readline()
        if not line:
            raise SystemExit(f"{shlex.join(self.argv)} exited (status {self.p.wait()})")
        obj = json.loads(line)
        side = {"side": self.name} if hasattr(self, "name") else {}
        self.raw.write(json.dumps({"rep": self.rep, "argv": self.argv[0], **side, **obj}) + "\n")
        return obj

    def cmd(self, c):
        self.p.stdin.write(c + "\n")
        self.p.stdin.flush()
        return self.read()


def spread(xs):
    return f"{statistics.median(xs):.3f} [{min(xs):.3f}–{max(xs):.3f}]"


def run(cmds, reps, warmup, steps, raw):
    """Returns per side name: its ready line, its timed step replies and its peak growths."""
    out = {}
    for rep in range(reps):
        sides = [Side(shlex.split(c), raw, rep) for c in cmds]
        for s in sides:
            out.setdefault(s.name, {"info": s.info, "steps": [], "peaks": [], "loss": None})
        if len(out) != len(cmds):
            raise SystemExit("two sides have the same name: give them distinct names")
        for i in range(warmup + steps):
            k = (rep + i) % len(sides)
            for s in sides[k:] + sides[:k]:
                r = s.cmd("step")
                if out[s.name]["loss"] is None:
                    out[s.name]["loss"] = r["loss"]
                if i >= warmup:
                    out[s.name]["steps"].append(r)
        for s in sides:
            out[s.name]["peaks"].append(s.cmd("done")["peak_growth_mb"])
            s.p.wait()
        print(f"rep {rep + 1}/{reps} done", file=sys.stderr)
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--warmup", type=int, default=1)
    ap.add_argument("--steps", type=int, default=4)
    ap.add_argument("--raw", default="/dev/null")
    ap.add_argument("cmds", nargs="+", help="command lines of the sides; the last is the reference")
    a = ap.parse_args()
    if len(a.cmds) < 2:
        raise SystemExit("want at least two sides")
    with open(a.raw, "a") as raw:
        out = run(a.cmds, a.reps, a.warmup, a.steps, raw)
    names = list(out)
    info = out[names[-1]]["info"]
    print(f"threads {info['threads']} (intra-op), OPENBLAS_NUM_THREADS={info['openblas_threads'] or 'unset'}, "
          f"{info['tokens']} tokens a step, {a.reps} runs × {a.steps} steps a side (after {a.warmup} warm-up)")
    for n in names:
        print(f"  {n}: {out[n]['info']['config']}; first loss {out[n]['loss']:.6f}")
    print(f"{'side':14} {'wall s/step':>24} {'cpu s/step':>24} {'fwd s':>7} {'bwd s':>7} {'opt s':>7} "
          f"{'tokens/s':>9} {'peak growth MB':>26}")
    for n in names:
        r = out[n]["steps"]
        w = [x["wall_s"] for x in r]
        med = lambda k: statistics.median(x[k] for x in r)
        print(f"{n:14} {spread(w):>24} {spread([x['cpu_s'] for x in r]):>24} {med('forward_s'):7.3f} "
              f"{med('backward_s'):7.3f} {med('optimizer_s'):7.3f} {info['tokens'] / statistics.median(w):9.1f} "
              f"{spread(out[n]['peaks']):>26}")
    ref = names[-1]
    for n in names[:-1]:
        for k in ("cpu_s", "wall_s"):
            ratios = [x[k] / y[k] for x, y in zip(out[n]["steps"], out[ref]["steps"])]
            print(f"{k} per-step ratio {n}/{ref}: median {statistics.median(ratios):.3f} "
                  f"[{min(ratios):.3f}–{max(ratios):.3f}], of the best steps "
                  f"{min(x[k] for x in out[n]['steps']) / min(y[k] for y in out[ref]['steps']):.3f}")


if __name__ == "__main__":
    main()
