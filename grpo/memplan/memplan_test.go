package memplan

import (
	"strings"
	"testing"
)

// tinyModel is a Qwen3 of hidden 4, intermediate 8, 2 layers, 2 heads over 1 KV head of
// head_dim 2, vocabulary 10, tied head. Its weight table, by hand:
//
//	embed_tokens 10·4                                         40
//	per layer: input_layernorm 4, q_proj 4·4 = 16, k_proj 2·4 = 8, v_proj 8, o_proj 16,
//	  q_norm 2, k_norm 2, post_attention_layernorm 4, gate 8·4 = 32, up 32, down 32   156
//	two layers                                                 312
//	final norm                                                   4
//	total P                                                    356
var tinyModel = Model{Params: 356, Hidden: 4, Intermediate: 8, Layers: 2, Heads: 2, KVHeads: 1, HeadDim: 2,
	Vocab: 10, Tied: true}

func tinyRun() Run {
	return Run{Model: tinyModel, DTypeBytes: 2, WireBytes: 4, World: 3, Stage: StageZeRO1, BucketBytes: 64,
		MicroTokens: 6, Checkpointing: true, Slots: 3, MaxLen: 5}
}

func predict(t *testing.T, r Run, rank int) Plan {
	t.Helper()
	p, err := Predict(r, rank)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

type persistent struct{ weights, grads, masters, moments, comm int64 }

func persistentOf(p Plan) persistent {
	return persistent{p.Weights, p.Grads, p.Masters, p.Moments, p.Comm}
}

func TestPredictPersistent(t *testing.T) {
	single := tinyRun()
	single.World = 1
	dp := tinyRun()
	dp.Stage = StageDP
	z2 := tinyRun()
	z2.Stage = StageZeRO2
	z2plain := z2
	z2plain.Checkpointing = false
	z3 := tinyRun()
	z3.Stage = StageZeRO3
	untied := z2
	untied.Model.Tied, untied.Model.Params = false, 356+40
	cases := []struct {
		name string
		r    Run
		rank int
		want persistent
	}{
		// One process shards nothing whatever the stage: weights and gradients 356·2 = 712,
		// masters 356·4 = 1424, moments 2·356·4 = 2848, no buckets.
		{"single process", single, 0, persistent{712, 712, 1424, 2848, 0}},
		// Plain data parallel over Gloo: the same, and bf16 buckets sent as float32: 356·4 = 1424.
		{"dp", dp, 0, persistent{712, 712, 1424, 2848, 1424}},
		// ZeRO-1 on 3 ranks: S = ⌈356/3⌉ = 119 (357 slots, one padding); round c = min(119,
		// 64/4/3 = 5) = 5. Gradients 712 + 119·4 = 1188, masters 119·4 = 476, moments rank 0:
		// 2·119·4 = 952, buffer 3·5·4 = 60.
		{"zero1 rank 0", tinyRun(), 0, persistent{712, 1188, 476, 952, 60}},
		// The last rank holds 356 − 2·119 = 118 real elements: moments 2·118·4 = 944; its master
		// and gradient shards are padded to 119.
		{"zero1 rank 2", tinyRun(), 2, persistent{712, 1188, 476, 944, 60}},
		// ZeRO-2 on 3 ranks, by unit: embedding 40 (tied head), layers 156 and 156, final norm 4;
		// shards ⌈40/3⌉ = 14, 52, 52, ⌈4/3⌉ = 2: S = 120 (masters and gradient shards 480); rank 0
		// holds 120 real elements (moments 960); round c = max(min(14, 5), min(52, 5), ...) = 5,
		// buffer 60. In flight with checkpointing: the tied embedding's 40 (from the head's
		// backward to its own) and the largest other unit's, a layer's 156: 196·2 = 392;
		// gradients 480 + 392 = 872.
		{"zero2 rank 0", z2, 0, persistent{712, 872, 480, 960, 60}},
		// Rank 2: embedding 40 − 28 = 12, layers 52 and 52, norm 4 − 4 = 0: 116 (moments 928).
		{"zero2 rank 2", z2, 2, persistent{712, 872, 480, 928, 60}},
		// Without checkpointing the layers' backward is one call: all but the norm's 4 in
		// flight, (356 − 4)·2 = 704; gradients 480 + 704 = 1184.
		{"zero2 no checkpointing", z2plain, 0, persistent{712, 1184, 480, 960, 60}},
		// ZeRO-3: as ZeRO-2, and no weights of its own (they are gathered from the masters, cast
		// to bfloat16 through a second buffer of 3·5·2 = 30), and the prefetch's buffers: the
		// largest shard, a layer's 52, gathered from 3 ranks plus this rank's cast copy, (3 + 1)·52·2
		// = 416: buffers 60 + 30 + 416 = 506.
		{"zero3 rank 0", z3, 0, persistent{0, 872, 480, 960, 506}},
		// An untied head (10·4 = 40 more, P = 396) joins the final norm: units 40, 156, 156, 44;
		// shards 14, 52, 52, 15: S = 133 (masters 532, rank 0's moments 1064); in flight the
		// largest unit alone, a layer's 156: 312; gradients 532 + 312 = 844; weights 396·2 = 792.
		{"zero2 untied", untied, 0, persistent{792, 844, 532, 1064, 60}},
	}
	for _, c := range cases {
		if got := persistentOf(predict(t, c.r, c.rank)); got != c.want {
			t.Errorf("%s: got %+v, want %+v", c.name, got, c.want)
		}
	}
}

func TestPredictTransientAndExtras(t *testing.T) {
	r := tinyRun()
	r.Reference, r.Critic = true, true
	p := predict(t, r, 0)
	// KV cache: 2 (K, V) · 2 layers · 3 slots · 1 KV head · (5 + 1 scratch) positions · head_dim 2 ·
	// 2 bytes = 288.
	// Activations, T = 6 tokens, bf16 (d = 2), the CPU's math attention over MaxLen 5: a token
	// and layer keeps, in bytes, the input 4·2 = 8, the norms' outputs 2·2·4·2 = 32 and float32
	// inputs 2·4·4 = 32 (72); attention 4·q·d = 4·4·2 = 32 and probabilities heads·len·d =
	// 2·5·2 = 20 (52); the MLP 4·8·2 = 64: A = 188; besides the layers (h + 2·head_dim)·d = 16.
	// Plain 6·(2·188 + 16) = 2352, checkpointed 6·(2·4·2 + 188 + 16) = 1320.
	// Logits: 6·10·4 = 240 bytes, within the 1 GiB budget: kept, four at once.
	// Reference: 356·2 = 712. Critic: head 4 + 1 = 5 float32; weights and gradients
	// 2·(712 + 20) = 1464, moments 2·361·4 = 2888, masters 1424, buckets 356·4 + 20 = 1444: 7220.
	// ZeRO-3 gathers in training what ZeRO-2 has in flight: the tied embedding and a layer (356 −
	// 40 − 4)/2 = 156, (40 + 156)·2 = 392; a whole copy for generation, 712.
	want := map[string][2]int64{
		"kv": {p.KVCache, 288}, "plain": {p.ActivationsPlain, 2352}, "ckpt": {p.ActivationsCkpt, 1320},
		"activations": {p.Activations, 1320}, "logits": {p.Logits, 240}, "copies": {p.LogitsCopies, 4},
		"reference": {p.Reference, 712}, "critic": {p.Critic, 7220}, "gathered": {p.Gathered, 0},
	}
	// Two parked slots of agent calls beside the 3: 288·5/3 = 480.
	r.Parked = 2
	want["kv+parked"] = [2]int64{predict(t, r, 0).KVCache, 480}
	for k, v := range want {
		if v[0] != v[1] {
			t.Errorf("%s: got %d, want %d", k, v[0], v[1])
		}
	}
	r.Stage = StageZeRO3
	if p := predict(t, r, 0); p.Gathered != 392 || p.GatheredForRollout != 712 {
		t.Errorf("zero3 gathers %d (training) and %d (rollout), want 392 and 712", p.Gathered, p.GatheredForRollout)
	}
	// CUDA graphs of the decode step for the cache's 3 + 2 parked slots over a vocabulary of 10
	// (S·V = 50 entries): the float32 logits buffer 50·4 = 200 and the pool 50·(2 + 4 + 36) = 2100,
	// held all run.
	base := predict(t, r, 0)
	r.CUDAGraphs = true
	if p := predict(t, r, 0); p.GraphPool != 2300 || p.Persistent()-base.Persistent() != 2300 {
		t.Errorf("graph pool %d, persistent %d more than without graphs; want 2300 and 2300", p.GraphPool,
			p.Persistent()-base.Persistent())
	}
}

func TestFits(t *testing.T) {
	r := tinyRun()
	// Rank 0 of ZeRO-1: persistent 712 + 1188 + 476 + 952 + 60 + KV 288 = 3676; training peak
	// 3676 + 1320 (checkpointed) + 4·240 (logits) = 5956 (the shards are float32: the step casts
	// nothing); rollout peak 3676.
	p := predict(t, r, 0)
	if p.Persistent() != 3676 || p.Peak() != 5956 || p.StepGrads != 0 {
		t.Fatalf("persistent %d, peak %d, step's gradients %d, want 3676, 5956 and 0", p.Persistent(), p.Peak(), p.StepGrads)
	}
	for _, c := range []struct {
		device int64
		fits   bool
	}{{0, true}, {10000, true}, {6617, false}, {6618, true}} { // usable: 90 %; 6618·0.9 = 5956.2
		r.Device = c.device
		p := predict(t, r, 0)
		if p.Fits() != c.fits || (p.Check() == nil) != c.fits {
			t.Errorf("device %d: fits %v (check %v), want %v", c.device, p.Fits(), p.Check(), c.fits)
		}
	}
}

func TestPredictRefuses(t *testing.T) {
	bad := map[string]func(*Run){
		"dtype":  func(r *Run) { r.DTypeBytes = 3 },
		"world":  func(r *Run) { r.World = 0 },
		"stage":  func(r *Run) { r.Stage = 4 },
		"shape":  func(r *Run) { r.Model.Vocab = 0 },
		"tokens": func(r *Run) { r.MicroTokens = -1 },
	}
	for name, f := range bad {
		r := tinyRun()
		f(&r)
		if _, err := Predict(r, 0); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
	if _, err := Predict(tinyRun(), 3); err == nil {
		t.Error("rank 3 of 3: no error")
	}
}

func TestBytes(t *testing.T) {
	for in, want := range map[string]int64{"80GiB": 80 << 30, "80 GB": 80e9, "512MiB": 512 << 20, "1000": 1000, "1.5KiB": 1536} {
		if got, err := ParseBytes(in); err != nil || got != want {
			t.Errorf("ParseBytes(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "eighty", "-1GiB", "GiB", "NaN", "NaNGB", "Inf", "1e400GB"} {
		if _, err := ParseBytes(in); err == nil {
			t.Errorf("ParseBytes(%q): no error", in)
		}
	}
	for n, want := range map[int64]string{512: "512 B", 1536 << 20: "1.50 GiB", 640 << 20: "640 MiB", 80 << 30: "80.0 GiB"} {
		if got := FormatBytes(n); got != want {
			t.Errorf("FormatBytes(%d) = %q, want %q", n, got, want)
		}
	}
}

func TestWriteTable(t *testing.T) {
	r := tinyRun()
	r.Device = 10000
	var b strings.Builder
	if err := WriteTable(&b, []string{"zero1"}, []Plan{predict(t, r, 0)}); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"master weights (fp32)", "476 B", "head: whole logits up to (budget)", "1.00 GiB", "head: logits at the pass's peak", "960 B", "= peak, training", "5.82 KiB", "decode step: CUDA graph pool", "fits"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, b.String())
		}
	}
}

// The attention kernels keep different tensors (activations.go); T = 6 tokens of tinyModel.
// Flash in bf16: attention (3·4 + 2·2)·2 = 32 and the log-sum-exp 2·4 = 8 (40), beside the norms'
// 72 and the MLP's 64: A = 176, plain 6·(2·176 + 16) = 2208. Expanded in float32: norms
// 5·4·4 + 4·4 = 96 (the first norm's float32 input is the layer's own), attention 5·4·4 + 8 = 88,
// MLP 4·8·4 = 128: A = 312, besides the layers (4 + 4)·4 = 32, plain 6·(2·312 + 32) = 3936.
// One process in bf16 casts its gradients to float32 for the step: 356·4 = 1424, less than the
// pass's 2208 + 4·240. Budget −1: the head in chunks, min(6, 64 Mi/10) = 6 rows, three at once.
func TestActivationsByKernel(t *testing.T) {
	r := tinyRun()
	r.World, r.Checkpointing, r.Attention = 1, false, AttentionFlash
	p := predict(t, r, 0)
	if p.ActivationsPlain != 2208 || p.StepGrads != 1424 || p.TrainPeak() != p.Persistent()+2208+4*240 {
		t.Errorf("flash: plain %d, step %d, peak %d; want 2208, 1424, %d", p.ActivationsPlain, p.StepGrads, p.TrainPeak(),
			p.Persistent()+2208+4*240)
	}
	r.DTypeBytes, r.Attention = 4, AttentionExpanded
	if p := predict(t, r, 0); p.ActivationsPlain != 3936 || p.StepGrads != 0 {
		t.Errorf("expanded: plain %d, step %d; want 3936, 0", p.ActivationsPlain, p.StepGrads)
	}
	r.HeadBudget = -1
	if p := predict(t, r, 0); p.Logits != 240 || p.LogitsCopies != 3 {
		t.Errorf("chunked head: %d × %d, want 3 × 240", p.LogitsCopies, p.Logits)
	}
	for _, a := range []Attention{AttentionMath, AttentionFlash, AttentionExpanded} {
		if got := AttentionOn(a != AttentionMath, map[Attention]int64{AttentionMath: 4, AttentionFlash: 2, AttentionExpanded: 4}[a]); got != a {
			t.Errorf("AttentionOn for %d: %d", a, got)
		}
	}
	r.HeadBudget = -2
	if _, err := Predict(r, 0); err == nil {
		t.Error("head budget −2: no error")
	}
}
