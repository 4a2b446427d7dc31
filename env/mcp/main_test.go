package mcp

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/mtgrpo/mtgrpo/env/envtest"
)

var (
	buildOnce   sync.Once
	serverBin   string
	buildErr    error
	testTempDir string
)

func TestMain(m *testing.M) {
	code := m.Run()
	if testTempDir != "" {
		os.RemoveAll(testTempDir)
	}
	os.Exit(code)
}

// testServer builds internal/testserver once per test binary and returns its path.
func testServer(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		testTempDir, buildErr = os.MkdirTemp("", "mcp-test-")
		if buildErr != nil {
			return
		}
		serverBin = filepath.Join(testTempDir, "testserver")
		out, err := exec.Command("go", "build", "-o", serverBin, "./internal/testserver").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("building the test server: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return serverBin
}

// stdioServer is the config of the test server over stdio.
func stdioServer(t testing.TB, args ...string) ServerConfig {
	return ServerConfig{Name: "test", Command: testServer(t), Args: args}
}

// httpServer starts the test server on addr ("127.0.0.1:0" for any port) and returns its URL;
// the process is killed when the test ends (or earlier with the returned stop).
func httpServer(t testing.TB, addr string) (url string, stop func()) {
	t.Helper()
	return envtest.StartURL(t, testServer(t), "-http", addr)
}

func connect(t testing.TB, cfg Config) *Client {
	t.Helper()
	c, err := Connect(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}
