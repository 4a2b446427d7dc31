package sandbox

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"syscall"
	"unsafe"
)

// The strongest isolation runs Python inside a minimal root filesystem: a fresh tmpfs holding
// read-only bind mounts of the system's library directories and the interpreter's installation,
// four device files, and the run's own tmpfs at /work holding main.py — nothing else (no /etc/passwd, no /root,
// no /home, no /proc). Mounting needs code between clone and exec, which Go's exec cannot run, so
// the sandbox re-executes its own binary (/proc/self/exe) as a helper: this package's init sees
// the helperEnv variable, builds the root inside the new mount namespace, chroots, drops to
// nobody when it started as root, and execs the interpreter. Every binary that imports this
// package carries the helper; nothing needs to call it.

const helperEnv = "MTGRPO_SANDBOX_HELPER"

// helperSpec is what the parent tells the helper, as JSON in helperEnv.
type helperSpec struct {
	Root string // empty directory to mount the tmpfs root on
	Work string // the run's directory: its main.py is copied to /work
	// WorkBytes is the size of the tmpfs mounted at /work: the cap on all the code writes.
	WorkBytes int64
	Python    string            // interpreter path (the same inside, via the binds)
	Args      []string          // argv, Args[0] included
	Env       []string          // the interpreter's environment
	Dirs      []string          // host directories bound read-only at the same path
	Files     []string          // host files bound read-only at the same path
	Devices   []string          // device files bound read-write
	Links     map[string]string // symlinks to recreate (/lib → usr/lib on merged-/usr systems)
	UID       int               // uid/gid to switch to after mounting; -1 keeps the current one
}

func init() {
	if spec := os.Getenv(helperEnv); spec != "" {
		// Capabilities are per thread: the thread that drops them must be the one that execs.
		runtime.LockOSThread()
		err := runHelper(spec)
		fmt.Fprintf(os.Stderr, "sandbox helper: %v\n", err)
		os.Exit(125)
	}
}

// runHelper never returns on success: it ends in exec.
func runHelper(specJSON string) error {
	var s helperSpec
	if err := json.Unmarshal([]byte(specJSON), &s); err != nil {
		return err
	}
	if err := syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, ""); err != nil {
		return fmt.Errorf("make mounts private: %w", err)
	}
	if err := syscall.Mount("tmpfs", s.Root, "tmpfs", syscall.MS_NOSUID, "size=16m,mode=755"); err != nil {
		return fmt.Errorf("tmpfs root: %w", err)
	}
	for link, target := range s.Links {
		if err := os.Symlink(target, filepath.Join(s.Root, link)); err != nil {
			return err
		}
	}
	for _, d := range s.Dirs {
		if err := bind(d, filepath.Join(s.Root, d), true, true); err != nil {
			return err
		}
	}
	for _, f := range s.Files {
		if err := bind(f, filepath.Join(s.Root, f), false, true); err != nil {
			return err
		}
	}
	for _, f := range s.Devices {
		if err := bind(f, filepath.Join(s.Root, f), false, false); err != nil {
			return err
		}
	}
	if err := mountWork(s); err != nil {
		return err
	}
	if err := syscall.Chroot(s.Root); err != nil {
		return fmt.Errorf("chroot: %w", err)
	}
	if err := syscall.Chdir("/work"); err != nil {
		return err
	}
	if s.UID >= 0 {
		if err := dropTo(s.UID); err != nil {
			return err
		}
	} else if err := dropCaps(); err != nil {
		return err
	}
	return syscall.Exec(s.Python, s.Args, s.Env)
}

// mountWork makes /work a tmpfs of s.WorkBytes owned by the run's user and copies main.py into
// it. A tmpfs rather than a bind of the host directory: the code could otherwise fill the host's
// disk with many files, each under RLIMIT_FSIZE.
func mountWork(s helperSpec) error {
	code, err := os.ReadFile(filepath.Join(s.Work, "main.py"))
	if err != nil {
		return err
	}
	dst := filepath.Join(s.Root, "work")
	if err := os.Mkdir(dst, 0o755); err != nil {
		return err
	}
	opts := fmt.Sprintf("size=%d,mode=755", s.WorkBytes)
	if s.UID >= 0 {
		opts += fmt.Sprintf(",uid=%d,gid=%d", s.UID, s.UID)
	}
	if err := syscall.Mount("tmpfs", dst, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV, opts); err != nil {
		return fmt.Errorf("tmpfs /work: %w", err)
	}
	main := filepath.Join(dst, "main.py")
	if err := os.WriteFile(main, code, 0o644); err != nil {
		return err
	}
	if s.UID >= 0 {
		return os.Chown(main, s.UID, s.UID)
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

// dropCaps leaves the helper with no capabilities, through the exec that follows. Inside a user
// namespace the helper is uid 0 with every capability of that namespace, and an interpreter
// exec'd as uid 0 would get them all back: with CAP_SYS_CHROOT, code past the audit hook could
// leave the minimal root (chroot into a subdirectory, chdir up, chroot ".") and read or write
// whatever the host user may; with CAP_SYS_ADMIN it could mount an unbounded tmpfs. Emptying the
// bounding set stops exec from granting any, and capset clears what the helper holds now.
func dropCaps() error {
	for c := 0; c < 64; c++ {
		if err := prctl(prCapBSetDrop, uintptr(c)); err == syscall.EINVAL {
			break // past the kernel's last capability
		} else if err != nil {
			return fmt.Errorf("drop capability %d from the bounding set: %w", c, err)
		}
	}
	hdr := struct {
		version uint32
		pid     int32
	}{linuxCapabilityVersion3, 0}
	var data [2]struct{ effective, permitted, inheritable uint32 }
	if _, _, e := syscall.RawSyscall(syscall.SYS_CAPSET, uintptr(unsafe.Pointer(&hdr)), uintptr(unsafe.Pointer(&data[0])), 0); e != 0 {
		return fmt.Errorf("capset: %w", e)
	}
	return prctl(prSetNoNewPrivs, 1)
}

const (
	prCapBSetDrop           = 24         // PR_CAPBSET_DROP
	prSetNoNewPrivs         = 38         // PR_SET_NO_NEW_PRIVS
	linuxCapabilityVersion3 = 0x20080522 // _LINUX_CAPABILITY_VERSION_3
)

func prctl(op, arg uintptr) error {
	if _, _, e := syscall.RawSyscall6(syscall.SYS_PRCTL, op, arg, 0, 0, 0, 0); e != 0 {
		return e
	}
	return nil
}

func dropTo(uid int) error {
	if err := syscall.Setgroups([]int{}); err != nil {
		return fmt.Errorf("setgroups: %w", err)
	}
	if err := syscall.Setgid(uid); err != nil {
		return fmt.Errorf("setgid: %w", err)
	}
	if err := syscall.Setuid(uid); err != nil {
		return fmt.Errorf("setuid: %w", err)
	}
	return nil
}

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
