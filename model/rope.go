package model

import "math"

// RoPE in the rotate-half convention of HF transformers (modeling_llama.py):
//
//	inv_freq_i = 1 / θ^(2i/d),  angle(p, i) = p · inv_freq_i,  emb = cat(angle, angle)
//	q' = q·cos(emb) + rotate_half(q)·sin(emb),  rotate_half(x) = cat(−x₂, x₁)
//
// The tables are computed here in Go in float32, step by step as torch does them in float32, so that
// they match transformers' cos/sin to the last bit or two, and uploaded per forward for exactly the
// positions in the batch (no max_position_embeddings-sized table).

// invFreq returns the d/2 inverse frequencies of r for head dimension d, with llama3 scaling applied.
func invFreq(r Rope, d int) []float32 {
	inv := make([]float32, d/2)
	for i := range inv {
		// torch: base ** (arange(0, d, 2).float() / d), then 1.0 / that, all float32.
		e := float32(2*i) / float32(d)
		inv[i] = 1 / float32(math.Pow(r.Theta, float64(e)))
	}
	if r.Type == "llama3" {
		llama3Scale(inv, r)
	}
	return inv
}

// llama3Scale applies Llama 3.1's frequency-dependent scaling (transformers _compute_llama3_parameters):
// long wavelengths (> orig/low_freq_factor) are divided by factor, short ones (< orig/high_freq_factor)
// are kept, and the band between is interpolated with s = (orig/wavelen − low)/(high − low):
// inv' = (1−s)·inv/factor + s·inv.
func llama3Scale(inv []float32, r Rope) {
	factor := float32(r.Factor)
	low, high := float32(r.LowFreqFactor), float32(r.HighFreqFactor)
	orig := float32(r.OriginalMaxPositionEmbeddings)
	lowWavelen := float32(float64(r.OriginalMaxPositionEmbeddings) / r.LowFreqFactor)
	highWavelen := float32(float64(r.OriginalMaxPositionEmbeddings) / r.HighFreqFactor)
	for i, f := range inv {
		wavelen := float32(2*math.Pi) / f
		scaled := f
		if wavelen > lowWavelen {
			scaled = f / factor
		}
		if !(wavelen < highWavelen) && !(wavelen > lowWavelen) {
			s := (orig/wavelen - low) / (high - low)
			scaled = (1-s)*scaled/factor + s*scaled
		}
		inv[i] = scaled
	}
}

// ropeTables returns cos and sin of emb for each position, row-major [len(pos), d], float32.
func ropeTables(inv []float32, pos []int32) (cos, sin []float32) {
	half := len(inv)
	d := 2 * half
	cos = make([]float32, len(pos)*d)
	sin = make([]float32, len(pos)*d)
	for r, p := range pos {
		row := r * d
		for i, f := range inv {
			a := float64(float32(p) * f) // float32 product, as torch's inv_freq @ position_ids
			c, s := float32(math.Cos(a)), float32(math.Sin(a))
			cos[row+i], cos[row+half+i] = c, c
			sin[row+i], sin[row+half+i] = s, s
		}
	}
	return cos, sin
}
