#!/usr/bin/env bash
# The Home Assistant add-on's folder, as Home Assistant builds it on the device: deploy/homeassistant
# (manifest, build.yaml, DOCS.md, run.sh), its Dockerfile (deploy/Dockerfile's stages, then
# addon.Dockerfile's lines, so the image and the add-on install one package the same way), and the
# sources of this clone in src/, from which the Dockerfile builds the package. No Swift is needed
# here; copy the folder to Home Assistant's addons share as addons/flowbridge.
#
# usage: packaging/addon.sh OUT_DIR    (make addon: .build/addon/flowbridge)
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 OUT_DIR" >&2; exit 64; }
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
out=$1
addon=$repo/deploy/homeassistant

rm -rf "$out"
mkdir -p "$out/src"
install -m 644 "$addon/config.yaml" "$addon/build.yaml" "$addon/DOCS.md" "$out/"
install -m 755 "$addon/run.sh" "$out/"
{ cat "$repo/deploy/Dockerfile"; echo; cat "$addon/addon.Dockerfile"; } > "$out/Dockerfile"
# The sources as the repository holds them: what git tracks (uncommitted edits included), or in a
# copy without git (CI's), everything but the build's and git's own folders.
if git -C "$repo" rev-parse --git-dir >/dev/null 2>&1; then
  (cd "$repo" && git ls-files -z | xargs -0 cp -p --parents -t "$out/src")
else
  tar -C "$repo" --exclude=./.build --exclude=./.swiftpm --exclude=./.git -cf - . | tar -C "$out/src" -xf -
fi
# The Dockerfile's context stage copies .build/deb (unused here: build.yaml says PACKAGE_FROM=source).
mkdir -p "$out/.build/deb"
echo "built the add-on folder $out ($(du -sk "$out" | cut -f1) kB): copy it to Home Assistant's addons share as addons/flowbridge"
