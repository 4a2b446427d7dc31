package shard

import (
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
	"github.com/mtgrpo/mtgrpo/torch/safetensors"
)

// zeroTol bounds the difference between the weights of sharded ranks and of one process taking
// the same steps: the ranks add the same gradient terms in another order.
const zeroTol = 1e-4

// onTorch runs fn on the torch thread. Inside fn use t.Error/t.Errorf, never t.Fatal.
func onTorch(t *testing.T, fn func()) {
	t.Helper()
	if err := torch.Run(func() error { fn(); return nil }); err != nil {
		t.Fatal(err)
	}
}

// weights copies m's weights as float32s by name.
func weights(m *model.Model) map[string][]float32 {
	out := map[string][]float32{}
	for _, p := range m.Parameters() {
		out[p.Name] = p.Tensor.ToDType(torch.Float32).Float32s()
	}
	return out
}

// maxDiff is max |a−b| over two weight maps, and the parameter where it is.
func maxDiff(a, b map[string][]float32) (float64, string) {
	d, where := 0.0, ""
	for k, x := range a {
		for i := range x {
			if v := math.Abs(float64(x[i] - b[k][i])); v > d || math.IsNaN(v) {
				d, where = v, fmt.Sprintf("%s[%d]", k, i)
			}
		}
	}
	return d, where
}

// failureLine is the line of a rank's output that says how its failure came.
func failureLine(out string) string {
	for _, l := range strings.Split(out, "\n") {
		if strings.Contains(l, "rank 0 failed after") {
			return l
		}
	}
	return ""
}

// loadState reads a safetensors file into CPU tensors by name.
func loadState(path string) (map[string]*torch.Tensor, error) {
	f, err := safetensors.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st := map[string]*torch.Tensor{}
	for _, name := range f.Names() {
		info, err := f.Info(name)
		if err != nil {
			return nil, err
		}
		dt, err := torch.DTypeOf(info.DType)
		if err != nil {
			return nil, err
		}
		if st[name], err = torch.LoadTensor(f, name, torch.CPU, dt); err != nil {
			return nil, err
		}
	}
	return st, nil
}
