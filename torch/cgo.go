package torch

// The package sees libtorch only through csrc/shim.h and build/libmtgrpo_torch.so, which
// scripts/build_shim.sh (make shim) builds with g++: cgo compiles no C++ here. The rpath entries
// find the library in the checkout's build/ (tests, go run) and beside a binary installed in bin/;
// elsewhere set LD_LIBRARY_PATH.

/*
#cgo CFLAGS: -I${SRCDIR}/csrc
#cgo LDFLAGS: -L${SRCDIR}/../build -lmtgrpo_torch -Wl,-rpath,${SRCDIR}/../build -Wl,-rpath,$ORIGIN/../build
#include <stdlib.h>
#include "shim.h"
*/
import "C"

import (
	"strings"
	"unsafe"
)

// check turns a shim error (a malloc'd message, NULL = ok) into a panic with *Error.
func check(op string, e C.mt_err) {
	if e == nil {
		return
	}
	msg := C.GoString(e)
	C.free(unsafe.Pointer(e))
	panic(newError(op, msg))
}

// checkErr is check for API boundaries that return errors instead of panicking.
func checkErr(op string, e C.mt_err) error {
	if e == nil {
		return nil
	}
	msg := C.GoString(e)
	C.free(unsafe.Pointer(e))
	return newError(op, msg)
}

func newError(op, msg string) *Error {
	return &Error{Op: op, Msg: firstLine(msg), Detail: msg}
}

// firstLine keeps the first non-empty line of a libtorch message (the rest is usually a C++
// source location or a long list of dispatch keys).
func firstLine(msg string) string {
	for _, l := range strings.Split(msg, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			return l
		}
	}
	return "unknown error"
}

// i64p points C at the first element of s (nil for an empty slice).
func i64p(s []int64) *C.int64_t {
	if len(s) == 0 {
		return nil
	}
	return (*C.int64_t)(unsafe.Pointer(&s[0]))
}

func cbool(b bool) C.int {
	if b {
		return 1
	}
	return 0
}

// handles collects the C handles of ts (nil entries stay NULL).
func handles(op string, ts []*Tensor) []C.mt_tensor {
	hs := make([]C.mt_tensor, len(ts))
	for i, t := range ts {
		if t != nil {
			hs[i] = t.handle(op)
		}
	}
	return hs
}

func handlesPtr(hs []C.mt_tensor) *C.mt_tensor {
	if len(hs) == 0 {
		return nil
	}
	return &hs[0]
}
