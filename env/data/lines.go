package data

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
)

// LineReader reads newline-separated lines under two bounds: the length of one line and the
// bytes of the whole stream. Reading a line never holds more than the line limit in memory, so a
// stream that never ends (or never has a newline) fails at a bound, naming the line, instead of
// exhausting memory.
type LineReader struct {
	br              *bufio.Reader
	maxLine         int
	maxTotal, total int64
	line            int
	buf             []byte
	partial         bool // the last line returned had no newline
}

// ErrLineTooLong and ErrTooLarge are wrapped by the errors of lines and streams past their
// bounds.
var (
	ErrLineTooLong = errors.New("line too long")
	ErrTooLarge    = bounded.ErrTooLarge
)

// NewLineReader reads r with lines of at most maxLine bytes (newline excluded) and at most
// maxTotal bytes in all.
func NewLineReader(r io.Reader, maxLine int, maxTotal int64) *LineReader {
	return &LineReader{br: bufio.NewReaderSize(r, 64<<10), maxLine: maxLine, maxTotal: maxTotal}
}

// Partial reports whether the last line Next returned ended the stream without a newline (a
// line cut short by a crash mid-write, in a file that is appended to).
func (l *LineReader) Partial() bool { return l.partial }

// Next returns the next line without its "\n" (a final line without one included) and its
// 1-based number; io.EOF after the last. The slice is valid until the next call. Errors do not
// name the line: the caller does, with the number returned beside them.
func (l *LineReader) Next() ([]byte, int, error) {
	l.line++
	l.buf = l.buf[:0]
	l.partial = false
	for {
		chunk, err := l.br.ReadSlice('\n')
		l.total += int64(len(chunk))
		if l.total > l.maxTotal {
			return nil, l.line, fmt.Errorf("%w: the data passes %d bytes", ErrTooLarge, l.maxTotal)
		}
		body := bytes.TrimSuffix(chunk, []byte("\n"))
		if len(l.buf)+len(body) > l.maxLine {
			return nil, l.line, fmt.Errorf("%w: over %d bytes", ErrLineTooLong, l.maxLine)
		}
		if need := len(l.buf) + len(body); need > cap(l.buf) {
			// Grow by doubling (append grows large slices by 1.25×, which allocates ~5× the
			// line in all), never past the limit.
			grown := make([]byte, len(l.buf), min(max(need, 2*cap(l.buf)), l.maxLine))
			copy(grown, l.buf)
			l.buf = grown
		}
		l.buf = append(l.buf, body...)
		switch {
		case err == nil:
			return l.buf, l.line, nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case err == io.EOF && len(l.buf) > 0:
			l.partial = true
			return l.buf, l.line, nil
		case err == io.EOF:
			return nil, l.line, io.EOF
		default:
			return nil, l.line, err
		}
	}
}
