#!/usr/bin/env python3
"""Writes verl's GSM8K layout (the first two GSM8K train rows) the two ways a verl user's
preprocess does: pyarrow.parquet.write_table and pandas.DataFrame.to_parquet (large_string
columns, pandas metadata). Run where pyarrow and pandas are installed:

    python3 make_pyarrow_fixture.py DIR   # DIR/verl_gsm8k_pyarrow.parquet, DIR/verl_gsm8k_pandas.parquet

The committed files were written by pyarrow 25.0.1 and pandas 3.0.6.
"""
import sys

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

INSTRUCTION = 'Let\'s think step by step and output the final answer after "####".'
GSM8K = [
    ("Natalia sold clips to 48 of her friends in April, and then she sold half as many clips to her friends in May. "
     "How many clips did Natalia sell altogether in April and May?",
     "Natalia sold 48/2 = <<48/2=24>>24 clips in May.\n"
     "Natalia sold 48+24 = <<48+24=72>>72 clips altogether in April and May.\n#### 72", "72"),
    ("Weng earns $12 an hour for babysitting. Yesterday, she just did 50 minutes of babysitting. How much did she earn?",
     "Weng earns 12/60 = $<<12/60=0.2>>0.2 per minute.\n"
     "Working 50 minutes, she earned 0.2 x 50 = $<<0.2*50=10>>10.\n#### 10", "10"),
]


def rows():
    # The dicts of verl's examples/data_preprocess/gsm8k.py, in its key order.
    return [{"data_source": "openai/gsm8k",
             "prompt": [{"role": "user", "content": q + " " + INSTRUCTION}],
             "ability": "math",
             "reward_model": {"style": "rule", "ground_truth": gt},
             "extra_info": {"split": "train", "index": i, "answer": a, "question": q}}
            for i, (q, a, gt) in enumerate(GSM8K)]


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else "."
    pq.write_table(pa.Table.from_pylist(rows()), f"{out}/verl_gsm8k_pyarrow.parquet")
    pd.DataFrame(rows()).to_parquet(f"{out}/verl_gsm8k_pandas.parquet")


if __name__ == "__main__":
    main()
