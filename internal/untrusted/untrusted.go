package untrusted

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxText is the most bytes of outside text Text keeps; the rest is counted, not shown.
const MaxText = 512

// Text is s made safe to print unquoted: every rune that is not printable (controls, escape
// sequences, bidi and other format characters, invalid UTF-8) is written as a Go escape, and text
// past MaxText bytes is cut with a count of what was left out.
func Text(s string) string {
	cut := 0
	if len(s) > MaxText {
		k := MaxText
		for j := MaxText; j > MaxText-utf8.UTFMax; j-- {
			if utf8.RuneStart(s[j]) { // cut before the rune that crosses the bound, not inside it
				k = j
				break
			}
		}
		s, cut = s[:k], len(s)-k
	}
	var b strings.Builder
	for i := 0; i < len(s); {
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size <= 1:
			fmt.Fprintf(&b, `\x%02x`, s[i])
		case unicode.IsPrint(r):
			b.WriteRune(r)
		default:
			q := strconv.QuoteRuneToASCII(r) // '\x1b', '\n', '\u202e'
			b.WriteString(q[1 : len(q)-1])
		}
		i += size
	}
	if cut > 0 {
		fmt.Fprintf(&b, "... (%d more bytes)", cut)
	}
	return b.String()
}

// Quote is the first n bytes of b in Go's double-quoted form (every non-printable rune escaped),
// followed by "..." when b is longer.
func Quote(b []byte, n int) string {
	if len(b) > n {
		return strconv.Quote(string(b[:n])) + "..."
	}
	return strconv.Quote(string(b))
}

// Clean reports whether s prints as itself: Text(s) == s.
func Clean(s string) bool {
	for _, r := range s {
		if !unicode.IsPrint(r) {
			return false // utf8.RuneError is printable, but an invalid byte decodes to it
		}
	}
	return utf8.ValidString(s) && len(s) <= MaxText
}
