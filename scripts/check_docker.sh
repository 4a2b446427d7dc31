#!/usr/bin/env bash
# make check-docker: the Docker image (Dockerfile, BASE=trixie) built for real from a clean export
# of HEAD, and run on the CPU. Several GB of packages the first time: not in every CI run; run it
# when the Dockerfile or scripts/docker change and record the result in docs/setup.md.
#
#  1. A Docker engine with BuildKit (scripts/lib/docker.sh): dockerd is started when none answers
#     and stopped again at the end.
#  2. Base images without a registry: a debootstrapped trixie root (scripts/lib/root.sh, cached
#     under ~/.cache/mtgrpo) imported as mtgrpo-base/trixie:<recipe key>, and this machine's Go
#     imported as mtgrpo-base/go:<version> (the Dockerfile's GO_IMAGE).
#  3. docker build --network host with BASE=trixie, CUDNN_STANDIN=1 (cuDNN cannot be downloaded
#     offline; the runtime stage takes the stand-in library from the build stage) and, as the
#     secret extra_ca, MTGRPO_EXTRA_CA (default this machine's CA bundle when it has one, so that
#     a TLS-inspecting proxy's CA is trusted during the build; MTGRPO_EXTRA_CA=none for none).
#  4. In the image, with no network: `mtgrpo version` reports libtorch and CUDA unavailable,
#     `mtgrpo demo --short` trains to the end, and the extra CA certificates are not in the image.
#  5. The image's size.
#
# The image is tagged MTGRPO_DOCKER_TAG (default mtgrpo:check); the build log is
# build/check-docker.log.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT_CHECK=check-docker
. scripts/lib/root.sh
. scripts/lib/docker.sh

image=${MTGRPO_DOCKER_TAG:-mtgrpo:check}
extra_ca=${MTGRPO_EXTRA_CA:-}
if [ -z "$extra_ca" ]; then
  extra_ca=none
  [ -s /etc/ssl/certs/ca-certificates.crt ] && extra_ca=/etc/ssl/certs/ca-certificates.crt
fi
log=$PWD/build/check-docker.log
t0=$SECONDS
sha=$(git rev-parse HEAD)
if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
  root_say "note: uncommitted changes are not part of the check; it checks commit $sha"
fi
took() { root_say "$1 took $((SECONDS - $2)) s"; }

# 1-2. The engine and the bases. The trixie root has ca-certificates only beyond minbase (what the
# Dockerfile's RUN steps need to reach HTTPS with the extra CA).
docker_require
ctx=$MTGRPO_CACHE/work/check-docker.$$
cleanup() {
  rm -rf "$ctx"
  docker_stop
}
trap cleanup EXIT
ROOT_PACKAGES=ca-certificates root_base docker-trixie trixie main
trixie_image=mtgrpo-base/trixie:$(basename "$ROOT_BASE" | sed 's/.*-//')
docker_import_root mtgrpo-base/trixie "$ROOT_BASE" "${trixie_image#*:}"
docker_import_go mtgrpo-base/go

# 3. The build, from the committed files only.
rm -rf "$ctx"
mkdir -p "$ctx" build
# Modes as a checkout with umask 022 makes them (git archive's default is 002): BuildKit's cache keys
# include them, so the layers cached by a build from a clone are reused.
git -c tar.umask=0022 archive "$sha" | tar -x -C "$ctx"
secret=()
if [ "$extra_ca" != none ]; then
  [ -s "$extra_ca" ] || root_die "MTGRPO_EXTRA_CA=$extra_ca: no such file (MTGRPO_EXTRA_CA=none for no extra CA)"
  secret=(--secret "id=extra_ca,src=$extra_ca")
fi
t=$SECONDS
root_say "building $image from commit ${sha:0:12} (BASE=trixie, CUDNN_STANDIN=1, extra CA: $extra_ca; log: $log)"
"${DOCKER_BUILD[@]}" --progress=plain --network host -t "$image" \
  --build-arg BASE=trixie --build-arg TRIXIE="$trixie_image" --build-arg GO_IMAGE="$DOCKER_GO_IMAGE" \
  --build-arg CUDNN_STANDIN=1 "${secret[@]}" "$ctx" >"$log" 2>&1 ||
  { tail -40 "$log" >&2; root_die "FAIL: docker build (log: $log)"; }
took "docker build" "$t"

# 4. The image on the CPU, offline.
run() { "$DOCKER" run --rm --network none "$@"; }
v=$(run "$image" version) || root_die "FAIL: mtgrpo version in $image: $v"
root_say "mtgrpo version: $v"
for want in 'libtorch 2.' 'CUDA available: false' 'process groups: gloo, nccl'; do
  case "$v" in *"$want"*) ;; *) root_die "FAIL: mtgrpo version in $image does not say '$want'" ;; esac
done
t=$SECONDS
root_say "\$ docker run $image demo --short"
run "$image" demo --short --run-dir /tmp/demo >>"$log" 2>&1 ||
  { tail -30 "$log" >&2; root_die "FAIL: mtgrpo demo --short in $image (log: $log)"; }
tail -5 "$log" | sed 's/^/  /' >&2
took "mtgrpo demo --short in the image" "$t"

# The extra CA is the build's only: not in the trust store, and none of this machine's own extra
# certificates (/usr/local/share/ca-certificates, the proxy's kind) in the image's bundle.
run --entrypoint /bin/sh "$image" -c '! test -e /usr/local/share/ca-certificates/mtgrpo-extra-ca.crt' ||
  root_die "FAIL: $image keeps the extra CA (/usr/local/share/ca-certificates/mtgrpo-extra-ca.crt)"
pem_bodies() { awk '/-----BEGIN CERT/ { b = ""; on = 1; next } /-----END CERT/ { print b; on = 0 } on { b = b $0 }' "$@"; }
bundle=$(run --entrypoint /bin/cat "$image" /etc/ssl/certs/ca-certificates.crt | pem_bodies)
if compgen -G '/usr/local/share/ca-certificates/*.crt' >/dev/null; then
  while read -r c; do
    if grep -qxF "$c" <<<"$bundle"; then root_die "FAIL: $image trusts a certificate of /usr/local/share/ca-certificates"; fi
  done < <(pem_bodies /usr/local/share/ca-certificates/*.crt)
fi
root_say "the extra CA is not in the image"

# 5. The size.
size=$("$DOCKER" image inspect -f '{{.Size}}' "$image")
root_say "PASS: commit ${sha:0:12}, image $image $((size / 1000000)) MB, $((SECONDS - t0)) s in all"
