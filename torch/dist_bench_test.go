package torch

import (
	"fmt"
	"regexp"
	"strconv"
	"testing"
	"time"
)

// Gradient averaging cost between two local processes over loopback Gloo: 64 MiB of f32 gradients
// (16 parameters of 1M elements) in 25 MiB persistent buckets, as the trainer's data-parallel step
// does.
const benchGradParams, benchGradElems, benchGradSteps = 16, 1 << 20, 5

func BenchmarkGradBuckets(b *testing.B) {
	var ms float64
	for i := 0; i < b.N; i++ {
		outs := runWorkers(b, "bench", "MASTER_PORT="+strconv.Itoa(freePort(b)), "TORCHELASTIC_USE_AGENT_STORE=")
		m := regexp.MustCompile(`grad_buckets ms=([0-9.]+)`).FindStringSubmatch(outs[0])
		if m == nil {
			b.Fatalf("no timing in worker output:\n%s", outs[0])
		}
		ms, _ = strconv.ParseFloat(m[1], 64)
	}
	b.ReportMetric(ms, "ms/step")
	b.ReportMetric(float64(4*benchGradParams*benchGradElems)/(ms/1000)/1e6, "MB/s")
}

// benchGradBuckets runs in each worker: backward gives every gradient element r+1, then the
// timed steps average them; the result is checked once ((1+2)/2 = 1.5, unchanged by later steps
// because averaging equal values is the identity).
func benchGradBuckets(t *testing.T, pg *ProcessGroup) {
	params := make([]*Tensor, benchGradParams)
	for i := range params {
		params[i] = Zeros([]int64{benchGradElems}, Float32, CPU).SetRequiresGrad(true)
		params[i].MulScalar(float64(pg.Rank() + 1)).Sum(false).Backward()
	}
	bk := pg.NewGradBuckets(params, 0, false)
	defer bk.Close()
	bk.AllReduce(0.5) // warm-up: connections
	start := time.Now()
	for i := 0; i < benchGradSteps; i++ {
		bk.AllReduce(0.5)
	}
	ms := float64(time.Since(start).Microseconds()) / 1000 / benchGradSteps
	if g := params[3].Grad().Narrow(0, 7, 1).Float(); g != 1.5 {
		t.Errorf("averaged gradient %v, want 1.5", g)
	}
	fmt.Printf("grad_buckets ms=%.1f\n", ms)
}
