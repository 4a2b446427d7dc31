package report

import (
	"bytes"
	"fmt"
	"image/color"
	"math"
	"sort"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/plotutil"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
)

// Chart sizes: the page shows two per row; PNGs use the same. The legend sits below the axes
// (never over the data, never stretching an axis), in rows of legendRow.
const (
	chartW              = 6 * vg.Inch
	chartH              = 3.4 * vg.Inch
	legendRow vg.Length = 13 // points
	legendPad vg.Length = 6
	// rightPad keeps the last step's tick label inside the drawing.
	rightPad vg.Length = 10
	// legendCols2 is the longest series name that still fits half the chart's width.
	legendCols2 = 34
)

// Range is an axis's extent.
type Range struct{ Min, Max float64 }

// Chart is a drawn panel: its series, and the axes fitted to them (X is its view's steps).
type Chart struct {
	Panel  Panel
	Series []Series
	X, Y   Range
	plot   *plot.Plot
	legend []legendEntry
	marks  int // series drawn as markers so far
}

type legendEntry struct {
	name  string
	thumb plot.Thumbnailer
}

// Charts draws every panel the records have metrics for, each on its phase's view: RL's
// charts first, then the warm-up's.
func Charts(recs []rundir.Record) ([]Chart, error) {
	var out []Chart
	for _, v := range Views(recs) {
		for _, p := range Panels {
			if p.Phase != v.Phase {
				continue
			}
			ss := p.seriesOf(v.Records)
			if len(ss) == 0 {
				continue
			}
			c, err := draw1(p, ss, v)
			if err != nil {
				return nil, fmt.Errorf("report: %s: %w", p.Title, err)
			}
			out = append(out, c)
		}
	}
	return out, nil
}

func draw1(p Panel, ss []Series, v View) (Chart, error) {
	c := Chart{Panel: p, Series: ss, X: xRange(v), Y: yRange(p, ss), plot: plot.New()}
	pl := c.plot
	pl.Title.Text = p.Title
	pl.X.Label.Text = "step"
	pl.Y.Label.Text = p.Unit
	pl.Y.Tick.Marker = niceTicks{}
	pl.Add(plotter.NewGrid())
	if p.Stacked {
		if err := c.stack(); err != nil {
			return Chart{}, err
		}
	} else {
		for i, s := range ss {
			if err := c.add(s, i); err != nil {
				return Chart{}, err
			}
		}
	}
	pl.X.Min, pl.X.Max = c.X.Min, c.X.Max
	pl.Y.Min, pl.Y.Max = c.Y.Min, c.Y.Max
	return c, nil
}

// add draws the i-th series: markers for evaluations and single points (each series its own
// shape, so coinciding evaluations stay apart), else a line.
func (c *Chart) add(s Series, i int) error {
	col := plotutil.Color(i)
	xy := make(plotter.XYs, len(s.Steps))
	for j := range s.Steps {
		xy[j].X, xy[j].Y = s.Steps[j], s.Value[j]
	}
	if s.Marks || len(xy) == 1 {
		sc, err := plotter.NewScatter(xy)
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		sc.Color, sc.Shape, sc.Radius = col, markShape(c.marks), vg.Points(4)
		c.marks++
		c.plot.Add(sc)
		c.legend = append(c.legend, legendEntry{s.Name, sc})
		return nil
	}
	l, err := plotter.NewLine(xy)
	if err != nil {
		return fmt.Errorf("%s: %w", s.Name, err)
	}
	l.Color, l.Width = col, vg.Points(1.5)
	c.plot.Add(l)
	c.legend = append(c.legend, legendEntry{s.Name, l})
	return nil
}

// markShape is the i-th series' marker (filled shapes: outlines are lost among grid lines).
func markShape(i int) draw.GlyphDrawer {
	shapes := []draw.GlyphDrawer{draw.CircleGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}}
	return shapes[i%len(shapes)]
}

// xRange is the view's steps (a single step gets one step of room on each side).
func xRange(v View) Range {
	lo, hi := float64(v.From), float64(v.To)
	if hi <= lo {
		return Range{lo - 1, hi + 1}
	}
	return Range{lo, hi}
}

// yRange fits the y-axis to the panel's kind and its values (stacked series: their sums).
func yRange(p Panel, ss []Series) Range {
	lo, hi := math.Inf(1), math.Inf(-1)
	if p.Stacked {
		lo, hi = 0, 0
		for _, top := range stackTops(ss) {
			hi = max(hi, top)
		}
	} else {
		for _, s := range ss {
			for _, v := range s.Value {
				lo, hi = min(lo, v), max(hi, v)
			}
		}
	}
	switch {
	case p.Y == YRate && lo >= 0 && hi <= 1:
		return Range{0, 1}
	case p.Y == YRate:
		return pad(min(lo, 0), max(hi, 1))
	case p.Y == YFromZero || p.Stacked:
		r := pad(min(lo, 0), hi)
		return Range{min(lo, 0), r.Max}
	}
	return pad(lo, hi)
}

// pad widens [lo, hi] by 5% on each side so no point sits on the frame; a flat series gets
// 10% of its value (1 for 0) on each side.
func pad(lo, hi float64) Range {
	if hi <= lo {
		d := math.Abs(lo) * 0.1
		if d == 0 {
			d = 1
		}
		return Range{lo - d, hi + d}
	}
	d := (hi - lo) * 0.05
	return Range{lo - d, hi + d}
}

// steps are the steps any of ss has, sorted.
func steps(ss []Series) []float64 {
	set := map[float64]bool{}
	for _, s := range ss {
		for _, x := range s.Steps {
			set[x] = true
		}
	}
	out := make([]float64, 0, len(set))
	for x := range set {
		out = append(out, x)
	}
	sort.Float64s(out)
	return out
}

// stackBounds are the stacked areas' upper boundaries: the k-th is the sum of series 0..k at
// each step (missing values count 0).
func stackBounds(ss []Series) []plotter.XYs {
	xs := steps(ss)
	cum := make([]float64, len(xs))
	bounds := make([]plotter.XYs, len(ss))
	for k, s := range ss {
		at := map[float64]float64{}
		for j, x := range s.Steps {
			at[x] = s.Value[j]
		}
		bounds[k] = make(plotter.XYs, len(xs))
		for j, x := range xs {
			cum[j] += at[x]
			bounds[k][j].X, bounds[k][j].Y = x, cum[j]
		}
	}
	return bounds
}

// stackTops are the stack's totals per step.
func stackTops(ss []Series) []float64 {
	b := stackBounds(ss)
	out := make([]float64, len(b[len(b)-1]))
	for j, p := range b[len(b)-1] {
		out[j] = p.Y
	}
	return out
}

// stack draws the series as stacked areas, each filled down to the previous boundary by drawing
// the largest first.
func (c *Chart) stack() error {
	bounds := stackBounds(c.Series)
	for k := len(c.Series) - 1; k >= 0; k-- {
		l, err := plotter.NewLine(bounds[k])
		if err != nil {
			return fmt.Errorf("%s: %w", c.Series[k].Name, err)
		}
		col := plotutil.Color(k)
		l.Color, l.FillColor = col, withAlpha(col, 0xc0)
		c.plot.Add(l)
	}
	for k, s := range c.Series { // legend in stacking order, bottom first
		l, _ := plotter.NewLine(bounds[k][:1])
		l.Color, l.FillColor = plotutil.Color(k), withAlpha(plotutil.Color(k), 0xc0)
		c.legend = append(c.legend, legendEntry{s.Name, l})
	}
	return nil
}

func withAlpha(c color.Color, a uint8) color.Color {
	r, g, b, _ := c.RGBA()
	return color.NRGBA{R: uint8(r >> 8), G: uint8(g >> 8), B: uint8(b >> 8), A: a}
}

// legendLayout is the legend's columns and rows: two columns when every name fits half the width.
func (c Chart) legendLayout() (cols, rows int) {
	cols = 2
	for _, e := range c.legend {
		if len([]rune(e.name)) > legendCols2 {
			cols = 1
		}
	}
	return cols, (len(c.legend) + cols - 1) / cols
}

// Render encodes the chart as "svg" or "png": the axes, and the legend below them. The chart
// library panics on input it cannot draw; that is an error naming the chart, never a crash of the
// command that wanted the report.
func (c Chart) Render(format string) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("cannot draw the %s chart: %v", c.Panel.Title, r)
		}
	}()
	cols, rows := c.legendLayout()
	lh := legendRow*vg.Length(rows) + legendPad
	h := chartH + lh
	cv, err := draw.NewFormattedCanvas(chartW, h, format)
	if err != nil {
		return nil, err
	}
	dc := draw.New(cv)
	c.plot.Draw(draw.Crop(dc, 0, -rightPad, lh, 0))
	strip := draw.Crop(dc, legendPad, 0, 0, -(h - lh + legendPad/2))
	colW := (chartW - legendPad) / vg.Length(cols)
	for i := 0; i < cols; i++ {
		lg := plot.NewLegend()
		lg.Top, lg.Left = true, true
		lg.TextStyle.Font.Size = vg.Points(10)
		lg.Padding = legendRow - lg.TextStyle.Font.Size
		for _, e := range c.legend[min(i*rows, len(c.legend)):min((i+1)*rows, len(c.legend))] {
			lg.Add(e.name, e.thumb)
		}
		lg.Draw(draw.Crop(strip, colW*vg.Length(i), -(colW * vg.Length(cols-1-i)), 0, 0))
	}
	var buf bytes.Buffer
	if _, err := cv.WriteTo(&buf); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}
