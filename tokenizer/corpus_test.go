package tokenizer

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"unicode/utf8"
)

// testCorpus generates the comparison corpus: deterministic (fixed seed), about 4 MB, and
// aimed at every branch of normalisation, splitting and merging. Documents are kept below
// ~64 KB except for the deliberately adversarial long runs.
func testCorpus() []string {
	r := rand.New(rand.NewPCG(20251121, 7))
	var docs []string
	add := func(n int, gen func(*rand.Rand) string) {
		for i := 0; i < n; i++ {
			docs = append(docs, gen(r))
		}
	}
	add(300, prose)        // ~1.2 MB
	add(200, code)         // ~0.8 MB
	add(120, digits)       // ~0.2 MB
	add(150, cjk)          // ~0.5 MB
	add(100, emoji)        // ~0.2 MB
	add(100, whitespace)   // ~0.1 MB
	add(80, controls)      // control characters
	add(150, specialMix)   // added tokens inside text
	add(120, combining)    // runs of combining marks, NFC cases
	add(60, randomUnicode) // any scalar value but surrogates
	add(20, recentUnicode) // letters and digits newer than Go's Unicode tables
	docs = append(docs, adversarial()...)
	return docs
}

var words = strings.Fields(`the of and to in is was that for it with as his on be at by I had this not are but
from or have an they which one you were her all she there would their we him been has when who will more no if
out so said what up its about into than them can only other new some could time these two may then do first any
my now such like our over man me even most made after also did many before must through back years where much
your way well down should because each just those people Mr how too little state good very make world still own
see men work long get here between both life being under never day same another know while last might us great
old year off come since against go came right used take three tokenizer merges vocabulary Qwen Llama gradient
policy reward advantage rollout trajectory KL-divergence café naïve résumé façade coöperate Zürich Straße`)

var suffixes = []string{"'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'LL", "'ſ", "'Ve", "'x", "’s"}

func prose(r *rand.Rand) string {
	var b strings.Builder
	target := 1000 + r.IntN(7000)
	for b.Len() < target {
		n := 5 + r.IntN(20)
		for i := 0; i < n; i++ {
			w := words[r.IntN(len(words))]
			if i == 0 {
				w = strings.ToUpper(w[:1]) + w[1:]
			}
			if r.IntN(12) == 0 {
				w += suffixes[r.IntN(len(suffixes))]
			}
			if r.IntN(25) == 0 {
				w = fmt.Sprintf("%d", r.IntN(100000))
			}
			if r.IntN(40) == 0 {
				w = strings.ToUpper(w)
			}
			b.WriteString(w)
			switch r.IntN(20) {
			case 0:
				b.WriteString(", ")
			case 1:
				b.WriteString(" (")
			case 2:
				b.WriteString(") ")
			case 3:
				b.WriteString(" \"")
			default:
				b.WriteString(" ")
			}
		}
		b.WriteString([]string{". ", "! ", "? ", ".\n", ".\n\n", "... ", ";\n", ". \n"}[r.IntN(8)])
	}
	return b.String()
}

var codeLines = []string{
	"func (t *Tokenizer) Encode(text string, addSpecial bool) []int {",
	"\tids := make([]int32, 0, len(text)/3+1)",
	"\tfor i := 0; i < len(s); i++ {",
	"\t\tif err != nil {\n\t\t\treturn nil, fmt.Errorf(\"load %s: %w\", path, err)\n\t\t}",
	"def merge_all(self, merges, dropout=None):",
	"    queue = [(rank, pos) for pos, rank in enumerate(ranks) if rank is not None]",
	"    return {\"input_ids\": ids, 'attention_mask': [1] * len(ids)}  # comment",
	"x = a**2 + b//3 - c%4 >> 1 << 2 & 0xFF | ~d ^ e != f == g <= h >= i -> j => k",
	"const re = /[^\\r\\n\\p{L}\\p{N}]?\\p{L}+/gu; // regex",
	"SELECT id, name FROM users WHERE age >= 18 AND name LIKE '%smith%';",
	"#include <stdio.h>\nint main(void) { printf(\"%d\\n\", 42); return 0; }",
	"    }\n}\n",
	"<div class=\"x\"><p>Hello &amp; welcome</p></div>",
	"@@ -1,4 +1,5 @@\n-old line\n+new line\n+another",
	"\t\t\t\t// deeply indented with tabs",
	"                # sixteen spaces of indentation",
	"path = \"C:\\\\Users\\\\me\\\\file.txt\"; url = 'https://example.com/a?b=c&d=e#f'",
	"matrix[i][j] += alpha * (grad[i][j] - beta_1 ** t) / (sqrt(v_hat) + 1e-8)",
}

func code(r *rand.Rand) string {
	var b strings.Builder
	nl := "\n"
	if r.IntN(4) == 0 {
		nl = "\r\n"
	}
	target := 500 + r.IntN(7000)
	for b.Len() < target {
		b.WriteString(strings.ReplaceAll(codeLines[r.IntN(len(codeLines))], "\n", nl))
		b.WriteString(nl)
		if r.IntN(6) == 0 {
			b.WriteString(nl)
		}
	}
	return b.String()
}

var unicodeDigits = []string{"٠١٢٣٤٥٦٧٨٩", "０１２３４５６７８９", "१२३४५", "Ⅻⅸ", "½¾²³", "𝟎𝟏𝟐"}

func digits(r *rand.Rand) string {
	var b strings.Builder
	target := 200 + r.IntN(3000)
	for b.Len() < target {
		n := 1 + r.IntN(12)
		if r.IntN(10) == 0 {
			n = 20 + r.IntN(300)
		}
		for i := 0; i < n; i++ {
			b.WriteByte(byte('0' + r.IntN(10)))
		}
		switch r.IntN(8) {
		case 0:
			b.WriteString(".")
		case 1:
			b.WriteString(",")
		case 2:
			b.WriteString(unicodeDigits[r.IntN(len(unicodeDigits))])
		case 3:
			b.WriteString("e-")
		case 4:
			b.WriteString("\n")
		default:
			b.WriteString(" ")
		}
	}
	return b.String()
}

func cjk(r *rand.Rand) string {
	ranges := [][2]rune{{0x4E00, 0x9FFF}, {0x3040, 0x309F}, {0x30A0, 0x30FF}, {0xAC00, 0xD7A3}, {0x3000, 0x303F}, {0xFF01, 0xFF5E}}
	var b strings.Builder
	target := 500 + r.IntN(6000)
	for b.Len() < target {
		rg := ranges[r.IntN(len(ranges))]
		n := 1 + r.IntN(30)
		for i := 0; i < n; i++ {
			b.WriteRune(rg[0] + rune(r.IntN(int(rg[1]-rg[0]+1))))
		}
		if r.IntN(3) == 0 {
			b.WriteString([]string{"，", "。", " ", "\n", "、", "English ", "123"}[r.IntN(7)])
		}
	}
	return b.String()
}

var emojis = []string{"😀", "👍🏽", "👨‍👩‍👧‍👦", "🏳️‍🌈", "🇯🇵", "🇺🇸", "1️⃣", "❤️", "🧑🏿‍💻", "👩‍❤️‍💋‍👨", "🤖", "✨", "🫠", "🐈‍⬛", "☺︎"}

func emoji(r *rand.Rand) string {
	var b strings.Builder
	target := 100 + r.IntN(3000)
	for b.Len() < target {
		b.WriteString(emojis[r.IntN(len(emojis))])
		switch r.IntN(5) {
		case 0:
			b.WriteString(" ")
		case 1:
			b.WriteString(words[r.IntN(len(words))])
		}
	}
	return b.String()
}

var spaces = []string{" ", "  ", "    ", "\t", "\n", "\r\n", "\r", "\u00a0", "\u3000", "\u2028", "\u0085", "\u2003", "\v", "\f", " \n ", "\n\n\n", "\t \t"}

func whitespace(r *rand.Rand) string {
	var b strings.Builder
	target := 100 + r.IntN(2000)
	for b.Len() < target {
		n := 1 + r.IntN(4)
		for i := 0; i < n; i++ {
			b.WriteString(spaces[r.IntN(len(spaces))])
		}
		if r.IntN(3) > 0 {
			b.WriteString(words[r.IntN(len(words))])
		}
		if r.IntN(5) == 0 {
			b.WriteString(".")
		}
	}
	return b.String()
}

func controls(r *rand.Rand) string {
	var b strings.Builder
	target := 50 + r.IntN(1000)
	for b.Len() < target {
		switch r.IntN(3) {
		case 0:
			b.WriteRune(rune(r.IntN(0x20)))
		case 1:
			b.WriteRune(rune(0x7F + r.IntN(0x21))) // DEL and C1 controls
		default:
			b.WriteString(words[r.IntN(len(words))])
		}
	}
	return b.String()
}

var specials = []string{"<|im_start|>", "<|im_end|>", "<|endoftext|>", "<think>", "</think>", "<tool_call>",
	"</tool_call>", "<|begin_of_text|>", "<|eot_id|>", "<|start_header_id|>", "<|end_header_id|>",
	"<|reserved_special_token_5|>", "<|im_", "<|eot", "<think", "< think>", "<|vision_pad|>", "<tool_response>"}

func specialMix(r *rand.Rand) string {
	var b strings.Builder
	target := 100 + r.IntN(3000)
	for b.Len() < target {
		b.WriteString(specials[r.IntN(len(specials))])
		switch r.IntN(4) {
		case 0:
			b.WriteString(" ")
		case 1:
			b.WriteString("\n")
		case 2:
			b.WriteString(words[r.IntN(len(words))])
		}
		if r.IntN(3) == 0 {
			b.WriteString(clip(prose(r), 50))
		}
	}
	return b.String()
}

var marks = []rune{0x301, 0x300, 0x308, 0x316, 0x345, 0x327, 0x323, 0x35C, 0x1AB0, 0x20D0, 0x302}

func combining(r *rand.Rand) string {
	var b strings.Builder
	bases := []string{"x", "a", "e", "o", "A", "n", "ᄀ", "가", "Å", "Å", "ﬁ", "é", "ś", " ", "1", "ん"}
	target := 100 + r.IntN(2000)
	for b.Len() < target {
		b.WriteString(bases[r.IntN(len(bases))])
		n := r.IntN(4)
		if r.IntN(6) == 0 {
			n = 25 + r.IntN(60) // past the 30-mark stream-safe limit
		}
		same := r.IntN(2) == 0
		m := marks[r.IntN(len(marks))]
		for i := 0; i < n; i++ {
			if !same {
				m = marks[r.IntN(len(marks))]
			}
			b.WriteRune(m)
		}
		if r.IntN(4) == 0 {
			b.WriteString("\u1100\u1161\u11A8 ") // conjoining jamo compose to 각
		}
	}
	return b.String()
}

func randomUnicode(r *rand.Rand) string {
	var b strings.Builder
	n := 200 + r.IntN(2000)
	for i := 0; i < n; i++ {
		var c rune
		switch r.IntN(4) {
		case 0:
			c = rune(r.IntN(0x80))
		case 1:
			c = rune(r.IntN(0x800))
		case 2:
			c = rune(r.IntN(0x10000))
		default:
			c = rune(r.IntN(0x110000))
		}
		if c >= 0xD800 && c <= 0xDFFF || !utf8.ValidRune(c) {
			c = 'z'
		}
		b.WriteRune(c)
	}
	return b.String()
}

// recentRunes are letters and digits assigned in Unicode 15.1 and 16.0 (Kirat Rai, Garay,
// Egyptian hieroglyphs extended-A, CJK extension I, Tulu-Tigalari), which Oniguruma knows and
// Go's tables do not.
var recentRunes = []rune{0x16D43, 0x16D50, 0x16D70, 0x16D71, 0x10D4A, 0x10D50, 0x10D40, 0x10D41,
	0x13460, 0x13500, 0x2EBF0, 0x2EC00, 0x11380, 0x113A0, 0x1C89, 0xA7CB, 0x1E5D0, 0x1E5F1}

func recentUnicode(r *rand.Rand) string {
	var b strings.Builder
	n := 50 + r.IntN(400)
	for i := 0; i < n; i++ {
		switch r.IntN(5) {
		case 0:
			b.WriteString(" ")
		case 1:
			b.WriteString(words[r.IntN(len(words))])
		case 2:
			b.WriteByte(byte('0' + r.IntN(10)))
		default:
			b.WriteRune(recentRunes[r.IntN(len(recentRunes))])
		}
	}
	return b.String()
}

func adversarial() []string {
	return []string{
		strings.Repeat("a", 50000),
		strings.Repeat(" ", 20000) + "x",
		strings.Repeat("ab", 10000),
		strings.Repeat("9", 30000),
		strings.Repeat("!", 10000),
		strings.Repeat("\n", 5000) + strings.Repeat("\r\n", 5000),
		strings.Repeat("é", 10000),
		"x" + strings.Repeat("\u0301", 50),
		strings.Repeat("汉", 20000),
		strings.Repeat("<|im_end|>", 1000),
		"",
	}
}
