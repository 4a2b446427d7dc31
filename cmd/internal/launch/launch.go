// Package launch reads how an mtgrpo process was started — alone, by torchrun (or anything that
// sets its variables), by SLURM's srun, or as a SageMaker training job — and turns it into the
// process group's settings; and it starts N local copies of mtgrpo itself (`mtgrpo train --nproc
// N`), with torchrun's variables, for one host without torchrun.
//
// The contract is torchrun's: RANK, WORLD_SIZE, LOCAL_RANK, MASTER_ADDR, MASTER_PORT, and
// TORCHELASTIC_USE_AGENT_STORE / TORCHELASTIC_RESTART_COUNT when torchrun's agent serves the
// store. Multi-node runs set the same variables on every node (torchrun --nnodes --node-rank
// --master-addr does). SLURM's variables are read when torchrun's are absent: SLURM_PROCID,
// SLURM_NTASKS, SLURM_LOCALID, with MASTER_ADDR or else the first host of SLURM_JOB_NODELIST
// (SLURM_NODELIST), and MASTER_PORT or else DefaultPort. Everything here reads an environment
// given as a map, so it is tested without touching the process's own.
package launch

import (
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/torch"
)

// Source says which launcher's variables were read.
type Source string

const (
	Single   Source = "single"   // no launcher: one process
	Torchrun Source = "torchrun" // torchrun's variables (also set by --nproc and SageMaker)
	SLURM    Source = "slurm"    // srun's variables
)

// DefaultPort is the store's port when SLURM gives none (torchrun's default).
const DefaultPort = 29500

// Launch is this process's place among the processes of a run.
type Launch struct {
	Source Source
	Dist   torch.DistConfig // meaningful when Distributed
	// Elastic: torchrun itself started the process (TORCHELASTIC_RUN_ID is set).
	Elastic bool
}

// Distributed reports whether the process joins a process group: when the run has several
// processes, and when torchrun started a world of one (`torchrun --nproc-per-node 1`, as PyTorch's
// data parallel does: the multi-GPU code path on one GPU). Other worlds of one (an sbatch job's
// single task, `--nproc 1`, a one-GPU SageMaker job) run without a process group.
func (l Launch) Distributed() bool {
	return l.Source != Single && (l.Dist.WorldSize > 1 || l.Elastic)
}

// Main reports whether this process writes the run directory (rank 0).
func (l Launch) Main() bool { return !l.Distributed() || l.Dist.Rank == 0 }

// FromEnv reads env (os.Environ as a map). The device is CUDA(LOCAL_RANK) when device is CUDA,
// the CPU (Gloo) otherwise; timeout bounds rendezvous and collectives (0: torch's default).
func FromEnv(env map[string]string, device torch.Device, timeout time.Duration) (Launch, error) {
	var l Launch
	var err error
	switch {
	case env["WORLD_SIZE"] != "":
		l.Source, l.Elastic = Torchrun, env["TORCHELASTIC_RUN_ID"] != ""
		l.Dist, err = torchrunConfig(env)
	case env["SLURM_PROCID"] != "" && env["SLURM_NTASKS"] != "":
		l.Source = SLURM
		l.Dist, err = slurmConfig(env)
	default:
		return Launch{Source: Single, Dist: torch.DistConfig{WorldSize: 1, Device: device}}, nil
	}
	if err != nil {
		return Launch{}, fmt.Errorf("launch (%s): %w", l.Source, err)
	}
	l.Dist.Device, l.Dist.Timeout = torch.CPU, timeout
	if device.IsCUDA() {
		l.Dist.Device = torch.CUDA(l.Dist.LocalRank)
	}
	return l, nil
}

// torchrunConfig reads torchrun's variables as the torch package does for its own process.
func torchrunConfig(env map[string]string) (torch.DistConfig, error) {
	return torch.DistConfigFromLookup(func(k string) (string, bool) { v, ok := env[k]; return v, ok })
}

func slurmConfig(env map[string]string) (torch.DistConfig, error) {
	var c torch.DistConfig
	var err error
	if c.WorldSize, err = intVar(env, "SLURM_NTASKS", true, 1, 1<<20); err != nil {
		return c, err
	}
	if c.Rank, err = intVar(env, "SLURM_PROCID", true, 0, c.WorldSize-1); err != nil {
		return c, err
	}
	if c.LocalRank, err = intVar(env, "SLURM_LOCALID", false, 0, c.WorldSize-1); err != nil {
		return c, err
	}
	c.MasterAddr = env["MASTER_ADDR"]
	if c.MasterAddr == "" {
		list := env["SLURM_JOB_NODELIST"]
		if list == "" {
			list = env["SLURM_NODELIST"]
		}
		if c.MasterAddr, err = FirstHost(list); err != nil {
			return c, fmt.Errorf("MASTER_ADDR is not set and SLURM_JOB_NODELIST %q: %w", list, err)
		}
	}
	c.MasterPort = DefaultPort
	if env["MASTER_PORT"] != "" {
		c.MasterPort, err = intVar(env, "MASTER_PORT", true, 1, 65535)
	}
	return c, err
}

// FirstHost is the first host of a SLURM node list: "node07", "node[07-09,12]" or
// "gpu-a[1,3],gpu-b[2-4]" give node07, node07 and gpu-a1.
func FirstHost(list string) (string, error) {
	list = strings.TrimSpace(list)
	if list == "" {
		return "", fmt.Errorf("empty node list")
	}
	open := strings.IndexByte(list, '[')
	comma := strings.IndexByte(list, ',')
	if open < 0 || (comma >= 0 && comma < open) {
		if comma >= 0 {
			return list[:comma], nil
		}
		return list, nil
	}
	end := strings.IndexByte(list[open:], ']')
	if end < 0 {
		return "", fmt.Errorf("unclosed [")
	}
	first := list[open+1 : open+end]
	if i := strings.IndexAny(first, ",-"); i >= 0 {
		first = first[:i]
	}
	if first == "" {
		return "", fmt.Errorf("empty range")
	}
	return list[:open] + first, nil
}

// intVar reads an integer variable in [lo, hi]; a missing optional one is 0.
func intVar(env map[string]string, name string, required bool, lo, hi int) (int, error) {
	s, ok := env[name]
	if !ok || s == "" {
		if required {
			return 0, fmt.Errorf("%s is not set", name)
		}
		return 0, nil
	}
	v, err := strconv.Atoi(s)
	if err != nil || v < lo || v > hi {
		return 0, fmt.Errorf("%s=%q: want an integer in [%d, %d]", name, s, lo, hi)
	}
	return v, nil
}

// Environ turns os.Environ's KEY=VALUE list into a map.
func Environ(kv []string) map[string]string {
	m := make(map[string]string, len(kv))
	for _, e := range kv {
		if k, v, ok := strings.Cut(e, "="); ok {
			m[k] = v
		}
	}
	return m
}
