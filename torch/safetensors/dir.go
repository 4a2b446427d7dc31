package safetensors

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"sort"
)

// WriteDir writes the tensors into dir as a checkpoint transformers can load: model.safetensors
// when everything fits in one shard of maxShardBytes (or maxShardBytes <= 0), else
// model-0000K-of-0000N.safetensors plus model.safetensors.index.json. Every file is written
// atomically; the index is written after its shards. Files of an earlier save that the new layout
// does not use (a stale index, single file, or shards of another count) are removed last, so
// loaders never pick up a mix. It returns the file names written.
func (w *Writer) WriteDir(dir string, maxShardBytes int64) ([]string, error) {
	sizes := make(map[string]int64, len(w.entries))
	var total int64
	for n, e := range w.entries {
		sizes[n] = e.size
		total += e.size
	}
	plan := PlanShards(sizes, maxShardBytes)
	if len(plan) == 1 {
		if err := w.writeFileSubset(filepath.Join(dir, SingleName), plan[0]); err != nil {
			return nil, err
		}
		return []string{SingleName}, removeStale(dir, map[string]bool{SingleName: true})
	}
	ix := &Index{TotalSize: total, WeightMap: map[string]string{}}
	keep := map[string]bool{IndexName: true}
	var files []string
	for i, names := range plan {
		file := ShardName(i, len(plan))
		if err := w.writeFileSubset(filepath.Join(dir, file), names); err != nil {
			return nil, err
		}
		for _, n := range names {
			ix.WeightMap[n] = file
		}
		keep[file] = true
		files = append(files, file)
	}
	if err := WriteIndex(filepath.Join(dir, IndexName), ix); err != nil {
		return nil, err
	}
	return append(files, IndexName), removeStale(dir, keep)
}

func (w *Writer) writeFileSubset(path string, names []string) error {
	return writeAtomic(path, func(out io.Writer) error {
		_, err := w.writeSubset(out, names)
		return err
	})
}

var shardPattern = regexp.MustCompile(`^model-\d{5}-of-\d{5}\.safetensors$`)

// removeStale deletes checkpoint files in dir that keep does not list.
func removeStale(dir string, keep map[string]bool) error {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("safetensors: %w", err)
	}
	for _, e := range ents {
		n := e.Name()
		if keep[n] || !(n == SingleName || n == IndexName || shardPattern.MatchString(n)) {
			continue
		}
		if err := os.Remove(filepath.Join(dir, n)); err != nil {
			return fmt.Errorf("safetensors: removing stale %s: %w", n, err)
		}
	}
	return nil
}

// Checkpoint is an open checkpoint directory: one file or several shards behind an index.
type Checkpoint struct {
	dir    string
	files  []*File
	byName map[string]*File
	names  []string
	index  *Index // nil for a single file
}

// OpenDir opens a checkpoint: a directory holding model.safetensors.index.json (sharded, preferred
// when present, as transformers does) or model.safetensors, or a path to one .safetensors file.
func OpenDir(path string) (*Checkpoint, error) {
	st, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	if !st.IsDir() {
		f, err := Open(path)
		if err != nil {
			return nil, err
		}
		return single(filepath.Dir(path), f), nil
	}
	ixPath := filepath.Join(path, IndexName)
	if _, err := os.Stat(ixPath); err == nil {
		return openSharded(path, ixPath)
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("safetensors: %w", err)
	}
	f, err := Open(filepath.Join(path, SingleName))
	if errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("safetensors: %s holds neither %s nor %s", path, SingleName, IndexName)
	}
	if err != nil {
		return nil, err
	}
	return single(path, f), nil
}

func single(dir string, f *File) *Checkpoint {
	c := &Checkpoint{dir: dir, files: []*File{f}, byName: map[string]*File{}, names: f.Names()}
	for _, n := range c.names {
		c.byName[n] = f
	}
	return c
}

func openSharded(dir, ixPath string) (*Checkpoint, error) {
	ix, err := ReadIndex(ixPath)
	if err != nil {
		return nil, err
	}
	c := &Checkpoint{dir: dir, byName: map[string]*File{}, index: ix}
	shards := map[string]*File{}
	for _, file := range ix.Shards() {
		f, err := Open(filepath.Join(dir, file))
		if err != nil {
			c.Close()
			return nil, err
		}
		shards[file] = f
		c.files = append(c.files, f)
	}
	for name, file := range ix.WeightMap {
		f := shards[file]
		if !f.Has(name) {
			c.Close()
			return nil, fmt.Errorf("safetensors: %s lists tensor %q in %s, which does not contain it", ixPath, name, f.Path())
		}
		c.byName[name] = f
		c.names = append(c.names, name)
	}
	sort.Strings(c.names)
	return c, nil
}

// Names lists the tensors in sorted order. For a sharded checkpoint these are the index's names;
// tensors a shard holds but the index does not list are ignored, as transformers ignores them.
func (c *Checkpoint) Names() []string { return append([]string(nil), c.names...) }

// Has reports whether the checkpoint holds a tensor called name.
func (c *Checkpoint) Has(name string) bool {
	_, ok := c.byName[name]
	return ok
}

// Index returns the parsed index, or nil for a single-file checkpoint.
func (c *Checkpoint) Index() *Index { return c.index }

// File returns the open file that holds name.
func (c *Checkpoint) File(name string) (*File, error) {
	f, ok := c.byName[name]
	if !ok {
		return nil, fmt.Errorf("safetensors: checkpoint %s: no tensor %q", c.dir, name)
	}
	return f, nil
}

// Info returns a tensor's dtype, shape and offsets within its file.
func (c *Checkpoint) Info(name string) (TensorInfo, error) {
	f, err := c.File(name)
	if err != nil {
		return TensorInfo{}, err
	}
	return f.Info(name)
}

// Data reads a tensor's bytes into a new slice (see File.Data).
func (c *Checkpoint) Data(name string) ([]byte, error) {
	f, err := c.File(name)
	if err != nil {
		return nil, err
	}
	return f.Data(name)
}

// ReadInto reads a tensor's bytes into dst (see File.ReadInto).
func (c *Checkpoint) ReadInto(name string, dst []byte) error {
	f, err := c.File(name)
	if err != nil {
		return err
	}
	return f.ReadInto(name, dst)
}

// Metadata returns the __metadata__ of the first file (shards written together share it).
func (c *Checkpoint) Metadata() map[string]string {
	if len(c.files) == 0 {
		return nil
	}
	return c.files[0].Metadata()
}

// Close closes every file; safe to call more than once.
func (c *Checkpoint) Close() error {
	var first error
	for _, f := range c.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

var (
	_ Reader = (*File)(nil)
	_ Reader = (*Checkpoint)(nil)
)
