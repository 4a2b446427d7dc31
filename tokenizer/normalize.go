package tokenizer

import (
	"sort"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// normalizer rewrites text before pre-tokenisation. Offsets are not tracked: mtgrpo only
// needs ids.
type normalizer interface {
	normalize(s string) string
}

// unicodeNormalizer is NFC, NFD, NFKC or NFKD.
//
// golang.org/x/text/unicode/norm produces the Stream-Safe Text Format: after 30 non-starters
// in a row it inserts U+034F COMBINING GRAPHEME JOINER. Rust's unicode-normalization (which
// the reference library uses) does not, so "x" followed by 50 acute accents would differ.
// When the fast result contains a U+034F the input did not, the text is normalised again by
// slowNormalize, a direct implementation of UAX #15 without the stream-safe limit.
type unicodeNormalizer struct {
	form norm.Form
}

const cgj = '\u034F'

func (u unicodeNormalizer) normalize(s string) string {
	if u.form.IsNormalString(s) {
		return s
	}
	out := u.form.String(s)
	if out == s {
		return s
	}
	if strings.Count(out, string(cgj)) > strings.Count(s, string(cgj)) || hasRustUnassigned(s) || hasRustUnassigned(out) {
		return slowNormalize(s, u.form)
	}
	return out
}

// slowNormalize is UAX #15: full decomposition, canonical ordering of non-starters, then
// (for NFC / NFKC) canonical composition. Single characters are decomposed and pairs
// composed with package norm, which never meets long runs there. Characters of
// rustUnassigned are left alone, as the Rust normalizer does.
func slowNormalize(s string, form norm.Form) string {
	// Below U+00C0 nothing has a canonical decomposition; below U+00A0 nothing has a
	// compatibility one.
	decomp, plain := norm.NFD, rune(0xC0)
	if form == norm.NFKC || form == norm.NFKD {
		decomp, plain = norm.NFKD, 0xA0
	}
	seq := make([]rune, 0, len(s))
	var one [utf8.UTFMax]byte
	var buf []byte
	for _, r := range s {
		if r < plain || !rustKnows(r) {
			seq = append(seq, r)
			continue
		}
		n := utf8.EncodeRune(one[:], r)
		buf = decomp.Append(buf[:0], one[:n]...)
		for len(buf) > 0 {
			d, size := utf8.DecodeRune(buf)
			seq = append(seq, d)
			buf = buf[size:]
		}
	}
	ccc := make([]uint8, len(seq))
	for i, r := range seq {
		ccc[i] = combiningClass(r)
	}
	canonicalOrder(seq, ccc)
	if form == norm.NFC || form == norm.NFKC {
		seq = compose(seq, ccc)
	}
	return string(seq)
}

func combiningClass(r rune) uint8 {
	if !rustKnows(r) {
		return 0
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	return norm.NFD.Properties(buf[:n]).CCC()
}

// canonicalOrder stably sorts every run of non-starters by combining class.
func canonicalOrder(seq []rune, ccc []uint8) {
	for i := 0; i < len(seq); {
		if ccc[i] == 0 {
			i++
			continue
		}
		j := i
		for j < len(seq) && ccc[j] != 0 {
			j++
		}
		idx := make([]int, j-i)
		for k := range idx {
			idx[k] = i + k
		}
		sort.SliceStable(idx, func(a, b int) bool { return ccc[idx[a]] < ccc[idx[b]] })
		rs, cs := make([]rune, len(idx)), make([]uint8, len(idx))
		for k, p := range idx {
			rs[k], cs[k] = seq[p], ccc[p]
		}
		copy(seq[i:j], rs)
		copy(ccc[i:j], cs)
		i = j
	}
}

// compose applies canonical composition: each character combines with the last starter
// unless blocked by a character in between of class 0 or of class >= its own.
func compose(seq []rune, ccc []uint8) []rune {
	out := make([]rune, 0, len(seq))
	starter, lastCCC := -1, -1
	for i, r := range seq {
		c := int(ccc[i])
		if starter >= 0 {
			adjacent := starter == len(out)-1
			if adjacent || (lastCCC != 0 && lastCCC < c) {
				if p, ok := primaryComposite(out[starter], r); ok {
					out[starter] = p
					continue
				}
			}
		}
		if c == 0 {
			starter = len(out)
		}
		out = append(out, r)
		lastCCC = c
	}
	return out
}

func primaryComposite(a, b rune) (rune, bool) {
	if !rustKnows(a) || !rustKnows(b) {
		return 0, false
	}
	var in, out [2 * utf8.UTFMax]byte
	n := utf8.EncodeRune(in[:], a)
	n += utf8.EncodeRune(in[n:], b)
	res := norm.NFC.Append(out[:0], in[:n]...)
	r, size := utf8.DecodeRune(res)
	if size == len(res) && r != utf8.RuneError && rustKnows(r) {
		return r, true
	}
	return 0, false
}

// lowercaseNormalizer is the Lowercase normalizer: Rust's char::to_lowercase per character.
type lowercaseNormalizer struct{}

func (lowercaseNormalizer) normalize(s string) string {
	return strings.Map(lower, strings.ReplaceAll(s, "\u0130", "i\u0307")) // İ lowercases to two characters
}

// newerLower are the lowercase mappings Rust's tables (Unicode 17) have and Go's (15.0) do
// not: {first, last, delta}. TestLowercaseTable derives them again from the Rust library.
var newerLower = [][3]rune{
	{0x1C89, 0x1C89, 1}, {0xA7CB, 0xA7CB, 0x0264 - 0xA7CB}, {0xA7CC, 0xA7CC, 1}, {0xA7CE, 0xA7CE, 1},
	{0xA7D2, 0xA7D2, 1}, {0xA7D4, 0xA7D4, 1}, {0xA7DA, 0xA7DA, 1}, {0xA7DC, 0xA7DC, 0x019B - 0xA7DC},
	{0x10D50, 0x10D65, 0x20}, {0x16EA0, 0x16EB8, 0x1B},
}

func lower(r rune) rune {
	if r >= 0x1C89 {
		for _, m := range newerLower {
			if r >= m[0] && r <= m[1] {
				return r + m[2]
			}
		}
	}
	return unicode.ToLower(r)
}

// normalizerSequence applies its normalizers in order.
type normalizerSequence []normalizer

func (q normalizerSequence) normalize(s string) string {
	for _, n := range q {
		s = n.normalize(s)
	}
	return s
}

// runeRanges compresses a set of runes into sorted inclusive ranges.
func runeRanges(rs []rune) [][2]rune {
	sort.Slice(rs, func(i, j int) bool { return rs[i] < rs[j] })
	var out [][2]rune
	for _, r := range rs {
		if n := len(out); n > 0 && out[n-1][1] == r-1 {
			out[n-1][1] = r
			continue
		}
		out = append(out, [2]rune{r, r})
	}
	return out
}
