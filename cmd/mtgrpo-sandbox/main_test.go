package main

import (
	"os/exec"
	"strings"
	"testing"
)

// The helper's whole point is to start without libtorch: nothing it links may reach package
// torch or any cgo code of the project.
func TestLinksNoTorch(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}} {{len .CgoFiles}}", ".").CombinedOutput()
	if err != nil {
		t.Skipf("go list: %v: %s", err, out)
	}
	deps := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(deps) < 2 || !strings.Contains(string(out), "github.com/mtgrpo/mtgrpo/env/sandbox 0") {
		t.Fatalf("unexpected dependency list:\n%s", out)
	}
	for _, d := range deps {
		path, cgoFiles, _ := strings.Cut(d, " ")
		if strings.HasPrefix(path, "github.com/mtgrpo/mtgrpo/") && (strings.Contains(path, "torch") || cgoFiles != "0") {
			t.Errorf("the helper links %s (cgo files: %s)", path, cgoFiles)
		}
	}
}
