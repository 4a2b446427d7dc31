package env

import (
	"math/big"
	"regexp"
	"strings"
)

// Answer extraction for math word problems.
//
// Strict follows verl's gsm8k reward (verl/utils/reward_score/gsm8k.py, method "strict"): the
// answer is the number after "#### " (four hashes and exactly one space, as in verl's regex, so
// "####42" has no strict answer), commas and "$" removed; the last match wins, as in verl's
// newer versions. verl first clips the text to its last 300 characters (a speed measure); we
// search the whole text, which differs only when the last "#### " is further from the end. Lenient tries, in order: "#### ", the last \boxed{...}, the last
// "Answer:" line, then the last number in the text (verl's "flexible").
//
// Deviation: verl compares answer strings exactly; AnswersEqual compares numbers as exact
// rationals, so "72.0", "72" and "$72" agree. Non-numeric answers compare as trimmed strings.

var (
	hashRe    = regexp.MustCompile(`#### (-?[0-9.,]*[0-9])`)
	numberRe  = regexp.MustCompile(`-?[0-9][0-9,]*(?:\.[0-9]+)?|-?\.[0-9]+`)
	answerRe  = regexp.MustCompile(`(?i)answer\s*(?:is)?\s*[:=]\s*([^\n]*)`)
	boxedOpen = `\boxed{`
)

// ExtractStrict returns the answer after the last "####", or "" when there is none.
func ExtractStrict(text string) string {
	m := hashRe.FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		return ""
	}
	return cleanNumber(m[len(m)-1][1])
}

// ExtractBoxed returns the contents of the last \boxed{...} (braces balanced), or "".
func ExtractBoxed(text string) string {
	i := strings.LastIndex(text, boxedOpen)
	if i < 0 {
		return ""
	}
	depth := 1
	body := text[i+len(boxedOpen):]
	for j, r := range body {
		switch r {
		case '{':
			depth++
		case '}':
			depth--
			if depth == 0 {
				return strings.TrimSpace(body[:j])
			}
		}
	}
	return ""
}

// ExtractAnswerLine returns what follows the last "Answer:" (or "answer is:"), as a number when
// the line has one.
func ExtractAnswerLine(text string) string {
	m := answerRe.FindAllStringSubmatch(text, -1)
	if len(m) == 0 {
		return ""
	}
	line := strings.TrimSpace(m[len(m)-1][1])
	if n := numberRe.FindString(line); n != "" {
		return cleanNumber(n)
	}
	return strings.TrimRight(line, ".")
}

// ExtractLastNumber returns the last number in the text, or "".
func ExtractLastNumber(text string) string {
	m := numberRe.FindAllString(text, -1)
	if len(m) == 0 {
		return ""
	}
	return cleanNumber(m[len(m)-1])
}

// ExtractLenient tries every form, strictest first.
func ExtractLenient(text string) string {
	for _, f := range []func(string) string{ExtractStrict, extractBoxedNumber, ExtractAnswerLine, ExtractLastNumber} {
		if a := f(text); a != "" {
			return a
		}
	}
	return ""
}

// extractBoxedNumber returns the number in the last \boxed{...} when it holds exactly one
// ("72", "\$72", "72 apples", "\text{72}\%" all give 72), else its whole content
// ("\frac{1}{2}", "x+1").
func extractBoxedNumber(text string) string {
	b := ExtractBoxed(text)
	if n := numberRe.FindAllString(b, 2); len(n) == 1 {
		return cleanNumber(n[0])
	}
	return b
}

// cleanNumber drops thousands separators, "$" and a trailing full stop.
func cleanNumber(s string) string {
	s = strings.ReplaceAll(s, ",", "")
	s = strings.ReplaceAll(s, "$", "")
	return strings.TrimRight(strings.TrimSpace(s), ".")
}

// AnswersEqual compares an extracted answer with the ground truth: exactly as rationals when both
// are numbers, else as trimmed, case-folded strings. An empty answer is never equal.
func AnswersEqual(answer, truth string) bool {
	answer, truth = strings.TrimSpace(answer), strings.TrimSpace(truth)
	if answer == "" {
		return false
	}
	a, okA := parseRat(answer)
	t, okT := parseRat(truth)
	if okA && okT {
		return a.Cmp(t) == 0
	}
	return strings.EqualFold(answer, truth)
}

func parseRat(s string) (*big.Rat, bool) {
	s = cleanNumber(s)
	if s == "" || strings.ContainsAny(s, "/eE") { // plain decimals only; no "1/2", no exponents
		return nil, false
	}
	r, ok := new(big.Rat).SetString(s)
	return r, ok
}
