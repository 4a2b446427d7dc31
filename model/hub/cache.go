package hub

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"syscall"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// cache is one repository's part of the Hugging Face cache (the layout is in doc.go).
type cache struct {
	root string
	id   ID
}

func (c cache) repo() string                  { return filepath.Join(c.root, c.id.folder()) }
func (c cache) snapshot(commit string) string { return filepath.Join(c.repo(), "snapshots", commit) }
func (c cache) blob(etag string) string       { return filepath.Join(c.repo(), "blobs", etag) }
func (c cache) ref(rev string) string {
	return filepath.Join(c.repo(), "refs", filepath.FromSlash(rev))
}

// cachedCommit is the commit the revision stands for in the cache: the revision itself when it
// is a commit with a snapshot, else what refs/REVISION says.
func (c cache) cachedCommit() (string, bool) {
	if c.id.isCommit() {
		_, err := os.Stat(c.snapshot(c.id.Revision))
		return c.id.Revision, err == nil
	}
	b, err := bounded.ReadFile(c.ref(c.id.Revision), 1<<10)
	if err != nil {
		return "", false
	}
	commit := strings.TrimSpace(string(b))
	return commit, checkCommit(commit) == nil
}

// cached is the snapshot directory of the revision when the cache holds a loadable model there
// (configOnly: its config.json).
func (c cache) cached(configOnly bool) (string, bool) {
	commit, ok := c.cachedCommit()
	if !ok {
		return "", false
	}
	dir := c.snapshot(commit)
	if configOnly {
		_, err := os.Stat(filepath.Join(dir, "config.json"))
		return dir, err == nil
	}
	return dir, complete(dir)
}

// complete reports whether dir holds what the loader needs: config.json and the weights (the
// index and every shard it names, or model.safetensors).
func complete(dir string) bool {
	if _, err := os.Stat(filepath.Join(dir, "config.json")); err != nil {
		return false
	}
	ix, err := safetensors.ReadIndex(filepath.Join(dir, safetensors.IndexName))
	if errors.Is(err, fs.ErrNotExist) {
		_, err := os.Stat(filepath.Join(dir, safetensors.SingleName))
		return err == nil
	}
	if err != nil {
		return false
	}
	for _, s := range ix.Shards() {
		if _, err := os.Stat(filepath.Join(dir, s)); err != nil {
			return false
		}
	}
	return true
}

// writeRef records the commit a branch or tag resolved to.
func (c cache) writeRef(rev, commit string) error {
	p := c.ref(rev)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	tmp := tempName(p)
	if err := os.WriteFile(tmp, []byte(commit), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// link makes snapshots/COMMIT/NAME a relative link to blobs/ETAG, replacing what is there.
func (c cache) link(commit, name, etag string) error {
	p := filepath.Join(c.snapshot(commit), filepath.FromSlash(name))
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		return err
	}
	target, err := filepath.Rel(filepath.Dir(p), c.blob(etag))
	if err != nil {
		return err
	}
	tmp := tempName(p)
	if err := os.Symlink(target, tmp); err != nil {
		return err
	}
	return os.Rename(tmp, p)
}

// tempSeq makes the temporary names of one process distinct.
var tempSeq atomic.Int64

// tempName is a name beside p for a file that is renamed onto p once written: distinct across
// processes (ranks resolving together) and goroutines.
func tempName(p string) string {
	return fmt.Sprintf("%s.tmp-%d-%d", p, os.Getpid(), tempSeq.Add(1))
}

// lock takes the cache's lock on one blob, as huggingface_hub does, so that processes
// downloading the same model (ranks started together) fetch each file once.
func (c cache) lock(etag string) (unlock func(), err error) {
	dir := filepath.Join(c.root, ".locks", c.id.folder())
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(filepath.Join(dir, etag+".lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, err
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, err
	}
	return func() { syscall.Flock(int(f.Fd()), syscall.LOCK_UN); f.Close() }, nil
}
