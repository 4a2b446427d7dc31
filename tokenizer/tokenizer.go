package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// MaxTokenID bounds the ids of a tokenizer.json (vocabulary and added tokens). Ids index dense
// tables here and rows of the model's embedding, so an id of 2e9 in a corrupt or hostile file
// would allocate gigabytes before anything else is checked; the largest vocabularies in use hold
// about 260,000 tokens.
const MaxTokenID = 1 << 24

// Tokenizer encodes text to token ids and back, exactly as the Hugging Face tokenizers
// library does for the same tokenizer.json. It is safe for concurrent use.
type Tokenizer struct {
	model      *bpe
	added      *addedVocab
	norm       normalizer
	pre        pipeline
	templates  []template // post-processing applied when addSpecial is true
	byteDecode bool       // ByteLevel decoder; else tokens are joined with spaces

	idToAdded map[int32]int // added-token id -> index in added.tokens
	tokenToID map[string]int32
	// addedText is what an added token decodes to: its content, normalised when the token
	// is normalized (the Rust library's id_to_token does so). specialText holds the contents
	// of special tokens, which skipSpecial compares against addedText, so a normalized
	// special token whose normalised text differs is not skipped, as in Rust.
	addedText   []string
	specialText map[string]bool
	vocabSize   int

	config Config // from tokenizer_config.json; zero when loaded without one
	chat   *chatTemplate
	named  map[string]*chatTemplate // when chat_template is a list of named templates
}

// Load reads tokenizer.json and, when present, tokenizer_config.json (special tokens, chat
// template) from a model directory.
func Load(dir string) (*Tokenizer, error) {
	t, err := LoadFile(filepath.Join(dir, "tokenizer.json"))
	if err != nil {
		return nil, err
	}
	cfgPath := filepath.Join(dir, "tokenizer_config.json")
	data, err := bounded.ReadFile(cfgPath, bounded.Small)
	if err == nil {
		err = t.setConfig(data, cfgPath)
	} else if os.IsNotExist(err) {
		err = nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfgPath, err)
	}
	if err := t.loadTemplateFile(dir); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, "chat_template.jinja"), err)
	}
	return t, nil
}

// LoadFile reads a tokenizer.json file.
func LoadFile(path string) (*Tokenizer, error) {
	data, err := bounded.ReadFile(path, bounded.Tokenizer)
	if err != nil {
		return nil, err
	}
	t, err := FromJSON(data)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return t, nil
}

// FromJSON builds a tokenizer from the contents of a tokenizer.json file.
func FromJSON(data []byte) (*Tokenizer, error) {
	var spec fileSpec
	if err := json.Unmarshal(data, &spec); err != nil {
		if terr := modelTypeError(data); terr != nil {
			return nil, terr
		}
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	if !isNull(spec.Truncation) {
		return nil, fmt.Errorf("truncation is set; truncating inside the tokenizer is not supported (set it to null)")
	}
	t := &Tokenizer{}
	var err error
	if t.norm, err = parseNormalizer(spec.Normalizer); err != nil {
		return nil, err
	}
	steps, err := parsePreTokenizer(spec.PreTokenizer)
	if err != nil {
		return nil, err
	}
	t.pre = newPipeline(steps)
	if t.templates, err = parsePostProcessor(spec.PostProcessor); err != nil {
		return nil, err
	}
	if t.byteDecode, err = parseDecoder(spec.Decoder); err != nil {
		return nil, err
	}
	if t.model, err = parseModel(spec.Model); err != nil {
		return nil, err
	}
	if err := t.setAdded(spec.AddedTokens); err != nil {
		return nil, err
	}
	return t, nil
}

// newPipeline folds a final plain ByteLevel step into the model (see pipeline).
func newPipeline(steps []preStep) pipeline {
	if n := len(steps); n > 0 {
		if bl, ok := steps[n-1].(*byteLevelStep); ok && !bl.addPrefixSpace && !bl.useRegex {
			return pipeline{steps: steps[:n-1], rawBytes: true}
		}
	}
	return pipeline{steps: steps}
}

func (t *Tokenizer) setAdded(tokens []AddedToken) error {
	t.idToAdded = make(map[int32]int, len(tokens))
	t.tokenToID = make(map[string]int32, len(tokens))
	t.specialText = map[string]bool{}
	t.vocabSize = len(t.model.tokens)
	for i, at := range tokens {
		if at.Content == "" {
			return fmt.Errorf("added_tokens[%d]: empty content", i)
		}
		if at.ID < 0 || at.ID >= MaxTokenID {
			return fmt.Errorf("added_tokens[%d] %q: id %d is outside [0, %d)", i, at.Content, at.ID, MaxTokenID)
		}
		t.idToAdded[int32(at.ID)] = i
		t.tokenToID[at.Content] = int32(at.ID)
		text := at.Content
		if at.Normalized && t.norm != nil {
			text = t.norm.normalize(text)
		}
		t.addedText = append(t.addedText, text)
		if at.Special {
			t.specialText[at.Content] = true
		}
		t.vocabSize = max(t.vocabSize, at.ID+1)
	}
	t.added = newAddedVocab(tokens, t.norm)
	return nil
}

// VocabSize is one more than the largest id, counting added tokens (151,669 for Qwen3).
// Model embedding tables are often larger (padded); ids past VocabSize decode to nothing.
func (t *Tokenizer) VocabSize() int { return t.vocabSize }

// TokenID returns the id of a token string: an added token, or a vocabulary entry (in the
// byte-level alphabet, e.g. "Ġthe").
func (t *Tokenizer) TokenID(token string) (int, bool) {
	if id, ok := t.tokenToID[token]; ok {
		return int(id), true
	}
	id, ok := t.model.vocab[token]
	return int(id), ok
}

// Token returns the token string of an id (added tokens first, as the Rust library does;
// a normalized added token gives its normalised text).
func (t *Tokenizer) Token(id int) (string, bool) {
	if i, ok := t.idToAdded[int32(id)]; ok {
		return t.addedText[i], true
	}
	if id < 0 || id >= len(t.model.tokens) || t.model.tokens[id] == "" {
		return "", false
	}
	return t.model.tokens[id], true
}

// AddedTokens lists tokenizer.json's added tokens.
func (t *Tokenizer) AddedTokens() []AddedToken {
	return append([]AddedToken(nil), t.added.tokens...)
}

// IsSpecial reports whether id is an added token marked special (the tokens
// Decode(ids, true) drops).
func (t *Tokenizer) IsSpecial(id int) bool {
	i, ok := t.idToAdded[int32(id)]
	return ok && t.specialText[t.addedText[i]]
}

// Encode returns the token ids of text. addSpecial applies the post-processor's template
// (Llama 3.1 prepends <|begin_of_text|>); chat-template output is encoded with false, as
// transformers does. Special tokens spelled in text become their ids. Text that is not valid
// UTF-8 is first repaired by replacing each invalid sequence with U+FFFD (the Rust library only
// accepts valid strings).
func (t *Tokenizer) Encode(text string, addSpecial bool) []int {
	return t.encode(text, addSpecial, specialAll)
}

// EncodePlain is Encode(text, false) for text that is data rather than markup (a tool's output,
// a dataset's prompt): special tokens it spells, such as "<|im_end|>", are encoded as the plain
// text they are, as transformers' split_special_tokens=True does. Non-special added tokens
// (Qwen's <think>, <tool_call>) still match, as there.
func (t *Tokenizer) EncodePlain(text string) []int {
	return t.encode(text, false, specialNone)
}

func (t *Tokenizer) encode(text string, addSpecial bool, mode specialMode) []int {
	text = toValidUTF8(text)
	ids := make([]int, 0, len(text)/3+8)
	segs := t.added.split(nil, text, t.added.raw, mode)
	for _, sg := range segs {
		if sg.id >= 0 {
			ids = append(ids, int(sg.id))
			continue
		}
		s := sg.text
		if t.norm != nil {
			s = t.norm.normalize(s)
		}
		for _, sg2 := range t.added.split(nil, s, t.added.normalized, mode) {
			if sg2.id >= 0 {
				ids = append(ids, int(sg2.id))
				continue
			}
			piece := sg2.text
			if mode == specialUnmarked {
				piece = strings.ReplaceAll(piece, protectMark, "")
			}
			t.pre.run(piece, func(piece string) {
				ids = t.model.encodePiece(ids, piece, t.pre.rawBytes)
			})
		}
	}
	if addSpecial {
		for _, tp := range t.templates {
			ids = tp.apply(ids)
		}
	}
	return ids
}

// EncodeBatch encodes texts on up to GOMAXPROCS goroutines; out[i] is Encode(texts[i]).
func (t *Tokenizer) EncodeBatch(texts []string, addSpecial bool) [][]int {
	out := make([][]int, len(texts))
	workers := min(runtime.GOMAXPROCS(0), len(texts))
	var next sync.Mutex
	i := 0
	var wg sync.WaitGroup
	for w := 0; w < workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				next.Lock()
				k := i
				i++
				next.Unlock()
				if k >= len(texts) {
					return
				}
				out[k] = t.Encode(texts[k], addSpecial)
			}
		}()
	}
	wg.Wait()
	return out
}
