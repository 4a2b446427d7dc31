package sandbox

import "testing"

// Where this process's memory cgroup is, from mountinfo and /proc/self/cgroup lines as three
// kinds of machine show them.
func TestParseCgroup(t *testing.T) {
	for _, c := range []struct {
		name, mountinfo, cgroup string
		want                    cgroupPlace
	}{{
		// A v1 memory hierarchy next to the unified one (this project's dev machines): v1 wins,
		// since the v2 hierarchy cannot have the memory controller.
		name: "hybrid",
		mountinfo: "30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid shared:9 - cgroup2 cgroup2 rw\n" +
			"34 25 0:30 / /sys/fs/cgroup/memory rw,nosuid shared:13 - cgroup cgroup rw,memory\n" +
			"35 25 0:31 / /sys/fs/cgroup/cpu,cpuacct rw shared:14 - cgroup cgroup rw,cpu,cpuacct\n",
		cgroup: "5:cpu,cpuacct:/\n4:memory:/jobs/42\n0::/\n",
		want:   cgroupPlace{mode: MemoryCgroupV1, mount: "/sys/fs/cgroup/memory", own: "/sys/fs/cgroup/memory/jobs/42"},
	}, {
		name:      "unified",
		mountinfo: "28 22 0:25 / /sys/fs/cgroup rw,nosuid,nodev,noexec shared:4 - cgroup2 cgroup2 rw,nsdelegate\n",
		cgroup:    "0::/user.slice/user-1000.slice/session-3.scope\n",
		want:      cgroupPlace{mode: MemoryCgroupV2, mount: "/sys/fs/cgroup", own: "/sys/fs/cgroup/user.slice/user-1000.slice/session-3.scope"},
	}, {
		// A container that sees its own subtree mounted at /sys/fs/cgroup (mount root is the
		// container's cgroup): the path in /proc/self/cgroup still starts from the host's root.
		name:      "container subtree",
		mountinfo: "700 690 0:25 /kubepods/pod1/ctr1 /sys/fs/cgroup ro,nosuid - cgroup2 cgroup2 rw\n",
		cgroup:    "0::/kubepods/pod1/ctr1\n",
		want:      cgroupPlace{mode: MemoryCgroupV2, mount: "/sys/fs/cgroup", own: "/sys/fs/cgroup"},
	}, {
		name:      "escaped mount point",
		mountinfo: "34 25 0:30 / /mnt/cg\\040mem rw - cgroup cgroup rw,memory\n",
		cgroup:    "4:memory:/a\n",
		want:      cgroupPlace{mode: MemoryCgroupV1, mount: "/mnt/cg mem", own: "/mnt/cg mem/a"},
	}} {
		got, err := parseCgroup(c.mountinfo, c.cgroup)
		if err != nil || got != c.want {
			t.Errorf("%s: got %+v, %v; want %+v", c.name, got, err, c.want)
		}
	}
	if _, err := parseCgroup("22 1 8:1 / / rw - ext4 /dev/sda1 rw\n", "0::/\n"); err == nil {
		t.Error("no cgroup mounted: want an error")
	}
}
