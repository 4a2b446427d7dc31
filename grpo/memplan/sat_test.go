package memplan

import (
	"strings"
	"testing"
)

// mul and add give Beyond exactly where int64 ends: 2^31·2^31 = 2^62 fits, 2^62·2 = 2^63 does
// not; MaxInt64 − 2 + 1 fits, MaxInt64 − 1 + 1 is MaxInt64 itself (Beyond), MaxInt64 + 1 stays
// Beyond; a Beyond factor or term keeps the result Beyond.
func TestSaturating(t *testing.T) {
	for _, c := range []struct{ got, want int64 }{
		{mul(1<<31, 1<<31), 1 << 62}, {mul(1<<62, 2), Beyond}, {mul(3, 0, Beyond), 0}, {mul(Beyond, 1), Beyond},
		{mul(1<<40, 1<<40), Beyond}, {mul(), 1},
		{add(Beyond-2, 1), Beyond - 1}, {add(Beyond-1, 1), Beyond}, {add(Beyond, 1), Beyond}, {add(1<<62, 1<<62), Beyond},
		{ceilDiv(7, 3), 3}, {ceilDiv(6, 3), 2}, {ceilDiv(Beyond, 2), 1 << 62},
	} {
		if c.got != c.want {
			t.Errorf("got %d, want %d", c.got, c.want)
		}
	}
}

// A run of absurd but individually allowed sizes (each width at the model loader's bound, a
// micro-batch and a KV cache at the configuration's) needs more bytes than an int64 holds: its
// KV cache is 2·1024 layers·4096 slots·1024 KV heads·2^24 positions·1024·4 bytes = 2^69 and its
// activations some 2^71. The plan says Beyond for them, never a wrapped negative or small
// number, and "does not fit" at every stage, even where the device's memory is unknown.
func TestPredictBeyond(t *testing.T) {
	m := Model{Hidden: 1 << 16, Intermediate: 1 << 20, Layers: 1 << 10, Heads: 1 << 10, KVHeads: 1 << 10, HeadDim: 1 << 10, Vocab: 1 << 24}
	// Each layer: q, k, v, o 4·2^16·2^20, gate, up, down 3·2^16·2^20, two norms; 1024 of them,
	// and the untied embedding and head 2·2^40 with the final norm.
	layer := int64(7)<<36 + 2<<16
	m.Params = 1024*layer + 2<<40 + 1<<16
	for stage := StageDP; stage <= StageZeRO3; stage++ {
		for _, device := range []int64{0, 80 << 30} {
			r := Run{Model: m, DTypeBytes: 4, World: 8, Stage: stage, MicroTokens: 1 << 36, Checkpointing: true,
				Slots: 1 << 12, MaxLen: 1 << 24, Device: device}
			p, err := Predict(r, 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.KVCache != Beyond || p.ActivationsPlain != Beyond || p.Peak() != Beyond {
				t.Errorf("stage %d: KV %d, activations %d, peak %d; want Beyond", stage, p.KVCache, p.ActivationsPlain, p.Peak())
			}
			for _, row := range rows {
				if v := row.bytes(p); v < 0 {
					t.Errorf("stage %d: %s is %d", stage, row.label, v)
				}
			}
			err = p.Check()
			if p.Fits() || err == nil || !strings.Contains(err.Error(), "needs more than 8 EiB at its peak (KV cache; activations, checkpointing off (est.)") {
				t.Errorf("stage %d, device %d: fits %v, check %v", stage, device, p.Fits(), err)
			}
			var b strings.Builder
			WriteTable(&b, []string{"s"}, []Plan{p})
			if !strings.Contains(b.String(), "> 8 EiB") || !strings.HasSuffix(strings.TrimSpace(b.String()), "NO") {
				t.Errorf("stage %d: table\n%s", stage, b.String())
			}
		}
	}
}

// A parameter count too small for the embedding leaves the layers a negative share: refused.
func TestPredictRefusesTooFewParams(t *testing.T) {
	r := tinyRun()
	r.Model.Params = 40 // the embedding's 10·4 alone, nothing for the norm and the layers
	if _, err := Predict(r, 0); err == nil || !strings.Contains(err.Error(), "leave none for the layers") {
		t.Errorf("%v", err)
	}
}
