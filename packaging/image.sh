#!/usr/bin/env bash
# Builds the container image (deploy/Dockerfile) from the package with podman, onto a base that
# needs no image registry: the clean Debian bookworm root of packaging/debian-root.sh, imported
# (`podman import`). These machines cannot start containers (`podman run` fails), so the check
# mounts the built image (`podman image mount`) and runs its entrypoint's binary in a chroot, as
# the image's user: `--version`, and `check` on the config the image runs with. Then it says the
# image's size.
#
# usage: packaging/image.sh PACKAGE.deb IMAGE WORK_DIR    (make image; the package in .build/deb)
set -euo pipefail

[ $# -eq 3 ] || { echo "usage: $0 PACKAGE.deb IMAGE WORK_DIR" >&2; exit 64; }
deb=$(readlink -f "$1")
image=$2
work=$(mkdir -p "$3" && cd "$3" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
base=localhost/flowbridge-base:bookworm
[ "$(dirname "$deb")" = "$repo/.build/deb" ] || { echo "error: deploy/Dockerfile takes the package from .build/deb, not $deb" >&2; exit 64; }
[ "$(id -u)" = 0 ] || { echo "error: podman image mount and chroot need root" >&2; exit 77; }

fail() { echo "image: FAILED: $*" >&2; exit 1; }
mib() { awk -v b="$1" 'BEGIN { printf "%.1f MiB", b / 1048576 }'; }

tarball=$("$here/debian-root.sh" "$work/bookworm-minbase.tar" | tail -n 1)
echo "base: $tarball imported as $base"
podman import --quiet "$tarball" "$base" >/dev/null

# RUN steps in chroot isolation: the OCI runtimes cannot start a container here.
podman build --isolation=chroot -f "$repo/deploy/Dockerfile" \
  --build-arg BUILD_FROM="$base" --build-arg PACKAGE_FROM=context -t "$image" "$repo"

mount=$(podman image mount "$image")
unmount() {
  if mountpoint -q "$mount/proc"; then umount "$mount/proc"; fi
  podman image unmount "$image" >/dev/null || true
}
trap unmount EXIT
# The Swift runtime reads its command line from /proc/self/cmdline.
mount -t proc proc "$mount/proc"
entrypoint=$(podman image inspect --format '{{index .Config.Entrypoint 0}}' "$image")
user=$(podman image inspect --format '{{.Config.User}}' "$image")
config=$(podman image inspect --format '{{range .Config.Cmd}}{{.}} {{end}}' "$image" | sed -n 's/.*--config \([^ ]*\).*/\1/p')
uid=$(awk -F: -v u="$user" '$1 == u { print $3 ":" $4 }' "$mount/etc/passwd")
[ -n "$uid" ] && [ "${uid%%:*}" != 0 ] || fail "the image runs as '$user', not a user of its own"
echo "image $image: entrypoint $entrypoint, user $user ($uid), config $config"
# As the container would run it: the image's user and its environment (STATE_DIRECTORY, PATH).
mapfile -t environment < <(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$image" | sed '/^$/d')
in_image() { chroot --userspec="$uid" -- "$mount" /usr/bin/env -i "${environment[@]}" "$@"; }

echo "== $entrypoint --version (chroot into the mounted image, as $user)"
version=$(in_image "$entrypoint" --version)
echo "$version"
[ "$version" = "flowbridge $(dpkg-deb -f "$deb" Version)" ] || fail "--version says '$version'"
echo "== $entrypoint check --config $config"
in_image "$entrypoint" check --config "$config" | tee "$work/image-check.log"
grep -q '^config OK' "$work/image-check.log" || fail "check did not pass"

size=$(podman image inspect --format '{{.Size}}' "$image")
base_size=$(podman image inspect --format '{{.Size}}' "$base")
echo "image $image: $(mib "$size"): flowbridge and the libraries it loads $(mib $((size - base_size))) on a base of $(mib "$base_size") (here a debootstrap minbase root; debian:bookworm-slim by default)"
