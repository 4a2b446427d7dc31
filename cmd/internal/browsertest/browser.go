// Package browsertest opens pages in headless Chromium (Debian's chromium package, which
// scripts/setup.sh installs) for tests: the report page must render without console errors, and
// a screenshot is kept to look at.
package browsertest

import (
	"bytes"
	"image"
	"image/png"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Find returns Chromium's path. Without it the test fails, except under -short, where it skips.
func Find(t testing.TB) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if testing.Short() {
		t.Skip("no Chromium: the page is checked in a browser by the full suite")
	}
	t.Fatal("no Chromium on PATH: apt-get install chromium (scripts/setup.sh does)")
	return ""
}

// Headless runs Chromium on the page with a fresh profile and returns stdout and stderr.
func Headless(t testing.TB, bin, page string, args ...string) (string, string) {
	t.Helper()
	base := []string{"--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--no-first-run",
		"--user-data-dir=" + t.TempDir(), "--enable-logging=stderr", "--v=0"}
	cmd := exec.Command(bin, append(append(base, args...), "file://"+page)...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	done := make(chan error, 1)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("chromium %v: %v\n%s", args, err, errb.String())
		}
	case <-time.After(2 * time.Minute):
		cmd.Process.Kill()
		t.Fatalf("chromium %v did not finish", args)
	}
	return out.String(), errb.String()
}

// ConsoleErrors are the lines of Chromium's log that report the page's console messages
// (errors and warnings from its script or markup) or a resource that failed to load.
func ConsoleErrors(stderr string) []string {
	var out []string
	for _, l := range strings.Split(stderr, "\n") {
		if strings.Contains(l, ":CONSOLE") || strings.Contains(l, "Failed to load") {
			out = append(out, l)
		}
	}
	return out
}

// Screenshot renders the page at width × height into dir/name (dir "" : $MTGRPO_SCREENSHOT_DIR,
// else a temporary directory) and returns the decoded image and its path.
func Screenshot(t testing.TB, bin, page, name string, width, height int) (image.Image, string) {
	t.Helper()
	dir := os.Getenv("MTGRPO_SCREENSHOT_DIR")
	if dir == "" {
		dir = t.TempDir()
	}
	shot, _ := filepath.Abs(filepath.Join(dir, name))
	Headless(t, bin, page, "--screenshot="+shot, "--window-size="+itoa(width)+","+itoa(height), "--hide-scrollbars")
	f, err := os.Open(shot)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatal(err)
	}
	return img, shot
}

func itoa(i int) string { return strconv.Itoa(i) }
