package launch

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/mtgrpo/mtgrpo/torch"
)

func TestFromEnv(t *testing.T) {
	torchrun := map[string]string{"WORLD_SIZE": "16", "RANK": "9", "LOCAL_RANK": "1", "MASTER_ADDR": "node0", "MASTER_PORT": "29400",
		"TORCHELASTIC_USE_AGENT_STORE": "True", "TORCHELASTIC_RESTART_COUNT": "2"}
	cases := []struct {
		name string
		env  map[string]string
		dev  torch.Device
		want Launch
		err  string
	}{
		{"alone", map[string]string{}, torch.CPU, Launch{Source: Single, Dist: torch.DistConfig{WorldSize: 1, Device: torch.CPU}}, ""},
		{"torchrun on GPUs", torchrun, torch.CUDA(0), Launch{Source: Torchrun, Dist: torch.DistConfig{Rank: 9, WorldSize: 16, LocalRank: 1,
			MasterAddr: "node0", MasterPort: 29400, AgentStore: true, RestartCount: 2, Device: torch.CUDA(1), Timeout: time.Minute}}, ""},
		{"torchrun on the CPU", map[string]string{"WORLD_SIZE": "2", "RANK": "1", "LOCAL_RANK": "1", "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": "5"},
			torch.CPU, Launch{Source: Torchrun, Dist: torch.DistConfig{Rank: 1, WorldSize: 2, LocalRank: 1, MasterAddr: "127.0.0.1",
				MasterPort: 5, Device: torch.CPU, Timeout: time.Minute}}, ""},
		{"srun", map[string]string{"SLURM_PROCID": "5", "SLURM_NTASKS": "8", "SLURM_LOCALID": "1", "SLURM_JOB_NODELIST": "gpu[03-04]"},
			torch.CUDA(0), Launch{Source: SLURM, Dist: torch.DistConfig{Rank: 5, WorldSize: 8, LocalRank: 1, MasterAddr: "gpu03",
				MasterPort: DefaultPort, Device: torch.CUDA(1), Timeout: time.Minute}}, ""},
		{"srun with MASTER_ADDR", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2", "MASTER_ADDR": "head", "MASTER_PORT": "7000"},
			torch.CPU, Launch{Source: SLURM, Dist: torch.DistConfig{WorldSize: 2, MasterAddr: "head", MasterPort: 7000, Device: torch.CPU, Timeout: time.Minute}}, ""},
		{"rank out of range", map[string]string{"WORLD_SIZE": "2", "RANK": "2", "LOCAL_RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"},
			torch.CPU, Launch{}, `launch (torchrun): torch: distributed: RANK="2" is not an integer in [0, 1]`},
		{"no master", map[string]string{"WORLD_SIZE": "2", "RANK": "0", "LOCAL_RANK": "0", "MASTER_PORT": "1"},
			torch.CPU, Launch{}, "MASTER_ADDR is not set"},
		{"srun without a host", map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "2"},
			torch.CPU, Launch{}, "MASTER_ADDR is not set and SLURM_JOB_NODELIST"},
	}
	for _, c := range cases {
		got, err := FromEnv(c.env, c.dev, time.Minute)
		if c.err != "" {
			if err == nil || !strings.Contains(err.Error(), c.err) {
				t.Errorf("%s: %v, want an error containing %q", c.name, err, c.err)
			}
			continue
		}
		if err != nil || !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %+v %v\nwant %+v", c.name, got, err, c.want)
		}
	}
	if l, _ := FromEnv(torchrun, torch.CPU, 0); !l.Distributed() || l.Main() {
		t.Errorf("rank 9 of 16: distributed %v main %v", l.Distributed(), l.Main())
	}
	one := map[string]string{"WORLD_SIZE": "1", "RANK": "0", "LOCAL_RANK": "0", "MASTER_ADDR": "a", "MASTER_PORT": "1"}
	if l, _ := FromEnv(one, torch.CPU, 0); l.Distributed() || !l.Main() {
		t.Errorf("a world of one is run without a process group: %+v", l)
	}
	one["TORCHELASTIC_RUN_ID"] = "none"
	if l, _ := FromEnv(one, torch.CPU, 0); !l.Distributed() || !l.Main() {
		t.Errorf("torchrun's world of one joins a process group (rank 0 writes the run): %+v", l)
	}
	slurm := map[string]string{"SLURM_PROCID": "0", "SLURM_NTASKS": "1", "SLURM_JOB_NODELIST": "n1", "TORCHELASTIC_RUN_ID": "x"}
	if l, _ := FromEnv(slurm, torch.CPU, 0); l.Distributed() || !l.Main() {
		t.Errorf("an sbatch job's single task runs without a process group: %+v", l)
	}
}

func TestFirstHost(t *testing.T) {
	for in, want := range map[string]string{"node07": "node07", "node[07-09,12]": "node07", "gpu-a[1,3],gpu-b[2-4]": "gpu-a1",
		"a,b[1-2]": "a", "x[5]": "x5"} {
		if got, err := FirstHost(in); err != nil || got != want {
			t.Errorf("FirstHost(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for _, bad := range []string{"", "node[01-02", "node[]"} {
		if got, err := FirstHost(bad); err == nil {
			t.Errorf("FirstHost(%q) = %q, want an error", bad, got)
		}
	}
}

func TestSageMaker(t *testing.T) {
	root := t.TempDir()
	cfgDir, train := filepath.Join(root, "input", "config"), filepath.Join(root, "input", "data", "train")
	os.MkdirAll(cfgDir, 0o755)
	os.MkdirAll(train, 0o755)
	os.WriteFile(filepath.Join(cfgDir, "hyperparameters.json"), []byte(`{"optim.lr": "1e-6", "rollout.group": 8, "sagemaker_region": "x"}`), 0o644)
	os.WriteFile(filepath.Join(train, "part.parquet"), nil, 0o644)
	env := map[string]string{"SM_HOSTS": `["algo-1","algo-2"]`, "SM_CURRENT_HOST": "algo-2", "SM_NUM_GPUS": "4",
		"SM_CHANNEL_TRAIN": train, "SM_CHANNEL_MODEL": "/models/q", "MTGRPO_SAGEMAKER_ROOT": root}
	if !IsSageMaker(env) {
		t.Fatal("not seen as SageMaker")
	}
	s, err := SageMakerFromEnv(env)
	if err != nil {
		t.Fatal(err)
	}
	got, err := s.Settings()
	want := []string{"optim.lr=1e-6", "rollout.group=8", "sagemaker_region=x", "data.train=" + filepath.Join(train, "part.parquet"),
		"model=/models/q", "run_dir=" + filepath.Join(root, "checkpoints"), "device=cuda"}
	if err != nil || !reflect.DeepEqual(got, want) {
		t.Errorf("settings %q %v\nwant %q", got, err, want)
	}
	o := s.Spawn("mtgrpo", []string{"train"})
	if o.N != 4 || o.Nodes != 2 || o.NodeRank != 1 || o.MasterAddr != "algo-1" || o.MasterPort != DefaultPort {
		t.Errorf("spawn %+v", o)
	}
	if env := rankEnv(o, 3, 29500); !reflect.DeepEqual(env[:3], []string{"WORLD_SIZE=8", "RANK=7", "LOCAL_RANK=3"}) {
		t.Errorf("rank env %v", env)
	}
	env["SM_CURRENT_HOST"] = "algo-9"
	if _, err := SageMakerFromEnv(env); err == nil || !strings.Contains(err.Error(), "not in SM_HOSTS") {
		t.Errorf("unknown host: %v", err)
	}
}
