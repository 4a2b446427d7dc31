// Package ranks starts the ranks of the multi-process tests (grpo, grpo/shard): the test binary
// re-executed once per rank of a Gloo group on 127.0.0.1. Imported by tests only.
package ranks

import (
	"context"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Run runs the test named test in world processes of this test binary, as the ranks of one Gloo
// group on 127.0.0.1 (a free port, one thread each) with env added, and returns each rank's exit
// error and output once all have ended or timeout has passed.
func Run(t *testing.T, test string, world int, timeout time.Duration, env ...string) ([]error, []string) {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	port := l.Addr().(*net.TCPAddr).Port
	l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	cmds, outs := make([]*exec.Cmd, world), make([]*strings.Builder, world)
	for r := range world {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^"+test+"$", "-test.count=1", "-test.v")
		cmd.Env = append(append(os.Environ(), env...),
			"RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(world),
			"MASTER_ADDR=127.0.0.1", "MASTER_PORT="+strconv.Itoa(port), "TORCHELASTIC_USE_AGENT_STORE=",
			"GLOO_SOCKET_IFNAME=", "OMP_NUM_THREADS=1")
		outs[r] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[r], outs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	errs, res := make([]error, world), make([]string, world)
	for r, cmd := range cmds {
		errs[r] = cmd.Wait()
		res[r] = outs[r].String()
	}
	return errs, res
}

// RequireGloo skips a test whose ranks talk over Gloo when the shim was built without it (a
// PyTorch wheel's libtorch ships no gloo headers: scripts/build_shim.sh says so). Under CI=true
// that is a failure: CI's libtorch (Debian's, with libgloo-dev) always has Gloo.
func RequireGloo(t *testing.T) {
	t.Helper()
	if torch.DistBackendBuilt(torch.Gloo) {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this shim was built without Gloo: scripts/build_shim.sh found no gloo headers (libgloo-dev)")
	}
	t.Skip("this shim was built without Gloo (no gloo headers in this libtorch)")
}
