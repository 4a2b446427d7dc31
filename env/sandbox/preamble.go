package sandbox

import (
	"fmt"
	"strings"
)

// preamble is the Python program the interpreter runs before the model's code. It runs in the
// child, so the limits apply to the child and to nothing else:
//
//  1. rlimits via the resource module: RLIMIT_CPU (seconds), RLIMIT_AS (bytes), RLIMIT_NPROC,
//     RLIMIT_FSIZE (bytes), RLIMIT_NOFILE, soft = hard so the code cannot raise them back (the
//     interpreter holds no CAP_SYS_RESOURCE; step 2 also blocks resource.setrlimit);
//  2. an audit hook (PEP 578) that refuses: opening files outside the sandbox directory (reads
//     and listings of the interpreter's own installation are allowed so imports work), listing
//     other directories, changing directory out of it, fork / exec / spawn / subprocess / os.system, sockets, importing
//     ctypes or _posixsubprocess (both reach fork or libc without an audit event), and
//     changing rlimits;
//  3. the model's code, compiled as "main.py" and run as __main__; an uncaught exception prints
//     its traceback (from main.py's frame on, as running "python main.py" would) and exits with
//     status 1.
//
// The hook is a guard against what ordinary code does, not a boundary against an adversary
// who knows CPython internals (monkeypatching os.path, say, can fool the path check): see
// doc.go for what each layer guarantees.
const preambleTemplate = `
import os, sys, resource, traceback
sys.path.extend([%s])
def _lim(r, v):
    try:
        resource.setrlimit(r, (v, v))
    except (ValueError, OSError):
        pass
_lim(resource.RLIMIT_CPU, %d)
_lim(resource.RLIMIT_AS, %d)
_lim(resource.RLIMIT_NPROC, %d)
_lim(resource.RLIMIT_FSIZE, %d)
_lim(resource.RLIMIT_NOFILE, %d)
try:
    with open("main.py", encoding="utf-8") as _f:
        _code = compile(_f.read(), "main.py", "exec")
except (SyntaxError, ValueError) as _e:  # ValueError: a NUL byte in the source
    traceback.print_exception(type(_e), _e, None)
    sys.exit(1)
def _install():
    # Everything the hook uses lives in this closure, as immutable values: nothing of it is left
    # in the module's globals, where the model's code could reach it through sys.modules.
    realpath, join, fsdecode = os.path.realpath, os.path.join, os.fsdecode
    root = realpath(os.getcwd())
    ro = tuple(sorted({realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
               sys.base_exec_prefix, os.path.dirname(os.__file__))} | set([%s])))
    devs = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
    wflags = os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC
    deny = frozenset({"os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn",
        "os.system", "subprocess.Popen", "os.startfile", "pty.spawn", "socket.__new__",
        "socket.connect", "socket.bind", "socket.getaddrinfo", "socket.sendto",
        "resource.setrlimit", "resource.prlimit", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata",
        "os.kill", "os.killpg", "os.setuid", "gc.get_objects", "gc.get_referrers",
        "gc.get_referents", "cpython.PyInterpreterState_New"})
    # _posixsubprocess.fork_exec forks without raising any audit event; ctypes can call libc. A
    # subinterpreter starts with no audit hooks at all (sys.addaudithook is per interpreter).
    denied_modules = frozenset({"ctypes", "_ctypes", "_posixsubprocess", "_xxsubinterpreters",
        "_xxinterpchannels", "_xxinterpqueues", "_interpreters", "_interpchannels", "_interpqueues"})
    # Rewriting a function's code or defaults could neuter this hook.
    denied_attrs = frozenset({"__code__", "__defaults__", "__kwdefaults__"})
    pathw = frozenset({"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown",
        "os.symlink", "os.link", "os.truncate", "os.utime", "shutil.rmtree", "os.chdir",
        "os.chroot"})
    # Listing is reading: allowed where reading is. The import system lists each package
    # directory the first time it imports from it (json.decoder, email.utils, ...).
    pathr = frozenset({"os.listdir", "os.scandir", "glob.glob"})
    def inside(p, roots):
        return any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)
    def path(p):
        if isinstance(p, bytes):
            p = fsdecode(p)
        return realpath(join(root, p))
    def hook(ev, args):
        if ev in deny:
            raise PermissionError("sandbox: %%s is not allowed" %% ev)
        if ev == "import" and args[0] in denied_modules:
            # An ImportError, so libraries that import ctypes optionally (numpy) still load.
            raise ImportError("sandbox: importing %%s is not allowed" %% args[0])
        if ev == "object.__setattr__" and args[1] in denied_attrs:
            raise PermissionError("sandbox: setting %%s is not allowed" %% args[1])
        if ev == "open":
            p, mode, flags = args
            if p is None or isinstance(p, int):
                return
            rp = path(p)
            write = (mode is not None and any(c in mode for c in "wax+")) or (
                mode is None and flags & wflags)
            if inside(rp, (root,)) or (not write and (inside(rp, ro) or rp in devs)):
                return
            raise PermissionError("sandbox: access to %%s is not allowed (only the working directory)" %% p)
        if ev in pathw or ev in pathr:
            allowed = (root,) if ev in pathw else (root,) + ro
            for a in args[:2]:
                if isinstance(a, (str, bytes)) and not inside(path(a), allowed):
                    raise PermissionError("sandbox: %%s on %%s is not allowed" %% (ev, a))
    sys.addaudithook(hook)
_install()
del _install, _lim, _f
_g = {"__name__": "__main__", "__file__": "main.py", "__builtins__": __builtins__}
try:
    exec(_code, _g)
except SystemExit:
    raise
except BaseException as _e:
    # The traceback starts at main.py: the preamble's own frame means nothing to the model.
    traceback.print_exception(type(_e), _e, _e.__traceback__.tb_next)
    sys.stdout.flush()
    sys.exit(1)
`

// preamble renders the template for the given limits. extraRead lists more directories the code
// may read (a data directory, say).
func preamble(l Limits, extraRead, sysPath []string) string {
	var quoted, path []string
	for _, p := range extraRead {
		quoted = append(quoted, fmt.Sprintf("os.path.realpath(%q)", p))
	}
	for _, p := range sysPath {
		path = append(path, fmt.Sprintf("%q", p))
	}
	return fmt.Sprintf(preambleTemplate, strings.Join(path, ", "), l.CPUSeconds, l.MemoryBytes, l.Processes, l.FileBytes, l.OpenFiles,
		strings.Join(quoted, ", "))
}
