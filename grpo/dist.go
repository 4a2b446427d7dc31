package grpo

import (
	"fmt"
	"math"
	"sort"
	"time"

	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/grpo/shard"
	"github.com/mtgrpo/mtgrpo/internal/setting"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Data-parallel training: one process per device, all running the same Trainer over c10d
// (torch.ProcessGroup: Gloo on the CPU, NCCL on CUDA). What each rank does, and why the result is
// the single-process one:
//
//   - New broadcasts rank 0's weights, so every rank starts from the same policy (and critic).
//   - Rollout: every rank draws the same tasks from its TaskSource (same data, seed and position)
//     and plays a contiguous share of them, numbering its episodes from their place in the whole
//     batch (rollout.DriverConfig.FirstIndex): the sampling seeds, hence the trajectories, are the
//     ones a single process would have generated. The trajectories are then exchanged
//     (package grpo/exchange), so that every rank holds the whole batch in single-process order.
//   - Rewards, group statistics, advantages, dynamic sampling and the rollout metrics are computed
//     on the whole batch by every rank alike (cheap host math): they equal the single-process
//     ones exactly.
//   - Scoring passes (ℓ_old, ℓ_ref, values) run on each rank's share of the trajectories and their
//     results are exchanged.
//   - The update: mini-batches are drawn from the whole batch with the same generator on every
//     rank; aggregation weights come from the whole mini-batch (its global token and sequence
//     counts); each rank backpropagates its share of the mini-batch's trajectories (balanced by
//     tokens) and the gradients are summed across ranks through persistent buckets. Because every
//     token's weight already is its share of the mini-batch's loss, the sum is the single-process
//     gradient; only the order of additions differs (float rounding).
//   - Loss statistics are summed (maxima maxed) across ranks before they are read.
//   - With ZeRO-1, -2 or -3 (DistConfig.Stage) each rank keeps a 1/N shard of the float32
//     masters and AdamW moments, at stage 2 and 3 of the gradients, at stage 3 of the weights
//     during the update (the policy's optimizer: package grpo/shard).
//   - With rollout ahead (DistConfig.RolloutRanks) some ranks only generate, one batch ahead of
//     the ranks that train (dist_ahead.go).
//
// Checkpoints, logs, reports and export are the caller's, written by the main rank (IsMain);
// State is a collective under ZeRO (any stage) and must then be called on every training rank.

// DistConfig is data parallelism's settings: a run's dist: section (its keys the yaml names
// below), which applies when the run has several processes.
type DistConfig struct {
	// Stage is the ZeRO stage of the policy's training. StageZeRO1 shards the optimizer state
	// (float32 master weights and AdamW moments) across the training ranks: gradients are
	// reduce-scattered at the end of each mini-batch, each rank updates its shard, the weights are
	// all-gathered (grpo/shard). StageZeRO2 also shards the gradients: they are reduce-scattered
	// after every backward pass into the float32 shard, never accumulated whole across
	// micro-batches. StageZeRO3 also shards the weights in the update: a unit's are gathered
	// for its forward and again for its (checkpointed) backward, the whole policy for generation
	// (grpo/shard). DeepSpeed's zero_optimization.stage.
	Stage memplan.Stage `yaml:"zero_stage"`
	// BucketBytes is the size of a gradient bucket (0: torch.DefaultBucketBytes, DDP's 25 MB).
	BucketBytes int64 `yaml:"-"`
	// Overlap starts each bucket's all-reduce during the last backward pass of a mini-batch, as
	// soon as its gradients are ready (plain data parallelism only).
	Overlap bool `yaml:"overlap"`
	// RolloutRanks is the number of ranks (the last ones) that only generate, one batch ahead of
	// the others, which only train: rollout ahead of training. 0: every rank does both.
	RolloutRanks int `yaml:"rollout_ranks"`
	// Timeout bounds rendezvous and every collective: a rank that died or hangs makes the others
	// stop with an error naming it within this time (0: the process group's, 30 minutes).
	Timeout time.Duration `yaml:"timeout"`
}

// Validate names the first bad setting by its key (dist.*, a setting.KeyError).
func (c DistConfig) Validate() error {
	err := setting.Check(setting.In("dist.zero_stage", int(c.Stage), int(memplan.StageDP), int(memplan.StageZeRO3)),
		setting.In("dist.rollout_ranks", c.RolloutRanks, 0, setting.MaxCount), setting.AtLeast("dist.timeout", c.Timeout, 0),
		setting.AtLeast("dist.bucket_bytes", c.BucketBytes, 0))
	if err == nil && c.RolloutRanks > 0 && c.Stage != memplan.StageDP {
		return setting.Errorf("dist.rollout_ranks", "%d rollout ranks with ZeRO stage %d: the rollout ranks would need every shard; set dist.zero_stage 0",
			c.RolloutRanks, int(c.Stage))
	}
	return err
}

// ValidateDist checks d (DistConfig.Validate) and what data parallelism with d needs of c:
// ZeRO-3 gathers each layer again for its backward pass (gradient checkpointing); rollout ahead
// trains one step off-policy (importance sampling) and cannot sample dynamically.
func (c *Config) ValidateDist(d DistConfig) error {
	if err := d.Validate(); err != nil {
		return err
	}
	switch {
	case d.Stage == memplan.StageZeRO3 && !c.Update.Checkpoint:
		return setting.Errorf("dist.zero_stage", "3: ZeRO-3 gathers each layer again for its backward pass: set update.gradient_checkpointing")
	case d.RolloutRanks > 0 && c.DAPO.DynamicSampling:
		return setting.Errorf("dist.rollout_ranks", "%d: rollout ahead does not support dapo.dynamic_sampling (the rollout ranks would need every rank's rewards)",
			d.RolloutRanks)
	case d.RolloutRanks > 0 && !c.Loss.IS.on():
		return setting.Errorf("dist.rollout_ranks", "%d: rollout ahead trains one step off-policy: set loss.is (importance sampling), e.g. %s",
			d.RolloutRanks, ISTokenTruncate)
	}
	return nil
}

// Dist is a trainer's place in data-parallel training. The nil *Dist is a single process: every
// method works on it, with rank 0 of 1.
type Dist struct {
	pg    *torch.ProcessGroup // every rank
	train *torch.ProcessGroup // the ranks that train (pg without rollout ahead; nil on rollout ranks)
	cfg   DistConfig
}

// NewDist takes part in data-parallel training over pg with the settings c. Every rank must call
// it with the same settings; call on the torch thread.
func NewDist(pg *torch.ProcessGroup, c DistConfig) (*Dist, error) {
	if pg == nil {
		return nil, fmt.Errorf("grpo: dist: no process group")
	}
	if err := c.Validate(); err != nil {
		return nil, fmt.Errorf("grpo: dist: %w", err)
	}
	d := &Dist{pg: pg, train: pg, cfg: c}
	if c.RolloutRanks == 0 {
		return d, nil
	}
	if c.RolloutRanks >= pg.Size() {
		return nil, fmt.Errorf("grpo: dist: %d rollout ranks leave no rank to train (world size %d)", c.RolloutRanks, pg.Size())
	}
	trainers := make([]int, pg.Size()-c.RolloutRanks)
	for i := range trainers {
		trainers[i] = i
	}
	var err error
	if d.train, err = pg.NewGroup(trainers, c.Timeout); err != nil {
		return nil, fmt.Errorf("grpo: dist: the trainers' group: %w", err)
	}
	return d, nil
}

// Rank is this process's rank (0 for a single process); Size the number of ranks (1).
func (d *Dist) Rank() int {
	if d == nil {
		return 0
	}
	return d.pg.Rank()
}

func (d *Dist) Size() int {
	if d == nil {
		return 1
	}
	return d.pg.Size()
}

// IsMain reports whether this rank writes the run's checkpoints, logs, reports and export (rank 0).
func (d *Dist) IsMain() bool { return d.Rank() == 0 }

// Config is the settings the Dist was made with.
func (d *Dist) Config() DistConfig {
	if d == nil {
		return DistConfig{}
	}
	return d.cfg
}

// ProcessGroup is the group of every rank (nil for a single process).
func (d *Dist) ProcessGroup() *torch.ProcessGroup {
	if d == nil {
		return nil
	}
	return d.pg
}

// ahead reports whether ranks are split into rollout and training ranks.
func (d *Dist) ahead() bool { return d != nil && d.cfg.RolloutRanks > 0 }

// generates reports whether this rank only generates (rollout ahead).
func (d *Dist) generates() bool { return d.ahead() && d.train == nil }

// trainers is the number of ranks that train, and this rank's place among them (-1 on a rollout
// rank).
func (d *Dist) trainers() (n, me int) {
	switch {
	case d == nil:
		return 1, 0
	case d.train == nil:
		return d.pg.Size() - d.cfg.RolloutRanks, -1
	}
	return d.train.Size(), d.train.Rank()
}

// players is the number of ranks that generate and this rank's place among them (-1 on a rank
// that only trains).
func (d *Dist) players() (n, me int) {
	switch {
	case d == nil:
		return 1, 0
	case !d.ahead():
		return d.pg.Size(), d.pg.Rank()
	}
	first := d.pg.Size() - d.cfg.RolloutRanks
	if d.pg.Rank() < first {
		return d.cfg.RolloutRanks, -1
	}
	return d.cfg.RolloutRanks, d.pg.Rank() - first
}

// span is part k of n items split into parts contiguous parts that differ by at most one item.
func span(n, parts, k int) (lo, hi int) {
	if k < 0 {
		return 0, 0
	}
	return k * n / parts, (k + 1) * n / parts
}

// check refuses what data parallelism does not support with cfg (Config.ValidateDist).
func (d *Dist) check(cfg Config) error {
	if d == nil {
		return nil
	}
	if err := cfg.ValidateDist(d.cfg); err != nil {
		return fmt.Errorf("grpo: dist: %w", err)
	}
	return nil
}

// broadcastWeights gives every rank rank 0's policy weights (and the trainers rank 0's critic).
func (d *Dist) broadcastWeights(ms Models) error {
	if d == nil {
		return nil
	}
	err := torch.Collective(d.pg, "broadcasting rank 0's weights", func() {
		d.pg.BroadcastAll(ms.Policy.ParameterTensors(), 0)
		if ms.Critic != nil && d.train != nil {
			d.train.BroadcastAll(ms.Critic.tensors(), 0)
		}
	})
	if err != nil {
		return fmt.Errorf("grpo: %w", err)
	}
	return nil
}

// newOptimizer makes an optimizer of params over the training ranks (nil for a single process)
// with o's AdamW settings, clipping at maxNorm: the policy's at DistConfig.Stage by its units u,
// the critic's (policy false) whole on every rank.
func (d *Dist) newOptimizer(params []torch.NamedTensor, u shard.Units, o OptimConfig, maxNorm float64, policy bool) (*shard.Optimizer, error) {
	s := shard.Settings{Beta1: o.Beta1, Beta2: o.Beta2, Eps: o.Eps, WeightDecay: o.WeightDecay, MaxGradNorm: maxNorm}
	if d != nil {
		s.BucketBytes, s.Overlap = d.cfg.BucketBytes, d.cfg.Overlap
		if policy {
			s.Stage = d.cfg.Stage
		}
	}
	return shard.New(params, u, d.trainGroup(), s)
}

// share is this rank's part of samples for the scoring passes and the update: whole trajectories
// (their turns stay together), dealt to the training ranks so that their token counts balance
// (longest trajectory first to the rank with the fewest tokens; ties to the lower rank and the
// earlier trajectory), the same on every rank. A single process gets everything, in order.
func (d *Dist) share(samples []*sample) []*sample {
	n, me := d.trainers()
	if n == 1 {
		return samples
	}
	owner := owners(samples, n)
	var out []*sample
	for _, s := range samples {
		if owner[s.traj] == me {
			out = append(out, s)
		}
	}
	return out
}

// owners assigns each trajectory of samples to one of n ranks (see Dist.share).
func owners(samples []*sample, n int) map[int]int {
	tokens := map[int]int{}
	var trajs []int
	for _, s := range samples {
		if _, ok := tokens[s.traj]; !ok {
			trajs = append(trajs, s.traj)
		}
		tokens[s.traj] += len(s.IDs)
	}
	sort.SliceStable(trajs, func(a, b int) bool { return tokens[trajs[a]] > tokens[trajs[b]] })
	load := make([]int, n)
	owner := map[int]int{}
	for _, tr := range trajs {
		best := 0
		for r := 1; r < n; r++ {
			if load[r] < load[best] {
				best = r
			}
		}
		owner[tr] = best
		load[best] += tokens[tr]
	}
	return owner
}

// Close leaves the trainers' group (the process group is the caller's).
func (d *Dist) Close() error {
	if d == nil || d.train == nil || d.train == d.pg {
		return nil
	}
	return d.train.Close()
}

// reduceStats sums the loss statistics of acc across the training ranks (maxima maxed), so that
// every rank reports the whole batch's metrics. A rank that trained nothing takes part with
// empty statistics of layout l.
func (d *Dist) reduceStats(acc *statAcc, l *statLayout) error {
	if d == nil || d.train == nil || d.train.Size() == 1 {
		return nil
	}
	return torch.Collective(d.train, "summing the loss statistics", func() {
		acc.scope.With(func() {
			t := acc.st.Tensor()
			if t == nil {
				vals := make([]float64, l.nSum+l.nMax)
				for i := l.nSum; i < len(vals); i++ {
					vals[i] = math.Inf(-1)
				}
				t = torch.FromSlice(vals).ToDevice(d.train.Device())
				acc.st = Stats{t: t, l: l}
			}
			d.train.AllReduce(t.Narrow(0, 0, int64(l.nSum)), torch.Sum)
			if l.nMax > 0 {
				d.train.AllReduce(t.Narrow(0, int64(l.nSum), int64(l.nMax)), torch.Max)
			}
		})
	})
}

// playShare is the range of a round's n tasks this rank plays: a contiguous share among the ranks
// that generate (all of them without rollout ahead), [0, n) for a single process, empty on a
// rank that only trains.
func (d *Dist) playShare(n int) (lo, hi int) {
	parts, me := d.players()
	return span(n, parts, me)
}

// sum adds x over the training ranks (x for a single process).
func (d *Dist) sum(x float64) (float64, error) {
	if d == nil || d.train == nil || d.train.Size() == 1 {
		return x, nil
	}
	err := torch.Collective(d.train, "summing a metric", func() {
		x = d.train.AllReduce(torch.FromSlice([]float64{x}).ToDevice(d.train.Device()), torch.Sum).Float()
	})
	return x, err
}

// all is the group of every rank, trainGroup that of the training ranks (nil for a single
// process; trainGroup is nil on a rank that only generates).
func (d *Dist) all() *torch.ProcessGroup {
	if d == nil {
		return nil
	}
	return d.pg
}

func (d *Dist) trainGroup() *torch.ProcessGroup {
	if d == nil {
		return nil
	}
	return d.train
}

// evalShare is the range of n evaluation tasks this rank plays: a contiguous share among the
// training ranks ([0, n) for a single process, empty on a rank that only generates).
func (d *Dist) evalShare(n int) (lo, hi int) {
	parts, me := d.trainers()
	return span(n, parts, me)
}
