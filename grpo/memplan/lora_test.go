package memplan

import "testing"

// LoRA rank 1 on q_proj and v_proj of tinyModel: q_proj is [4, 4] (2 heads of 2), so A [1, 4] and
// B [4, 1], 8 elements; v_proj is [2, 4] (1 KV head), A [1, 4] and B [2, 1], 6: 14 per layer, 28
// in the 2 layers. The base (356 weights, bfloat16) is 712 bytes on every rank, the adapters
// 28·4 = 112; the optimizer works on the 28 float32 elements only:
//
//	one process       gradients 112, moments 2·28·4 = 224, no masters (float32), no buckets
//	stage 0, 3 ranks  as one process, and buckets 28·4 = 112
//	stage 1, 3 ranks  S = ⌈28/3⌉ = 10: gradients 112 + 10·4 = 152, masters 40, moments 2·10·4 = 80
//	                  (rank 2: 28 − 20 = 8 real elements, 64), round buffer 3·min(10, 64/4/3 = 5)·4 = 60
//	stage 2, 3 ranks  each layer's 14 cut in shards of 5: 10 shard elements, masters 40; rank 0's
//	                  real elements 2·5 = 10 (moments 80), rank 2's 2·4 = 8 (64); one layer's
//	                  gradients in flight with checkpointing, 14·4 = 56: gradients 40 + 56 = 96
func TestPredictLoRA(t *testing.T) {
	lora := &LoRA{PerLayer: LoRAPerLayer(tinyModel, 1, []string{"q_proj", "v_proj"})}
	if lora.PerLayer != 14 {
		t.Fatalf("per layer %d, want 14", lora.PerLayer)
	}
	run := func(world int, st Stage) Run {
		r := tinyRun()
		r.World, r.Stage, r.LoRA = world, st, lora
		return r
	}
	cases := []struct {
		name   string
		r      Run
		rank   int
		want   persistent
		flight int64
	}{
		{"one process", run(1, StageZeRO2), 0, persistent{712, 112, 0, 224, 0}, 0},
		{"data parallel", run(3, StageDP), 0, persistent{712, 112, 0, 224, 112}, 0},
		{"ZeRO-1 rank 0", run(3, StageZeRO1), 0, persistent{712, 152, 40, 80, 60}, 112},
		{"ZeRO-1 rank 2", run(3, StageZeRO1), 2, persistent{712, 152, 40, 64, 60}, 112},
		{"ZeRO-2 rank 0", run(3, StageZeRO2), 0, persistent{712, 96, 40, 80, 60}, 56},
		{"ZeRO-2 rank 2", run(3, StageZeRO2), 2, persistent{712, 96, 40, 64, 60}, 56},
	}
	for _, c := range cases {
		p := predict(t, c.r, c.rank)
		if got := persistentOf(p); got != c.want || p.Adapters != 112 || p.GradsInFlight != c.flight || p.Reference != 0 {
			t.Errorf("%s: %+v, adapters %d, in flight %d; want %+v, 112, %d", c.name, got, p.Adapters, p.GradsInFlight, c.want, c.flight)
		}
	}
	// A critic with its own adapters (the same 28 elements) and its value head of 4 + 1: the
	// frozen model 712, the 33 trained float32 elements' weights, gradients and two moments
	// 4·33·4 = 528, buckets 33·4 = 132 at 3 ranks: 1240 alone, 1372 data parallel.
	for world, want := range map[int]int64{1: 1240, 3: 1372} {
		r := run(world, StageDP)
		r.Critic, r.CriticLoRA = true, lora
		if p := predict(t, r, 0); p.Critic != want {
			t.Errorf("critic with adapters at %d ranks: %d bytes, want %d", world, p.Critic, want)
		}
	}
	// Stage 3 would shard the base, which no optimizer holds; the reference is the base itself.
	for _, r := range []Run{run(3, StageZeRO3), func() Run { r := run(1, StageDP); r.Reference = true; return r }()} {
		if _, err := Predict(r, 0); err == nil {
			t.Errorf("stage %d, reference %v: accepted", r.Stage, r.Reference)
		}
	}
}
