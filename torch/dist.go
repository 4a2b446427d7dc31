package torch

/*
#include <stdlib.h>
#include "dist.h"
*/
import "C"

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"
	"unsafe"
)

// Data-parallel training runs one process per device. Processes meet through libtorch's c10d: a
// TCPStore rendezvous at MASTER_ADDR:MASTER_PORT, then a process group (Gloo on the CPU, NCCL on
// CUDA) for the collectives. The environment contract is torchrun's, so `torchrun --no-python
// --nproc-per-node N mtgrpo train ...`, a local launcher and SLURM wrappers all work.

// DefaultDistTimeout bounds the rendezvous and each collective when DistConfig.Timeout is zero
// (torch.distributed's default).
const DefaultDistTimeout = 30 * time.Minute

// DefaultBucketBytes is the gradient bucket size of NewGradBuckets when none is given (DDP's 25 MB).
const DefaultBucketBytes = 25 << 20

// DistBackend names a c10d process-group backend.
type DistBackend string

// The backends a shim may be compiled with: Gloo when its libtorch ships the gloo headers
// (Debian's with libgloo-dev), NCCL in CUDA builds that found nccl.h.
const (
	Gloo DistBackend = "gloo" // CPU tensors
	NCCL DistBackend = "nccl" // CUDA tensors
)

// DistBackends lists the backends the loaded shim was compiled with (Gloo first). It is a fact of
// the build, not of the machine: a CUDA build has NCCL whether or not a GPU is present.
func DistBackends() []DistBackend {
	mask := C.mt_dist_backends()
	var bs []DistBackend
	if mask&C.MT_DIST_HAVE_GLOO != 0 {
		bs = append(bs, Gloo)
	}
	if mask&C.MT_DIST_HAVE_NCCL != 0 {
		bs = append(bs, NCCL)
	}
	return bs
}

// DistBackendBuilt reports whether the loaded shim was compiled with backend b.
func DistBackendBuilt(b DistBackend) bool { return slices.Contains(DistBackends(), b) }

// DistConfig says how a process joins its group.
type DistConfig struct {
	Rank      int // this process, 0 .. WorldSize-1 (RANK)
	WorldSize int // number of processes (WORLD_SIZE)
	LocalRank int // this process on its machine, usually its CUDA device (LOCAL_RANK)

	MasterAddr string // host of the store (MASTER_ADDR)
	MasterPort int    // its port (MASTER_PORT)

	// AgentStore: a torchrun agent already serves the store (TORCHELASTIC_USE_AGENT_STORE=True),
	// so every rank connects as a client, under the key prefix of restart RestartCount
	// (TORCHELASTIC_RESTART_COUNT). Otherwise rank 0 serves the store.
	AgentStore   bool
	RestartCount int

	Device  Device        // CPU: Gloo; CUDA(n): NCCL on cuda:n
	Timeout time.Duration // rendezvous and collectives; 0 means DefaultDistTimeout
}

// DistEnvSet reports whether the process was started by a distributed launcher (WORLD_SIZE set).
func DistEnvSet() bool { return os.Getenv("WORLD_SIZE") != "" }

// DistConfigFromEnv reads torchrun's variables from the process's environment
// (DistConfigFromLookup with os.LookupEnv).
func DistConfigFromEnv() (DistConfig, error) { return DistConfigFromLookup(os.LookupEnv) }

// DistConfigFromLookup reads torchrun's variables through lookup: RANK, WORLD_SIZE, LOCAL_RANK,
// MASTER_ADDR, MASTER_PORT (all required), TORCHELASTIC_USE_AGENT_STORE and
// TORCHELASTIC_RESTART_COUNT (optional). Device is left at CPU.
func DistConfigFromLookup(lookup func(string) (string, bool)) (DistConfig, error) {
	var c DistConfig
	var err error
	if c.WorldSize, err = envInt(lookup, "WORLD_SIZE", true, 1, 1<<20); err != nil {
		return c, err
	}
	if c.Rank, err = envInt(lookup, "RANK", true, 0, c.WorldSize-1); err != nil {
		return c, err
	}
	if c.LocalRank, err = envInt(lookup, "LOCAL_RANK", true, 0, c.WorldSize-1); err != nil {
		return c, err
	}
	if c.MasterAddr, _ = lookup("MASTER_ADDR"); c.MasterAddr == "" {
		return c, fmt.Errorf("torch: distributed: environment variable MASTER_ADDR is not set")
	}
	if c.MasterPort, err = envInt(lookup, "MASTER_PORT", true, 1, 65535); err != nil {
		return c, err
	}
	agent, _ := lookup("TORCHELASTIC_USE_AGENT_STORE")
	c.AgentStore = agent == "True"
	if c.RestartCount, err = envInt(lookup, "TORCHELASTIC_RESTART_COUNT", false, 0, 1<<30); err != nil {
		return c, err
	}
	c.Device = CPU
	return c, nil
}

// envInt reads an integer variable in [lo, hi]; a missing optional one is 0.
func envInt(lookup func(string) (string, bool), name string, required bool, lo, hi int) (int, error) {
	s, ok := lookup(name)
	if !ok || s == "" {
		if required {
			return 0, fmt.Errorf("torch: distributed: environment variable %s is not set", name)
		}
		return 0, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("torch: distributed: %s=%q is not an integer in [%d, %d]", name, s, lo, hi)
	}
	return v, nil
}

// ProcessGroup is this process's membership of a c10d process group. Collectives must be called
// on the torch thread, in the same order on every rank; they panic with *Error on failure, like
// other ops (a timeout, a peer that died, mismatched tensors).
type ProcessGroup struct {
	h       C.mt_pg
	cfg     DistConfig
	backend DistBackend
}

// NewProcessGroupFromEnv joins the group described by the environment (DistConfigFromEnv) with
// collectives on dev: typically CPU, or CUDA(LocalRank) on a GPU host.
func NewProcessGroupFromEnv(dev Device) (*ProcessGroup, error) {
	cfg, err := DistConfigFromEnv()
	if err != nil {
		return nil, err
	}
	cfg.Device = dev
	return NewProcessGroup(cfg)
}

// NewProcessGroup rendezvouses with the other ranks and creates the process group. It blocks until
// every rank has joined or the timeout passes. It may be called from any goroutine.
func NewProcessGroup(cfg DistConfig) (*ProcessGroup, error) {
	if cfg.Timeout == 0 {
		cfg.Timeout = DefaultDistTimeout
	}
	pg := &ProcessGroup{cfg: cfg}
	err := Run(func() error {
		addr := C.CString(cfg.MasterAddr)
		defer C.free(unsafe.Pointer(addr))
		e := C.mt_dist_new(addr, C.int(cfg.MasterPort), C.int(cfg.Rank), C.int(cfg.WorldSize),
			cbool(cfg.AgentStore), C.int(cfg.RestartCount), C.int(cfg.Device), C.int64_t(cfg.Timeout.Milliseconds()), &pg.h)
		if err := checkErr("NewProcessGroup", e); err != nil {
			return err
		}
		var buf [32]C.char
		if err := checkErr("NewProcessGroup", C.mt_dist_backend(pg.h, &buf[0], C.size_t(len(buf)))); err != nil {
			return err
		}
		pg.backend = DistBackend(C.GoString(&buf[0]))
		return nil
	})
	if err != nil {
		return nil, err
	}
	return pg, nil
}

// Rank is this process's rank.
func (pg *ProcessGroup) Rank() int { return pg.cfg.Rank }

// Size is the number of ranks.
func (pg *ProcessGroup) Size() int { return pg.cfg.WorldSize }

// LocalRank is this process's rank on its machine.
func (pg *ProcessGroup) LocalRank() int { return pg.cfg.LocalRank }

// Device is where the collectives run.
func (pg *ProcessGroup) Device() Device { return pg.cfg.Device }

// Backend is Gloo or NCCL.
func (pg *ProcessGroup) Backend() DistBackend { return pg.backend }

func (pg *ProcessGroup) handle(op string) C.mt_pg {
	if pg == nil || pg.h == nil {
		errorf(op, "process group is closed")
	}
	return pg.h
}

// ReduceOp combines values across ranks.
type ReduceOp int

// Reduce ops. Avg sums and divides by the world size (Gloo has no native average); it needs a
// floating-point tensor.
const (
	Sum ReduceOp = C.MT_DIST_SUM
	Avg ReduceOp = C.MT_DIST_AVG
	Max ReduceOp = C.MT_DIST_MAX
	Min ReduceOp = C.MT_DIST_MIN
)

// AllReduce replaces t, in place, with op over every rank's t, and returns t.
func (pg *ProcessGroup) AllReduce(t *Tensor, op ReduceOp) *Tensor {
	check("AllReduce", C.mt_dist_allreduce(pg.handle("AllReduce"), t.handle("AllReduce"), C.int(op)))
	return t
}

// Broadcast replaces t, in place, with root's t, and returns t.
func (pg *ProcessGroup) Broadcast(t *Tensor, root int) *Tensor {
	pg.BroadcastAll([]*Tensor{t}, root)
	return t
}

// BroadcastAll broadcasts each tensor from root in one crossing (e.g. initial weights from rank 0).
func (pg *ProcessGroup) BroadcastAll(ts []*Tensor, root int) {
	hs := handles("BroadcastAll", ts)
	check("BroadcastAll", C.mt_dist_broadcast(pg.handle("BroadcastAll"), handlesPtr(hs), C.int(len(hs)), C.int(root)))
}

// AllGather returns every rank's t, indexed by rank (new tensors in the current scope).
func (pg *ProcessGroup) AllGather(t *Tensor) []*Tensor {
	outs := make([]C.mt_tensor, pg.Size())
	check("AllGather", C.mt_dist_allgather(pg.handle("AllGather"), t.handle("AllGather"), &outs[0]))
	res := make([]*Tensor, len(outs))
	for i, h := range outs {
		res[i] = wrap("AllGather", h)
	}
	return res
}

// Collective runs fn, whose collectives are over g, in a scope of its own, and words a failure
// for the user: which rank, doing what (what), and what usually causes it. With g nil (one
// process) it is Do.
func Collective(g *ProcessGroup, what string, fn func()) error {
	err := Do(func() error {
		s := NewScope()
		defer s.Close()
		fn()
		return nil
	})
	if err == nil || g == nil {
		return err
	}
	return fmt.Errorf("rank %d of %d, %s: %w (another rank died, stopped answering for the %v timeout, or failed: "+
		"its own log says which)", g.Rank(), g.Size(), what, err, g.Timeout())
}

// Barrier returns once every rank has reached it.
func (pg *ProcessGroup) Barrier() {
	check("Barrier", C.mt_dist_barrier(pg.handle("Barrier")))
}

// Close leaves the group and releases the store connection. Call Barrier first if other ranks may
// still be using rank 0's store. It is safe to call more than once and from any goroutine.
func (pg *ProcessGroup) Close() error {
	if pg == nil || pg.h == nil {
		return nil
	}
	return Run(func() error {
		h := pg.h
		pg.h = nil
		return checkErr("ProcessGroup.Close", C.mt_dist_free(h))
	})
}
