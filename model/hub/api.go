package hub

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/internal/untrusted"
)

// Response headers of the Hub (huggingface_hub's file_download.py reads the same).
const (
	headerRepoCommit = "X-Repo-Commit" // the commit a resolve URL was served from
	headerLinkedEtag = "X-Linked-Etag" // an LFS file's sha256, on the redirect to the CDN
	headerLinkedSize = "X-Linked-Size" // an LFS file's size, on the same redirect
	headerErrorCode  = "X-Error-Code"  // RepoNotFound, RevisionNotFound, EntryNotFound, GatedRepo
	headerErrorMsg   = "X-Error-Message"
)

// repoInfo is the API's answer for a revision (GET /api/models/ORG/NAME/revision/REV?blobs=true).
type repoInfo struct {
	SHA      string    `json:"sha"`
	Siblings []sibling `json:"siblings"`
}

// sibling is one file of the revision with what the Hub knows of it.
type sibling struct {
	Name   string `json:"rfilename"`
	Size   int64  `json:"size"`
	BlobID string `json:"blobId"` // the git blob sha1
	LFS    *struct {
		SHA256 string `json:"sha256"`
		Size   int64  `json:"size"`
	} `json:"lfs"`
}

// client talks to the Hub.
type client struct {
	env  Env
	http *http.Client
}

// info asks the API for the revision's commit and files.
func (c client) info(ctx context.Context, id ID) (repoInfo, error) {
	u := fmt.Sprintf("%s/api/models/%s/revision/%s?blobs=true", c.env.Endpoint, id.Repo, url.PathEscape(id.Revision))
	resp, err := c.do(ctx, c.http, http.MethodGet, u, nil, boundAnswer, 0)
	if err != nil {
		return repoInfo{}, &unreachableError{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return repoInfo{}, c.statusError(id, "", resp)
	}
	var info repoInfo
	if err := json.NewDecoder(io.LimitReader(resp.Body, maxListing)).Decode(&info); err != nil {
		if d := new(deadlineError); errors.As(err, &d) {
			return repoInfo{}, &unreachableError{d}
		}
		return repoInfo{}, fmt.Errorf("%s: the Hub's file list: %s", u, untrusted.Text(err.Error()))
	}
	return info, checkCommit(info.SHA)
}

// maxListing bounds the API's file list.
const maxListing = 64 << 20

// fileURL is where a file of a commit is downloaded from.
func (c client) fileURL(id ID, commit, name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = url.PathEscape(p)
	}
	return fmt.Sprintf("%s/%s/resolve/%s/%s", c.env.Endpoint, id.Repo, commit, strings.Join(parts, "/"))
}

// head reads a file's hash and size from the resolve URL's headers without following the
// redirect of an LFS file (whose X-Linked-* headers are on the redirect), for a Hub whose API
// gave no hashes. Relative redirects (a renamed repository) are followed, as huggingface_hub
// does; one to another host (the CDN) is where the headers are read.
func (c client) head(ctx context.Context, id ID, commit, name string) (expect, error) {
	hc := *c.http
	hc.CheckRedirect = func(req *http.Request, via []*http.Request) error {
		if len(via) >= maxRelativeRedirects || req.URL.Host != via[0].URL.Host {
			return http.ErrUseLastResponse
		}
		return nil
	}
	resp, err := c.do(ctx, &hc, http.MethodHead, c.fileURL(id, commit, name), http.Header{"Accept-Encoding": {"identity"}}, boundAnswer, 0)
	if err != nil {
		return expect{}, &unreachableError{err}
	}
	defer resp.Body.Close()
	if resp.StatusCode >= 400 {
		return expect{}, c.statusError(id, name, resp)
	}
	etag := resp.Header.Get(headerLinkedEtag)
	if etag == "" {
		etag = resp.Header.Get("ETag")
	}
	size := resp.Header.Get(headerLinkedSize)
	if size == "" {
		size = resp.Header.Get("Content-Length")
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil || n < 0 {
		return expect{}, fmt.Errorf("HEAD %s: no size for %s (X-Linked-Size or Content-Length %q): a download must know how long it is",
			shown(resp.Request.URL), name, untrusted.Text(size))
	}
	return newExpect(normalizeEtag(etag), n)
}

// maxRedirects bounds the redirects any request follows (net/http's own bound).
const maxRedirects = 10

// redirectError is a request redirected more than maxRedirects times: a loop in the server that
// HF_ENDPOINT names, or in a proxy before it.
type redirectError struct{ from, to string }

func (e *redirectError) Error() string {
	return fmt.Sprintf("%s is redirected more than %d times (the last time to %s): a redirect loop in the server HF_ENDPOINT names or a proxy before it",
		untrusted.Text(e.from), maxRedirects, untrusted.Text(e.to))
}

// checkRedirect is the requests' redirect policy: net/http's, its error naming the URLs.
func checkRedirect(req *http.Request, via []*http.Request) error {
	if len(via) >= maxRedirects {
		return &redirectError{from: shown(via[0].URL), to: shown(req.URL)}
	}
	return nil
}

// maxRelativeRedirects bounds the redirects head follows within the Hub.
const maxRelativeRedirects = 5

// normalizeEtag strips the weak marker and the quotes of an ETag header.
func normalizeEtag(s string) string {
	return strings.Trim(strings.TrimPrefix(strings.TrimSpace(s), "W/"), `"`)
}

// ErrNoModel is wrapped by every error that says the name given leads to no model (no such
// directory, no such repository, revision or file on the Hub, no access without a token, not
// cached while offline): a mistake in what was asked, not a failure of the work.
var ErrNoModel = errors.New("no model")

// noModelError is an error that is ErrNoModel, with its own message.
type noModelError struct{ msg string }

func (e *noModelError) Error() string        { return e.msg }
func (e *noModelError) Is(target error) bool { return target == ErrNoModel }

func noModel(format string, a ...any) error { return &noModelError{fmt.Sprintf(format, a...)} }

// unreachableError is a request that got no answer from the Hub.
type unreachableError struct{ err error }

func (e *unreachableError) Error() string {
	if r := new(redirectError); errors.As(e.err, &r) {
		return "the Hub gives no answer: " + r.Error()
	}
	return "the Hub cannot be reached (" + untrusted.Text(e.err.Error()) + "): check the network or set HF_ENDPOINT to a mirror; " +
		"a model downloaded before is found with HF_HUB_OFFLINE=1"
}
func (e *unreachableError) Unwrap() error { return e.err }

// statusError explains a refusal of the Hub; name is the file ("" for the repository).
func (c client) statusError(id ID, name string, resp *http.Response) error {
	code := resp.Header.Get(headerErrorCode)
	msg := resp.Header.Get(headerErrorMsg)
	if msg == "" {
		var body struct {
			Error string `json:"error"`
		}
		if json.NewDecoder(io.LimitReader(resp.Body, 1<<16)).Decode(&body) == nil {
			msg = body.Error
		}
	}
	// What the server wrote is shown as it is, escapes and all, but never acts on the terminal.
	code, msg, status := untrusted.Text(code), untrusted.Text(msg), untrusted.Text(resp.Status)
	what := fmt.Sprintf("%s on %s", id, c.env.Endpoint)
	if name != "" {
		what = fmt.Sprintf("%s of %s", name, what)
	}
	detail := status
	if code != "" {
		detail += ", " + code
	}
	if msg != "" {
		detail += ": " + msg
	}
	switch {
	case (resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden) && c.env.Token == "":
		return noModel("%s: not found, or private or gated (%s): set HF_TOKEN to a token that can read it (https://huggingface.co/settings/tokens), or check the name", what, detail)
	case resp.StatusCode == http.StatusUnauthorized || resp.StatusCode == http.StatusForbidden:
		return noModel("%s: the token in HF_TOKEN cannot read it (%s): accept the model's terms on its page or use another token", what, detail)
	case resp.StatusCode == http.StatusNotFound && code == "RevisionNotFound":
		return noModel("%s: no such revision (%s): give a branch, a tag or a commit after @", what, detail)
	case resp.StatusCode == http.StatusNotFound:
		return noModel("%s: not found (%s): check the name", what, detail)
	}
	return fmt.Errorf("%s: %s", what, detail)
}
