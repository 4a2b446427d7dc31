package main

import (
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// --val-data on a FIFO (or bash's <(...)) works: the checks before the work and the evaluation
// share one reading of it, instead of the second waiting for a writer that is gone.
func TestValDataFIFO(t *testing.T) {
	model := tinyModel(t)
	dir := t.TempDir()
	rows := filepath.Join(dir, "val.jsonl")
	if err := run([]string{"data", "gen", "--task", "calc_mult", "--n", "2", "--out", rows}); err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile(rows)
	fifo := filepath.Join(dir, "val-fifo.jsonl")
	if err := syscall.Mkfifo(fifo, 0o600); err != nil {
		t.Fatal(err)
	}
	go func() { // one writer, once, as a shell's pipe gives
		if f, err := os.OpenFile(fifo, os.O_WRONLY, 0); err == nil {
			f.Write(b)
			f.Close()
		}
	}()
	code, stderr := runChild(t, time.Minute, "eval", "--model", model, "--val-data", fifo, "--threads", "1",
		"--set", "rollout.max_new_tokens=4", "--set", "rollout.max_context_tokens=1024")
	if code != 0 || strings.Contains(stderr, "error") {
		t.Errorf("exit %d, stderr %s", code, stderr)
	}
}
