// Command mtgrpo-sandbox is the helper of mtgrpo's python sandbox, and nothing else: each python
// tool run starts as this binary, which prepares the process (cgroup, minimal root, uid drop,
// syscall filter) and execs the interpreter (env/sandbox/helper.go). All of that happens in the
// init of package env/sandbox, before main.
//
// It exists because the sandbox's other helper, the running mtgrpo binary itself, links libtorch
// and loads it on every start, which costs more than the run (docs/bench/env.md). This one links
// no torch: it must import nothing but env/sandbox (TestLinksNoTorch). `make build` puts it
// beside bin/mtgrpo, where the sandbox finds it; the two must come from the same build.
package main

import (
	"fmt"
	"os"

	"github.com/mtgrpo/mtgrpo/env/sandbox"
)

func main() {
	fmt.Fprintf(os.Stderr, "%s: the helper of mtgrpo's python sandbox (protocol %s); mtgrpo starts it for each run, it is not run by hand\n",
		sandbox.HelperName, sandbox.HelperProtocol())
	os.Exit(2)
}
