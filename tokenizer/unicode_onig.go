package tokenizer

// The Rust library's split regexes run on Oniguruma, whose Unicode tables (16.0) are newer
// than Go's (15.0). These are the characters it counts as \p{L} or \p{N} that package
// unicode does not (none go the other way); classAt adds them so the hand-written scanner
// splits as Oniguruma does. TestOnigClassTables derives both lists again from the Rust
// library and fails if they change. (Patterns run by regexp2 still use Go's tables: see
// doc.go.)
var onigExtraLetters = [][2]rune{
	{0x1C89, 0x1C8A}, {0xA7CB, 0xA7CD}, {0xA7DA, 0xA7DC}, {0x105C0, 0x105F3},
	{0x10D4A, 0x10D65}, {0x10D6F, 0x10D85}, {0x10EC2, 0x10EC4}, {0x11380, 0x11389},
	{0x1138B, 0x1138B}, {0x1138E, 0x1138E}, {0x11390, 0x113B5}, {0x113B7, 0x113B7},
	{0x113D1, 0x113D1}, {0x113D3, 0x113D3}, {0x11BC0, 0x11BE0}, {0x13460, 0x143FA},
	{0x16100, 0x1611D}, {0x16D40, 0x16D6C}, {0x18CFF, 0x18CFF}, {0x1E5D0, 0x1E5ED},
	{0x1E5F0, 0x1E5F0}, {0x2EBF0, 0x2EE5D},
}

var onigExtraNumbers = [][2]rune{
	{0x10D40, 0x10D49}, {0x116D0, 0x116E3}, {0x11BF0, 0x11BF9}, {0x16130, 0x16139},
	{0x16D70, 0x16D79}, {0x1CCF0, 0x1CCF9}, {0x1E5F1, 0x1E5FA},
}

// onigMin is the smallest code point in either list: below it nothing needs a lookup.
const onigMin = 0x1C89

var onigLetterBits, onigNumberBits = runeBits(onigExtraLetters), runeBits(onigExtraNumbers)

func runeBits(ranges [][2]rune) []uint64 {
	bits := make([]uint64, (0x110000+63)/64)
	for _, rg := range ranges {
		for r := rg[0]; r <= rg[1]; r++ {
			bits[r>>6] |= 1 << (r & 63)
		}
	}
	return bits
}

func hasBit(bits []uint64, r rune) bool {
	return r >= 0 && r <= 0x10FFFF && bits[r>>6]&(1<<(r&63)) != 0
}

// onigClass returns the class Oniguruma gives a rune package unicode left unclassified.
func onigClass(r rune) uint8 {
	switch {
	case r < onigMin:
		return 0
	case hasBit(onigLetterBits, r):
		return clsL
	case hasBit(onigNumberBits, r):
		return clsN
	}
	return 0
}
