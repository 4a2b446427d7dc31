#!/usr/bin/env bash
# make check-torch2: the project against libtorch 2.x (Debian trixie's libtorch-dev 2.6, CPU) and
# Python 3.13, on a fresh trixie root (scripts/lib/root.sh; cached under ~/.cache/mtgrpo).
#
# In a clean clone of HEAD: scripts/setup.sh from nothing (it installs trixie's libtorch 2.6), the
# shim and the binary (make build), `mtgrpo version` must report libtorch 2.x, then the tests of
# the packages that touch libtorch or Python: torch, model, rollout, env (with env/sandbox), and
# the tests of scripts/libtorch.sh. Needs root and network access to the mirrors.
#
#   scripts/check_torch2.sh               (make check-torch2)
#   PKGS="./torch/..." scripts/check_torch2.sh    a subset of the packages
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT_CHECK=check-torch2
. scripts/lib/root.sh
. scripts/lib/check.sh

PKGS=${PKGS:-./torch/... ./model/... ./rollout/... ./env/...}

check_start
root_base trixie trixie main
check_run "$(fresh_preflight)
$(timed_commands scripts/setup.sh "make build")
v=\$(bin/mtgrpo version)
echo \"$ROOT_CHECK: \$v\"
case \"\$v\" in *'libtorch 2.'*) ;; *) echo '$ROOT_CHECK: the shim is not built against libtorch 2.x' >&2; exit 1 ;; esac
$(timed_commands scripts/libtorch_test.sh "go test -count=1 -timeout 60m $PKGS")"
