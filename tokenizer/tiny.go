package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// The tiny tokenizer: a complete byte-level BPE tokenizer.json with 256 byte tokens, a few
// hundred merges learned from tinyCorpus, ChatML special tokens and a Qwen-style chat
// template. Tests and the demo model use it; `mtgrpo init` writes it with WriteTiny.

// TinyMerges is the number of merges the tiny tokenizer learns.
const TinyMerges = 300

// tinySpecial are the added tokens, in id order after the learned vocabulary. The first
// three are special (skipped by Decode(ids, true)), as in Qwen3.
var tinySpecial = []struct {
	content string
	special bool
}{
	{"<|endoftext|>", true}, {"<|im_start|>", true}, {"<|im_end|>", true},
	{"<tool_call>", false}, {"</tool_call>", false}, {"<think>", false}, {"</think>", false},
}

// tinyCorpus is what the merges are learned from: chat-style English, arithmetic and tool
// calls, the material of the demo environments.
const tinyCorpus = `You are a helpful assistant. The user asks a question and the assistant answers it.
What is 12 plus 30? The answer is 42. What is 7 times 8? The answer is 56.
Let me think about this step by step. First, add the numbers. Then check the result.
The calculator tool evaluates an arithmetic expression and returns the result.
{"name": "calculator", "arguments": {"expression": "12 + 30"}}
{"name": "search", "arguments": {"query": "capital of France"}}
The capital of France is Paris. The capital of Japan is Tokyo. The capital of Italy is Rome.
Please answer with a single number. The final answer is 17. I think the answer is correct.
def add(a, b):
    return a + b

for i in range(10):
    print(i * i)
The model reads the question, calls a tool when it needs one, and then writes the answer.
It is a good idea to check the answer before you write it. This is the end of the example.
Question: How many days are there in a week? Answer: There are seven days in a week.
Question: What is the sum of 3 and 4? Answer: The sum of 3 and 4 is 7.
The reward is one when the answer is right and zero when it is wrong.`

// tinyChatTemplate is a compact Qwen-style (ChatML) template: system prompt, tools listed
// as JSON in <tools>, assistant tool calls in <tool_call>, tool results as user turns in
// <tool_response>, optional <think> reasoning, and enable_thinking=false's empty think block.
const tinyChatTemplate = `{%- if tools %}
    {{- '<|im_start|>system\n' }}
    {%- if messages[0].role == 'system' %}
        {{- messages[0].content + '\n\n' }}
    {%- endif %}
    {{- '# Tools\n\nYou may call functions. Their signatures are in <tools></tools>:\n<tools>' }}
    {%- for tool in tools %}
        {{- '\n' }}
        {{- tool | tojson }}
    {%- endfor %}
    {{- '\n</tools>\n\nTo call a function, write <tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n' }}
{%- elif messages[0].role == 'system' %}
    {{- '<|im_start|>system\n' + messages[0].content + '<|im_end|>\n' }}
{%- endif %}
{%- for message in messages %}
    {%- if message.role == 'user' or (message.role == 'system' and not loop.first) %}
        {{- '<|im_start|>' + message.role + '\n' + message.content + '<|im_end|>\n' }}
    {%- elif message.role == 'assistant' %}
        {{- '<|im_start|>assistant\n' }}
        {%- if message.reasoning_content is defined and message.reasoning_content %}
            {{- '<think>\n' + message.reasoning_content + '\n</think>\n\n' }}
        {%- endif %}
        {{- message.content }}
        {%- if message.tool_calls %}
            {%- for tool_call in message.tool_calls %}
                {%- if (loop.first and message.content) or (not loop.first) %}
                    {{- '\n' }}
                {%- endif %}
                {%- if tool_call.function %}
                    {%- set tool_call = tool_call.function %}
                {%- endif %}
                {{- '<tool_call>\n{"name": "' + tool_call.name + '", "arguments": ' }}
                {%- if tool_call.arguments is string %}
                    {{- tool_call.arguments }}
                {%- else %}
                    {{- tool_call.arguments | tojson }}
                {%- endif %}
                {{- '}\n</tool_call>' }}
            {%- endfor %}
        {%- endif %}
        {{- '<|im_end|>\n' }}
    {%- elif message.role == 'tool' %}
        {%- if loop.first or (messages[loop.index0 - 1].role != 'tool') %}
            {{- '<|im_start|>user' }}
        {%- endif %}
        {{- '\n<tool_response>\n' + message.content + '\n</tool_response>' }}
        {%- if loop.last or (messages[loop.index0 + 1].role != 'tool') %}
            {{- '<|im_end|>\n' }}
        {%- endif %}
    {%- endif %}
{%- endfor %}
{%- if add_generation_prompt %}
    {{- '<|im_start|>assistant\n' }}
    {%- if enable_thinking is defined and enable_thinking is false %}
        {{- '<think>\n\n</think>\n\n' }}
    {%- endif %}
{%- endif %}`

// TinyFiles returns the tiny tokenizer's tokenizer.json and tokenizer_config.json.
func TinyFiles() (tokenizerJSON, configJSON []byte, err error) {
	merges, tokens := trainBPE(tinyCorpus, TinyMerges)
	var b bytes.Buffer
	b.WriteString("{\n  \"version\": \"1.0\",\n  \"truncation\": null,\n  \"padding\": null,\n  \"added_tokens\": [")
	for i, st := range tinySpecial {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n    {\"id\": %d, \"content\": %s, \"single_word\": false, \"lstrip\": false, "+
			"\"rstrip\": false, \"normalized\": false, \"special\": %v}", len(tokens)+i, jsonString(st.content), st.special)
	}
	b.WriteString("\n  ],\n  \"normalizer\": {\"type\": \"NFC\"},\n")
	fmt.Fprintf(&b, "  \"pre_tokenizer\": {\"type\": \"Sequence\", \"pretokenizers\": [{\"type\": \"Split\", \"pattern\": "+
		"{\"Regex\": %s}, \"behavior\": \"Isolated\", \"invert\": false}, {\"type\": \"ByteLevel\", "+
		"\"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false}]},\n", jsonString(patternQwen))
	b.WriteString("  \"post_processor\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false},\n")
	b.WriteString("  \"decoder\": {\"type\": \"ByteLevel\", \"add_prefix_space\": false, \"trim_offsets\": false, \"use_regex\": false},\n")
	b.WriteString("  \"model\": {\"type\": \"BPE\", \"dropout\": null, \"unk_token\": null, \"continuing_subword_prefix\": \"\", " +
		"\"end_of_word_suffix\": \"\", \"fuse_unk\": false, \"byte_fallback\": false, \"ignore_merges\": false,\n    \"vocab\": {")
	for id, tok := range tokens {
		if id > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n      %s: %d", jsonString(byteLevelString(string(tok))), id)
	}
	b.WriteString("\n    },\n    \"merges\": [")
	for i, m := range merges {
		if i > 0 {
			b.WriteString(",")
		}
		fmt.Fprintf(&b, "\n      [%s, %s]", jsonString(byteLevelString(string(tokens[m[0]]))), jsonString(byteLevelString(string(tokens[m[1]]))))
	}
	b.WriteString("\n    ]\n  }\n}\n")

	cfg := map[string]any{
		"tokenizer_class": "Qwen2Tokenizer", "bos_token": nil, "eos_token": "<|im_end|>",
		"pad_token": "<|endoftext|>", "unk_token": nil, "add_bos_token": false,
		"model_max_length": 32768, "chat_template": tinyChatTemplate,
		"clean_up_tokenization_spaces": false, "split_special_tokens": false,
	}
	var c bytes.Buffer
	enc := json.NewEncoder(&c)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(cfg); err != nil {
		return nil, nil, err
	}
	return b.Bytes(), c.Bytes(), nil
}

func jsonString(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s)
	return strings.TrimSuffix(b.String(), "\n")
}

// WriteTiny writes tokenizer.json and tokenizer_config.json of the tiny tokenizer into dir
// (created if needed).
func WriteTiny(dir string) error {
	tok, cfg, err := TinyFiles()
	if err != nil {
		return err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), tok, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "tokenizer_config.json"), cfg, 0o644)
}
