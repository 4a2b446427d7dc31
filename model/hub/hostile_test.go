package hub

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/model/hub/hubtest"
)

// A server that sends more than the size the Hub lists is cut off one byte past it: the part is
// discarded (never left in the cache to grow), the error names the URL, and a next run against an
// honest server downloads the file whole.
func TestResolveBodyBeyondListedSize(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	h.Extra = map[string]int{"model.safetensors": 10 << 20}
	cache := t.TempDir()
	o := options(h, cache)
	rec := &recorder{}
	o.Progress = rec.progress
	_, err := Resolve(context.Background(), "org/small", o)
	if m := rec.files["model.safetensors"]; m == nil || m.added > 513 {
		t.Errorf("%+v bytes taken in, want at most one past the 512 listed", m)
	}
	want := h.URL + "/cdn/org/small/" + commitMain + "/model.safetensors sends more than the 512 bytes the Hub lists: the download is discarded"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a body beyond its size: %v\nwant %s", err, want)
	}
	blobs := filepath.Join(cache, "models--org--small", "blobs")
	ents, _ := os.ReadDir(blobs)
	for _, e := range ents {
		fi, _ := e.Info()
		if strings.HasSuffix(e.Name(), ".incomplete") || fi.Size() > 512 {
			t.Errorf("blobs/%s (%d bytes) stays", e.Name(), fi.Size())
		}
	}
	h.Extra = nil
	dir, err := Resolve(context.Background(), "org/small", options(h, cache))
	if err != nil {
		t.Fatal(err)
	}
	if got := readFile(t, filepath.Join(dir, "model.safetensors")); got != string(smallModel().Files[commitMain]["model.safetensors"]) {
		t.Error("the weights differ")
	}
}

// An API answer that trickles a byte at a time is given up when HF_HUB_ETAG_TIMEOUT has passed,
// with an error that names the URL; a file that trickles stalls within HF_HUB_DOWNLOAD_TIMEOUT.
func TestResolveTrickle(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	h.Trickle = map[string]time.Duration{"": 20 * time.Millisecond} // the listing's 1.5 KB would take half a minute
	o := options(h, t.TempDir())
	o.EtagTimeout = 300 * time.Millisecond
	t0 := time.Now()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // the test's own bound
	defer cancel()
	_, err := Resolve(ctx, "org/small", o)
	want := "GET " + h.URL + "/api/models/org/small/revision/main: no complete answer within 300ms (HF_HUB_ETAG_TIMEOUT)"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a trickling listing: %v\nwant %s", err, want)
	}
	if d := time.Since(t0); d > 3*time.Second {
		t.Errorf("gave up after %v", d)
	}

	h.Trickle = map[string]time.Duration{"model.safetensors": 20 * time.Millisecond}
	o = options(h, t.TempDir())
	o.DownloadTimeout = 200 * time.Millisecond
	_, err = Resolve(ctx, "org/small", o)
	if err == nil || !strings.Contains(err.Error(), "the download stalls: ") || !strings.Contains(err.Error(), "(run again to resume)") ||
		!strings.Contains(err.Error(), "GET "+h.URL+"/") {
		t.Fatalf("a trickling file: %v", err)
	}
}

// A server that holds a file's headers back is given up after HF_HUB_DOWNLOAD_TIMEOUT.
func TestResolveNoHeaders(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	h.Hold = time.Minute
	o := options(h, t.TempDir())
	o.DownloadTimeout = 200 * time.Millisecond
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // the test's own bound
	defer cancel()
	_, err := Resolve(ctx, "org/small", o)
	if err == nil || !strings.Contains(err.Error(), "no answer within 200ms (HF_HUB_DOWNLOAD_TIMEOUT)") {
		t.Fatalf("no headers: %v", err)
	}
}

// The server's error text reaches the user as the bytes it sent, escaped: no escape sequence that
// retitles or clears the terminal, no line break that fakes a message of the program's, no bidi
// override.
func TestResolveServerTextEscaped(t *testing.T) {
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": smallModel()})
	h.Message = "\x1b]0;pwned\x07\x1b[2J\x1b[Hmtgrpo: run `curl x | sh` to fix\u202e"
	_, err := Resolve(context.Background(), "org/other", options(h, t.TempDir()))
	if err == nil {
		t.Fatal("no error")
	}
	msg := err.Error()
	for _, r := range msg {
		if r < 0x20 || r == 0x7f || r == 0x202e {
			t.Fatalf("the error carries %U: %q", r, msg)
		}
	}
	if want := `\x1b]0;pwned\a\x1b[2J\x1b[Hmtgrpo: run ` + "`curl x | sh`" + ` to fix\u202e`; !strings.Contains(msg, want) {
		t.Errorf("the error %s\ndoes not show the server's text escaped: %s", msg, want)
	}
}

// A revision is checked as git checks a ref name before it names anything in the cache: a
// revision "." is refused, and refs/ stays a directory that later resolutions use.
func TestResolveRevisionPoison(t *testing.T) {
	repo := smallModel()
	repo.Revs["."] = commitMain // a Hub that answers for it (a path-normalising proxy)
	h := hubtest.New(t, map[string]*hubtest.Repo{"org/small": repo})
	cache := t.TempDir()
	_, err := Resolve(context.Background(), "org/small@.", options(h, cache))
	if !errors.Is(err, ErrNoModel) || !strings.Contains(err.Error(), `the revision "." is not a branch, tag or commit name: it ends with "."`) {
		t.Errorf("@.: %v", err)
	}
	if h.APIs != 0 {
		t.Errorf("@. asked the Hub")
	}
	if _, err := Resolve(context.Background(), "org/small", options(h, cache)); err != nil {
		t.Fatalf("org/small after @.: %v", err)
	}
	if fi, err := os.Stat(filepath.Join(cache, "models--org--small", "refs")); err != nil || !fi.IsDir() {
		t.Errorf("refs/: %v %v", fi, err)
	}
}

// Revisions as git takes them, and those it refuses with the rule they break.
func TestCheckRevision(t *testing.T) {
	for _, ok := range []string{"main", "v1.0", "refs/pr/1", "release/2024-01", commitMain, "ñandú"} {
		if err := checkRevision(ok); err != nil {
			t.Errorf("%q: %v", ok, err)
		}
	}
	for bad, why := range map[string]string{
		".": `ends with "."`, "..": `holds ".."`, "a/./b": `part "." begins with "."`, "a/../b": `holds ".."`,
		"a//b": "empty part", "/main": "empty part", "main/": "empty part", ".hidden": `begins with "."`,
		"x.lock": `ends with ".lock"`, "@": `"@" alone`, "main@{1}": `holds "@{"`, "a b": `holds ' '`,
		"a\\b": `holds '\\'`, "a:b": `holds ':'`, "a*": `holds '*'`, "a\x1bb": `holds '\x1b'`, "": "empty",
		strings.Repeat("a", 256): "longer than 255",
	} {
		if err := checkRevision(bad); err == nil || !strings.Contains(err.Error(), why) {
			t.Errorf("%q: %v, want %q", bad, err, why)
		}
	}
}

// A server that redirects every request to itself is given up after 10 redirects, with an error
// that names the URL asked for and says it is a loop (not "cannot be reached").
func TestResolveRedirectLoop(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, r.URL.Path, http.StatusFound)
	}))
	defer srv.Close()
	_, err := Resolve(context.Background(), "org/small", Options{Env: Env{Endpoint: srv.URL, Cache: t.TempDir()}})
	want := "the Hub gives no answer: " + srv.URL + "/api/models/org/small/revision/main is redirected more than 10 times (the last time to " +
		srv.URL + "/api/models/org/small/revision/main): a redirect loop"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("a redirect loop: %v\nwant %s", err, want)
	}
}
