package model

import (
	"fmt"
	"io"
	"os"
	"time"
)

// progress reports loading of big checkpoints on stderr: a redrawn bar on a terminal (from 256 MB),
// a line every quarter elsewhere (from 2 GB, so logs of real runs show it and tests stay quiet).
type progress struct {
	w           io.Writer
	label       string
	total, n    int64
	tty         bool
	on          bool
	lastDraw    time.Time
	lastQuarter int64
	start       time.Time
}

const (
	progressTTYMin = 256 << 20
	progressLogMin = 2 << 30
)

func newProgress(f *os.File, label string, total int64) *progress {
	p := &progress{w: f, label: label, total: total, start: time.Now()}
	if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
		p.tty = true
	}
	p.on = (p.tty && total >= progressTTYMin) || total >= progressLogMin
	return p
}

func (p *progress) add(n int64) {
	if !p.on {
		return
	}
	p.n += n
	if p.tty {
		if time.Since(p.lastDraw) > 100*time.Millisecond || p.n == p.total {
			p.lastDraw = time.Now()
			const width = 30
			fill := int(int64(width) * p.n / max(p.total, 1))
			bar := make([]byte, width)
			for i := range bar {
				bar[i] = '.'
				if i < fill {
					bar[i] = '='
				}
			}
			fmt.Fprintf(p.w, "\r%s [%s] %d/%d MB", p.label, bar, p.n>>20, p.total>>20)
		}
		return
	}
	if q := 4 * p.n / max(p.total, 1); q > p.lastQuarter {
		p.lastQuarter = q
		fmt.Fprintf(p.w, "%s: %d%% of %d MB\n", p.label, 25*q, p.total>>20)
	}
}

func (p *progress) done() {
	if p.on && p.tty {
		fmt.Fprintf(p.w, " %.1fs\n", time.Since(p.start).Seconds())
	}
}
