package launch

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"sync"
	"syscall"
	"time"
)

// SpawnOptions says how to start the local ranks.
type SpawnOptions struct {
	// Exe and Args are the program each rank runs (Args without the spawning flag); Env is
	// added to this process's environment for each.
	Exe  string
	Args []string
	Env  []string
	// N is the number of ranks on this host.
	N int
	// Nodes, NodeRank, MasterAddr and MasterPort place them in a run over several hosts (0, 0,
	// "" and 0: this host alone, the store on 127.0.0.1 at a free port).
	Nodes, NodeRank int
	MasterAddr      string
	MasterPort      int
	// Stdout and Stderr receive the ranks' output: rank 0's as it is, the others' line by line
	// with a "[rank K] " prefix.
	Stdout, Stderr io.Writer
	// Grace is how long the other ranks may take to exit on their own after one has failed,
	// before they are killed (0: 10 s).
	Grace time.Duration
}

// RankError reports the first rank that failed.
type RankError struct {
	Rank int
	Err  error
}

func (e *RankError) Error() string { return fmt.Sprintf("rank %d: %v", e.Rank, e.Err) }

// Spawn runs N copies of Exe as ranks 0..N-1 of one run on this host: torchrun's variables with
// the store on 127.0.0.1 at a free port. SIGINT and SIGTERM are passed on to every rank. When a
// rank fails, the others get Grace to notice (their collectives fail) and are then killed; the
// error names the first rank that failed.
func Spawn(o SpawnOptions) error {
	if o.N < 1 {
		return fmt.Errorf("launch: %d processes: want at least 1", o.N)
	}
	if o.Grace == 0 {
		o.Grace = 10 * time.Second
	}
	port := o.MasterPort
	if port == 0 {
		var err error
		if port, err = FreePort(); err != nil {
			return fmt.Errorf("launch: a port for the store: %w", err)
		}
	}
	cmds := make([]*exec.Cmd, o.N)
	var copies sync.WaitGroup
	for r := range cmds {
		c := exec.Command(o.Exe, o.Args...)
		c.Env = append(append(os.Environ(), o.Env...), rankEnv(o, r, port)...)
		c.Stdin = nil
		if r == 0 {
			c.Stdout, c.Stderr = o.Stdout, o.Stderr
		} else {
			prefix := fmt.Sprintf("[rank %d] ", r)
			for _, p := range []struct {
				pipe func() (io.ReadCloser, error)
				dst  io.Writer
			}{{c.StdoutPipe, o.Stdout}, {c.StderrPipe, o.Stderr}} {
				rd, err := p.pipe()
				if err != nil {
					return fmt.Errorf("launch: rank %d: %w", r, err)
				}
				copies.Add(1)
				go func() { defer copies.Done(); prefixLines(rd, p.dst, prefix) }()
			}
		}
		cmds[r] = c
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)
	for r, c := range cmds {
		if err := c.Start(); err != nil {
			for _, s := range cmds[:r] {
				s.Process.Kill()
				s.Wait()
			}
			return fmt.Errorf("launch: starting rank %d: %w", r, err)
		}
	}
	type exit struct {
		rank int
		err  error
	}
	exits := make(chan exit, o.N)
	for r, c := range cmds {
		go func() { exits <- exit{r, c.Wait()} }()
	}
	var first *RankError
	var kill <-chan time.Time
	for left := o.N; left > 0; {
		select {
		case s := <-sigs:
			for _, c := range cmds {
				c.Process.Signal(s)
			}
		case e := <-exits:
			left--
			if e.err != nil && first == nil {
				first = &RankError{Rank: e.rank, Err: e.err}
				kill = time.After(o.Grace)
			}
		case <-kill:
			for _, c := range cmds {
				c.Process.Kill() // an exited process: an error, ignored
			}
		}
	}
	copies.Wait()
	if first != nil {
		return first
	}
	return nil
}

// prefixLines copies r to w line by line, each line led by prefix.
func prefixLines(r io.Reader, w io.Writer, prefix string) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		fmt.Fprintf(w, "%s%s\n", prefix, sc.Bytes())
	}
	if err := sc.Err(); err != nil && !errors.Is(err, os.ErrClosed) {
		io.Copy(io.Discard, r) // a line over 1 MiB: drop the rest rather than block the rank
	}
}

// FreePort asks the kernel for a free TCP port on 127.0.0.1.
func FreePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}
