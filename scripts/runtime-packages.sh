#!/usr/bin/env bash
# Checks the container's runtime stage (the last FROM of the Dockerfile) against what the flowbridge
# binary loads: every library `ldd` lists, and those it names for dlopen (libcurl.so.4, loaded when a
# widget has push:), must come from a package the stage installs, a dependency of one, or the base
# image (Debian's essential and required packages and their dependencies); and every library
# package the stage installs must be loaded. Packages are looked up in this machine's dpkg
# database, so it runs on Debian with the packages installed (make deps). `make image-check` runs it
# on the release build; the tests on the debug build with --swift-runtime-linked, which leaves out
# the Swift runtime's libraries (`--static-swift-stdlib` links them into the release build).
#
# usage: scripts/runtime-packages.sh [--swift-runtime-linked] BINARY DOCKERFILE
set -euo pipefail

swift_runtime_linked=""
if [ "${1:-}" = "--swift-runtime-linked" ]; then swift_runtime_linked=1; shift; fi
[ $# -eq 2 ] || { echo "usage: $0 [--swift-runtime-linked] BINARY DOCKERFILE" >&2; exit 64; }
binary=$1
dockerfile=$2
for tool in ldd dpkg dpkg-query awk; do
  command -v "$tool" >/dev/null || { echo "error: $tool is missing (Debian's dpkg and libc-bin)" >&2; exit 69; }
done

# The runtime stage's `apt-get install` packages: the words after `install` that are not options,
# up to the end of that command.
installed=$(awk '/^FROM /{stage=""} {stage = stage $0 "\n"} END{print stage}' "$dockerfile" \
  | sed -e ':a' -e '/\\$/N; s/\\\n/ /; ta' \
  | grep -o 'apt-get install[^&;|]*' | sed 's/^apt-get install//' | tr ' ' '\n' | grep -v '^-' | grep -v '^$' | sort -u || true)
[ -n "$installed" ] || { echo "error: $dockerfile: no apt-get install in its last stage" >&2; exit 65; }

# The package that owns a file (the path as ldd says it, resolved, or without /usr on a merged /usr).
owner() {
  local real
  real=$(readlink -f "$1")
  for candidate in "$1" "$real" "${real#/usr}"; do
    # (Readers take all their input: under pipefail, a writer cut short by SIGPIPE fails the line.)
    dpkg -S "$candidate" 2>/dev/null | awk -F: 'NR == 1 { print $1 }' && return 0
  done
  return 1
}

# Every installed package reachable through Pre-Depends and Depends from the ones given as
# arguments (of alternatives, the first), one per line.
closure() {
  dpkg-query -W -f='${Package}\t${Pre-Depends}, ${Depends}\n' | awk -F'\t' -v start="$*" '
    { deps[$1] = $2 }
    END {
      n = split(start, queue, " ")
      for (i = 1; i <= n; i++) {
        p = queue[i]
        if (p in seen || !(p in deps)) continue
        seen[p] = 1
        count = split(deps[p], list, ",")
        for (j = 1; j <= count; j++) {
          d = list[j]
          sub(/\|.*/, "", d); sub(/\(.*/, "", d); sub(/:any/, "", d); gsub(/ /, "", d)
          if (d != "") queue[++n] = d
        }
      }
      for (p in seen) print p
    }'
}
# shellcheck disable=SC2046
base=$(closure $(dpkg-query -W -f='${Package} ${Essential} ${Priority}\n' | awk '$2 == "yes" || $3 == "required" { print $1 }'))
# shellcheck disable=SC2086
from_stage=$(closure $installed)

# The libraries: ldd's, and the sonames the binary holds that it does not link (its dlopen names).
linked=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1 " " $3 }')
needed_names=$(echo "$linked" | awk '{ print $1 }')
opened=$(grep -a -o 'lib[A-Za-z0-9_+-]*\.so\.[0-9][0-9]*' "$binary" | sort -u | grep -v -x -F "$needed_names" || true)
for name in $opened; do
  path=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n && !found { print $NF; found = 1 }')
  [ -n "$path" ] || { echo "error: $binary opens $name, which this machine does not have to look it up (make deps)" >&2; exit 69; }
  linked=$(printf '%s\n%s' "$linked" "$name $path")
done

status=0
used=" "
while read -r name path; do
  [ -n "$name" ] || continue
  if [ -n "$swift_runtime_linked" ] && ! dpkg -S "$(readlink -f "$path")" >/dev/null 2>&1 \
    && [[ $name =~ ^lib(swift|_?Foundation|dispatch|BlocksRuntime) ]]; then
    continue  # the Swift runtime: linked in by --static-swift-stdlib
  fi
  package=$(owner "$path") || { echo "error: $name ($path) belongs to no Debian package" >&2; status=1; continue; }
  used="$used$package "
  if grep -q -x -F "$package" <<< "$installed"; then
    echo "$name: $package, installed by the image"
  elif grep -q -x -F "$package" <<< "$from_stage"; then
    echo "$name: $package, a dependency of what the image installs"
  elif grep -q -x -F "$package" <<< "$base"; then
    echo "$name: $package, in the base image"
  else
    echo "error: $name comes from $package, which $dockerfile does not install" >&2
    status=1
  fi
done <<< "$linked"
for package in $installed; do
  case $package in
    lib*)
      if [[ $used != *" $package "* ]]; then
        echo "error: $dockerfile installs $package, which $binary does not load" >&2
        status=1
      fi ;;
    *) echo "$package: data (installed by the image, not a library)" ;;
  esac
done
exit $status
