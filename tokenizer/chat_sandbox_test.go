package tokenizer

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/nikolalohinski/gonja/v2/builtins"
	"github.com/nikolalohinski/gonja/v2/exec"
)

// render compiles src with lim and renders it over one user message.
func render(src string, lim templateLimits) (string, error) {
	c, err := compileTemplate("test template", src, lim)
	if err != nil {
		return "", err
	}
	d, _ := messageDict(Message{Role: "user", Content: "hi"})
	return execute(c, map[string]any{"messages": []any{d}, "add_generation_prompt": true})
}

// Each hostile template below crashed the process, read a host file, or ran without end before
// the sandbox (the comment says which); now each fails with an error that names the template and
// says what was refused. All run with the default limits, except that those which spend the step
// or byte budget slowly get a smaller one (steps, bytes), to keep the test short.
func TestHostileTemplatesFail(t *testing.T) {
	cases := []struct {
		name, src, want string
		steps, bytes    int
	}{
		// Rendered every environment variable of the process into the prompt.
		{"include a host file", `{% include "/proc/self/environ" %}`, `line 1: {% include %}: chat templates cannot load other templates or files`, 0, 0},
		{"import", `{% import "/etc/passwd" as p %}`, `{% import %}`, 0, 0},
		{"from import", `{% from "/etc/passwd" import x %}`, `{% from %}`, 0, 0},
		{"extends", `{% extends "/etc/passwd" %}`, `{% extends %}`, 0, 0},
		// Stack overflow: fatal, no recover.
		{"recursive macro", `{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}`, "macro f: calls nest more than 256 deep", 0, 0},
		{"mutual recursion", `{% macro a() %}{{ b() }}{% endmacro %}{% macro b() %}{{ a() }}{% endmacro %}{{ a() }}`, "nest more than 256 deep", 0, 0},
		{"self-containing namespace", `{% set ns = namespace(a=1) %}{% set ns.me = [ns] %}{{ ns }}`, "set ns.me: the value contains ns itself (a cycle)", 0, 0},
		{"recursive loop", `{% for x in [1] recursive %}{{ loop([x]) }}{% endfor %}`, "line 1: recursive for loops are not supported", 0, 0},
		// Out of memory.
		{"range 1e9", `{{ range(1000000000)|length }}`, "range(0, 1000000000, 1) would yield 1000000000 items; the sandbox allows 100000", 0, 0},
		{"string repeat 2^31", `{{ 'x' * 2147483648 }}`, "a string of 1 bytes * 2147483648 would build 2147483648 bytes", 0, 0},
		{"doubling by ~", `{% set ns = namespace(s='x') %}{% for i in range(64) %}{% set ns.s = ns.s ~ ns.s %}{% endfor %}`, "a string of 67108864 bytes ~ a string of 67108864 bytes would build 134217728 bytes, more than the", 0, 0},
		{"doubling by +", `{% set ns = namespace(s='xx') %}{% for i in range(64) %}{% set ns.s = ns.s + ns.s %}{% endfor %}`, "would build", 0, 0},
		{"list doubling", `{% set ns = namespace(l=[1]) %}{% for i in range(64) %}{% set ns.l = ns.l + ns.l %}{% endfor %}`, "more than 100000 steps", 100_000, 0},
		{"join of a huge range", `{{ range(100000)|join('x' * 100000) }}`, "filter join would build", 0, 0},
		{"center", `{{ 'x'|center(2000000000) }}`, "filter center would build 2000000000 bytes", 0, 0},
		{"indent", `{{ ('a\n' * 100000)|indent(100000) }}`, "filter indent would build", 0, 0},
		{"format filter width", `{{ '%2000000000d'|format(1) }}`, "filter format would build", 0, 0},
		{"str.format width", `{{ '{:>2000000000}'.format(1) }}`, "method format would build", 0, 0},
		{"ljust", `{{ 'x'.ljust(2000000000) }}`, "method ljust would build", 0, 0},
		{"replace empty", `{% set s = 'x' * 100000 %}{{ s.replace('', 'y' * 10000, -1) }}`, "method replace would build", 0, 0},
		{"replace filter", `{{ ('x' * 100000)|replace('x', 'y' * 10000) }}`, "filter replace would build", 0, 0},
		{"batch fill", `{{ [1]|batch(2000000000, 0)|list }}`, "filter batch would build", 0, 0},
		{"slice", `{{ [1]|slice(2000000000)|list }}`, "filter slice would build", 0, 0},
		{"lipsum", `{{ lipsum(1000000, max=1000000) }}`, "lipsum would build", 0, 0},
		{"tojson indent", `{{ [[[[1]]]]|tojson(indent=2000000000) }}`, "tojson: the output would pass", 0, 0},
		{"printing in a loop", `{% set s = 'x' * 10000000 %}{% for i in range(100000) %}{{ s }}{% endfor %}`, "printing a string of 10000000 bytes would build", 0, 32 << 20},
		{"text in a loop", `{% for i in range(100000) %}{% for j in range(100000) %}` + strings.Repeat("A", 1000) + `{% endfor %}{% endfor %}`, "the template's text would build", 0, 16 << 20},
		// Ran for hours.
		{"nested loops", `{% for i in range(100000) %}{% for j in range(100000) %}{% endfor %}{% endfor %}`, "more than 100000 steps", 100_000, 0},
		// Work linear in a large value, repeated in a loop: hours of CPU with nothing allocated.
		{"in over a large list", `{% set l = range(100000)|list %}{% for i in range(100000) %}{% if -1 in l %}{% endif %}{% endfor %}`, "more than 100000 steps", 100_000, 0},
		{"test over a large list", `{% set l = range(100000)|list %}{% for i in range(100000) %}{% if -1 is in l %}{% endif %}{% endfor %}`, "more than 100000 steps", 100_000, 0},
		{"== of large lists", `{% set l = range(100000)|list %}{% for i in range(100000) %}{% if l == l %}{% endif %}{% endfor %}`, "more than 100000 steps", 100_000, 0},
		{"filter over a large list", `{% set l = range(100000)|list %}{% for i in range(100000) %}{% if l|unique|list %}{% endif %}{% endfor %}`, "more than 100000 steps", 100_000, 0},
		{"method on a large list", `{% set l = range(100000)|list %}{% for i in range(100000) %}{% if l.copy() %}{% endif %}{% endfor %}`, "more than 100000 steps", 100_000, 0},
		// Immutable, as transformers' sandbox.
		{"list.append", `{% set l = [] %}{% do l.append(1) %}`, "append() is refused", 0, 0},
		{"dict.update", `{% set d = {} %}{% do d.update({'a': 1}) %}`, "update() is refused", 0, 0},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			lim := defaultLimits
			if c.steps > 0 {
				lim.maxSteps = c.steps
			}
			if c.bytes > 0 {
				lim.maxBytes = c.bytes
			}
			start := time.Now()
			out, err := render(c.src, lim)
			// Compile-time refusals are named by Load (see TestTemplateErrorsNameTheFile).
			named := err != nil && (strings.Contains(err.Error(), "chat template test template: ") ||
				strings.HasPrefix(err.Error(), "chat template: "))
			if !named || !strings.Contains(err.Error(), c.want) {
				t.Errorf("got %d bytes, err %v\nwant an error naming the template and containing %q", len(out), err, c.want)
			}
			if d := time.Since(start); d > 5*time.Second {
				t.Errorf("took %v", d)
			}
		})
	}
}

// The source is checked before gonja parses it: its size, and how deep brackets, blocks and
// prefix operators nest (the parser recurses on each; 100,000 of them overflowed its stack).
func TestHostileSourcesFail(t *testing.T) {
	cases := []struct{ name, src, want string }{
		{"deep brackets", "{{ " + strings.Repeat("(", 100000) + "1" + strings.Repeat(")", 100000) + " }}", "nest more than 128 deep"},
		{"deep lists", "{{ " + strings.Repeat("[", 100000) + strings.Repeat("]", 100000) + " }}", "nest more than 128 deep"},
		{"deep blocks", strings.Repeat("{% if 1 %}", 10000) + strings.Repeat("{% endif %}", 10000), "nest more than 128 deep"},
		{"unary minus", "{{ " + strings.Repeat("-", 100000) + "1 }}", "nest more than 128 deep"},
		{"not not", "{{ " + strings.Repeat("not ", 100000) + "1 }}", "nest more than 128 deep"},
		{"too large", strings.Repeat("x", 2<<20), "the template is 2097152 bytes; at most 1048576 are accepted"},
		// gonja quotes each failing sub-expression in its error: failing took hours.
		{"long accessor chain", "{{ 1" + strings.Repeat(".x", 10000) + " }}", "line 1: a tag of more than 512 tokens"},
		{"long item chain", "{% set y = 1" + strings.Repeat("[x]", 10000) + " %}", "a tag of more than 512 tokens"},
		{"trans", "{% trans %}x{% endtrans %}", "trans"},
		// gonja's lexer loops forever on these, allocating empty tokens until memory runs out.
		{"number, dot, non-ASCII", "{{ 0.é }}", `line 1: a number followed by '.' and 'é'`},
		{"float, dot, non-ASCII", "{% if 1.5.ü %}{% endif %}", `a number followed by '.' and 'ü'`},
		{"exponent, dot, non-ASCII", "{{ x + 1e5.→ }}", `a number followed by '.' and '→'`},
		{"after a lexing error", "{%!0.ꔤ'\r", `a number followed by '.' and 'ꔤ'`},
	}
	for _, c := range cases {
		if _, err := render(c.src, defaultLimits); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want one containing %q", c.name, err, c.want)
		}
	}
}

// What the sandbox allows keeps its meaning: refused tags on branches not taken (transformers
// fails at render time too), range up to the limit, repetition, loops, macros within depth, set
// on a namespace, block in place, with, filter and raw blocks.
func TestSandboxKeepsJinjaSemantics(t *testing.T) {
	cases := []struct{ src, want string }{
		{`{% if false %}{% include "x" %}{% endif %}ok`, "ok"},
		{`{{ range(100000)|length }} {{ range(2, 11, 3)|list }} {{ range(5, 0, -2)|join(',') }}`, "100000 [2, 5, 8] 5,3,1"},
		{`{{ '-' * 3 }}{{ 'a' ~ 1 }}{{ 'b' + 'c' }}{{ 2 * 3 }}{{ 1 + 1.5 }}{{ [1] + [2] }}`, "---a1bc62.5[1, 2]"},
		{`{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(200) | length }}`, "492"},
		{`{% set ns = namespace(n=0, l=[]) %}{% for m in messages %}{% set ns.n = ns.n + 1 %}{% set ns.l = ns.l + [m.role] %}{% endfor %}{{ ns.n }}{{ ns.l }}`, "1['user']"},
		{`{% block b %}in place{% endblock %}`, "in place"},
		{`{% with a = 1, b = 'x' %}{{ a }}{{ b }}{% endwith %}`, "1x"},
		{`{% filter upper %}abc{% endfilter %}`, "ABC"},
		{`{% raw %}{{ not rendered }}{% endraw %}`, "{{ not rendered }}"},
		{`{% set x %}cap{{ 1 }}{% endset %}{{ x }}`, "cap1"},
		{`{% set y = 1 if false else 2 %}{{ y }}`, "2"},
		{`{{ 1.5 }} {{ "1.é" }} 2.é {{ 3 }}.é {# 4.é #}`, `1.5 1.é 2.é 3.é `},
		{`{{ 'a b c d'|wordwrap(3) }}|{{ 'x'.center(5, '*') }}|{{ messages[0].items()|list }}`, "a b\nc d|**x**|[['role', 'user'], ['content', 'hi']]"},
	}
	for _, c := range cases {
		got, err := render(c.src, defaultLimits)
		if err != nil || got != c.want {
			t.Errorf("%s: %q %v, want %q", c.src, got, err, c.want)
		}
	}
}

// The same limits with small numbers, to check each one is where it should be: a step is a block
// execution, a range item, or a macro, filter or method call.
func TestSandboxLimitsAreExact(t *testing.T) {
	lim := defaultLimits
	lim.maxSteps, lim.maxRange, lim.maxDepth = 100, 50, 3
	// One template start, one body per item: range(40) costs 40 steps for its items, 40 bodies,
	// 1 start: 81; range(60) is past maxRange.
	if _, err := render(`{% for i in range(40) %}{% endfor %}`, lim); err != nil {
		t.Errorf("81 steps: %v", err)
	}
	if _, err := render(`{% for i in range(50) %}{% endfor %}`, lim); err == nil || !strings.Contains(err.Error(), "more than 100 steps") {
		t.Errorf("101 steps: %v", err)
	}
	if _, err := render(`{{ range(51)|length }}`, lim); err == nil || !strings.Contains(err.Error(), "the sandbox allows 50") {
		t.Errorf("range(51): %v", err)
	}
	// Depth 3: f(2) → f(1) → f(0) is three calls deep; f(3) is four.
	deep := `{% macro f(n) %}{% if n > 0 %}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(%d) }}`
	if _, err := render(strings.Replace(deep, "%d", "2", 1), lim); err != nil {
		t.Errorf("depth 3: %v", err)
	}
	if _, err := render(strings.Replace(deep, "%d", "3", 1), lim); err == nil || !strings.Contains(err.Error(), "nest more than 3 deep") {
		t.Errorf("depth 4: %v", err)
	}
	// Bytes: 1,000 bytes of budget beyond 4× the input ("user" and "hi": 6 bytes, so 24).
	lim = defaultLimits
	lim.maxBytes = 1000
	// 'x' * 1000 builds 1000 (24 left), printing it would need 1000 more.
	if _, err := render(`{{ 'x' * 1000 }}`, lim); err == nil ||
		!strings.Contains(err.Error(), "printing a string of 1000 bytes would build 1000 bytes, more than the 24 bytes the render has left") {
		t.Errorf("x*1000: %v", err)
	}
	if _, err := render(`{{ 'x' * 500 }}`, lim); err != nil { // 500 built + 500 printed = 1000 ≤ 1024
		t.Errorf("x*500: %v", err)
	}
}

// Errors of a template loaded from a model directory name its file.
func TestTemplateErrorsNameTheFile(t *testing.T) {
	dir := t.TempDir()
	if err := WriteTiny(dir); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "tokenizer_config.json")
	if err := os.WriteFile(cfg, []byte(`{"chat_template": "{{ range(1000000000)|length }}"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	tk, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tk.ApplyChatTemplate(nil, ChatOptions{}); err == nil || !strings.Contains(err.Error(), "chat template "+cfg+": ") {
		t.Errorf("tokenizer_config.json: %v", err)
	}
	jinja := filepath.Join(dir, "chat_template.jinja")
	if err := os.WriteFile(jinja, []byte(`{% include "/proc/self/environ" %}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if tk, err = Load(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := tk.ApplyChatTemplate(nil, ChatOptions{}); err == nil || !strings.Contains(err.Error(), "chat template "+jinja+": ") {
		t.Errorf("chat_template.jinja: %v", err)
	}
	if err := os.WriteFile(jinja, []byte(strings.Repeat("{{ (", 200)), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = Load(dir); err == nil || !strings.Contains(err.Error(), jinja+": chat template: line 1: ") {
		t.Errorf("compile error: %v", err)
	}
}

// The linear wordwrap writes what gonja's does.
func TestWordwrapMatchesGonja(t *testing.T) {
	gonja, _ := builtins.Filters.Get("wordwrap")
	for _, s := range []string{"", "one", "a b c d e f", "héllo wörld  and\n\nmore  words here", "  lead\ttab\nx ", strings.Repeat("ab ", 50)} {
		for _, w := range []int{1, 3, 5, 10, 79, 0, -1} {
			args := func() *exec.VarArgs {
				return &exec.VarArgs{Args: []*exec.Value{exec.AsValue(w)}, KwArgs: map[string]*exec.Value{}}
			}
			want := gonja(nil, exec.AsValue(s), args()).String()
			if got := filterWordwrap(nil, exec.AsValue(s), args()).String(); got != want {
				t.Errorf("wordwrap(%q, %d) = %q, gonja %q", s, w, got, want)
			}
		}
	}
	start := time.Now()
	long := exec.AsValue(strings.Repeat("word ", 200000))
	filterWordwrap(nil, long, &exec.VarArgs{Args: []*exec.Value{exec.AsValue(1 << 30)}, KwArgs: map[string]*exec.Value{}})
	if d := time.Since(start); d > time.Second {
		t.Errorf("wordwrap of 1 MB on one line took %v", d)
	}
}

// Every filter and method name the sandbox lists exists in gonja, so none is silently missing.
func TestSandboxListsExist(t *testing.T) {
	for _, name := range chatFilters {
		if _, ok := baseFilter(name); !ok {
			t.Errorf("filter %s is not in gonja", name)
		}
	}
	m := builtins.Methods
	for _, name := range strMethods {
		if !m.Str.Exists(name) {
			t.Errorf("str method %s is not in gonja", name)
		}
	}
	for _, name := range dictMethods {
		if !m.Dict.Exists(name) {
			t.Errorf("dict method %s is not in gonja", name)
		}
	}
}

// The real templates stay far inside the default limits on long conversations: 500 rounds of
// user, assistant with a tool call, tool result and answer (2,000 messages, 0.5 MB) use under a
// tenth of the step budget and of the byte budget each.
func TestSandboxBudgetOfLongConversations(t *testing.T) {
	requireAssets(t)
	var msgs []Message
	for i := range 500 {
		text := strings.Repeat(fmt.Sprintf("message %d, ", i), 12)
		msgs = append(msgs, Message{Role: "user", Content: text},
			Message{Role: "assistant", Content: "<think>\nplan\n</think>\n\ncalling", ToolCalls: []ToolCall{{Name: "search",
				Arguments: json.RawMessage(`{"q": "` + text + `"}`)}}},
			Message{Role: "tool", Content: text, Name: "search"},
			Message{Role: "assistant", Content: text})
	}
	tool := json.RawMessage(`{"type": "function", "function": {"name": "search", "description": "Search.", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}}`)
	llama, err := os.ReadFile("testdata/templates/llama3_1.jinja")
	if err != nil {
		t.Fatal(err)
	}
	for name, src := range map[string]string{"qwen3": loadModel(t, "tokenizer-qwen3").Config().ChatTemplate,
		"llama3.1": string(llama), "tiny": loadModel(t, "tiny").Config().ChatTemplate} {
		c, err := compileTemplate(name, src, defaultLimits)
		if err != nil {
			t.Fatal(err)
		}
		tk := loadModel(t, "tiny")
		list, _ := messageList(msgs)
		vars, err := tk.templateVars(list, ChatOptions{AddGenerationPrompt: true, Tools: []json.RawMessage{tool}})
		if err != nil {
			t.Fatal(err)
		}
		b := newBudget(defaultLimits, inputBytes(vars, 0))
		total := b.bytes
		out, err := executeWith(c, vars, b)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		steps, bytes := defaultLimits.maxSteps-b.steps, total-b.bytes
		t.Logf("%s: %d bytes out; %d steps (limit %d), %d bytes built or printed (budget %d)", name, len(out), steps, defaultLimits.maxSteps, bytes, total)
		if steps > defaultLimits.maxSteps/10 || bytes > total/10 {
			t.Errorf("%s uses more than a tenth of a budget", name)
		}
	}
}
