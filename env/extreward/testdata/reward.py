#!/usr/bin/env python3
"""A reward function as users write one: reads a trajectory record (docs/rewards.md) on stdin,
prints its scores as JSON. Standard library only.

reward       1.0 when the final assistant message contains the ground truth, else 0.0
turn_rewards the number of tool calls of each turn
metrics      turns, output_tokens

Flags make it misbehave for the tests: --sleep S, --exit N, --garbage, --bad-field, --score.
"""
import json
import sys
import time

args = sys.argv[1:]
if "--sleep" in args:
    time.sleep(float(args[args.index("--sleep") + 1]))
if "--exit" in args:
    print("reward.py: the judge is unavailable", file=sys.stderr)
    sys.exit(int(args[args.index("--exit") + 1]))
if "--garbage" in args:
    print("not json")
    sys.exit(0)
if "--bad-field" in args:
    print(json.dumps({"reward": "high"}))
    sys.exit(0)
if "--score" in args:
    print(json.dumps({"score": 1.0}))
    sys.exit(0)

rec = json.load(sys.stdin)
turns = rec["turns"]
final = ""
if turns:
    final = rec["messages"][turns[-1]["messages"][0]]["content"]
print(json.dumps({
    "reward": 1.0 if rec["ground_truth"] and rec["ground_truth"] in final else 0.0,
    "turn_rewards": [t["info"]["tool_calls"] for t in turns],
    "metrics": {"turns": len(turns), "output_tokens": rec["output_tokens"]},
}))
