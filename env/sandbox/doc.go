// Package sandbox runs model-written Python in a limited child process of the machine's python3.
//
// Each Run gets a fresh temporary directory as its working directory and HOME, an empty
// environment (HOME, TMPDIR, LANG only), the interpreter in isolated mode (-I -S -B), and its own
// process group, which is killed whole when the wall-clock limit passes and again after every run
// (nothing it started outlives it). Output beyond Limits.OutputBytes is dropped, never buffered.
//
// # What is guaranteed, layer by layer
//
// Kernel-enforced (cannot be undone from Python):
//   - wall time: the process group is SIGKILLed by the parent;
//   - RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, set by a Python preamble in the child before the
//     model's code, soft = hard;
//   - RLIMIT_NPROC, only when the run is not root: the kernel exempts root. As root the sandbox
//     drops to uid/gid nobody (65534) when that user can execute the interpreter (a system
//     python3 under /usr/bin, not a pyenv one under /root); Isolation says which happened;
//   - no network, when a network namespace could be created (root, or unprivileged user
//     namespaces): the run sees only a down loopback interface. Isolation reports it; the
//     sandbox falls back to no namespace, and says so, where clone is refused.
//
// Interpreter-enforced (a PEP 578 audit hook installed by the preamble; hooks cannot be removed
// from Python code, and the hook's state lives in a closure the code cannot reach: gc
// enumeration and rewriting a function's __code__ or defaults are refused): no open() or
// os.open() outside the working directory except reads of the interpreter's own installation
// prefix (so imports work; for /usr/bin/python3 that prefix is all of /usr), Config.ReadDirs, and
// /dev/null, /dev/zero, /dev/urandom, /dev/random; no listing, chdir, rename or removal outside
// it; no fork, exec, spawn, subprocess, os.system, sockets, setrlimit, and no importing ctypes or
// _posixsubprocess (both reach fork or libc without an audit event). This stops what ordinary
// and careless code does (reading /etc/passwd, fork loops, shelling out). It is not a boundary
// against an adversary who knows CPython internals: the path check calls os.path, which the
// code can monkeypatch, and with no separate mount namespace or chroot, files readable by the
// run's user stay reachable to such code. The kernel-enforced layers above are what holds then;
// run the trainer in a container when the code may be hostile.
//
// Tests in this package start real interpreters and prove each containment: an infinite loop, a
// CPU spin, a memory bomb, fork bombs, huge output, reads and writes outside the directory, the
// network, and raising the limits.
package sandbox
