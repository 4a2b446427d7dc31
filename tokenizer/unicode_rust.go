package tokenizer

// rustUnassigned lists the characters with normalisation properties in Go's Unicode 15
// tables that the Rust library's normalizer (unicode-normalization-alignments, with older
// tables) does not know: to it they are starters that neither decompose nor compose.
// TestRustUnicodeTables derives this list again from the Rust normalizers and fails if it
// changes.
var rustUnassigned = [][2]rune{
	{0x07FD, 0x07FD}, {0x0898, 0x089F}, {0x08CA, 0x08D3}, {0x09FE, 0x09FE},
	{0x0C3C, 0x0C3C}, {0x0D3B, 0x0D3C}, {0x0EBA, 0x0EBA}, {0x1715, 0x1715},
	{0x1ABF, 0x1ACE}, {0x1DF6, 0x1DFA}, {0x32FF, 0x32FF}, {0xA7F2, 0xA7F4},
	{0xA82C, 0xA82C}, {0xAB69, 0xAB69}, {0x10781, 0x10785}, {0x10787, 0x107B0},
	{0x107B2, 0x107BA}, {0x10D24, 0x10D27}, {0x10EAB, 0x10EAC}, {0x10EFD, 0x10EFF},
	{0x10F46, 0x10F50}, {0x10F82, 0x10F85}, {0x11070, 0x11070}, {0x1133B, 0x1133B},
	{0x1145E, 0x1145E}, {0x11839, 0x1183A}, {0x11938, 0x11938}, {0x1193D, 0x1193E},
	{0x11943, 0x11943}, {0x119E0, 0x119E0}, {0x11A34, 0x11A34}, {0x11A47, 0x11A47},
	{0x11A99, 0x11A99}, {0x11D42, 0x11D42}, {0x11D44, 0x11D45}, {0x11D97, 0x11D97},
	{0x11F41, 0x11F42}, {0x16FF0, 0x16FF1}, {0x1E030, 0x1E06D}, {0x1E08F, 0x1E08F},
	{0x1E130, 0x1E136}, {0x1E2AE, 0x1E2AE}, {0x1E2EC, 0x1E2EF}, {0x1E4EC, 0x1E4EF},
	{0x1F16C, 0x1F16C}, {0x1FBF0, 0x1FBF9},
}

// unassignedBits is rustUnassigned as a bitset over all code points.
var unassignedBits = func() []uint64 {
	bits := make([]uint64, (0x110000+63)/64)
	for _, rg := range rustUnassigned {
		for r := rg[0]; r <= rg[1]; r++ {
			bits[r>>6] |= 1 << (r & 63)
		}
	}
	return bits
}()

func rustKnows(r rune) bool {
	return r < 0 || r > 0x10FFFF || unassignedBits[r>>6]&(1<<(r&63)) == 0
}

// hasRustUnassigned reports whether s contains a character of rustUnassigned.
func hasRustUnassigned(s string) bool {
	for _, r := range s {
		if r >= 0x7FD && !rustKnows(r) {
			return true
		}
	}
	return false
}
