package torch

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"
)

// Reduce-scatter, gather into a buffer, byte exchange, subgroups and persistent gradient buckets
// (with and without overlap) between two processes over Gloo.
func TestDistributedSharding(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes")
	}
	requireGloo(t)
	runWorkers(t, "shard", "MASTER_PORT="+strconv.Itoa(freePort(t)), "TORCHELASTIC_USE_AGENT_STORE=")
}

// A rank that exits without leaving is reported by the others' watchdogs within the timeout (here
// 2 s of silence, beats every 200 ms), while the survivor is outside any collective.
func TestDistributedWatchdog(t *testing.T) {
	if testing.Short() {
		t.Skip("starts two processes")
	}
	requireGloo(t)
	runWorkers(t, "watchdog", "MASTER_PORT="+strconv.Itoa(freePort(t)), "TORCHELASTIC_USE_AGENT_STORE=")
}

// shardWorker is one rank (of 2) of TestDistributedSharding.
func shardWorker(t *testing.T, pg *ProcessGroup) {
	r := float64(pg.Rank())
	// Reduce-scatter of (r+1)·[1 2 3 4], k = 2: the sum is 3·[1 2 3 4] = [3 6 9 12]; rank 0 gets
	// [3 6], rank 1 [9 12]; averaged, half of that.
	in := FromSlice([]float32{1, 2, 3, 4}).MulScalar(r + 1)
	out := Zeros([]int64{2}, Float32, CPU)
	pg.ReduceScatter(in, out, Sum)
	expectFloats(t, "reduce_scatter", out.Float32s(), []float64{3 + 6*r, 6 + 6*r}, 0)
	pg.ReduceScatter(in, out, Avg)
	expectFloats(t, "reduce_scatter avg", out.Float32s(), []float64{1.5 + 3*r, 3 + 3*r}, 0)
	if err := Do(func() error { pg.ReduceScatter(in, Zeros([]int64{3}, Float32, CPU), Sum); return nil }); err == nil ||
		!strings.Contains(err.Error(), "must be world (2) times output [3]") {
		t.Errorf("reduce_scatter size mismatch: %v", err)
	}
	// Gather of [10r, 10r+1]: [0 1 10 11] on both.
	all := Zeros([]int64{4}, Float32, CPU)
	pg.AllGatherInto(FromSlice([]float32{float32(10 * r), float32(10*r + 1)}), all)
	expectFloats(t, "all_gather_into", all.Float32s(), []float64{0, 1, 10, 11}, 0)
	// Bytes of different lengths, one of them empty.
	mine := []byte{}
	if r == 1 {
		mine = []byte("bcd")
	}
	if got := pg.AllGatherBytes(mine); len(got) != 2 || string(got[0]) != "" || string(got[1]) != "bcd" {
		t.Errorf("AllGatherBytes: %q", got)
	}
	// bfloat16 over Gloo, which has no such type: broadcasts and gathers move the bits, sums go
	// through float32. All values are exact in bf16.
	h := FromSlice([]float32{float32(1.5 + r), -2}).ToDType(BFloat16)
	expectFloats(t, "bf16 broadcast", pg.Broadcast(h, 1).Float32s(), []float64{2.5, -2}, 0)
	hs := FromSlice([]float32{float32(0.5 * (r + 1))}).ToDType(BFloat16)
	expectFloats(t, "bf16 sum", pg.AllReduce(hs, Sum).Float32s(), []float64{1.5}, 0)
	if g := pg.AllGather(FromSlice([]float32{float32(r + 0.25)}).ToDType(BFloat16)); len(g) == 2 {
		expectFloats(t, "bf16 gather", Cat(g, 0).Float32s(), []float64{0.25, 1.25}, 0)
	}
	all16 := Zeros([]int64{2}, BFloat16, CPU)
	pg.AllGatherInto(FromSlice([]float32{float32(r + 0.5)}).ToDType(BFloat16), all16)
	expectFloats(t, "bf16 gather into", all16.Float32s(), []float64{0.5, 1.5}, 0)
	shardStarted(t, pg)
	shardGroups(t, pg)
	shardBuckets(t, pg)
	pg.Barrier()
}

// shardStarted: two all-gathers in flight at once (bfloat16 and float32) with an all-reduce started
// after them, then awaited: each holds what the blocking gather gives; a second Wait is an error.
func shardStarted(t *testing.T, pg *ProcessGroup) {
	r := float64(pg.Rank())
	a16 := Zeros([]int64{4}, BFloat16, CPU)
	a32 := Zeros([]int64{2}, Float32, CPU)
	w1 := pg.AllGatherIntoStart(FromSlice([]float32{float32(r + 0.5), float32(-r)}).ToDType(BFloat16), a16)
	w2 := pg.AllGatherIntoStart(FromSlice([]float32{float32(3 * r)}), a32)
	expectFloats(t, "sum while gathers are in flight", pg.AllReduce(FromSlice([]float32{float32(r + 1)}), Sum).Float32s(), []float64{3}, 0)
	w2.Wait()
	w1.Wait()
	expectFloats(t, "started bf16 gather", a16.Float32s(), []float64{0.5, 0, 1.5, -1}, 0)
	expectFloats(t, "started gather", a32.Float32s(), []float64{0, 3}, 0)
	if err := Do(func() error { w1.Wait(); return nil }); err == nil || !strings.Contains(err.Error(), "waited twice") {
		t.Errorf("a second Wait: %v", err)
	}
}

// shardGroups: a group of rank 1 alone (rank 0 gets nil), then a group of both, whose sums work.
func shardGroups(t *testing.T, pg *ProcessGroup) {
	r := float64(pg.Rank())
	solo, err := pg.NewGroup([]int{1}, 0)
	switch {
	case err != nil:
		t.Errorf("NewGroup([1]): %v", err)
	case (solo != nil) != (r == 1):
		t.Errorf("rank %v: NewGroup([1]) gave %v", r, solo)
	case solo != nil:
		if solo.Rank() != 0 || solo.Size() != 1 {
			t.Errorf("solo group: rank %d size %d", solo.Rank(), solo.Size())
		}
		expectFloats(t, "solo sum", solo.AllReduce(FromSlice([]float32{7}), Sum).Float32s(), []float64{7}, 0)
		if err := solo.Close(); err != nil {
			t.Error(err)
		}
	}
	both, err := pg.NewGroup([]int{0, 1}, 0)
	if err != nil || both == nil {
		t.Errorf("NewGroup([0 1]): %v %v", both, err)
		return
	}
	expectFloats(t, "group sum", both.AllReduce(FromSlice([]float32{float32(r + 1)}), Sum).Float32s(), []float64{3}, 0)
	if err := both.Close(); err != nil {
		t.Error(err)
	}
}

// shardBuckets: a [3] f32, b [2] f32, c [2] bf16 with 8-byte buckets laid out from the last
// parameter: {c} (8 bytes: full; bf16 travels as float32 over Gloo), {b}, {a}: three buckets of
// 28 bytes in all. Gradients of
// (r+1)·Σa + [r = 1]·2·Σb + 3(r+1)·Σc summed over ranks: a 1+2 = 3, b 0+2 = 2, c 3+6 = 9.
func shardBuckets(t *testing.T, pg *ProcessGroup) {
	r := float64(pg.Rank())
	a := FromSlice([]float32{1, 2, 3}).SetRequiresGrad(true)
	b := FromSlice([]float32{5, 6}).SetRequiresGrad(true)
	c := FromSlice([]float32{7, 8}).ToDType(BFloat16).SetRequiresGrad(true)
	frozen := FromSlice([]float32{9})
	params := []*Tensor{a, frozen, b, c}
	loss := func() {
		l := a.MulScalar(r + 1).Sum(false).Add(c.ToDType(Float32).MulScalar(3 * (r + 1)).Sum(false))
		if r == 1 {
			l = l.Add(b.MulScalar(2).Sum(false))
		}
		l.Backward()
	}
	check := func(what string, scale float64) {
		expectFloats(t, what+" a", a.Grad().Float32s(), []float64{3 * scale, 3 * scale, 3 * scale}, 0)
		expectFloats(t, what+" b", b.Grad().Float32s(), []float64{2 * scale, 2 * scale}, 0)
		expectFloats(t, what+" c", c.Grad().Float32s(), []float64{9 * scale, 9 * scale}, 0)
		if frozen.Grad() != nil {
			t.Errorf("%s: the frozen tensor got a gradient", what)
		}
		ZeroGrad(params)
	}
	plain := pg.NewGradBuckets(params, 8, false)
	defer plain.Close()
	if plain.Buckets() != 3 || plain.Bytes() != 3*4+2*4+2*4 {
		t.Errorf("buckets %d of %d bytes, want 3 of 28", plain.Buckets(), plain.Bytes())
	}
	for step, scale := range []float64{1, 0.5} { // the same buffers twice: sum, then average
		loss()
		plain.AllReduce(scale)
		check(fmt.Sprintf("plain step %d", step), scale)
	}
	over := pg.NewGradBuckets(params, 8, true)
	defer over.Close()
	over.Arm()
	loss()
	over.AllReduce(1)
	check("overlapped", 1)
	// A second backward through a after its bucket was sent: every rank's a gets 1 more per rank,
	// and the sums must include it (a = 3 + 2 = 5), through the re-reduction.
	over.Arm()
	loss()
	a.Sum(false).Backward()
	over.AllReduce(1)
	expectFloats(t, "stale a", a.Grad().Float32s(), []float64{5, 5, 5}, 0)
	ZeroGrad(params)
	// Rank 0 arms and computes nothing; rank 1 backpropagates 2·Σa: a = 2, b and c zeros.
	over.Arm()
	if r == 1 {
		a.MulScalar(2).Sum(false).Backward()
	}
	over.AllReduce(1)
	expectFloats(t, "one-sided a", a.Grad().Float32s(), []float64{2, 2, 2}, 0)
	expectFloats(t, "one-sided c", c.Grad().Float32s(), []float64{0, 0}, 0)
}

// watchdogWorker is one rank (of 2) of TestDistributedWatchdog: rank 1 starts its watchdog and
// exits without stopping it; rank 0 must hear of it within the timeout plus a few beats.
func watchdogWorker(t *testing.T, pg *ProcessGroup) {
	w, err := pg.StartWatchdog(200*time.Millisecond, 2*time.Second)
	if err != nil {
		t.Error(err)
		return
	}
	if err := Run(func() error { pg.Barrier(); return nil }); err != nil {
		t.Error(err)
		return
	}
	if pg.Rank() == 1 {
		fmt.Printf("dist worker rank 1 ok\n")
		os.Exit(0) // gone without leaving
	}
	start := time.Now()
	select {
	case err := <-w.Failed():
		if !strings.Contains(err.Error(), "rank 1 of 2 sent no heartbeat") {
			t.Errorf("watchdog: %v", err)
		}
		t.Logf("watchdog after %v: %v", time.Since(start), err)
	case <-time.After(10 * time.Second):
		t.Error("the watchdog did not report rank 1 within 10 s")
	}
	if err := w.Stop(); err != nil {
		t.Error(err)
	}
}
