package hub

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/mtgrpo/mtgrpo/internal/untrusted"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// Options say where the Hub and the cache are and how to report.
type Options struct {
	Env
	// Client sends the requests (nil: a clone of http.DefaultTransport's). Every request is
	// bounded in time by Env's timeouts (deadline.go), whatever the client.
	Client *http.Client
	// Progress follows the downloads (nil: silent).
	Progress Progress
	// Workers is how many files download at once (0: DefaultWorkers, huggingface_hub's
	// max_workers): a sharded checkpoint's shards arrive side by side.
	Workers int
	// Note receives a line on what was done that the caller may want to show (nil: dropped).
	Note func(string)
	// ConfigOnly resolves a Hub id to a snapshot that holds config.json, fetching nothing else:
	// for callers that read the architecture only (a memory plan of a 70B model needs 1 KB, not
	// 140 GB). A later Resolve without it fetches the rest into the same snapshot.
	ConfigOnly bool
}

// DefaultWorkers is how many files download at once unless Options.Workers says otherwise.
const DefaultWorkers = 8

// loaderFiles are the files besides the weights that the model and tokenizer loaders read.
var loaderFiles = map[string]bool{
	"config.json": true, "generation_config.json": true,
	"tokenizer.json": true, "tokenizer_config.json": true, "special_tokens_map.json": true,
	"added_tokens.json": true, "vocab.json": true, "merges.txt": true, "tokenizer.model": true,
	"chat_template.jinja": true, "chat_template.json": true,
	safetensors.IndexName: true,
}

// Resolve returns the directory of the model name stands for: name itself when it is a
// directory (it must hold config.json); else, for an id ORG/NAME[@REVISION], its snapshot in
// the cache, downloading what is missing unless offline. An error wrapping ErrNoModel says the
// name leads to no model.
func Resolve(ctx context.Context, name string, o Options) (string, error) {
	if fi, err := os.Stat(name); err == nil {
		switch _, cerr := os.Stat(filepath.Join(name, "config.json")); {
		case !fi.IsDir():
			return "", noModel("%s is a file: want a model directory (config.json, safetensors, tokenizer files) or a Hub id ORG/NAME", name)
		case cerr != nil:
			return "", noModel("%s: not a model directory: no config.json", name)
		}
		return name, nil
	}
	id, isID, err := parseID(name)
	switch {
	case !isID:
		return "", noModel("%s: no such directory (and not a Hub id ORG/NAME[@REVISION])", name)
	case err != nil:
		return "", noModel("%s: no such directory, and as a Hub id: %v", name, err)
	}
	ca := cache{root: o.Cache, id: id}
	if o.Offline {
		if dir, ok := ca.cached(o.ConfigOnly); ok {
			return dir, nil
		}
		return "", noModel("%s: no such directory, and %s is not in the Hugging Face cache %s; HF_HUB_OFFLINE=1 forbids downloading it: download it once without HF_HUB_OFFLINE, or give a model directory",
			name, id, o.Cache)
	}
	if o.Client == nil {
		o.Client = &http.Client{Transport: http.DefaultTransport.(*http.Transport).Clone()}
	}
	if o.Client.CheckRedirect == nil {
		hc := *o.Client
		hc.CheckRedirect = checkRedirect
		o.Client = &hc
	}
	if o.Progress == nil {
		o.Progress = func(string, int64) Meter { return silent{} }
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Note == nil {
		o.Note = func(string) {}
	}
	dir, err := download(ctx, client{env: o.Env, http: o.Client}, ca, o)
	if err != nil && isUnreachable(err) {
		if cached, ok := ca.cached(o.ConfigOnly); ok {
			o.Note(fmt.Sprintf("%v: using the cached %s", err, cached))
			return cached, nil
		}
	}
	switch {
	case errors.Is(err, ErrNoModel): // a mistyped directory reads as an id too
		return "", noModel("%s: no such directory, and as a Hub id: %v", name, err)
	case err != nil:
		return "", fmt.Errorf("%s: %w", name, err)
	}
	return dir, nil
}

// download brings the revision's loader files (o.ConfigOnly: config.json) into the cache and
// returns its snapshot.
func download(ctx context.Context, c client, ca cache, o Options) (string, error) {
	info, err := c.info(ctx, ca.id)
	if err != nil {
		return "", err
	}
	files := map[string]sibling{}
	for _, s := range info.Siblings {
		files[s.Name] = s
	}
	if _, ok := files["config.json"]; !ok {
		return "", noModel("%s at %s has no config.json: not a transformers model", ca.id, info.SHA)
	}
	var loaders []string
	for name := range files {
		if loaderFiles[name] && (!o.ConfigOnly || name == "config.json") {
			loaders = append(loaders, name)
		}
	}
	fetched, err := ensureAll(ctx, c, ca, info.SHA, files, loaders, o)
	if err != nil {
		return "", err
	}
	if !o.ConfigOnly { // the weights, once the index that names the shards is in the snapshot
		weights, err := weightFiles(ca.snapshot(info.SHA), files)
		if err != nil {
			return "", noModel("%s at %s: %v", ca.id, info.SHA, err)
		}
		n, err := ensureAll(ctx, c, ca, info.SHA, files, weights, o)
		if err != nil {
			return "", err
		}
		fetched += n
	}
	if ca.id.Revision != info.SHA {
		if err := ca.writeRef(ca.id.Revision, info.SHA); err != nil {
			return "", err
		}
	}
	if fetched > 0 {
		o.Note(fmt.Sprintf("%s: %d files downloaded into %s", ca.id, fetched, ca.snapshot(info.SHA)))
	}
	return ca.snapshot(info.SHA), nil
}

// weightFiles are the safetensors files to fetch: the shards the index (already in snapshot)
// names, else model.safetensors.
func weightFiles(snapshot string, files map[string]sibling) ([]string, error) {
	if _, ok := files[safetensors.IndexName]; ok {
		ix, err := safetensors.ReadIndex(filepath.Join(snapshot, safetensors.IndexName))
		if err != nil {
			return nil, err
		}
		shards := ix.Shards()
		for _, s := range shards {
			if !untrusted.Clean(s) { // a name that would print escapes on the terminal
				return nil, fmt.Errorf("%s names the shard %s, which is no plain file name", safetensors.IndexName, untrusted.Text(s))
			}
			if _, ok := files[s]; !ok {
				return nil, fmt.Errorf("%s names %s, which the repository lacks", safetensors.IndexName, s)
			}
		}
		return shards, nil
	}
	if _, ok := files[safetensors.SingleName]; ok {
		return []string{safetensors.SingleName}, nil
	}
	var others []string
	for name := range files {
		if path.Ext(name) == ".bin" || path.Ext(name) == ".pth" {
			others = append(others, name)
		}
	}
	if len(others) > 0 {
		return nil, fmt.Errorf("no safetensors weights, only %s (convert them to safetensors first)", strings.Join(others, ", "))
	}
	return nil, fmt.Errorf("no weights (%s or %s)", safetensors.SingleName, safetensors.IndexName)
}

// ensureAll puts the named files into the snapshot, o.Workers at a time; it returns how many it
// downloaded, or the first error, on which the downloads still running are cancelled (each keeps
// what it has for the next run to resume).
func ensureAll(ctx context.Context, c client, ca cache, commit string, files map[string]sibling, names []string, o Options) (int, error) {
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(o.Workers)
	var fetched atomic.Int64
	for _, name := range names {
		g.Go(func() error {
			if ctx.Err() != nil { // another file failed: start no more
				return ctx.Err()
			}
			n, err := ensure(ctx, c, ca, commit, files[name], o.Progress)
			fetched.Add(int64(n))
			return err
		})
	}
	err := g.Wait()
	return int(fetched.Load()), err
}

// ensure puts one file into the snapshot, downloading its blob unless the cache has it; it
// returns 1 when it downloaded.
func ensure(ctx context.Context, c client, ca cache, commit string, s sibling, p Progress) (int, error) {
	if _, err := os.Stat(filepath.Join(ca.snapshot(commit), filepath.FromSlash(s.Name))); err == nil {
		return 0, nil
	}
	e, ok := expectOf(s)
	if !ok {
		var err error
		if e, err = c.head(ctx, ca.id, commit, s.Name); err != nil {
			return 0, err
		}
	}
	n := 0
	if _, err := os.Stat(ca.blob(e.etag)); err != nil {
		unlock, err := ca.lock(e.etag)
		if err != nil {
			return 0, err
		}
		defer unlock()
		if _, err := os.Stat(ca.blob(e.etag)); err != nil { // another process may have fetched it
			if err := c.fetchBlob(ctx, ca, ca.id, commit, s.Name, e, p); err != nil {
				return 0, err
			}
			n = 1
		}
	}
	return n, ca.link(commit, s.Name, e.etag)
}
