package torch

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The restart asks for AVX2 or AVX-512 kernels only when OpenBLAS fell back to kernels without
// AVX2 on a CPU that has it; its own choice among the newer kernels, and names it does not list,
// are kept.
func TestBetterBLASCore(t *testing.T) {
	for _, c := range []struct {
		chosen string
		have   kernelLevel
		want   string
	}{
		{"Prescott", levelAVX512, "SkylakeX"}, // Debian 12's OpenBLAS on Emerald Rapids
		{"Prescott", levelAVX2, "Haswell"},
		{"prescott", levelAVX2, "Haswell"},
		{"SandyBridge", levelAVX2, "Haswell"},
		{"Nehalem", levelAVX512, "SkylakeX"},
		{"Prescott", levelAVX, ""}, // the CPU has nothing better
		{"Prescott", levelSSE, ""},
		{"Haswell", levelAVX512, ""}, // OpenBLAS' choice among AVX2 and AVX-512 kernels stays
		{"Zen", levelAVX512, ""},
		{"SkylakeX", levelAVX512, ""},
		{"SapphireRapids", levelAVX512, ""},
		{"Neoverse", levelAVX512, ""}, // not a listed name
		{"", levelAVX512, ""},         // not OpenBLAS
	} {
		if got := betterBLASCore(c.chosen, c.have); got != c.want {
			t.Errorf("betterBLASCore(%q, %d) = %q, want %q", c.chosen, c.have, got, c.want)
		}
	}
}

// TestBLASKernelsHelper prints what a child process runs (TestBLASKernelsInChild).
func TestBLASKernelsHelper(t *testing.T) {
	if os.Getenv("MT_TEST_BLAS_CHILD") == "" {
		t.Skip("runs as TestBLASKernelsInChild's child")
	}
	os.Stdout.WriteString("kernels=" + BLASKernels() + "\n")
	os.Stdout.WriteString("better=" + betterBLASCore(openBLASCore(), cpuLevel()) + "\n")
}

// A process started without OPENBLAS_CORETYPE runs kernels at least as new as its CPU's AVX2
// (after the restart where OpenBLAS did not know the CPU), and one started with it runs the
// kernels it names, and says so.
func TestBLASKernelsInChild(t *testing.T) {
	if openBLASCore() == "" {
		t.Skip("the BLAS is not OpenBLAS")
	}
	child := func(env ...string) map[string]string {
		cmd := exec.Command(os.Args[0], "-test.run=^TestBLASKernelsHelper$", "-test.v")
		for _, e := range os.Environ() {
			if !strings.HasPrefix(e, BLASCoreVar+"=") && !strings.HasPrefix(e, blasChosenVar+"=") {
				cmd.Env = append(cmd.Env, e)
			}
		}
		cmd.Env = append(cmd.Env, append(env, "MT_TEST_BLAS_CHILD=1")...)
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("child: %v\n%s", err, out)
		}
		got := map[string]string{}
		for _, line := range strings.Split(string(out), "\n") {
			if k, v, ok := strings.Cut(line, "="); ok && (k == "kernels" || k == "better") {
				got[k] = v
			}
		}
		return got
	}
	unset := child()
	if unset["better"] != "" {
		t.Errorf("without %s the child still runs %q, where %s kernels exist for this CPU", BLASCoreVar, unset["kernels"], unset["better"])
	}
	if !strings.HasPrefix(unset["kernels"], "OpenBLAS ") {
		t.Errorf("child reports %q", unset["kernels"])
	}
	if cpuLevel() >= levelAVX2 {
		set := child(BLASCoreVar + "=Haswell")
		if want := "OpenBLAS Haswell kernels (" + BLASCoreVar + "=Haswell)"; set["kernels"] != want {
			t.Errorf("with %s=Haswell the child reports %q, want %q", BLASCoreVar, set["kernels"], want)
		}
	}
}
