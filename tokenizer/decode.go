package tokenizer

import "strings"

// Decode turns ids back into text as the Rust Tokenizer::decode does: ids without a token
// are skipped, special added tokens are dropped when skipSpecial is set, and the bytes are
// read as UTF-8 with each invalid sequence replaced by U+FFFD (from_utf8_lossy).
// transformers' clean_up_tokenization_spaces is not applied: the text is exact.
func (t *Tokenizer) Decode(ids []int, skipSpecial bool) string {
	if !t.byteDecode {
		var toks []string
		for _, id := range ids {
			if tok, ok := t.visibleToken(id, skipSpecial); ok {
				toks = append(toks, tok)
			}
		}
		return strings.Join(toks, " ")
	}
	var buf []byte
	for _, id := range ids {
		buf = t.appendTokenBytes(buf, id, skipSpecial)
	}
	return string(appendLossy(nil, buf))
}

// cleanUps are transformers' clean_up_tokenization replacements, applied one after the
// other over the whole string, as its chain of str.replace calls does.
var cleanUps = [][2]string{{" .", "."}, {" ?", "?"}, {" !", "!"}, {" ,", ","}, {" ' ", "'"},
	{" n't", "n't"}, {" 'm", "'m"}, {" 's", "'s"}, {" 've", "'ve"}, {" 're", "'re"}}

// CleanUpTokenizationSpaces is transformers' clean_up_tokenization: it removes the space
// before . ? ! , and English contractions. transformers applies it in decode when
// tokenizer_config.json sets clean_up_tokenization_spaces (Llama 3 does); Decode does not,
// because it changes the text. Call it to reproduce transformers' decoded strings.
func CleanUpTokenizationSpaces(s string) string {
	for _, r := range cleanUps {
		s = strings.ReplaceAll(s, r[0], r[1])
	}
	return s
}

func (t *Tokenizer) visibleToken(id int, skipSpecial bool) (string, bool) {
	tok, ok := t.Token(id)
	if !ok || skipSpecial && t.IsSpecial(id) {
		return "", false
	}
	return tok, true
}

// appendTokenBytes appends the raw bytes of one token under the ByteLevel decoder.
func (t *Tokenizer) appendTokenBytes(dst []byte, id int, skipSpecial bool) []byte {
	tok, ok := t.visibleToken(id, skipSpecial)
	if !ok {
		return dst
	}
	return byteLevelDecodeToken(dst, tok)
}

// DecodeStream decodes a growing list of ids one id at a time, for streaming output and
// stop-string checks during generation. Next returns only text whose UTF-8 is complete: a
// character split across tokens (an emoji is often 2-4 byte tokens) is held back until its
// last byte arrives. The concatenation of everything returned, plus Flush, equals
// Decode(all ids) exactly.
type DecodeStream struct {
	t           *Tokenizer
	skipSpecial bool
	pending     []byte // bytes of an unfinished UTF-8 sequence
	first       bool
}

// NewDecodeStream starts an incremental decode.
func (t *Tokenizer) NewDecodeStream(skipSpecial bool) *DecodeStream {
	return &DecodeStream{t: t, skipSpecial: skipSpecial, first: true}
}

// Next adds one id and returns the text that became complete ("" if none).
func (d *DecodeStream) Next(id int) string {
	if !d.t.byteDecode {
		tok, ok := d.t.visibleToken(id, d.skipSpecial)
		if !ok {
			return ""
		}
		if d.first {
			d.first = false
			return tok
		}
		return " " + tok
	}
	d.pending = d.t.appendTokenBytes(d.pending, id, d.skipSpecial)
	keep := incompleteTail(d.pending)
	ready := d.pending[:len(d.pending)-keep]
	if len(ready) == 0 {
		return ""
	}
	out := string(appendLossy(nil, ready))
	d.pending = append(d.pending[:0], d.pending[len(ready):]...)
	return out
}

// Flush returns what is still held back (an unfinished sequence, as U+FFFD) and resets the
// pending bytes. Call it when generation ends.
func (d *DecodeStream) Flush() string {
	out := string(appendLossy(nil, d.pending))
	d.pending = d.pending[:0]
	return out
}

// Pending reports how many bytes wait for the rest of a UTF-8 sequence.
func (d *DecodeStream) Pending() int { return len(d.pending) }
