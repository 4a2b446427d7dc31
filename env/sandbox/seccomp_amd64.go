package sandbox

import "golang.org/x/sys/unix"

const auditArchNative = unix.AUDIT_ARCH_X86_64
