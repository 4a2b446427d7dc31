package run

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/mtgrpo/mtgrpo/internal/bounded"
	"github.com/mtgrpo/mtgrpo/internal/staged"
)

// Manifest is written last into every checkpoint: the files the trainer wrote, with sizes and
// SHA-256 sums. A checkpoint directory without a valid manifest is not a checkpoint.
type Manifest struct {
	Step  int            `json:"step"`
	Files []ManifestFile `json:"files"`
}

// ManifestFile is one file of a checkpoint, its path relative to the checkpoint directory.
type ManifestFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
}

// ManifestName is the manifest's file name inside a checkpoint.
const ManifestName = "MANIFEST.json"

// Checkpoint is a complete checkpoint on disk.
type Checkpoint struct {
	Step int
	Dir  string
}

// Checkpoints is a run's checkpoints/ directory. Each checkpoint is written into a temporary
// directory (internal/staged), its manifest written, every file and directory synced (the staged
// directory's Commit), then renamed to step-NNNNNNNN and the parent synced: a crash at any point leaves either the
// previous set of checkpoints or the new one, and a temporary directory that the next Open (or
// Save) on this host removes. Another host's temporaries are left alone.
type Checkpoints struct {
	dir  string
	keep int
}

const stepPrefix = "step-"

// OpenCheckpoints opens (creating) dir and removes the temporary directories that processes of
// this host which no longer run left there. keep is how many checkpoints Save keeps (0: all).
func OpenCheckpoints(dir string, keep int) (*Checkpoints, error) {
	if keep < 0 {
		return nil, fmt.Errorf("run: keep %d checkpoints: must be at least 0", keep)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	if err := staged.Sweep(dir); err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	return &Checkpoints{dir: dir, keep: keep}, nil
}

func stepName(step int) string { return fmt.Sprintf("%s%08d", stepPrefix, step) }

// Save writes checkpoint step: write fills the directory it is given (any files and
// subdirectories), then Save makes it durable and visible as the newest checkpoint and removes
// checkpoints beyond the kept number. A failed write leaves no trace.
func (c *Checkpoints) Save(step int, write func(dir string) error) (Checkpoint, error) {
	if step < 0 {
		return Checkpoint{}, fmt.Errorf("run: checkpoint step %d: must be at least 0", step)
	}
	final := filepath.Join(c.dir, stepName(step))
	d, err := staged.Begin(final)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("run: checkpoint %d: %w", step, err)
	}
	defer d.Discard()
	if err := write(d.Path); err != nil {
		return Checkpoint{}, fmt.Errorf("run: checkpoint %d: %w", step, err)
	}
	m, err := seal(d.Path, step)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("run: checkpoint %d: %w", step, err)
	}
	b, _ := json.MarshalIndent(m, "", "  ")
	if err := writeFileAtomic(filepath.Join(d.Path, ManifestName), b); err != nil {
		return Checkpoint{}, err
	}
	// Commit replaces a checkpoint of the same step (saved again after a resume) whole.
	if err := d.Commit(); err != nil {
		return Checkpoint{}, fmt.Errorf("run: checkpoint %d: %w", step, err)
	}
	return Checkpoint{Step: step, Dir: final}, c.prune()
}

// seal returns the manifest of every file under dir. It syncs nothing: the staged directory's
// Commit syncs the whole tree, manifest included, before it takes the checkpoint's name.
func seal(dir string, step int) (*Manifest, error) {
	m := &Manifest{Step: step}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if !d.Type().IsRegular() {
			return fmt.Errorf("%s is not a regular file", path)
		}
		rel, _ := filepath.Rel(dir, path)
		f, err := hashFile(path)
		if err != nil {
			return err
		}
		f.Path = filepath.ToSlash(rel)
		m.Files = append(m.Files, f)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return m, nil
}

// hashFile sizes and hashes a file.
func hashFile(path string) (ManifestFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return ManifestFile{}, err
	}
	defer f.Close()
	h := sha256.New()
	n, err := io.Copy(h, f)
	if err != nil {
		return ManifestFile{}, err
	}
	return ManifestFile{Size: n, SHA256: hex.EncodeToString(h.Sum(nil))}, nil
}

// List returns the complete checkpoints (a manifest whose files are all there with their sizes),
// oldest first. Directories that fail the check are skipped (see Verify for why one failed),
// except one whose name disagrees with its manifest's step: that is an error (ErrMisnamed), since
// the newest checkpoint could not be told.
func (c *Checkpoints) List() ([]Checkpoint, error) {
	ents, err := os.ReadDir(c.dir)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	var out []Checkpoint
	for _, e := range ents {
		rest, ok := strings.CutPrefix(e.Name(), stepPrefix)
		step, err := strconv.Atoi(rest)
		if !ok || err != nil || !e.IsDir() {
			continue
		}
		dir := filepath.Join(c.dir, e.Name())
		switch err := Verify(dir, false); {
		case err == nil:
			out = append(out, Checkpoint{Step: step, Dir: dir})
		case errors.Is(err, ErrMisnamed):
			return nil, err
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Step < out[j].Step })
	return out, nil
}

// Latest is the newest complete checkpoint; ok is false when there is none.
func (c *Checkpoints) Latest() (Checkpoint, bool, error) {
	all, err := c.List()
	if err != nil || len(all) == 0 {
		return Checkpoint{}, false, err
	}
	return all[len(all)-1], true, nil
}

// prune removes the oldest complete checkpoints beyond the kept number.
func (c *Checkpoints) prune() error {
	if c.keep == 0 {
		return nil
	}
	all, err := c.List()
	if err != nil {
		return err
	}
	for i := 0; i < len(all)-c.keep; i++ {
		if err := staged.Remove(all[i].Dir); err != nil { // a crash midway leaves a temporary, not a partial step
			return fmt.Errorf("run: removing old checkpoint: %w", err)
		}
	}
	return nil
}

// IsCheckpoint reports whether dir holds a checkpoint's manifest (a JSON object with a step and a
// list of files), whether or not the files are all there.
func IsCheckpoint(dir string) bool {
	b, err := bounded.ReadFile(filepath.Join(dir, ManifestName), bounded.Small)
	if err != nil {
		return false
	}
	var m struct {
		Step  *int           `json:"step"`
		Files []ManifestFile `json:"files"`
	}
	return json.Unmarshal(b, &m) == nil && m.Step != nil && m.Files != nil
}

// ErrMisnamed is a checkpoint directory named step-N whose manifest holds another step: a
// checkpoint's identity is its manifest, never its directory's name.
var ErrMisnamed = errors.New("name and manifest disagree")

// Verify checks a checkpoint against its manifest: every listed file present with its size, and
// with contents also its SHA-256; a directory named step-N must hold step N. The error names the
// file that differs.
func Verify(dir string, contents bool) error {
	b, err := bounded.ReadFile(filepath.Join(dir, ManifestName), bounded.Small)
	if err != nil {
		return fmt.Errorf("run: checkpoint %s: %w", dir, err)
	}
	var m Manifest
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("run: checkpoint %s: %s: %w", dir, ManifestName, err)
	}
	if rest, ok := strings.CutPrefix(filepath.Base(filepath.Clean(dir)), stepPrefix); ok {
		if n, err := strconv.Atoi(rest); err == nil && n != m.Step {
			return fmt.Errorf("run: checkpoint %s: %w: its name says step %d, its %s step %d (rename it %s or move it out of %s)",
				dir, ErrMisnamed, n, ManifestName, m.Step, stepName(m.Step), filepath.Dir(filepath.Clean(dir)))
		}
	}
	for _, f := range m.Files {
		path := filepath.Join(dir, filepath.FromSlash(f.Path))
		if !contents {
			st, err := os.Stat(path)
			if err != nil {
				return fmt.Errorf("run: checkpoint %s: %w", dir, err)
			}
			if st.Size() != f.Size {
				return fmt.Errorf("run: checkpoint %s: %s has %d bytes, the manifest says %d", dir, f.Path, st.Size(), f.Size)
			}
			continue
		}
		got, err := hashFile(path)
		if err != nil {
			return fmt.Errorf("run: checkpoint %s: %w", dir, err)
		}
		if got.Size != f.Size || got.SHA256 != f.SHA256 {
			return fmt.Errorf("run: checkpoint %s: %s differs from the manifest (size %d, want %d)", dir, f.Path, got.Size, f.Size)
		}
	}
	return nil
}
