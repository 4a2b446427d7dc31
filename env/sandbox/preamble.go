package sandbox

import (
	"fmt"
	"strings"
)

// preamble is the Python program the interpreter runs before the model's code. It runs in the
// child, so the limits apply to the child and to nothing else:
//
//  1. rlimits via the resource module: RLIMIT_CPU (seconds), RLIMIT_AS (bytes), RLIMIT_NPROC,
//     RLIMIT_FSIZE (bytes), soft = hard so the code cannot raise them back (as root it still
//     could, which is why step 2 also blocks resource.setrlimit);
//  2. an audit hook (PEP 578) that refuses: opening files outside the sandbox directory (reads of
//     the interpreter's own installation are allowed so imports work), listing or changing
//     directories outside it, fork / exec / spawn / subprocess / os.system, sockets, importing
//     ctypes or _posixsubprocess (both reach fork or libc without an audit event), and
//     changing rlimits;
//  3. the model's code, compiled as "main.py" and run as __main__; an uncaught exception prints
//     its traceback and exits with status 1.
//
// The hook is a guard against what ordinary code does, not a boundary against an adversary
// who knows CPython internals: see doc.go for what each layer guarantees.
const preambleTemplate = `
import os, sys, resource, traceback
def _lim(r, v):
    try:
        resource.setrlimit(r, (v, v))
    except (ValueError, OSError):
        pass
_lim(resource.RLIMIT_CPU, %d)
_lim(resource.RLIMIT_AS, %d)
_lim(resource.RLIMIT_NPROC, %d)
_lim(resource.RLIMIT_FSIZE, %d)
_root = os.path.realpath(os.getcwd())
_ro = tuple(sorted({os.path.realpath(p) for p in (sys.prefix, sys.base_prefix, sys.exec_prefix,
      sys.base_exec_prefix, os.path.dirname(os.__file__))} | set([%s])))
_devs = ("/dev/null", "/dev/zero", "/dev/urandom", "/dev/random")
with open("main.py", encoding="utf-8") as _f:
    _src = _f.read()
_code = compile(_src, "main.py", "exec")
def _inside(p, roots):
    return any(p == r or p.startswith(r.rstrip("/") + "/") for r in roots)
def _path(p):
    if isinstance(p, bytes):
        p = os.fsdecode(p)
    return os.path.realpath(os.path.join(_root, p))
_deny = {"os.fork", "os.forkpty", "os.posix_spawn", "os.exec", "os.spawn", "os.system",
         "subprocess.Popen", "os.startfile", "pty.spawn", "socket.__new__", "socket.connect",
         "socket.bind", "socket.getaddrinfo", "socket.sendto", "resource.setrlimit",
         "resource.prlimit", "ctypes.dlopen", "ctypes.dlsym", "ctypes.cdata", "os.kill",
         "os.killpg", "os.setuid"}
# _posixsubprocess.fork_exec forks without raising any audit event, and ctypes can call libc.
_denied_modules = {"ctypes", "_ctypes", "_posixsubprocess"}
_pathw = {"os.remove", "os.rename", "os.rmdir", "os.mkdir", "os.chmod", "os.chown", "os.symlink",
          "os.link", "os.truncate", "os.utime", "shutil.rmtree", "os.chdir", "os.chroot"}
_pathr = {"os.listdir", "os.scandir", "glob.glob"}
def _hook(ev, args):
    if ev in _deny:
        raise PermissionError("sandbox: %%s is not allowed" %% ev)
    if ev == "import" and args[0] in _denied_modules:
        raise PermissionError("sandbox: importing %%s is not allowed" %% args[0])
    if ev == "open":
        p, mode, flags = args
        if p is None or isinstance(p, int):
            return
        rp = _path(p)
        write = (mode is not None and any(c in mode for c in "wax+")) or (
            mode is None and flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT | os.O_APPEND | os.O_TRUNC))
        if _inside(rp, (_root,)) or (not write and (_inside(rp, _ro) or rp in _devs)):
            return
        raise PermissionError("sandbox: access to %%s is not allowed (only the working directory)" %% p)
    if ev in _pathw or ev in _pathr:
        for a in args[:2]:
            if isinstance(a, (str, bytes)) and not _inside(_path(a), (_root,)):
                raise PermissionError("sandbox: %%s on %%s is not allowed" %% (ev, a))
sys.addaudithook(_hook)
del _f, _src
_g = {"__name__": "__main__", "__file__": "main.py", "__builtins__": __builtins__}
try:
    exec(_code, _g)
except SystemExit:
    raise
except BaseException:
    traceback.print_exc()
    sys.stdout.flush()
    sys.exit(1)
`

// preamble renders the template for the given limits. extraRead lists more directories the code
// may read (a data directory, say).
func preamble(l Limits, extraRead []string) string {
	var quoted []string
	for _, p := range extraRead {
		quoted = append(quoted, fmt.Sprintf("os.path.realpath(%q)", p))
	}
	return fmt.Sprintf(preambleTemplate, l.CPUSeconds, l.MemoryBytes, l.Processes, l.FileBytes,
		strings.Join(quoted, ", "))
}
