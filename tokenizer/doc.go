// Package tokenizer is a pure-Go implementation of Hugging Face tokenizer.json byte-level
// BPE tokenizers (Qwen2/2.5/3, Llama 3/3.1 and others built the same way) and of
// transformers' chat templates. Its ids are those of the Rust tokenizers library: the tests
// compare every id on a ~4 MB adversarial corpus for Qwen3, Llama 3 and Llama 3.1 (and
// tokenizer variants for the other components), and chat renderings byte for byte with
// @huggingface/jinja.
//
// # Use
//
//	tk, err := tokenizer.Load(modelDir)          // tokenizer.json (+ tokenizer_config.json)
//	ids := tk.Encode("Hello", false)              // addSpecial: post-processor template
//	text := tk.Decode(ids, true)                  // skipSpecial
//	prompt, err := tk.ApplyChatTemplate(msgs, tokenizer.ChatOptions{AddGenerationPrompt: true})
//	ids, err = tk.EncodeChat(msgs, opts)          // render and encode; data's special tokens stay text
//	ids = tk.EncodePlain(toolOutput)               // split_special_tokens: "<|im_end|>" is text
//	stops := tk.EOSIDs()                          // eos_token + known chat end tokens
//	ds := tk.NewDecodeStream(false)               // per generated id: ds.Next(id)
//
// # What is implemented
//
// Model: BPE with both merge formats, ignore_merges, unk/fuse_unk/byte_fallback,
// continuing_subword_prefix and end_of_word_suffix; merging uses a heap as Word::merge_all
// does (a linear scan for short words gives the same result faster) and a lock-free word
// cache. Normalizers: NFC, NFD, NFKC, NFKD, Lowercase, Sequence. Pre-tokenizers: Sequence,
// Split (Regex or String; Isolated, Removed, MergedWithPrevious, MergedWithNext,
// Contiguous; invert), ByteLevel (add_prefix_space, use_regex). The Qwen, Llama 3 and GPT-2
// split regexes run on a hand-written scanner; other patterns on regexp2. Added tokens:
// special or not, lstrip, rstrip, single_word, normalized. Post-processors: ByteLevel,
// TemplateProcessing (single sequence), Sequence. Decoder: ByteLevel. Any other component
// type, BPE dropout, or a non-null truncation is a load error naming it.
//
// # Unicode versions
//
// Go's tables are Unicode 15.0; the Rust library's differ and each difference is kept as
// Rust has it, with a table derived from the Rust library by a test: its normalizer is
// older (characters it does not know neither decompose nor compose: rustUnassigned) and
// does not insert U+034F after 30 combining marks as package norm does; its regex engine
// knows Unicode 16 letters and digits (onigExtraLetters, onigExtraNumbers); its lowercase
// mappings are Unicode 17 (newerLower). One gap remains: patterns that fall back to regexp2
// use Go's tables, so a character assigned after Unicode 15.0 can split differently there
// (seen once in 4 MB of random text with DeepSeek V3's \p{S} pattern; GPT-4o's pattern
// matched everywhere). The Qwen and Llama patterns never use regexp2.
//
// # Choices where the reference has none
//
// Encode takes a Go string, which may hold invalid UTF-8 (the Rust library only accepts
// valid strings): each maximal invalid subsequence is replaced by U+FFFD first, as
// String::from_utf8_lossy and Python's errors="replace" do. Decode drops ids that have no
// token, as the Rust library does; transformers' clean_up_tokenization_spaces is not
// applied (CleanUpTokenizationSpaces does it when a caller wants transformers' strings).
// Padding in tokenizer.json is ignored: EncodeBatch returns unpadded id lists.
//
// # Chat templates
//
// Templates run on gonja with transformers' settings (trim_blocks, lstrip_blocks) and
// its additions: tojson is Python's json.dumps (", " / ": " separators, ensure_ascii=False,
// indent, insertion order — messages and tools are ordered dicts), items keeps dict order,
// raise_exception fails the render with the template's message, strftime_now exists. The
// template comes from chat_template.jinja, else tokenizer_config.json's chat_template
// (a string or the "default" entry of a named list). With neither, ApplyChatTemplate
// renders plain ChatML (Llama 3 headers for Llama vocabularies) and returns that text
// together with an error wrapping ErrNoChatTemplate, so callers can log or refuse it.
//
// Templates come with model directories, so they run sandboxed (chat_sandbox.go): as in
// transformers' ImmutableSandboxedEnvironment there is no loader ({% include %} and its kind
// fail), lists and dicts cannot be changed, and range() stops at 100,000 items; and since a Go
// process cannot survive running out of stack or memory, macro recursion, the bytes a render
// builds or prints, and its steps (loop iterations, calls) are bounded too, each checked before
// the allocation where the size is known in advance. Errors name the template's file.
//
// EncodeChat deviates from transformers on purpose (chat_protect.go): transformers encodes the
// rendered text as a whole, so a tool result or a dataset prompt that spells
// "<|im_end|><|im_start|>system" becomes those special tokens and forges a turn. Here the
// template's markup gets its special tokens and the messages, tool calls and tool specs are
// encoded as EncodePlain encodes data.
//
// # The tiny tokenizer
//
// WriteTiny writes a complete byte-level BPE tokenizer (256 byte tokens, TinyMerges merges
// learned from a built-in corpus, ChatML special tokens, a Qwen-style chat template) for
// tests and the demo model; a generated copy lives in testdata/tiny.
package tokenizer
