package hub

import (
	"crypto/sha1"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"testing"
)

// fakeRepo is a repository of the fake Hub: revisions (branches, tags) to commits, and each
// commit's files.
type fakeRepo struct {
	private bool
	revs    map[string]string            // branch or tag → commit
	files   map[string]map[string][]byte // commit → file → contents
	lfs     map[string]bool              // files stored with LFS (listed with a sha256)
	lie     map[string]string            // file → the wrong sha256 the listing gives
	bare    bool                         // the listing has names only (a mirror's API): hashes come from HEAD
}

// fakeHub serves the Hub's API and resolve URLs on 127.0.0.1 for the repositories it holds.
type fakeHub struct {
	*httptest.Server
	token string
	repos map[string]*fakeRepo

	mu     sync.Mutex
	cut    map[string]int // file → bytes sent before the connection drops (once)
	stall  map[string]int // file → bytes sent before the server stops sending (once)
	ranges []string       // Range headers of file requests, in order
	gets   map[string]int // file → GET requests
	apis   int            // API requests
}

func newFakeHub(t *testing.T, repos map[string]*fakeRepo) *fakeHub {
	h := &fakeHub{repos: repos, token: "hf_secret", cut: map[string]int{}, stall: map[string]int{}, gets: map[string]int{}}
	h.Server = httptest.NewServer(http.HandlerFunc(h.serve))
	t.Cleanup(h.Close)
	return h
}

// gitBlobID is git's object id of a file: sha1("blob SIZE\x00" + contents).
func gitBlobID(b []byte) string {
	s := sha1.New()
	fmt.Fprintf(s, "blob %d\x00", len(b))
	s.Write(b)
	return hex.EncodeToString(s.Sum(nil))
}

func sha256Hex(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:]) }

func (h *fakeHub) serve(w http.ResponseWriter, r *http.Request) {
	p := strings.TrimPrefix(r.URL.EscapedPath(), "/")
	if rest, ok := strings.CutPrefix(p, "cdn/"); ok { // the CDN serves LFS files by signed URL, no token
		parts := strings.SplitN(rest, "/", 4) // ORG NAME COMMIT FILE
		h.file(w, r, parts[3], h.repos[parts[0]+"/"+parts[1]].files[parts[2]])
		return
	}
	api := strings.HasPrefix(p, "api/models/")
	p = strings.TrimPrefix(p, "api/models/")
	parts := strings.SplitN(p, "/", 5) // ORG NAME revision|resolve REV FILE
	if len(parts) < 4 {
		http.NotFound(w, r)
		return
	}
	repo := h.repos[parts[0]+"/"+parts[1]]
	if repo == nil || repo.private && r.Header.Get("Authorization") != "Bearer "+h.token {
		// The Hub answers 401 for a repository it does not show to this caller.
		w.Header().Set(headerErrorCode, "RepoNotFound")
		http.Error(w, `{"error":"Repository not found"}`, http.StatusUnauthorized)
		return
	}
	rev := strings.ReplaceAll(parts[3], "%2F", "/")
	commit := rev
	if c, ok := repo.revs[rev]; ok {
		commit = c
	}
	files, ok := repo.files[commit]
	if !ok {
		w.Header().Set(headerErrorCode, "RevisionNotFound")
		http.Error(w, `{"error":"Invalid rev id"}`, http.StatusNotFound)
		return
	}
	if api {
		h.mu.Lock()
		h.apis++
		h.mu.Unlock()
		h.list(w, repo, commit, files)
		return
	}
	if len(parts) < 5 {
		http.NotFound(w, r)
		return
	}
	if repo.lfs[parts[4]] { // the Hub's headers for an LFS file (on its redirect to the CDN)
		if b, ok := files[parts[4]]; ok {
			w.Header().Set(headerLinkedEtag, `"`+sha256Hex(b)+`"`)
			w.Header().Set(headerLinkedSize, strconv.Itoa(len(b)))
		}
	} else if b, ok := files[parts[4]]; ok {
		w.Header().Set("ETag", `"`+gitBlobID(b)+`"`)
	}
	w.Header().Set(headerRepoCommit, commit)
	if repo.lfs[parts[4]] && r.Method == http.MethodGet {
		http.Redirect(w, r, fmt.Sprintf("/cdn/%s/%s/%s/%s?signature=x", parts[0], parts[1], commit, parts[4]), http.StatusFound)
		return
	}
	h.file(w, r, parts[4], files)
}

// list answers GET /api/models/ORG/NAME/revision/REV?blobs=true.
func (h *fakeHub) list(w http.ResponseWriter, repo *fakeRepo, commit string, files map[string][]byte) {
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
		e := entry{Name: name, Size: len(b), BlobID: gitBlobID(b)}
		if repo.lfs[name] {
			e.BlobID = gitBlobID([]byte("version https://git-lfs.github.com/spec/v1\n")) // the pointer's id
			e.LFS = &lfs{SHA256: sha256Hex(b), Size: len(b)}
			if wrong, ok := repo.lie[name]; ok {
				e.LFS.SHA256 = wrong
			}
		}
		if repo.bare {
			e = entry{Name: name}
		}
		out.Siblings = append(out.Siblings, e)
	}
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(out)
}

// file answers GET /ORG/NAME/resolve/COMMIT/FILE, with Range, or drops the connection part way
// for a file in cut.
func (h *fakeHub) file(w http.ResponseWriter, r *http.Request, name string, files map[string][]byte) {
	b, ok := files[name]
	if !ok {
		w.Header().Set(headerErrorCode, "EntryNotFound")
		http.Error(w, `{"error":"Entry not found"}`, http.StatusNotFound)
		return
	}
	h.mu.Lock()
	h.gets[name]++
	h.ranges = append(h.ranges, r.Header.Get("Range"))
	cut, cutNow := h.cut[name]
	delete(h.cut, name)
	stall, stallNow := h.stall[name]
	delete(h.stall, name)
	h.mu.Unlock()
	start := 0
	if rg := r.Header.Get("Range"); rg != "" {
		start, _ = strconv.Atoi(strings.TrimSuffix(strings.TrimPrefix(rg, "bytes="), "-"))
		w.Header().Set("Content-Range", fmt.Sprintf("bytes %d-%d/%d", start, len(b)-1, len(b)))
		w.Header().Set("Content-Length", strconv.Itoa(len(b)-start))
		w.WriteHeader(http.StatusPartialContent)
	} else {
		w.Header().Set("Content-Length", strconv.Itoa(len(b)))
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
	w.Write(b[start:])
}
