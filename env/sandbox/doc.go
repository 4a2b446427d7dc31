// Package sandbox runs model-written Python in a limited child process of the machine's python3.
//
// Each Run gets a fresh temporary directory as its working directory and HOME, an empty
// environment (HOME, TMPDIR, LANG only), the interpreter in isolated mode (-I -S -B), and its own
// process group, which is killed whole when the wall-clock limit passes and again after every run
// (nothing it started outlives it). Output beyond Limits.OutputBytes is dropped, never buffered.
// Only the standard library is importable unless Config.SitePackages adds the interpreter's
// installed packages (numpy, sympy, ...).
//
// # What is guaranteed, layer by layer
//
// New probes the machine and keeps the strongest isolation that works (Isolation says which,
// and why stronger ones failed). On this project's machines (root, Linux) that is the first:
//
//  1. Minimal root (kernel-enforced; root, or unprivileged user namespaces): the run sees a fresh
//     tmpfs holding read-only binds of /usr, /lib*, /bin, /sbin and the interpreter's prefix,
//     /etc/ld.so.cache and /etc/localtime, four device files, and its own directory at /work, a
//     tmpfs of Limits.DiskBytes (all it writes together, so many small files cannot fill the
//     host's disk) — no /etc/passwd, /root, /home, /proc or other runs' files. Built by
//     re-executing this binary as a helper (chroot.go) in new mount and network namespaces. The
//     interpreter holds no capabilities (as root it is nobody; in a user namespace the helper
//     empties its capability sets), so it cannot chroot or mount its way out.
//  2. No network, no leftovers (kernel): a new network namespace with only a down loopback
//     interface, and a new PID namespace whose init is the interpreter, so the kernel kills
//     whatever it started when it exits (even a process that called setsid to leave the group).
//  3. Unprivileged user (kernel): as root the run drops to uid/gid nobody (65534), so
//     RLIMIT_NPROC is enforced (the kernel exempts root) and file permissions apply.
//  4. rlimits (kernel): RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE and RLIMIT_NPROC, set by a Python
//     preamble in the child before the model's code, soft = hard.
//  5. Audit hook (interpreter, PEP 578): no open() outside the working directory except reads of
//     the interpreter's prefix, Config.ReadDirs and harmless devices; no listing outside the
//     directories it may read (imports list package directories); no chdir, rename or removal
//     outside it; no fork, exec, spawn, subprocess, os.system, sockets, setrlimit; no
//     importing ctypes or _posixsubprocess (both reach fork or libc without an audit event; the
//     refusal is an ImportError, so libraries that import them optionally still load); no
//     subinterpreters (a new interpreter starts without the hook); no gc enumeration or
//     rewriting function code (the hook's state lives in a closure).
//
// Layer 5 stops ordinary and careless code (reading /etc/passwd, fork loops, shelling out) with a
// clear PermissionError, but it is not a boundary against an adversary: its path check uses
// os.path, which the code can monkeypatch — a test shows exactly that bypass, and shows layer 1
// holding behind it. Where layers 1-3 are unavailable (no namespaces: a locked-down container, a
// kernel without unprivileged user namespaces) the fallback modes keep layers 4-5 and say so in
// Isolation.Note; run the trainer inside a container when the code may be hostile.
//
// Tests in this package start real interpreters and prove each containment: an infinite loop, a
// CPU spin, a memory bomb, fork bombs, huge output, reads and writes outside the directory (with
// and without the hook fooled), the network, and raising the limits.
package sandbox
