package report

import (
	"bytes"
	"fmt"
	"image/color"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// Chart sizes: the page shows two per row; PNGs use the same.
const (
	chartW = 6 * vg.Inch
	chartH = 3.4 * vg.Inch
)

// Chart is a drawn panel.
type Chart struct {
	Panel  Panel
	Series []Series
	plot   *plot.Plot
}

// Charts draws every panel the records have metrics for.
func Charts(recs []rundir.Record) ([]Chart, error) {
	var out []Chart
	for _, p := range Panels {
		ss := p.seriesOf(recs)
		if len(ss) == 0 {
			continue
		}
		pl, err := draw1(p, ss)
		if err != nil {
			return nil, fmt.Errorf("report: %s: %w", p.Title, err)
		}
		out = append(out, Chart{Panel: p, Series: ss, plot: pl})
	}
	return out, nil
}

func draw1(p Panel, ss []Series) (*plot.Plot, error) {
	pl := plot.New()
	pl.Title.Text = p.Title
	pl.X.Label.Text = "step"
	pl.Y.Label.Text = p.Unit
	pl.Add(plotter.NewGrid())
	pl.Legend.Top = true
	pl.Legend.Left = true
	pl.Legend.Padding = vg.Points(2)
	pl.Legend.XOffs = vg.Points(6)
	if p.Stacked {
		if err := stack(pl, ss); err != nil {
			return nil, err
		}
		roomForLegend(pl, len(ss))
		return pl, nil
	}
	for i, s := range ss {
		xy := make(plotter.XYs, len(s.Steps))
		for j := range s.Steps {
			xy[j].X, xy[j].Y = s.Steps[j], s.Value[j]
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		l.Color = plotutil.Color(i)
		l.Width = vg.Points(1.5)
		pl.Add(l)
		if len(xy) == 1 { // a single step draws no line: mark it
			sc, _ := plotter.NewScatter(xy)
			sc.Color, sc.Shape = l.Color, draw.CircleGlyph{}
			pl.Add(sc)
		}
		pl.Legend.Add(s.Name, l)
	}
	roomForLegend(pl, len(ss))
	return pl, nil
}

// roomForLegend raises the top of the Y axis so the legend's n rows sit above the data instead
// of over it (about 9% of the height per row).
func roomForLegend(pl *plot.Plot, n int) {
	lo, hi := pl.Y.Min, pl.Y.Max
	if hi <= lo {
		hi = lo + 1
	}
	frac := 0.09 * float64(n)
	pl.Y.Max = hi + (hi-lo)*frac/(1-frac)
}

// stack draws series as stacked areas: the k-th boundary is the sum of series 0..k at each step
// (missing values count 0), filled down to the previous boundary by drawing the largest first.
func stack(pl *plot.Plot, ss []Series) error {
	stepSet := map[float64]bool{}
	for _, s := range ss {
		for _, x := range s.Steps {
			stepSet[x] = true
		}
	}
	steps := make([]float64, 0, len(stepSet))
	for x := range stepSet {
		steps = append(steps, x)
	}
	sort.Float64s(steps)
	cum := make([]float64, len(steps))
	bounds := make([]plotter.XYs, len(ss))
	for k, s := range ss {
		at := map[float64]float64{}
		for j, x := range s.Steps {
			at[x] = s.Value[j]
		}
		bounds[k] = make(plotter.XYs, len(steps))
		for j, x := range steps {
			cum[j] += at[x]
			bounds[k][j].X, bounds[k][j].Y = x, cum[j]
		}
	}
	for k := len(ss) - 1; k >= 0; k-- {
		l, err := plotter.NewLine(bounds[k])
		if err != nil {
			return fmt.Errorf("%s: %w", ss[k].Name, err)
		}
		c := plotutil.Color(k)
		l.Color = c
		l.FillColor = withAlpha(c, 0xc0)
		pl.Add(l)
	}
	for k, s := range ss { // legend in stacking order, bottom first
		l, _ := plotter.NewLine(bounds[k][:1])
		l.Color, l.FillColor = plotutil.Color(k), withAlpha(plotutil.Color(k), 0xc0)
		pl.Legend.Add(s.Name, l)
	}
	pl.Y.Min = 0
	return nil
}

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

// Render encodes the chart as "svg" or "png". The chart library panics on input it cannot draw;
// that is an error naming the chart, never a crash of the command that wanted the report.
func (c Chart) Render(format string) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("cannot draw the %s chart: %v", c.Panel.Title, r)
		}
	}()
	wt, err := c.plot.WriterTo(chartW, chartH, format)
	if err != nil {
		return nil, err
	}
	var buf bytes.Buffer
	if _, err := wt.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
