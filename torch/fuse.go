package torch

/*
#include "shim.h"
*/
import "C"

// FuseRows lays each group's tensors out back to back in one storage and returns, per group, the
// whole [Σ rows, ...] tensor (in the current scope), so that one matrix product serves several
// projections. The tensors keep their identity: each stays the same *Tensor and the same libtorch
// tensor (autograd state, gradient), only its data is re-pointed into the group's storage, so an
// update in place (an optimizer step, a copy from a master weight) shows in the whole at once.
// The storage belongs to the parts: it is freed with them.
//
// A group already laid out is only checked (pointer comparisons, no copy); one whose parts were
// replaced since (a ZeRO-3 gather, a reload, Tensor.Swap) is copied into new storage, which moves
// its address. moved counts those groups. The parts of a group must share dtype, device and the
// sizes of every dimension but the first. One crossing for all groups; nothing changes on an error.
func FuseRows(groups [][]*Tensor) (wholes []*Tensor, moved int) {
	var parts []C.mt_tensor
	offs := make([]C.int, 1, len(groups)+1)
	for _, g := range groups {
		for _, t := range g {
			parts = append(parts, t.handle("FuseRows"))
		}
		offs = append(offs, C.int(len(parts)))
	}
	if len(groups) == 0 {
		return nil, 0
	}
	outs := make([]C.mt_tensor, len(groups))
	var n C.int
	check("FuseRows", C.mt_fuse_rows(handlesPtr(parts), &offs[0], C.int(len(groups)), &outs[0], &n))
	wholes = make([]*Tensor, len(groups))
	for i, h := range outs {
		wholes[i] = wrap("FuseRows", h)
	}
	return wholes, int(n)
}
