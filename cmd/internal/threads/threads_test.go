package threads

import (
	"errors"
	"strings"
	"testing"

	"github.com/mtgrpo/mtgrpo/torch"
)

func TestParse(t *testing.T) {
	good := map[string]Setting{
		"1":     {IntraOp: 1, BLAS: 1},
		"4":     {IntraOp: 4, BLAS: 1},
		"2,1":   {IntraOp: 2, BLAS: 1},
		" 1,2 ": {IntraOp: 1, BLAS: 2},
	}
	for spec, want := range good {
		got, err := Parse(spec, "--threads")
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %v, %v; want %v", spec, got, err, want)
		}
	}
	bad := map[string]string{"0": "out of range", "-2": "out of range", "two": "not an integer",
		"1,2,3": "too many", "": "not an integer", "2,": "not an integer", "1,0": "out of range"}
	for spec, why := range bad {
		_, err := Parse(spec, "MTGRPO_THREADS")
		if err == nil || !strings.Contains(err.Error(), why) || !strings.Contains(err.Error(), "MTGRPO_THREADS") {
			t.Errorf("Parse(%q) = %v; want an error naming MTGRPO_THREADS and %q", spec, err, why)
		}
	}
}

// The default gives half the cores to libtorch and one thread to OpenBLAS, never zero.
func TestDefault(t *testing.T) {
	for cores, intra := range map[int]int{1: 1, 2: 1, 3: 1, 8: 4, 16: 8} {
		if s := Default(cores); s.IntraOp != intra || s.BLAS != 1 || s.Source != FromDefault {
			t.Errorf("Default(%d) = %v, want %d intra-op, 1 BLAS", cores, s, intra)
		}
	}
}

// The flag wins over the variable, the variable over the default; a bad variable names itself.
func TestResolvePrecedence(t *testing.T) {
	t.Setenv(EnvVar, "3,2")
	if s, err := Resolve("5"); err != nil || s.IntraOp != 5 || s.BLAS != 1 || s.Source != FromFlag {
		t.Errorf("flag: %v %v", s, err)
	}
	if s, err := Resolve(""); err != nil || s.IntraOp != 3 || s.BLAS != 2 || s.Source != FromEnv {
		t.Errorf("env: %v %v", s, err)
	}
	t.Setenv(EnvVar, "lots")
	if _, err := Resolve(""); err == nil || !strings.Contains(err.Error(), EnvVar) {
		t.Errorf("bad env: %v", err)
	}
	t.Setenv(EnvVar, "")
	if s, err := Resolve(""); err != nil || s.Source != FromDefault {
		t.Errorf("default: %v %v", s, err)
	}
}

// headroom: limit 2 GiB, 1.75 GiB used leaves 256 MiB; 1 buffer needs 128 MiB + 64 MiB for the
// Go heap + 64 MiB margin = 256 MiB: enough. 2 buffers need 384 MiB: short, and the message gives
// the figures; so does 1 buffer with a reserve of 100 MiB (356 MiB), naming it.
func TestHeadroom(t *testing.T) {
	const gib = 1 << 30
	if err := headroom(2*gib, 7*gib/4, 1, nil); err != nil {
		t.Errorf("enough: %v", err)
	}
	err := headroom(2*gib, 7*gib/4, 2, nil)
	if !errors.Is(err, ErrAddressSpace) || !strings.Contains(err.Error(), "ulimit -v: 2048 MiB leaves 256 MiB free, and this command needs 384 MiB more") ||
		!strings.Contains(err.Error(), "256 MiB for 2 more OpenBLAS thread buffers") {
		t.Errorf("short: %v", err)
	}
	err = headroom(2*gib, 7*gib/4, 1, []Reserve{{What: "the KV cache", Bytes: 100 << 20}})
	if !errors.Is(err, ErrAddressSpace) || !strings.Contains(err.Error(), "needs 356 MiB more (128 MiB for 1 more OpenBLAS thread buffers, 100 MiB for the KV cache, 64 MiB for the Go heap's growth and 64 MiB margin)") {
		t.Errorf("a reserve: %v", err)
	}
	if err := headroom(gib, 2*gib, 1, nil); err == nil || !strings.Contains(err.Error(), "leaves -1024 MiB") {
		t.Errorf("over the limit already: %v", err)
	}
}

// Apply sets both pools and reads back what it set (OpenBLAS is the BLAS of the dev machines and
// CI: scripts/setup.sh installs libopenblas0-pthread).
func TestApplyReadsBack(t *testing.T) {
	for _, s := range []Setting{{IntraOp: 2, BLAS: 1}, {IntraOp: 1, BLAS: 2}, {IntraOp: 1, BLAS: 1}} {
		var e InEffect
		err := torch.Run(func() (err error) { e, err = Apply(s); return err })
		if err != nil {
			t.Fatal(err)
		}
		if e.ReadIntraOp != s.IntraOp || (e.ReadBLAS != s.BLAS && e.ReadBLAS != -1) {
			t.Errorf("Apply(%v) read back %d intra-op, %d BLAS", s, e.ReadIntraOp, e.ReadBLAS)
		}
	}
	if _, err := Apply(Setting{IntraOp: 0, BLAS: 1}); err == nil {
		t.Error("0 intra-op threads accepted")
	}
}
