package sandbox

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// Collecting the child's output without losing any.
//
// os/exec's own copying (a non-file Stdout) ends at EOF of the pipe, which comes only when every
// holder of the pipe's write end has closed it. A process that is not part of the run can hold
// it for a while: a sibling that the trainer is starting at the same moment gets a copy of every
// descriptor in clone() and keeps it until its exec, and clone() with new namespaces can block
// for seconds while other namespaces are torn down. exec's WaitDelay then closes the pipe with
// the run's output still in it, and Wait's ErrWaitDelay was easy to miss: the run looked like a
// success with empty stdout.
//
// stream does not wait for EOF. Once the run's processes are dead, everything they wrote is in
// the pipe's buffer already (a write to a pipe is complete when the call returns), so stream
// stops its reader with a deadline and drains the buffer to EAGAIN: the output is complete
// whoever else still holds the write end, and no timing is involved.

// stream collects one of the child's output streams.
type stream struct {
	r, w *os.File
	out  capped
	done chan error // the reader's end: nil at EOF or at the deadline set by finish
}

func newStream(max int) (*stream, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("sandbox: output pipe: %w", err)
	}
	return &stream{r: r, w: w, out: capped{max: max}, done: make(chan error, 1)}, nil
}

// start reads the pipe while the child runs (so a child printing more than a pipe's buffer is
// not blocked) and closes this process's copy of the write end, which the child now holds.
func (s *stream) start() {
	s.w.Close()
	go func() {
		_, err := io.Copy(&s.out, s.r)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			err = nil
		}
		s.done <- err
	}()
}

// finish returns once everything written to the pipe has been read. Call it after the run's
// processes are dead. The error is non-nil only when reading failed: then output may be missing
// and the run must not be reported as a success.
func (s *stream) finish() error {
	defer s.r.Close()
	if err := s.r.SetReadDeadline(time.Now()); err != nil {
		return fmt.Errorf("sandbox: output pipe cannot be stopped: %w", err)
	}
	if err := <-s.done; err != nil {
		return fmt.Errorf("sandbox: reading the program's output: %w", err)
	}
	return s.drain()
}

// drain reads what is left in the pipe's buffer, without blocking (the pipe is non-blocking:
// os.Pipe registers it with the runtime's poller). Control, unlike Read, ignores the deadline.
func (s *stream) drain() error {
	rc, err := s.r.SyscallConn()
	if err != nil {
		return err
	}
	var rerr error
	buf := make([]byte, 32<<10)
	cerr := rc.Control(func(fd uintptr) {
		for {
			n, err := unix.Read(int(fd), buf)
			switch {
			case n > 0:
				s.out.Write(buf[:n])
			case err == syscall.EINTR:
			case err == syscall.EAGAIN || n == 0 && err == nil: // empty, or EOF
				return
			default:
				rerr = err
				return
			}
		}
	})
	if cerr != nil {
		return fmt.Errorf("sandbox: reading the program's output: %w", cerr)
	}
	if rerr != nil {
		return fmt.Errorf("sandbox: reading the program's output: %w", rerr)
	}
	return nil
}

// abandon releases both ends when the child never started.
func (s *stream) abandon() {
	s.w.Close()
	s.r.Close()
}

// capped keeps the first max bytes written to it and counts the rest. It never fails a write, so
// the child is not killed by EPIPE mid-print.
type capped struct {
	buf     bytes.Buffer
	max     int
	dropped int
}

func (c *capped) Write(p []byte) (int, error) {
	room := c.max - c.buf.Len()
	if room >= len(p) {
		c.buf.Write(p)
	} else {
		if room > 0 {
			c.buf.Write(p[:room])
		}
		c.dropped += len(p) - max(room, 0)
	}
	return len(p), nil
}

func (c *capped) String() string {
	if c.dropped == 0 {
		return c.buf.String()
	}
	return fmt.Sprintf("%s\n... [%d bytes of output truncated]", c.buf.String(), c.dropped)
}
