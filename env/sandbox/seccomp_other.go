//go:build !amd64 && !arm64

package sandbox

// No filter for this architecture: seccompSupported says so in the isolation note.
const auditArch uint32 = 0

var deniedSyscalls []uint32
