# shellcheck shell=bash
# Throwaway Debian machines for the setup checks (scripts/check_*.sh): a debootstrapped root per
# suite, cached outside the clone, and a way to run a command in a fresh copy of it holding a clean
# clone of a commit. Sourced, not run. Needs root, Go and overlayfs; debootstrap, unshare,
# pivot_root and git are installed with apt when missing (root_require).
#
#   root_base NAME SUITE COMPONENTS sets ROOT_BASE: the cached minimal root NAME of the suite
#                                   with those archive components (built when missing, when its
#                                   recipe changed, or when older than MTGRPO_ROOT_MAX_DAYS days,
#                                   default 30)
#   root_run NAME SHA CMD           runs the bash command CMD as root in a fresh overlay of
#                                   ROOT_BASE holding a clone of commit SHA at /work/mtgrpo
#
# Cache layout, under MTGRPO_CACHE (default ~/.cache/mtgrpo):
#   roots/<name>-<key>/       the base root; <key> hashes the recipe below, so a changed recipe
#                             (suite, components, packages, mirror, Go version) builds a new root
#   apt/<name>-<key>/         downloaded .deb files, so warm runs skip the downloads (apt still
#                             resolves and installs every package from nothing)
#   work/<name>.<pid>/        one run's overlay (upper layer, merged view); removed afterwards
#
# Site settings come along: the Go proxy and npm registry this machine uses, and the extra CA
# certificates it trusts (/usr/local/share/ca-certificates: e.g. a TLS-intercepting egress proxy),
# which the run installs in the root's store before anything else (root_site_preamble).
#
# Nothing is ever mounted in the caller's mount namespace: debootstrap and every run work inside
# `unshare --mount --pid`, so their mounts (overlay, proc, sys, dev) vanish with the namespace when
# the run ends, however it ends (even SIGKILL).
set -euo pipefail

ROOT_LIB=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
MTGRPO_CACHE=${MTGRPO_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/mtgrpo}
ROOT_MIRROR=${ROOT_MIRROR:-http://deb.debian.org/debian}
ROOT_SECURITY_MIRROR=${ROOT_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
# A fresh machine as the README assumes it: Debian, Go (copied from this machine's GOROOT), and
# what a user needed to get the code (git, with the CA certificates HTTPS needs) and to type the
# commands (make). Everything else must come from scripts/setup.sh.
ROOT_PACKAGES=${ROOT_PACKAGES:-ca-certificates,git,make}

root_say() { printf '%s: %s\n' "${ROOT_CHECK:-root}" "$*" >&2; }
root_die() { root_say "$*"; exit 1; }

# root_require checks what the checks need on this machine. The Debian tools they use (debootstrap,
# unshare and pivot_root from util-linux, git) are installed with apt when missing, as
# scripts/setup.sh does for the project: a machine that has only Go and the clone can run them.
root_require() {
  [ "$(id -u)" = 0 ] || root_die "needs root (debootstrap, mount namespaces, overlayfs)"
  command -v go >/dev/null || root_die "needs Go on this machine (it is copied into the root)"
  local t missing=()
  for t in debootstrap unshare pivot_root git; do
    command -v "$t" >/dev/null || missing+=("$t")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  command -v apt-get >/dev/null ||
    root_die "needs ${missing[*]} (apt-get install debootstrap util-linux git) and found no apt-get"
  root_say "installing debootstrap util-linux git with apt (missing: ${missing[*]})"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
      debootstrap util-linux git; } >&2 ||
    root_die "apt-get install debootstrap util-linux git failed (missing: ${missing[*]})"
  for t in "${missing[@]}"; do
    command -v "$t" >/dev/null || root_die "needs $t: still missing after apt-get install"
  done
}

# root_recipe prints everything a base root depends on; its hash is the cache key.
root_recipe() {
  local suite=$1 components=$2
  printf 'suite=%s\ncomponents=%s\npackages=%s\nmirror=%s\nsecurity=%s\ngo=%s\n' "$suite" "$components" \
    "$ROOT_PACKAGES" "$ROOT_MIRROR" "$ROOT_SECURITY_MIRROR" "$(go env GOVERSION)"
  declare -f root_build root_sources
}

# root_sources SUITE COMPONENTS prints the deb822 sources of a freshly installed Debian machine.
root_sources() {
  local suite=$1 components=$2
  printf 'Types: deb\nURIs: %s\nSuites: %s %s-updates\nComponents: %s\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n\n' \
    "$ROOT_MIRROR" "$suite" "$suite" "$components"
  printf 'Types: deb\nURIs: %s\nSuites: %s-security\nComponents: %s\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "$ROOT_SECURITY_MIRROR" "$suite" "$components"
}

# root_build SUITE COMPONENTS DEST debootstraps a minimal root into DEST.tmp, adds Go and the
# sources, and renames it to DEST once complete (a half-built root is never used).
root_build() {
  local suite=$1 components=$2 dest=$3 tmp=$3.tmp
  rm -rf "$tmp"
  mkdir -p "$tmp"
  root_say "debootstrap $suite ($components) into $tmp"
  # debootstrap mounts proc and sys inside the target: keep those mounts in a namespace of their own.
  unshare --mount --propagation private -- debootstrap --variant=minbase --include="$ROOT_PACKAGES" \
    --components="${components// /,}" "$suite" "$tmp" "$ROOT_MIRROR" >"$tmp.log" 2>&1 ||
    { tail -20 "$tmp.log" >&2; root_die "debootstrap $suite failed (log: $tmp.log)"; }
  rm -f "$tmp/etc/apt/sources.list"
  root_sources "$suite" "$components" >"$tmp/etc/apt/sources.list.d/debian.sources"
  rm -rf "$tmp/var/cache/apt/archives"/*.deb "$tmp/var/lib/apt/lists"/*_Packages
  mkdir -p "$tmp/usr/local"
  cp -a "$(go env GOROOT)" "$tmp/usr/local/go"
  mkdir -p "$tmp/work"
  mv "$tmp.log" "$tmp/var/log/mtgrpo-debootstrap.log"
  root_recipe "$suite" "$components" >"$tmp/etc/mtgrpo-root"
  mv "$tmp" "$dest"
}

# root_mounted DIR succeeds when something is mounted at or under DIR in this namespace.
root_mounted() { awk -v d="$1" '$2 == d || index($2, d "/") == 1 { found = 1 } END { exit !found }' /proc/mounts; }

# root_rm DIR removes DIR, refusing if anything is mounted under it (it would delete the mount's files).
root_rm() {
  [ -e "$1" ] || return 0
  root_mounted "$1" && root_die "refusing to remove $1: something is mounted under it"
  rm -rf "$1"
}

root_base() {
  local name=$1 suite=$2 components=$3
  root_require
  local key
  key=$(root_recipe "$suite" "$components" | sha1sum | cut -c1-12)
  ROOT_BASE=$MTGRPO_CACHE/roots/$name-$key
  ROOT_APT=$MTGRPO_CACHE/apt/$name-$key
  mkdir -p "$MTGRPO_CACHE/roots" "$ROOT_APT/partial"
  exec 8>"$MTGRPO_CACHE/roots/.lock"
  flock 8  # one root build at a time; runs share the finished root read-only
  local max=${MTGRPO_ROOT_MAX_DAYS:-30}
  if [ -d "$ROOT_BASE" ] && [ -n "$(find "$ROOT_BASE/etc/mtgrpo-root" -maxdepth 0 -mtime +"$max" 2>/dev/null)" ]; then
    root_say "cached root $ROOT_BASE is older than $max days: rebuilding"
    root_rm "$ROOT_BASE"
  fi
  if [ ! -d "$ROOT_BASE" ]; then
    local t0=$SECONDS
    root_build "$suite" "$components" "$ROOT_BASE"
    root_say "built $ROOT_BASE in $((SECONDS - t0)) s"
    # Roots and apt caches of older recipes of this root are stale now (12 characters: the key).
    local old
    for old in "$MTGRPO_CACHE/roots/$name"-???????????? "$MTGRPO_CACHE/apt/$name"-????????????; do
      case "$old" in "$ROOT_BASE" | "$ROOT_APT") ;; *) root_rm "$old" ;; esac
    done
  else
    root_say "cached root $ROOT_BASE"
  fi
  flock -u 8
}

# root_env prints the environment of a run: a login-like root shell, plus the settings this site
# needs to reach the Go module proxy and the npm registry (taken from this machine when set).
root_env() {
  printf '%s\n' HOME=/root LANG=C.UTF-8 TERM=dumb USER=root LOGNAME=root SHELL=/bin/bash \
    PATH=/usr/local/go/bin:/root/go/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin
  [ -n "${CI:-}" ] && printf 'CI=%s\n' "$CI"
  # Only how to reach the module proxy, not build settings (GOFLAGS): the root builds as a fresh
  # machine would.
  local v
  for v in GOPROXY GOSUMDB GONOSUMDB GONOPROXY GOPRIVATE GOINSECURE; do
    [ -n "$(go env "$v")" ] && printf '%s=%s\n' "$v" "$(go env "$v")"
  done
  [ -n "${NODE_EXTRA_CA_CERTS:-}" ] && printf 'NODE_EXTRA_CA_CERTS=%s\n' "$NODE_EXTRA_CA_CERTS"
  if command -v npm >/dev/null; then
    local reg
    reg=$(cd / && npm config get registry 2>/dev/null | tail -1) || true
    case "$reg" in http*) printf 'npm_config_registry=%s\n' "$reg" ;; esac
  fi
  return 0
}

# root_site_preamble prints the commands that trust this machine's extra CA certificates (copied
# into the root by enter_root.sh) before the run's own commands.
root_site_preamble() {
  if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
    printf '%s\n' 'update-ca-certificates >/dev/null 2>&1 || { echo "update-ca-certificates failed" >&2; exit 1; }'
  fi
}

# root_clean_stale removes the work directories of runs that no longer exist (killed with SIGKILL).
root_clean_stale() {
  local d pid
  for d in "$MTGRPO_CACHE"/work/*.*; do
    [ -d "$d" ] || continue
    pid=${d##*.}
    kill -0 "$pid" 2>/dev/null || root_rm "$d"
  done
}

root_run() {
  local name=$1 sha=$2 cmd=$3
  local repo
  repo=$(git rev-parse --path-format=absolute --git-common-dir)
  mkdir -p "$MTGRPO_CACHE/work"
  root_clean_stale
  ROOT_WORK=$MTGRPO_CACHE/work/$name.$$
  root_rm "$ROOT_WORK"
  mkdir -p "$ROOT_WORK"/{upper,ovl,merged}
  # shellcheck disable=SC2064
  trap "root_rm '$ROOT_WORK'" EXIT
  local envfile=$ROOT_WORK/env
  root_env >"$envfile"
  local status=0
  unshare --mount --pid --fork --kill-child --propagation private -- \
    bash "$ROOT_LIB/enter_root.sh" "$ROOT_BASE" "$ROOT_WORK" "$ROOT_APT" "$repo" "$sha" "$envfile" \
    "$(root_site_preamble)
$cmd" || status=$?
  if root_mounted "$ROOT_WORK"; then root_die "a mount under $ROOT_WORK outlived its namespace"; fi
  return "$status"
}
