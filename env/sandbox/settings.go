package sandbox

import (
	"strings"
	"time"

	"github.com/mtgrpo/mtgrpo/internal/setting"
)

// Settings is a run's env.python section: Config in the units users write (megabytes, the
// guarantees by name). Zero values keep the sandbox's defaults (DefaultLimits).
type Settings struct {
	Interpreter string `yaml:"interpreter"`
	// Helper is the sandbox's helper binary (default: mtgrpo-sandbox beside the binary).
	Helper       string        `yaml:"helper"`
	Wall         time.Duration `yaml:"wall"`
	CPUSeconds   int           `yaml:"cpu_seconds"`
	MemoryMB     int64         `yaml:"memory_mb"`
	Processes    int           `yaml:"processes"`
	FileMB       int64         `yaml:"file_mb"`
	DiskMB       int64         `yaml:"disk_mb"`
	OutputBytes  int           `yaml:"output_bytes"`
	OpenFiles    int           `yaml:"open_files"`
	SitePackages bool          `yaml:"site_packages"`
	ReadDirs     []string      `yaml:"read_dirs"`
	// Require lists isolation guarantees the run refuses to go without: minimal_root,
	// no_network, no_leftovers, unprivileged, memory_accounted, syscall_filter.
	Require []Guarantee `yaml:"require"`
	// BudgetMB caps the memory of all concurrent runs together (0: the sandbox's default).
	BudgetMB int64 `yaml:"budget_mb"`
}

// Validate names the first bad setting by its key (env.python.KEY, a setting.KeyError).
func (s Settings) Validate() error {
	return setting.Check(setting.AtLeast("env.python.wall", s.Wall, 0),
		setting.In("env.python.cpu_seconds", s.CPUSeconds, 0, setting.MaxCount),
		setting.In("env.python.memory_mb", s.MemoryMB, 0, setting.MaxCount),
		setting.In("env.python.processes", s.Processes, 0, setting.MaxCount),
		setting.In("env.python.file_mb", s.FileMB, 0, setting.MaxCount),
		setting.In("env.python.disk_mb", s.DiskMB, 0, setting.MaxCount),
		setting.In("env.python.output_bytes", s.OutputBytes, 0, setting.MaxTokens),
		setting.In("env.python.open_files", s.OpenFiles, 0, setting.MaxCount),
		setting.In("env.python.budget_mb", s.BudgetMB, 0, setting.MaxCount))
}

// Config is the sandbox's configuration; log receives New's line.
func (s Settings) Config(log func(string)) Config {
	c := Config{Python: s.Interpreter, Helper: s.Helper, ReadDirs: s.ReadDirs, SitePackages: s.SitePackages, Log: log,
		Limits: Limits{Wall: s.Wall, CPUSeconds: s.CPUSeconds, MemoryBytes: s.MemoryMB << 20, Processes: s.Processes,
			FileBytes: s.FileMB << 20, DiskBytes: s.DiskMB << 20, OutputBytes: s.OutputBytes, OpenFiles: s.OpenFiles}}
	for _, g := range s.Require {
		c.Require |= g
	}
	if s.BudgetMB > 0 {
		c.Budget = NewBudget(s.BudgetMB << 20)
	}
	return c
}

// guaranteeKeys are the guarantees' names in a configuration, in bit order.
var guaranteeKeys = func() []string {
	keys := make([]string, len(guaranteeNames))
	for i, n := range guaranteeNames {
		keys[i] = strings.ReplaceAll(n, " ", "_")
	}
	return keys
}()

// ParseGuarantee reads one guarantee by its configuration name (minimal_root, no_network, ...).
func ParseGuarantee(s string) (Guarantee, error) {
	name, err := setting.Parse("guarantee", s, guaranteeKeys, nil)
	if err != nil {
		return 0, err
	}
	for i, k := range guaranteeKeys {
		if k == name {
			return 1 << i, nil
		}
	}
	return 0, nil // unreachable: Parse returned one of guaranteeKeys
}

// UnmarshalText reads one guarantee by its configuration name (YAML, flags).
func (g *Guarantee) UnmarshalText(b []byte) error {
	v, err := ParseGuarantee(string(b))
	if err == nil {
		*g = v
	}
	return err
}

// MarshalText writes one guarantee by its configuration name, or the names of several joined
// by commas (String's, in configuration spelling).
func (g Guarantee) MarshalText() ([]byte, error) {
	var names []string
	for i, k := range guaranteeKeys {
		if g&(1<<i) != 0 {
			names = append(names, k)
		}
	}
	return []byte(strings.Join(names, ",")), nil
}
