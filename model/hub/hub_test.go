package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/model/hub/hubtest"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

const (
	commitMain = "1111111111111111111111111111111111111111"
	commitV1   = "2222222222222222222222222222222222222222"
)

// smallModel is a repository with one weights file, tokenizer files, and files the loader
// does not read (README.md, pytorch_model.bin, onnx/model.onnx).
func smallModel() *hubtest.Repo {
	files := map[string][]byte{
		"config.json":            []byte(`{"model_type":"qwen2"}`),
		"generation_config.json": []byte(`{"eos_token_id":2}`),
		"tokenizer.json":         []byte(`{"model":{}}`),
		"tokenizer_config.json":  []byte(`{}`),
		"model.safetensors":      []byte(strings.Repeat("weights!", 64)), // 512 bytes
		"README.md":              []byte("# a model"),
		"pytorch_model.bin":      []byte("pickle"),
		"onnx/model.onnx":        []byte("onnx"),
	}
	v1 := map[string][]byte{}
	for k, v := range files {
		v1[k] = v
	}
	v1["config.json"] = []byte(`{"model_type":"qwen2","v":1}`)
	return &hubtest.Repo{Revs: map[string]string{"main": commitMain, "v1": commitV1},
		Files: map[string]map[string][]byte{commitMain: files, commitV1: v1},
		LFS:   map[string]bool{"model.safetensors": true, "pytorch_model.bin": true}}
}

func options(h *hubtest.Hub, cache string) Options {
	return Options{Env: Env{Endpoint: h.URL, Cache: cache}}
}

func readFile(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The git blob id is git's: `printf 'hello\n' | git hash-object --stdin` and the empty file's.
func TestGitBlobID(t *testing.T) {
	for in, want := range map[string]string{
		"":        "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391",
		"hello\n": "ce013625030ba8dba906f756967f9e9ca394464a",
	} {
		e := expect{etag: want, kind: hashGitBlob, size: int64(len(in))}
		h := e.hasher()
		h.Write([]byte(in))
		if err := e.verify(int64(len(in)), h); err != nil {
			t.Errorf("%q: %v", in, err)
		}
	}
}

// A download fetches the loader's files only, as blobs named by their hashes with relative
// links in the snapshot and the branch's commit in refs/main; the second resolution downloads
// nothing.
func TestResolveDownloads(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	cache := t.TempDir()
	dir, err := Resolve(context.Background(), "org/small", options(h, cache))
	if err != nil {
		t.Fatal(err)
	}
	repo := filepath.Join(cache, "models--org--small")
	if want := filepath.Join(repo, "snapshots", commitMain); dir != want {
		t.Fatalf("dir %s, want %s", dir, want)
	}
	if got := readFile(t, filepath.Join(repo, "refs", "main")); got != commitMain {
		t.Errorf("refs/main %q", got)
	}
	weights := smallModel().Files[commitMain]["model.safetensors"]
	link, err := os.Readlink(filepath.Join(dir, "model.safetensors"))
	if want := filepath.Join("..", "..", "blobs", hubtest.SHA256(weights)); err != nil || link != want {
		t.Errorf("model.safetensors links to %q (%v), want %q", link, err, want)
	}
	link, _ = os.Readlink(filepath.Join(dir, "config.json"))
	if want := filepath.Join("..", "..", "blobs", hubtest.GitBlobID([]byte(`{"model_type":"qwen2"}`))); link != want {
		t.Errorf("config.json links to %q, want %q", link, want)
	}
	if got := readFile(t, filepath.Join(dir, "model.safetensors")); got != string(weights) {
		t.Errorf("weights differ")
	}
	for _, skipped := range []string{"README.md", "pytorch_model.bin", "onnx"} {
		if _, err := os.Lstat(filepath.Join(dir, skipped)); err == nil {
			t.Errorf("%s was downloaded", skipped)
		}
	}
	if len(h.Gets) != 5 {
		t.Errorf("file requests %v, want the 5 loader files", h.Gets)
	}
	again, err := Resolve(context.Background(), "org/small", options(h, cache))
	if err != nil || again != dir {
		t.Fatalf("again: %s %v", again, err)
	}
	for f, n := range h.Gets {
		if n != 1 {
			t.Errorf("%s fetched %d times", f, n)
		}
	}
}

// Resolutions of one model at once (ranks starting together) fetch each file once and agree.
func TestResolveConcurrent(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	cache := t.TempDir()
	dirs := make([]string, 4)
	errs := make([]error, 4)
	var wg sync.WaitGroup
	for i := range dirs {
		wg.Go(func() { dirs[i], errs[i] = Resolve(context.Background(), "org/small", options(h, cache)) })
	}
	wg.Wait()
	for i := range dirs {
		if errs[i] != nil || dirs[i] != dirs[0] {
			t.Errorf("resolution %d: %s %v", i, dirs[i], errs[i])
		}
	}
	if n := h.Gets["model.safetensors"]; n != 1 {
		t.Errorf("model.safetensors fetched %d times", n)
	}
	if got := readFile(t, filepath.Join(dirs[0], "model.safetensors")); got != string(smallModel().Files[commitMain]["model.safetensors"]) {
		t.Error("the weights differ")
	}
}

// A sharded checkpoint brings its index and the shards it names, not other safetensors files.
func TestResolveSharded(t *testing.T) {
	index := `{"metadata":{"total_size":8},"weight_map":{"a":"model-00001-of-00002.safetensors","b":"model-00002-of-00002.safetensors"}}`
	files := map[string][]byte{
		"config.json":                      []byte(`{}`),
		"model.safetensors.index.json":     []byte(index),
		"model-00001-of-00002.safetensors": []byte("shard one"),
		"model-00002-of-00002.safetensors": []byte("shard two"),
		"consolidated.safetensors":         []byte("the same weights again"),
	}
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/big": {Revs: map[string]string{"main": commitMain},
		Files: map[string]map[string][]byte{commitMain: files},
		LFS:   map[string]bool{"model-00001-of-00002.safetensors": true, "model-00002-of-00002.safetensors": true, "consolidated.safetensors": true}}})
	dir, err := Resolve(context.Background(), "org/big", options(h, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "model-00002-of-00002.safetensors")); got != "shard two" {
		t.Errorf("shard two: %q", got)
	}
	if h.Gets["consolidated.safetensors"] != 0 || len(h.Gets) != 4 {
		t.Errorf("file requests %v, want config, index and two shards", h.Gets)
	}
	if !complete(dir) {
		t.Error("the snapshot is not complete")
	}
}

// The shards of a sharded checkpoint download side by side, Options.Workers at a time, each with
// its own meter; one shard the Hub lies about fails the resolution with that shard's error, and
// the shards that arrived are kept for the next run.
func TestResolveShardsSideBySide(t *testing.T) {
	const shards = 6
	weightMap := map[string]string{}
	files := map[string][]byte{"config.json": []byte(`{}`)}
	lfs := map[string]bool{}
	for i := range shards {
		name := fmt.Sprintf("model-%05d-of-%05d.safetensors", i+1, shards)
		weightMap[fmt.Sprint("w", i)] = name
		files[name] = []byte(strings.Repeat(fmt.Sprint(i), 100+i))
		lfs[name] = true
	}
	index, _ := json.Marshal(map[string]any{"metadata": map[string]any{}, "weight_map": weightMap})
	files[safetensors.IndexName] = index
	for _, tc := range []struct{ workers, most int }{{1, 1}, {3, 3}, {0, shards}} {
		h := hubtest.New(t, map[string]*hubtest.Repo{"org/big": {Revs: map[string]string{"main": commitMain},
			Files: map[string]map[string][]byte{commitMain: files}, LFS: lfs}})
		h.Hold = 300 * time.Millisecond // long enough that a loaded machine still starts them together
		o := options(h, t.TempDir())
		o.Workers = tc.workers
		rec := &recorder{}
		o.Progress = rec.progress
		dir, err := Resolve(context.Background(), "org/big", o)
		if err != nil {
			t.Fatal(err)
		}
		if h.MostAtOnce != tc.most {
			t.Errorf("workers %d: %d files downloading at once at most, want %d", tc.workers, h.MostAtOnce, tc.most)
		}
		for name, b := range files {
			if got := readFile(t, filepath.Join(dir, name)); got != string(b) {
				t.Errorf("workers %d: %s differs", tc.workers, name)
			}
			if m := rec.files[name]; lfs[name] && (m == nil || m.added != int64(len(b)) || m.total != int64(len(b)) || m.done != 1) {
				t.Errorf("workers %d: %s's meter %+v, want %d of %d, done once", tc.workers, name, m, len(b), len(b))
			}
		}
	}
	// A lie about shard 4: the error names it, and the shards that arrived are in the cache.
	liar := &hubtest.Repo{Revs: map[string]string{"main": commitMain}, Files: map[string]map[string][]byte{commitMain: files},
		LFS: lfs, Lie: map[string]string{"model-00004-of-00006.safetensors": strings.Repeat("0", 64)}}
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/big": liar})
	cache := t.TempDir()
	o := options(h, cache)
	o.Workers = 1
	_, err := Resolve(context.Background(), "org/big", o)
	if err == nil || !strings.Contains(err.Error(), "model-00004-of-00006.safetensors") || !strings.Contains(err.Error(), "the download is discarded") {
		t.Fatalf("lying shard: %v", err)
	}
	delete(liar.Lie, "model-00004-of-00006.safetensors")
	h.Gets = map[string]int{}
	if _, err := Resolve(context.Background(), "org/big", options(h, cache)); err != nil {
		t.Fatal(err)
	}
	if h.Gets["model-00004-of-00006.safetensors"] != 1 || h.Gets["config.json"] != 0 {
		t.Errorf("second run's requests %v: want shard 4 again and nothing that had arrived", h.Gets)
	}
}

// A Hub whose API lists names without hashes (a mirror) is asked for each file's hash with HEAD:
// X-Linked-Etag for LFS files, ETag for the others; the files are checked and named by them.
func TestResolveHashesFromHeaders(t *testing.T) {
	repo := smallModel()
	repo.Bare = true
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": repo})
	cache := t.TempDir()
	dir, err := Resolve(context.Background(), "org/small", options(h, cache))
	if err != nil {
		t.Fatal(err)
	}
	weights := repo.Files[commitMain]["model.safetensors"]
	if link, _ := os.Readlink(filepath.Join(dir, "model.safetensors")); link != filepath.Join("..", "..", "blobs", hubtest.SHA256(weights)) {
		t.Errorf("model.safetensors links to %q", link)
	}
	if link, _ := os.Readlink(filepath.Join(dir, "tokenizer.json")); link != filepath.Join("..", "..", "blobs", hubtest.GitBlobID([]byte(`{"model":{}}`))) {
		t.Errorf("tokenizer.json links to %q", link)
	}
}

// A cached model is found offline without a request; a cache written by another program (a
// snapshot of plain files, as huggingface_hub writes on systems without links) works too.
func TestResolveOfflineCached(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	cache := t.TempDir()
	dir, err := Resolve(context.Background(), "org/small", options(h, cache))
	if err != nil {
		t.Fatal(err)
	}
	apis := h.APIs
	o := options(h, cache)
	o.Offline = true
	got, err := Resolve(context.Background(), "org/small", o)
	if err != nil || got != dir || h.APIs != apis {
		t.Errorf("offline: %s %v, %d API requests (want %s, none)", got, err, h.APIs-apis, dir)
	}

	snap := filepath.Join(cache, "models--other--model", "snapshots", commitV1)
	os.MkdirAll(snap, 0o755)
	os.WriteFile(filepath.Join(snap, "config.json"), []byte(`{}`), 0o644)
	os.WriteFile(filepath.Join(snap, "model.safetensors"), []byte(`x`), 0o644)
	os.MkdirAll(filepath.Join(cache, "models--other--model", "refs"), 0o755)
	os.WriteFile(filepath.Join(cache, "models--other--model", "refs", "main"), []byte(commitV1), 0o644)
	if got, err := Resolve(context.Background(), "other/model", o); err != nil || got != snap {
		t.Errorf("a cache written by hand: %s %v", got, err)
	}
	// The Hub unreachable: the cached snapshot is used, with a note.
	var notes []string
	o = Options{Env: Env{Endpoint: "http://127.0.0.1:1", Cache: cache}, Note: func(s string) { notes = append(notes, s) }}
	if got, err := Resolve(context.Background(), "org/small", o); err != nil || got != dir || len(notes) != 1 {
		t.Errorf("unreachable: %s %v, notes %q", got, err, notes)
	}
}

// An interrupted download keeps its part in blobs/ETAG.incomplete and resumes from there with
// a Range request; the result is whole and checked.
func TestResolveResumes(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	h.Cut["model.safetensors"] = 100
	cache := t.TempDir()
	_, err := Resolve(context.Background(), "org/small", options(h, cache))
	if err == nil || !strings.Contains(err.Error(), "run again to resume") {
		t.Fatalf("interrupted download: %v", err)
	}
	weights := smallModel().Files[commitMain]["model.safetensors"]
	part := filepath.Join(cache, "models--org--small", "blobs", hubtest.SHA256(weights)+".incomplete")
	if fi, err := os.Stat(part); err != nil || fi.Size() != 100 {
		t.Fatalf("partial download: %v %v", fi, err)
	}
	if _, err := os.Lstat(filepath.Join(cache, "models--org--small", "snapshots", commitMain, "model.safetensors")); err == nil {
		t.Error("the partial file is linked into the snapshot")
	}
	o := options(h, cache)
	rec := &recorder{}
	o.Progress = rec.progress
	dir, err := Resolve(context.Background(), "org/small", o)
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "model.safetensors")); got != string(weights) {
		t.Error("the resumed file differs")
	}
	// The bar of the resumed file starts at the 100 bytes already there and ends at its 512.
	if m := rec.files["model.safetensors"]; len(rec.files) != 1 || m == nil || m.total != 512 || m.added != 512 || m.done != 1 {
		t.Errorf("progress: %+v, want model.safetensors alone, 512 of 512, done once", rec.files)
	}
	if last := h.Ranges[len(h.Ranges)-1]; last != "bytes=100-" {
		t.Errorf("the resumed request's Range is %q, want bytes=100-", last)
	}
	if _, err := os.Stat(part); err == nil {
		t.Error("the .incomplete file stays")
	}
}

// A download that stops receiving is given up after the download timeout, and resumed.
func TestResolveStalled(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	h.Stall["model.safetensors"] = 300
	cache := t.TempDir()
	o := options(h, cache)
	o.DownloadTimeout = 200 * time.Millisecond
	_, err := Resolve(context.Background(), "org/small", o)
	// The first window asks for the whole file (512 bytes, fewer than stallBytes); 300 came.
	if want := "interrupted after 300 of 512 bytes: GET " + h.URL + "/cdn/org/small/" + commitMain +
		"/model.safetensors: the download stalls: 300 bytes in 200ms, fewer than 512 (HF_HUB_DOWNLOAD_TIMEOUT) (run again to resume)"; err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("stalled download: %v\nwant %s", err, want)
	}
	if _, err := Resolve(context.Background(), "org/small", options(h, cache)); err != nil {
		t.Fatal(err)
	}
	if last := h.Ranges[len(h.Ranges)-1]; last != "bytes=300-" {
		t.Errorf("the resumed request's Range is %q, want bytes=300-", last)
	}
}

// A file whose hash differs from the Hub's listing is discarded: nothing in snapshots/ or
// blobs/ for it.
func TestResolveWrongHash(t *testing.T) {
	repo := smallModel()
	repo.Lie = map[string]string{"model.safetensors": strings.Repeat("ab", 32)}
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": repo})
	cache := t.TempDir()
	_, err := Resolve(context.Background(), "org/small", options(h, cache))
	if err == nil || !strings.Contains(err.Error(), "the Hub says "+strings.Repeat("ab", 32)) || errors.Is(err, ErrNoModel) {
		t.Fatalf("wrong hash: %v", err)
	}
	blobs, _ := os.ReadDir(filepath.Join(cache, "models--org--small", "blobs"))
	for _, b := range blobs {
		if strings.HasPrefix(b.Name(), strings.Repeat("ab", 32)) {
			t.Errorf("blobs/%s stays", b.Name())
		}
	}
	if _, err := os.Lstat(filepath.Join(cache, "models--org--small", "snapshots", commitMain, "model.safetensors")); err == nil {
		t.Error("the bad file is in the snapshot")
	}
}

// A private model without a token is refused with a message naming HF_TOKEN; with the token it
// downloads.
func TestResolvePrivate(t *testing.T) {
	repo := smallModel()
	repo.Private = true
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/secret": repo})
	cache := t.TempDir()
	_, err := Resolve(context.Background(), "org/secret", options(h, cache))
	if !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), "set HF_TOKEN") || !strings.Contains(err.Error(), "401") {
		t.Fatalf("without a token: %v", err)
	}
	o := options(h, cache)
	o.Token = "wrong"
	if _, err := Resolve(context.Background(), "org/secret", o); !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), "the token in HF_TOKEN cannot read it") {
		t.Errorf("a wrong token: %v", err)
	}
	o.Token = h.Token
	if _, err := Resolve(context.Background(), "org/secret", o); err != nil {
		t.Errorf("with the token: %v", err)
	}
}

// Offline with nothing cached fails without a request and says how to get the model.
func TestResolveOfflineMissing(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	o := options(h, t.TempDir())
	o.Offline = true
	_, err := Resolve(context.Background(), "org/small", o)
	if !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), "HF_HUB_OFFLINE=1") || !strings.Contains(err.Error(), "not in the Hugging Face cache") {
		t.Errorf("offline, not cached: %v", err)
	}
	if h.APIs != 0 || len(h.Gets) != 0 {
		t.Errorf("offline mode made %d API and %d file requests", h.APIs, len(h.Gets))
	}
}

// @v1 is a tag: its commit's files, and refs/v1; @COMMIT is the commit itself, without a ref;
// a revision the Hub lacks is refused by name.
func TestResolveRevision(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	cache := t.TempDir()
	repo := filepath.Join(cache, "models--org--small")
	dir, err := Resolve(context.Background(), "org/small@v1", options(h, cache))
	if err != nil || dir != filepath.Join(repo, "snapshots", commitV1) {
		t.Fatalf("@v1: %s %v", dir, err)
	}
	if got := readFile(t, filepath.Join(dir, "config.json")); got != `{"model_type":"qwen2","v":1}` {
		t.Errorf("@v1 config.json: %s", got)
	}
	if got := readFile(t, filepath.Join(repo, "refs", "v1")); got != commitV1 {
		t.Errorf("refs/v1: %q", got)
	}
	dir, err = Resolve(context.Background(), "org/small@"+commitMain, options(h, cache))
	if err != nil || dir != filepath.Join(repo, "snapshots", commitMain) {
		t.Fatalf("@commit: %s %v", dir, err)
	}
	if _, err := os.Stat(filepath.Join(repo, "refs", commitMain)); err == nil {
		t.Error("a commit got a ref")
	}
	o := options(h, cache)
	o.Offline = true
	if got, err := Resolve(context.Background(), "org/small@"+commitMain, o); err != nil || got != dir {
		t.Errorf("@commit offline: %s %v", got, err)
	}
	if _, err := Resolve(context.Background(), "org/small@v9", options(h, cache)); !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), "no such revision") {
		t.Errorf("@v9: %v", err)
	}
}

// A local directory comes first, even when its path reads as an id; a path that is neither a
// directory nor an id is refused without asking the Hub.
func TestResolveLocal(t *testing.T) {
	root := t.TempDir()
	t.Chdir(root)
	os.MkdirAll(filepath.Join("org", "small"), 0o755)
	os.WriteFile(filepath.Join("org", "small", "config.json"), []byte(`{}`), 0o644)
	o := Options{Env: Env{Endpoint: "http://127.0.0.1:1", Cache: t.TempDir()}}
	if dir, err := Resolve(context.Background(), "org/small", o); err != nil || dir != "org/small" {
		t.Errorf("local org/small: %s %v", dir, err)
	}
	os.MkdirAll("empty", 0o755)
	for name, want := range map[string]string{
		"./models/missing":      "no such directory (and not a Hub id",
		"empty":                 "no config.json",
		"org/small/config.json": "is a file",
	} {
		if _, err := Resolve(context.Background(), name, o); !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want %q", name, err, want)
		}
	}
}

func TestParseID(t *testing.T) {
	for in, want := range map[string]ID{
		"Qwen/Qwen2.5-0.5B-Instruct":   {"Qwen/Qwen2.5-0.5B-Instruct", "main"},
		"meta-llama/Llama-3.2-1B@v1.0": {"meta-llama/Llama-3.2-1B", "v1.0"},
		"org/name@refs/pr/1":           {"org/name", "refs/pr/1"},
		"org/name@" + commitMain:       {"org/name", commitMain},
	} {
		if got, ok := ParseID(in); !ok || got != want {
			t.Errorf("%s: %+v %v, want %+v", in, got, ok, want)
		}
	}
	for _, in := range []string{"model", "./org/name", "/org/name", "a/b/c", "org/", "org/name@", "org/na--me", "org/..", "org/name@../x", "-org/name"} {
		if id, ok := ParseID(in); ok {
			t.Errorf("%s parsed as %+v", in, id)
		}
	}
}

func TestFromEnv(t *testing.T) {
	home := t.TempDir()
	os.MkdirAll(filepath.Join(home, "hf"), 0o755)
	os.WriteFile(filepath.Join(home, "hf", "token"), []byte("hf_fromfile\n"), 0o600)
	env := func(kv map[string]string) func(string) (string, bool) {
		return func(k string) (string, bool) { v, ok := kv[k]; return v, ok }
	}
	got, _ := FromEnv(env(map[string]string{"HOME": home}))
	if want := (Env{Endpoint: DefaultEndpoint, Cache: filepath.Join(home, ".cache", "huggingface", "hub")}); got != want {
		t.Errorf("defaults: %+v, want %+v", got, want)
	}
	got, _ = FromEnv(env(map[string]string{"HOME": home, "HF_HOME": filepath.Join(home, "hf"), "HF_ENDPOINT": "http://mirror/", "HF_HUB_OFFLINE": "1"}))
	if want := (Env{Endpoint: "http://mirror", Cache: filepath.Join(home, "hf", "hub"), Token: "hf_fromfile", Offline: true}); got != want {
		t.Errorf("HF_HOME: %+v, want %+v", got, want)
	}
	got, _ = FromEnv(env(map[string]string{"HF_HOME": filepath.Join(home, "hf"), "HF_HUB_CACHE": "/c", "HF_TOKEN": "hf_env", "HF_HUB_OFFLINE": "0",
		"HF_HUB_ETAG_TIMEOUT": "2.5", "HF_HUB_DOWNLOAD_TIMEOUT": "120"}))
	if want := (Env{Endpoint: DefaultEndpoint, Cache: "/c", Token: "hf_env", EtagTimeout: 2500 * time.Millisecond, DownloadTimeout: 2 * time.Minute}); got != want {
		t.Errorf("HF_HUB_CACHE, HF_TOKEN, timeouts: %+v, want %+v", got, want)
	}
	for _, bad := range []string{"0", "-1", "ten", "NaN", "Inf", "1e9"} {
		if _, err := FromEnv(env(map[string]string{"HOME": home, "HF_HUB_DOWNLOAD_TIMEOUT": bad})); err == nil ||
			!strings.Contains(err.Error(), "$HF_HUB_DOWNLOAD_TIMEOUT=") {
			t.Errorf("HF_HUB_DOWNLOAD_TIMEOUT=%s: %v", bad, err)
		}
	}
}

// recorder is a Progress that keeps what it was told about each file.
type recorder struct {
	mu    sync.Mutex
	files map[string]*meter
}

// meter is what a recorder was told about one file.
type meter struct {
	mu                 *sync.Mutex
	total, added, done int64
}

func (r *recorder) progress(label string, total int64) Meter {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.files == nil {
		r.files = map[string]*meter{}
	}
	m := &meter{mu: &r.mu, total: total}
	r.files[label] = m
	return m
}

func (m *meter) Add(n int64) { m.mu.Lock(); m.added += n; m.mu.Unlock() }
func (m *meter) Done()       { m.mu.Lock(); m.done++; m.mu.Unlock() }

// ConfigOnly fetches config.json alone (a memory plan reads the architecture only), offline it
// accepts a snapshot that has only config.json, and a full resolution afterwards fetches the
// rest into the same snapshot without fetching config.json again.
func TestResolveConfigOnly(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	cache := t.TempDir()
	o := options(h, cache)
	o.ConfigOnly = true
	dir, err := Resolve(context.Background(), "org/small", o)
	if err != nil {
		t.Fatal(err)
	}
	if len(h.Gets) != 1 || h.Gets["config.json"] != 1 {
		t.Errorf("file requests %v, want config.json alone", h.Gets)
	}
	if _, err := os.Stat(filepath.Join(dir, "model.safetensors")); err == nil {
		t.Errorf("the weights were downloaded")
	}
	o.Offline = true
	if got, err := Resolve(context.Background(), "org/small", o); err != nil || got != dir {
		t.Errorf("offline, config only: %s %v, want %s", got, err, dir)
	}
	full := options(h, cache)
	full.Offline = true
	if _, err := Resolve(context.Background(), "org/small", full); !errors.Is(err, ErrNoModel) {
		t.Errorf("offline, whole model, only config.json cached: %v, want ErrNoModel", err)
	}
	if got, err := Resolve(context.Background(), "org/small", options(h, cache)); err != nil || got != dir {
		t.Fatalf("whole model: %s %v", got, err)
	}
	if h.Gets["config.json"] != 1 || h.Gets["model.safetensors"] != 1 || len(h.Gets) != 5 {
		t.Errorf("file requests %v: want the 5 loader files, each once", h.Gets)
	}
}

// A renamed repository answers with relative redirects to its new name: the API listing and the
// downloads follow them (Go's client does), and so does the HEAD that reads a mirror's hashes,
// while it still stops at the CDN's redirect, where an LFS file's headers are.
func TestResolveMovedRepository(t *testing.T) {
	repo := smallModel()
	repo.Bare = true
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/new": repo})
	h.Moved = map[string]string{"org/old": "org/new"}
	dir, err := Resolve(context.Background(), "org/old", options(h, t.TempDir()))
	if err != nil {
		t.Fatal(err)
	}
	weights := repo.Files[commitMain]["model.safetensors"]
	if link, _ := os.Readlink(filepath.Join(dir, "model.safetensors")); link != filepath.Join("..", "..", "blobs", hubtest.SHA256(weights)) {
		t.Errorf("model.safetensors links to %q", link)
	}
}
