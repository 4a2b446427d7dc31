package main

import (
	"bufio"
	"bytes"
	"errors"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// nodeModules is where scripts/setup.sh installs the openai package.
var nodeModules, _ = filepath.Abs("../../third_party/npm/node_modules")

// needOpenAINode skips when node or the openai package is missing (setup installs both; CI runs
// setup).
func needOpenAINode(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (scripts/setup.sh installs it)")
	}
	if _, err := os.Stat(filepath.Join(nodeModules, "openai", "package.json")); err != nil {
		t.Skip("third_party/npm/node_modules/openai is missing (run scripts/setup.sh)")
	}
}

var servingOn = regexp.MustCompile(`on (http://\S+/v1) `)

// `mtgrpo serve` over the tiny model, driven by the official openai client
// (testdata/serve_client.js): the served model is listed; a request's seed, temperature, top_p,
// max_tokens and stop apply, streamed or not (the same seed draws the same text, a stop string
// cuts that text before it); temperature 0 is greedy; the next call of a conversation reuses the
// first call's ids (cached_tokens) and its parked KV cache (the server's count at its stop); n = 2
// is refused naming the field. SIGTERM stops the server cleanly (exit 0).
func TestServeWithOpenAIClient(t *testing.T) {
	needOpenAINode(t)
	srv := child("serve", "--model", tinyModel(t), "--port", "0", "--served-model-name", "tiny-policy", "--threads", "1",
		"--slots", "2", "--max-len", "512", "--api-key", "sk-test")
	stderr, err := srv.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	defer srv.Process.Kill()
	var log bytes.Buffer
	lines := bufio.NewScanner(io.TeeReader(stderr, &log))
	url := ""
	for url == "" && lines.Scan() {
		if m := servingOn.FindStringSubmatch(lines.Text()); m != nil {
			url = m[1]
		}
	}
	if url == "" {
		t.Fatalf("serve did not start: %s", log.String())
	}
	go io.Copy(io.Discard, io.TeeReader(stderr, &log)) //nolint:errcheck // read to the end while the client runs

	client := exec.Command("node", "testdata/serve_client.js")
	client.Env = append(os.Environ(), "NODE_PATH="+nodeModules, "OPENAI_BASE_URL="+url, "OPENAI_API_KEY=sk-test", "EXPECT_MODEL=tiny-policy")
	out, err := client.CombinedOutput()
	t.Logf("client: %s", out)
	if err != nil {
		t.Errorf("the client's checks failed: %v", err)
	}

	if err := srv.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- srv.Wait() }()
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		t.Fatalf("serve still running 30 s after SIGTERM: %s", log.String())
	}
	if err != nil {
		t.Errorf("serve after SIGTERM: %v: %s", err, log.String())
	}
	m := regexp.MustCompile(`stopped; KV reuse: (\d+) calls`).FindStringSubmatch(log.String())
	if m == nil {
		t.Fatalf("no stop line: %s", log.String())
	}
	if hits, _ := strconv.Atoi(m[1]); hits < 1 {
		t.Errorf("no call started from a kept KV cache: %s", log.String())
	}
}

// Bad flags exit with status 2 before anything is loaded; so does a port that is taken.
func TestServeRefusesBadFlags(t *testing.T) {
	t.Setenv("HF_HUB_OFFLINE", "1")
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	port := strconv.Itoa(taken.Addr().(*net.TCPAddr).Port)
	missing := filepath.Join(t.TempDir(), "none")
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{}, "give --model"},
		{[]string{"--model", missing, "--checkpoint", missing}, "not both"},
		{[]string{"--model", missing, "--port", "70000"}, "--port 70000"},
		{[]string{"--model", missing, "--slots", "0"}, "--slots 0"},
		{[]string{"--model", missing, "--cache-slots", "-2"}, "--cache-slots -2"},
		{[]string{"--model", missing, "--max-len", "1"}, "--max-len 1"},
		{[]string{"--model", missing, "--grace", "-1s"}, "--grace"},
		{[]string{"--model", missing, "--device", "tpu"}, "device"},
		{[]string{"--model", missing, "--dtype", "float8"}, "--dtype"},
		{[]string{"--model", missing}, "none"},
		{[]string{"--checkpoint", missing}, "no checkpoint"},
		{[]string{"--model", tinyModel(t), "--port", port}, "address already in use"},
	} {
		err := run(append([]string{"serve"}, c.args...))
		if !errors.As(err, new(usageError)) || !strings.Contains(err.Error(), c.want) {
			t.Errorf("serve %q: %v; want a usage error (exit 2) with %q", c.args, err, c.want)
		}
	}
}
