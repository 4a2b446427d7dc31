package main

import (
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
)

// planConfig resolves a run of Qwen2.5-0.5B's shape (init:, no files) with settings.
func planConfig(t *testing.T, settings ...string) *config.Config {
	t.Helper()
	src := config.Sources{Files: []string{}, LookupEnv: func(string) (string, bool) { return "", false }}
	for _, s := range append([]string{"init.arch=qwen2", "init.preset=qwen2.5-0.5b"}, settings...) {
		k, v, _ := strings.Cut(s, "=")
		src.Overrides = append(src.Overrides, config.Override{Key: k, Value: v, Where: "test"})
	}
	c, err := config.Resolve(src)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// The plan of a run follows its configuration: Qwen2.5-0.5B (494,032,768 weights) in bfloat16
// on CUDA, 4 ranks, ZeRO-1: S = 123,508,192 elements a shard, masters S·4 = 494,032,768 bytes;
// a KL term adds the reference model (P·2 = 988,065,536 bytes).
func TestPlanRun(t *testing.T) {
	cfg := planConfig(t, "device=cuda", "dist.zero1=true", "loss.kl_coef=0.01", "rollout.slots=8", "rollout.max_len=1024")
	r, err := planRun(cfg, "", 4, 80e9)
	if err != nil {
		t.Fatal(err)
	}
	if r.Model.Params != 494032768 || r.DTypeBytes != 2 || r.WireBytes != 0 || r.World != 4 || r.Stage != 1 ||
		!r.Reference || r.Critic || r.Slots != 8 || r.MaxLen != 1024 {
		t.Errorf("run %+v", r)
	}
	var b strings.Builder
	if err := writePlan(&b, r, true); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"494032768 parameters", "ZeRO stage 1 (ZeRO-1)", "stage 3", "master weights (fp32)", "yes"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
}

// env.agent keeps finished calls' KV caches in slots of their own, as many as the engine's unless
// env.agent.cache_slots says: the plan counts them. Qwen2.5-0.5B: 24 layers, 2 KV heads of 64,
// bfloat16: K and V of 8 slots × (1024 tokens + 1 scratch position) are 2·24·8·2·1025·64·2 =
// 100,761,600 bytes, twice that with 8 parked slots, 1.5 times with 4.
func TestPlanCountsParkedSlots(t *testing.T) {
	base := []string{"device=cuda", "rollout.slots=8", "rollout.max_len=1024"}
	for _, c := range []struct {
		settings []string
		parked   int
		kv       int64
	}{
		{nil, 0, 100761600},
		{[]string{"env.agent.command=[node, a.js]"}, 8, 201523200},
		{[]string{"env.agent.command=[node, a.js]", "env.agent.cache_slots=4"}, 4, 151142400},
	} {
		r, err := planRun(planConfig(t, append(base, c.settings...)...), "", 1, 0)
		if err != nil {
			t.Fatal(err)
		}
		p, err := memplan.Predict(r, 0)
		if err != nil {
			t.Fatal(err)
		}
		if r.Parked != c.parked || p.KVCache != c.kv {
			t.Errorf("%v: %d parked slots, KV cache %d bytes; want %d and %d", c.settings, r.Parked, p.KVCache, c.parked, c.kv)
		}
		var b strings.Builder
		if err := writePlan(&b, r, false); err != nil {
			t.Fatal(err)
		}
		if want := "+ 4 parked for agent calls"; c.parked == 4 && !strings.Contains(b.String(), want) {
			t.Errorf("plan lacks %q:\n%s", want, b.String())
		}
	}
}

// A run that cannot fit is refused before it starts, with the figures (a usage error: exit 2);
// one that fits goes ahead; CPU runs are not checked.
func TestCheckPlan(t *testing.T) {
	cfg := planConfig(t, "device=cuda")
	err := checkPlan("train", cfg, "", 1, 4<<30)
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "does not fit") ||
		!strings.Contains(err.Error(), "AdamW moments") {
		t.Errorf("4 GiB device: %v", err)
	}
	if err := checkPlan("train", cfg, "", 1, 80<<30); err != nil {
		t.Errorf("80 GiB device: %v", err)
	}
	if err := checkMemory("train", planConfig(t), "", 1); err != nil {
		t.Errorf("cpu: %v", err)
	}
}

// docs/distributed.md's stage table is this model's: each row's peaks (training / generating, GiB
// unless marked) and ✓ where the plan fits, for the command the page gives.
func TestDistributedDocStageTable(t *testing.T) {
	doc, err := os.ReadFile("../../docs/distributed.md")
	if err != nil {
		t.Fatal(err)
	}
	short := func(n int64) string { return strings.TrimSuffix(memplan.FormatBytes(n), " GiB") }
	for _, size := range []string{"7b", "14b", "32b", "72b"} {
		cfg := planConfig(t, "init.preset=qwen2.5-"+size, "device=cuda", "update.gradient_checkpointing=true",
			"update.micro_tokens=8192", "rollout.slots=16", "rollout.max_len=4096")
		r, err := planRun(cfg, "", 8, 80e9)
		if err != nil {
			t.Fatal(err)
		}
		prefix := "| Qwen2.5-" + strings.ToUpper(size) + " |"
		i := strings.Index(string(doc), prefix)
		if i < 0 {
			t.Fatalf("docs/distributed.md has no row %q", prefix)
		}
		row, _, _ := strings.Cut(string(doc[i:]), "\n")
		cells := strings.Split(row, "|")
		for s := memplan.StageDP; s <= memplan.StageZeRO3; s++ {
			rs := r
			rs.Stage = s
			p, err := memplan.Predict(rs, 0)
			if err != nil {
				t.Fatal(err)
			}
			cell := cells[3+int(s)]
			want := short(p.TrainPeak()) + " / " + short(p.RolloutPeak())
			if !strings.Contains(cell, want) || strings.Contains(cell, "✓") != p.Fits() {
				t.Errorf("%s stage %d: the page says %q, the model %q (fits %v)", prefix, s, cell, want, p.Fits())
			}
		}
	}
}

// A run at the supported maxima (init widths at the loader's bounds, a micro-batch and a KV cache
// at the configuration's) needs more bytes than an int64 holds: plan says "> 8 EiB" and "NO" on
// every stage rather than a wrapped size that fits, and train's check refuses it even where the
// device's memory is unknown (a usage error naming the categories).
func TestPlanBeyond(t *testing.T) {
	cfg := planConfig(t, "device=cuda", "init.hidden_size=65536", "init.intermediate_size=1048576", "init.num_hidden_layers=1024",
		"init.num_attention_heads=1024", "init.num_key_value_heads=1024", "init.head_dim=1024",
		"update.micro_tokens=68719476736", "update.gradient_checkpointing=true", "rollout.slots=4096", "rollout.max_len=16777216")
	r, err := planRun(cfg, "", 8, 80e9)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writePlan(&b, r, true); err != nil {
		t.Fatal(err)
	}
	last := b.String()[strings.LastIndex(strings.TrimSpace(b.String()), "\n")+1:]
	if !strings.Contains(b.String(), "> 8 EiB") || strings.Count(last, "NO") != 4 {
		t.Errorf("plan:\n%s", b.String())
	}
	err = checkPlan("train", cfg, "", 8, 0)
	if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), "needs more than 8 EiB at its peak (KV cache;") {
		t.Errorf("train's check, device memory unknown: %v", err)
	}
}

// plan --json gives the same plan in bytes by category. Qwen2.5-7B (P = 7,615,616,512 weights) in
// bfloat16 on one rank: weights and gradients P·2 = 15,231,233,024 bytes each, masters P·4 =
// 30,462,466,048, moments 2·P·4 = 60,924,932,096; 28 layers × 4 KV heads × 128 × 2 bytes × K and V
// = 57,344 bytes a token, × 8 slots × (1024 tokens + 1 scratch position) = 470,220,800; the decode
// step's CUDA graphs over 8 slots × 152,064 vocabulary entries, S·V·(4 + 2 + 4 + 36) = 55,959,552.
// Those alone are 122,376,044,544 bytes: more than the 72 GB usable of an 80 GB device, so it does
// not fit. The head: 4096 tokens' logits, 4096·152,064·4 = 2,491,416,576 bytes, pass the 1 GiB
// budget, so it runs in chunks of 64 MiB / 152,064 = 441 rows, 441·152,064·4 = 268,240,896 bytes
// each, three at once. AdamW's step casts the bfloat16 gradients to float32: P·4 again.
func TestPlanJSON(t *testing.T) {
	cfg := planConfig(t, "init.preset=qwen2.5-7b", "device=cuda", "rollout.slots=8", "rollout.max_len=1024",
		"update.gradient_checkpointing=true", "update.micro_tokens=4096")
	r, err := planRun(cfg, "", 1, 80e9)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	if err := writePlanJSON(&b, r); err != nil {
		t.Fatal(err)
	}
	var j planJSON
	if err := json.Unmarshal([]byte(b.String()), &j); err != nil {
		t.Fatalf("%v: %s", err, b.String())
	}
	want := map[string]int64{"weights": 15231233024, "grads": 15231233024, "masters": 30462466048,
		"moments": 60924932096, "kv_cache": 470220800, "cuda_graph_pool": 55959552, "adapters": 0, "reference": 0,
		"persistent": 122376044544, "head_budget": 1 << 30, "logits_tensor": 268240896, "logits": 3 * 268240896,
		"step_grads": 30462466048}
	for k, v := range want {
		if j.Bytes[k] != v {
			t.Errorf("bytes[%s] = %d, want %d", k, j.Bytes[k], v)
		}
	}
	p, _ := memplan.Predict(r, 0)
	if j.Bytes["peak_train"] != p.TrainPeak() || j.Bytes["activations"] != p.ActivationsCkpt || j.Fits ||
		j.Usable != 72e9 || j.MicroTokens != 4096 || !j.Checkpointing || j.Params != 7615616512 {
		t.Errorf("plan %+v, want the peak %d, checkpointed activations %d, not fitting 72e9 usable", j, p.TrainPeak(), p.ActivationsCkpt)
	}
}
