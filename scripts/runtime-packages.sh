#!/usr/bin/env bash
# Checks a flowbridge package's dependencies against what its binary loads: every library `ldd`
# lists, and those it names for dlopen (libcurl.so.4, loaded when a widget has push:), must come
# from a package the .deb depends on, a dependency of one, or every Debian system (its essential
# and required packages and their dependencies); and every library package it depends on must be
# loaded. Packages are looked up in this machine's dpkg database, so it runs on Debian with the
# packages installed (make deps). `make deb` runs it on the package it builds (packaging/deb.sh);
# the tests on the debug build with --swift-runtime-linked, which leaves out the Swift runtime's
# libraries (`--static-swift-stdlib` links them into the release build).
#
# With --opened it prints the libraries the binary names for dlopen, `SONAME PATH` a line: the
# dependencies that dpkg-shlibdeps, which reads only what the binary links, cannot see.
#
# usage: scripts/runtime-packages.sh [--swift-runtime-linked] BINARY PACKAGE.deb
#        scripts/runtime-packages.sh --opened BINARY
set -euo pipefail

swift_runtime_linked=""
opened_only=""
case "${1:-}" in
  --swift-runtime-linked) swift_runtime_linked=1; shift ;;
  --opened) opened_only=1; shift ;;
esac
usage() { echo "usage: $0 [--swift-runtime-linked] BINARY PACKAGE.deb | $0 --opened BINARY" >&2; exit 64; }
if [ -n "$opened_only" ]; then [ $# -eq 1 ] || usage; else [ $# -eq 2 ] || usage; fi
binary=$1
package_file=${2:-}
for tool in ldd dpkg dpkg-deb dpkg-query awk ldconfig; do
  command -v "$tool" >/dev/null || { echo "error: $tool is missing (Debian's dpkg and libc-bin)" >&2; exit 69; }
done

# The libraries: ldd's, and the sonames the binary holds that it does not link (its dlopen names).
linked=$(ldd "$binary" | awk '$2 == "=>" && $3 ~ /^\// { print $1 " " $3 }')
needed_names=$(echo "$linked" | awk '{ print $1 }')
opened=""
for name in $(grep -a -o 'lib[A-Za-z0-9_+-]*\.so\.[0-9][0-9]*' "$binary" | sort -u | grep -v -x -F "$needed_names" || true); do
  path=$(ldconfig -p 2>/dev/null | awk -v n="$name" '$1 == n && !found { print $NF; found = 1 }')
  [ -n "$path" ] || { echo "error: $binary opens $name, which this machine does not have to look it up (make deps)" >&2; exit 69; }
  opened=$(printf '%s\n%s' "$opened" "$name $path")
done
if [ -n "$opened_only" ]; then
  sed '/^$/d' <<< "$opened"
  exit 0
fi
linked=$(printf '%s%s' "$linked" "$opened")

# What the package depends on (of alternatives, the first; without versions).
[ -r "$package_file" ] || { echo "error: cannot read $package_file" >&2; exit 66; }
installed=$(dpkg-deb -f "$package_file" Pre-Depends Depends | sed 's/^[A-Za-z-]*: //' | tr ',' '\n' \
  | sed -e 's/|.*//' -e 's/(.*//' -e 's/:any//' -e 's/ //g' | grep -v '^$' | sort -u || true)
[ -n "$installed" ] || { echo "error: $package_file depends on nothing" >&2; exit 65; }

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
    echo "$name: $package, a dependency of the package"
  elif grep -q -x -F "$package" <<< "$from_stage"; then
    echo "$name: $package, a dependency of what the package depends on"
  elif grep -q -x -F "$package" <<< "$base"; then
    echo "$name: $package, in every Debian system"
  else
    echo "error: $name comes from $package, which $package_file does not depend on" >&2
    status=1
  fi
done <<< "$linked"
for package in $installed; do
  case $package in
    lib*)
      if [[ $used != *" $package "* ]]; then
        echo "error: $package_file depends on $package, which $binary does not load" >&2
        status=1
      fi ;;
    *) echo "$package: a dependency of the package, not a library" ;;
  esac
done
exit $status
