package launch

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// SageMaker is the layout of a SageMaker training job (the container runs `mtgrpo train`):
//
//	/opt/ml/input/config/hyperparameters.json  {"key": "value", ...}: configuration keys
//	/opt/ml/input/data/<channel>/               SM_CHANNEL_<CHANNEL>: train, validation (or test), model
//	/opt/ml/checkpoints/                        the run directory (synced to S3; a restarted job resumes)
//	/opt/ml/model/                              the exported model (uploaded at the end)
//
// and SM_HOSTS (a JSON list), SM_CURRENT_HOST and SM_NUM_GPUS for the process group: one process
// per GPU on every host, the store on the first host.
type SageMaker struct {
	Root            string            // /opt/ml, or $MTGRPO_SAGEMAKER_ROOT (tests)
	Hosts           []string          // SM_HOSTS
	HostIndex       int               // SM_CURRENT_HOST's place in Hosts
	NumGPUs         int               // SM_NUM_GPUS
	Hyperparameters map[string]string // hyperparameters.json, every value as a string
	Channels        map[string]string // channel name → directory
	port            int               // the store's: MASTER_PORT, else DefaultPort
}

// IsSageMaker reports whether env is a SageMaker training job's.
func IsSageMaker(env map[string]string) bool {
	return env["SM_HOSTS"] != "" || env["SM_TRAINING_ENV"] != ""
}

// SageMakerFromEnv reads the job's layout.
func SageMakerFromEnv(env map[string]string) (*SageMaker, error) {
	s := &SageMaker{Root: "/opt/ml", Channels: map[string]string{}, Hyperparameters: map[string]string{}}
	if r := env["MTGRPO_SAGEMAKER_ROOT"]; r != "" {
		s.Root = r
	}
	if err := json.Unmarshal([]byte(env["SM_HOSTS"]), &s.Hosts); err != nil || len(s.Hosts) == 0 {
		return nil, fmt.Errorf("sagemaker: SM_HOSTS %q: want a JSON list of host names", env["SM_HOSTS"])
	}
	s.HostIndex = -1
	for i, h := range s.Hosts {
		if h == env["SM_CURRENT_HOST"] {
			s.HostIndex = i
		}
	}
	if s.HostIndex < 0 {
		return nil, fmt.Errorf("sagemaker: SM_CURRENT_HOST %q is not in SM_HOSTS %v", env["SM_CURRENT_HOST"], s.Hosts)
	}
	var err error
	if s.NumGPUs, err = intVar(env, "SM_NUM_GPUS", false, 0, 1024); err != nil {
		return nil, fmt.Errorf("sagemaker: %w", err)
	}
	if s.port, err = intVar(env, "MASTER_PORT", false, 1, 65535); err != nil {
		return nil, fmt.Errorf("sagemaker: %w", err)
	}
	if s.port == 0 {
		s.port = DefaultPort
	}
	for k, v := range env {
		if name, ok := strings.CutPrefix(k, "SM_CHANNEL_"); ok && v != "" {
			s.Channels[strings.ToLower(name)] = v
		}
	}
	path := filepath.Join(s.Root, "input", "config", "hyperparameters.json")
	b, err := bounded.ReadFile(path, bounded.Small)
	if err != nil && !os.IsNotExist(err) {
		return nil, fmt.Errorf("sagemaker: %w", err)
	}
	if len(b) > 0 {
		var raw map[string]any
		if err := json.Unmarshal(b, &raw); err != nil {
			return nil, fmt.Errorf("sagemaker: %s: %w", path, err)
		}
		for k, v := range raw {
			if str, ok := v.(string); ok {
				s.Hyperparameters[k] = str
			} else {
				j, _ := json.Marshal(v)
				s.Hyperparameters[k] = string(j)
			}
		}
	}
	return s, nil
}

// Procs is the number of processes on each host: one per GPU, or one on a CPU instance.
func (s *SageMaker) Procs() int { return max(s.NumGPUs, 1) }

// CheckpointDir is the run directory; ModelDir receives the exported model.
func (s *SageMaker) CheckpointDir() string { return filepath.Join(s.Root, "checkpoints") }
func (s *SageMaker) ModelDir() string      { return filepath.Join(s.Root, "model") }

// Settings are the configuration overrides of the job, as KEY=VALUE in a stable order: every
// hyperparameter (a configuration key, native or seed layout), the channels' data and model, the
// run directory and, with GPUs, the device.
func (s *SageMaker) Settings() ([]string, error) {
	var out []string
	keys := make([]string, 0, len(s.Hyperparameters))
	for k := range s.Hyperparameters {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		out = append(out, k+"="+s.Hyperparameters[k])
	}
	for _, c := range []struct{ channel, key string }{{"train", "data.train"}, {"validation", "data.val"}, {"test", "data.val"}} {
		if dir, ok := s.Channels[c.channel]; ok {
			f, err := dataFile(dir)
			if err != nil {
				return nil, fmt.Errorf("sagemaker: channel %s: %w", c.channel, err)
			}
			out = append(out, c.key+"="+f)
		}
	}
	if dir, ok := s.Channels["model"]; ok {
		out = append(out, "model="+dir)
	}
	out = append(out, "run_dir="+s.CheckpointDir())
	if s.NumGPUs > 0 {
		out = append(out, "device=cuda")
	}
	return out, nil
}

// Spawn is how the job's processes start on this host: ranks HostIndex·Procs … with the store on
// the first host.
func (s *SageMaker) Spawn(exe string, args []string) SpawnOptions {
	return SpawnOptions{Exe: exe, Args: args, N: s.Procs(), Nodes: len(s.Hosts), NodeRank: s.HostIndex,
		MasterAddr: s.Hosts[0], MasterPort: s.port}
}

// dataFile is the one dataset file (parquet or JSONL) in a channel's directory.
func dataFile(dir string) (string, error) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		return "", err
	}
	var files []string
	for _, e := range ents {
		switch strings.ToLower(filepath.Ext(e.Name())) {
		case ".parquet", ".jsonl", ".json":
			files = append(files, filepath.Join(dir, e.Name()))
		}
	}
	if len(files) != 1 {
		return "", fmt.Errorf("%s: want one .parquet or .jsonl file, found %d", dir, len(files))
	}
	return files[0], nil
}

// rankEnv is the torchrun variables of local rank r.
func rankEnv(o SpawnOptions, r, port int) []string {
	nodes := max(o.Nodes, 1)
	addr := o.MasterAddr
	if addr == "" {
		addr = "127.0.0.1"
	}
	return []string{"WORLD_SIZE=" + strconv.Itoa(nodes*o.N), "RANK=" + strconv.Itoa(o.NodeRank*o.N+r),
		"LOCAL_RANK=" + strconv.Itoa(r), "LOCAL_WORLD_SIZE=" + strconv.Itoa(o.N), "GROUP_RANK=" + strconv.Itoa(o.NodeRank),
		"MASTER_ADDR=" + addr, "MASTER_PORT=" + strconv.Itoa(port)}
}
