package torch

/*
#include "dist.h"
*/
import "C"

// GradBuckets sums the gradients of a fixed list of parameters across the ranks of a group, as
// DDP does after backward, through flat buffers laid out once and reused every step: the
// gradients are copied into the buckets, each bucket is all-reduced, and the sums, times a
// scale, are copied back. Buckets run from the last parameter to the first (the order backward
// produces gradients in) and hold one dtype each.
//
// Arm makes the next backward pass overlap with the reduction: each bucket's all-reduce starts as
// soon as its gradients and those of every earlier bucket are accumulated (hooks on the
// parameters' gradient accumulators, in C++), while backward computes the rest. The result is the
// same either way.
//
// Every rank must make its buckets from the same parameters in the same order and call AllReduce
// (and Arm, if it arms) at the same points. Close frees the buffers.
type GradBuckets struct {
	h       C.mt_buckets
	n       int
	bytes   int64
	armed   bool
	overlap bool
}

// NewGradBuckets lays out buckets of about bucketBytes (<= 0: DefaultBucketBytes) for the
// parameters of params that require grad. overlap says whether the steps will Arm them: it must
// be the same on every rank.
func (pg *ProcessGroup) NewGradBuckets(params []*Tensor, bucketBytes int64, overlap bool) *GradBuckets {
	if bucketBytes <= 0 {
		bucketBytes = DefaultBucketBytes
	}
	hs := handles("NewGradBuckets", params)
	b := &GradBuckets{overlap: overlap}
	check("NewGradBuckets", C.mt_dist_buckets_new(pg.handle("NewGradBuckets"), handlesPtr(hs), C.int(len(hs)),
		C.int64_t(bucketBytes), &b.h))
	var n C.int
	var bytes C.int64_t
	check("NewGradBuckets", C.mt_dist_buckets_info(b.h, &n, &bytes))
	b.n, b.bytes = int(n), int64(bytes)
	return b
}

// Buckets is the number of buckets (collectives per AllReduce); Bytes their total size.
func (b *GradBuckets) Buckets() int { return b.n }
func (b *GradBuckets) Bytes() int64 { return b.bytes }

// Overlap reports whether the buckets were made for armed steps.
func (b *GradBuckets) Overlap() bool { return b.overlap }

// Arm makes the reduction overlap the next backward pass (the last one before AllReduce:
// gradients accumulated later would be sent again). Only for buckets made with overlap.
func (b *GradBuckets) Arm() {
	if !b.overlap {
		errorf("GradBuckets.Arm", "buckets made without overlap")
	}
	check("GradBuckets.Arm", C.mt_dist_buckets_arm(b.handle("GradBuckets.Arm")))
	b.armed = true
}

// AllReduce sets every parameter's gradient to scale times its sum over the ranks (scale
// 1/Size averages, as DDP; 1 sums, for losses already weighted over the global batch). A
// parameter without a gradient counts as zeros and gets the result.
func (b *GradBuckets) AllReduce(scale float64) {
	check("GradBuckets.AllReduce", C.mt_dist_buckets_allreduce(b.handle("GradBuckets.AllReduce"), C.double(scale),
		cbool(b.overlap)))
	b.armed = false
}

func (b *GradBuckets) handle(op string) C.mt_buckets {
	if b == nil || b.h == nil {
		errorf(op, "gradient buckets are closed")
	}
	return b.h
}

// Close frees the buffers; safe to call more than once. Call on the torch thread.
func (b *GradBuckets) Close() {
	if b == nil || b.h == nil {
		return
	}
	h := b.h
	b.h = nil
	check("GradBuckets.Close", C.mt_dist_buckets_free(h))
}
