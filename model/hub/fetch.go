package hub

import (
	"context"
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"hash"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// Meter follows one file's download: Add as bytes arrive, Done when it ends (complete or not).
type Meter interface {
	Add(n int64)
	Done()
}

// Progress starts a Meter for a file of total bytes as its download begins. Several files
// download at once (Options.Workers), so it is called from several goroutines, and each Meter
// from one.
type Progress func(label string, total int64) Meter

// silent is the Meter of a resolution that reports nothing.
type silent struct{}

func (silent) Add(int64) {}
func (silent) Done()     {}

// hashKind is how a file's etag is computed from its contents.
type hashKind int

const (
	hashNone    hashKind = iota // an etag that is no known hash: the size alone is checked
	hashGitBlob                 // git's blob sha1: sha1("blob SIZE\x00" + contents), small files
	hashSHA256                  // sha256 of the contents, LFS files
)

// expect is what a file must be: its etag (the blob's name), how the etag is computed, its size.
type expect struct {
	etag string
	kind hashKind
	size int64
}

var (
	sha256Pattern = regexp.MustCompile(`^[0-9a-f]{64}$`)
	safeEtag      = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)
)

// newExpect reads an etag by its form: 64 hex digits are a sha256, 40 a git blob sha1.
func newExpect(etag string, size int64) (expect, error) {
	switch {
	case sha256Pattern.MatchString(etag):
		return expect{etag, hashSHA256, size}, nil
	case commitPattern.MatchString(etag):
		return expect{etag, hashGitBlob, size}, nil
	case safeEtag.MatchString(etag) && etag != "." && etag != "..":
		return expect{etag, hashNone, size}, nil
	}
	return expect{}, fmt.Errorf("the Hub gave the unusable etag %q", etag)
}

// expectOf is what the API's entry says a file is.
func expectOf(s sibling) (expect, bool) {
	if s.LFS != nil && s.LFS.SHA256 != "" {
		e, err := newExpect(s.LFS.SHA256, s.LFS.Size)
		return e, err == nil && e.kind == hashSHA256
	}
	if s.BlobID != "" {
		e, err := newExpect(s.BlobID, s.Size)
		return e, err == nil && e.kind == hashGitBlob
	}
	return expect{}, false
}

// hasher starts the hash of the file's contents.
func (e expect) hasher() hash.Hash {
	switch e.kind {
	case hashSHA256:
		return sha256.New()
	case hashGitBlob:
		h := sha1.New()
		fmt.Fprintf(h, "blob %d\x00", e.size)
		return h
	}
	return nil
}

// verify checks the size and hash of what was downloaded.
func (e expect) verify(n int64, h hash.Hash) error {
	if n != e.size {
		return fmt.Errorf("%d bytes, the Hub says %d", n, e.size)
	}
	if h == nil {
		return nil
	}
	if got := hex.EncodeToString(h.Sum(nil)); got != e.etag {
		return fmt.Errorf("hash %s, the Hub says %s", got, e.etag)
	}
	return nil
}

// fetchBlob downloads a file into blobs/ETAG: into ETAG.incomplete first, resumed from where an
// interrupted download stopped, and moved into place only once its size and hash are right.
// What the server sends beyond the size the Hub lists is never kept: the part is discarded, so
// that a bad mirror or proxy cannot fill the disk. Called with the blob's lock held.
func (c client) fetchBlob(ctx context.Context, ca cache, id ID, commit, name string, e expect, p Progress) error {
	blob := ca.blob(e.etag)
	part := blob + ".incomplete"
	f, off, h, err := openPart(part, e)
	if err != nil {
		return err
	}
	defer f.Close()
	resp, whole, err := c.getFrom(ctx, id, commit, name, off, e.size)
	if err != nil {
		if errors.Is(err, errRangeRefused) {
			f.Truncate(0)
		}
		return err
	}
	defer resp.Body.Close()
	if whole {
		off, h = 0, e.hasher()
	}
	if err := f.Truncate(off); err != nil {
		return err
	}
	if _, err := f.Seek(off, io.SeekStart); err != nil {
		return err
	}
	m := p(name, e.size)
	m.Add(off)
	defer m.Done()
	w := io.MultiWriter(f, progressWriter{m})
	if h != nil {
		w = io.MultiWriter(f, h, progressWriter{m})
	}
	rest := e.size - off
	n, err := io.Copy(w, io.LimitReader(resp.Body, rest+1))
	discard := func(why string) error {
		f.Close()
		os.Remove(part)
		return fmt.Errorf("downloading %s of %s: %s: the download is discarded (run again; if it persists, %s serves other contents than it lists)",
			name, id, why, c.env.Endpoint)
	}
	switch {
	case n > rest:
		return discard(fmt.Sprintf("%s sends more than the %d bytes the Hub lists", shown(resp.Request.URL), e.size))
	case err != nil:
		return fmt.Errorf("downloading %s: interrupted after %d of %d bytes: %w (run again to resume)", name, off+n, e.size, err)
	}
	if err := e.verify(off+n, h); err != nil {
		return discard(err.Error())
	}
	if err := f.Sync(); err != nil {
		return err
	}
	if err := f.Close(); err != nil {
		return err
	}
	return os.Rename(part, blob)
}

// openPart opens a download in progress (creating it), with the bytes it holds and their hash
// so far; a part longer than the file starts over.
func openPart(part string, e expect) (*os.File, int64, hash.Hash, error) {
	if err := os.MkdirAll(filepath.Dir(part), 0o755); err != nil {
		return nil, 0, nil, err
	}
	f, err := os.OpenFile(part, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, 0, nil, err
	}
	off, err := f.Seek(0, io.SeekEnd)
	if err == nil && off > e.size {
		off = 0
	}
	var h hash.Hash
	if err == nil {
		h, err = resumeHash(f, off, e)
	}
	if err != nil {
		f.Close()
		return nil, 0, nil, err
	}
	return f, off, h, nil
}

// errRangeRefused is a server's 416 to a resumed download: the part is dropped.
var errRangeRefused = errors.New("the server refused to resume")

// getFrom requests a file from byte off on; whole reports that the server sent all of it
// instead (the download starts over).
// size is the file's: the download's deadline expects its rest.
func (c client) getFrom(ctx context.Context, id ID, commit, name string, off, size int64) (resp *http.Response, whole bool, err error) {
	header := http.Header{"Accept-Encoding": {"identity"}}
	if off > 0 {
		header.Set("Range", fmt.Sprintf("bytes=%d-", off))
	}
	resp, err = c.do(ctx, c.http, http.MethodGet, c.fileURL(id, commit, name), header, boundDownload, size-off)
	if err != nil {
		return nil, false, fmt.Errorf("downloading %s: %w (run again to resume)", name, &unreachableError{err})
	}
	switch resp.StatusCode {
	case http.StatusPartialContent:
		if cr := resp.Header.Get("Content-Range"); off > 0 && strings.HasPrefix(cr, fmt.Sprintf("bytes %d-", off)) {
			return resp, false, nil
		}
		err = fmt.Errorf("downloading %s: asked for bytes %d on, the server sent %q", name, off, resp.Header.Get("Content-Range"))
	case http.StatusOK:
		return resp, true, nil
	case http.StatusRequestedRangeNotSatisfiable:
		err = fmt.Errorf("downloading %s: %w (%s): run again to start over", name, errRangeRefused, resp.Status)
	default:
		err = c.statusError(id, name, resp)
	}
	resp.Body.Close()
	return nil, false, err
}

// resumeHash hashes the first off bytes already in f.
func resumeHash(f *os.File, off int64, e expect) (hash.Hash, error) {
	h := e.hasher()
	if h == nil || off == 0 {
		return h, nil
	}
	if _, err := f.Seek(0, io.SeekStart); err != nil {
		return nil, err
	}
	if _, err := io.CopyN(h, f, off); err != nil {
		return nil, fmt.Errorf("reading the partial download %s: %w", f.Name(), err)
	}
	return h, nil
}

// progressWriter counts written bytes into a Meter.
type progressWriter struct{ m Meter }

func (w progressWriter) Write(b []byte) (int, error) { w.m.Add(int64(len(b))); return len(b), nil }

// isUnreachable reports whether err is a request that got no answer.
func isUnreachable(err error) bool { return errors.As(err, new(*unreachableError)) }
