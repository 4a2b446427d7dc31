package torch

/*
#include "dist.h"
*/
import "C"

import (
	"fmt"
	"time"
)

// StoreServer is a TCPStore served by this process for ranks that join with AgentStore set, the
// way a torchrun agent serves one: the launcher owns the rendezvous point and every rank, rank 0
// included, is a client.
type StoreServer struct {
	h    C.mt_store
	port int
}

// ServeStore starts serving a store on port (all interfaces). timeout bounds each store operation
// (0 means DefaultDistTimeout). It may be called from any goroutine.
func ServeStore(port int, timeout time.Duration) (*StoreServer, error) {
	if timeout == 0 {
		timeout = DefaultDistTimeout
	}
	s := &StoreServer{port: port}
	err := Run(func() error {
		return checkErr("ServeStore", C.mt_dist_store_serve(C.int(port), C.int64_t(timeout.Milliseconds()), &s.h))
	})
	if err != nil {
		return nil, fmt.Errorf("torch: serving a store on port %d: %w", port, err)
	}
	return s, nil
}

// Port is the port the store listens on.
func (s *StoreServer) Port() int { return s.port }

// NumKeys is the number of keys in the store (non-zero once ranks have rendezvoused through it).
func (s *StoreServer) NumKeys() (int64, error) {
	var n C.int64_t
	err := Run(func() error {
		if s.h == nil {
			return fmt.Errorf("torch: store server is closed")
		}
		return checkErr("StoreServer.NumKeys", C.mt_dist_store_num_keys(s.h, &n))
	})
	return int64(n), err
}

// Close stops serving. It is safe to call more than once.
func (s *StoreServer) Close() error {
	if s == nil || s.h == nil {
		return nil
	}
	return Run(func() error {
		h := s.h
		s.h = nil
		return checkErr("StoreServer.Close", C.mt_dist_store_free(h))
	})
}
