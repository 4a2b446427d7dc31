package sandbox

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
)

// The strongest isolation runs Python inside a minimal root filesystem: a fresh tmpfs holding
// read-only bind mounts of the system's library directories and the interpreter's installation,
// four device files, and the run's own tmpfs at /work holding main.py — nothing else (no
// /etc/passwd, no /root, no /home, no /proc). Mounting needs code between clone and exec, which
// Go's exec cannot run, so the helper (helper.go) builds it inside the run's new mount namespace
// and chroots into it before it execs the interpreter.

// rootSpec describes the minimal root.
type rootSpec struct {
	Root string // empty directory to mount the tmpfs root on
	Work string // the run's directory: its main.py is copied to /work
	// WorkBytes is the size of the tmpfs mounted at /work: the cap on all the code writes.
	WorkBytes int64
	Dirs      []string          // host directories bound read-only at the same path
	Files     []string          // host files bound read-only at the same path
	Devices   []string          // device files bound read-write
	Links     map[string]string // symlinks to recreate (/lib → usr/lib on merged-/usr systems)
}

// buildRoot mounts the minimal root and chroots into it, with /work (owned by uid when uid ≥ 0)
// as the working directory.
func buildRoot(r rootSpec, uid int) error {
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("tmpfs", r.Root, "tmpfs", syscall.MS_NOSUID, "size=16m,nr_inodes=4096,mode=755"); err != nil {
		return fmt.Errorf("tmpfs root: %w", err)
	}
	for link, target := range r.Links {
		if err := os.Symlink(target, filepath.Join(r.Root, link)); err != nil {
			return err
		}
	}
	for _, d := range r.Dirs {
		if err := bind(d, filepath.Join(r.Root, d), true, true); err != nil {
			return err
		}
	}
	for _, f := range r.Files {
		if err := bind(f, filepath.Join(r.Root, f), false, true); err != nil {
			return err
		}
	}
	for _, f := range r.Devices {
		if err := bind(f, filepath.Join(r.Root, f), false, false); err != nil {
			return err
		}
	}
	if err := mountWork(r, uid); err != nil {
		return err
	}
	// Read-only from here on: in a user namespace the interpreter is uid 0 of it, the owner of
	// this tmpfs, and could otherwise write to it beside /work, outside DiskBytes.
	if err := syscall.Mount("", r.Root, "", syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID, ""); err != nil {
		return fmt.Errorf("read-only root: %w", err)
	}
	if err := syscall.Chroot(r.Root); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	return syscall.Chdir("/work")
}

// mountWork makes /work a tmpfs of r.WorkBytes owned by the run's user and copies main.py into
// it. A tmpfs rather than a bind of the host directory: the code could otherwise fill the host's
// disk with many files, each under RLIMIT_FSIZE. Its inode count is bounded too (one per page of
// its size), since empty files cost kernel memory but no tmpfs size.
func mountWork(r rootSpec, uid int) error {
	code, err := os.ReadFile(filepath.Join(r.Work, "main.py"))
	if err != nil {
		return err
	}
	dst := filepath.Join(r.Root, "work")
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	opts := fmt.Sprintf("size=%d,nr_inodes=%d,mode=755", r.WorkBytes, max(r.WorkBytes/4096, 64))
	if uid >= 0 {
		opts += fmt.Sprintf(",uid=%d,gid=%d", uid, uid)
	}
	if err := syscall.Mount("tmpfs", dst, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("tmpfs /work: %w", err)
	}
	main := filepath.Join(dst, "main.py")
	if err := os.WriteFile(main, code, 0o644); err != nil {
		return err
	}
	if uid >= 0 {
		return os.Chown(main, uid, uid)
	}
	return nil
}

// bind mounts src on dst (creating dst as a directory or an empty file), read-only if asked.
// A read-only remount keeps the source's nodev/nosuid/noexec flags: inside a user namespace the
// kernel refuses to clear them.
func bind(src, dst string, dir, readOnly bool) error {
	if dir {
		if err := os.MkdirAll(dst, 0o755); err != nil {
			return err
		}
	} else {
		if err := os.MkdirAll(filepath.Dir(dst), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(dst, nil, 0o644); err != nil {
			return err
		}
	}
	if err := syscall.Mount(src, dst, "", syscall.MS_BIND|syscall.MS_REC, ""); err != nil {
		return fmt.Errorf("bind %s: %w", src, err)
	}
	if !readOnly {
		return nil
	}
	var st syscall.Statfs_t
	if err := syscall.Statfs(src, &st); err != nil {
		return err
	}
	flags := uintptr(syscall.MS_BIND | syscall.MS_REMOUNT | syscall.MS_RDONLY)
	for _, f := range [][2]uintptr{{stNodev, syscall.MS_NODEV}, {stNosuid, syscall.MS_NOSUID}, {stNoexec, syscall.MS_NOEXEC},
		{stNoatime, syscall.MS_NOATIME}, {stNodiratime, syscall.MS_NODIRATIME}, {stRelatime, syscall.MS_RELATIME}} {
		if uintptr(st.Flags)&f[0] != 0 {
			flags |= f[1]
		}
	}
	if err := syscall.Mount("", dst, "", flags, ""); err != nil {
		return fmt.Errorf("read-only %s: %w", src, err)
	}
	return nil
}

// statfs f_flags bits (linux/statfs.h ST_*).
const (
	stNosuid     = 0x0002
	stNodev      = 0x0004
	stNoexec     = 0x0008
	stNoatime    = 0x0400
	stNodiratime = 0x0800
	stRelatime   = 0x1000
)

// rootLayout lists what the minimal root needs for python: the system's library and binary
// directories (or the symlinks standing for them), the interpreter's prefixes, the dynamic
// loader's cache and the time zone file, and the harmless devices.
func rootLayout(prefixes, readDirs []string) (dirs, files, devices []string, links map[string]string) {
	links = map[string]string{}
	for _, d := range []string{"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/bin", "/sbin"} {
		fi, err := os.Lstat(d)
		switch {
		case err != nil:
		case fi.Mode()&os.ModeSymlink != 0:
			if t, err := os.Readlink(d); err == nil {
				links[d] = t
			}
		case fi.IsDir():
			dirs = append(dirs, d)
		}
	}
	for _, p := range append(append([]string{}, prefixes...), readDirs...) {
		if p == "" || covered(p, dirs) {
			continue
		}
		dirs = append(dirs, p)
	}
	for _, f := range []string{"/etc/ld.so.cache", "/etc/localtime"} {
		if fi, err := os.Stat(f); err == nil && fi.Mode().IsRegular() {
			files = append(files, f)
		}
	}
	for _, f := range []string{"/dev/null", "/dev/zero", "/dev/urandom", "/dev/random"} {
		if _, err := os.Stat(f); err == nil {
			devices = append(devices, f)
		}
	}
	return dirs, files, devices, links
}

func covered(p string, dirs []string) bool {
	for _, d := range dirs {
		if p == d || strings.HasPrefix(p, d+"/") {
			return true
		}
	}
	return false
}
