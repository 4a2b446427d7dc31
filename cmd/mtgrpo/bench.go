package main

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/setup"
	"github.com/mtgrpo/mtgrpo/cmd/internal/threads"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/torch"
)

var benchCommand = command{
	name: "bench",
	summary: "Measure decode and training-step speed per CPU thread setting, the settings interleaved round by round\n" +
		"so that machine noise hits them alike. Without --model it uses the tiny model of `mtgrpo init`.",
	examples: []string{
		"mtgrpo bench",
		"mtgrpo bench --settings 2,1 --settings 1,2 --rounds 5",
		"mtgrpo bench --model models/qwen --batch 4 --new-tokens 32",
	},
}

// bench is `mtgrpo bench`: the figures behind the default thread setting (docs/bench/threads.md).
func bench(args []string) error {
	fs := benchCommand.flags()
	dir := fs.String("model", "", "model directory or Hugging Face Hub id ORG/NAME[@REVISION] (default: a fresh tiny model in a temporary directory)")
	settings := fs.StringArray("settings", nil, "thread settings INTRA,BLAS to compare (repeatable; default: 1,1 N,1 1,N N,N for N cores)")
	rounds := fs.Int("rounds", 3, "rounds; each runs every setting once")
	batch := fs.Int("batch", 8, "decode: sequences generated together")
	newTokens := fs.Int("new-tokens", 64, "decode: tokens per sequence")
	seqs := fs.Int("train-seqs", 8, "train step: sequences")
	seqLen := fs.Int("train-len", 128, "train step: tokens per sequence")
	if err := benchCommand.parse(fs, args); err != nil {
		return err
	}
	if err := atLeast("bench", intFlag{"rounds", *rounds, 1}, intFlag{"batch", *batch, 1}, intFlag{"new-tokens", *newTokens, 1},
		intFlag{"train-seqs", *seqs, 1}, intFlag{"train-len", *seqLen, 2}); err != nil {
		return err
	}
	list, err := benchSettings(*settings)
	if err != nil {
		return err
	}
	if *dir != "" {
		if *dir, err = resolveModel("bench", "--model", *dir); err != nil {
			return err
		}
	} else {
		tmp, err := os.MkdirTemp("", "mtgrpo-bench-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		*dir = filepath.Join(tmp, "tiny")
		if err := initModel([]string{"--out", *dir}); err != nil {
			return err
		}
	}
	return torch.Run(func() error {
		p, err := setup.Open(setup.Options{Dir: *dir, Slots: *batch, MaxLen: 16 + *newTokens + 1, Trainable: true})
		if err != nil {
			return err
		}
		defer p.Close()
		decode := make([][]float64, len(list))
		train := make([][]float64, len(list))
		for r := 0; r < *rounds; r++ {
			for i, s := range list {
				if _, err := threads.Apply(s); err != nil {
					return err
				}
				d, err := benchDecode(p.Engine, *batch, *newTokens)
				if err != nil {
					return err
				}
				tr, err := benchTrain(p.Model, *seqs, *seqLen)
				if err != nil {
					return err
				}
				decode[i] = append(decode[i], d)
				train[i] = append(train[i], tr)
			}
		}
		fmt.Printf("mtgrpo bench: %s, %d rounds, decode %d x %d tokens, train step %d x %d tokens; median (min-max) tokens/s\n",
			*dir, *rounds, *batch, *newTokens, *seqs, *seqLen)
		fmt.Printf("| intra-op,BLAS | decode tokens/s | train tokens/s |\n|---|---|---|\n")
		for i, s := range list {
			fmt.Printf("| %d,%d | %s | %s |\n", s.IntraOp, s.BLAS, spread(decode[i]), spread(train[i]))
		}
		return nil
	})
}

// benchSettings parses --settings or makes the default four corners for this machine's cores.
func benchSettings(specs []string) ([]threads.Setting, error) {
	if len(specs) == 0 {
		n := runtime.NumCPU()
		specs = []string{"1,1", fmt.Sprintf("%d,1", n), fmt.Sprintf("1,%d", n), fmt.Sprintf("%d,%d", n, n)}
	}
	var out []threads.Setting
	for _, sp := range specs {
		if !strings.Contains(sp, ",") {
			return nil, usagef("bench: --settings %q: want INTRA,BLAS", sp)
		}
		s, err := threads.Parse(sp, "--settings")
		if err != nil {
			return nil, usageError{err}
		}
		s.Source = threads.FromFlag
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out, nil
}

// benchDecode generates batch sequences of n tokens each from short random prompts and returns
// generated tokens per second.
func benchDecode(e *rollout.Engine, batch, n int) (float64, error) {
	r := rand.New(rand.NewPCG(1, 2))
	var reqs []*rollout.Request
	for range batch {
		prompt := make([]int32, 16)
		for j := range prompt {
			prompt[j] = int32(r.IntN(200) + 32)
		}
		reqs = append(reqs, &rollout.Request{Prompt: prompt, Sampling: rollout.Sampling{Temperature: 1, MaxNewTokens: n}})
	}
	t0 := time.Now()
	out, err := e.Generate(reqs)
	if err != nil {
		return 0, err
	}
	tokens := 0
	for _, rs := range out {
		for _, res := range rs {
			tokens += len(res.Tokens)
		}
	}
	return float64(tokens) / time.Since(t0).Seconds(), nil
}

// benchTrain runs one forward and backward pass (the loss of a policy-gradient step without the
// optimizer) over seqs random sequences and returns tokens per second.
func benchTrain(m *model.Model, seqs, n int) (float64, error) {
	r := rand.New(rand.NewPCG(3, 4))
	ids := make([][]int32, seqs)
	for i := range ids {
		for range n {
			ids[i] = append(ids[i], int32(r.IntN(m.Config.VocabSize)))
		}
	}
	b, err := model.NewBatch(ids, false)
	if err != nil {
		return 0, err
	}
	t0 := time.Now()
	err = torch.Do(func() error {
		s := torch.NewScope()
		defer s.Close()
		torch.ZeroGrad(m.ParameterTensors())
		p, err := m.Train(b, model.ForwardOptions{Entropy: true})
		if err != nil {
			return err
		}
		return p.Backward(p.LogProbs.Sum(false).Neg().Add(p.Entropy.Sum(false).MulScalar(0.01)))
	})
	return float64(seqs*n) / time.Since(t0).Seconds(), err
}

// spread formats the median and range of xs.
func spread(xs []float64) string {
	s := slices.Clone(xs)
	slices.Sort(s)
	return fmt.Sprintf("%.0f (%.0f-%.0f)", s[len(s)/2], s[0], s[len(s)-1])
}
