package shard

import (
	"fmt"
	"math"
	"sort"

	"github.com/mtgrpo/mtgrpo/grpo/memplan"
	"github.com/mtgrpo/mtgrpo/model"
	"github.com/mtgrpo/mtgrpo/torch"
)

// ZeRO-1, -2 and -3 (Rajbhandari et al., arXiv 1910.02054, stages 1 to 3: optimizer state, then
// also gradient, then also parameter partitioning; stage 3's weights: zero3.go) over the
// training ranks. The trainable parameters are grouped into
// units; each unit's parameters, concatenated in order and flattened, form a flat space cut into
// world equal contiguous shards (the last padded). Under ZeRO-1 the whole model is one unit; under
// ZeRO-2 and -3 a unit is what model.Model.Units says (the embedding, each decoder layer, the final norm
// and an untied head), so that one unit's gradients can be reduced on their own as soon as the
// backward pass has made them. Rank r keeps, for its shard of every unit only, the float32 master
// weights, the float32 gradient sum and AdamW's two moments: 16 bytes per element of its shards,
// against 16 per element of the model for every rank without sharding (12 for float32
// parameters). A step:
//
//	reduce:  gradients → reduce-scatter in rounds of `chunk` elements per rank → added to this
//	         rank's shard; the parameters' own gradients are dropped once sent. ZeRO-1 reduces
//	         every unit in clip, at the end of a mini-batch; ZeRO-2 reduces each unit inside
//	         every backward pass, when model.ForwardOptions.GradsReady says its gradients are
//	         complete, so that a pass never holds the whole model's gradients (with gradient
//	         checkpointing: one layer's, besides the first and last units'; without it the layers'
//	         backward is one autograd call and their gradients are reduced after it). Each
//	         reduction is a collective, so under ZeRO-2 and -3 every rank makes the same number
//	         of passes per mini-batch: a rank with fewer micro-batches makes idle ones (passes,
//	         idle).
//	clip:    global norm = sqrt(Σ over ranks of Σ shard²) (one small all-reduce), scaled as
//	         torch.nn.utils.clip_grad_norm_ does
//	update:  torch.AdamW over the shards' pieces (one view per parameter a shard overlaps, named as
//	         the parameter, so weight-decay exemptions and per-parameter step counts carry over)
//	gather:  all-gather the updated masters unit by unit in rounds, cast into every rank's
//	         parameters (ZeRO-3 while sharded: when a pass next gathers the unit)
//
// The rounds keep the extra device memory at one bucket (Settings.BucketBytes) per rank besides
// the shards. State gathers whole tensors in the unsharded optimizer's format, so a sharded run's
// checkpoint resumes at any world size and stage; LoadState takes such a state and keeps this
// rank's slices (zero_state.go). Deviation from DeepSpeed: gradients are reduced in float32 whatever the
// parameters' dtype (exact sums of bf16 gradients, twice the traffic of bf16 buckets).
type zero struct {
	pg     *torch.ProcessGroup
	names  []string
	params []*torch.Tensor
	shapes [][]int64 // the parameters' (they hold empty placeholders while ZeRO-3 shards them)
	units  []*flatUnit
	stage  memplan.Stage
	eager  bool // ZeRO-2 and -3: reduce unit by unit inside each backward pass
	tied   bool // the model's head is its embedding (ZeRO-3 keeps unit 0 gathered through a pass)
	// ZeRO-3 (zero3.go): sharded says the parameters hold placeholders; full[i] is the
	// tensor parameter i is swapped with while its unit is gathered (the placeholder then).
	sharded bool
	full    []*torch.Tensor
	local   int64 // this rank's elements: the sum of its units' shards
	chunk   int64 // elements per rank and round (the largest unit's)
	scope   *torch.Scope
	// master and grad are this rank's shards of every unit, one after the other ([local] float32)
	master, grad *torch.Tensor
	buf          *torch.Tensor // [world·chunk] float32: one round's input or output
	// wire is ZeRO-3's gather buffer in the weights' dtype when they are bfloat16 or float16
	// ([world·chunk]; nil otherwise): the master shards travel cast, as the weights.
	wire *torch.Tensor
	// ZeRO-3's prefetch (zero3.go): ahead [world·maxShard] and aheadIn [maxShard], in the
	// weights' dtype, are where the next unit's gather runs while the current unit computes;
	// pending is that gather; order is the units in the order a pass gathers them and cursor the
	// place in it of the next gather.
	ahead, aheadIn *torch.Tensor
	pending        *prefetch
	order          []int
	cursor         int
	prefetched     int // gathers a prefetch served (for tests)
	pieces         []piece
	opt            *torch.AdamW
}

// flatUnit is one unit's flat space: its parameters (indices into zero.params), their first
// elements in it, its size, the per-rank shard length, this rank's first element, and where this
// rank's shard starts in zero.master and .grad.
type flatUnit struct {
	params                  []int
	offs                    []int64
	total, shard, lo, local int64
	gathered                bool // ZeRO-3: its weights are whole (see Gather)
}

// piece is the part of a parameter in this rank's shards: elements [at, at+n) of the flattened
// parameter, at offset off of master and grad.
type piece struct {
	param       int
	at, n, off  int64
	master, grd *torch.Tensor // views of the shards' master and gradient
}

// newZero shards params' optimizer state across pg's ranks at stage s.Stage (1, 2 or 3); every
// rank calls it with the same parameters. ZeRO-1 makes one unit of all parameters; ZeRO-2 and -3
// group them by u. Call on the torch thread.
func newZero(pg *torch.ProcessGroup, params []torch.NamedTensor, u Units, s Settings) (z *zero, err error) {
	defer torch.Recover(&err)
	stage := s.Stage
	z = &zero{pg: pg, stage: stage, eager: stage >= memplan.StageZeRO2, tied: u.Tied}
	for _, p := range params {
		if dt := p.Tensor.DType(); dt != torch.Float32 && dt != torch.BFloat16 && dt != torch.Float16 {
			return nil, fmt.Errorf("shard: zero: parameter %q is %s: float32, bfloat16 or float16 only", p.Name, dt)
		}
		if stage == memplan.StageZeRO3 && len(z.params) > 0 && p.Tensor.DType() != z.params[0].DType() {
			return nil, fmt.Errorf("shard: zero3: parameter %q is %s, %q %s: the weights must share a dtype",
				p.Name, p.Tensor.DType(), z.names[0], z.params[0].DType())
		}
		z.names, z.params = append(z.names, p.Name), append(z.params, p.Tensor)
		z.shapes = append(z.shapes, p.Tensor.Shape())
	}
	z.full = make([]*torch.Tensor, len(z.params))
	if err := z.layUnits(u.Of, s.BucketBytes); err != nil {
		return nil, err
	}
	z.scope = torch.NewLongScope("zero")
	var named []torch.NamedTensor
	z.scope.With(func() {
		world := int64(pg.Size())
		z.master = torch.Zeros([]int64{z.local}, torch.Float32, pg.Device())
		z.grad = torch.Zeros([]int64{z.local}, torch.Float32, pg.Device())
		z.buf = torch.Empty([]int64{world * z.chunk}, torch.Float32, pg.Device())
		if dt := z.params[0].DType(); stage == memplan.StageZeRO3 {
			if dt != torch.Float32 {
				z.wire = torch.Empty([]int64{world * z.chunk}, dt, pg.Device())
			}
			most := z.maxShard()
			z.ahead, z.aheadIn = torch.Empty([]int64{world * most}, dt, pg.Device()), torch.Empty([]int64{most}, dt, pg.Device())
			z.order = passOrder(len(z.units), z.tied)
		}
		for _, u := range z.units {
			torch.NoGrad(func() { z.copyFlat(u, z.master.Narrow(0, u.local, u.shard), u.lo, false, z.weight) })
			for k, i := range u.params {
				a, b := max(u.lo, u.offs[k]), min(u.lo+u.shard, u.offs[k]+z.numel(i))
				if a >= b {
					continue
				}
				pc := piece{param: i, at: a - u.offs[k], n: b - a, off: u.local + a - u.lo}
				pc.master, pc.grd = z.master.Narrow(0, pc.off, pc.n), z.grad.Narrow(0, pc.off, pc.n)
				z.pieces = append(z.pieces, pc)
			}
		}
		sort.SliceStable(z.pieces, func(a, b int) bool { return z.pieces[a].param < z.pieces[b].param })
		for _, pc := range z.pieces {
			named = append(named, torch.NamedTensor{Name: z.names[pc.param], Tensor: pc.master})
		}
	})
	if z.opt, err = newAdamW(named, s); err != nil {
		z.scope.Close()
		return nil, err
	}
	return z, nil
}

// layUnits groups the parameters into units (all in one unless eager), lays out each one's flat
// space and this rank's shard, and sizes the rounds.
func (z *zero) layUnits(units []int, bucketBytes int64) error {
	if z.eager && len(units) != len(z.params) {
		return fmt.Errorf("shard: zero: %d units for %d parameters", len(units), len(z.params))
	}
	world, rank := int64(z.pg.Size()), int64(z.pg.Rank())
	for i := range z.params {
		k := 0
		if z.eager {
			if k = units[i]; k < 0 || k > len(z.params) {
				return fmt.Errorf("shard: zero: parameter %q has unit %d", z.names[i], k)
			}
		}
		for len(z.units) <= k {
			z.units = append(z.units, &flatUnit{})
		}
		u := z.units[k]
		u.params, u.offs = append(u.params, i), append(u.offs, u.total)
		u.total += z.numel(i)
	}
	if bucketBytes <= 0 {
		bucketBytes = torch.DefaultBucketBytes
	}
	z.chunk = 1
	for _, u := range z.units {
		u.shard = (u.total + world - 1) / world
		u.lo, u.local = rank*u.shard, z.local
		z.local += u.shard
		z.chunk = max(z.chunk, min(u.shard, bucketBytes/4/world))
	}
	return nil
}

func (z *zero) weight(i int) *torch.Tensor { return z.params[i] }

// numel is parameter i's number of elements (from its shape: it may hold a placeholder).
func (z *zero) numel(i int) int64 {
	n := int64(1)
	for _, d := range z.shapes[i] {
		n *= d
	}
	return n
}

func (z *zero) gradOf(i int) *torch.Tensor { return z.params[i].Grad() }

// copyFlat copies between flat, a 1-d view, and unit u's flat space's elements [a, a+len(flat)):
// toParams false reads the tensors src gives (nil: zeros; past total: zeros) into flat,
// toParams true writes flat into them (cast to their dtype).
func (z *zero) copyFlat(u *flatUnit, flat *torch.Tensor, a int64, toParams bool, src func(int) *torch.Tensor) {
	n := flat.Numel()
	if !toParams {
		flat.Fill_(0)
	}
	size := func(k int) int64 { return z.numel(u.params[k]) }
	k := sort.Search(len(u.offs), func(k int) bool { return u.offs[k]+size(k) > a })
	for ; k < len(u.params) && u.offs[k] < a+n; k++ {
		pa, pb := max(a, u.offs[k]), min(a+n, u.offs[k]+size(k))
		t := src(u.params[k])
		if t == nil {
			continue
		}
		view := t.Reshape(-1).Narrow(0, pa-u.offs[k], pb-pa)
		part := flat.Narrow(0, pa-a, pb-pa)
		if toParams {
			view.Copy_(part)
		} else {
			part.Copy_(view)
		}
	}
}

// rounds calls fn for each round j of unit u: its shard range [j·chunk, j·chunk+n).
func (z *zero) rounds(u *flatUnit, fn func(from, n int64)) {
	for from := int64(0); from < u.shard; from += z.chunk {
		fn(from, min(z.chunk, u.shard-from))
	}
}

// reduce adds the sum over the ranks of unit u's gradients to this rank's shard of them and drops
// the parameters' own. This rank's running sum rides in its own part of the input, so the
// reduce-scatter's output is the new sum.
func (z *zero) reduce(u *flatUnit) {
	world, rank := int64(z.pg.Size()), int64(z.pg.Rank())
	torch.NoGrad(func() {
		s := torch.NewScope()
		defer s.Close()
		z.rounds(u, func(from, n int64) {
			in := z.buf.Narrow(0, 0, world*n)
			for r := int64(0); r < world; r++ {
				z.copyFlat(u, in.Narrow(0, r*n, n), r*u.shard+from, false, z.gradOf)
			}
			sum := z.grad.Narrow(0, u.local+from, n)
			in.Narrow(0, rank*n, n).Add_(sum)
			z.pg.ReduceScatter(in, sum, torch.Sum)
		})
		ps := make([]*torch.Tensor, len(u.params))
		for k, i := range u.params {
			ps[k] = z.params[i]
		}
		torch.ZeroGrad(ps)
	})
}

func (z *zero) arm() {}

// options are the pass's hooks: ZeRO-2 and -3 reduce a unit as soon as a pass has made its
// gradients, and ZeRO-3 gathers each unit's weights while the pass needs them (nothing under
// ZeRO-1).
func (z *zero) options() model.ForwardOptions {
	var o model.ForwardOptions
	if z.eager {
		o.GradsReady = func(k int) {
			if k < len(z.units) {
				z.reduce(z.units[k])
			}
		}
	}
	if z.stage == memplan.StageZeRO3 {
		o.Weights = z
	}
	return o
}

// passes is the most micro-batches any rank has (ZeRO-2 and -3: a collective), n under ZeRO-1.
func (z *zero) passes(n int) int {
	if !z.eager {
		return n
	}
	most := z.pg.AllReduce(torch.FromSlice([]float64{float64(n)}).ToDevice(z.pg.Device()), torch.Max).Float()
	return int(most)
}

// idle makes a pass's collectives with no gradients of this rank (ZeRO-2 and -3), in the order
// model.Pass makes them (see model.ForwardOptions.Weights): ZeRO-3's gathers in the forward
// pass, then the reductions from the last unit down to the embedding, each layer gathered again
// first under ZeRO-3.
func (z *zero) idle() {
	if !z.eager {
		return
	}
	last := len(z.units) - 1
	for k := 0; k <= last; k++ {
		z.Gather(k)
		if k > 0 && k < last || k == 0 && !z.tied {
			z.Release(k)
		}
	}
	z.reduce(z.units[last])
	z.Release(last)
	for k := last - 1; k >= 1; k-- {
		z.Gather(k)
		z.reduce(z.units[k])
		z.Release(k)
	}
	if !z.tied {
		z.Gather(0)
	}
	z.reduce(z.units[0])
	z.Release(0)
}

// clip reduces the gradients into this rank's shards (ZeRO-1; ZeRO-2 and -3 have already) and
// clips them by the global norm.
func (z *zero) clip(maxNorm float64) float64 {
	if !z.eager {
		for _, u := range z.units {
			z.reduce(u)
		}
	}
	var norm float64
	torch.NoGrad(func() {
		s := torch.NewScope()
		defer s.Close()
		sq := z.grad.Square().Sum(false).Reshape(1)
		norm = math.Sqrt(z.pg.AllReduce(sq, torch.Sum).Float())
		// As torch.nn.utils.clip_grad_norm_: scale by maxNorm / (norm + 1e-6), never up.
		if c := maxNorm / (norm + 1e-6); c < 1 && !math.IsNaN(norm) && !math.IsInf(norm, 0) {
			z.grad.MulScalar_(c)
		}
	})
	return norm
}

// step updates this rank's shards, gathers every rank's into the parameters (unless they are
// sharded) and clears the gradient sums.
func (z *zero) step(lr float64) {
	for _, pc := range z.pieces {
		pc.master.SetGrad(pc.grd)
	}
	z.opt.Config.LR = lr
	z.settle() // no gather of the old masters outlives the step
	z.opt.Step()
	z.opt.ZeroGrad()
	if !z.sharded { // ZeRO-3 gathers the masters unit by unit when the next pass needs them
		z.gather()
	}
	torch.NoGrad(func() { z.grad.Fill_(0) })
}

// gather all-gathers the masters and writes them into the parameters.
func (z *zero) gather() {
	world := int64(z.pg.Size())
	torch.NoGrad(func() {
		s := torch.NewScope()
		defer s.Close()
		for _, u := range z.units {
			z.rounds(u, func(from, n int64) {
				out := z.buf.Narrow(0, 0, world*n)
				z.pg.AllGatherInto(z.master.Narrow(0, u.local+from, n), out)
				for r := int64(0); r < world; r++ {
					z.copyFlat(u, out.Narrow(0, r*n, n), r*u.shard+from, true, z.weight)
				}
			})
		}
	})
}

func (z *zero) skip() {
	torch.ZeroGrad(z.params)
	torch.NoGrad(func() { z.grad.Fill_(0) })
	z.opt.Skip()
}

func (z *zero) steps() int { return int(z.opt.Steps() + z.opt.Skipped()) }

func (z *zero) close() {
	z.settle()
	z.opt.Close()
	z.scope.Close()
}
