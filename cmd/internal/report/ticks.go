package report

import (
	"math"
	"strconv"

	"gonum.org/v1/plot"
)

// niceTicks marks a y-axis at 1, 2, 2.5 or 5 times a power of ten, about 5 labels, each written
// with as many decimals as the step needs and no more (gonum's default writes "500.00", or
// rounds 1.65 and 1.7 to the same "1.7"), with an unlabelled tick halfway between.
type niceTicks struct{}

// tickTarget is about how many labelled ticks an axis gets.
const tickTarget = 5

func (niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: strconv.FormatFloat(lo, 'g', 5, 64)}}
	}
	step, decimals := niceStep((hi - lo) / tickTarget)
	var out []plot.Tick
	for k := math.Ceil(lo / step * 2); k/2*step <= hi*(1+1e-12)+1e-300; k++ {
		v := k / 2 * step
		t := plot.Tick{Value: v}
		if math.Mod(k, 2) == 0 {
			if math.Abs(v) < step*1e-9 {
				v = 0 // not -0 or 1e-17
			}
			t.Label = strconv.FormatFloat(v, 'f', decimals, 64)
		}
		out = append(out, t)
	}
	return out
}

// niceStep rounds raw up to 1, 2, 2.5 or 5 × 10^e and gives the decimals its multiples need.
func niceStep(raw float64) (step float64, decimals int) {
	e := math.Floor(math.Log10(raw))
	base := math.Pow(10, e)
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*base >= raw*(1-1e-12) {
			step = m * base
			d := -int(e)
			if m == 2.5 {
				d++
			}
			if m == 10 {
				d--
			}
			return step, max(d, 0)
		}
	}
	return 10 * base, max(-int(e)-1, 0)
}
