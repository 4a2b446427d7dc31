package untrusted

import (
	"strings"
	"testing"
)

// What a hostile server sends comes out as one printable line that shows the bytes sent: the
// terminal's escape sequences (OSC retitle, CSI clear and cursor moves, the 8-bit CSI), line
// breaks, bidi overrides and invalid UTF-8 are escaped; letters of any script stay.
func TestText(t *testing.T) {
	for in, want := range map[string]string{
		"Repository not found":                       "Repository not found",
		"Dépôt introuvable — 見つかりません":                "Dépôt introuvable — 見つかりません",
		"\x1b]0;pwned\x07\x1b[2J\x1b[Hrun: rm -rf ~": `\x1b]0;pwned\a\x1b[2J\x1b[Hrun: rm -rf ~`,
		"line one\r\nline two\ttab":                  `line one\r\nline two\ttab`,
		"\u009b31m red":                              `\u009b31m red`,
		"safe \u202etxt.exe":                         `safe \u202etxt.exe`,
		"bad \xff\xfe bytes":                         `bad \xff\xfe bytes`,
		"\x00\x7f":                                   `\x00\x7f`,
	} {
		got := Text(in)
		if got != want {
			t.Errorf("Text(%q) = %q, want %q", in, got, want)
		}
		if Clean(in) != (got == in) {
			t.Errorf("Clean(%q) = %v, but Text changes it: %v", in, Clean(in), got != in)
		}
		for _, r := range got {
			if r < 0x20 || r == 0x7f || (r >= 0x80 && r < 0xa0) || r == 0x202e {
				t.Errorf("Text(%q) keeps %U", in, r)
			}
		}
	}
}

// Text keeps MaxText bytes and counts the rest, cutting before a rune rather than inside it.
func TestTextBounded(t *testing.T) {
	long := strings.Repeat("a", MaxText-1) + "é" + strings.Repeat("b", 100) // é crosses the bound
	got := Text(long)
	if want := strings.Repeat("a", MaxText-1) + "... (102 more bytes)"; got != want {
		t.Errorf("cut: %q..., want %q...", got[MaxText-10:], want[MaxText-10:])
	}
	if Clean(long) {
		t.Error("a text over MaxText is Clean")
	}
}

func TestQuote(t *testing.T) {
	if got := Quote([]byte("\x1b[2Jhello"), 5); got != `"\x1b[2Jh"...` {
		t.Errorf("Quote: %s", got)
	}
	if got := Quote([]byte("ok"), 5); got != `"ok"` {
		t.Errorf("Quote: %s", got)
	}
}
