#!/bin/sh
# A base image made on this machine, for a Docker host that cannot pull from
# Docker Hub: Debian 12 (bookworm) by debootstrap, with Python 3.11, pip and
# venv, imported and tagged as the Dockerfile's FROM (python:3.11-slim).
# docs/containers.md says when and how to use it. Run as root:
#
#   sh deploy/local-base/make-base.sh [folder]    # default /var/tmp/codex-base
#
# EXTRA_CA_DIR: a folder of *.crt certificates the image should trust too
# (a network that inspects TLS, as pip's downloads go through it).
set -eu

ROOTFS="${1:-/var/tmp/codex-base}/rootfs"
MIRROR="${DEBIAN_MIRROR:-http://deb.debian.org/debian}"
TAG="${BASE_TAG:-python:3.11-slim}"

if [ ! -x "$ROOTFS/usr/bin/python3" ]; then
  mkdir -p "$(dirname "$ROOTFS")"
  debootstrap --variant=minbase \
    --include=python3,python3-pip,python3-venv,python-is-python3,ca-certificates \
    bookworm "$ROOTFS" "$MIRROR"
fi
# The official image's Python is its own and pip installs into it; Debian's
# marks its Python as managed by apt, which the Dockerfile's pip would refuse.
rm -f "$ROOTFS"/usr/lib/python3.*/EXTERNALLY-MANAGED
if [ -n "${EXTRA_CA_DIR:-}" ]; then
  cp "$EXTRA_CA_DIR"/*.crt "$ROOTFS/usr/local/share/ca-certificates/"
  chroot "$ROOTFS" update-ca-certificates
fi
chroot "$ROOTFS" apt-get clean
rm -rf "$ROOTFS"/var/lib/apt/lists/*
tar -C "$ROOTFS" -c . | docker import \
  --change 'ENV LANG=C.UTF-8' \
  --change 'ENV PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin' \
  --change 'CMD ["python3"]' \
  - "$TAG"
echo "Tagged $TAG: $(docker run --rm "$TAG" python --version)"
