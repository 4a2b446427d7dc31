package grpo

import (
	"math/rand/v2"
	"testing"

	"github.com/mtgrpo/mtgrpo/rollout"
)

func lens(bins [][]*sample) [][]int {
	var out [][]int
	for _, b := range bins {
		var l []int
		for _, s := range b {
			l = append(l, len(s.IDs))
		}
		out = append(out, l)
	}
	return out
}

func withLen(n, traj int) *sample {
	return &sample{Sample: rollout.Sample{IDs: make([]int32, n)}, traj: traj}
}

func TestPackFirstFitDecreasing(t *testing.T) {
	var ss []*sample
	for i, n := range []int{3, 9, 4, 12, 5, 2} {
		ss = append(ss, withLen(n, i))
	}
	// Budget 10, longest first: 12 alone (over budget), 9 then nothing fits but... 9 | 5+4 | 3+2.
	// Bins: [12], [9], [5, 4], [3, 2] — first fit puts 3 with 5+4? 5+4 = 9, room 1: no; so [3, 2].
	got := lens(pack(ss, 10))
	want := [][]int{{12}, {9}, {5, 4}, {3, 2}}
	if len(got) != len(want) {
		t.Fatalf("bins %v, want %v", got, want)
	}
	for i := range want {
		if len(got[i]) != len(want[i]) {
			t.Fatalf("bins %v, want %v", got, want)
		}
		for j := range want[i] {
			if got[i][j] != want[i][j] {
				t.Fatalf("bins %v, want %v", got, want)
			}
		}
	}
	// Every sample is placed exactly once.
	n := 0
	for _, b := range pack(ss, 10) {
		n += len(b)
	}
	if n != len(ss) {
		t.Errorf("%d samples placed, want %d", n, len(ss))
	}
}

func TestMiniBatchesKeepTrajectoriesWhole(t *testing.T) {
	var ss []*sample
	for tr := 0; tr < 5; tr++ {
		for k := 0; k <= tr%3; k++ { // 1, 2, 3, 1, 2 turns
			ss = append(ss, withLen(4, tr))
		}
	}
	mbs := miniBatches(ss, 2, rand.New(rand.NewPCG(1, 2)))
	if len(mbs) != 2 {
		t.Fatalf("%d mini-batches, want 2", len(mbs))
	}
	where := map[int]int{}
	trajs := []int{0, 0}
	for k, mb := range mbs {
		seen := map[int]bool{}
		for _, s := range mb {
			if w, ok := where[s.traj]; ok && w != k {
				t.Errorf("trajectory %d split across mini-batches %d and %d", s.traj, w, k)
			}
			where[s.traj] = k
			if !seen[s.traj] {
				seen[s.traj] = true
				trajs[k]++
			}
		}
	}
	// 5 trajectories over 2 mini-batches: 2 and 3.
	if trajs[0]+trajs[1] != 5 || trajs[0] < 2 || trajs[1] < 2 {
		t.Errorf("trajectories per mini-batch %v, want 2 and 3", trajs)
	}
	if n := len(miniBatches(ss, 9, nil)); n != 5 {
		t.Errorf("9 mini-batches of 5 trajectories: got %d, want 5 (one per trajectory)", n)
	}
}
