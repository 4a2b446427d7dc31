package config

import (
	"os"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// A --config that can be read only once (a pipe, a FIFO, bash's <(...)) is read once: its preset
// and its settings both apply, and nothing waits for a second reading.
func TestConfigFromFIFO(t *testing.T) {
	fifo := filepath.Join(t.TempDir(), "config.yaml")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() {
		f, err := os.OpenFile(fifo, os.O_WRONLY, 0)
		if err == nil {
			f.WriteString("preset: math\nmodel: m\nrollout:\n  tasks: 3\n")
			f.Close()
		}
	}()
	type result struct {
		c   *Config
		err error
	}
	done := make(chan result, 1)
	go func() {
		c, err := Resolve(Sources{Files: []string{fifo}, LookupEnv: func(string) (string, bool) { return "", false }})
		done <- result{c, err}
	}()
	select {
	case r := <-done:
		if r.err != nil {
			t.Fatal(r.err)
		}
		// math's preset: gsm8k_python, 6 trajectories a task; the file's own setting: 3 tasks a step.
		if r.c.Env.Name != "gsm8k_python" || r.c.Rollout.GroupSize != 6 || r.c.Rollout.Tasks != 3 {
			t.Errorf("env %s, group %d, tasks %d; want gsm8k_python, 6 and 3", r.c.Env.Name, r.c.Rollout.GroupSize, r.c.Rollout.Tasks)
		}
	case <-time.After(5 * time.Second):
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil { // let the second reading end
			f.Close()
		}
		t.Fatal("the configuration waits for a second reading of the FIFO")
	}
}
