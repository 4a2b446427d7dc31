package env

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/env/data"
)

func TestCalculatorExact(t *testing.T) {
	cases := []struct{ in, want string }{
		{"123 * 456", "56088"},
		{"1 + 2 * 3", "7"},              // precedence
		{"(1 + 2) * 3", "9"},            // parentheses
		{"-2^2", "-4"},                  // ^ binds tighter than unary minus
		{"2^3^2", "512"},                // right-associative: 2^9
		{"2^-2", "0.25"},                // negative integer exponent
		{"0.1 + 0.2", "0.3"},            // exact, not 0.30000000000000004
		{"1/3", "1/3 (≈ 0.3333333333)"}, // non-terminating: fraction + approximation
		{"--3", "3"},
		{"1,000 × 2 ÷ 8", "250"},
		{"10 - 4 - 3", "3"}, // left-associative
		{"7/2", "3.5"},
		{"2**10", "1024"},
	}
	for _, c := range cases {
		v, err := Evaluate(c.in)
		if err != nil {
			t.Fatalf("%q: %v", c.in, err)
		}
		if got := FormatRat(v); got != c.want {
			t.Errorf("%q = %s, want %s", c.in, got, c.want)
		}
	}
	for _, bad := range []string{"1/0", "1/(2-2)", "0^-1", "2^0.5", "abc", "1 +", "(1", "1 2", "", "2^99999", "1..2"} {
		if v, err := Evaluate(bad); err == nil {
			t.Errorf("%q: want an error, got %v", bad, v)
		}
	}
	_, err := Evaluate("1/0")
	if err == nil || err.Error() != "division by zero" {
		t.Fatalf("1/0: %v", err)
	}
}

func TestCalculatorToolArguments(t *testing.T) {
	c := Calculator{}
	out, err := c.Call(context.Background(), json.RawMessage(`{"expression": "347 * 829"}`))
	if err != nil || out != "287663" { // 347·829 = 347·800 + 347·29 = 277600 + 10063
		t.Fatalf("got %q, %v", out, err)
	}
	for _, bad := range []string{`{}`, `{"expr": "1"}`, `{"expression": 5}`, `[1]`} {
		if _, err := c.Call(context.Background(), json.RawMessage(bad)); err == nil || !strings.Contains(err.Error(), "bad arguments") {
			t.Errorf("%s: want bad arguments, got %v", bad, err)
		}
	}
}

// Hand-worked BM25 (k1 = 1.5, b = 0.75) on three documents:
//
//	d0 "A" + "cat cat dog" → terms a cat cat dog (|d| = 4)
//	d1 "B" + "dog bird"    → b dog bird        (|d| = 3)
//	d2 "C" + "fish"        → c fish            (|d| = 2)     N = 3, avgdl = 9/3 = 3
//
// idf(cat) = ln(1 + (3−1+0.5)/(1+0.5)) = ln(2.6667) = 0.980829
// idf(dog) = ln(1 + (3−2+0.5)/(2+0.5)) = ln(1.6)    = 0.470004
// d0 norm = 1.5·(0.25 + 0.75·4/3) = 1.875;  d1 norm = 1.5·(0.25 + 0.75·3/3) = 1.5
// "cat" on d0: 0.980829·2·2.5/(2+1.875) = 1.265586
// "dog" on d0: 0.470004·1·2.5/(1+1.875) = 0.408699; on d1: 0.470004·2.5/(1+1.5) = 0.470004
func TestBM25HandWorked(t *testing.T) {
	ix := NewIndex([]Document{
		{ID: "0", Title: "A", Text: "cat cat dog"},
		{ID: "1", Title: "B", Text: "dog bird"},
		{ID: "2", Title: "C", Text: "fish"},
	})
	near := func(got, want float64) bool { return math.Abs(got-want) < 1e-6 }
	if s := ix.Score("cat", 0); !near(s, 1.2655861) {
		t.Errorf("cat/d0 = %.7f", s)
	}
	if s := ix.Score("dog", 0); !near(s, 0.4086988) {
		t.Errorf("dog/d0 = %.7f", s)
	}
	if s := ix.Score("Dog!", 1); !near(s, 0.4700036) {
		t.Errorf("dog/d1 = %.7f", s)
	}
	hits := ix.Search("dog", 5)
	if len(hits) != 2 || hits[0].Doc.ID != "1" || hits[1].Doc.ID != "0" {
		t.Fatalf("dog: want d1 (shorter) then d0, got %+v", hits)
	}
	if hits := ix.Search("zebra", 5); len(hits) != 0 {
		t.Fatalf("unknown term matched %+v", hits)
	}
}

func TestSearchTool(t *testing.T) {
	docs, err := decodeCorpus(strings.NewReader(`{"id":"x","title":"Paris","text":"Paris is the capital of France."}
{"id":"y","title":"Rome","text":"Rome is the capital of Italy."}
`), "mem")
	if err != nil {
		t.Fatal(err)
	}
	st := &SearchTool{Index: NewIndex(docs), K: 1}
	out, err := st.Call(context.Background(), json.RawMessage(`{"query": "capital of Italy"}`))
	if err != nil || out != "[1] Rome\nRome is the capital of Italy." {
		t.Fatalf("got %q, %v", out, err)
	}
	if _, err := st.Call(context.Background(), json.RawMessage(`{"query": "x", "k": 99}`)); err == nil {
		t.Fatal("k = 99 accepted")
	}
	_, err = decodeCorpus(strings.NewReader("{\"id\":\"a\",\"text\":\"ok\"}\n{oops\n"), "c.jsonl")
	if err == nil || !strings.Contains(err.Error(), "c.jsonl line 2") {
		t.Fatalf("bad corpus line: %v", err)
	}
}

func TestStripCodeFence(t *testing.T) {
	if got := StripCodeFence("```python\nprint(1)\n```"); got != "print(1)" {
		t.Fatalf("got %q", got)
	}
	if got := StripCodeFence("print(2)"); got != "print(2)" {
		t.Fatalf("got %q", got)
	}
}

// Huge powers are refused before they are computed: (9^9999)^9999 would have ~3·10^8 bits.
func TestCalculatorRefusesHugePowers(t *testing.T) {
	start := time.Now()
	for _, e := range []string{"(9^9999)^9999", "2^9999^2", "(10^6000)*(10^6000)"} {
		if _, err := Evaluate(e); err == nil || !strings.Contains(err.Error(), "too large") {
			t.Errorf("%s: %v", e, err)
		}
	}
	if v, err := Evaluate("2^3000 / 2^2999"); err != nil || FormatRat(v) != "2" { // 2^3000 has 904 digits
		t.Errorf("2^3000/2^2999 = %v, %v", v, err)
	}
	if d := time.Since(start); d > time.Second {
		t.Fatalf("took %v", d)
	}
}

// A corpus path pointing at an endless stream fails at the line bound instead of exhausting
// memory; an empty corpus is an error, not an index that finds nothing.
func TestReadCorpusBounds(t *testing.T) {
	if _, err := ReadCorpus("/dev/zero"); !errors.Is(err, data.ErrLineTooLong) || !strings.HasPrefix(err.Error(), "corpus /dev/zero line 1: ") {
		t.Errorf("/dev/zero: %v", err)
	}
	if _, err := decodeCorpus(strings.NewReader("\n\n"), "empty.jsonl"); err == nil || err.Error() != "corpus empty.jsonl: no documents" {
		t.Errorf("empty: %v", err)
	}
}
