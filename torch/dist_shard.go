package torch

/*
#include "dist.h"
*/
import "C"

import (
	"fmt"
	"time"
)

// ReduceScatter sets out, a flat tensor of k elements, to op over every rank's elements
// [Rank·k, (Rank+1)·k) of in, a flat tensor of Size·k elements (ZeRO's gradient reduction: each
// rank receives the sum of its shard). Both must be contiguous, of one dtype, on the group's
// device. Gloo has no reduce-scatter: it all-reduces a copy of in, with the same result.
func (pg *ProcessGroup) ReduceScatter(in, out *Tensor, op ReduceOp) {
	check("ReduceScatter", C.mt_dist_reduce_scatter(pg.handle("ReduceScatter"), in.handle("ReduceScatter"),
		out.handle("ReduceScatter"), C.int(op)))
}

// AllGatherInto fills out, a flat tensor of Size·k elements, with every rank's in (k elements):
// rank r's at [r·k, (r+1)·k) (ZeRO's weight gather). Both must be contiguous, of one dtype, on the
// group's device.
func (pg *ProcessGroup) AllGatherInto(in, out *Tensor) {
	check("AllGatherInto", C.mt_dist_allgather_into(pg.handle("AllGatherInto"), in.handle("AllGatherInto"),
		out.handle("AllGatherInto")))
}

// Work is a collective in flight (AllGatherIntoStart). Wait for it exactly once, on every rank,
// before its tensors are read or reused; it keeps them alive until then.
type Work struct {
	h  C.mt_work
	op string
}

// AllGatherIntoStart starts AllGatherInto without waiting for it (a prefetch: the gather of the
// next weights while the current ones compute). Collectives started later run after it, on every
// rank alike.
func (pg *ProcessGroup) AllGatherIntoStart(in, out *Tensor) *Work {
	w := &Work{op: "AllGatherInto"}
	check("AllGatherIntoStart", C.mt_dist_allgather_into_start(pg.handle("AllGatherIntoStart"),
		in.handle("AllGatherIntoStart"), out.handle("AllGatherIntoStart"), &w.h))
	return w
}

// Wait waits for the collective (NCCL: makes the current stream wait for it) and frees w, also
// when it failed.
func (w *Work) Wait() {
	if w == nil || w.h == nil {
		panic(&Error{Op: "Work.Wait", Msg: "no collective in flight (waited twice?)"})
	}
	h := w.h
	w.h = nil
	check(w.op, C.mt_dist_work_wait(h))
}

// NewGroup makes a group of some of pg's ranks (increasing), with collectives of its own, as
// torch.distributed.new_group does: every rank of pg must call it, in the same order, and those
// not in ranks get nil. In the new group, ranks[i] has rank i. timeout bounds its collectives
// (0: pg's). Call on the torch thread.
func (pg *ProcessGroup) NewGroup(ranks []int, timeout time.Duration) (*ProcessGroup, error) {
	if timeout == 0 {
		timeout = pg.cfg.Timeout
	}
	if len(ranks) == 0 {
		return nil, fmt.Errorf("torch: NewGroup: no ranks")
	}
	cr := make([]C.int, len(ranks))
	for i, r := range ranks {
		cr[i] = C.int(r)
	}
	var h C.mt_pg
	err := checkErr("NewGroup", C.mt_dist_new_group(pg.handle("NewGroup"), &cr[0], C.int(len(cr)),
		C.int64_t(timeout.Milliseconds()), &h))
	if err != nil || h == nil {
		return nil, err
	}
	sub := &ProcessGroup{h: h, cfg: pg.cfg, backend: pg.backend}
	sub.cfg.Timeout = timeout
	sub.cfg.WorldSize = len(ranks)
	for i, r := range ranks {
		if r == pg.Rank() {
			sub.cfg.Rank = i
		}
	}
	return sub, nil
}

// SetGrad makes g the gradient of t (same shape, dtype and device; nil drops it). An optimizer
// over shards of parameters reads their gradients from views of one reduced buffer this way.
func (t *Tensor) SetGrad(g *Tensor) {
	var gh C.mt_tensor
	if g != nil {
		gh = g.handle("SetGrad")
	}
	check("SetGrad", C.mt_set_grad(t.handle("SetGrad"), gh))
}

// AllGatherBytes returns every rank's b, indexed by rank: two collectives, the lengths and then
// the bytes padded to the longest, through tensors of the current scope on the group's device.
// For host data the ranks exchange (trajectories, per-token values).
func (pg *ProcessGroup) AllGatherBytes(b []byte) [][]byte {
	dev := pg.Device()
	lens := pg.AllGather(FromSlice([]int64{int64(len(b))}).ToDevice(dev))
	longest := 1
	for _, n := range lens {
		longest = max(longest, int(n.Int()))
	}
	buf := make([]byte, longest)
	copy(buf, b)
	all := Empty([]int64{int64(longest * pg.Size())}, Uint8, dev)
	pg.AllGatherInto(FromBytes(buf, Uint8).ToDevice(dev), all)
	host := all.Bytes()
	out := make([][]byte, pg.Size())
	for r := range out {
		out[r] = host[r*longest : r*longest+int(lens[r].Int())]
	}
	return out
}

// Timeout is the bound on each of the group's collectives.
func (pg *ProcessGroup) Timeout() time.Duration { return pg.cfg.Timeout }
