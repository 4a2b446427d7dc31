package torch

// OpenBLAS picks its matrix kernels once, when the library loads (before main), from the CPU's
// family and model. A CPU newer than the OpenBLAS build gets its generic fallback: Debian 12's
// 0.3.21 takes Intel family 6 model 207 (Emerald Rapids, AVX-512) for a Prescott and runs every
// matrix product with SSE3 kernels: the start of the demo took 1.6x the CPU time there
// (docs/bench/threads.md). OPENBLAS_CORETYPE names the kernels instead, but is read
// only at load; so when the kernels OpenBLAS chose are older than what the CPU runs, and nobody
// set the variable, the process restarts itself with it set (init below). The lookup is dlsym on
// the process's symbols, as the shim's thread setters do: the shim does not link OpenBLAS, and
// another BLAS (the reference one, MKL in a pip libtorch) has no such symbol and is left alone.

/*
#cgo LDFLAGS: -ldl
#include <dlfcn.h>
#include <stddef.h>

static const char* mt_openblas_corename(void) {
	char* (*f)(void) = (char* (*)(void))dlsym(RTLD_DEFAULT, "openblas_get_corename");
	return f != NULL ? f() : NULL;
}
*/
import "C"

import (
	"os"
	"strings"
	"syscall"

	"golang.org/x/sys/cpu"
)

// BLASCoreVar is OpenBLAS' own variable that names the kernels it uses (its DYNAMIC_ARCH builds).
const BLASCoreVar = "OPENBLAS_CORETYPE"

// blasChosenVar carries, across the restart, the kernels OpenBLAS had chosen by itself.
const blasChosenVar = "MTGRPO_OPENBLAS_CHOSE"

// kernelLevel orders OpenBLAS' x86-64 kernel families by the instructions they use.
type kernelLevel int

const (
	levelUnknown kernelLevel = iota // a name not listed: left as OpenBLAS chose
	levelSSE                        // before AVX
	levelAVX                        // AVX without AVX2 and FMA
	levelAVX2                       // AVX2 and FMA
	levelAVX512                     // AVX-512 (F, CD, BW, DQ, VL)
)

// coreLevels are the kernel names openblas_get_corename returns on x86-64, lower-cased.
var coreLevels = map[string]kernelLevel{
	"prescott": levelSSE, "core2": levelSSE, "penryn": levelSSE, "dunnington": levelSSE,
	"nehalem": levelSSE, "atom": levelSSE, "barcelona": levelSSE, "bobcat": levelSSE,
	"opteron": levelSSE, "opteron_sse3": levelSSE, "katmai": levelSSE, "coppermine": levelSSE,
	"northwood": levelSSE, "banias": levelSSE, "athlon": levelSSE,
	"sandybridge": levelAVX, "bulldozer": levelAVX, "piledriver": levelAVX,
	"steamroller": levelAVX, "excavator": levelAVX,
	"haswell": levelAVX2, "zen": levelAVX2,
	"skylakex": levelAVX512, "cooperlake": levelAVX512, "sapphirerapids": levelAVX512,
}

// cpuLevel is the best kernel level the CPU and the operating system support.
func cpuLevel() kernelLevel {
	x := cpu.X86
	switch {
	case x.HasAVX512F && x.HasAVX512CD && x.HasAVX512BW && x.HasAVX512DQ && x.HasAVX512VL:
		return levelAVX512
	case x.HasAVX2 && x.HasFMA:
		return levelAVX2
	case x.HasAVX:
		return levelAVX
	}
	return levelSSE
}

// betterBLASCore is the OPENBLAS_CORETYPE to restart with when OpenBLAS chose kernels (chosen)
// without AVX2 on a CPU at level have with AVX2 or more, "" otherwise: OpenBLAS' own choice among
// the AVX2 and AVX-512 kernels (Haswell kernels on some AVX-512 parts, Zen's on AMD) is kept.
func betterBLASCore(chosen string, have kernelLevel) string {
	got := coreLevels[strings.ToLower(chosen)]
	if got == levelUnknown || got >= levelAVX2 {
		return ""
	}
	switch have {
	case levelAVX512:
		return "SkylakeX"
	case levelAVX2:
		return "Haswell"
	}
	return ""
}

// openBLASCore is the name of the kernels the loaded OpenBLAS runs, "" when the BLAS is not
// OpenBLAS.
func openBLASCore() string {
	if p := C.mt_openblas_corename(); p != nil {
		return strings.TrimSpace(C.GoString(p))
	}
	return ""
}

// BLASKernels says which kernels the process's BLAS runs, for `mtgrpo version` and the run's log:
// e.g. "OpenBLAS SkylakeX kernels (OPENBLAS_CORETYPE set by mtgrpo: OpenBLAS chose Prescott for
// this CPU)", or "" when the BLAS is not OpenBLAS.
func BLASKernels() string {
	core := openBLASCore()
	if core == "" {
		return ""
	}
	s := "OpenBLAS " + core + " kernels"
	switch chose := os.Getenv(blasChosenVar); {
	case chose != "":
		s += " (" + BLASCoreVar + " set by mtgrpo: OpenBLAS chose " + chose + " for this CPU)"
	case os.Getenv(BLASCoreVar) != "":
		s += " (" + BLASCoreVar + "=" + os.Getenv(BLASCoreVar) + ")"
	}
	return s
}

// init restarts the process once with OPENBLAS_CORETYPE set when OpenBLAS chose kernels older
// than the CPU's (betterBLASCore) and the variable is unset. The restart keeps the process id,
// arguments, open descriptors and environment; children inherit the variable and do not restart.
// When exec fails the process goes on with the kernels OpenBLAS chose.
func init() {
	if _, set := os.LookupEnv(BLASCoreVar); set {
		return
	}
	chosen := openBLASCore()
	core := betterBLASCore(chosen, cpuLevel())
	if core == "" {
		return
	}
	exe, err := os.Executable()
	if err != nil {
		return
	}
	env := append(os.Environ(), BLASCoreVar+"="+core, blasChosenVar+"="+chosen)
	_ = syscall.Exec(exe, os.Args, env)
}
