package tokenizer

import "unicode/utf8"

// The GPT-2 byte-level alphabet: every byte maps to one printable rune so that a byte string
// becomes a valid Unicode string. Printable Latin-1 bytes map to themselves; the other 68
// (controls, space, 0x7F-0xA0, 0xAD) map to U+0100 + n in byte order. This is
// bytes_to_unicode() from GPT-2, used unchanged by Hugging Face's ByteLevel components.
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
	// byteToUTF8 holds the UTF-8 encoding of byteToRune[b], so mapping a string is appends.
	byteToUTF8 [256]string
)

func init() {
	n := 0
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = rune(256 + n)
			n++
		}
		runeToByte[byteToRune[b]] = byte(b)
		byteToUTF8[b] = string(byteToRune[b])
	}
}

// byteLevelString maps every byte of s to its byte-level rune.
func byteLevelString(s string) string {
	buf := make([]byte, 0, len(s)*2)
	for i := 0; i < len(s); i++ {
		buf = append(buf, byteToUTF8[s[i]]...)
	}
	return string(buf)
}

// byteLevelDecodeToken appends the bytes a byte-level token stands for. As in the Rust
// ByteLevel decoder, a token with any rune outside the alphabet (an added token such as
// "<think> " with a real space) is passed through as its own UTF-8 bytes.
func byteLevelDecodeToken(dst []byte, tok string) []byte {
	start := len(dst)
	for _, r := range tok {
		b, ok := runeToByte[r]
		if !ok {
			return append(dst[:start], tok...)
		}
		dst = append(dst, b)
	}
	return dst
}

// appendLossy appends b to dst as valid UTF-8, replacing each maximal invalid subpart with
// U+FFFD. This is the substitution Rust's String::from_utf8_lossy (and Python's
// errors="replace") make; Go's strings.ToValidUTF8 instead merges whole runs of bad bytes.
func appendLossy(dst []byte, b []byte) []byte {
	for i := 0; i < len(b); {
		c := b[i]
		if c < utf8.RuneSelf {
			dst = append(dst, c)
			i++
			continue
		}
		n := validPrefix(b[i:])
		if n > 0 {
			dst = append(dst, b[i:i+n]...)
			i += n
			continue
		}
		// Invalid: skip the maximal subpart (lead byte plus valid continuation bytes).
		i += maximalSubpart(b[i:])
		dst = append(dst, "\uFFFD"...)
	}
	return dst
}

// validPrefix returns the length of the complete valid UTF-8 sequence at the start of b, or 0.
func validPrefix(b []byte) int {
	r, size := utf8.DecodeRune(b)
	if r == utf8.RuneError && size <= 1 {
		return 0
	}
	return size
}

// seqInfo reports the sequence length a lead byte announces and the valid range of the
// second byte (Unicode Table 3-7), or n == 0 for a byte that cannot start a sequence.
func seqInfo(c byte) (n int, lo, hi byte) {
	switch {
	case c >= 0xC2 && c <= 0xDF:
		return 2, 0x80, 0xBF
	case c == 0xE0:
		return 3, 0xA0, 0xBF
	case c == 0xED:
		return 3, 0x80, 0x9F
	case c >= 0xE1 && c <= 0xEF:
		return 3, 0x80, 0xBF
	case c == 0xF0:
		return 4, 0x90, 0xBF
	case c >= 0xF1 && c <= 0xF3:
		return 4, 0x80, 0xBF
	case c == 0xF4:
		return 4, 0x80, 0x8F
	}
	return 0, 0, 0
}

// maximalSubpart is the length of the invalid prefix of b that one U+FFFD replaces (>= 1).
func maximalSubpart(b []byte) int {
	n, lo, hi := seqInfo(b[0])
	if n == 0 {
		return 1
	}
	i := 1
	for ; i < n && i < len(b); i++ {
		c := b[i]
		if i == 1 && (c < lo || c > hi) || i > 1 && (c < 0x80 || c > 0xBF) {
			break
		}
	}
	return i
}

// incompleteTail returns how many trailing bytes of b form the start of a valid UTF-8
// sequence that is not finished yet (0 to 3). Those bytes must wait for more input.
func incompleteTail(b []byte) int {
	for k := 1; k <= 3 && k <= len(b); k++ {
		start := len(b) - k
		n, _, _ := seqInfo(b[start])
		if n == 0 {
			if b[start] >= 0x80 && b[start] <= 0xBF {
				continue // a continuation byte: the lead may be further back
			}
			return 0
		}
		if n > k && maximalSubpart(b[start:]) == k {
			return k
		}
		return 0
	}
	return 0
}

// toValidUTF8 returns s unchanged when it is valid UTF-8, else with invalid bytes replaced
// as appendLossy does.
func toValidUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	return string(appendLossy(nil, []byte(s)))
}
