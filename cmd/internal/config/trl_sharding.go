package config

import (
	"encoding/json"
	"fmt"
	"strconv"
	"strings"

	"gopkg.in/yaml.v3"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// TRL's sharding arguments (the Trainer's fsdp and deepspeed) name a ZeRO stage: dist.zero_stage.

// trlFSDP translates TrainingArguments.fsdp, a space-separated list of options ("full_shard
// auto_wrap"): full_shard is ZeRO-3, shard_grad_op ZeRO-2, no_shard none; auto_wrap is what the
// units already are (the model's layers). Offloading and hybrid sharding have no counterpart.
func trlFSDP(n *yaml.Node) (string, error) {
	var opts []string
	switch n.Kind {
	case yaml.ScalarNode:
		opts = strings.Fields(n.Value)
	case yaml.SequenceNode:
		if err := n.Decode(&opts); err != nil {
			return "", fmt.Errorf("want FSDP options such as \"full_shard auto_wrap\", got %s", shown(n))
		}
	default:
		return "", fmt.Errorf("want FSDP options such as \"full_shard auto_wrap\", got %s", shown(n))
	}
	stage := ""
	for _, o := range opts {
		switch o {
		case "full_shard":
			stage = "3"
		case "shard_grad_op":
			stage = "2"
		case "no_shard":
			stage = "0"
		case "auto_wrap":
		case "offload":
			return "", fmt.Errorf("%q: no offload to the CPU: each rank keeps its shards on its device (dist.zero_stage)", o)
		case "hybrid_shard", "hybrid_shard_zero2":
			return "", fmt.Errorf("%q: no hybrid sharding: every rank shares one sharding (dist.zero_stage)", o)
		default:
			return "", fmt.Errorf("unknown FSDP option %q (want full_shard, shard_grad_op, no_shard or auto_wrap)", o)
		}
	}
	return stage, nil
}

// maxDeepSpeedConfig bounds a DeepSpeed JSON file's size.
const maxDeepSpeedConfig = 1 << 20

// trlDeepSpeed translates TrainingArguments.deepspeed, the path of a DeepSpeed JSON configuration
// (or, in YAML, the configuration itself): its zero_optimization.stage. Offloading the optimizer
// or the parameters (offload_optimizer, offload_param to the CPU or NVMe) has no counterpart.
func trlDeepSpeed(n *yaml.Node) (string, error) {
	var ds struct {
		Zero struct {
			Stage          json.RawMessage `json:"stage"`
			OffloadOpt     *offload        `json:"offload_optimizer"`
			OffloadParam   *offload        `json:"offload_param"`
			CPUOffload     bool            `json:"cpu_offload"`
			CPUOffloadPara bool            `json:"cpu_offload_param"`
		} `json:"zero_optimization"`
	}
	from := "the DeepSpeed configuration"
	switch n.Kind {
	case yaml.ScalarNode:
		from = n.Value
		b, err := bounded.ReadFile(n.Value, maxDeepSpeedConfig)
		if err != nil {
			return "", fmt.Errorf("the DeepSpeed configuration: %w", err)
		}
		if err := json.Unmarshal(b, &ds); err != nil {
			return "", fmt.Errorf("%s: %w", n.Value, err)
		}
	case yaml.MappingNode:
		var m map[string]any
		if err := n.Decode(&m); err != nil {
			return "", err
		}
		b, err := json.Marshal(m)
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(b, &ds); err != nil {
			return "", fmt.Errorf("%s: %w", from, err)
		}
	default:
		return "", fmt.Errorf("want the path of a DeepSpeed JSON file, got %s", shown(n))
	}
	z := ds.Zero
	if z.OffloadOpt.on() || z.OffloadParam.on() || z.CPUOffload || z.CPUOffloadPara {
		return "", fmt.Errorf("%s: zero_optimization offloads to the CPU or NVMe: no offload here, each rank keeps its shards on its device", from)
	}
	if len(z.Stage) == 0 {
		return "0", nil // DeepSpeed's default stage
	}
	stage, err := strconv.Atoi(strings.Trim(string(z.Stage), `"`))
	if err != nil || stage < 0 || stage > 3 {
		return "", fmt.Errorf("%s: zero_optimization.stage %s: want 0, 1, 2 or 3", from, z.Stage)
	}
	return strconv.Itoa(stage), nil
}

// offload is a DeepSpeed offload section: on unless its device is none.
type offload struct {
	Device string `json:"device"`
}

func (o *offload) on() bool { return o != nil && o.Device != "" && o.Device != "none" }
