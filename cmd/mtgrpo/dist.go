package main

import (
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	"github.com/mtgrpo/mtgrpo/cmd/internal/job"
	"github.com/mtgrpo/mtgrpo/cmd/internal/launch"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Watchdog settings: every rank beats through the store each watchdogBeat; a rank silent for
// watchdogDead (its process is gone) makes the others stop with an error naming it. A rank that
// hangs with a live process is bounded by dist.timeout instead.
const (
	watchdogBeat = time.Second
	watchdogDead = 15 * time.Second
)

// launched reads how this process was started (torchrun, srun, --nproc's copies, or alone).
func launched(cfg *config.Config) (launch.Launch, error) {
	dev, err := torch.ParseDevice(cfg.Device)
	if err != nil {
		return launch.Launch{}, err
	}
	return launch.FromEnv(launch.Environ(os.Environ()), dev, cfg.Dist.Timeout)
}

// joinRun joins the run's process group when it has several processes and returns the trainer's
// Dist (nil for one process) and what leaves the group. Run on the torch thread.
func joinRun(l launch.Launch, cfg *config.Config) (*grpo.Dist, func(), error) {
	if !l.Distributed() {
		return nil, func() {}, nil
	}
	pg, err := torch.NewProcessGroup(l.Dist)
	if err != nil {
		return nil, nil, fmt.Errorf("joining the run's processes (%s, rank %d of %d, store %s:%d): %w",
			l.Source, l.Dist.Rank, l.Dist.WorldSize, l.Dist.MasterAddr, l.Dist.MasterPort, err)
	}
	wd, err := pg.StartWatchdog(watchdogBeat, watchdogDead)
	if err != nil {
		pg.Close()
		return nil, nil, err
	}
	go func() {
		// A collective cannot be interrupted: a rank that is gone ends this process.
		if err, ok := <-wd.Failed(); ok && err != nil {
			fmt.Fprintf(os.Stderr, "mtgrpo: rank %d: %v: stopping\n", l.Dist.Rank, err)
			os.Exit(1)
		}
	}()
	d, err := grpo.NewDist(pg, cfg.DistSettings())
	if err != nil {
		wd.Stop()
		pg.Close()
		return nil, nil, err
	}
	fmt.Fprintf(os.Stderr, "mtgrpo: rank %d of %d, %s process group on %s (%s), ZeRO stage %s\n",
		l.Dist.Rank, l.Dist.WorldSize, pg.Backend(), l.Dist.Device, l.Source, cfg.ZeROStage())
	return d, func() {
		// Every rank reaches here after the same last step; the barrier keeps rank 0's store up
		// until all are done, and the watchdog stops before a finished rank looks dead.
		torch.Run(func() error { pg.Barrier(); return nil })
		wd.Stop()
		d.Close()
		pg.Close()
	}, nil
}

// spawnRanks runs `mtgrpo ARGS` n times on this host as one data-parallel run (--nproc n);
// args are the command line without --nproc. A GPUS list becomes the ranks'
// CUDA_VISIBLE_DEVICES, so that local rank k trains on the k-th GPU of the list.
func spawnRanks(n int, args []string, stdout, stderr io.Writer) error {
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	env := []string{"HF_HUB_OFFLINE=1"} // the launcher resolved the model: the ranks read the cache
	gpus, err := launcherGPUs(n)
	if err != nil {
		return err
	}
	if gpus != nil {
		env = append(env, "CUDA_VISIBLE_DEVICES="+joinInts(gpus))
	}
	return launch.Spawn(launch.SpawnOptions{Exe: exe, Args: args, N: n, Env: env, Stdout: stdout, Stderr: stderr})
}

// defaultNproc is --nproc's default: N_GPUS, or the length of the GPUS list, or 1.
func defaultNproc() int {
	n, err := config.NumGPUs(os.LookupEnv)
	if err != nil || n > 0 {
		return max(n, 1) // a bad N_GPUS is reported by the configuration
	}
	if gpus := strings.TrimSpace(os.Getenv("GPUS")); gpus != "" && gpus != "cpu" {
		if ids, err := config.GPUList(gpus); err == nil {
			return len(ids)
		}
	}
	return 1
}

// nprocSource says where a process count came from, for errors: the flag, else the variables
// defaultNproc reads.
func nprocSource(flag bool, n int) string {
	if flag {
		return fmt.Sprintf("--nproc %d", n)
	}
	return fmt.Sprintf("%d from $N_GPUS or $GPUS", n)
}

// withoutFlag removes --name VALUE and --name=VALUE from args.
func withoutFlag(args []string, name string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--"+name {
			i++
			continue
		}
		if strings.HasPrefix(a, "--"+name+"=") {
			continue
		}
		out = append(out, a)
	}
	return out
}

// sageMakerTrain runs `mtgrpo train ARGS` as a SageMaker training job: the hyperparameters and
// channels become settings, the run directory is /opt/ml/checkpoints (resumed when a restarted job
// finds a checkpoint there), this host's processes are started with their place in the whole job,
// and the first host copies the exported model to /opt/ml/model.
func sageMakerTrain(args []string, stdout, stderr io.Writer) error {
	sm, err := launch.SageMakerFromEnv(launch.Environ(os.Environ()))
	if err != nil {
		return err
	}
	settings, err := sm.Settings()
	if err != nil {
		return err
	}
	full := append([]string{"train"}, withoutFlag(args, "nproc")...)
	for _, kv := range settings {
		if strings.HasPrefix(kv, "sagemaker_") {
			continue // the SageMaker SDK's own entries
		}
		full = append(full, "--set", kv)
	}
	full = append(full, "--resume")
	fmt.Fprintf(stderr, "mtgrpo train: SageMaker job: host %d of %d, %d process(es) here, run directory %s\n",
		sm.HostIndex+1, len(sm.Hosts), sm.Procs(), sm.CheckpointDir())
	exe, err := os.Executable()
	if err != nil {
		return err
	}
	o := sm.Spawn(exe, full)
	o.Stdout, o.Stderr = stdout, stderr
	if err := launch.Spawn(o); err != nil {
		return fmt.Errorf("train: %w", err)
	}
	if sm.HostIndex != 0 {
		return nil
	}
	src := filepath.Join(sm.CheckpointDir(), job.ModelDir)
	if _, err := os.Stat(filepath.Join(src, "config.json")); err != nil {
		src = filepath.Join(sm.CheckpointDir(), job.AdapterDir) // a LoRA run's adapters
		if _, err := os.Stat(src); err != nil {
			return nil // export turned off
		}
	}
	if err := os.CopyFS(sm.ModelDir(), os.DirFS(src)); err != nil {
		return fmt.Errorf("train: copying the model to %s: %w", sm.ModelDir(), err)
	}
	return nil
}
