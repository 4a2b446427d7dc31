package job

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/mtgrpo/mtgrpo/cmd/internal/config"
	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/grpo"
	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/internal/bounded"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// A checkpoint directory (written by run.Checkpoints.Save: atomically, with a manifest) holds:
//
//	model/                 the policy as a model directory transformers loads (mtgrpo export copies it)
//	adapter/               instead of model/ with LoRA: the adapters in PEFT's layout, naming the
//	                       base model (path or Hub id, revision, the weights' fingerprint)
//	trainer.safetensors    the trainer's State: optimizer moments and master weights, the critic
//	state.json             the position: steps done, phase, trainer Progress, data position
//	config.yaml            the resolved configuration
const (
	checkpointModel   = "model"
	checkpointAdapter = "adapter"
	checkpointTrainer = "trainer.safetensors"
	checkpointState   = "state.json"
)

// Phases of a run: SFT steps, then RL steps.
const (
	phaseSFT = "sft"
	phaseRL  = "rl"
)

// state is where a run stands. With the weights and the trainer's State it is all a resumed run
// needs: the trainer's randomness depends on Config.Seed and its step count only, and the tasks
// on the data position.
type state struct {
	// Step counts the run's steps done: SFT steps, then RL steps.
	Step int `json:"step"`
	// Phase is the phase of the trainer whose Progress and State are saved (none at the boundary:
	// the RL trainer starts fresh).
	Phase   string        `json:"phase"`
	Trainer grpo.Progress `json:"trainer"`
	// DataPos is how many training tasks the RL steps have drawn.
	DataPos int `json:"data_position"`
	// LoRAPasses is the policy's count of training passes (model.LoRAPasses): a resumed run draws
	// the dropout masks it would have drawn.
	LoRAPasses uint64 `json:"lora_passes,omitempty"`
	// CriticLoRAPasses is the critic's count of training passes, as LoRAPasses (critic_lora).
	CriticLoRAPasses uint64 `json:"critic_lora_passes,omitempty"`
	// CriticBase is the fingerprint of the critic's base weights (model.Fingerprint) when the
	// critic trains adapters (critic_lora; the adapters are in the trainer's State): they
	// continue only on those weights.
	CriticBase string `json:"critic_base,omitempty"`
}

func readState(dir string) (state, error) {
	var st state
	if err := rundir.Verify(dir, true); err != nil {
		return st, err
	}
	b, err := bounded.ReadFile(filepath.Join(dir, checkpointState), bounded.Small)
	if err != nil {
		return st, fmt.Errorf("checkpoint: %w", err)
	}
	if err := json.Unmarshal(b, &st); err != nil {
		return st, fmt.Errorf("checkpoint %s: %s: %w", dir, checkpointState, err)
	}
	if st.Step < 0 || st.DataPos < 0 || (st.Phase != phaseSFT && st.Phase != phaseRL) {
		return st, fmt.Errorf("checkpoint %s: %s: step %d, phase %q, data position %d", dir, checkpointState, st.Step, st.Phase, st.DataPos)
	}
	return st, nil
}

// save writes a checkpoint of the run's current position; tr is the phase's trainer (nil at the
// boundary between SFT and RL). Run on the torch thread.
func (j *job) save(tr *grpo.Trainer) error {
	st := j.st
	if !j.main() {
		// The trainer's State is a collective under ZeRO: every rank takes part, rank 0 writes.
		// (Otherwise it is rank 0's alone; rollout ranks have no optimizer state.)
		if tr != nil && j.o.Dist.Config().Stage != memplan.StageDP {
			s := torch.NewScope()
			defer s.Close()
			tr.State()
		}
		return nil
	}
	st.LoRAPasses, st.CriticBase = j.policy.Model.LoRAPasses(), j.criticBase
	if j.cmodel != nil {
		st.CriticLoRAPasses = j.cmodel.LoRAPasses()
	}
	ck, err := j.run.Checkpoints.Save(st.Step, func(dir string) error {
		if err := savePolicy(j.policy.Model, dir, j.base); err != nil {
			return err
		}
		if tr != nil {
			s := torch.NewScope()
			defer s.Close()
			if err := torch.SaveSafetensors(filepath.Join(dir, checkpointTrainer), tr.State(), nil); err != nil {
				return err
			}
		}
		b, _ := json.MarshalIndent(st, "", "  ")
		if err := os.WriteFile(filepath.Join(dir, checkpointState), b, 0o644); err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dir, rundir.ConfigFile), j.cfg.YAML(), 0o644)
	})
	if err != nil {
		return err
	}
	j.log.Info().Int("step", st.Step).Str("dir", ck.Dir).Msg("checkpoint saved")
	return nil
}

// restoreInto restores the checkpoint's trainer into tr, the new trainer of phase, when the
// checkpoint was saved in that phase; a trainer of any later phase starts fresh.
func (j *job) restoreInto(tr *grpo.Trainer, phase string) error {
	if j.restorePhase != phase {
		return nil
	}
	j.restorePhase = ""
	return j.restore(tr)
}

// restore puts the checkpoint's trainer State and Progress into tr. Run on the torch thread.
func (j *job) restore(tr *grpo.Trainer) error {
	path := filepath.Join(j.o.Checkpoint, checkpointTrainer)
	f, err := safetensors.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil // saved at a phase boundary: the trainer starts fresh
	}
	if err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	defer f.Close()
	s := torch.NewScope()
	defer s.Close()
	dev, err := torch.ParseDevice(j.cfg.Device)
	if err != nil {
		return err
	}
	tensors := map[string]*torch.Tensor{}
	for _, name := range f.Names() {
		info, err := f.Info(name)
		if err != nil {
			return err
		}
		dt, err := torch.DTypeOf(info.DType)
		if err != nil {
			return fmt.Errorf("checkpoint %s: %w", path, err)
		}
		if tensors[name], err = torch.LoadTensor(f, name, dev, dt); err != nil {
			return fmt.Errorf("checkpoint %s: %w", path, err)
		}
	}
	if err := tr.Restore(j.st.Trainer, tensors); err != nil {
		return fmt.Errorf("checkpoint %s: %w", j.o.Checkpoint, err)
	}
	return nil
}

// savePolicy writes the policy into a checkpoint directory: its adapters (LoRA), or the model.
func savePolicy(m *model.Model, dir string, base model.AdapterBase) error {
	if m.LoRA() != nil {
		return m.SaveAdapters(filepath.Join(dir, checkpointAdapter), base)
	}
	return m.Export(filepath.Join(dir, checkpointModel), model.ExportOptions{})
}

// checkpointPolicy is where a resumed run's policy comes from: the checkpoint's model, or the base
// with the checkpoint's adapters. The checkpoint must be of the run's kind (LoRA or not).
func checkpointPolicy(ck, baseDir string, c *config.Config) (dir, adapter string, err error) {
	_, statErr := os.Stat(filepath.Join(ck, checkpointAdapter, model.AdapterConfigFile))
	hasAdapter := statErr == nil
	switch lora := c.PolicyLoRA() != nil; {
	case hasAdapter && !lora:
		return "", "", fmt.Errorf("checkpoint %s holds LoRA adapters, but lora.rank is 0 (%s): resume with the run's lora settings",
			ck, c.Origin("lora.rank"))
	case !hasAdapter && lora:
		return "", "", fmt.Errorf("checkpoint %s holds a whole model, but lora.rank is %d (%s): adapters cannot continue a full run",
			ck, c.LoRA.Rank, c.Origin("lora.rank"))
	case lora:
		return baseDir, filepath.Join(ck, checkpointAdapter), nil
	}
	return filepath.Join(ck, checkpointModel), "", nil
}

// CheckResume checks, before any work, that a checkpoint can continue the run configured by c
// on the base model in modelDir and the critic's in criticDir ("": the configured or the run's
// random one; the critic's: the policy's): the checkpoint is of the run's kind (LoRA or not), and
// adapters, the policy's and the critic's, were trained on these base weights (their fingerprint).
func CheckResume(ck string, c *config.Config, modelDir, criticDir string) error {
	if ck == "" {
		return nil
	}
	if modelDir == "" {
		modelDir = c.Model
	}
	if modelDir == "" {
		modelDir = filepath.Join(c.RunDir, BaseModelDir)
	}
	if err := checkPolicyBase(ck, c, modelDir); err != nil {
		return err
	}
	if criticDir == "" {
		criticDir = c.CriticModel
	}
	if criticDir == "" {
		criticDir = modelDir
	}
	return checkCriticBase(ck, c, criticDir)
}

// checkPolicyBase is CheckResume's check of the policy.
func checkPolicyBase(ck string, c *config.Config, modelDir string) error {
	_, adapter, err := checkpointPolicy(ck, modelDir, c)
	if err != nil || adapter == "" {
		return err
	}
	a, err := model.ReadAdapter(adapter)
	if err != nil || a.Base.Fingerprint == "" {
		return err
	}
	have, err := model.Fingerprint(modelDir)
	if err != nil {
		return err
	}
	if have != a.Base.Fingerprint {
		return fmt.Errorf("checkpoint %s was trained on other base weights (%s, %s) than model %s (%s, from %s): "+
			"adapters continue only on the base they were trained on", ck, a.Base.NameOrPath, a.Base.Fingerprint, modelDir, have, c.Origin("model"))
	}
	return nil
}

// checkCriticBase is CheckResume's check of the critic: a checkpoint whose critic trained
// adapters continues with critic adapters, on the critic base weights they were trained on.
func checkCriticBase(ck string, c *config.Config, criticDir string) error {
	st, err := readState(ck)
	if err != nil || st.CriticBase == "" {
		return err
	}
	g, err := c.Trainer()
	if err != nil {
		return err
	}
	if !g.NeedsCritic() || c.CriticLoRAConfig() == nil {
		return fmt.Errorf("checkpoint %s holds the critic's LoRA adapters, but this run trains no critic adapters "+
			"(critic_lora.rank %d, %s; advantage.estimator %s): resume with the run's critic settings",
			ck, c.CriticLoRA.Rank, c.Origin("critic_lora.rank"), g.Advantage.Estimator)
	}
	have, err := model.Fingerprint(criticDir)
	if err != nil {
		return fmt.Errorf("critic model: %w", err)
	}
	if have != st.CriticBase {
		return fmt.Errorf("checkpoint %s's critic was trained on other base weights (%s) than critic model %s (%s, from %s): "+
			"adapters continue only on the base they were trained on", ck, st.CriticBase, criticDir, have, c.Origin("critic_model"))
	}
	return nil
}

// adapterBase names the base model as the run's adapters record it: the Hub id and revision
// (hub true: the configured model is an id) or the directory's absolute path, and the weights'
// fingerprint.
func adapterBase(c *config.Config, hub bool, baseDir string) (model.AdapterBase, error) {
	var b model.AdapterBase
	var err error
	if hub {
		b.NameOrPath, b.Revision, _ = strings.Cut(c.Model, "@")
	} else if b.NameOrPath, err = filepath.Abs(baseDir); err != nil {
		return b, err
	}
	b.Fingerprint, err = model.Fingerprint(baseDir)
	return b, err
}

// PolicyOf is the policy a checkpoint holds: its model directory, or, for a LoRA run, the base's
// (the adapters' base_model_name_or_path: a directory, or a Hub id for the command to resolve)
// and the adapter directory.
func PolicyOf(checkpoint string) (modelDir, adapter string, err error) {
	dir := filepath.Join(checkpoint, checkpointAdapter)
	if _, err := os.Stat(filepath.Join(dir, model.AdapterConfigFile)); err != nil {
		return filepath.Join(checkpoint, checkpointModel), "", nil
	}
	a, err := model.ReadAdapter(dir)
	if err != nil {
		return "", "", err
	}
	if a.Base.Revision != "" {
		return a.Base.NameOrPath + "@" + a.Base.Revision, dir, nil
	}
	return a.Base.NameOrPath, dir, nil
}

// FindCheckpoint resolves what --resume names: "" or "latest" is the newest complete checkpoint of
// the run directory (ok false when it has none), anything else a checkpoint directory, which must
// be complete. It returns the checkpoint and the run directory it belongs to.
func FindCheckpoint(resume, runDir string) (dir, run string, ok bool, err error) {
	if resume == "" || resume == "latest" {
		if _, err := os.Stat(filepath.Join(runDir, rundir.CheckpointsDir)); errors.Is(err, fs.ErrNotExist) {
			return "", runDir, false, nil
		}
		cs, err := rundir.OpenCheckpoints(filepath.Join(runDir, rundir.CheckpointsDir), 0)
		if err != nil {
			return "", runDir, false, err
		}
		ck, ok, err := cs.Latest()
		return ck.Dir, runDir, ok, err
	}
	if err := rundir.Verify(resume, true); err != nil {
		return "", "", false, fmt.Errorf("--resume %s: %w", resume, err)
	}
	return resume, filepath.Dir(filepath.Dir(filepath.Clean(resume))), true, nil
}

// SavedConfig reads a checkpoint's configuration.
func SavedConfig(checkpoint string) (*config.Config, error) {
	return config.ReadSaved(filepath.Join(checkpoint, rundir.ConfigFile))
}

// ModelOf is the model directory inside a checkpoint.
func ModelOf(checkpoint string) string { return filepath.Join(checkpoint, checkpointModel) }
