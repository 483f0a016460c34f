#!/usr/bin/env bash
# A clean Debian bookworm root, as `debootstrap --variant=minbase` makes it from the Debian
# registry this machine's apt uses (read from its sources at run time, never written into a file
# of the project), kept as a tarball so the next run unpacks it instead of downloading it again.
# The tarball is made once per CACHE path; delete it for a fresh one.
#
# usage: packaging/debian-root.sh CACHE.tar    (prints CACHE.tar once it exists)
set -euo pipefail

[ $# -eq 1 ] || { echo "usage: $0 CACHE.tar" >&2; exit 64; }
cache=$1
suite=bookworm

# The registry of `suite` that apt reads: from deb822 sources (the stanza whose Suites name it),
# else from sources.list (the `deb` line for it).
mirror() {
  local file
  for file in /etc/apt/sources.list.d/*.sources; do
    [ -r "$file" ] || continue
    awk -v suite="$suite" 'BEGIN { RS = ""; FS = "\n" }
      {
        uris = ""; match_suite = 0; binary = 0
        for (i = 1; i <= NF; i++) {
          if ($i ~ /^Types:.*[ \t]deb([ \t]|$)/) binary = 1
          if ($i ~ /^URIs:/) { split($i, f, /[ \t]+/); uris = f[2] }
          if ($i ~ /^Suites:/) { n = split($i, f, /[ \t]+/); for (j = 2; j <= n; j++) if (f[j] == suite) match_suite = 1 }
        }
        if (binary && match_suite && uris != "") { print uris; exit }
      }' "$file"
  done
  { cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list 2>/dev/null || true; } \
    | awk -v suite="$suite" '$1 == "deb" { i = 2; if ($i ~ /^\[/) while ($i !~ /\]$/) i++; if ($i ~ /^\[/ || $i ~ /\]$/) i++; if ($(i + 1) == suite) print $i }'
}

if [ ! -s "$cache" ]; then
  url=$(mirror | sed -n 1p)  # (sed reads it all: under pipefail, a writer cut short fails the line)
  [ -n "$url" ] || { echo "error: no Debian $suite registry in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list" >&2; exit 69; }
  work=$(mktemp -d "$(dirname "$cache")/debootstrap-XXXXXX")
  trap 'rm -rf "$work"' EXIT
  echo "debootstrap --variant=minbase $suite (once; kept as $cache)"
  debootstrap --variant=minbase "$suite" "$work/root" "$url" > "$work/debootstrap.log" 2>&1 \
    || { tail -n 20 "$work/debootstrap.log" >&2; echo "error: debootstrap failed" >&2; exit 1; }
  tar -C "$work/root" -cf "$work/root.tar" .
  mv "$work/root.tar" "$cache"
fi
echo "$cache"
