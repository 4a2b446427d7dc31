package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"
)

// The Rust library normalises with unicode-normalization-alignments, whose Unicode tables are
// older than Go's. Characters assigned since then are, to it, plain starters without
// decomposition. TestRustUnicodeTables probes every character with normalisation
// properties in Go through the Rust normalizers and checks that rustUnassigned (the table
// normalize.go applies) is exactly the set that behaves differently.

type probe struct {
	r     rune
	input string
}

// normProbes builds, per candidate rune, strings that expose its decomposition, its
// combining class (does it reorder past U+0334, class 1, or let U+0301 pass?) and its
// composition.
func normProbes() []probe {
	var ps []probe
	for r := rune(0); r <= utf8.MaxRune; r++ {
		if r >= 0xD800 && r <= 0xDFFF {
			continue
		}
		s := string(r)
		ccc := combiningClass(r)
		nfd, nfkd := norm.NFD.String(s), norm.NFKD.String(s)
		if ccc == 0 && nfd == s && nfkd == s {
			continue
		}
		ps = append(ps, probe{r, s})
		switch {
		case ccc > 1:
			ps = append(ps, probe{r, "x" + s + "\u0334"})
		case ccc == 1:
			ps = append(ps, probe{r, "x\u0301" + s})
		}
		if nfd != s && norm.NFC.String(nfd) == s {
			ps = append(ps, probe{r, nfd})
		}
	}
	return ps
}

func rustNormalize(t *testing.T, form string, inputs []string) []string {
	t.Helper()
	dir := t.TempDir()
	in, out := filepath.Join(dir, "in.json"), filepath.Join(dir, "out.json")
	data, _ := json.Marshal(inputs)
	if err := os.WriteFile(in, data, 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("node", "../scripts/tokenizer/normalize.js", form, in, out)
	cmd.Env = append(os.Environ(), "MTGRPO_NPM="+npmDir())
	if msg, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("normalize.js: %v\n%s", err, msg)
	}
	var res []string
	data, err := os.ReadFile(out)
	if err == nil {
		err = json.Unmarshal(data, &res)
	}
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func TestRustUnicodeTables(t *testing.T) {
	requireAssets(t)
	ps := normProbes()
	inputs := make([]string, len(ps))
	for i, p := range ps {
		inputs[i] = p.input
	}
	forms := map[string]norm.Form{"nfc": norm.NFC, "nfd": norm.NFD, "nfkc": norm.NFKC, "nfkd": norm.NFKD}
	differ := map[rune]bool{}
	for name, form := range forms {
		want := rustNormalize(t, name, inputs)
		n := unicodeNormalizer{form}
		for i, p := range ps {
			if got := n.normalize(p.input); got != want[i] {
				differ[p.r] = true
				if len(differ) <= 10 {
					t.Errorf("%s(%+q): go %+q, rust %+q", name, p.input, got, want[i])
				}
			}
		}
	}
	if len(differ) > 0 {
		var list []rune
		for r := range differ {
			list = append(list, r)
		}
		t.Errorf("%d characters normalise differently; rustUnassigned should gain: %v", len(list), runeRanges(list))
	}
}

// TestOnigClassTables finds, through the Rust library, every character its Oniguruma
// regexes count as \p{L} or \p{N}: a Split(Removed) pre-tokenizer drops the members from a
// string of all characters of planes 0-3 and 14, and decode shows what is left. The
// difference from package unicode must be exactly onigExtraLetters / onigExtraNumbers.
func TestOnigClassTables(t *testing.T) {
	requireAssets(t)
	base, err := os.ReadFile("testdata/tiny/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	classes := []struct {
		re     string
		inGo   func(rune) bool
		tables [][2]rune
	}{{`\p{L}`, unicode.IsLetter, onigExtraLetters}, {`\p{N}`, unicode.IsNumber, onigExtraNumbers}}
	var paths []string
	for i, c := range classes {
		var spec map[string]any
		if err := json.Unmarshal(base, &spec); err != nil {
			t.Fatal(err)
		}
		spec["normalizer"] = nil
		spec["pre_tokenizer"] = seq(split(re(c.re), "Removed", false), byteLevel(false, false))
		data, _ := json.Marshal(spec)
		p := filepath.Join(dir, fmt.Sprintf("%d.json", i))
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
		paths = append(paths, p)
	}
	var all []rune
	for r := rune(0x80); r <= 0xE01EF; r++ {
		if r >= 0xD800 && r <= 0xDFFF || r >= 0x40000 && r < 0xE0000 {
			continue
		}
		all = append(all, r)
	}
	_, texts, err := rustEncode(paths, []string{string(all)})
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range classes {
		kept := map[rune]bool{}
		for _, r := range texts[i][0][0] {
			kept[r] = true
		}
		var extra []rune
		for _, r := range all {
			onig := !kept[r]
			if onig && !c.inGo(r) {
				extra = append(extra, r)
			}
			if !onig && c.inGo(r) {
				t.Errorf("%s: Go counts %U in, Oniguruma does not", c.re, r)
			}
		}
		if got := runeRanges(extra); !slices.Equal(got, c.tables) {
			t.Errorf("%s: Oniguruma's extra members are now %#v", c.re, got)
		}
	}
}

// TestLowercaseTable runs the Rust Lowercase normalizer over every character of planes 0-3
// and 14 (separated by NUL, since a lowercase can be longer) and compares per character.
func TestLowercaseTable(t *testing.T) {
	requireAssets(t)
	base, err := os.ReadFile("testdata/tiny/tokenizer.json")
	if err != nil {
		t.Fatal(err)
	}
	var spec map[string]any
	if err := json.Unmarshal(base, &spec); err != nil {
		t.Fatal(err)
	}
	spec["normalizer"] = map[string]any{"type": "Lowercase"}
	data, _ := json.Marshal(spec)
	p := filepath.Join(t.TempDir(), "lower.json")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	var all []rune
	var in []rune
	for r := rune(0x80); r <= 0xE01EF; r++ {
		if r >= 0xD800 && r <= 0xDFFF || r >= 0x40000 && r < 0xE0000 {
			continue
		}
		all = append(all, r)
		in = append(in, r, 0)
	}
	_, texts, err := rustEncode([]string{p}, []string{string(in)})
	if err != nil {
		t.Fatal(err)
	}
	parts := strings.Split(texts[0][0][0], "\x00")
	bad := 0
	for i, r := range all {
		if got := (lowercaseNormalizer{}).normalize(string(r)); got != parts[i] {
			if bad++; bad <= 10 {
				t.Errorf("lowercase %U: go %+q, rust %+q", r, got, parts[i])
			}
		}
	}
}
