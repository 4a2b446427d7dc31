package torch

import (
	"fmt"
	"slices"
	"sort"
)

// AdamW's checkpoint format: a flat name → tensor map, written to safetensors as it is.
const (
	stepKey    = "step"    // int64 scalar: Step calls
	skippedKey = "skipped" // int64 scalar: Skip calls
)

// The entries of one parameter, keyed "<name><suffix>". No suffix ends with another, so distinct
// parameter names give distinct keys.
const (
	suffixStep     = ".step"       // int64 scalar: the parameter's own step count
	suffixExpAvg   = ".exp_avg"    // first moment
	suffixExpAvgSq = ".exp_avg_sq" // second moment
	suffixMaster   = ".master"     // float32 master copy (float16/bfloat16 parameters only)
)

// State returns the optimizer state for a checkpoint (SaveSafetensors writes it as it is):
//
//	"step", "skipped"                       int64 scalars: Step and Skip calls
//	"<name>.step"                           int64 scalar: the parameter's own step count
//	"<name>.exp_avg", "<name>.exp_avg_sq"   the moments: float32 (float64 for a float64 parameter)
//	"<name>.master"                         float32 master weights, float16/bfloat16 parameters only
//
// The names are the parameters' names, so a state survives a change in parameter order, and the
// master weights are there because an exact resume needs them (the low-precision weights are only
// their rounding). The moment and master tensors are the live buffers, owned by the optimizer:
// write them out before the next Step. The scalars belong to the current scope.
func (o *AdamW) State() map[string]*Tensor {
	st := map[string]*Tensor{
		stepKey:    Scalar(float64(o.step), Int64, CPU),
		skippedKey: Scalar(float64(o.skipped), Int64, CPU),
	}
	for i, n := range o.names {
		st[n+suffixStep] = Scalar(float64(o.steps[i]), Int64, CPU)
		st[n+suffixExpAvg] = o.m[i]
		st[n+suffixExpAvgSq] = o.v[i]
		if o.master[i] != nil {
			st[n+suffixMaster] = o.master[i]
		}
	}
	return st
}

// stateKeys lists the keys State writes for a parameter (master: whether it has a master copy).
func stateKeys(name string, master bool) []string {
	ks := []string{name + suffixStep, name + suffixExpAvg, name + suffixExpAvgSq}
	if master {
		ks = append(ks, name+suffixMaster)
	}
	return ks
}

// LoadState copies a state written by State (possibly by another process, through safetensors)
// into the optimizer. Every entry is checked first: a missing, unexpected, mis-shaped or
// wrongly typed entry is an error naming it, and on an error the optimizer is unchanged. The
// parameters keep their values: the next Step updates the loaded master weights and writes them
// into the parameters.
func (o *AdamW) LoadState(st map[string]*Tensor) (err error) {
	defer Recover(&err)
	counts := map[string]int64{}
	for _, k := range []string{stepKey, skippedKey} {
		if counts[k], err = countEntry(st, k); err != nil {
			return err
		}
	}
	steps := make([]int64, len(o.params))
	for i, n := range o.names {
		if steps[i], err = countEntry(st, n+suffixStep); err != nil {
			return err
		}
		for _, e := range o.bufferEntries(i) {
			if err := checkEntry(st, e.key, e.dst); err != nil {
				return err
			}
		}
	}
	if err := unexpectedEntries(st, o.expectedKeys()); err != nil {
		return err
	}
	NoGrad(func() {
		for i := range o.params {
			for _, e := range o.bufferEntries(i) {
				e.dst.Copy_(st[e.key])
			}
		}
	})
	o.step, o.skipped = counts[stepKey], counts[skippedKey]
	copy(o.steps, steps)
	return nil
}

type bufferEntry struct {
	key string
	dst *Tensor
}

// bufferEntries pairs parameter i's tensor state keys with the optimizer's buffers.
func (o *AdamW) bufferEntries(i int) []bufferEntry {
	n := o.names[i]
	es := []bufferEntry{{n + suffixExpAvg, o.m[i]}, {n + suffixExpAvgSq, o.v[i]}}
	if o.master[i] != nil {
		es = append(es, bufferEntry{n + suffixMaster, o.master[i]})
	}
	return es
}

func (o *AdamW) expectedKeys() map[string]bool {
	want := map[string]bool{stepKey: true, skippedKey: true}
	for i, n := range o.names {
		for _, k := range stateKeys(n, o.master[i] != nil) {
			want[k] = true
		}
	}
	return want
}

// countEntry reads a count: a one-element integer tensor, >= 0.
func countEntry(st map[string]*Tensor, key string) (int64, error) {
	t, ok := st[key]
	if !ok {
		return 0, fmt.Errorf("torch: AdamW state: missing %q", key)
	}
	if !t.Valid() {
		return 0, fmt.Errorf("torch: AdamW state: %q is nil or freed", key)
	}
	if i := t.Info(); i.Numel != 1 || i.DType.IsFloat() || i.DType == Bool {
		return 0, fmt.Errorf("torch: AdamW state: %q is %s %v, want one int64", key, i.DType, i.Shape)
	}
	n := t.Int()
	if n < 0 {
		return 0, fmt.Errorf("torch: AdamW state: %q is %d, want a count >= 0", key, n)
	}
	return n, nil
}

// checkEntry checks that st[key] can be copied into dst: present, same shape, same dtype.
func checkEntry(st map[string]*Tensor, key string, dst *Tensor) error {
	src, ok := st[key]
	if !ok {
		return fmt.Errorf("torch: AdamW state: missing %q", key)
	}
	if !src.Valid() {
		return fmt.Errorf("torch: AdamW state: %q is nil or freed", key)
	}
	if a, b := src.Shape(), dst.Shape(); !slices.Equal(a, b) {
		return fmt.Errorf("torch: AdamW state: %q has shape %v, want %v", key, a, b)
	}
	if a, b := src.DType(), dst.DType(); a != b {
		return fmt.Errorf("torch: AdamW state: %q is %s, want %s", key, a, b)
	}
	return nil
}

// unexpectedEntries names the keys of st that want lacks (a state of another model or dtype).
func unexpectedEntries(st map[string]*Tensor, want map[string]bool) error {
	var extra []string
	for k := range st {
		if !want[k] {
			extra = append(extra, k)
		}
	}
	if len(extra) == 0 {
		return nil
	}
	sort.Strings(extra)
	more := ""
	if len(extra) > 3 {
		more = fmt.Sprintf(" and %d more", len(extra)-3)
		extra = extra[:3]
	}
	return fmt.Errorf("torch: AdamW state: unexpected entries %q%s (a state of another model, or of "+
		"parameters in another dtype: float16/bfloat16 ones have .master entries)", extra, more)
}
