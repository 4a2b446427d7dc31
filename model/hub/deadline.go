package hub

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"sync"
	"sync/atomic"
	"time"
)

// Every request to the Hub runs under a deadline, so that a server that answers slowly, a byte
// at a time, or not at all is an error naming the URL, never a command that hangs:
//
//   - a metadata request (the API's file list, a HEAD, the body of an error) must be answered in
//     full within Env.EtagTimeout;
//   - a file download must get its headers within Env.DownloadTimeout, and then receive at least
//     stallBytes (or the rest of the file) in every DownloadTimeout after: less is a stall (as
//     curl's --speed-limit/--speed-time), and the part downloaded is kept for the next run.

// Defaults of the deadlines (huggingface_hub reads the same variables, as timeouts between two
// reads of 10 s; here they bound the whole answer and the rate, so the defaults are longer).
const (
	DefaultEtagTimeout     = 30 * time.Second
	DefaultDownloadTimeout = time.Minute
)

// stallBytes is the least a download must receive in each DownloadTimeout window.
const stallBytes = 64 << 10

// bound is how a request is bounded in time.
type bound int

const (
	boundAnswer   bound = iota // the whole answer within EtagTimeout
	boundDownload              // headers within DownloadTimeout, then stallBytes per DownloadTimeout
)

// deadlineError is a request that the Hub did not answer in time.
type deadlineError struct {
	method, url string
	what        string
}

func (e *deadlineError) Error() string { return fmt.Sprintf("%s %s: %s", e.method, e.url, e.what) }

// shown is u as errors name it: without its query, which for a CDN holds a signature.
func shown(u *url.URL) string {
	v := *u
	v.RawQuery, v.Fragment, v.User = "", "", nil
	return v.String()
}

// do sends a request under its deadline (the caller's hc: head's does not follow every
// redirect). want is how many bytes the body should hold (downloads: the rest of the file).
func (c client) do(ctx context.Context, hc *http.Client, method, u string, header http.Header, b bound, want int64) (*http.Response, error) {
	ctx, cancel := context.WithCancelCause(ctx)
	req, err := http.NewRequestWithContext(ctx, method, u, nil)
	if err != nil {
		cancel(nil)
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	req.Header.Set("User-Agent", "mtgrpo")
	if c.env.Token != "" {
		req.Header.Set("Authorization", "Bearer "+c.env.Token)
	}
	w := &watch{cancel: cancel, method: method, url: shown(req.URL), want: want}
	limit, what := c.env.etagTimeout(), fmt.Sprintf("no complete answer within %v (HF_HUB_ETAG_TIMEOUT)", c.env.etagTimeout())
	if b == boundDownload {
		limit, what = c.env.downloadTimeout(), fmt.Sprintf("no answer within %v (HF_HUB_DOWNLOAD_TIMEOUT)", c.env.downloadTimeout())
	}
	w.arm(limit, func() { w.expire(what) })
	resp, err := hc.Do(req)
	if err != nil {
		w.stop()
		if d := w.expired(ctx); d != nil {
			return nil, d
		}
		return nil, err
	}
	w.url = shown(resp.Request.URL) // where the body comes from, after redirects
	if b == boundDownload {
		w.arm(limit, func() { w.window(limit) })
	}
	resp.Body = &watchedBody{ReadCloser: resp.Body, w: w, ctx: ctx}
	return resp, nil
}

// watch is the timer of one request.
type watch struct {
	cancel      context.CancelCauseFunc
	method, url string
	want        int64        // bytes the body should hold (a download's rest)
	got         atomic.Int64 // bytes received
	mark        int64        // got at the start of the window (the timer's goroutine alone)
	mu          sync.Mutex
	timer       *time.Timer
	stopped     bool
}

// arm (re)starts the timer.
func (w *watch) arm(d time.Duration, f func()) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.timer != nil {
		w.timer.Stop()
	}
	if !w.stopped {
		w.timer = time.AfterFunc(d, f)
	}
}

// stop ends the watch: the request is done.
func (w *watch) stop() {
	w.mu.Lock()
	w.stopped = true
	if w.timer != nil {
		w.timer.Stop()
	}
	w.mu.Unlock()
	w.cancel(nil)
}

// expire cancels the request with a deadlineError.
func (w *watch) expire(what string) {
	w.cancel(&deadlineError{method: w.method, url: w.url, what: what})
}

// window ends one DownloadTimeout window of a download: enough arrived, or it stalls.
func (w *watch) window(d time.Duration) {
	got := w.got.Load()
	need := max(1, min(stallBytes, w.want-w.mark))
	if got-w.mark < need {
		w.expire(fmt.Sprintf("the download stalls: %d bytes in %v, fewer than %d (HF_HUB_DOWNLOAD_TIMEOUT)", got-w.mark, d, need))
		return
	}
	w.mark = got
	w.arm(d, func() { w.window(d) })
}

// expired is the deadlineError that cancelled ctx, or nil.
func (w *watch) expired(ctx context.Context) error {
	var d *deadlineError
	if errors.As(context.Cause(ctx), &d) {
		return d
	}
	return nil
}

// watchedBody counts what arrives and reports a deadline as the cause of a failed read.
type watchedBody struct {
	io.ReadCloser
	w   *watch
	ctx context.Context
}

func (b *watchedBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.w.got.Add(int64(n))
	if err != nil && err != io.EOF {
		if d := b.w.expired(b.ctx); d != nil {
			err = d
		}
	}
	return n, err
}

func (b *watchedBody) Close() error {
	b.w.stop()
	return b.ReadCloser.Close()
}
