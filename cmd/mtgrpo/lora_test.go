package main

import (
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// loraRunArgs is a LoRA run from TRL's flags (dropout, so that a resume must draw the same masks,
// and a KL term, whose reference is the base with the adapters off) with a checkpoint after
// every step, all kept.
func loraRunArgs(model, dir string) []string {
	return append(append([]string{"train", "--resume"}, tinyRun(model, dir)...), "--steps", "3",
		"--set", "sft.steps=2", "--set", "sft.batch=2", "--set", "sft.tasks=4", "--set", "sft.lr=1e-2",
		"--use_peft", "--lora_r", "4", "--lora_alpha", "16", "--lora_dropout", "0.1", "--lora_target_modules", "all-linear",
		"--set", "loss.kl_coef=0.05", "--set", "optim.lr=1e-2", "--set", "train.checkpoint_every=1",
		"--set", "train.keep_checkpoints=0", "--set", "eval.before=false", "--set", "train.report=false")
}

// A LoRA run from TRL's flags (2 SFT steps, which move the adapters whatever the tiny model's
// rewards, then 3 RL steps) checkpoints and exports its adapters (no model/), and a run resumed
// from its step-4 checkpoint ends with the uninterrupted run's adapters and optimizer state bit
// for bit. Resuming onto other base weights is refused before any work. export writes the
// adapters as they are, or merged into the base (--merge): the merged model's logits are the
// base-with-adapters logits, and eval and generate take the adapter directory.
func TestLoRARunResumeExport(t *testing.T) {
	base := tinyModel(t)
	ref := filepath.Join(t.TempDir(), "ref")
	if code, out := runChild(t, 3*time.Minute, loraRunArgs(base, ref)...); code != 0 {
		t.Fatalf("LoRA run: exit %d\n%s", code, out)
	}
	final := filepath.Join(ref, rundir.CheckpointsDir, "step-00000005")
	for _, f := range []string{filepath.Join(final, "adapter", model.AdapterConfigFile), filepath.Join(ref, "adapter", model.AdapterWeightsFile)} {
		if _, err := os.Stat(f); err != nil {
			t.Errorf("%v", err)
		}
	}
	if _, err := os.Stat(filepath.Join(final, "model")); err == nil {
		t.Errorf("a LoRA checkpoint holds a whole model")
	}
	if !strings.Contains(logOf(ref), "LoRA adapters: the base is frozen") {
		t.Errorf("the log does not say the adapters train")
	}
	var cfg map[string]any
	b, _ := os.ReadFile(filepath.Join(ref, "adapter", model.AdapterConfigFile))
	json.Unmarshal(b, &cfg)
	if abs, _ := filepath.Abs(base); cfg["base_model_name_or_path"] != abs || cfg["r"] != 4.0 || cfg["lora_dropout"] != 0.1 {
		t.Errorf("adapter_config.json: base %v, r %v, dropout %v", cfg["base_model_name_or_path"], cfg["r"], cfg["lora_dropout"])
	}

	// Resume from step 4 in a copy of the run.
	dir := filepath.Join(t.TempDir(), "resumed")
	if err := os.CopyFS(dir, os.DirFS(ref)); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, rundir.CheckpointsDir, "step-00000005"))
	os.RemoveAll(filepath.Join(dir, "adapter"))
	if code, out := runChild(t, 3*time.Minute, loraRunArgs(base, dir)...); code != 0 || !strings.Contains(logOf(dir), "resuming") {
		t.Fatalf("resumed run: exit %d\n%s", code, out)
	}
	for _, f := range []string{filepath.Join(rundir.CheckpointsDir, "step-00000005", "adapter", model.AdapterWeightsFile),
		filepath.Join(rundir.CheckpointsDir, "step-00000005", "trainer.safetensors"), filepath.Join("adapter", model.AdapterWeightsFile)} {
		a, errA := os.ReadFile(filepath.Join(ref, f))
		b, errB := os.ReadFile(filepath.Join(dir, f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the resumed run's differs from the uninterrupted run's (%v, %v)", f, errA, errB)
		}
	}

	// Other base weights: refused by fingerprint, exit 2.
	other := filepath.Join(t.TempDir(), "other")
	if err := run([]string{"init", "--preset", "tiny", "--seed", "2", "--out", other}); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(dir, rundir.CheckpointsDir, "step-00000005"))
	if code, out := runChild(t, 3*time.Minute, loraRunArgs(other, dir)...); code != 2 || !strings.Contains(out, "other base weights") {
		t.Errorf("resume onto another base: exit %d\n%s", code, out)
	}

	// export: the adapters as trained; merged into the base.
	adapters, merged := filepath.Join(t.TempDir(), "a"), filepath.Join(t.TempDir(), "m")
	if err := run([]string{"export", ref, "--out", adapters}); err != nil {
		t.Fatal(err)
	}
	a, _ := os.ReadFile(filepath.Join(adapters, model.AdapterWeightsFile))
	if b, _ := os.ReadFile(filepath.Join(ref, "adapter", model.AdapterWeightsFile)); !bytes.Equal(a, b) {
		t.Errorf("export of the run's checkpoint differs from its exported adapters")
	}
	if err := run([]string{"export", ref, "--merge", "--out", merged}); err != nil {
		t.Fatal(err)
	}
	err := torch.Run(func() error {
		m, err := model.Load(merged, model.Options{})
		if err != nil {
			return err
		}
		defer m.Close()
		bm, err := model.Load(base, model.Options{})
		if err != nil {
			return err
		}
		defer bm.Close()
		ad, err := model.ReadAdapter(adapters)
		if err != nil {
			return err
		}
		if err := bm.LoadAdapters(ad); err != nil {
			return err
		}
		batch, err := model.NewBatch([][]int32{{1, 5, 9, 14, 3, 7}}, false)
		if err != nil {
			return err
		}
		lm, err := m.Logits(batch)
		if err != nil {
			return err
		}
		la, err := bm.Logits(batch)
		if err != nil {
			return err
		}
		x, y := lm.Float32s(), la.Float32s()
		var d, mx float64
		for i := range x {
			d, mx = max(d, abs64(float64(x[i]-y[i]))), max(mx, abs64(float64(y[i])))
		}
		var base0 []float32
		bm.WithoutAdapters(func() { l, _ := bm.Logits(batch); base0 = l.Float32s() })
		var moved float64
		for i := range y {
			moved = max(moved, abs64(float64(y[i]-base0[i])))
		}
		if d > 2e-6*mx || moved < 1e-4 {
			t.Errorf("merged vs base + adapters: %g apart (largest %g); the adapters moved the logits by %g", d, mx, moved)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"eval", "--adapter", adapters, "--threads", "1", "--set", "data.val_size=2", "--set", "rollout.max_new_tokens=8"},
		{"eval", "--checkpoint", ref, "--threads", "1", "--set", "data.val_size=2", "--set", "rollout.max_new_tokens=8", "--out", filepath.Join(t.TempDir(), "e")},
		{"generate", "--adapter", adapters, "--prompt", "hi", "--max-new-tokens", "4", "--threads", "1"},
	} {
		if code, out := runChild(t, 3*time.Minute, args...); code != 0 {
			t.Errorf("%v: exit %d\n%s", args, code, out)
		}
	}
	if code, out := runChild(t, 3*time.Minute, "export", adapters, "--out", filepath.Join(t.TempDir(), "x")); code != 2 || !strings.Contains(out, "--merge") {
		t.Errorf("export of an adapter directory without --merge: exit %d\n%s", code, out)
	}
}

// criticLoRAArgs is PPO whose critic (the model in critic) trains its own adapters from verl's
// critic.model.lora_rank, with dropout (so that a resume must draw the critic's masks as the run
// would have), 2 steps with a checkpoint after each, all kept; the policy trains whole. On
// FrozenLake the tiny random model's invalid moves are penalised turn by turn, so the returns
// differ and the critic's adapters have gradients (on calc_mult every return is 0, and so is every
// critic gradient, whatever the masks).
func criticLoRAArgs(base, critic, dir string) []string {
	args := append([]string{"train", "--resume"}, tinyRun(base, dir)...)
	return append(args, "--steps", "2", "--set", "eval.before=false", "--set", "train.export=false", "--set", "train.report=false",
		"--set", "train.checkpoint_every=1", "--set", "train.keep_checkpoints=0", "--set", "critic_model="+critic, "--set", "env.name=frozenlake", "--set", "rollout.max_turns=2",
		"--set", "critic_lora.dropout=0.1", "algorithm.adv_estimator=gae", "critic.model.lora_rank=4", "critic.model.target_modules=[q_proj, v_proj]")
}

// With verl's critic.model.lora_rank the critic trains its own adapters and its value head, and
// its base stays out of the trainer's state: a PPO step's checkpoint holds the critic's lora_A,
// lora_B and value head, and none of its base weights; the policy, without lora_rank, trains whole.
// A run resumed from its first checkpoint ends with the uninterrupted run's trainer state (the
// critic's adapters and optimizer state) bit for bit, its dropout masks included; resuming onto
// other critic base weights is refused before any work (exit 2).
func TestCriticLoRA(t *testing.T) {
	base := tinyModel(t)
	dir := filepath.Join(t.TempDir(), "run")
	if err := run(criticLoRAArgs(base, base, dir)); err != nil {
		t.Fatal(err)
	}
	resumed := filepath.Join(t.TempDir(), "resumed")
	if err := os.CopyFS(resumed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	last := filepath.Join(rundir.CheckpointsDir, "step-00000002")
	os.RemoveAll(filepath.Join(resumed, last))
	if err := run(criticLoRAArgs(base, base, resumed)); err != nil || !strings.Contains(logOf(resumed), "resuming") {
		t.Fatalf("resumed run: %v", err)
	}
	for _, f := range []string{"trainer.safetensors", "state.json"} {
		a, errA := os.ReadFile(filepath.Join(dir, last, f))
		b, errB := os.ReadFile(filepath.Join(resumed, last, f))
		if errA != nil || errB != nil || !bytes.Equal(a, b) {
			t.Errorf("%s: the resumed run's differs from the uninterrupted run's (%v, %v)", f, errA, errB)
		}
	}
	other := filepath.Join(t.TempDir(), "other")
	if err := run([]string{"init", "--preset", "tiny", "--seed", "2", "--out", other}); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(resumed, last))
	if code, out := runChild(t, 3*time.Minute, criticLoRAArgs(base, other, resumed)...); code != 2 || !strings.Contains(out, "critic was trained on other base weights") {
		t.Errorf("resume onto another critic base: exit %d\n%s", code, out)
	}

	ck := filepath.Join(dir, rundir.CheckpointsDir, "step-00000001")
	f, err := safetensors.Open(filepath.Join(ck, "trainer.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var critic []string
	for _, n := range f.Names() {
		if w, ok := strings.CutPrefix(n, "critic/"); ok {
			critic = append(critic, w)
		}
	}
	want := []string{"model.layers.0.self_attn.q_proj.lora_A.weight", "model.layers.0.self_attn.v_proj.lora_B.weight", "value_head.weight", "value_head.bias"}
	for _, w := range want {
		if !slices.Contains(critic, w) {
			t.Errorf("the critic's state lacks %s (has %v)", w, critic)
		}
	}
	for _, w := range critic {
		if !strings.Contains(w, "lora_") && !strings.HasPrefix(w, "value_head") {
			t.Errorf("the critic's state holds base weight %s", w)
		}
	}
	if _, err := os.Stat(filepath.Join(ck, "model", "config.json")); err != nil {
		t.Errorf("the policy (no lora_rank) is not checkpointed whole: %v", err)
	}
}

func abs64(x float64) float64 {
	if x < 0 {
		return -x
	}
	return x
}
