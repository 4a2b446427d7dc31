package config

import (
	"bufio"
	"os"
	"strings"
	"testing"
)

// corpusBlock is one run of testdata/foreign_lines.txt: its lines and what they must give.
type corpusBlock struct {
	name               string
	lines              []string
	want               [][2]string
	warnings, errorsIn []string
}

func readCorpus(t *testing.T, path string) []corpusBlock {
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []corpusBlock
	s := bufio.NewScanner(f)
	for s.Scan() {
		line := strings.TrimSpace(s.Text())
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
		case strings.HasPrefix(line, "== "):
			out = append(out, corpusBlock{name: line[3:]})
		case len(out) == 0:
			t.Fatalf("%s: %q before the first block", path, line)
		default:
			b := &out[len(out)-1]
			if k, v, ok := strings.Cut(line, " "); ok && k == "want" {
				key, val, _ := strings.Cut(v, " ")
				b.want = append(b.want, [2]string{key, val})
			} else if ok && k == "warn" {
				b.warnings = append(b.warnings, v)
			} else if ok && k == "error" {
				b.errorsIn = append(b.errorsIn, v)
			} else {
				b.lines = append(b.lines, line)
			}
		}
	}
	return out
}

// Lines copied from the other projects' scripts resolve to their meaning or get a reason: never
// "unknown key", each error line once, the result valid for a run, and the native values worked out from each project's
// semantics (the comments in the corpus show the arithmetic).
func TestForeignCorpus(t *testing.T) {
	for _, b := range readCorpus(t, "testdata/foreign_lines.txt") {
		over := append([]Override{}, withModel...)
		for _, l := range b.lines {
			o, err := ParseSet(l, "line")
			if err != nil {
				t.Fatalf("%s: %q: %v", b.name, l, err)
			}
			over = append(over, o)
		}
		c, err := Resolve(Sources{LookupEnv: noEnv, Overrides: over}) // validated, as a run is
		msg := ""
		if err != nil {
			msg = err.Error()
		}
		if strings.Contains(msg, "unknown key") {
			t.Errorf("%s: %v", b.name, err)
		}
		seen := map[string]bool{}
		for _, l := range strings.Split(msg, "\n") {
			if seen[l] {
				t.Errorf("%s: error line twice: %s", b.name, l)
			}
			seen[l] = true
		}
		for _, e := range b.errorsIn {
			if !strings.Contains(msg, e) {
				t.Errorf("%s: error %q, want one with %q", b.name, msg, e)
			}
		}
		if len(b.errorsIn) == 0 && err != nil {
			t.Errorf("%s: %v", b.name, err)
			continue
		}
		if c == nil {
			if len(b.want)+len(b.warnings) > 0 {
				t.Errorf("%s: wants and warnings need a block that resolves", b.name)
			}
			continue
		}
		all := strings.Join(c.Warnings(), "\n")
		for _, w := range b.warnings {
			if !strings.Contains(all, w) {
				t.Errorf("%s: warnings %q, want one with %q", b.name, c.Warnings(), w)
			}
		}
		for _, w := range b.want {
			v, ferr := fieldAt(reflectValue(c), w[0])
			if ferr != nil {
				t.Fatalf("%s: %v", b.name, ferr)
			}
			if got := fmtValue(v); got != w[1] {
				t.Errorf("%s: %s = %q (%s), want %q", b.name, w[0], got, c.Origin(w[0]), w[1])
			}
		}
	}
}
