// Package tokenizer is a pure-Go implementation of Hugging Face tokenizer.json byte-level BPE
// tokenizers (Qwen2/2.5/3, Llama 3/3.1) and of transformers' chat templates.
package tokenizer
