// Package sandbox runs model-written Python in a limited child process of the machine's python3.
//
// Each Run gets a fresh temporary directory as its working directory and HOME, an empty
// environment (HOME, TMPDIR, LANG only), the interpreter in isolated mode (-I -S -B), and its own
// process group. Only the standard library is importable unless Config.SitePackages adds the
// interpreter's installed packages (numpy, sympy, ...). Every run starts as a helper binary
// (helper.go), which prepares the process and execs the interpreter: cmd/mtgrpo-sandbox, found
// beside the running executable or named by Config.Helper, else this binary re-executed
// (helper_binary.go; New logs which). Ship bin/mtgrpo-sandbox beside bin/mtgrpo: without it,
// every run of bin/mtgrpo loads libtorch first.
//
// # What is guaranteed, and the test that shows it
//
// New probes the machine and keeps the strongest isolation that works; Isolation says which,
// and why stronger modes failed, and New logs it (Config.Log). A mode is never weakened
// silently: a run whose helper fails is an error, not a run in a weaker mode, and Config.Require
// makes New fail, naming the missing Guarantee and the reason, rather than accept a weaker mode
// (TestRequireFailsRatherThanDegrade). Every fallback mode runs Python and gives what it claims
// (TestEveryModeRuns; the uid-nobody fallback could never start before).
//
//  1. Minimal root (root, or unprivileged user namespaces): the run sees a tmpfs holding
//     read-only binds of /usr, /lib*, /bin, /sbin and the interpreter's prefix, four device
//     files, and /work, a tmpfs of Limits.DiskBytes with one inode per page of it — no /etc,
//     /root, /home, /proc, /dev/shm or other runs' files (TestMinimalRootBehindTheHook,
//     TestDiskCapped). In a user namespace the interpreter holds no capabilities, so it cannot
//     chroot its way out (TestUserNamespaceRunHasNoCapabilities).
//  2. Network, IPC and PID namespaces: no network (TestNoNetwork); System V and POSIX IPC
//     objects die with the run (TestSharedMemoryDiesWithTheRun); the interpreter is the init of
//     its PID namespace, so the kernel kills whatever it started when it exits, even a process
//     that left the group (TestNoProcessOutlivesTheRun).
//  3. Unprivileged: as root the run drops to uid/gid nobody, where RLIMIT_NPROC is enforced
//     (TestDropsToNobodyWhenRoot, TestForkBombContained); in every mode the interpreter's
//     capabilities are emptied.
//  4. Memory, all of it: a run holds at most Limits.MemoryBytes + DiskBytes (its reservation),
//     and all runs sharing a Budget hold at most its total; runs wait for room, and a run
//     larger than the whole budget fails at once (TestBudgetCapsConcurrentRuns). Where a memory
//     cgroup can be made (cgroup.go) it counts every page of the run — heap, memfd, tmpfs, page
//     tables — under a pool limited to the budget; a run past its limit is killed by the kernel
//     and reported as Result.OutOfMemory (TestMemfdCannotHoldMoreThanTheLimit, with the syscall
//     filter off; TestCgroupLimits). Without a cgroup, RLIMIT_AS bounds the address space,
//     DiskBytes the files, RLIMIT_NOFILE the descriptors and the kernel buffers behind them
//     (TestOpenFilesLimit), and the syscall filter refuses what holds memory outside all three:
//     memfd_create, memfd_secret, shmget, msgget, mq_open (TestSyscallFilterRefusesIPCMemory,
//     also for code that calls libc through ctypes). A run limited to 512 MiB once held 1.5 GiB
//     in memfds; that program now gets EPERM (TestMemfdCannotHoldMoreThanTheLimit).
//  5. rlimits: RLIMIT_CPU, RLIMIT_AS, RLIMIT_FSIZE, RLIMIT_NPROC, RLIMIT_NOFILE, set by the
//     preamble, soft = hard, which the code cannot raise (TestCPULimit, TestMemoryBomb,
//     TestLimitsCannotBeRaised).
//  6. Lifetime: the run is killed whole at Limits.Wall (TestInfiniteLoopKilledAtWallTime) and
//     when ctx ends, which is how a caller caps a turn's tool time: Run returns promptly with an
//     error wrapping ctx's, the output so far, and nothing of the run left
//     (TestContextEndsTheRun). When the trainer dies (SIGKILL, Ctrl-C) the run dies with it: the
//     helper re-arms the parent-death signal after its uid drop cleared it, and checks that the
//     trainer did not die before (TestRunDiesWithTrainer, TestTrainerGoneCheck); the run
//     directories and cgroups a killed trainer left are removed by the next New
//     (TestRunDiesWithTrainer, TestSweepLeftovers).
//  7. Output: stdout and stderr are kept up to Limits.OutputBytes each, the rest counted and
//     dropped (TestHugeOutputTruncated), and never lost: the collector does not depend on the
//     pipe's EOF, which processes outside the run can delay (output.go;
//     TestStreamCompleteWhileWriteEndHeld). 64 concurrent runs each return exactly what they
//     printed (TestOutputNeverLostUnderLoad); before, 7 to 11 of 128 came back as exit 0 with
//     empty stdout. Output that cannot be read, and a failure of the sandbox itself, are errors
//     from Run (TestHelperFailureIsAnError), never a successful Result.
//  8. Audit hook (interpreter, PEP 578): no open() outside the working directory except reads of
//     the interpreter's prefix, Config.ReadDirs and harmless devices; no listing outside what it
//     may read; no chdir, rename or removal outside it; no fork, exec, spawn, subprocess,
//     os.system, sockets, setrlimit; no importing ctypes or _posixsubprocess; no subinterpreters
//     (_xxsubinterpreters up to 3.12, _interpreters from 3.13, by import or loaded by hand); no
//     gc enumeration or rewriting function code (TestFilesOutsideDirRefused,
//     TestForkBombContained, TestHookStateOutOfReach, TestStdlibPackagesImport).
//
// Layer 8 stops ordinary and careless code with a clear PermissionError, but it is not a
// boundary against an adversary: its path check can be fooled by replacing os.fspath, and
// TestMinimalRootBehindTheHook shows that bypass reading /etc/passwd in the hook-only mode and
// finding nothing under layer 1. Without layers 1-3 (a locked-down container, no user
// namespaces) the fallback modes keep the others and say so in Isolation.Note; run the trainer
// inside a container when the code may be hostile.
//
// # Where it was tested
//
// Linux 6.18 (x86-64) in a VM whose memory controller is on a cgroup v1 hierarchy. As root, the
// mode chosen was the strongest: minimal root, namespaces, nobody, cgroup v1, filter. As an
// unprivileged user (the test binary run under setpriv as uid 65534) it was the user-namespace
// minimal root with rlimits and the filter (no cgroup may be made): all tests pass but those
// that need root or a cgroup, which skip. Python 3.10.13, 3.11.7, 3.12.1 and 3.13.0 (pyenv),
// Debian bookworm's 3.11.2, and Debian trixie's 3.13.5 (a debootstrap root, the test binary
// run inside it after pivot_root): all pass. Choose the interpreter with MTGRPO_TEST_PYTHON:
//
//	MTGRPO_TEST_PYTHON=python3.13 go test ./env/sandbox/
//
// Not tested here: the cgroup v2 path (this machine has no v2 memory controller; how
// parseCgroup reads v2 machines is tested, TestParseCgroup) and the arm64 filter.
package sandbox
