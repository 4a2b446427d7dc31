package rollout

import (
	"os"
	"testing"
)

var tempDirs []string

func mkdirTemp() (string, error) {
	d, err := os.MkdirTemp("", "rollout-test-")
	if err == nil {
		tempDirs = append(tempDirs, d)
	}
	return d, err
}

func TestMain(m *testing.M) {
	code := m.Run()
	for _, d := range tempDirs {
		os.RemoveAll(d)
	}
	os.Exit(code)
}
