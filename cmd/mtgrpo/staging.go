package main

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	rundir "github.com/mtgrpo/mtgrpo/cmd/internal/run"
	"github.com/mtgrpo/mtgrpo/internal/staged"
)

// staging is a directory a command fills beside its destination and moves into place when
// complete (internal/staged). A process killed meanwhile leaves only the staging directory,
// named after its host, pid and start time; the next command writing beside it on this host
// removes it once its process is gone.
type staging struct {
	dst   string
	dir   string // the staged directory to fill
	force bool
	d     *staged.Dir
}

// newStaging refuses a non-empty dst unless force (before any work is done), clears what dead
// writers left beside dst and makes a fresh staging directory.
func newStaging(dst string, force bool) (*staging, error) {
	dst = filepath.Clean(dst)
	if err := outsideCheckpoints(dst); err != nil {
		return nil, usagef("%v", err)
	}
	names, err := entries(dst)
	if err != nil {
		return nil, err
	}
	if len(names) > 0 && !force {
		return nil, usagef("%s is not empty (%s); pass --force to write over the files this command writes", dst, listSome(names))
	}
	d, err := staged.Begin(dst)
	if err != nil {
		return nil, err
	}
	return &staging{dst: dst, dir: d.Path, force: force, d: d}, nil
}

// entries lists a directory's names; a missing directory has none; a file in its place is an error.
func entries(dir string) ([]string, error) {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	names := make([]string, len(ents))
	for i, e := range ents {
		names[i] = e.Name()
	}
	return names, nil
}

// outsideCheckpoints refuses a destination that is or lies in a checkpoint: every command that
// writes a directory checks its destination with it.
func outsideCheckpoints(dst string) error {
	if ck, ok := checkpointAround(dst); ok {
		return fmt.Errorf("%s is inside the checkpoint %s: writing there would break the checkpoint's manifest; "+
			"choose a directory outside it", dst, ck)
	}
	return nil
}

// checkpointAround finds a checkpoint (a directory holding a checkpoint's manifest) that dst is or
// lies in, following symlinks: a destination reached through a link to a checkpoint is that
// checkpoint.
func checkpointAround(dst string) (string, bool) {
	p, err := resolve(dst)
	if err != nil {
		return "", false
	}
	for {
		if rundir.IsCheckpoint(p) {
			return p, true
		}
		up := filepath.Dir(p)
		if up == p {
			return "", false
		}
		p = up
	}
}

// resolve is p made absolute with the symlinks of its longest existing prefix resolved (the rest
// does not exist yet, so it holds no links).
func resolve(p string) (string, error) {
	p, err := filepath.Abs(p)
	if err != nil {
		return "", err
	}
	var rest []string
	for {
		r, err := filepath.EvalSymlinks(p)
		if err == nil {
			return filepath.Join(append([]string{r}, rest...)...), nil
		}
		up := filepath.Dir(p)
		if up == p {
			return "", err
		}
		rest = append([]string{filepath.Base(p)}, rest...)
		p = up
	}
}

// weightFile matches the files that decide which weights a directory loads: a stale one left
// beside new weights (an index beside a single file, or shards of another count) would be read
// instead of them or mixed in.
var weightFile = regexp.MustCompile(`^(model\.safetensors|model\.safetensors\.index\.json|model-\d{5}-of-\d{5}\.safetensors)$`)

// commit moves the staged files into dst: a rename of the whole directory when dst is new or
// empty; with force, a rename per file over a non-empty dst, after checking that no weight file
// of another checkpoint would stay beside the new ones (init never deletes files it did not write).
func (s *staging) commit() error {
	names, err := entries(s.dir)
	if err != nil {
		return err
	}
	existing, err := entries(s.dst)
	if err != nil {
		return err
	}
	if len(existing) == 0 {
		return s.d.Commit()
	}
	if !s.force {
		return fmt.Errorf("%s is not empty (%s); pass --force to write over the files this command writes", s.dst, listSome(existing))
	}
	var shadow []string
	for _, n := range existing {
		if weightFile.MatchString(n) && !slices.Contains(names, n) {
			shadow = append(shadow, n)
		}
	}
	if len(shadow) > 0 {
		return fmt.Errorf("%s holds weights of another checkpoint (%s) that would be loaded instead of or beside the new ones; "+
			"remove them or choose another directory", s.dst, listSome(shadow))
	}
	if err := staged.SyncTree(s.dir); err != nil {
		return err
	}
	for _, n := range names {
		if err := os.Rename(filepath.Join(s.dir, n), filepath.Join(s.dst, n)); err != nil {
			return err
		}
	}
	s.d.Discard() // the staging directory, now empty
	return staged.SyncTree(s.dst)
}

// discard removes the staging directory unless it was committed.
func (s *staging) discard() { s.d.Discard() }

// listSome shows up to 4 names and a count of the rest.
func listSome(names []string) string {
	if len(names) <= 4 {
		return strings.Join(names, ", ")
	}
	return fmt.Sprintf("%s and %d more", strings.Join(names[:4], ", "), len(names)-4)
}
