package tokenizer

// Special-token lookup. Names are resolved through tokenizer_config.json ("bos", "eos",
// "pad", "unk") or a table of the chat markers Qwen and Llama use; any other name is looked
// up as a literal token.
var tokenAliases = map[string][]string{
	"im_start":      {"<|im_start|>"},
	"im_end":        {"<|im_end|>"},
	"endoftext":     {"<|endoftext|>"},
	"tool_call":     {"<tool_call>"},
	"tool_call_end": {"</tool_call>"},
	"tool_response": {"<tool_response>"},
	"think":         {"<think>"},
	"think_end":     {"</think>"},
	"begin_of_text": {"<|begin_of_text|>"},
	"end_of_text":   {"<|end_of_text|>"},
	"eot":           {"<|eot_id|>"},
	"eom":           {"<|eom_id|>"},
	"python_tag":    {"<|python_tag|>"},
	"start_header":  {"<|start_header_id|>"},
	"end_header":    {"<|end_header_id|>"},
}

// chatEndTokens end a turn in the chat formats we know. They join tokenizer_config's
// eos_token in EOSIDs when the vocabulary has them: Qwen3's generation_config lists
// <|im_end|> and <|endoftext|>, Llama 3.1's <|end_of_text|>, <|eom_id|> and <|eot_id|>.
var chatEndTokens = []string{"<|im_end|>", "<|endoftext|>", "<|eot_id|>", "<|eom_id|>", "<|end_of_text|>"}

// SpecialToken returns the token string and id for a name: "bos", "eos", "pad", "unk", an
// alias from the table above ("im_start", "im_end", "tool_call", "tool_call_end", "think",
// "think_end", "eot", ...), or a literal token such as "<|im_end|>".
func (t *Tokenizer) SpecialToken(name string) (string, int, bool) {
	var tok string
	switch name {
	case "bos":
		tok = t.config.BOSToken
	case "eos":
		tok = t.config.EOSToken
	case "pad":
		tok = t.config.PadToken
	case "unk":
		tok = t.config.UnkToken
	default:
		tok = name
		if alias, ok := tokenAliases[name]; ok {
			tok = alias[0]
		}
	}
	if tok == "" {
		return "", 0, false
	}
	id, ok := t.TokenID(tok)
	return tok, id, ok
}

// EOSIDs lists the ids that end generation: tokenizer_config's eos_token first, then the
// known chat end tokens present in the vocabulary. The model package adds the ids of
// config.json and generation_config.json.
func (t *Tokenizer) EOSIDs() []int {
	var ids []int
	seen := map[int]bool{}
	add := func(tok string) {
		if id, ok := t.TokenID(tok); ok && tok != "" && !seen[id] {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	add(t.config.EOSToken)
	for _, tok := range chatEndTokens {
		add(tok)
	}
	return ids
}

// BOSID returns the id of bos_token, if tokenizer_config.json names one.
func (t *Tokenizer) BOSID() (int, bool) {
	_, id, ok := t.SpecialToken("bos")
	return id, ok
}

// PadID returns the id of pad_token, if tokenizer_config.json names one.
func (t *Tokenizer) PadID() (int, bool) {
	_, id, ok := t.SpecialToken("pad")
	return id, ok
}
