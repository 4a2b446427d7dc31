# shellcheck shell=bash
# A Docker engine for make check-docker (scripts/check_docker.sh), on top of scripts/lib/root.sh.
# Sourced, not run. Needs root.
#
#   docker_require        sets DOCKER (a docker client that builds with BuildKit) and DOCKER_BUILD
#                         (its build command); starts dockerd when no engine answers (installing
#                         Debian's docker.io with apt when dockerd is missing)
#   docker_stop           stops the dockerd that docker_require started, if it did (the caller's
#                         EXIT trap)
#   docker_import_root NAME DIR TAG
#                         imports the root DIR as the image NAME:TAG unless it exists: base images
#                         for machines where no registry is reachable
#   docker_import_go NAME sets DOCKER_GO_IMAGE: this machine's Go (GOROOT) as /usr/local/go in the
#                         image NAME:<go version>, the Dockerfile's GO_IMAGE
#
# dockerd started here runs with MTGRPO_DOCKERD_ARGS (default "--iptables=false --bridge=none": no
# firewall or bridge changes, which containers and CI machines often forbid; builds and runs then
# use the host's network or none), at nice 10, logging to $MTGRPO_CACHE/docker/dockerd.log.

MTGRPO_DOCKERD_ARGS=${MTGRPO_DOCKERD_ARGS:---iptables=false --bridge=none}

# docker_client picks, among the docker commands on PATH, one that builds with BuildKit: one with
# the buildx plugin, or a client before 23 (BuildKit built in, DOCKER_BUILDKIT=1).
docker_client() {
  local d major
  while read -r d; do
    if "$d" buildx version >/dev/null 2>&1; then
      DOCKER=$d DOCKER_BUILD=("$d" build)
      return 0
    fi
    major=$("$d" --version 2>/dev/null | sed -n 's/^Docker version \([0-9]*\)\..*/\1/p')
    if [ -n "$major" ] && [ "$major" -lt 23 ]; then
      DOCKER=$d DOCKER_BUILD=(env DOCKER_BUILDKIT=1 "$d" build)
      return 0
    fi
  done < <(which -a docker 2>/dev/null | awk '!seen[$0]++')
  return 1
}

# docker_install installs Debian's docker.io (dockerd, containerd, a docker client) with apt.
docker_install() {
  command -v apt-get >/dev/null || root_die "needs Docker with BuildKit ($1) and found no apt-get"
  root_say "installing docker.io with apt ($1)"
  { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends docker.io; } >&2 ||
    root_die "apt-get install docker.io failed"
}

docker_require() {
  [ "$(id -u)" = 0 ] || root_die "needs root (dockerd, the base roots)"
  if ! docker_client; then
    docker_install "no docker client that builds with BuildKit"
    docker_client || root_die "no docker client here builds with BuildKit: install the buildx plugin (Debian: docker-buildx)"
  fi
  if "$DOCKER" info >/dev/null 2>&1; then
    root_say "Docker engine $("$DOCKER" version -f '{{.Server.Version}}'), client $DOCKER"
    return 0
  fi
  if ! command -v dockerd >/dev/null; then
    docker_install "no engine answers and no dockerd to start"
    "$DOCKER" info >/dev/null 2>&1 && return 0  # started by the package, where an init system runs
  fi
  local log=$MTGRPO_CACHE/docker/dockerd.log
  mkdir -p "$(dirname "$log")"
  root_say "starting dockerd $MTGRPO_DOCKERD_ARGS (log: $log)"
  # shellcheck disable=SC2086
  setsid nice -n 10 dockerd $MTGRPO_DOCKERD_ARGS >"$log" 2>&1 &
  DOCKERD_PID=$!
  local i
  for i in $(seq 60); do
    "$DOCKER" info >/dev/null 2>&1 && return 0
    kill -0 "$DOCKERD_PID" 2>/dev/null || { tail -20 "$log" >&2; root_die "dockerd exited (log: $log)"; }
    sleep 1
  done
  tail -20 "$log" >&2
  root_die "dockerd did not answer within 60 s (log: $log)"
}

# docker_stop stops the dockerd that docker_require started, if any, and waits for it to exit.
docker_stop() {
  [ -n "${DOCKERD_PID:-}" ] || return 0
  kill -TERM "$DOCKERD_PID" 2>/dev/null || return 0
  local i
  for i in $(seq 60); do
    kill -0 "$DOCKERD_PID" 2>/dev/null || { root_say "stopped dockerd"; return 0; }
    sleep 1
  done
  root_say "dockerd (pid $DOCKERD_PID) still runs 60 s after SIGTERM"
}

docker_has_image() { "$DOCKER" image inspect "$1" >/dev/null 2>&1; }

docker_import_root() {
  local name=$1 dir=$2 tag=$3
  if docker_has_image "$name:$tag"; then
    root_say "base image $name:$tag"
    return 0
  fi
  # Not the parts root.sh adds for its own checks: Go, the work directory, the recipe.
  tar -C "$dir" --numeric-owner --exclude=./usr/local/go --exclude=./work --exclude=./etc/mtgrpo-root \
    --exclude=./var/log/mtgrpo-debootstrap.log -c . |
    "$DOCKER" import -m "mtgrpo base: $dir" - "$name:$tag" >/dev/null ||
    root_die "docker import of $dir as $name:$tag failed"
  root_say "imported $dir as $name:$tag"
}

docker_import_go() {
  local goroot version
  goroot=$(go env GOROOT) version=$(go env GOVERSION)
  DOCKER_GO_IMAGE=$1:$version
  if docker_has_image "$DOCKER_GO_IMAGE"; then
    root_say "Go image $DOCKER_GO_IMAGE"
    return 0
  fi
  tar -C "$goroot" --numeric-owner --transform 's,^\.,usr/local/go,' -c . |
    "$DOCKER" import -m "mtgrpo Go image: $version from $goroot" - "$DOCKER_GO_IMAGE" >/dev/null ||
    root_die "docker import of $goroot as $DOCKER_GO_IMAGE failed"
  root_say "imported $goroot as $DOCKER_GO_IMAGE"
}
