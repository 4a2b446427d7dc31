package model

import (
	"fmt"
	"math"
	"testing"
)

// refModel is an independent float64 implementation of the HF forward pass, written from
// modeling_llama.py / modeling_qwen2.py / modeling_qwen3.py with plain loops over HF weight names:
// no tensors, no reshapes, no weight table. It checks the tensor code's plumbing (head splitting,
// grouped-query mapping, biases, q/k norms, RoPE, tied head) against the textbook definition.
type refModel struct {
	c *Config
	w map[string][]float64
}

func newRefModel(t *testing.T, m *Model) *refModel {
	r := &refModel{c: m.Config, w: map[string][]float64{}}
	for _, p := range m.Parameters() {
		r.w[p.Name] = p.Tensor.Float64s()
	}
	return r
}

func (r *refModel) has(name string) bool { _, ok := r.w[name]; return ok }

// linear is W x + b for W [out, in] stored row-major.
func (r *refModel) linear(name string, x []float64) []float64 {
	w := r.w[name+".weight"]
	out := make([]float64, len(w)/len(x))
	for o := range out {
		s := 0.0
		for i, xi := range x {
			s += w[o*len(x)+i] * xi
		}
		if b, ok := r.w[name+".bias"]; ok {
			s += b[o]
		}
		out[o] = s
	}
	return out
}

func (r *refModel) rmsnorm(name string, x []float64) []float64 {
	ss := 0.0
	for _, v := range x {
		ss += v * v
	}
	inv := 1 / math.Sqrt(ss/float64(len(x))+r.c.RMSNormEps)
	w := r.w[name+".weight"]
	out := make([]float64, len(x))
	for i, v := range x {
		out[i] = w[i] * v * inv
	}
	return out
}

// invFreq in float64 straight from the formulas: θ^(−2i/d), then llama3's piecewise scaling.
func (r *refModel) invFreq() []float64 {
	rope, _ := r.c.Rope()
	d := r.c.HeadDimension()
	inv := make([]float64, d/2)
	for i := range inv {
		f := math.Pow(rope.Theta, -float64(2*i)/float64(d))
		if rope.Type == "llama3" {
			orig := float64(rope.OriginalMaxPositionEmbeddings)
			wavelen := 2 * math.Pi / f
			switch {
			case wavelen < orig/rope.HighFreqFactor:
			case wavelen > orig/rope.LowFreqFactor:
				f /= rope.Factor
			default:
				s := (orig/wavelen - rope.LowFreqFactor) / (rope.HighFreqFactor - rope.LowFreqFactor)
				f = (1-s)*f/rope.Factor + s*f
			}
		}
		inv[i] = f
	}
	return inv
}

// rotate applies RoPE at position pos to one head vector (rotate-half pairs i and i+d/2).
func rotate(x, inv []float64, pos int) []float64 {
	h := len(x) / 2
	out := make([]float64, len(x))
	for i := 0; i < h; i++ {
		c, s := math.Cos(float64(pos)*inv[i]), math.Sin(float64(pos)*inv[i])
		out[i] = x[i]*c - x[i+h]*s
		out[i+h] = x[i+h]*c + x[i]*s
	}
	return out
}

// logits runs one sequence and returns [len(seq)][vocab].
func (r *refModel) logits(seq []int32) [][]float64 {
	c := r.c
	H, KV, D, hidden := c.NumAttentionHeads, c.KVHeads(), c.HeadDimension(), c.HiddenSize
	inv := r.invFreq()
	x := make([][]float64, len(seq))
	for t, id := range seq {
		x[t] = append([]float64(nil), r.w["model.embed_tokens.weight"][int(id)*hidden:(int(id)+1)*hidden]...)
	}
	for l := 0; l < c.NumHiddenLayers; l++ {
		p := fmt.Sprintf("model.layers.%d.", l)
		q := make([][][]float64, len(seq)) // [t][head][D]
		k := make([][][]float64, len(seq))
		v := make([][][]float64, len(seq))
		for t := range seq {
			h := r.rmsnorm(p+"input_layernorm", x[t])
			qa, ka, va := r.linear(p+"self_attn.q_proj", h), r.linear(p+"self_attn.k_proj", h), r.linear(p+"self_attn.v_proj", h)
			for hd := 0; hd < H; hd++ {
				qh := qa[hd*D : (hd+1)*D]
				if r.has(p + "self_attn.q_norm.weight") {
					qh = r.rmsnorm(p+"self_attn.q_norm", qh)
				}
				q[t] = append(q[t], rotate(qh, inv, t))
			}
			for hd := 0; hd < KV; hd++ {
				kh := ka[hd*D : (hd+1)*D]
				if r.has(p + "self_attn.k_norm.weight") {
					kh = r.rmsnorm(p+"self_attn.k_norm", kh)
				}
				k[t] = append(k[t], rotate(kh, inv, t))
				v[t] = append(v[t], va[hd*D:(hd+1)*D])
			}
		}
		for t := range seq {
			attn := make([]float64, 0, H*D)
			for hd := 0; hd < H; hd++ {
				g := hd / (H / KV) // repeat_kv: query head hd reads kv head hd / (H/KV)
				scores := make([]float64, t+1)
				mx := math.Inf(-1)
				for j := 0; j <= t; j++ {
					s := 0.0
					for i := 0; i < D; i++ {
						s += q[t][hd][i] * k[j][g][i]
					}
					scores[j] = s / math.Sqrt(float64(D))
					mx = math.Max(mx, scores[j])
				}
				sum := 0.0
				for j := range scores {
					scores[j] = math.Exp(scores[j] - mx)
					sum += scores[j]
				}
				o := make([]float64, D)
				for j := range scores {
					for i := 0; i < D; i++ {
						o[i] += scores[j] / sum * v[j][g][i]
					}
				}
				attn = append(attn, o...)
			}
			out := r.linear(p+"self_attn.o_proj", attn)
			for i := range x[t] {
				x[t][i] += out[i]
			}
			h := r.rmsnorm(p+"post_attention_layernorm", x[t])
			gate, up := r.linear(p+"mlp.gate_proj", h), r.linear(p+"mlp.up_proj", h)
			for i := range gate {
				gate[i] = gate[i] / (1 + math.Exp(-gate[i])) * up[i]
			}
			down := r.linear(p+"mlp.down_proj", gate)
			for i := range x[t] {
				x[t][i] += down[i]
			}
		}
	}
	head := "lm_head"
	if c.TieWordEmbeddings {
		head = "model.embed_tokens"
	}
	out := make([][]float64, len(seq))
	for t := range seq {
		out[t] = r.linear(head, r.rmsnorm("model.norm", x[t]))
	}
	return out
}

// The tensor forward equals the loop reference for every architecture, tied and untied, with the
// test configs' GQA, Qwen2 biases, Qwen3 q/k norms and explicit head_dim, and llama3 RoPE scaling.
func TestForwardMatchesLoopReference(t *testing.T) {
	for _, arch := range []string{"llama", "qwen2", "qwen3"} {
		for _, tied := range []bool{true, false} {
			t.Run(fmt.Sprintf("%s/tied=%v", arch, tied), func(t *testing.T) {
				onTorch(t, func() error {
					c := testConfig(t, arch, tied)
					// Llama with attention_bias: LlamaConfig adds biases to q, k, v and o.
					c.AttentionBias = arch == "llama"
					m, err := New(c, nil, Options{Device: testDevice}, 61)
					if err != nil {
						return err
					}
					defer m.Close()
					perturbBiases(t, m)
					seq := randomSeqs(62, m.Config.VocabSize, 70)[0] // past the llama3 test context of 64
					got := seqLogits(t, m, seq)
					want := newRefModel(t, m).logits(seq)
					V := m.Config.VocabSize
					worst := 0.0
					for p := range want {
						for i, w := range want[p] {
							worst = math.Max(worst, math.Abs(float64(got[p*V+i])-w))
						}
					}
					if worst > 1e-4 {
						t.Errorf("logits differ from the loop reference by %g", worst)
					}
					return nil
				})
			})
		}
	}
}
