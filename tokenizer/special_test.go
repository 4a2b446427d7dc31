package tokenizer

import (
	"slices"
	"testing"
)

// Ids below were read off the Rust library (scripts/tokenizer/encode.js) once and are
// pinned here so that a regression shows the exact token that moved.
func TestKnownIDs(t *testing.T) {
	qwen := loadModel(t, "tokenizer-qwen3")
	// "Hello" 9707, " world" 1879, "!" 0, " " 220, <|im_end|> 151645, digits one by one.
	if got, want := qwen.Encode("Hello world! <|im_end|> 12345", true), []int{9707, 1879, 0, 220, 151645, 220, 16, 17, 18, 19, 20}; !slices.Equal(got, want) {
		t.Errorf("qwen3: %v, want %v", got, want)
	}
	llama := loadModel(t, "tokenizer-llama3_1")
	// BOS 128000 from TemplateProcessing, then "Hello" 9906, " world" 1917, "!" 0,
	// " " 220, <|eot_id|> 128009, " " 220, "123" 4513, "45" 1774 (digits in threes).
	want := []int{128000, 9906, 1917, 0, 220, 128009, 220, 4513, 1774}
	if got := llama.Encode("Hello world! <|eot_id|> 12345", true); !slices.Equal(got, want) {
		t.Errorf("llama3.1: %v, want %v", got, want)
	}
	if got := llama.Encode("Hello world! <|eot_id|> 12345", false); !slices.Equal(got, want[1:]) {
		t.Errorf("llama3.1 without special tokens: %v, want %v", got, want[1:])
	}
}

func TestSpecialTokens(t *testing.T) {
	qwen := loadModel(t, "tokenizer-qwen3")
	if got := qwen.EOSIDs(); !slices.Equal(got, []int{151645, 151643}) {
		t.Errorf("qwen3 EOSIDs %v, want [151645 <|im_end|>, 151643 <|endoftext|>]", got)
	}
	for name, want := range map[string]int{"eos": 151645, "pad": 151643, "im_start": 151644, "im_end": 151645,
		"tool_call": 151657, "tool_call_end": 151658, "think": 151667, "think_end": 151668, "<|vision_pad|>": 151654} {
		if _, id, ok := qwen.SpecialToken(name); !ok || id != want {
			t.Errorf("qwen3 %s: %d %v, want %d", name, id, ok, want)
		}
	}
	if _, ok := qwen.BOSID(); ok {
		t.Error("qwen3 has no bos_token")
	}
	if id, ok := qwen.PadID(); !ok || id != 151643 {
		t.Errorf("qwen3 pad %d %v, want <|endoftext|> 151643", id, ok)
	}
	if added := qwen.AddedTokens(); len(added) != 26 || added[0].Content != "<|endoftext|>" || !added[0].Special {
		t.Errorf("qwen3 added tokens: %d, first %+v", len(added), added[0])
	}
	if !qwen.IsSpecial(151645) || qwen.IsSpecial(151667) {
		t.Error("<|im_end|> is special, <think> is not")
	}
	if qwen.VocabSize() != 151669 {
		t.Errorf("qwen3 vocab size %d, want 151669", qwen.VocabSize())
	}
	llama := loadModel(t, "tokenizer-llama3_1")
	// eos_token <|eot_id|>, then <|end_of_text|>. This file predates the <|eom_id|> name
	// (128008 is still <|reserved_special_token_4|>), so the list has two entries.
	if got := llama.EOSIDs(); !slices.Equal(got, []int{128009, 128001}) {
		t.Errorf("llama3.1 EOSIDs %v", got)
	}
	if id, ok := llama.BOSID(); !ok || id != 128000 {
		t.Errorf("llama3.1 BOS %d %v", id, ok)
	}
	if tok, ok := llama.Token(9906); !ok || tok != "Hello" {
		t.Errorf("Token(9906) = %q", tok)
	}
	if _, ok := llama.Token(-5); ok {
		t.Error("Token(-5) exists")
	}
}
