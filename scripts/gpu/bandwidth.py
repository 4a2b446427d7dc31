"""The memory-bandwidth arithmetic of the decode benchmarks (scripts/gpu/summary.py,
scripts/bench_rollout.py): a device's peak bandwidth and what a decoder's weights and KV cache weigh.
"""
import os

# Peak memory bandwidth in GB/s by device name (the first key the name contains).
PEAKS = [("H200", 4800), ("H100 PCIe", 2000), ("H100", 3350), ("A100-SXM4-80GB", 2039), ("A100 80GB", 2039),
         ("A100", 1555)]


def peak_bandwidth(name):
    """Bytes/s: PEAK_BW_GBS when set, else the table's entry for the device name; None if unknown."""
    if os.environ.get("PEAK_BW_GBS"):
        return float(os.environ["PEAK_BW_GBS"]) * 1e9
    for key, gbs in PEAKS:
        if key in name:
            return gbs * 1e9
    return None


def model_bytes(c):
    """A Qwen2/Llama/Qwen3 config.json's parameters, their bytes in bf16 and the KV-cache bytes per
    token: (params, weight_bytes, kv_bytes). A tied embedding counts once (the head's read); Qwen2
    has q/k/v biases."""
    h, i, n, v = c["hidden_size"], c["intermediate_size"], c["num_hidden_layers"], c["vocab_size"]
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
    d = c.get("head_dim") or h // heads
    bias = c.get("model_type") == "qwen2"
    attn = h * heads * d + 2 * h * kv * d + heads * d * h + ((heads + 2 * kv) * d if bias else 0)
    layer = attn + 3 * h * i + 2 * h
    params = v * h + n * layer + h + (0 if c.get("tie_word_embeddings") else v * h)
    return params, 2 * params, n * 2 * kv * d * 2
