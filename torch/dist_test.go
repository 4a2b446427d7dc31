package torch

import (
	"context"
	"fmt"
	"net"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// distWorkerEnv selects the worker mode of this test binary: TestDistributedGloo re-executes it
// once per rank with this variable set, and TestDistWorker then runs that rank's side.
const distWorkerEnv = "MTGRPO_DIST_TEST_WORKER"

// requireGloo skips a test that needs Gloo process groups when the shim was built without them
// (PyTorch wheels may ship no gloo headers: scripts/build_shim.sh says so). Under CI=true that is
// a failure: CI's libtorch (Debian's, with libgloo-dev) always has them.
func requireGloo(t *testing.T) {
	t.Helper()
	if DistBackendBuilt(Gloo) {
		return
	}
	if os.Getenv("CI") == "true" {
		t.Fatal("this shim was built without Gloo: scripts/build_shim.sh found no gloo headers (libgloo-dev)")
	}
	t.Skip("this shim was built without Gloo (no gloo headers in this libtorch)")
}

func TestDistributedGloo(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes")
	}
	requireGloo(t)
	runWorkers(t, "full", "MASTER_PORT="+strconv.Itoa(freePort(t)), "TORCHELASTIC_USE_AGENT_STORE=")
}

// Under torchrun's agent store every rank is a client of a store someone else serves, with keys
// under /worker/attempt_<restart count>. This process plays the agent.
func TestDistributedAgentStore(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes")
	}
	requireGloo(t)
	port := freePort(t)
	srv, err := ServeStore(port, 20*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	before, err := srv.NumKeys()
	if err != nil {
		t.Fatal(err)
	}
	runWorkers(t, "agent", "MASTER_PORT="+strconv.Itoa(port), "TORCHELASTIC_USE_AGENT_STORE=True",
		"TORCHELASTIC_RESTART_COUNT=3")
	if after, err := srv.NumKeys(); err != nil || after <= before {
		t.Errorf("store keys %d before, %d after the ranks met (err %v): they did not use this store", before, after, err)
	}
	if err := srv.Close(); err != nil {
		t.Error(err)
	}
}

// runWorkers runs TestDistWorker in two processes (ranks 0 and 1) in the given mode, checks that
// both finish and report success, and returns their output.
func runWorkers(t testing.TB, mode string, env ...string) []string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	const world = 2
	cmds := make([]*exec.Cmd, world)
	outs := make([]*strings.Builder, world)
	for r := 0; r < world; r++ {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestDistWorker$", "-test.count=1", "-test.v")
		cmd.Env = append(os.Environ(), distWorkerEnv+"="+mode,
			"RANK="+strconv.Itoa(r), "LOCAL_RANK="+strconv.Itoa(r), "WORLD_SIZE="+strconv.Itoa(world),
			"MASTER_ADDR=127.0.0.1", "GLOO_SOCKET_IFNAME=", "OMP_NUM_THREADS=1")
		cmd.Env = append(cmd.Env, env...)
		outs[r] = &strings.Builder{}
		cmd.Stdout, cmd.Stderr = outs[r], outs[r]
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds[r] = cmd
	}
	res := make([]string, world)
	for r, cmd := range cmds {
		err := cmd.Wait()
		res[r] = outs[r].String()
		if err != nil || !strings.Contains(res[r], fmt.Sprintf("dist worker rank %d ok", r)) {
			t.Errorf("rank %d: %v\n%s", r, err, res[r])
		}
	}
	return res
}

// freePort asks the kernel for an unused loopback port.
func freePort(t testing.TB) int {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}

// TestDistWorker is one rank (of 2) of TestDistributedGloo (mode "full") or
// TestDistributedAgentStore (mode "agent").
func TestDistWorker(t *testing.T) {
	mode := os.Getenv(distWorkerEnv)
	if mode == "" {
		t.Skip("worker process of TestDistributedGloo and TestDistributedAgentStore")
	}
	cfg, err := DistConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	cfg.Timeout = 20 * time.Second
	pg, err := NewProcessGroup(cfg)
	if err != nil {
		t.Fatal(err)
	}
	r := float64(pg.Rank())
	if pg.Size() != 2 || pg.Backend() != Gloo {
		t.Fatalf("size %d backend %q", pg.Size(), pg.Backend())
	}
	if want := mode == "agent"; cfg.AgentStore != want || (want && cfg.RestartCount != 3) {
		t.Errorf("mode %s: config %+v", mode, cfg)
	}
	if mode == "watchdog" {
		watchdogWorker(t, pg)
		if !t.Failed() {
			fmt.Printf("dist worker rank %d ok\n", pg.Rank())
		}
		return
	}
	onTorch(t, func() {
		// Sum of [r+1, 10(r+1)] over r = 0, 1: [1+2, 10+20] = [3, 30].
		s := FromSlice([]float32{float32(r + 1), float32(10 * (r + 1))})
		expectFloats(t, "sum", pg.AllReduce(s, Sum).Float32s(), []float64{3, 30}, 0)
		switch mode {
		case "agent":
			pg.Barrier()
			return
		case "bench":
			benchGradBuckets(t, pg)
			return
		case "shard":
			shardWorker(t, pg)
			return
		}
		// Avg of [r, 2r+1]: ([0 1] + [1 3]) / 2 = [0.5 2].
		a := FromSlice([]float64{r, 2*r + 1})
		expectFloats(t, "avg", pg.AllReduce(a, Avg).Float32s(), []float64{0.5, 2}, 0)
		// Max of [r, -r]: [1, 0]; Min of int64 [r, -r]: [0, -1].
		expectFloats(t, "max", pg.AllReduce(FromSlice([]float32{float32(r), float32(-r)}), Max).Float32s(), []float64{1, 0}, 0)
		expectInts(t, "min", pg.AllReduce(FromSlice([]int64{int64(r), int64(-r)}), Min).Int64s(), []int64{0, -1})
		// In place on a non-contiguous view: base = [[r 1] [2 3]], its transpose [[r 2] [1 3]] sums to
		// [[0+1 4] [2 6]] = [[1 4] [2 6]], written through the view: base = [[1 2] [4 6]].
		base := FromSlice([]float32{float32(r), 1, 2, 3}, 2, 2)
		pg.AllReduce(base.Transpose(0, 1), Sum)
		expectFloats(t, "non-contiguous", base.Float32s(), []float64{1, 2, 4, 6}, 0)
		// Avg of an integer tensor is refused on every rank before anything is sent.
		if err := Do(func() error { pg.AllReduce(FromSlice([]int64{1}), Avg); return nil }); err == nil ||
			!strings.Contains(err.Error(), "floating-point") {
			t.Errorf("int avg: %v", err)
		}

		// Broadcast from rank 1: [100r, 7] → [100, 7] everywhere.
		b := FromSlice([]int64{int64(100 * r), 7})
		expectInts(t, "broadcast", pg.Broadcast(b, 1).Int64s(), []int64{100, 7})

		// AllGather [r, r²+5]: rank 0 → [0 5], rank 1 → [1 6].
		g := pg.AllGather(FromSlice([]float32{float32(r), float32(r*r + 5)}))
		if len(g) != 2 {
			t.Errorf("all_gather gave %d tensors", len(g))
			return
		}
		expectFloats(t, "gather[0]", g[0].Float32s(), []float64{0, 5}, 0)
		expectFloats(t, "gather[1]", g[1].Float32s(), []float64{1, 6}, 0)

		// Gradient averaging: p's grad is r+1 per element → (1+2)/2 = 1.5. q gets a grad of 2 only
		// on rank 1 (rank 0 never uses it) → (0+2)/2 = 1. frozen is skipped. With 8-byte buckets q
		// (8 bytes) fills one bucket and p another.
		p := FromSlice([]float32{1, 2, 3}).SetRequiresGrad(true)
		q := FromSlice([]float32{5, 6}).SetRequiresGrad(true)
		frozen := FromSlice([]float32{9})
		loss := p.MulScalar(r + 1).Sum(false)
		if r == 1 {
			loss = loss.Add(q.MulScalar(2).Sum(false))
		}
		loss.Backward()
		bk := pg.NewGradBuckets([]*Tensor{p, frozen, q}, 8, false)
		defer bk.Close()
		if n := bk.Buckets(); n != 2 {
			t.Errorf("%d buckets, want 2", n)
		}
		bk.AllReduce(0.5)
		expectFloats(t, "p.grad", p.Grad().Float32s(), []float64{1.5, 1.5, 1.5}, 0)
		expectFloats(t, "q.grad", q.Grad().Float32s(), []float64{1, 1}, 0)
		if frozen.Grad() != nil {
			t.Error("frozen parameter got a gradient")
		}
		pg.Barrier()
	})
	if err := pg.Close(); err != nil {
		t.Fatal(err)
	}
	if err := pg.Close(); err != nil {
		t.Fatal(err)
	}
	if !t.Failed() {
		fmt.Printf("dist worker rank %d ok\n", pg.Rank())
	}
}

func TestDistConfigFromEnv(t *testing.T) {
	set := func(kv map[string]string) {
		for _, k := range []string{"RANK", "WORLD_SIZE", "LOCAL_RANK", "MASTER_ADDR", "MASTER_PORT",
			"TORCHELASTIC_USE_AGENT_STORE", "TORCHELASTIC_RESTART_COUNT"} {
			t.Setenv(k, kv[k])
		}
	}
	good := map[string]string{"RANK": "1", "WORLD_SIZE": "4", "LOCAL_RANK": "1", "MASTER_ADDR": "10.0.0.2",
		"MASTER_PORT": "29500", "TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "2"}
	set(good)
	c, err := DistConfigFromEnv()
	if err != nil {
		t.Fatal(err)
	}
	want := DistConfig{Rank: 1, WorldSize: 4, LocalRank: 1, MasterAddr: "10.0.0.2", MasterPort: 29500,
		AgentStore: true, RestartCount: 2, Device: CPU}
	if c != want {
		t.Errorf("config %+v, want %+v", c, want)
	}
	for _, bad := range []struct{ key, val, errHas string }{
		{"RANK", "", "RANK is not set"},
		{"RANK", "4", `RANK="4" is not an integer in [0, 3]`},
		{"WORLD_SIZE", "zero", `WORLD_SIZE="zero"`},
		{"LOCAL_RANK", "", "LOCAL_RANK is not set"},
		{"MASTER_ADDR", "", "MASTER_ADDR is not set"},
		{"MASTER_PORT", "70000", `MASTER_PORT="70000"`},
		{"TORCHELASTIC_RESTART_COUNT", "-1", "TORCHELASTIC_RESTART_COUNT"},
	} {
		env := map[string]string{}
		for k, v := range good {
			env[k] = v
		}
		env[bad.key] = bad.val
		set(env)
		if _, err := DistConfigFromEnv(); err == nil || !strings.Contains(err.Error(), bad.errHas) {
			t.Errorf("%s=%q: error %v, want %q", bad.key, bad.val, err, bad.errHas)
		}
	}
}

func TestProcessGroupBadConfig(t *testing.T) {
	for _, c := range []struct {
		cfg    DistConfig
		errHas string
	}{
		{DistConfig{Rank: 2, WorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: 1234}, "rank 2 out of range"},
		{DistConfig{Rank: 0, WorldSize: 1, MasterAddr: "", MasterPort: 1234}, "empty master address"},
		{DistConfig{Rank: 0, WorldSize: 1, MasterAddr: "127.0.0.1", MasterPort: 0}, "port 0 out of range"},
	} {
		if _, err := NewProcessGroup(c.cfg); err == nil || !strings.Contains(err.Error(), c.errHas) {
			t.Errorf("%+v: error %v, want %q", c.cfg, err, c.errHas)
		}
	}
	t.Run("cuda", testCUDAGroupByBuild)
	// A client (agent store) with nobody serving: the rendezvous fails within the timeout and the
	// error says where it tried.
	start := time.Now()
	_, err := NewProcessGroup(DistConfig{Rank: 1, WorldSize: 2, MasterAddr: "127.0.0.1", MasterPort: freePort(t),
		AgentStore: true, Timeout: 2 * time.Second})
	if err == nil || !strings.Contains(err.Error(), "rendezvous at 127.0.0.1:") {
		t.Errorf("rendezvous without a server: %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Errorf("rendezvous failure took %v with a 2 s timeout", d)
	}
}

// testCUDAGroupByBuild asks for a one-rank group on cuda:0 (the rendezvous, one rank serving
// itself, works everywhere) and expects what the shim was built with decides, not whether this
// machine has a GPU: without NCCL the backend is refused by name; with NCCL but no device the
// device is refused by name; with NCCL and a device the group works.
func testCUDAGroupByBuild(t *testing.T) {
	info, err := Version()
	if err != nil {
		t.Fatal(err)
	}
	pg, err := NewProcessGroup(DistConfig{Rank: 0, WorldSize: 1, MasterAddr: "127.0.0.1", MasterPort: freePort(t),
		Device: CUDA(0), Timeout: 30 * time.Second})
	switch {
	case !DistBackendBuilt(NCCL):
		if err == nil || !strings.Contains(err.Error(), "built without NCCL") {
			t.Errorf("shim without NCCL (%v): error %v, want \"built without NCCL\"", info, err)
		}
	case info.CUDADevices == 0:
		if err == nil || !strings.Contains(err.Error(), "cuda:0, which does not exist (0 CUDA devices)") {
			t.Errorf("shim with NCCL, no CUDA device (%v): error %v, want the device refused by name", info, err)
		}
	default:
		if err != nil {
			t.Errorf("shim with NCCL on %d CUDA devices: %v", info.CUDADevices, err)
		} else if pg.Backend() != NCCL {
			t.Errorf("backend %q, want nccl", pg.Backend())
		}
	}
	if pg != nil {
		if err := pg.Close(); err != nil {
			t.Error(err)
		}
	}
}

// TestDistBackendsMatchBuild checks the shim's backend report against the libtorch it was built
// with: a CUDA build that links NCCL has NCCL, a CPU build never does; and the backends are what
// Version reports.
func TestDistBackendsMatchBuild(t *testing.T) {
	info, err := Version()
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(info.DistBackends, DistBackends()) {
		t.Errorf("Version reports %v, DistBackends %v", info.DistBackends, DistBackends())
	}
	if !info.CUDABuilt && DistBackendBuilt(NCCL) {
		t.Errorf("a CPU-only shim (%v) reports NCCL", info)
	}
	if !strings.Contains(info.String(), "process groups") {
		t.Errorf("version string %q does not say which process groups it has", info)
	}
}

// TestDistributedNCCLOneRank runs with MTGRPO_TEST_DEVICE=cuda: a one-rank NCCL group, where every
// collective is the identity (the sum over one rank is the tensor itself). It checks that the shim
// was built with NCCL and that device plumbing works; multi-GPU hosts run TestDistributedGloo's
// pattern under torchrun for more.
func TestDistributedNCCLOneRank(t *testing.T) {
	if !testDevice.IsCUDA() {
		t.Skip("needs MTGRPO_TEST_DEVICE=cuda")
	}
	pg, err := NewProcessGroup(DistConfig{Rank: 0, WorldSize: 1, MasterAddr: "127.0.0.1", MasterPort: freePort(t),
		Device: testDevice, Timeout: 60 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	defer pg.Close()
	if pg.Backend() != NCCL {
		t.Errorf("backend %q, want nccl", pg.Backend())
	}
	onTorch(t, func() {
		s := dev(FromSlice([]float32{1, 2}))
		expectFloats(t, "sum", pg.AllReduce(s, Sum).Float32s(), []float64{1, 2}, 0)
		expectFloats(t, "avg", pg.AllReduce(s, Avg).Float32s(), []float64{1, 2}, 0)
		expectInts(t, "broadcast", pg.Broadcast(dev(FromSlice([]int64{4, 5})), 0).Int64s(), []int64{4, 5})
		g := pg.AllGather(s)
		if len(g) != 1 || g[0].Device() != testDevice {
			t.Errorf("all_gather: %v", g)
			return
		}
		expectFloats(t, "gather", g[0].Float32s(), []float64{1, 2}, 0)
		// grad of sum(3p) is 3 per element; averaged over one rank it stays 3.
		p := dev(FromSlice([]float32{1, 2})).SetRequiresGrad(true)
		p.MulScalar(3).Sum(false).Backward()
		bk := pg.NewGradBuckets([]*Tensor{p}, 0, false)
		defer bk.Close()
		bk.AllReduce(1)
		expectFloats(t, "grad", p.Grad().Float32s(), []float64{3, 3}, 0)
		pg.Barrier()
		// A CPU tensor on an NCCL group is an error naming both devices.
		if err := Do(func() error { pg.AllReduce(FromSlice([]float32{1}), Sum); return nil }); err == nil ||
			!strings.Contains(err.Error(), "process group on cuda") {
			t.Errorf("cpu tensor on nccl: %v", err)
		}
	})
}
