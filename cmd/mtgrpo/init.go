package main

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/cmd/internal/modelinit"
	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/model"
)

var initCommand = command{
	name:    "init",
	summary: "Write a randomly initialised model directory (config.json, generation_config.json, safetensors,\ntokenizer files) that this program and transformers load. --out must be new or empty unless --force.",
	examples: []string{
		"mtgrpo init --out models/tiny",
		"mtgrpo init --arch llama --preset llama3.2-1b --seed 7 --out models/llama-1b-random",
		"mtgrpo init --preset tiny --hidden-size 128 --intermediate-size 384 --head-dim 32 --out models/tiny-128",
	},
}

// initModel is `mtgrpo init`. The model is written into a staging directory beside --out and moved
// into place only when complete, so an interrupted init leaves --out as it was; see staging.go.
func initModel(args []string) error {
	fs := initCommand.flags()
	var spec modelinit.Spec
	fs.StringVar(&spec.Arch, "arch", "qwen3", "architecture: "+strings.Join(modelinit.Architectures, ", "))
	fs.StringVar(&spec.Preset, "preset", "tiny", "size and tokenizer: "+strings.Join(model.PresetNames(), ", "))
	fs.Uint64Var(&spec.Seed, "seed", 0, "random seed (the same seed gives the same weights everywhere)")
	out := fs.String("out", "", "output directory (required)")
	fs.StringVar(&spec.DType, "dtype", "", "saved dtype (default: the preset's, float32 for tiny, bfloat16 otherwise)")
	fs.IntVar(&spec.HiddenSize, "hidden-size", 0, "hidden size (0: the preset's)")
	fs.IntVar(&spec.IntermediateSize, "intermediate-size", 0, "MLP intermediate size (0: the preset's)")
	fs.IntVar(&spec.NumHiddenLayers, "layers", 0, "decoder layers (0: the preset's)")
	fs.IntVar(&spec.NumAttentionHeads, "heads", 0, "attention heads (0: the preset's)")
	fs.IntVar(&spec.NumKeyValueHeads, "kv-heads", 0, "key/value heads (0: the preset's)")
	fs.IntVar(&spec.HeadDim, "head-dim", 0, "head dimension (0: hidden size / heads)")
	fs.Float64Var(&spec.RopeTheta, "rope-theta", 0, "RoPE base (0: the architecture's)")
	force := fs.Bool("force", false, "write into a non-empty --out, replacing the files init writes (other files are kept)")
	threadSpec := threadsFlag(fs)
	if err := initCommand.parse(fs, args); err != nil {
		return err
	}
	switch {
	case *out == "":
		return usagef("init: --out is required")
	case !slices.Contains(modelinit.Architectures, spec.Arch):
		return usagef("init: --arch %q: unknown architecture (%s)", spec.Arch, strings.Join(modelinit.Architectures, ", "))
	case !slices.Contains(model.PresetNames(), spec.Preset):
		return usagef("init: --preset %q: unknown preset (%s)", spec.Preset, strings.Join(model.PresetNames(), ", "))
	}
	err := spec.Check()
	if ke, ok := setting.As(err); ok {
		return usagef("init: --%s: %v", initFlags[strings.TrimPrefix(ke.Key, "init.")], ke.Err)
	}
	if err != nil {
		return usagef("init: %v", err)
	}
	st, err := newStaging(*out, *force)
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	defer st.discard()
	var params int64
	err = withTorch(*threadSpec, func() error {
		var err error
		params, err = modelinit.Write(st.dir, spec)
		return err
	})
	if err != nil {
		return fmt.Errorf("init: %w", err)
	}
	if err := st.commit(); err != nil {
		return fmt.Errorf("init: %w", err)
	}
	fmt.Printf("mtgrpo init: %s %s, %d parameters, seed %d -> %s\n", spec.Arch, spec.Preset, params, spec.Seed, *out)
	return nil
}

// initFlags are init's flags by the Spec field (config.json name) they set.
var initFlags = map[string]string{"arch": "arch", "preset": "preset", "dtype": "dtype", "hidden_size": "hidden-size",
	"intermediate_size": "intermediate-size", "num_hidden_layers": "layers", "num_attention_heads": "heads",
	"num_key_value_heads": "kv-heads", "head_dim": "head-dim", "rope_theta": "rope-theta"}
