#!/usr/bin/env python3
"""Our parquet read by pyarrow and pandas: `mtgrpo data gen` writes the same rows as parquet and as
JSONL for several tasks; pyarrow and pandas must read every parquet file, and each row pyarrow reads
must equal the JSONL row (nulls dropped). Run where pyarrow and pandas are installed:

    python3 read_with_pyarrow.py PATH/TO/mtgrpo [DIR]

Exits non-zero on the first file that does not read or any row that differs.
"""
import json
import os
import subprocess
import sys
import tempfile

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

TASKS = ("gsm8k", "countdown", "frozenlake", "wiki_qa")


def without_nulls(x):
    if isinstance(x, dict):
        return {k: without_nulls(v) for k, v in x.items() if v is not None}
    if isinstance(x, list):
        return [without_nulls(v) for v in x]
    return x


def main():
    mtgrpo = sys.argv[1]
    out = sys.argv[2] if len(sys.argv) > 2 else tempfile.mkdtemp()
    os.makedirs(out, exist_ok=True)
    print("pyarrow", pa.__version__, "pandas", pd.__version__)
    ok = True
    for task in TASKS:
        paths = {ext: os.path.join(out, f"gen-{task}.{ext}") for ext in ("parquet", "jsonl")}
        for path in paths.values():
            subprocess.run([mtgrpo, "data", "gen", "--task", task, "--n", "50", "--seed", "3", "--out", path],
                           check=True, capture_output=True)
        table = pq.read_table(paths["parquet"])
        frame = pd.read_parquet(paths["parquet"])
        with open(paths["jsonl"]) as f:
            want = [without_nulls(json.loads(line)) for line in f]
        got = [without_nulls(r) for r in table.to_pylist()]
        same = sum(a == b for a, b in zip(got, want))
        print(f"{task}: {table.num_rows} rows (pandas {len(frame)}), {same} equal to the JSONL rows")
        print(table.schema)
        if same != len(want) or len(got) != len(want) or len(frame) != len(want):
            ok = False
            i = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), 0)
            print(" parquet:", json.dumps(got[i])[:800] if got else None)
            print(" jsonl:  ", json.dumps(want[i])[:800])
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
