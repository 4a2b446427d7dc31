package run

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Run directories are shared and unpacked from others' archives, so what reads one reads only
// regular files inside it: through an os.Root, which refuses a symbolic link (or "..") that
// leads out of the directory, and without blocking on a FIFO or reading a device.

// ErrNotRegular is wrapped by the error of a run directory's entry that is not a regular file.
var ErrNotRegular = errors.New("not a regular file")

// OpenFile opens the regular file at name (slash-separated, relative) inside the run directory dir.
// A link that leads out of dir, or an entry that is no regular file (a FIFO, a device, a
// directory), is an error naming it; a missing file is one wrapping fs.ErrNotExist.
func OpenFile(dir, name string) (*os.File, error) {
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("run: %w", err)
	}
	defer root.Close()
	return OpenFileIn(root, name)
}

// OpenFileIn is OpenFile for a run directory already opened as root.
func OpenFileIn(root *os.Root, name string) (*os.File, error) {
	f, err := root.OpenFile(name, os.O_RDONLY|syscall.O_NONBLOCK, 0) // a FIFO opens at once
	if err != nil {
		return nil, explain(root, name, err)
	}
	fi, err := f.Stat()
	if err == nil && !fi.Mode().IsRegular() {
		err = fmt.Errorf("run: %s: %w (a %s)", filepath.Join(root.Name(), filepath.FromSlash(name)), ErrNotRegular, kind(fi.Mode()))
	}
	if err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// OpenDirIn opens the directory at name inside root, refusing a link that leads out of it as
// OpenFileIn does.
func OpenDirIn(root *os.Root, name string) (*os.File, error) {
	f, err := root.Open(name)
	if err != nil {
		return nil, explain(root, name, err)
	}
	if fi, err := f.Stat(); err != nil || !fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("run: %s is not a directory", filepath.Join(root.Name(), filepath.FromSlash(name)))
	}
	return f, nil
}

// inside refuses an entry of the run directory root that is a link leading out of it: the run
// writes its files, checkpoints and samples only inside its directory. A missing entry is fine
// (the run creates it), and so is a link that stays inside.
func inside(root *os.Root, name string) error {
	fi, err := root.Lstat(name)
	if err != nil || fi.Mode()&fs.ModeSymlink == 0 {
		return nil
	}
	if _, err := root.Stat(name); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return explain(root, name, err)
	}
	return nil
}

// explain says why name could not be opened inside root: missing (fs.ErrNotExist), or a link
// that leads out.
func explain(root *os.Root, name string, err error) error {
	path := filepath.Join(root.Name(), filepath.FromSlash(name))
	if errors.Is(err, fs.ErrNotExist) {
		return &fs.PathError{Op: "open", Path: path, Err: fs.ErrNotExist}
	}
	if fi, lerr := root.Lstat(name); lerr == nil && fi.Mode()&fs.ModeSymlink != 0 {
		target, _ := root.Readlink(name)
		return fmt.Errorf("run: %s is a link to %s, outside the run directory %s: not followed", path, target, root.Name())
	}
	return fmt.Errorf("run: %w (only files inside the run directory %s are used)", err, root.Name())
}

// kind names what an entry that is no regular file is.
func kind(m fs.FileMode) string {
	switch {
	case m.IsDir():
		return "directory"
	case m&fs.ModeNamedPipe != 0:
		return "FIFO"
	case m&fs.ModeSocket != 0:
		return "socket"
	case m&fs.ModeDevice != 0:
		return "device"
	}
	return m.Type().String()
}
