package torch

/*
#include "shim.h"
*/
import "C"

import (
	"fmt"
	"strings"
)

// ShimABI is the version of csrc/shim.h this package was compiled with; the loaded shim library
// must report the same (checked when the torch thread starts).
const ShimABI = C.MT_ABI_VERSION

// BuildInfo describes the libtorch behind the shim.
type BuildInfo struct {
	Torch         string // libtorch version, e.g. "1.13.1"
	CUDABuilt     bool   // the shim was built against a CUDA libtorch
	CUDAAvailable bool   // CUDA works (a driver and at least one device)
	CUDADevices   int
	ABI           int           // the shim ABI version (equal to the one this package was built for)
	DistBackends  []DistBackend // process-group backends compiled into the shim
	BLAS          string        // the BLAS kernels the process runs (BLASKernels; "" when not OpenBLAS)
}

// Version reports libtorch's version and whether CUDA works. It starts the torch thread if needed
// and fails if the shim library does not match this binary's shim.h.
func Version() (BuildInfo, error) {
	var info BuildInfo
	err := Run(func() error {
		var buf [64]C.char
		var built, avail, n C.int
		if err := checkErr("Version", C.mt_version(&buf[0], C.size_t(len(buf)), &built, &avail, &n)); err != nil {
			return err
		}
		info = BuildInfo{Torch: C.GoString(&buf[0]), CUDABuilt: built != 0, CUDAAvailable: avail != 0,
			CUDADevices: int(n), ABI: int(C.mt_abi_version()), DistBackends: DistBackends(), BLAS: BLASKernels()}
		return nil
	})
	return info, err
}

func (b BuildInfo) String() string {
	s := fmt.Sprintf("libtorch %s, shim ABI %d, CUDA available: %v (%d devices)", b.Torch, b.ABI,
		b.CUDAAvailable, b.CUDADevices)
	if len(b.DistBackends) == 0 {
		s += ", no process groups"
	} else {
		names := make([]string, len(b.DistBackends))
		for i, d := range b.DistBackends {
			names[i] = string(d)
		}
		s += ", process groups: " + strings.Join(names, ", ")
	}
	if b.BLAS != "" {
		s += ", " + b.BLAS
	}
	switch {
	case b.CUDABuilt && !b.CUDAAvailable:
		s += "; the shim was built for CUDA but no device works (driver? CUDA_VISIBLE_DEVICES?)"
	case !b.CUDABuilt:
		s += "; CPU-only shim"
	}
	return s
}
