#!/bin/sh
# Takes a headless Chromium screenshot of every SVG under DIR (each at the picture's own size,
# beside it as .png) and checks that none is blank. `make screenshot` runs it.
# usage: scripts/screenshot.sh DIR
set -eu
dir=$1
browser=$(command -v chromium || command -v chromium-browser || true)
[ -n "$browser" ] || { echo "error: chromium is not installed (make screenshot installs it)" >&2; exit 1; }
# Chromium refuses to start its sandbox as root (containers, CI).
sandbox=""
[ "$(id -u)" = 0 ] && sandbox="--no-sandbox"
pngs=""
for svg in $(find "$dir" -name '*.svg' | sort); do
  size=$(sed -n 's/^<svg [^>]* width="\([0-9]*\)[0-9.]*" height="\([0-9]*\)[0-9.]*".*/\1,\2/p' "$svg" | head -n 1)
  [ -n "$size" ] || { echo "error: $svg has no width and height" >&2; exit 1; }
  png="${svg%.svg}.png"
  rm -f "$png"
  "$browser" --headless $sandbox --disable-gpu --hide-scrollbars --window-size="$size" \
    --screenshot="$png" "file://$(realpath "$svg")" >/dev/null 2>&1 || true
  pngs="$pngs $png"
done
[ -n "$pngs" ] || { echo "error: no SVG under $dir" >&2; exit 1; }
python3 "$(dirname "$0")/png-not-blank.py" $pngs
