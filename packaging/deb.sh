#!/usr/bin/env bash
# Builds flowbridge_<version>_<arch>.deb from a release build, with Debian's own tools: dpkg-deb,
# dpkg-shlibdeps for the libraries the binary links, and the library it opens with dlopen (libcurl,
# for a widget's push:) added from its package's shlibs, the same way. The version is the binary's
# own (`flowbridge --version`), which the top entry of packaging/debian/changelog must name; the
# architecture is this machine's (dpkg --print-architecture). Then the package's dependencies are
# checked against what the binary loads (scripts/runtime-packages.sh) and lintian must report no
# error.
#
# usage: packaging/deb.sh BINARY OUT_DIR    (make deb: the release build, .build/deb)
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 BINARY OUT_DIR" >&2; exit 64; }
binary=$1
out=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
repo=$(dirname "$here")
debian=$here/debian

version=$("$binary" --version | awk '{ print $2 }')
changelog_version=$(dpkg-parsechangelog -l "$debian/changelog" -S Version)
if [ "$version" != "$changelog_version" ]; then
  echo "error: the binary is flowbridge $version, packaging/debian/changelog's newest entry $changelog_version: add an entry for $version" >&2
  exit 65
fi
# The changelog's date dates the man pages and every file, so two builds of one version are alike.
SOURCE_DATE_EPOCH=$(dpkg-parsechangelog -l "$debian/changelog" -S Timestamp)
export SOURCE_DATE_EPOCH
maintainer=$(dpkg-parsechangelog -l "$debian/changelog" -S Maintainer)
arch=$(dpkg --print-architecture)
deb=$out/flowbridge_${version}_${arch}.deb
root=$out/root
rm -rf "$root" "$out/shlibdeps"
mkdir -p "$root/DEBIAN"

# The binary, stripped as dh_strip does (the symbols Swift needs at run time are not the ones it
# strips: the runtime finds its metadata through the swift5_* sections).
install -D -m 755 "$binary" "$root/usr/bin/flowbridge"
strip --remove-section=.comment --remove-section=.note --strip-unneeded "$root/usr/bin/flowbridge"

# The unit, the one in deploy/ with the binary where the package puts it.
unit=$root/lib/systemd/system/flowbridge.service
install -D -m 644 "$repo/deploy/flowbridge.service" "$unit"
sed -i 's#^ExecStart=/usr/local/bin/flowbridge #ExecStart=/usr/bin/flowbridge #' "$unit"
grep -q '^ExecStart=/usr/bin/flowbridge ' "$unit" || { echo "error: deploy/flowbridge.service: no ExecStart=/usr/local/bin/flowbridge to point at /usr/bin" >&2; exit 65; }

# The commented example as the config (a conffile: an upgrade keeps the owner's edits).
install -D -m 644 "$repo/Config/example.yaml" "$root/etc/flowbridge/config.yaml"

# Documentation: the README and docs/ compressed (as dh_compress does, over 4 kB), the device
# examples and the reference config as they are, so they can be copied and checked.
doc=$root/usr/share/doc/flowbridge
install -D -m 644 "$debian/copyright" "$doc/copyright"
gzip -9nc "$debian/changelog" > "$doc/changelog.gz"
install -m 644 "$repo/README.md" "$doc/README.md"
install -d "$doc/docs" "$doc/examples"
install -m 644 "$repo"/docs/*.md "$repo"/docs/*.svg "$doc/docs/"
install -m 644 "$repo"/Config/examples/*.yaml "$repo/Config/flowbridge.yaml" "$doc/examples/"
find "$doc" -path "$doc/examples" -prune -o -type f -size +4k ! -name copyright -exec gzip -9n {} +

# The man pages, from `flowbridge help` and the reference config.
summary=$(sed -n 's/^Description: //p' "$debian/control")
python3 "$here/man.py" "$binary" "$repo/Config/flowbridge.yaml" "$summary" \
  "$(date -u -d "@$SOURCE_DATE_EPOCH" +%F)" "$version" "$out/man"
install -D -m 644 "$out/man/flowbridge.1" "$root/usr/share/man/man1/flowbridge.1"
install -D -m 644 "$out/man/flowbridge.yaml.5" "$root/usr/share/man/man5/flowbridge.yaml.5"
gzip -9n "$root/usr/share/man/man1/flowbridge.1" "$root/usr/share/man/man5/flowbridge.yaml.5"

# The dependencies: dpkg-shlibdeps for what the binary links (it reads a debian/control of its
# own), and for each library it opens with dlopen the dependency that library's package declares
# in its shlibs file (`libcurl 4 libcurl4 (>= 7.88.1)`), as dpkg-shlibdeps would for a link;
# tzdata, whose zone database says when the day ends; procps, whose kill the unit's ExecReload=
# runs (a Debian system with systemd need not have it).
mkdir -p "$out/shlibdeps/debian"
printf 'Source: flowbridge\n\nPackage: flowbridge\nArchitecture: any\n' > "$out/shlibdeps/debian/control"
linked=$(cd "$out/shlibdeps" && dpkg-shlibdeps -O -e"$root/usr/bin/flowbridge" | sed -n 's/^shlibs:Depends=//p')
opened=""
while read -r soname path; do
  [ -n "$soname" ] || continue
  package=$(dpkg -S "$(readlink -f "$path")" | awk -F: 'NR == 1 { print $1 }')
  shlibs=$(dpkg-query --control-path "$package" shlibs 2>/dev/null || true)
  name=${soname%%.so.*}; major=${soname##*.so.}
  dependency=$(awk -v n="$name" -v m="$major" '$1 == n && $2 == m { $1 = ""; $2 = ""; sub(/^ +/, ""); print; exit }' "${shlibs:-/dev/null}")
  [ -n "$dependency" ] || { echo "error: $soname ($path, of $package): no shlibs entry to depend on" >&2; exit 65; }
  opened="$opened, $dependency"
done < <("$repo/scripts/runtime-packages.sh" --opened "$binary")
depends="$linked$opened, tzdata, procps"

installed_size=$(du -s -k --apparent-size --exclude=DEBIAN "$root" | cut -f1)
sed -e "s/@VERSION@/$version/" -e "s/@ARCH@/$arch/" -e "s/@MAINTAINER@/$maintainer/" \
    -e "s/@INSTALLED_SIZE@/$installed_size/" -e "s/@DEPENDS@/$depends/" \
    "$debian/control" > "$root/DEBIAN/control"
install -m 644 "$debian/conffiles" "$root/DEBIAN/conffiles"
install -m 755 "$debian/postinst" "$debian/prerm" "$debian/postrm" "$root/DEBIAN/"
(cd "$root" && find . -path ./DEBIAN -prune -o -type f -printf '%P\0' | LC_ALL=C sort -z | xargs -0 md5sum > DEBIAN/md5sums)
chmod 644 "$root/DEBIAN/md5sums"
find "$root" -exec touch --no-dereference --date="@$SOURCE_DATE_EPOCH" {} +

rm -f "$out"/flowbridge_*.deb
dpkg-deb --root-owner-group -Zxz --build "$root" "$deb" >/dev/null
echo "built $deb ($(du -k "$deb" | cut -f1) kB; installed $installed_size kB)"
dpkg-deb -f "$deb" Package Version Architecture Depends Recommends

"$repo/scripts/runtime-packages.sh" "$binary" "$deb"
echo "lintian $deb:"
lintian --fail-on error --display-info "$deb"
echo "lintian: no error"
