package grpo

import (
	"fmt"
	"math"
	"sort"

	"github.com/mtgrpo/mtgrpo/torch"
)

// ZeRO-1 (Rajbhandari et al., arXiv 1910.02054, "stage 1": optimizer state partitioning) over the
// training ranks. The trainable parameters, concatenated in order and flattened, form one space of
// `total` elements, cut into world equal contiguous shards (the last padded). Rank r keeps, for
// its shard only, the float32 master weights, the float32 gradient sum and AdamW's two moments:
// 16 bytes per element of the shard, against 16 per element of the model for every rank without
// sharding (12 for float32 parameters). A step:
//
//	reduce:  gradients → reduce-scatter in rounds of `chunk` elements per rank → this rank's shard
//	         (the parameters' own gradients are dropped once sent)
//	clip:    global norm = sqrt(Σ over ranks of Σ shard²) (one small all-reduce), scaled as
//	         torch.nn.utils.clip_grad_norm_ does
//	update:  torch.AdamW over the shard's pieces (one view per parameter it overlaps, named as the
//	         parameter, so weight-decay exemptions and per-parameter step counts carry over)
//	gather:  all-gather the updated masters in rounds, cast into every rank's parameters
//
// The rounds keep the extra device memory at one bucket (DistConfig.BucketBytes) per rank besides
// the shard. State gathers whole tensors in the unsharded optimizer's format, so a sharded run's
// checkpoint resumes at any world size, sharded or not; LoadState takes such a state and keeps
// this rank's slices. Deviation from DeepSpeed: gradients are reduced in float32 whatever the
// parameters' dtype (exact sums of bf16 gradients, twice the traffic of bf16 buckets).
type shardedAdamW struct {
	pg     *torch.ProcessGroup
	names  []string
	params []*torch.Tensor
	offs   []int64 // each parameter's first element in the flat space
	// total elements, per-rank shard length, this rank's first element, elements per round
	total, shard, lo, chunk int64
	scope                   *torch.Scope
	master, grad            *torch.Tensor // [shard] float32
	buf                     *torch.Tensor // [world·chunk] float32: one round's input or output
	pieces                  []piece
	opt                     *torch.AdamW
}

// piece is the part of a parameter in this rank's shard: elements [at, at+n) of the flattened
// parameter, at offset off of the shard.
type piece struct {
	param       int
	at, n, off  int64
	master, grd *torch.Tensor // views of the shard's master and gradient
}

// newShardedAdamW shards params' optimizer state across pg's ranks; every rank calls it with the
// same parameters. Call on the torch thread.
func newShardedAdamW(pg *torch.ProcessGroup, params []torch.NamedTensor, lr float64, o OptimConfig,
	bucketBytes int64) (z *shardedAdamW, err error) {
	defer torch.Recover(&err)
	z = &shardedAdamW{pg: pg}
	for _, p := range params {
		if dt := p.Tensor.DType(); dt != torch.Float32 && dt != torch.BFloat16 && dt != torch.Float16 {
			return nil, fmt.Errorf("grpo: zero1: parameter %q is %s: float32, bfloat16 or float16 only", p.Name, dt)
		}
		z.names, z.params = append(z.names, p.Name), append(z.params, p.Tensor)
		z.offs = append(z.offs, z.total)
		z.total += p.Tensor.Numel()
	}
	world := int64(pg.Size())
	z.shard = (z.total + world - 1) / world
	z.lo = int64(pg.Rank()) * z.shard
	if bucketBytes <= 0 {
		bucketBytes = torch.DefaultBucketBytes
	}
	z.chunk = max(1, min(z.shard, bucketBytes/4/world))
	z.scope = torch.NewLongScope("zero1")
	var named []torch.NamedTensor
	z.scope.With(func() {
		z.master = torch.Zeros([]int64{z.shard}, torch.Float32, pg.Device())
		z.grad = torch.Zeros([]int64{z.shard}, torch.Float32, pg.Device())
		z.buf = torch.Empty([]int64{world * z.chunk}, torch.Float32, pg.Device())
		torch.NoGrad(func() { z.copyFlat(z.master, z.lo, false, z.weight) })
		for i, p := range z.params {
			a, b := max(z.lo, z.offs[i]), min(z.lo+z.shard, z.offs[i]+p.Numel())
			if a >= b {
				continue
			}
			pc := piece{param: i, at: a - z.offs[i], n: b - a, off: a - z.lo}
			pc.master, pc.grd = z.master.Narrow(0, pc.off, pc.n), z.grad.Narrow(0, pc.off, pc.n)
			z.pieces = append(z.pieces, pc)
			named = append(named, torch.NamedTensor{Name: z.names[i], Tensor: pc.master})
		}
	})
	if z.opt, err = newAdamW(named, lr, o); err != nil {
		z.scope.Close()
		return nil, err
	}
	return z, nil
}

func (z *shardedAdamW) weight(i int) *torch.Tensor { return z.params[i] }

func (z *shardedAdamW) gradOf(i int) *torch.Tensor { return z.params[i].Grad() }

// copyFlat copies between flat, a 1-d view, and the flat space's elements [a, a+len(flat)):
// toParams false reads the tensors src gives (nil: zeros; past total: zeros) into flat,
// toParams true writes flat into them (cast to their dtype).
func (z *shardedAdamW) copyFlat(flat *torch.Tensor, a int64, toParams bool, src func(int) *torch.Tensor) {
	n := flat.Numel()
	if !toParams {
		flat.Fill_(0)
	}
	i := sort.Search(len(z.offs), func(i int) bool { return z.offs[i]+z.params[i].Numel() > a })
	for ; i < len(z.params) && z.offs[i] < a+n; i++ {
		pa, pb := max(a, z.offs[i]), min(a+n, z.offs[i]+z.params[i].Numel())
		t := src(i)
		if t == nil {
			continue
		}
		view := t.Reshape(-1).Narrow(0, pa-z.offs[i], pb-pa)
		part := flat.Narrow(0, pa-a, pb-pa)
		if toParams {
			view.Copy_(part)
		} else {
			part.Copy_(view)
		}
	}
}

// rounds calls fn for each round j: its shard range [j·chunk, j·chunk+n).
func (z *shardedAdamW) rounds(fn func(from, n int64)) {
	for from := int64(0); from < z.shard; from += z.chunk {
		fn(from, min(z.chunk, z.shard-from))
	}
}

func (z *shardedAdamW) Arm() {}

// ClipGradNorm reduce-scatters the gradients into this rank's shard, drops the parameters' own,
// and clips the shard by the global norm.
func (z *shardedAdamW) ClipGradNorm(maxNorm float64) float64 {
	world := int64(z.pg.Size())
	var norm float64
	torch.NoGrad(func() {
		s := torch.NewScope()
		defer s.Close()
		z.rounds(func(from, n int64) {
			in := z.buf.Narrow(0, 0, world*n)
			for r := int64(0); r < world; r++ {
				z.copyFlat(in.Narrow(0, r*n, n), r*z.shard+from, false, z.gradOf)
			}
			z.pg.ReduceScatter(in, z.grad.Narrow(0, from, n), torch.Sum)
		})
		torch.ZeroGrad(z.params)
		sq := z.grad.Square().Sum(false).Reshape(1)
		norm = math.Sqrt(z.pg.AllReduce(sq, torch.Sum).Float())
		// As torch.nn.utils.clip_grad_norm_: scale by maxNorm / (norm + 1e-6), never up.
		if c := maxNorm / (norm + 1e-6); c < 1 && !math.IsNaN(norm) && !math.IsInf(norm, 0) {
			z.grad.MulScalar_(c)
		}
	})
	return norm
}

// Step updates this rank's shard and gathers every rank's into the parameters.
func (z *shardedAdamW) Step(lr float64) {
	for _, pc := range z.pieces {
		pc.master.SetGrad(pc.grd)
	}
	z.opt.Config.LR = lr
	z.opt.Step()
	z.opt.ZeroGrad()
	z.gather()
}

// gather all-gathers the masters and writes them into the parameters.
func (z *shardedAdamW) gather() {
	world := int64(z.pg.Size())
	torch.NoGrad(func() {
		s := torch.NewScope()
		defer s.Close()
		z.rounds(func(from, n int64) {
			out := z.buf.Narrow(0, 0, world*n)
			z.pg.AllGatherInto(z.master.Narrow(0, from, n), out)
			for r := int64(0); r < world; r++ {
				z.copyFlat(out.Narrow(0, r*n, n), r*z.shard+from, true, z.weight)
			}
		})
	})
}

func (z *shardedAdamW) Skip() {
	torch.ZeroGrad(z.params)
	z.opt.Skip()
}

// Master is nil: no rank holds a whole master (State has them).
func (z *shardedAdamW) Master(string) *torch.Tensor { return nil }

func (z *shardedAdamW) Close() {
	z.opt.Close()
	z.scope.Close()
}
