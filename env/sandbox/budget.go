package sandbox

import (
	"context"
	"fmt"
	"sync"

	"golang.org/x/sync/semaphore"
)

// Budget caps the memory that runs may hold at once, all Sandboxes that share it together: each
// run reserves its worst case (see reservation) before it starts and gives it back when it is
// over, waiting in line while the budget is spent. Without it, 64 concurrent runs of 512 MiB
// could hold more memory than the machine has, and the OOM killer would pick the trainer.
type Budget struct {
	total int64
	sem   *semaphore.Weighted

	mu         sync.Mutex
	held, peak int64
}

// NewBudget makes a budget of total bytes.
func NewBudget(total int64) *Budget {
	return &Budget{total: total, sem: semaphore.NewWeighted(total)}
}

var (
	defaultBudgetOnce sync.Once
	defaultBudget     *Budget
)

// DefaultBudget is the process-wide budget of Sandboxes whose Config.Budget is nil: half of the
// memory this process may use (the machine's MemTotal, or its own cgroup's limit when lower),
// the other half being the trainer's.
func DefaultBudget() *Budget {
	defaultBudgetOnce.Do(func() {
		total := meminfoTotal()
		if own := ownMemoryLimit(); own > 0 && (total == 0 || own < total) {
			total = own
		}
		if total <= 0 {
			total = 8 << 30 // /proc unreadable: assume a small machine
		}
		defaultBudget = NewBudget(total / 2 &^ (1<<20 - 1)) // whole MiB: cgroups round to pages
	})
	return defaultBudget
}

// Total is the budget's size in bytes.
func (b *Budget) Total() int64 { return b.total }

// Peak is the most that runs held at once so far.
func (b *Budget) Peak() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.peak
}

// reserve waits until n bytes are free and takes them; the returned function gives them back.
// A request larger than the whole budget fails at once rather than wait forever.
func (b *Budget) reserve(ctx context.Context, n int64) (func(), error) {
	if n > b.total {
		return nil, fmt.Errorf("sandbox: a run needs %d MiB (Limits.MemoryBytes + DiskBytes) but the memory budget of all runs is %d MiB", n>>20, b.total>>20)
	}
	if err := b.sem.Acquire(ctx, n); err != nil {
		return nil, fmt.Errorf("sandbox: waiting for memory budget: %w", err)
	}
	b.mu.Lock()
	b.held += n
	b.peak = max(b.peak, b.held)
	b.mu.Unlock()
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			b.held -= n
			b.mu.Unlock()
			b.sem.Release(n)
		})
	}, nil
}

// reservation is what one run may hold at most, all kinds of memory together: its address space
// (RLIMIT_AS) and, in the minimal root, its tmpfs /work. With a cgroup this is the run's cgroup
// limit; without one the syscall filter keeps memfd and IPC memory out, so the sum still bounds
// the run (doc.go lists the small remainder).
func (iso Isolation) reservation(l Limits) int64 {
	n := l.MemoryBytes
	if iso.Chroot {
		n += l.DiskBytes
	}
	return n
}
