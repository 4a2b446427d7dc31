#!/usr/bin/env bash
# The image's optional extra CA certificates, for builds behind a TLS-inspecting proxy (a company
# network that re-signs HTTPS with its own CA): `go mod download` and the cuDNN download in the
# Dockerfile's RUN steps only succeed when the stage trusts that CA.
#
# The certificates come in as the BuildKit secret `extra_ca` (a PEM file, one or more
# certificates; `docker build --secret id=extra_ca,src=FILE`), which RUN steps mount at
# /run/secrets/extra_ca; a secret is never stored in a layer or in the image's history.
#
#   extra_ca.sh install    adds the secret's certificates to this stage's trust store
#                          (/usr/local/share/ca-certificates, then update-ca-certificates; when
#                          ca-certificates is not installed yet, its installation picks them up);
#                          without the secret it does nothing
#   extra_ca.sh remove     takes them out of the trust store again
#
# Build stages install them and keep them (build stages are not shipped). The runtime stage
# removes them at the end of the RUN that needed them; the final image keeps them only when the
# build asks for it (KEEP_EXTRA_CA=1: the proxy is also in the way where the image runs).
set -euo pipefail
secret=/run/secrets/extra_ca
dest=/usr/local/share/ca-certificates/mtgrpo-extra-ca.crt
say() { printf 'extra_ca: %s\n' "$*" >&2; }

refresh() {
  if command -v update-ca-certificates >/dev/null; then
    update-ca-certificates --fresh >/dev/null
  fi
}

case "${1:-}" in
  install)
    [ -s "$secret" ] || exit 0
    grep -q -- '-----BEGIN CERTIFICATE-----' "$secret" ||
      { say "the secret extra_ca ($secret) holds no PEM certificate"; exit 1; }
    mkdir -p "$(dirname "$dest")"
    cp "$secret" "$dest"
    chmod 0644 "$dest"
    refresh
    say "trusting $(grep -c -- '-----BEGIN CERTIFICATE-----' "$dest") extra CA certificate(s) from the secret extra_ca"
    ;;
  remove)
    [ -e "$dest" ] || exit 0
    rm -f "$dest"
    refresh
    ;;
  *)
    say "usage: extra_ca.sh install|remove"
    exit 2
    ;;
esac
