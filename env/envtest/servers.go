// Package envtest starts the servers tests talk to (an MCP server, an OpenEnv server) as child
// processes that announce their address on their first line of output.
package envtest

import (
	"bufio"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// StartURL runs name with args, waits (at most 30 s) for its first line "url <URL>" on stdout and
// returns the URL. The process is killed when the test ends, or earlier by stop.
func StartURL(t testing.TB, name string, args ...string) (url string, stop func()) {
	t.Helper()
	cmd := exec.Command(name, args...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	var once sync.Once
	stop = func() { once.Do(func() { cmd.Process.Kill(); cmd.Wait() }) }
	t.Cleanup(stop)
	lines := make(chan string, 1)
	go func() {
		line, _ := bufio.NewReader(out).ReadString('\n')
		lines <- line
	}()
	select {
	case line := <-lines:
		u, ok := strings.CutPrefix(strings.TrimSpace(line), "url ")
		if !ok {
			t.Fatalf("%s %v printed %q, not \"url <URL>\"", name, args, line)
		}
		return u, stop
	case <-time.After(30 * time.Second):
		t.Fatalf("%s %v did not announce its URL within 30s", name, args)
	}
	return "", stop
}
