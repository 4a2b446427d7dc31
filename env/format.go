package env

import (
	"context"
	"regexp"
	"strings"
	"unicode"

	"github.com/mtgrpo/mtgrpo/env/sandbox"
)

// Format validation by domain. Each returns true when the final message has the form the task
// asks for; correctness is checked separately.

// FormatMath: the answer is given as "#### <number>" (GSM8K's form; verl's strict extraction).
func FormatMath(text string) bool { return ExtractStrict(text) != "" }

// FormatGeneral: the message is not blank and contains each required tag pair
// (e.g. "answer" for <answer>...</answer>) with non-blank content.
func FormatGeneral(text string, tags ...string) bool {
	if strings.TrimSpace(text) == "" {
		return false
	}
	for _, tag := range tags {
		if v, ok := ExtractTag(text, tag); !ok || strings.TrimSpace(v) == "" {
			return false
		}
	}
	return true
}

// ExtractTag returns the content of the last <tag>...</tag>, and whether there was one.
func ExtractTag(text, tag string) (string, bool) {
	open, close := "<"+tag+">", "</"+tag+">"
	j := strings.LastIndex(text, close)
	if j < 0 {
		return "", false
	}
	i := strings.LastIndex(text[:j], open)
	if i < 0 {
		return "", false
	}
	return strings.TrimSpace(text[i+len(open) : j]), true
}

var fenceRe = regexp.MustCompile("(?s)```(?:python|py)?[ \t]*\n(.*?)```")

// ExtractCode returns the last fenced code block (```python ... ```), and whether there was one.
func ExtractCode(text string) (string, bool) {
	m := fenceRe.FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		return "", false
	}
	return m[len(m)-1][1], true
}

// CodeChecker decides whether Python source parses. SandboxChecker asks the real interpreter;
// HeuristicChecker is the fallback where there is none.
type CodeChecker interface {
	Parses(ctx context.Context, code string) bool
}

// FormatCode: the message has a fenced code block that parses.
func FormatCode(ctx context.Context, text string, c CodeChecker) bool {
	code, ok := ExtractCode(text)
	if !ok || strings.TrimSpace(code) == "" {
		return false
	}
	if c == nil {
		c = HeuristicChecker{}
	}
	return c.Parses(ctx, code)
}

// SandboxChecker compiles the code with the sandbox's interpreter (compile() only: nothing runs).
type SandboxChecker struct{ SB *sandbox.Sandbox }

// Parses implements CodeChecker. If the sandbox itself fails it falls back to the heuristic.
func (c SandboxChecker) Parses(ctx context.Context, code string) bool {
	prog := "import sys\nsrc = " + pyString(code) + "\ncompile(src, 'answer.py', 'exec')\n"
	r, err := c.SB.Run(ctx, prog)
	if err != nil || r.TimedOut {
		return HeuristicChecker{}.Parses(ctx, code)
	}
	return r.OK()
}

// pyString writes s as a Python string literal (JSON string syntax is a subset of Python's).
func pyString(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch {
		case r == '"' || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r < 0x20 || r == 0x7f:
			b.WriteString(`\x` + string("0123456789abcdef"[r>>4]) + string("0123456789abcdef"[r&15]))
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte('"')
	return b.String()
}

// HeuristicChecker accepts code whose brackets balance outside strings and comments and whose
// block openers (lines ending in ":") are followed by an indented line. It is a fallback, not a
// parser: it accepts some invalid programs.
type HeuristicChecker struct{}

// Parses implements CodeChecker.
func (HeuristicChecker) Parses(_ context.Context, code string) bool {
	var stack []rune
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	var quote rune
	comment := false
	for _, r := range code {
		switch {
		case comment:
			comment = r != '\n'
		case quote != 0:
			if r == quote {
				quote = 0
			}
		case r == '#':
			comment = true
		case r == '"' || r == '\'':
			quote = r
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				return false
			}
			stack = stack[:len(stack)-1]
		}
	}
	return len(stack) == 0 && quote == 0 && blocksIndented(code)
}

func blocksIndented(code string) bool {
	lines := strings.Split(code, "\n")
	for i, l := range lines {
		t := strings.TrimSpace(l)
		if !strings.HasSuffix(t, ":") || strings.HasPrefix(t, "#") {
			continue
		}
		next := ""
		for _, n := range lines[i+1:] {
			if strings.TrimSpace(n) != "" {
				next = n
				break
			}
		}
		if indent(next) <= indent(l) {
			return false
		}
	}
	return true
}

func indent(l string) int { return len(l) - len(strings.TrimLeft(l, " \t")) }

// NormalizeText is SQuAD's answer normalisation: lower case, no punctuation, no articles
// (a, an, the), single spaces.
func NormalizeText(s string) string {
	s = strings.Map(func(r rune) rune {
		if unicode.IsPunct(r) || unicode.IsSymbol(r) {
			return ' '
		}
		return unicode.ToLower(r)
	}, s)
	var out []string
	for _, w := range strings.Fields(s) {
		if w != "a" && w != "an" && w != "the" {
			out = append(out, w)
		}
	}
	return strings.Join(out, " ")
}
