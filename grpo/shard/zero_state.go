package shard

import (
	"fmt"
	"slices"
	"sort"

	"github.com/mtgrpo/mtgrpo/torch"
)

// The checkpoint of a sharded optimizer (ZeRO-1, -2 or -3) is the unsharded one's
// (torch.AdamW.State): whole tensors keyed by parameter name, gathered from the shards when saved
// and cut into this rank's slices when loaded. That costs a gather at each checkpoint (in rounds of a bucket, into host
// memory) and buys a checkpoint that does not depend on the world size: a run checkpointed on 8
// ranks, sharded, resumes on 1, unsharded, and the other way round.

// Entry names of torch.AdamW's state (see torch/optim_state.go).
const (
	keyStep, keySkipped                          = "step", "skipped"
	sufStep, sufExpAvg, sufExpAvgSq, sufMasterSt = ".step", ".exp_avg", ".exp_avg_sq", ".master"
)

// state gathers the whole optimizer state from every rank (a collective: call it on every
// training rank). The tensors are on the CPU, in the current scope.
func (z *zero) state() map[string]*torch.Tensor {
	mine := z.opt.State()
	out := map[string]*torch.Tensor{keyStep: mine[keyStep], keySkipped: mine[keySkipped]}
	flats := map[string]*torch.Tensor{sufMasterSt: z.master}
	for _, suf := range []string{sufExpAvg, sufExpAvgSq} {
		flat := torch.Zeros([]int64{z.local}, torch.Float32, z.pg.Device())
		for _, pc := range z.pieces {
			flat.Narrow(0, pc.off, pc.n).Copy_(mine[z.names[pc.param]+suf])
		}
		flats[suf] = flat
	}
	steps := z.paramSteps(mine)
	for _, u := range z.units {
		hosts := map[string]*torch.Tensor{}
		for _, suf := range []string{sufMasterSt, sufExpAvg, sufExpAvgSq} { // one order on every rank
			hosts[suf] = z.gatherHost(u, flats[suf].Narrow(0, u.local, u.shard))
		}
		for k, i := range u.params {
			shape, n := z.shapes[i], z.numel(i)
			whole := func(suf string) *torch.Tensor { return hosts[suf].Narrow(0, u.offs[k], n).Reshape(shape...) }
			name := z.names[i]
			out[name+sufExpAvg], out[name+sufExpAvgSq] = whole(sufExpAvg), whole(sufExpAvgSq)
			if z.params[i].DType() != torch.Float32 {
				out[name+sufMasterSt] = whole(sufMasterSt)
			}
			out[name+sufStep] = torch.Scalar(float64(steps[i]), torch.Int64, torch.CPU)
		}
	}
	return out
}

// gatherHost all-gathers unit u's [shard] tensor of every rank into one [world·shard] host
// tensor, in rounds of z.buf (no device tensor of the unit's size).
func (z *zero) gatherHost(u *flatUnit, shard *torch.Tensor) *torch.Tensor {
	world := int64(z.pg.Size())
	host := torch.Zeros([]int64{world * u.shard}, torch.Float32, torch.CPU)
	z.rounds(u, func(from, n int64) {
		out := z.buf.Narrow(0, 0, world*n)
		z.pg.AllGatherInto(shard.Narrow(0, from, n), out)
		for r := int64(0); r < world; r++ {
			host.Narrow(0, r*u.shard+from, n).Copy_(out.Narrow(0, r*n, n))
		}
	})
	return host
}

// paramSteps is every parameter's own step count: each rank knows those of the parameters it
// holds a piece of, and a max over the ranks fills in the rest (pieces of one parameter always
// share their count).
func (z *zero) paramSteps(mine map[string]*torch.Tensor) []int64 {
	local := make([]float64, len(z.names))
	for _, pc := range z.pieces {
		local[pc.param] = float64(mine[z.names[pc.param]+sufStep].Int())
	}
	all := z.pg.AllReduce(torch.FromSlice(local).ToDevice(z.pg.Device()), torch.Max).Float64s()
	out := make([]int64, len(all))
	for i, v := range all {
		out[i] = int64(v)
	}
	return out
}

// loadState takes a whole state (from State, or from an unsharded optimizer of the same
// parameters, at any world size) and keeps this rank's slices. Every entry is checked first: an
// error names it and changes nothing. Float32 parameters have no master entry: their shard of
// masters is reloaded from the parameters (which the caller restored).
func (z *zero) loadState(st map[string]*torch.Tensor) (err error) {
	defer torch.Recover(&err)
	if err := z.checkWhole(st); err != nil {
		return err
	}
	sub := map[string]*torch.Tensor{keyStep: st[keyStep], keySkipped: st[keySkipped]}
	slice := func(pc piece, key string) *torch.Tensor {
		return st[key].Reshape(-1).Narrow(0, pc.at, pc.n).ToDevice(z.pg.Device())
	}
	for _, pc := range z.pieces {
		name := z.names[pc.param]
		sub[name+sufStep] = st[name+sufStep]
		sub[name+sufExpAvg], sub[name+sufExpAvgSq] = slice(pc, name+sufExpAvg), slice(pc, name+sufExpAvgSq)
	}
	if err := z.opt.LoadState(sub); err != nil {
		return fmt.Errorf("shard: zero: %w", err)
	}
	torch.NoGrad(func() {
		for _, pc := range z.pieces {
			name := z.names[pc.param]
			if m, ok := st[name+sufMasterSt]; ok {
				pc.master.Copy_(m.Reshape(-1).Narrow(0, pc.at, pc.n))
			} else {
				pc.master.Copy_(z.params[pc.param].Reshape(-1).Narrow(0, pc.at, pc.n))
			}
		}
	})
	return nil
}

// checkWhole checks a whole state against the parameters: the counts, every parameter's
// moments (float32, its shape), a master for each bfloat16/float16 parameter, nothing else.
func (z *zero) checkWhole(st map[string]*torch.Tensor) error {
	want := map[string]bool{keyStep: true, keySkipped: true}
	for _, k := range []string{keyStep, keySkipped} {
		if t, ok := st[k]; !ok || !t.Valid() || t.Numel() != 1 {
			return fmt.Errorf("shard: zero: optimizer state: %q is missing or not a count", k)
		}
	}
	for i, name := range z.names {
		keys := []string{name + sufExpAvg, name + sufExpAvgSq}
		if z.params[i].DType() != torch.Float32 {
			keys = append(keys, name+sufMasterSt)
		}
		for _, k := range keys {
			t, ok := st[k]
			switch {
			case !ok || !t.Valid():
				return fmt.Errorf("shard: zero: optimizer state: missing %q", k)
			case !slices.Equal(t.Shape(), z.params[i].Shape()):
				return fmt.Errorf("shard: zero: optimizer state: %q has shape %v, want %v", k, t.Shape(), z.params[i].Shape())
			case t.DType() != torch.Float32:
				return fmt.Errorf("shard: zero: optimizer state: %q is %s, want float32", k, t.DType())
			}
			want[k] = true
		}
		if t, ok := st[name+sufStep]; !ok || !t.Valid() || t.Numel() != 1 {
			return fmt.Errorf("shard: zero: optimizer state: %q is missing or not a count", name+sufStep)
		}
		want[name+sufStep] = true
	}
	var extra []string
	for k := range st {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) > 0 {
		sort.Strings(extra)
		return fmt.Errorf("shard: zero: optimizer state: unexpected entries %q (a state of another model or dtype)", extra)
	}
	return nil
}
