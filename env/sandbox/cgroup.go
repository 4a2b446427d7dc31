package sandbox

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Memory cgroups. RLIMIT_AS bounds a process's address space, not the memory it holds: pages of
// a memfd or a tmpfs file written with write() and never mapped, System V shared memory, pipe
// buffers. A memory cgroup counts all of them. While a Sandbox has runs in flight it holds a
// pool cgroup limited to its Budget's total, and each run a child of it limited to the run's
// reservation (Limits.MemoryBytes + DiskBytes): the kernel then enforces both the per-run and
// the all-runs cap, and OOM kills inside a run's cgroup pick only that run's processes, never
// the trainer. The pool is removed when its last run ends, so an idle trainer leaves nothing
// behind.
//
//   - cgroup v1 (a "memory" hierarchy): the pool is made under this process's own memory cgroup
//     (v1 allows processes beside child cgroups).
//   - cgroup v2: a cgroup that holds processes cannot hand controllers to children, so the pool
//     is made beside this process's cgroup, in its parent (which has "memory" in its
//     subtree_control whenever this cgroup has a memory limit of its own).
//
// The helper joins the run's cgroup (writes "0" to its cgroup.procs) before it does anything
// else, so every page of the interpreter is charged to it. Pools of processes that died without
// cleaning up (SIGKILL mid-run) are removed by the next New (leftovers.go): their processes are
// killed first.

// MemoryMode says how a run's memory is bounded.
type MemoryMode int

const (
	// MemoryRlimits: RLIMIT_AS for the address space, the size of the run's tmpfs for its files,
	// and the syscall filter against memory held outside both. See doc.go for what remains.
	MemoryRlimits MemoryMode = iota
	// MemoryCgroupV1: a cgroup v1 memory controller counts every page.
	MemoryCgroupV1
	// MemoryCgroupV2: a cgroup v2 memory controller counts every page.
	MemoryCgroupV2
)

func (m MemoryMode) String() string {
	switch m {
	case MemoryCgroupV1:
		return "cgroup v1"
	case MemoryCgroupV2:
		return "cgroup v2"
	}
	return "rlimits"
}

const poolPrefix = "mtgrpo-sandbox-"

var poolSeq atomic.Uint64

// pool makes a Sandbox's memory cgroups: the pool directory, while runs are in flight, and one
// child of it per run.
type pool struct {
	mode   MemoryMode
	parent string // where pool directories are made
	total  int64  // the pool's limit: the Budget's total
	seq    atomic.Uint64

	mu    sync.Mutex
	users int    // runs in flight
	dir   string // the pool directory while users > 0
}

// cgroupPlace is where this process sits in the memory controller's hierarchy.
type cgroupPlace struct {
	mode  MemoryMode
	mount string // where the hierarchy is mounted
	own   string // this process's cgroup directory
}

// findCgroup locates this process's memory cgroup from /proc/self/mountinfo and /proc/self/cgroup.
func findCgroup() (cgroupPlace, error) {
	mounts, err := os.ReadFile("/proc/self/mountinfo")
	if err != nil {
		return cgroupPlace{}, err
	}
	groups, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return cgroupPlace{}, err
	}
	return parseCgroup(string(mounts), string(groups))
}

// parseCgroup prefers a v1 memory hierarchy (when one is mounted, the v2 hierarchy cannot have
// the memory controller). mountinfo fields: id parent dev root mountpoint opts ... - fstype src
// superopts; cgroup lines: hierarchy:controllers:path.
func parseCgroup(mountinfo, cgroup string) (cgroupPlace, error) {
	var v1, v2 cgroupPlace
	var v1root, v2root string
	for _, line := range strings.Split(mountinfo, "\n") {
		pre, post, ok := strings.Cut(line, " - ")
		f, g := strings.Fields(pre), strings.Fields(post)
		if !ok || len(f) < 5 || len(g) < 3 {
			continue
		}
		switch {
		case g[0] == "cgroup" && hasWord(g[2], "memory") && v1.mount == "":
			v1, v1root = cgroupPlace{mode: MemoryCgroupV1, mount: unescapeMount(f[4])}, f[3]
		case g[0] == "cgroup2" && v2.mount == "":
			v2, v2root = cgroupPlace{mode: MemoryCgroupV2, mount: unescapeMount(f[4])}, f[3]
		}
	}
	for _, line := range strings.Split(cgroup, "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) != 3 {
			continue
		}
		switch {
		case v1.mount != "" && hasWord(parts[1], "memory"):
			v1.own = join(v1.mount, v1root, parts[2])
			return v1, nil
		case v1.mount == "" && v2.mount != "" && parts[0] == "0" && parts[1] == "":
			v2.own = join(v2.mount, v2root, parts[2])
		}
	}
	if v2.own != "" {
		return v2, nil
	}
	return cgroupPlace{}, errors.New("no memory cgroup hierarchy is mounted")
}

// join maps a cgroup path onto its mount: the mount shows the hierarchy from root on (a
// container sees its own subtree), so the root's prefix is cut from the path.
func join(mount, root, path string) string {
	if root != "/" {
		path = strings.TrimPrefix(path, root)
	}
	return filepath.Join(mount, path)
}

func hasWord(list, w string) bool {
	for _, x := range strings.Split(list, ",") {
		if x == w {
			return true
		}
	}
	return false
}

// unescapeMount undoes mountinfo's octal escapes (\040 for a space).
func unescapeMount(s string) string {
	if !strings.Contains(s, `\`) {
		return s
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] == '\\' && i+3 < len(s) {
			if n, err := strconv.ParseUint(s[i+1:i+4], 8, 8); err == nil {
				b.WriteByte(byte(n))
				i += 3
				continue
			}
		}
		b.WriteByte(s[i])
	}
	return b.String()
}

// openPool finds where this process may make memory cgroups, removes the pools of dead
// processes there, and makes and removes one pool to check that it can. The error says why no
// cgroup can be used here.
func openPool(total int64) (*pool, error) {
	place, err := findCgroup()
	if err != nil {
		return nil, err
	}
	parent := place.own
	if place.mode == MemoryCgroupV2 {
		if parent != place.mount {
			parent = filepath.Dir(parent)
		}
		if !hasWord(strings.Join(strings.Fields(readString(filepath.Join(parent, "cgroup.subtree_control"))), ","), "memory") {
			return nil, fmt.Errorf("cgroup v2: %s does not delegate the memory controller", parent)
		}
	}
	sweepLeftovers(parent, poolPrefix, func(dir string) { _ = removeCgroup(dir) })
	p := &pool{mode: place.mode, parent: parent, total: total}
	if _, err := p.acquire(); err != nil {
		return nil, err
	}
	if err := p.release(); err != nil {
		return nil, err
	}
	return p, nil
}

// acquire counts one more run in flight, making the pool directory for the first, and returns
// the directory.
func (p *pool) acquire() (string, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.users == 0 {
		dir := filepath.Join(p.parent, fmt.Sprintf("%s%s%d", poolPrefix, ownerTag(), poolSeq.Add(1)))
		if err := os.Mkdir(dir, 0o755); err != nil {
			return "", fmt.Errorf("%s: %w", p.mode, err)
		}
		if err := setupPool(p.mode, dir, p.total); err != nil {
			os.Remove(dir)
			return "", fmt.Errorf("%s: %w", p.mode, err)
		}
		p.dir = dir
	}
	p.users++
	return p.dir, nil
}

// release counts one run less, removing the pool directory after the last.
func (p *pool) release() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.users--; p.users > 0 {
		return nil
	}
	return removeCgroup(p.dir)
}

func setupPool(mode MemoryMode, dir string, total int64) error {
	if mode == MemoryCgroupV2 {
		if err := writeFile(dir, "cgroup.subtree_control", "+memory"); err != nil {
			return err
		}
		return limitMemory(mode, dir, total)
	}
	_ = writeFile(dir, "memory.use_hierarchy", "1") // already 1 (and read-only) on kernels ≥ 5.16
	if readString(filepath.Join(dir, "memory.use_hierarchy")) != "1" {
		return errors.New("memory.use_hierarchy is 0: a pool's limit would not cover its runs")
	}
	return limitMemory(mode, dir, total)
}

// limitMemory caps a cgroup's memory, swap included (a run must not push its pages to swap to
// get past its limit).
func limitMemory(mode MemoryMode, dir string, limit int64) error {
	n := strconv.FormatInt(limit, 10)
	if mode == MemoryCgroupV2 {
		if err := writeFile(dir, "memory.max", n); err != nil {
			return err
		}
		if exists(filepath.Join(dir, "memory.swap.max")) { // swap accounting compiled in
			if err := writeFile(dir, "memory.swap.max", "0"); err != nil {
				return err
			}
		}
		if exists(filepath.Join(dir, "memory.oom.group")) { // Linux ≥ 4.19: an OOM kills the whole run
			return writeFile(dir, "memory.oom.group", "1")
		}
		return nil
	}
	if err := writeFile(dir, "memory.limit_in_bytes", n); err != nil {
		return err
	}
	if exists(filepath.Join(dir, "memory.memsw.limit_in_bytes")) { // swap accounting compiled in
		return writeFile(dir, "memory.memsw.limit_in_bytes", n)
	}
	return nil
}

// newRun makes a run's cgroup limited to limit bytes. remove ends it.
func (p *pool) newRun(limit int64) (*runGroup, error) {
	parent, err := p.acquire()
	if err != nil {
		return nil, fmt.Errorf("sandbox: pool cgroup: %w", err)
	}
	g := &runGroup{pool: p, dir: filepath.Join(parent, fmt.Sprintf("run-%d", p.seq.Add(1)))}
	if err := os.Mkdir(g.dir, 0o755); err != nil {
		p.release()
		return nil, fmt.Errorf("sandbox: run cgroup: %w", err)
	}
	if err := limitMemory(p.mode, g.dir, limit); err != nil {
		g.remove()
		return nil, fmt.Errorf("sandbox: run cgroup: %w", err)
	}
	return g, nil
}

// runGroup is one run's cgroup.
type runGroup struct {
	pool *pool
	dir  string
}

// procs is the file the helper writes "0" to, to join the cgroup.
func (g *runGroup) procs() string { return filepath.Join(g.dir, "cgroup.procs") }

// kill SIGKILLs every process in the cgroup until none is left: even those that left the
// process group, in modes without a PID namespace.
func (g *runGroup) kill() {
	if g == nil {
		return
	}
	killCgroup(g.dir)
}

// oomKilled reports whether the kernel's OOM killer acted inside the run's cgroup.
func (g *runGroup) oomKilled() bool {
	if g == nil {
		return false
	}
	file, key := "memory.oom_control", "oom_kill" // v1
	if g.pool.mode == MemoryCgroupV2 {
		file = "memory.events"
	}
	for _, line := range strings.Split(readString(filepath.Join(g.dir, file)), "\n") {
		if k, v, ok := strings.Cut(line, " "); ok && k == key {
			n, _ := strconv.Atoi(v)
			return n > 0
		}
	}
	return false
}

// remove kills what is left in the run's cgroup, removes it, and releases the pool.
func (g *runGroup) remove() error {
	if g == nil {
		return nil
	}
	return errors.Join(removeCgroup(g.dir), g.pool.release())
}

// killCgroup SIGKILLs the cgroup's processes until it is empty. A process may fork between the
// read and the kill, so it loops; RLIMIT_NPROC bounds how long.
func killCgroup(dir string) {
	for i := 0; i < 200; i++ {
		pids := strings.Fields(readString(filepath.Join(dir, "cgroup.procs")))
		if len(pids) == 0 {
			return
		}
		for _, p := range pids {
			if pid, err := strconv.Atoi(p); err == nil && pid > 0 {
				_ = syscall.Kill(pid, syscall.SIGKILL)
			}
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// removeCgroup kills what is left in dir and its children and removes them all. A killed
// process leaves its cgroup asynchronously, so a busy directory is retried for a while.
func removeCgroup(dir string) error {
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.IsDir() {
			_ = removeCgroup(filepath.Join(dir, e.Name()))
		}
	}
	killCgroup(dir)
	var err error
	for i := 0; i < 100; i++ {
		if err = syscall.Rmdir(dir); err == nil || errors.Is(err, syscall.ENOENT) {
			return nil
		}
		if !errors.Is(err, syscall.EBUSY) {
			break
		}
		time.Sleep(10 * time.Millisecond)
	}
	return fmt.Errorf("sandbox: remove cgroup %s: %w", dir, err)
}

func writeFile(dir, name, value string) error {
	if err := os.WriteFile(filepath.Join(dir, name), []byte(value), 0); err != nil {
		return err
	}
	return nil
}

func readString(path string) string {
	b, err := os.ReadFile(path)
	if err != nil {
		return ""
	}
	return strings.TrimSpace(string(b))
}

func exists(path string) bool {
	_, err := os.Stat(path)
	return err == nil
}

// ownMemoryLimit is the memory limit of this process's own cgroup (0 when there is none or it
// cannot be read): a container's limit is the machine's size as far as the trainer is concerned.
func ownMemoryLimit() int64 {
	place, err := findCgroup()
	if err != nil {
		return 0
	}
	file := "memory.limit_in_bytes"
	if place.mode == MemoryCgroupV2 {
		file = "memory.max"
	}
	var limit int64
	// The nearest limit may sit on an ancestor (v1 shows it per cgroup; v2 does not inherit).
	for dir := place.own; strings.HasPrefix(dir, place.mount); dir = filepath.Dir(dir) {
		if n, err := strconv.ParseInt(readString(filepath.Join(dir, file)), 10, 64); err == nil && n > 0 && (limit == 0 || n < limit) {
			limit = n
		}
		if dir == place.mount {
			break
		}
	}
	return limit
}

// meminfoTotal reads MemTotal from /proc/meminfo, in bytes (0 if unreadable).
func meminfoTotal() int64 {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}
