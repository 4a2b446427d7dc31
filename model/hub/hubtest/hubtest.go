// Package hubtest serves a fake Hugging Face Hub on 127.0.0.1 for tests: the API's revision
// listing with hashes, resolve URLs with Range, LFS files through a CDN redirect, private
// repositories, and downloads that drop or stall part way.
package hubtest

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// Repo is a repository of the fake Hub: revisions (branches, tags) to commits, and each
// commit's files.
type Repo struct {
	Private bool
	Revs    map[string]string            // branch or tag → commit
	Files   map[string]map[string][]byte // commit → file → contents
	LFS     map[string]bool              // files stored with LFS (listed with a sha256)
	Lie     map[string]string            // file → the wrong sha256 the listing gives
	Bare    bool                         // the listing has names only (a mirror's API): hashes come from HEAD
}

// Hub serves the Hub's API and resolve URLs on 127.0.0.1 for the repositories it holds.
type Hub struct {
	*httptest.Server
	Token string
	Repos map[string]*Repo

	mu     sync.Mutex
	Cut    map[string]int // file → bytes sent before the connection drops (once)
	Stall  map[string]int // file → bytes sent before the server stops sending (once)
	Ranges []string       // Range headers of file requests, in order
	Gets   map[string]int // file → GET requests
	// Moved answers every request for a renamed repository (old ORG/NAME → new) with a
	// redirect to the same path under the new name, relative as the Hub's are.
	Moved map[string]string
	APIs  int // API requests
	// Hold is how long a file's answer waits before its body (0: none), so that downloads
	// overlap when the client runs them side by side; MostAtOnce is the largest number of
	// file answers that were under way at the same time.
	Hold       time.Duration
	MostAtOnce int
	atOnce     int
	// Hostile behaviours. Extra: file → bytes sent after its contents, beyond the size the
	// listing gives (a bad mirror or proxy). Trickle: file ("" for the API's listing) → the
	// pause after each byte of its body. Message: the text of every error answer, in its JSON
	// body, in place of the Hub's own.
	Extra   map[string]int
	Trickle map[string]time.Duration
	Message string
}

// New serves repos (by ORG/NAME) until the test ends; private ones need the token Token.
func New(t testing.TB, repos map[string]*Repo) *Hub {
	h := &Hub{Repos: repos, Token: "hf_secret", Cut: map[string]int{}, Stall: map[string]int{}, Gets: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

// GitBlobID is git's object id of a file: sha1("blob SIZE\x00" + contents).
func GitBlobID(b []byte) string {
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(b))
	s.Write(b)
	return hex.EncodeToString(s.Sum(nil))
}

// SHA256 is the hex sha256 of b: an LFS file's etag.
func SHA256(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func (h *Hub) serve(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	if rest, ok := strings.CutPrefix(p, "cdn/"); ok { // the CDN serves LFS files by signed URL, no token
		parts := strings.SplitN(rest, "/", 4) // ORG NAME COMMIT FILE
		h.file(w, r, parts[3], h.Repos[parts[0]+"/"+parts[1]].Files[parts[2]])
		return
	}
	api := strings.HasPrefix(p, "api/models/")
	p = strings.TrimPrefix(p, "api/models/")
	parts := strings.SplitN(p, "/", 5) // ORG NAME revision|resolve REV FILE
	if len(parts) < 4 {
		http.NotFound(w, r)
		return
	}
	if to, ok := h.Moved[parts[0]+"/"+parts[1]]; ok {
		w.Header().Set("Location", strings.Replace(r.URL.RequestURI(), "/"+parts[0]+"/"+parts[1]+"/", "/"+to+"/", 1))
		w.WriteHeader(http.StatusTemporaryRedirect)
		return
	}
	repo := h.Repos[parts[0]+"/"+parts[1]]
	if repo == nil || repo.Private && r.Header.Get("Authorization") != "Bearer "+h.Token {
		// The Hub answers 401 for a repository it does not show to this caller.
		h.refuse(w, "RepoNotFound", "Repository not found", http.StatusUnauthorized)
		return
	}
	rev := strings.ReplaceAll(parts[3], "%2F", "/")
	commit := rev
	if c, ok := repo.Revs[rev]; ok {
		commit = c
	}
	files, ok := repo.Files[commit]
	if !ok {
		h.refuse(w, "RevisionNotFound", "Invalid rev id", http.StatusNotFound)
		return
	}
	if api {
		h.mu.Lock()
		h.APIs++
		h.mu.Unlock()
		h.list(w, r, repo, commit, files)
		return
	}
	if len(parts) < 5 {
		http.NotFound(w, r)
		return
	}
	if repo.LFS[parts[4]] { // the Hub's headers for an LFS file (on its redirect to the CDN)
		if b, ok := files[parts[4]]; ok {
			w.Header().Set("X-Linked-Etag", `"`+SHA256(b)+`"`)
			w.Header().Set("X-Linked-Size", strconv.Itoa(len(b)))
		}
	} else if b, ok := files[parts[4]]; ok {
		w.Header().Set("ETag", `"`+GitBlobID(b)+`"`)
	}
	w.Header().Set("X-Repo-Commit", commit)
	if repo.LFS[parts[4]] && r.Method == http.MethodGet {
		http.Redirect(w, r, fmt.Sprintf("/cdn/%s/%s/%s/%s?signature=x", parts[0], parts[1], commit, parts[4]), http.StatusFound)
		return
	}
	h.file(w, r, parts[4], files)
}

// list answers GET /api/models/ORG/NAME/revision/REV?blobs=true.
func (h *Hub) list(w http.ResponseWriter, r *http.Request, repo *Repo, commit string, files map[string][]byte) {
	type lfs struct {
		SHA256 string `json:"sha256"`
		Size   int    `json:"size"`
	}
	type entry struct {
		Name   string `json:"rfilename"`
		Size   int    `json:"size"`
		BlobID string `json:"blobId"`
		LFS    *lfs   `json:"lfs,omitempty"`
	}
	var out struct {
		ID       string  `json:"id"`
		SHA      string  `json:"sha"`
		Siblings []entry `json:"siblings"`
	}
	out.SHA = commit
	for name, b := range files {
		e := entry{Name: name, Size: len(b), BlobID: GitBlobID(b)}
		if repo.LFS[name] {
			e.BlobID = GitBlobID([]byte("version https://git-lfs.github.com/spec/v1\n")) // the pointer's id
			e.LFS = &lfs{SHA256: SHA256(b), Size: len(b)}
			if wrong, ok := repo.Lie[name]; ok {
				e.LFS.SHA256 = wrong
			}
		}
		if repo.Bare {
			e = entry{Name: name}
		}
		out.Siblings = append(out.Siblings, e)
	}
	w.Header().Set("Content-Type", "application/json")
	b, _ := json.Marshal(out)
	h.send(w, r, "", b)
}

// refuse answers an error as the Hub does: its code in X-Error-Code, its text in a JSON body.
func (h *Hub) refuse(w http.ResponseWriter, code, msg string, status int) {
	if h.Message != "" {
		msg = h.Message // in the body: Go's client refuses a header with control characters
	}
	w.Header().Set("X-Error-Code", code)
	b, _ := json.Marshal(map[string]string{"error": msg})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}

// send writes the body of file ("" for the listing), a byte at a time when it trickles (until
// the client gives up).
func (h *Hub) send(w http.ResponseWriter, r *http.Request, file string, b []byte) {
	h.mu.Lock()
	pause := h.Trickle[file]
	h.mu.Unlock()
	if pause == 0 {
		w.Write(b)
		return
	}
	w.(http.Flusher).Flush()
	for i := range b {
		w.Write(b[i : i+1])
		w.(http.Flusher).Flush()
		select {
		case <-time.After(pause):
		case <-r.Context().Done():
			return
		}
	}
}

// file answers GET /ORG/NAME/resolve/COMMIT/FILE, with Range, or drops the connection part way
// for a file in cut.
func (h *Hub) file(w http.ResponseWriter, r *http.Request, name string, files map[string][]byte) {
	b, ok := files[name]
	if !ok {
		h.refuse(w, "EntryNotFound", "Entry not found", http.StatusNotFound)
		return
	}
	h.mu.Lock()
	h.Gets[name]++
	h.Ranges = append(h.Ranges, r.Header.Get("Range"))
	cut, cutNow := h.Cut[name]
	delete(h.Cut, name)
	stall, stallNow := h.Stall[name]
	delete(h.Stall, name)
	h.atOnce++
	h.MostAtOnce = max(h.MostAtOnce, h.atOnce)
	hold := h.Hold
	h.mu.Unlock()
	defer func() {
		h.mu.Lock()
		h.atOnce--
		h.mu.Unlock()
	}()
	select {
	case <-time.After(hold):
	case <-r.Context().Done():
		return
	}
	h.mu.Lock()
	extra := h.Extra[name] // a body longer than listed goes without a Content-Length
	h.mu.Unlock()
	start := 0
	if rg := r.Header.Get("Range"); rg != "" {
		start, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(b)-1, len(b)))
		if extra == 0 {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)-start))
		}
		w.WriteHeader(http.StatusPartialContent)
	} else {
		if extra == 0 {
			w.Header().Set("Content-Length", strconv.Itoa(len(b)))
		}
		w.WriteHeader(http.StatusOK)
	}
	if stallNow {
		w.Write(b[start:stall])
		w.(http.Flusher).Flush()
		<-r.Context().Done() // sends nothing more until the client gives up
		return
	}
	if cutNow {
		w.Write(b[start:cut])
		w.(http.Flusher).Flush()
		panic(http.ErrAbortHandler) // the connection drops mid-body
	}
	body := b[start:]
	if extra > 0 {
		body = append(append([]byte(nil), body...), strings.Repeat("X", extra)...)
	}
	h.send(w, r, name, body)
}

// DirRepo is a repository whose branch main, at commit, holds the files of the model directory
// dir (its safetensors files stored with LFS, as on the Hub).
func DirRepo(dir, commit string) (*Repo, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	r := &Repo{Revs: map[string]string{"main": commit}, Files: map[string]map[string][]byte{commit: {}}, LFS: map[string]bool{}}
	for _, e := range ents {
		if !e.Type().IsRegular() {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			return nil, err
		}
		r.Files[commit][e.Name()] = b
		r.LFS[e.Name()] = strings.HasSuffix(e.Name(), ".safetensors")
	}
	return r, nil
}
