// Package exchange is what data-parallel ranks send each other during a training step: host
// data, encoded here and carried by torch.ProcessGroup.AllGatherBytes.
//
//   - Trajectories gives every rank the trajectories every rank played, in rank order, so that
//     each holds the whole batch in single-process order. The task stays home: every rank drew the
//     same tasks, so the receiver takes its own, checked by ID (a rank whose task source drifted
//     is named); an episode's error travels as its text.
//   - Scores gives every rank the per-token values (log-probs, values) of the scoring passes each
//     rank ran on its share of the samples: each entry is the sample's index, its length and its
//     values, little-endian, and an entry whose index or length disagrees with the receiver's
//     batch is refused, naming the rank.
//
// A nil group, or a group of one, exchanges nothing. Every function is a collective: every rank
// of the group calls it, in the same order.
package exchange
