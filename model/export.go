package model

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/mtgrpo/mtgrpo/torch"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// ExportOptions configure Export.
type ExportOptions struct {
	// DType of the saved tensors ("bfloat16", "float32", ...); empty keeps the model's dtype, which
	// makes Load → Export → Load bit-exact.
	DType string
	// MaxShardBytes splits the weights into model-0000K-of-0000N.safetensors shards plus
	// model.safetensors.index.json above this size; 0 means 5 GB (transformers' default).
	MaxShardBytes int64
	// Progress, when set, follows the weights being written (in bytes).
	Progress Progress
}

// tokenizerFiles are copied by Export from Model.TokenizerDir when present.
var tokenizerFiles = []string{"tokenizer.json", "tokenizer_config.json", "special_tokens_map.json",
	"vocab.json", "merges.txt", "added_tokens.json", "chat_template.jinja", "chat_template.json"}

// Export writes a directory that transformers' from_pretrained loads: config.json (torch_dtype set
// to the saved dtype), generation_config.json, the weights (single file or shards with the index;
// a tied head is not saved, as transformers does) and the tokenizer files. A model with LoRA
// adapters is refused: SaveAdapters writes them, MergeAdapters folds them in first. Run it on the
// torch thread.
func (m *Model) Export(dir string, o ExportOptions) (err error) {
	defer torch.Recover(&err)
	if m.lora != nil { // the base weights alone would lose what was trained
		return fmt.Errorf("model: export: the model has LoRA adapters: save them (SaveAdapters) or merge them first (MergeAdapters)")
	}
	dt := m.DType
	if o.DType != "" {
		if dt, err = torch.ParseDType(o.DType); err != nil {
			return fmt.Errorf("model: export: %w", err)
		}
	}
	if o.MaxShardBytes <= 0 {
		o.MaxShardBytes = 5 << 30
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("model: export: %w", err)
	}
	s := torch.NewScope()
	defer s.Close()
	tensors := map[string]*torch.Tensor{}
	for _, w := range m.weights() {
		t := (*w.t).Detach()
		if dt != m.DType || m.Device != torch.CPU {
			t = t.To(torch.CPU, dt)
		}
		tensors[w.name] = t
	}
	if err := writeWeights(dir, tensors, o); err != nil {
		return fmt.Errorf("model: export %s: %w", dir, err)
	}
	cfg := *m.Config
	setDType(&cfg, dt)
	if err := writeJSON(filepath.Join(dir, "config.json"), cfg); err != nil {
		return err
	}
	gen := m.Generation
	if gen == nil {
		gen = generationFromConfig(m.Config)
	}
	if err := writeJSON(filepath.Join(dir, "generation_config.json"), gen); err != nil {
		return err
	}
	return copyTokenizer(m.TokenizerDir, dir)
}

// writeWeights writes the tensors as safetensors into dir, telling o.Progress as each tensor's
// bytes are written.
func writeWeights(dir string, tensors map[string]*torch.Tensor, o ExportOptions) error {
	bar := o.Progress
	if bar == nil {
		bar = silent{}
	}
	w := safetensors.NewWriter()
	w.SetMetadata("format", "pt")
	var total int64
	for name, t := range tensors {
		info := t.Info()
		sd, err := torch.SafetensorsDType(info.DType)
		if err != nil {
			return fmt.Errorf("%q: %w", name, err)
		}
		total += info.Numel * int64(info.DType.Size())
		err = w.AddStream(name, sd, info.Shape, func(out io.Writer) error {
			// torch.Do turns a torch failure into an error, so the writer removes its
			// temporary file instead of being unwound by a panic.
			return torch.Do(func() error {
				b := t.Bytes()
				_, err := out.Write(b)
				bar.Add(int64(len(b)))
				return err
			})
		})
		if err != nil {
			return err
		}
	}
	bar.Start("exporting "+dir, total)
	defer bar.Done()
	_, err := w.WriteDir(dir, o.MaxShardBytes)
	return err
}

// setDType records the saved dtype under the key the config already uses (torch_dtype by default).
func setDType(c *Config, dt torch.DType) {
	if c.Dtype != "" {
		c.Dtype = dt.String()
		return
	}
	c.TorchDtype = dt.String()
}

// copyTokenizer copies the tokenizer files of src that exist into dst.
func copyTokenizer(src, dst string) error {
	if src == "" {
		return nil
	}
	if a, b := filepath.Clean(src), filepath.Clean(dst); a == b {
		return nil
	}
	for _, name := range tokenizerFiles {
		if err := copyFile(filepath.Join(src, name), filepath.Join(dst, name)); err != nil {
			if errors.Is(err, fs.ErrNotExist) {
				continue
			}
			return fmt.Errorf("model: export: %w", err)
		}
	}
	return nil
}

func copyFile(src, dst string) error {
	in, err := os.Open(src)
	if err != nil {
		return err
	}
	defer in.Close()
	out, err := os.Create(dst)
	if err != nil {
		return err
	}
	if _, err := io.Copy(out, in); err != nil {
		out.Close()
		return err
	}
	return out.Close()
}
