//go:build amd64 || arm64

package sandbox

import "golang.org/x/sys/unix"

// auditArch is the ABI the filter accepts (AUDIT_ARCH_* of linux/audit.h).
const auditArch = uint32(auditArchNative)

// deniedSyscalls hold memory outside RLIMIT_AS and outside the run's tmpfs.
var deniedSyscalls = []uint32{
	unix.SYS_MEMFD_CREATE,
	unix.SYS_MEMFD_SECRET,
	unix.SYS_SHMGET,
	unix.SYS_MSGGET,
	unix.SYS_MQ_OPEN,
}
