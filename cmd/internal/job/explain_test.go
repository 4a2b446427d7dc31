package job

import (
	"errors"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

// A failed torch op's message gets a sentence of ours in front; other errors, and torch errors
// that something already explained, stay as they are.
func TestExplainTorch(t *testing.T) {
	raw := &torch.Error{Op: "empty", Msg: "Could not run 'aten::empty_strided' with arguments from the 'CUDA' backend."}
	err := error(raw)
	ExplainTorch(&err)
	if !strings.HasPrefix(err.Error(), "stopped by an error inside libtorch") || !strings.HasSuffix(err.Error(), raw.Error()) || !errors.Is(err, raw) {
		t.Errorf("explained: %v", err)
	}
	for _, e := range []error{nil, errors.New("data.train: no rows"), errors.Join(errors.New("model x"), raw)} {
		got := e
		ExplainTorch(&got)
		if got != e {
			t.Errorf("%v became %v", e, got)
		}
	}
}

// A torch op that panics in a function deferring Recover then ExplainTorch, as Train does, ends
// as an explained error that the deferred log sees.
func TestTrainDefersExplainPanics(t *testing.T) {
	var logged error
	f := func() (err error) {
		defer func() { logged = err }()
		defer ExplainTorch(&err)
		defer torch.Recover(&err)
		panic(&torch.Error{Op: "matmul", Msg: "shape mismatch"})
	}
	if err := f(); err == nil || logged != err || !strings.Contains(err.Error(), "inside libtorch") {
		t.Errorf("returned %v, logged %v", err, logged)
	}
}
