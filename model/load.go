package model

import (
	"fmt"
	"slices"
	"strings"

	"github.com/mtgrpo/mtgrpo/torch"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// Load reads a Hugging Face model directory: config.json, generation_config.json (optional),
// model.safetensors or sharded model-*-of-*.safetensors with model.safetensors.index.json. Tensors
// are read one at a time (torch/safetensors), copied to o.Device and converted to o.DType, whatever
// dtype they are stored in. The weight table decides what must be there: a missing, unexpected or mis-shaped
// tensor is an error naming it (rotary_emb.inv_freq buffers of old checkpoints are ignored, and so
// is a stored lm_head.weight when the head is tied). Run it on the torch thread.
func Load(dir string, o Options) (m *Model, err error) {
	cfg, err := LoadConfig(dir)
	if err != nil {
		return nil, err
	}
	gen, err := LoadGenerationConfig(dir, cfg)
	if err != nil {
		return nil, err
	}
	ck, err := safetensors.OpenDir(dir)
	if err != nil {
		return nil, fmt.Errorf("model: %w", err)
	}
	defer ck.Close()
	if err := cfg.CheckLayerCount(ck.Names()); err != nil {
		return nil, fmt.Errorf("model: %s: config.json: %w", dir, err)
	}
	m, err = newModel(cfg, o)
	if err != nil {
		return nil, err
	}
	m.Generation, m.TokenizerDir = gen, dir
	if err := m.loadWeights(ck, dir, o.Progress); err != nil {
		m.Close()
		return nil, err
	}
	return m, nil
}

// ignorable are checkpoint tensors that are not weights: transformers drops them too.
func (m *Model) ignorable(name string) bool {
	return strings.HasSuffix(name, "rotary_emb.inv_freq") || (m.Config.TieWordEmbeddings && name == "lm_head.weight")
}

// loadWeights checks the checkpoint against the weight table, then fills every entry.
func (m *Model) loadWeights(ck *safetensors.Checkpoint, dir string, bar Progress) (err error) {
	defer torch.Recover(&err)
	table := m.weights()
	want := map[string]bool{}
	for _, w := range table {
		want[w.name] = true
	}
	var unexpected, missing []string
	for _, n := range ck.Names() {
		if !want[n] && !m.ignorable(n) {
			unexpected = append(unexpected, n)
		}
	}
	var total int64
	for _, w := range table {
		info, err := ck.Info(w.name)
		if err != nil {
			missing = append(missing, w.name)
			continue
		}
		if !slices.Equal(info.Shape, w.shape) {
			return fmt.Errorf("model: %s: tensor %s has shape %v, the config implies %v", dir, w.name, info.Shape, w.shape)
		}
		total += info.Numel() * int64(info.DType.Size())
	}
	if len(missing) > 0 {
		return fmt.Errorf("model: %s: missing tensors: %s", dir, listNames(missing))
	}
	if len(unexpected) > 0 {
		return fmt.Errorf("model: %s: unexpected tensors (not in the %s weight table): %s", dir, m.Config.ModelType, listNames(unexpected))
	}
	if bar == nil {
		bar = silent{}
	}
	bar.Start("loading "+dir, total)
	defer bar.Done()
	for _, w := range table {
		var t *torch.Tensor
		m.scope.With(func() {
			t, err = torch.LoadTensor(ck, w.name, m.Device, m.DType)
		})
		if err != nil {
			return fmt.Errorf("model: %s: %w", dir, err)
		}
		*w.t = t
		info, _ := ck.Info(w.name)
		bar.Add(info.Numel() * int64(info.DType.Size()))
	}
	m.ready()
	return nil
}

// listNames shows up to 8 names and a count of the rest.
func listNames(names []string) string {
	if len(names) <= 8 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:8], ", "), len(names)-8)
}

// silent is the Progress of a Load that reports nothing.
type silent struct{}

func (silent) Start(string, int64) {}
func (silent) Add(int64)           {}
func (silent) Done()               {}
