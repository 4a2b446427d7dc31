package torch

/*
#include "shim.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"runtime"
	"runtime/debug"
	"sync"
)

// The torch thread: one goroutine, locked to its OS thread, runs every closure given to Run. The
// shim records that thread (mt_claim_thread) and refuses calls from any other, so a tensor op on a
// stray goroutine fails with an error instead of racing libtorch's thread-local state.

type job struct {
	fn   func() error
	done chan error
}

var worker struct {
	once  sync.Once
	jobs  chan job
	err   error // why the worker could not start (nil when it runs)
	ready chan struct{}
}

// errGoexit reports a closure that called runtime.Goexit (t.FailNow, t.Fatal) on the torch thread.
var errGoexit = errors.New("torch.Run: the closure called runtime.Goexit (t.Fatal/t.FailNow?); use t.Error inside Run")

// Run runs fn on the torch thread inside a fresh Scope, waits for it and returns its error. A torch
// op failing inside fn (a panic with *Error) comes back as that error; any other panic comes back as
// an error carrying the stack. Tensors fn creates are freed when fn returns unless fn moved them to
// a longer-lived scope. Called from the torch thread itself (nested), Run runs fn directly; but a
// closure that waits for another goroutine's Run deadlocks, as that Run queues behind it.
func Run(fn func() error) error {
	if C.mt_on_torch_thread() == 1 {
		return runJob(fn)
	}
	worker.once.Do(startWorker)
	<-worker.ready
	if worker.err != nil {
		return worker.err
	}
	j := job{fn: fn, done: make(chan error, 1)}
	worker.jobs <- j
	return <-j.done
}

func startWorker() {
	worker.jobs = make(chan job)
	worker.ready = make(chan struct{})
	go serve(true)
}

// serve owns the torch thread until its goroutine exits.
func serve(first bool) {
	runtime.LockOSThread() // never unlocked: the thread belongs to torch for the process's life
	C.mt_claim_thread()
	if first {
		worker.err = checkABI()
		close(worker.ready)
		if worker.err != nil {
			return
		}
	}
	for j := range worker.jobs {
		serveOne(j)
	}
}

// serveOne runs one job. If the closure calls runtime.Goexit, this goroutine (and its locked OS
// thread) ends: answer the caller and start a new torch thread.
func serveOne(j job) {
	exited := true
	defer func() {
		if exited {
			j.done <- errGoexit
			go serve(false)
		}
	}()
	err := runJob(j.fn)
	exited = false
	j.done <- err
}

func runJob(fn func() error) (err error) {
	completed := false
	defer func() {
		if completed {
			return
		}
		r := recover()
		if r == nil {
			return // runtime.Goexit: serveOne reports it
		}
		if e, ok := r.(*Error); ok {
			err = e
			return
		}
		err = fmt.Errorf("torch.Run: panic: %v\n%s", r, debug.Stack())
	}()
	s := NewScope()
	defer s.Close()
	err = fn()
	completed = true
	return err
}

// checkABI refuses a shim built from another shim.h than this package was compiled with.
func checkABI() error { return abiError(int(C.mt_abi_version()), int(C.MT_ABI_VERSION)) }

func abiError(lib, bin int) error {
	if lib != bin {
		return fmt.Errorf("torch: libmtgrpo_torch.so has shim ABI %d, this binary was built for ABI %d: "+
			"rebuild the shim (make shim) or the binary from the same checkout (after a change to csrc/shim.h, "+
			"`go clean -cache` first: Go's build cache does not see headers outside the package directory)", lib, bin)
	}
	return nil
}

// OnTorchThread reports whether the caller runs on the torch thread (inside Run).
func OnTorchThread() bool { return C.mt_on_torch_thread() == 1 }
