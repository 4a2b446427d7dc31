package memplan

import (
	"fmt"
	"strconv"
	"strings"
)

func errorf(format string, a ...any) error { return fmt.Errorf("memplan: "+format, a...) }

// units are the suffixes ParseBytes reads: binary (KiB, MiB, GiB, TiB) and decimal (KB, MB, GB,
// TB; a GPU's "80 GB" is 80·10⁹ bytes).
var units = []struct {
	suffix string
	scale  float64
}{
	{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}, {"TiB", 1 << 40},
	{"KB", 1e3}, {"MB", 1e6}, {"GB", 1e9}, {"TB", 1e12}, {"B", 1},
}

// ParseBytes reads a size: a number of bytes, or a number with a unit ("80GiB", "80 GB", "1.5TiB").
func ParseBytes(s string) (int64, error) {
	t := strings.TrimSpace(s)
	scale := 1.0
	for _, u := range units {
		if strings.HasSuffix(t, u.suffix) {
			t, scale = strings.TrimSpace(strings.TrimSuffix(t, u.suffix)), u.scale
			break
		}
	}
	v, err := strconv.ParseFloat(t, 64)
	if err != nil || !(v >= 0) || v*scale > 1<<62 { // !(v >= 0) also refuses NaN
		return 0, errorf("size %q: want a number of bytes, or one with a unit (80GiB, 80GB, 512MiB)", s)
	}
	return int64(v * scale), nil
}

// FormatBytes writes a size in binary units with three significant digits (1.50 GiB, 640 MiB);
// Beyond is "> 8 EiB".
func FormatBytes(n int64) string {
	if n == Beyond {
		return "> 8 EiB"
	}
	if n < 1<<10 {
		return fmt.Sprintf("%d B", n)
	}
	v, unit := float64(n), "B"
	for _, u := range []string{"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"} {
		if v < 1<<10 {
			break
		}
		v, unit = v/(1<<10), u
	}
	switch {
	case v >= 100:
		return fmt.Sprintf("%.0f %s", v, unit)
	case v >= 10:
		return fmt.Sprintf("%.1f %s", v, unit)
	}
	return fmt.Sprintf("%.2f %s", v, unit)
}
