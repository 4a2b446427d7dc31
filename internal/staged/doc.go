// Package staged writes directories and files so that a crash never leaves a partial one under
// its final name: a writer fills a temporary sibling of the destination, syncs every file and
// directory in it, renames it into place and syncs the parent. Checkpoints, the exported model,
// the random base model in the run directory, `mtgrpo init`/`export`, the demo and the report
// all write through it. WriteFileIn writes inside an os.Root, for directories shared with others.
//
// # Temporaries and their owners
//
// A temporary is named after its destination and its owner:
//
//	.<base>.staged-<pid>-<start>-<host>   a directory or file being written
//	.<base>.old-<pid>-<start>-<host>      a destination moved aside to be replaced or removed
//
// where <host> is the writer's hostname, <pid> its process id and <start> the process's start
// time (Linux: /proc/<pid>/stat's starttime, in clock ticks since boot; 0 where unknown). A pid
// alone does not identify a writer: pids repeat across containers, across the hosts that share
// a filesystem (the usual place of a multi-node run's checkpoints) and after a process exits.
//
// Sweep removes the temporaries a dead writer left, and only those: a temporary whose host is
// this host, whose pid names no running process or one that started at another time. A
// temporary of another host is never removed, whatever its age: a writer there may be hours into
// a large export over a shared filesystem, and neither its liveness nor a trustworthy clock can
// be checked from here. Such leftovers say by name which host left them; a sweep on that host
// removes them, or a person does. A temporary whose name does not parse is left alone.
//
// Crash safety holds on POSIX filesystems where rename within a directory is atomic and fsync
// of a directory persists its entries (ext4, xfs; NFS close-to-open gives the same to other
// clients after the rename).
package staged
