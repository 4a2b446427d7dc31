package safetensors

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// IndexName is the index file of a sharded checkpoint, as transformers names it.
const IndexName = "model.safetensors.index.json"

// SingleName is the file of an unsharded checkpoint.
const SingleName = "model.safetensors"

// Index is model.safetensors.index.json: which shard holds each tensor.
type Index struct {
	// TotalSize is metadata.total_size: the sum of the tensors' byte sizes (headers excluded).
	TotalSize int64
	// WeightMap maps tensor name → shard file name (a base name in the same directory).
	WeightMap map[string]string
}

// ShardName is the file name of shard i (0-based) of n: model-00001-of-00003.safetensors.
func ShardName(i, n int) string { return fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, n) }

// Shards lists the distinct shard files of the index, sorted.
func (ix *Index) Shards() []string {
	seen := map[string]bool{}
	var files []string
	for _, f := range ix.WeightMap {
		if !seen[f] {
			seen[f] = true
			files = append(files, f)
		}
	}
	sort.Strings(files)
	return files
}

// ReadIndex reads and checks an index file: weight_map must be a string→string object without
// duplicate names, and shard names must be plain file names in the same directory.
func ReadIndex(path string) (*Index, error) {
	b, err := bounded.ReadFile(path, bounded.Small)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	ix, err := parseIndex(b)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %s: %w", path, err)
	}
	return ix, nil
}

func parseIndex(b []byte) (*Index, error) {
	var top struct {
		Metadata struct {
			TotalSize *json.Number `json:"total_size"`
		} `json:"metadata"`
		WeightMap json.RawMessage `json:"weight_map"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	if err := dec.Decode(&top); err != nil {
		return nil, fmt.Errorf("invalid JSON: %w", err)
	}
	if len(top.WeightMap) == 0 || string(top.WeightMap) == "null" {
		return nil, fmt.Errorf(`missing "weight_map"`)
	}
	ix := &Index{}
	if top.Metadata.TotalSize != nil {
		f, err := top.Metadata.TotalSize.Float64()
		if err != nil || f < 0 {
			return nil, fmt.Errorf("metadata.total_size %q is not a non-negative number", *top.Metadata.TotalSize)
		}
		ix.TotalSize = int64(f)
	}
	wm, err := parseMetadata(top.WeightMap)
	if err != nil {
		return nil, fmt.Errorf("weight_map: %w", err)
	}
	for name, file := range wm {
		if file == "" || file == "." || file == ".." || strings.ContainsAny(file, `/\`) {
			return nil, fmt.Errorf("weight_map: tensor %q: shard %q must be a file name in the checkpoint directory", name, file)
		}
	}
	ix.WeightMap = wm
	return ix, nil
}

// WriteIndex writes ix to path atomically, keys sorted, indented like transformers' output.
func WriteIndex(path string, ix *Index) error {
	doc := map[string]any{
		"metadata":   map[string]int64{"total_size": ix.TotalSize},
		"weight_map": ix.WeightMap,
	}
	b, err := json.MarshalIndent(doc, "", "  ")
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	b = append(b, '\n')
	return writeAtomic(path, func(w io.Writer) error {
		_, err := w.Write(b)
		return err
	})
}

// PlanShards groups tensors (by name, in sorted order) into shards of at most maxBytes each, like
// huggingface_hub: a tensor that would overflow the current shard starts a new one, and a tensor
// larger than maxBytes gets a shard to itself. Unlike huggingface_hub, that oversized tensor also
// closes the current shard, so shard k holds only names sorting before those of shard k+1.
// maxBytes <= 0 means one shard.
func PlanShards(sizes map[string]int64, maxBytes int64) [][]string {
	names := make([]string, 0, len(sizes))
	for n := range sizes {
		names = append(names, n)
	}
	sort.Strings(names)
	if maxBytes <= 0 {
		return [][]string{names}
	}
	var shards [][]string
	var cur []string
	var curSize int64
	for _, n := range names {
		s := sizes[n]
		if len(cur) > 0 && curSize+s > maxBytes {
			shards = append(shards, cur)
			cur, curSize = nil, 0
		}
		cur = append(cur, n)
		curSize += s
		if curSize > maxBytes { // an oversized tensor alone
			shards = append(shards, cur)
			cur, curSize = nil, 0
		}
	}
	if len(cur) > 0 || len(shards) == 0 {
		shards = append(shards, cur)
	}
	return shards
}
