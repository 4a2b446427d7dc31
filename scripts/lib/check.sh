# shellcheck shell=bash
# Shared parts of the setup checks (scripts/check_*.sh), on top of scripts/lib/root.sh. Sourced.

# readme_commands FILE prints the commands of the README's "On a fresh Debian machine" block, one
# a line, without their comments: the check runs what the README tells users to type.
readme_commands() {
  awk '
    /^On a fresh Debian/ { armed = 1; next }
    armed && /^```/ { if (inside) exit; inside = 1; next }
    inside { sub(/[ \t]*#.*$/, ""); sub(/^[ \t]+/, ""); if ($0 != "") print }
  ' "$1"
}

# fresh_preflight prints commands that fail unless the root is as fresh as claimed: nothing that
# scripts/setup.sh is supposed to install is there yet.
fresh_preflight() {
  cat <<'EOF'
for p in libtorch-dev libtorch-cuda-dev libgloo-dev g++ npm python3; do
  if dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed'; then
    echo "not a fresh machine: $p is installed" >&2; exit 1
  fi
done
[ ! -e /root/go/pkg/mod ] || { echo "not a fresh machine: a Go module cache exists" >&2; exit 1; }
echo "fresh: Debian $(cat /etc/debian_version), $(go version | cut -d' ' -f3), no libtorch, g++, npm or python3"
EOF
}

# timed_commands CMD... prints a script that runs each command from /work/mtgrpo, stops at the
# first failure, and says how long each took.
timed_commands() {
  local c
  printf 'cd /work/mtgrpo\n'
  for c in "$@"; do
    printf 'echo "%s: \\$ "%q; t=$SECONDS\n' "$ROOT_CHECK" "$c"
    printf '%s\n' "$c"
    printf 'echo "%s: "%q" took $((SECONDS - t)) s"\n' "$ROOT_CHECK" "$c"
  done
}

# check_start notes the start time; check_run runs the script in a fresh root of ROOT_BASE and
# reports the outcome and the total time (cold: the base root was built by this run).
check_start() {
  CHECK_T0=$SECONDS
  CHECK_SHA=$(git rev-parse HEAD)
  if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
    root_say "note: uncommitted changes are not part of the check; it checks commit $CHECK_SHA"
  fi
}

check_run() {
  local script=$1 status=0 t1=$SECONDS
  root_run "$ROOT_CHECK" "$CHECK_SHA" "set -euo pipefail
$script" || status=$?
  local total=$((SECONDS - CHECK_T0)) inside=$((SECONDS - t1))
  if [ "$status" = 0 ]; then
    root_say "PASS: commit ${CHECK_SHA:0:12}, $total s in all ($inside s in the root)"
  else
    root_say "FAIL (exit $status): commit ${CHECK_SHA:0:12}, after $total s"
  fi
  return "$status"
}
