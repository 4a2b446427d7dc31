package run

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"

	"github.com/rs/zerolog"
	"gopkg.in/yaml.v3"

	"github.com/mtgrpo/mtgrpo/cmd/internal/tboard"
	"github.com/mtgrpo/mtgrpo/internal/staged"
)

// File names inside a run directory.
const (
	ConfigFile     = "config.yaml"
	MetricsFile    = "metrics.jsonl"
	LogFile        = "train.log"
	SamplesDir     = "samples"
	CheckpointsDir = "checkpoints"
	lockFile       = ".lock"
)

// Options open a run directory.
type Options struct {
	Dir string
	// Config is saved as config.yaml when the run starts: its YAML() method's bytes when it has
	// one, else yaml.v3's encoding (struct fields by their yaml tags).
	Config any
	// Console receives the log beside the file: readable text when it is a terminal, JSON lines
	// otherwise (nil: the file only).
	Console *os.File
	// Resume continues a run in Dir from step ResumeStep: metrics of later steps are dropped (they
	// will be written again) and TensorBoard is told to drop them too; ResumeStep -1 starts the
	// run over (a run that never saved a checkpoint). Without Resume a directory that already
	// holds a run is refused.
	Resume     bool
	ResumeStep int
	// KeepCheckpoints is how many of the newest checkpoints to keep (0: all).
	KeepCheckpoints int
}

// Run is an open run directory.
type Run struct {
	Dir         string
	Log         zerolog.Logger
	Checkpoints *Checkpoints

	fileLog zerolog.Logger // the log file alone
	root    *os.Root       // the run directory: its own files are opened only inside it
	lock    *os.File
	logFile *os.File
	metrics *os.File
	events  *tboard.Writer
}

// Open creates (or, with Resume, reopens) a run directory and starts its log, metrics and
// TensorBoard files. Errors name the directory and what failed.
func Open(o Options) (*Run, error) {
	if o.Dir == "" {
		return nil, errors.New("run: no run directory")
	}
	if err := os.MkdirAll(o.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("run: cannot create run directory: %w", err)
	}
	root, err := os.OpenRoot(o.Dir)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	r := &Run{Dir: o.Dir, root: root}
	ok := false
	defer func() {
		if !ok {
			r.Close()
		}
	}()
	// Run directories are shared and unpacked from others' archives: a link among the run's own
	// entries that leads out of the directory is refused, never written through.
	for _, name := range []string{lockFile, LogFile, MetricsFile, CheckpointsDir, SamplesDir} {
		if err := inside(root, name); err != nil {
			return nil, err
		}
	}
	if err := r.takeLock(); err != nil {
		return nil, err
	}
	// A run that failed before its first step left an empty metrics file: nothing to keep.
	if st, err := root.Stat(MetricsFile); err == nil && st.Size() > 0 && !o.Resume {
		return nil, fmt.Errorf("run: %s already holds a run (%s); resume it or choose another directory", o.Dir, MetricsFile)
	}
	if o.Config != nil {
		if err := writeConfig(r.path(ConfigFile), o.Config); err != nil {
			return nil, err
		}
	}
	if r.logFile, err = root.OpenFile(LogFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, explain(root, LogFile, err)
	}
	r.Log = newLogger(r.logFile, o.Console)
	r.fileLog = newLogger(r.logFile, nil)
	if o.Resume {
		if err := truncateMetrics(root, o.ResumeStep); err != nil {
			return nil, err
		}
	}
	if r.metrics, err = root.OpenFile(MetricsFile, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644); err != nil {
		return nil, explain(root, MetricsFile, err)
	}
	if r.events, err = tboard.Create(o.Dir); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if o.Resume {
		if err := r.events.Restart(int64(max(o.ResumeStep, 0))); err != nil {
			return nil, fmt.Errorf("run: %w", err)
		}
	}
	if r.Checkpoints, err = OpenCheckpoints(r.path(CheckpointsDir), o.KeepCheckpoints); err != nil {
		return nil, err
	}
	ok = true
	return r, nil
}

func (r *Run) path(name string) string { return filepath.Join(r.Dir, name) }

// takeLock holds an exclusive flock on RUN/.lock for the process's life: a second process writing
// the same run would interleave metrics and race on checkpoints.
func (r *Run) takeLock() error {
	f, err := r.root.OpenFile(lockFile, os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return fmt.Errorf("run: run directory not writable: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		return fmt.Errorf("run: %s is in use by another process (%w)", r.Dir, err)
	}
	r.lock = f
	return nil
}

// writeConfig saves the resolved configuration atomically: its own YAML rendering when it has
// one, else yaml.v3's.
func writeConfig(path string, cfg any) error {
	if y, ok := cfg.(interface{ YAML() []byte }); ok {
		return writeFileAtomic(path, y.YAML())
	}
	b, err := yaml.Marshal(cfg)
	if err != nil {
		return fmt.Errorf("run: config: %w", err)
	}
	return writeFileAtomic(path, b)
}

// writeFileAtomic writes path through a synced temporary file and a rename, so a reader (or a
// crash) sees the old content or the new, never a part.
func writeFileAtomic(path string, b []byte) error {
	if err := staged.WriteFile(path, b, 0o644); err != nil {
		return fmt.Errorf("run: %w", err)
	}
	return nil
}

// Failed records in the log file the error that ended the command (the console gets it from the
// command itself), so that train.log says why a run stopped.
func (r *Run) Failed(err error) {
	r.fileLog.Error().Msg(err.Error())
}

// Close flushes and closes the run's files; the first error is returned.
func (r *Run) Close() error {
	var first error
	keep := func(err error) {
		if err != nil && first == nil {
			first = err
		}
	}
	if r.events != nil {
		keep(r.events.Close())
		r.events = nil
	}
	for _, f := range []**os.File{&r.metrics, &r.logFile} {
		if *f != nil {
			keep((*f).Sync())
			keep((*f).Close())
			*f = nil
		}
	}
	if r.lock != nil { // closing the descriptor releases the flock
		keep(r.lock.Close())
		r.lock = nil
	}
	if r.root != nil {
		keep(r.root.Close())
		r.root = nil
	}
	return first
}
