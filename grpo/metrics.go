package grpo

import (
	"math"
	"sort"
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/rollout"
	"github.com/mtgrpo/mtgrpo/torch"
)

// Metrics are one step's measurements under the names verl and TRL users know
// (critic/score/mean, actor/pg_loss, response_length/mean, timing_s/gen, ...). The caller decides
// where they go (log, metrics.jsonl, TensorBoard).
type Metrics map[string]float64

// Names returns the metric names, sorted.
func (m Metrics) Names() []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// phase names a step's timed phase: its wall time goes to timing_s/<phase> (verl's names).
type phase string

const (
	phaseGen          phase = "gen"           // rollout: generation, environments, rewards
	phaseOldLogProb   phase = "old_log_prob"  // ℓ_old when the policy moves within the batch
	phaseRef          phase = "ref"           // the reference model's log-probs
	phaseValues       phase = "values"        // the critic's values
	phaseAdv          phase = "adv"           // advantages
	phaseUpdateCritic phase = "update_critic" // the critic's update
	phaseUpdateActor  phase = "update_actor"  // the policy's update (SFT's too)
	phaseStep         phase = "step"          // the whole step
)

// key is the phase's metric name.
func (ph phase) key() string { return "timing_s/" + string(ph) }

// timed runs fn and adds its wall time to timing_s/<ph>.
func timed[T any](m Metrics, ph phase, fn func() (T, error)) (T, error) {
	t0 := time.Now()
	v, err := fn()
	m[ph.key()] += time.Since(t0).Seconds()
	return v, err
}

// timedDo is timed for a phase that returns only an error.
func timedDo(m Metrics, ph phase, fn func() error) error {
	_, err := timed(m, ph, func() (struct{}, error) { return struct{}{}, fn() })
	return err
}

// deviceCounts runs fn, a phase on dev, and adds what the CUDA caching allocator and the host did
// meanwhile: perf/<ph>/cuda_allocs and cuda_frees (blocks handed to tensors and given back),
// cuda_mallocs and cuda_frees_to_driver (cudaMalloc and cudaFree calls), cuda_alloc_retries
// (allocations that flushed the cache and tried again: a step at the edge of the memory),
// cuda_ooms, and host_syncs (values copied back to the host, each waiting for the queue to
// drain). What makes an update slower than another of the same work shows here. Only fn's
// error on the CPU.
func (m Metrics) deviceCounts(dev torch.Device, ph phase, fn func() error) error {
	if !dev.IsCUDA() {
		return fn()
	}
	c0, s0 := torch.CUDAAllocCountsOf(dev), torch.HostSyncs()
	err := fn()
	c, p := torch.CUDAAllocCountsOf(dev).Sub(c0), "perf/"+string(ph)+"/"
	m[p+"cuda_allocs"] += float64(c.Allocs)
	m[p+"cuda_frees"] += float64(c.Frees)
	m[p+"cuda_mallocs"] += float64(c.Segments)
	m[p+"cuda_frees_to_driver"] += float64(c.SegmentFree)
	m[p+"cuda_alloc_retries"] += float64(c.Retries)
	m[p+"cuda_ooms"] += float64(c.OOMs)
	m[p+"host_syncs"] += float64(torch.HostSyncs() - s0)
	return err
}

// stat adds mean, max and min of xs under prefix (nothing for an empty xs).
func (m Metrics) stat(prefix string, xs []float64) {
	if len(xs) == 0 {
		return
	}
	lo, hi, sum := math.Inf(1), math.Inf(-1), 0.0
	for _, x := range xs {
		lo, hi, sum = min(lo, x), max(hi, x), sum+x
	}
	m[prefix+"/mean"], m[prefix+"/max"], m[prefix+"/min"] = sum/float64(len(xs)), hi, lo
}

// rolloutStats records what the trajectories look like: scores and reward functions, lengths,
// turns, tool calls and whether one ran (tool_success: 1 for an episode with a tool call that
// ran without an error, else 0; its mean is the share of such episodes), turn rewards, valid
// actions, how episodes ended. The names carry no phase
// prefix: a step adds its headlines (train/), Evaluate puts everything under val/.
func (m Metrics) rolloutStats(trajs []*rollout.Trajectory) {
	var score, turnReward, turns, tools, ran, valid, resp, prompt []float64
	clipped, failed := 0, 0
	fns := map[string][]float64{}
	ends := map[rollout.EndReason]float64{}
	for _, tr := range trajs {
		ends[tr.End]++
		if tr.Err != nil {
			failed++
		}
		score = append(score, tr.Reward)
		turnReward = append(turnReward, tr.Score.TurnReward)
		turns = append(turns, float64(tr.ActionTurns))
		nTools, nRan, nValid := 0, 0, 0
		for _, tu := range tr.Turns {
			resp = append(resp, float64(len(tu.Output)))
			prompt = append(prompt, float64(len(tu.Context)))
			if tu.Finish == rollout.FinishLength {
				clipped++
			}
			nTools += tu.Step.Info.ToolCalls
			nRan += tu.Step.Info.ToolSuccesses
			nValid += tu.Step.Info.NumValidActions()
		}
		tools = append(tools, float64(nTools))
		ok := 0.0
		if nRan > 0 {
			ok = 1
		}
		ran = append(ran, ok)
		valid = append(valid, float64(nValid))
		for k, v := range tr.Score.Metrics {
			fns[k] = append(fns[k], v)
		}
	}
	m.stat("critic/score", score)
	m.stat("critic/turn_reward", turnReward)
	m.stat("num_turns", turns)
	m.stat("tool_call_counts", tools)
	m.stat("tool_success", ran)
	m.stat("num_valid_actions", valid)
	m.stat("response_length", resp)
	m.stat("prompt_length", prompt)
	if len(resp) > 0 {
		m["response_length/clip_ratio"] = float64(clipped) / float64(len(resp))
	}
	for k, vs := range fns {
		// reward/<fn>, turn_reward/<fn>, context/max_tokens: the rubric's own names.
		m.stat(k, vs)
	}
	for end, n := range ends {
		m["episode/end_"+string(end)] = n / float64(len(trajs))
	}
	m["episode/failed"] = float64(failed)
}

// The headline training metrics, under the names the seeds' scripts watch: lenient and strict
// accuracy, the turn reward, and valid actions (tool calls that ran, game moves) per episode.
const (
	TrainAccuracy        = "train/accuracy"
	TrainAccuracyStrict  = "train/accuracy_strict"
	TrainTurnReward      = "train/turn_reward"
	TrainNumValidActions = "train/num_valid_actions"
)

// headline gives a rollout statistic (from) a second, headline name.
type headline struct{ name, from string }

var trainHeadlines = []headline{{TrainAccuracy, "reward/accuracy/mean"}, {TrainAccuracyStrict, "reward/accuracy_strict/mean"},
	{TrainTurnReward, "critic/turn_reward/mean"}, {TrainNumValidActions, "num_valid_actions/mean"}}

// headlines copies each statistic that is present under its headline name.
func (m Metrics) headlines(hs []headline) {
	for _, h := range hs {
		if v, ok := m[h.from]; ok {
			m[h.name] = v
		}
	}
}

// throughput records trained tokens per second over the whole step.
func (m Metrics) throughput(samples []*sample) {
	n := 0
	for _, s := range samples {
		n += len(s.IDs)
	}
	m["perf/total_num_tokens"] = float64(n)
	if s := m[phaseStep.key()]; s > 0 {
		m["perf/throughput"] = float64(n) / s
	}
}

// mfu adds perf/mfu: the actor update's model FLOPs (6 per parameter per token for forward and
// backward, the usual estimate, attention left out) over its time
// and the device's peak. Nothing when the peak is unknown.
func (m Metrics) mfu(params int64, epochs int, peak float64) {
	secs := m[phaseUpdateActor.key()]
	if peak <= 0 || secs <= 0 {
		return
	}
	flops := 6 * float64(params) * m["perf/total_num_tokens"] * float64(epochs)
	m["perf/mfu"] = flops / secs / peak
}

// memory adds the CUDA allocator's peaks since the step began for dev, under verl's names: memory
// held by tensors (perf/max_memory_allocated_gb) and memory the caching allocator held from the
// driver (perf/max_memory_reserved_gb, what nvidia-smi sees of it). Nothing on the CPU.
func (m Metrics) memory(dev torch.Device) {
	if !dev.IsCUDA() {
		return
	}
	st := torch.CUDAMemoryStats(dev)
	m["perf/max_memory_allocated_gb"] = float64(st.Peak) / (1 << 30)
	m["perf/max_memory_reserved_gb"] = float64(st.PeakReserved) / (1 << 30)
}

// graphs adds the decode step's CUDA graphs, when it has any: the memory pool they hold
// (perf/cuda_graph_pool_gb, also in the memory plan) and the graphs captured so far
// (perf/cuda_graph_captures: it grows when a weight or the cache moved and they were captured
// again).
func (m Metrics) graphs(s rollout.Stats) {
	if s.GraphCaptures == 0 {
		return
	}
	m["perf/cuda_graph_pool_gb"] = float64(s.GraphPoolBytes) / (1 << 30)
	m["perf/cuda_graph_captures"] = float64(s.GraphCaptures)
}

// phaseShare adds timing_s/<phase> as fractions of the step (timing_frac/<phase>).
func (m Metrics) phaseShare() {
	step := m[phaseStep.key()]
	if step <= 0 {
		return
	}
	fracs := map[string]float64{}
	for k, v := range m {
		if p, ok := strings.CutPrefix(k, "timing_s/"); ok && p != "step" {
			fracs["timing_frac/"+p] = v / step
		}
	}
	for k, v := range fracs {
		m[k] = v
	}
}
