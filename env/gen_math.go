package env

import (
	"fmt"
	"math/big"
	"math/rand/v2"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/env/data"
)

// GSM8KInstruction is appended to each question, exactly as verl's GSM8K preprocess does
// (examples/data_preprocess/gsm8k.py).
const GSM8KInstruction = `Let's think step by step and output the final answer after "####".`

// newRand is the generators' random source: PCG seeded by (seed, stream), so each task family
// draws its own sequence from the same seed.
func newRand(seed int64, stream string) *rand.Rand {
	h := uint64(1469598103934665603)
	for _, c := range []byte(stream) {
		h = (h ^ uint64(c)) * 1099511628211
	}
	return rand.New(rand.NewPCG(uint64(seed), h))
}

var (
	people = []string{"Ava", "Ben", "Chloe", "Dev", "Elif", "Femi", "Grace", "Hugo", "Ines", "Jon", "Kemal", "Lena", "Mina", "Noor", "Omar", "Priya"}
	items  = []string{"apples", "stickers", "marbles", "cookies", "pencils", "stamps", "shells", "cards"}
)

// wordProblem is one generated GSM8K-style problem: question, worked solution (GSM8K's
// <<calc=result>> annotations) and the integer answer.
type wordProblem struct {
	question, solution string
	answer             int
}

// DefaultMaxNumber is the largest number the word-problem templates reach with their own ranges
// (27 dollars an hour, 8 hours a day, 8 days); MinMaxNumber and MaxMaxNumber bound
// Config.Math.MaxNumber.
const (
	DefaultMaxNumber = 27 * 8 * 8
	MinMaxNumber     = 10
	MaxMaxNumber     = 10_000
)

// operands draws a word problem's numbers one at a time. Uncapped (max 0) each comes from its
// template's own range [lo, hi]. Capped, each comes from [least, min(hi, limit)]: least is the
// smallest value that keeps the problem sensible (1, or 2 for a count that multiplies), and
// limit, worked out from the numbers drawn before it and the least values of those after it,
// keeps every number of the problem (question, worked steps, answer) at most max.
type operands struct {
	r   *rand.Rand
	max int // 0: uncapped
}

func (o operands) draw(lo, hi, least, limit int) int {
	if o.max > 0 {
		lo, hi = least, min(hi, limit)
	}
	return lo + o.r.IntN(hi-lo+1)
}

// makeWordProblem draws one of five templates with two or three arithmetic steps; every
// intermediate result is a positive integer, as in GSM8K, and, when M > 0 (at least
// MinMaxNumber), at most M.
func makeWordProblem(r *rand.Rand, M int) wordProblem {
	o := operands{r, M}
	name, item := people[r.IntN(len(people))], items[r.IntN(len(items))]
	switch r.IntN(5) {
	case 0: // a + b*c
		a := o.draw(5, 44, 1, M-4)
		b := o.draw(2, 9, 2, (M-a)/2)
		c := o.draw(3, 14, 2, (M-a)/b)
		bc := b * c
		return wordProblem{
			fmt.Sprintf("%s has %d %s. %s buys %d packs with %d %s in each pack. How many %s does %s have now?", name, a, item, name, b, c, item, item, name),
			fmt.Sprintf("The packs hold %d * %d = <<%d*%d=%d>>%d %s.\n%s has %d + %d = <<%d+%d=%d>>%d %s.\n#### %d", b, c, b, c, bc, bc, item, name, a, bc, a, bc, a+bc, a+bc, item, a+bc),
			a + bc}
	case 1: // a*b*c - d
		a := o.draw(8, 27, 2, M/4)
		b := o.draw(2, 8, 2, M/(2*a))
		c := o.draw(3, 8, 2, M/(a*b))
		earned := a * b * c
		d := 1 + r.IntN(earned-1)
		return wordProblem{
			fmt.Sprintf("%s earns $%d per hour and works %d hours a day for %d days. Then %s spends $%d. How many dollars does %s have left?", name, a, b, c, name, d, name),
			fmt.Sprintf("%s works %d * %d = <<%d*%d=%d>>%d hours.\n%s earns %d * %d = <<%d*%d=%d>>%d dollars.\n%s has %d - %d = <<%d-%d=%d>>%d dollars left.\n#### %d", name, b, c, b, c, b*c, b*c, name, a, b*c, a, b*c, earned, earned, name, earned, d, earned, d, earned-d, earned-d, earned-d),
			earned - d}
	case 2: // (b + c*k - b) / c
		c := o.draw(2, 7, 2, (M-1)/2)
		k := o.draw(2, 10, 2, (M-1)/c)
		b := o.draw(5, 34, 1, M-c*k)
		a := b + c*k
		return wordProblem{
			fmt.Sprintf("A baker bakes %d loaves. She sells %d loaves and shares the rest equally among %d neighbours. How many loaves does each neighbour get?", a, b, c),
			fmt.Sprintf("She has %d - %d = <<%d-%d=%d>>%d loaves left.\nEach neighbour gets %d / %d = <<%d/%d=%d>>%d loaves.\n#### %d", a, b, a, b, c*k, c*k, c*k, c, c*k, c, k, k, k),
			k}
	case 3: // a + 2*a + b
		a := o.draw(10, 59, 1, (M-1)/3)
		b := o.draw(5, 64, 1, M-3*a)
		return wordProblem{
			fmt.Sprintf("%s reads %d pages on Monday, twice as many pages on Tuesday, and %d pages on Wednesday. How many pages does %s read in total?", name, a, b, name),
			fmt.Sprintf("On Tuesday %s reads 2 * %d = <<2*%d=%d>>%d pages.\nIn total %s reads %d + %d + %d = <<%d+%d+%d=%d>>%d pages.\n#### %d", name, a, a, 2*a, 2*a, name, a, 2*a, b, a, 2*a, b, 3*a+b, 3*a+b, 3*a+b),
			3*a + b}
	default: // a*b - c
		a := o.draw(6, 25, 2, M/2)
		b := o.draw(3, 12, 2, M/a)
		c := 1 + r.IntN(a*b-1)
		return wordProblem{
			fmt.Sprintf("A box holds %d %s. %s fills %d boxes and then gives away %d %s. How many %s are left?", a, item, name, b, c, item, item),
			fmt.Sprintf("%s fills %d * %d = <<%d*%d=%d>>%d %s.\n%d - %d = <<%d-%d=%d>>%d %s are left.\n#### %d", name, a, b, a, b, a*b, a*b, item, a*b, c, a*b, c, a*b-c, a*b-c, item, a*b-c),
			a*b - c}
	}
}

// GenerateGSM8K makes n GSM8K-format rows exactly as verl's preprocess lays them out, every
// number in them at most maxNumber (MinMaxNumber to MaxMaxNumber; 0: the templates' own ranges,
// up to DefaultMaxNumber).
func GenerateGSM8K(n int, seed int64, maxNumber int) []data.Row {
	return take(n, gsm8kStream(seed, maxNumber))
}

// gsm8kStream makes the same tasks one at a time.
func gsm8kStream(seed int64, maxNumber int) stream {
	r := newRand(seed, "gsm8k")
	return func(i int) data.Row {
		p := makeWordProblem(r, maxNumber)
		return data.Row{
			DataSource:  "openai/gsm8k",
			Prompt:      []data.Message{{Role: "user", Content: p.question + " " + GSM8KInstruction}},
			Ability:     "math",
			RewardModel: data.RewardModel{Style: "rule", GroundTruth: fmt.Sprint(p.answer)},
			ExtraInfo:   map[string]any{"split": "train", "index": int64(i), "answer": p.solution, "question": p.question},
		}
	}
}

// MultTask is the shape of generated calc_mult tasks (Config.Mult; 0 in a Config: DefaultMult's).
type MultTask struct {
	// Digits is the length of each operand, 1 to 6. Fewer digits make an easier task for small
	// models: less to copy into the tool call and out of the tool's result.
	Digits int `yaml:"digits"`
	// Factors is how many numbers are multiplied, 2 to 4. The demonstrator multiplies them one
	// call at a time, so an episode has Factors-1 calculator turns and an answer turn: 3 and 4
	// factors make the 3- and 4-turn episodes that condensed contexts are for.
	Factors int `yaml:"factors"`
}

// DefaultMult is calc_mult's default: two 3-digit numbers.
var DefaultMult = MultTask{Digits: 3, Factors: 2}

// GenerateMult makes n "multiply two 3-digit numbers" rows (calc_mult).
func GenerateMult(n int, seed int64) []data.Row { return DefaultMult.Generate(n, seed) }

// Generate makes n calc_mult rows of this shape.
func (m MultTask) Generate(n int, seed int64) []data.Row { return take(n, m.stream(seed)) }

// stream makes the same tasks one at a time.
func (m MultTask) stream(seed int64) stream {
	r := newRand(seed, "calc_mult")
	lo, span := 1, 0
	for range m.Digits - 1 {
		lo *= 10
	}
	span = lo*10 - lo
	if m.Digits == 1 {
		lo, span = 2, 8 // 0 and 1 make trivial products
	}
	return func(i int) data.Row {
		xs := make([]string, m.Factors)
		product := big.NewInt(1)
		for k := range xs {
			x := lo + r.IntN(span)
			xs[k] = strconv.Itoa(x)
			product.Mul(product, big.NewInt(int64(x)))
		}
		q := "What is " + strings.Join(xs, " * ") + "?"
		return data.Row{
			DataSource:  "calc_mult",
			Prompt:      []data.Message{{Role: "user", Content: q}},
			Ability:     "math",
			RewardModel: data.RewardModel{Style: "rule", GroundTruth: product.String()},
			ExtraInfo:   map[string]any{"split": "train", "index": int64(i), "question": q},
		}
	}
}

// toolSystemPrompt tells the model how to finish; the chat template lists the tools and the call
// format itself.
// tools names one tool ("calculator") or several ("add and echo").
func toolSystemPrompt(tools, finish string) string {
	call, it := "the "+tools+" tool; its result comes back", "it"
	if strings.Contains(tools, " and ") {
		call, it = "the "+tools+" tools; their results come back", "them"
	}
	return strings.TrimSpace(fmt.Sprintf(`You solve problems step by step. You can call %s in the next message. Call %s as often as you need, one step at a time. When you know the answer, reply without a tool call and %s`, call, it, finish))
}
