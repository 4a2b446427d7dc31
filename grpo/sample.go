package grpo

import (
	"math/rand/v2"
	"sort"

	"github.com/mtgrpo/mtgrpo/rollout"
)

// sample is one turn to train on: (c_t masked, o_t trained), with every per-token input of the loss
// aligned to its token positions (index i is token IDs[i]; entries before ScoreFrom and off the
// mask are 0).
type sample struct {
	rollout.Sample
	// traj is the trajectory's index in the step's batch, turn the turn's index in it.
	traj, turn int
	// trained counts the tokens with mask 1.
	trained int
	// adv is the advantage of each token; weight its aggregation weight in its mini-batch.
	adv, weight []float32
	// old and ref are ℓ_old and ℓ_ref (nil when the config does not need them).
	old, ref []float32
	// values and returns are the critic's V and the GAE returns (PPO only).
	values, returns []float32
}

// samplesOf lays out every trained turn of the trajectories as a sample. Turns with nothing
// trained (summary turns left untrained, outputs masked as truncated) are skipped; trajectories
// that failed (Err set) contribute none.
func samplesOf(trajs []*rollout.Trajectory) []*sample {
	var out []*sample
	for i, tr := range trajs {
		if tr.Err != nil {
			continue
		}
		for k, tu := range tr.Turns {
			if !tu.Trained() {
				continue
			}
			s := &sample{Sample: tu.Sample(), traj: i, turn: k}
			for _, m := range s.Mask {
				if m {
					s.trained++
				}
			}
			out = append(out, s)
		}
	}
	return out
}

// miniBatches splits samples into n mini-batches by trajectory (a trajectory's turns stay together,
// so per-trajectory weighting sees all of them), after shuffling the trajectories with rng (nil: in
// order). Trajectories are dealt so the mini-batches differ by at most one trajectory.
func miniBatches(samples []*sample, n int, rng *rand.Rand) [][]*sample {
	byTraj := map[int][]*sample{}
	var trajs []int
	for _, s := range samples {
		if _, ok := byTraj[s.traj]; !ok {
			trajs = append(trajs, s.traj)
		}
		byTraj[s.traj] = append(byTraj[s.traj], s)
	}
	if rng != nil {
		rng.Shuffle(len(trajs), func(i, j int) { trajs[i], trajs[j] = trajs[j], trajs[i] })
	}
	n = max(1, min(n, len(trajs)))
	out := make([][]*sample, n)
	for i, tr := range trajs {
		k := i * n / len(trajs)
		out[k] = append(out[k], byTraj[tr]...)
	}
	return out
}

// pack groups samples into micro-batches whose total length stays within budget tokens (a longer
// sample gets a micro-batch of its own): first-fit over the samples sorted by length, longest first,
// which fills passes well and is deterministic. Each micro-batch is one packed row (no padding).
func pack(samples []*sample, budget int) [][]*sample {
	order := make([]int, len(samples))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(a, b int) bool { return len(samples[order[a]].IDs) > len(samples[order[b]].IDs) })
	var bins [][]*sample
	var room []int
	for _, i := range order {
		s, n := samples[i], len(samples[i].IDs)
		placed := false
		for b := range bins {
			if room[b] >= n {
				bins[b] = append(bins[b], s)
				room[b] -= n
				placed = true
				break
			}
		}
		if !placed {
			bins = append(bins, []*sample{s})
			room = append(room, budget-n)
		}
	}
	return bins
}
