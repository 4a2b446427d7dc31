package torch

/*
#include <stdlib.h>
#include "dist.h"
*/
import "C"

import (
	"errors"
	"fmt"
	"sync"
	"time"
	"unsafe"
)

// Watchdog notices that a rank of the group is gone while this one is busy outside any collective
// (a long rollout), and spares NCCL ranks a collective timeout for a peer that died: a C++ thread
// beats through the rendezvous store every interval and watches the peers' beats. A peer silent
// for the timeout, or a store that stops answering (rank 0 or the launcher's agent serves it), is
// reported once on Failed. It detects processes that are gone, not ones that hang with a live
// process: the group's collective timeout bounds those.
//
// A collective cannot be interrupted from Go, so what to do on a failure is the caller's: the CLI
// logs the error and exits. Stop it on every rank after a final Barrier, before rank 0 exits, so
// that a rank that finished is not taken for a dead one.
type Watchdog struct {
	h      C.mt_watchdog
	failed chan error
	done   chan struct{}
	once   sync.Once
}

// StartWatchdog starts beating every interval and reporting a peer silent for timeout.
func (pg *ProcessGroup) StartWatchdog(interval, timeout time.Duration) (*Watchdog, error) {
	w := &Watchdog{failed: make(chan error, 1), done: make(chan struct{})}
	err := Run(func() error {
		return checkErr("StartWatchdog", C.mt_dist_watchdog_start(pg.handle("StartWatchdog"),
			C.int64_t(interval.Milliseconds()), C.int64_t(timeout.Milliseconds()), &w.h))
	})
	if err != nil {
		return nil, err
	}
	go w.poll(min(interval, time.Second))
	return w, nil
}

// poll turns the C++ side's flag into one error on Failed.
func (w *Watchdog) poll(every time.Duration) {
	t := time.NewTicker(every)
	defer t.Stop()
	var buf [512]C.char
	for {
		select {
		case <-w.done:
			return
		case <-t.C:
			if C.mt_dist_watchdog_failure(w.h, &buf[0], C.size_t(len(buf))) != 0 {
				w.failed <- errors.New("torch: distributed: " + C.GoString(&buf[0]))
				return
			}
		}
	}
}

// Failed delivers the first failure seen (nothing if there is none).
func (w *Watchdog) Failed() <-chan error { return w.failed }

// Stop ends the watchdog and tells the peers this rank leaves on purpose. Safe to call more than
// once, from any goroutine.
func (w *Watchdog) Stop() error {
	if w == nil {
		return nil
	}
	var err error
	w.once.Do(func() {
		close(w.done)
		if e := C.mt_dist_watchdog_stop(w.h, 1); e != nil {
			err = fmt.Errorf("torch: %s", C.GoString(e))
			C.free(unsafe.Pointer(e))
		}
		w.h = nil
	})
	return err
}
