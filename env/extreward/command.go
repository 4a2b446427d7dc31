package extreward

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"

	"github.com/mtgrpo/mtgrpo/env"
)

// Output limits of a reward program: an answer is a few numbers, so a megabyte is a runaway.
const (
	maxOutput = 1 << 20
	maxStderr = 2 << 10 // the tail quoted in errors
)

// runCommand runs the program once with rec on stdin and reads its answer from stdout. The
// program runs in its own process group, killed whole at the timeout.
func (r *Reward) runCommand(ctx context.Context, rec *env.TrajectoryRecord) (env.ExternalScore, error) {
	in, err := marshal(rec)
	if err != nil {
		return env.ExternalScore{}, fmt.Errorf("encoding the trajectory: %w", err)
	}
	ctx, cancel := context.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, r.cfg.Command[0], r.cfg.Command[1:]...)
	cmd.Dir = r.cfg.Dir
	cmd.Env = os.Environ()
	for k, v := range r.cfg.Env {
		cmd.Env = append(cmd.Env, k+"="+v)
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = time.Second // a grandchild holding the pipes open cannot hang us
	cmd.Stdin = bytes.NewReader(append(in, '\n'))
	var out limitedBuffer
	var errTail tailBuffer
	out.limit = maxOutput
	cmd.Stdout, cmd.Stderr = &out, &errTail
	err = cmd.Run()
	switch {
	case errors.Is(ctx.Err(), context.DeadlineExceeded):
		return env.ExternalScore{}, fmt.Errorf("no answer within %v%s", r.cfg.Timeout, errTail.quote())
	case out.over:
		return env.ExternalScore{}, fmt.Errorf("the answer is over %d bytes", maxOutput)
	case err != nil:
		return env.ExternalScore{}, fmt.Errorf("%v%s", err, errTail.quote())
	}
	s, err := parseAnswer(out.Bytes(), rec)
	if err != nil {
		return s, fmt.Errorf("%w%s", err, errTail.quote())
	}
	return s, nil
}

// limitedBuffer keeps the first limit bytes and notes that more came.
type limitedBuffer struct {
	bytes.Buffer
	limit int
	over  bool
}

func (b *limitedBuffer) Write(p []byte) (int, error) {
	if room := b.limit - b.Len(); len(p) > room {
		b.over = true
		b.Buffer.Write(p[:max(room, 0)])
		return len(p), nil
	}
	return b.Buffer.Write(p)
}

// tailBuffer keeps the last maxStderr bytes of the program's stderr.
type tailBuffer struct{ b []byte }

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > maxStderr {
		t.b = t.b[len(t.b)-maxStderr:]
	}
	return len(p), nil
}

func (t *tailBuffer) quote() string {
	s := strings.TrimSpace(string(t.b))
	if s == "" {
		return ""
	}
	return "; stderr: " + s
}

var _ io.Writer = (*tailBuffer)(nil)
