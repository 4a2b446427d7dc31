#!/usr/bin/env bash
# make check-fresh: the README's two commands on a fresh Debian 12 machine, from nothing.
#
# A minimal Debian 12 root (debootstrap, cached under ~/.cache/mtgrpo; scripts/lib/root.sh) with
# Go, git and make only; a clean clone of HEAD (committed files only) at /work/mtgrpo; then the
# commands of the README's "On a fresh Debian machine" block, exactly as written there, in order.
# They must install everything themselves: apt packages, Go modules, npm assets, the shim, then run
# the demo and the tests (whose check of the demo's recipe reads the demo's run: MTGRPO_DEMO_RUN).
# This is CI's one run of the README's commands (.ci/run). Needs root and network access to the
# Debian, Go module and npm mirrors.
#
#   scripts/check_fresh.sh                (make check-fresh)
#   MTGRPO_CACHE=/other/cache scripts/check_fresh.sh
#
# docs/setup.md has the cold and warm times.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT_CHECK=check-fresh
. scripts/lib/root.sh
. scripts/lib/check.sh

check_start
mapfile -t cmds < <(git show "$CHECK_SHA:README.md" | readme_commands /dev/stdin)
[ ${#cmds[@]} -gt 0 ] || root_die "found no commands in README.md's \"On a fresh Debian machine\" block"
root_say "README commands: $(printf '[%s] ' "${cmds[@]}")"

root_base bookworm bookworm main
# make test's TestDemoRecipeLearns checks the evaluations of the demo that `make demo` ran just
# before instead of training the same recipe again (cmd/mtgrpo/learn_test.go).
check_run "$(fresh_preflight)
export MTGRPO_DEMO_RUN=/work/mtgrpo/runs/demo
$(timed_commands "${cmds[@]}")"
