package staged

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// Dir is a directory being written beside its destination: fill Path, then Commit. Discard
// (deferred) removes it unless it was committed.
type Dir struct {
	// Path is the temporary directory to write into.
	Path string
	dst  string
	done bool
}

// Begin starts writing the directory dst: it sweeps the temporaries dead writers left beside dst
// (Sweep), creates dst's parent if needed and a fresh temporary directory for this process.
func Begin(dst string) (*Dir, error) {
	dst = filepath.Clean(dst)
	parent := filepath.Dir(dst)
	if err := os.MkdirAll(parent, 0o755); err != nil {
		return nil, fmt.Errorf("staged: %s: cannot create its parent directory: %w", dst, err)
	}
	if err := Sweep(parent); err != nil {
		return nil, err
	}
	tmp := tempName(dst, "staged")
	if err := os.RemoveAll(tmp); err != nil {
		return nil, fmt.Errorf("staged: %w", err)
	}
	if err := os.Mkdir(tmp, 0o755); err != nil {
		return nil, fmt.Errorf("staged: %s: cannot write beside it: %w", dst, err)
	}
	return &Dir{Path: tmp, dst: dst}, nil
}

// Commit syncs every file and directory under Path, replaces dst with it (an existing dst is
// moved aside first and removed after, so a crash leaves one of the two whole) and syncs dst's
// parent.
func (d *Dir) Commit() error {
	if d.done {
		return fmt.Errorf("staged: %s: already committed", d.dst)
	}
	if err := SyncTree(d.Path); err != nil {
		return err
	}
	if err := replace(d.Path, d.dst); err != nil {
		return err
	}
	d.done = true
	return syncDir(filepath.Dir(d.dst))
}

// Discard removes the temporary directory unless it was committed (safe to defer).
func (d *Dir) Discard() {
	if !d.done {
		os.RemoveAll(d.Path)
		d.done = true
	}
}

// replace renames src to dst, moving an existing dst aside first and removing it after.
func replace(src, dst string) error {
	old := ""
	if _, err := os.Lstat(dst); err == nil {
		old = tempName(dst, "old")
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("staged: %w", err)
		}
		if err := os.Rename(dst, old); err != nil {
			return fmt.Errorf("staged: moving %s aside: %w", dst, err)
		}
	}
	if err := os.Rename(src, dst); err != nil {
		return fmt.Errorf("staged: %w", err)
	}
	if old != "" {
		if err := os.RemoveAll(old); err != nil {
			return fmt.Errorf("staged: removing the replaced %s: %w", dst, err)
		}
	}
	return nil
}

// Remove deletes the directory (or file) at path so that a crash midway leaves a temporary that
// a later Sweep removes, never path with part of its files: it is renamed aside first. A missing
// path is no error.
func Remove(path string) error {
	path = filepath.Clean(path)
	gone := tempName(path, "old")
	if err := os.Rename(path, gone); err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil
		}
		return fmt.Errorf("staged: removing %s: %w", path, err)
	}
	if err := os.RemoveAll(gone); err != nil {
		return fmt.Errorf("staged: removing %s: %w", path, err)
	}
	return syncDir(filepath.Dir(path))
}

// WriteFile writes path through a synced temporary file and a rename, so that a reader (or a
// crash) sees the old content or the new, never a part. A link at path is replaced, not written
// through.
func WriteFile(path string, b []byte, perm fs.FileMode) error {
	root, err := os.OpenRoot(filepath.Dir(path))
	if err != nil {
		return fmt.Errorf("staged: writing %s: %w", path, err)
	}
	defer root.Close()
	return WriteFileIn(root, filepath.Base(path), b, perm)
}

// WriteFileIn is WriteFile for name (relative, slash-separated) inside root: neither the
// temporary nor the rename leaves root, whatever links name's directories are, so that a
// directory shared with others (a run directory) is written only inside.
func WriteFileIn(root *os.Root, name string, b []byte, perm fs.FileMode) error {
	path := filepath.Join(root.Name(), filepath.FromSlash(name))
	name = filepath.FromSlash(name)
	tmp := tempName(name, "staged")
	f, err := root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return fmt.Errorf("staged: writing %s: %w", path, err)
	}
	_, err = f.Write(b)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = root.Rename(tmp, name)
	}
	if err != nil {
		root.Remove(tmp)
		return fmt.Errorf("staged: writing %s: %w", path, err)
	}
	d, err := root.Open(filepath.Dir(name))
	if err != nil {
		return fmt.Errorf("staged: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("staged: syncing %s: %w", filepath.Dir(path), err)
	}
	return nil
}

// Sweep removes from dir the temporaries whose writer was a process of this host that no longer
// runs (see the package doc); another host's temporaries, and names it does not recognise, stay.
func Sweep(dir string) error {
	ents, err := os.ReadDir(dir)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("staged: %w", err)
	}
	me := self()
	for _, e := range ents {
		t, ok := parseTemporary(e.Name())
		if !ok || !deadLocal(t.owner, me) {
			continue
		}
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("staged: removing what an interrupted writer left: %w", err)
		}
	}
	return nil
}

// SyncTree syncs every file and directory under dir, dir included.
func SyncTree(dir string) error {
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && !d.Type().IsRegular() {
			return nil
		}
		f, err := os.Open(path)
		if err != nil {
			return err
		}
		defer f.Close()
		return f.Sync()
	})
	if err != nil {
		return fmt.Errorf("staged: syncing %s: %w", dir, err)
	}
	return nil
}

// tempName is the temporary of kind ("staged" or "old") for path, owned by this process.
func tempName(path, kind string) string {
	return filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+"."+kind+"-"+self().String())
}

func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("staged: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil {
		return fmt.Errorf("staged: syncing %s: %w", dir, err)
	}
	return nil
}

// File is a file being written beside its destination, for contents too large to hold: write
// to it, then Commit; Discard (deferred) removes it unless it was committed. Until Commit the
// destination keeps its old contents, whatever happens to the writer (a full disk, a crash).
type File struct {
	*os.File
	dst  string
	done bool
}

// Create starts writing the file path: it sweeps the temporaries dead writers left beside path
// (Sweep) and creates a fresh temporary for this process.
func Create(path string, perm fs.FileMode) (*File, error) {
	path = filepath.Clean(path)
	if err := Sweep(filepath.Dir(path)); err != nil {
		return nil, err
	}
	f, err := os.OpenFile(tempName(path, "staged"), os.O_WRONLY|os.O_CREATE|os.O_TRUNC, perm)
	if err != nil {
		return nil, fmt.Errorf("staged: writing %s: %w", path, err)
	}
	return &File{File: f, dst: path}, nil
}

// Commit syncs and closes the file, renames it onto the destination and syncs the directory.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("staged: %s: already committed", f.dst)
	}
	err := f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(f.Name(), f.dst)
	}
	if err != nil {
		f.Discard()
		return fmt.Errorf("staged: writing %s: %w", f.dst, err)
	}
	f.done = true
	return syncDir(filepath.Dir(f.dst))
}

// Discard removes the temporary file unless it was committed (safe to defer).
func (f *File) Discard() {
	if !f.done {
		f.Close()
		os.Remove(f.Name())
		f.done = true
	}
}
