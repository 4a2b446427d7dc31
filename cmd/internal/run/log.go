package run

import (
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"
	"golang.org/x/term"
)

// newLogger writes readable text into the run's log file, and to console (when given) readable
// text on a terminal or JSON lines elsewhere (log collectors, CI).
func newLogger(file io.Writer, console *os.File) zerolog.Logger {
	text := func(w io.Writer, color bool) io.Writer {
		return zerolog.ConsoleWriter{Out: w, NoColor: !color, TimeFormat: time.RFC3339}
	}
	w := text(file, false)
	if console != nil {
		c := io.Writer(console)
		if term.IsTerminal(int(console.Fd())) {
			c = text(console, true)
		}
		w = zerolog.MultiLevelWriter(w, c)
	}
	return zerolog.New(w).With().Timestamp().Logger()
}
