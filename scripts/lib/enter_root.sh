#!/usr/bin/env bash
# The inside half of root_run (scripts/lib/root.sh): started by `unshare --mount --pid --fork` as
# the first process of fresh mount and PID namespaces, it assembles the machine and becomes it.
#
#   enter_root.sh BASE WORK APTCACHE REPO SHA ENVFILE CMD
#
# WORK/merged = an overlay of BASE (read-only) under WORK/upper (this run's changes), with proc,
# sys, dev, a tmpfs /run and the apt download cache mounted; a clean clone of commit SHA of REPO at
# /work/mtgrpo; then pivot_root into it (a real root, not a chroot: programs that create user
# namespaces, like the Python sandbox, behave as on a machine), and CMD runs under `bash -c` with
# only the variables of ENVFILE. Every mount lives in this namespace and goes away with it.
set -euo pipefail
base=$1 work=$2 apt=$3 repo=$4 sha=$5 envfile=$6 cmd=$7
m=$work/merged

mount -t overlay overlay -o "lowerdir=$base,upperdir=$work/upper,workdir=$work/ovl" "$m"
mount -t proc proc "$m/proc"
mount --rbind /sys "$m/sys"
mount --rbind /dev "$m/dev"
mount -t tmpfs -o mode=755 tmpfs "$m/run"
mount --bind "$apt" "$m/var/cache/apt/archives"
cp -L /etc/resolv.conf "$m/etc/resolv.conf"
cp -L /etc/hosts "$m/etc/hosts"
# This site's extra CA certificates (root_site_preamble installs them in the root's store).
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  mkdir -p "$m/usr/local/share/ca-certificates"
  cp -L /usr/local/share/ca-certificates/*.crt "$m/usr/local/share/ca-certificates/"
fi

# The clone is made with this machine's git (the root's own git would see the host path as unsafe);
# it holds the commit's files only: no build outputs, no third_party, no uncommitted changes.
git clone --quiet --no-local --no-checkout "$repo" "$m/work/mtgrpo"
git -C "$m/work/mtgrpo" -c advice.detachedHead=false checkout --quiet --detach "$sha"
git -C "$m/work/mtgrpo" remote remove origin

mapfile -t env <"$envfile"
cd "$m"
mkdir -p .oldroot
pivot_root . .oldroot
cd /
umount -l /.oldroot
rmdir /.oldroot
exec /usr/bin/env -i "${env[@]}" /bin/bash -c "$cmd"
