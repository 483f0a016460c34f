#!/usr/bin/env bash
# The package as a user meets it, in a clean Debian bookworm root (debootstrap --variant=minbase,
# packaging/debian-root.sh): `apt-get install ./flowbridge_….deb` pulls every dependency from the
# registry by itself; then, inside the root: `flowbridge --version`, `flowbridge check` on the
# installed example, the installed unit through `systemd-analyze verify` (systemd installed into
# the root after the package), a short `run --dry-run` against a mosquitto on this machine's
# loopback that must print a push while a publisher publishes readings, an upgrade that must keep
# the owner's config, and two purges: one that must leave nothing of the package but the day's
# state, one asked (FLOWBRIDGE_PURGE_STATE=yes) to remove that too.
#
# usage: packaging/package-check.sh PACKAGE.deb WORK_DIR    (make package-check)
set -euo pipefail

[ $# -eq 2 ] || { echo "usage: $0 PACKAGE.deb WORK_DIR" >&2; exit 64; }
deb=$(readlink -f "$1")
work=$(mkdir -p "$2" && cd "$2" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
root=$work/root
name=$(basename "$deb")
[ "$(id -u)" = 0 ] || { echo "error: the clean root needs root (chroot, mount)" >&2; exit 77; }

step() { printf '\n== package-check: %s\n' "$*"; }
fail() { echo "package-check: FAILED: $*" >&2; exit 1; }
# A command inside the root, with a clean environment (`"${in_root[@]}" … &` is the command's own PID).
in_root=(chroot "$root" /usr/bin/env -i PATH=/usr/sbin:/usr/bin:/sbin:/bin LANG=C.UTF-8 HOME=/root)
inside() { "${in_root[@]}" "$@"; }

broker_pid=""
daemon_pid=""
cleanup() {
  [ -z "$daemon_pid" ] || kill "$daemon_pid" 2>/dev/null || true
  [ -z "$broker_pid" ] || kill "$broker_pid" 2>/dev/null || true
  for mount in "$root/dev/pts" "$root/proc"; do
    if mountpoint -q "$mount"; then umount "$mount"; fi
  done
}
trap cleanup EXIT

step "a clean Debian bookworm root in $root"
tarball=$("$here/debian-root.sh" "$work/bookworm-minbase.tar" | tail -n 1)
cleanup
rm -rf "$root"
mkdir -p "$root"
tar -C "$root" -xf "$tarball"
cp /etc/resolv.conf "$root/etc/resolv.conf"
mount -t proc proc "$root/proc"
mount -t devpts -o newinstance,ptmxmode=0666 devpts "$root/dev/pts"
cp "$deb" "$root/tmp/$name"

step "apt-get install ./$name (every dependency from the registry)"
inside apt-get update -q
inside sh -c "cd /tmp && DEBIAN_FRONTEND=noninteractive apt-get install -y ./$name" | tee "$work/install.log"
grep -q 'NEW packages will be installed' "$work/install.log" || fail "apt-get installed no dependency"
inside dpkg-query -W -f='${Status}\n' flowbridge | grep -q 'install ok installed' || fail "flowbridge is not installed"
inside dpkg-query -W -f='${Status} ${Package}\n' | awk '$3 != "installed" { bad = 1; print } END { exit bad }' || fail "packages left half-installed"
inside systemctl --version >/dev/null 2>&1 && fail "systemd came along: the root is not the clean one it should be"

step "flowbridge --version"
version=$(inside flowbridge --version)
echo "$version"
[ "$version" = "flowbridge $(dpkg-deb -f "$deb" Version)" ] || fail "--version says '$version'"

step "flowbridge check --config /etc/flowbridge/config.yaml (the installed example)"
inside flowbridge check --config /etc/flowbridge/config.yaml | tee "$work/check.log"
grep -q '^config OK' "$work/check.log" || fail "check did not pass the installed example"
[ -n "$(inside man -w flowbridge 2>/dev/null || true)" ] || [ -e "$root/usr/share/man/man1/flowbridge.1.gz" ] || fail "no flowbridge(1)"

step "systemd-analyze verify /lib/systemd/system/flowbridge.service (systemd installed into the root)"
# The service's home: a system with systemd, installed only now, so the install above was the
# package's alone.
inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends systemd' > "$work/systemd.log" \
  || { tail -n 20 "$work/systemd.log"; fail "installing systemd into the root"; }
inside systemd-analyze verify /lib/systemd/system/flowbridge.service > "$work/verify.log" 2>&1 \
  || { cat "$work/verify.log"; fail "systemd-analyze verify"; }
cat "$work/verify.log"
[ ! -s "$work/verify.log" ] || fail "systemd-analyze verify said something"
grep -q '^ExecStart=/usr/bin/flowbridge run --config /etc/flowbridge/config.yaml$' "$root/lib/systemd/system/flowbridge.service" \
  || fail "the unit does not run /usr/bin/flowbridge"
echo "the unit verifies"

step "run --dry-run against a mosquitto on this machine's loopback"
port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" > "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" > "$work/mosquitto.log" 2>&1 &
broker_pid=$!
for _ in $(seq 100); do
  mosquitto_pub -h 127.0.0.1 -p "$port" -t package-check/ping -m up 2>/dev/null && break
  kill -0 "$broker_pid" 2>/dev/null || { cat "$work/mosquitto.log"; fail "mosquitto did not start"; }
  sleep 0.1
done
# The installed example, pointed at that broker's port.
sed "s/^  port: 1883\$/  port: $port/" "$root/etc/flowbridge/config.yaml" > "$root/tmp/dry-run.yaml"
grep -q "^  port: $port\$" "$root/tmp/dry-run.yaml" || fail "the example has no 'port: 1883' to point at the broker"
"${in_root[@]}" flowbridge run --dry-run --summary --config /tmp/dry-run.yaml > "$work/dry-run.log" 2>&1 &
daemon_pid=$!
# The example's devices: an OpenDTU, a Shelly Pro 3EM and a battery behind evcc.
publish() {
  mosquitto_pub -h 127.0.0.1 -p "$port" -t solar/ac/power -m 2480
  mosquitto_pub -h 127.0.0.1 -p "$port" -t solar/ac/yieldday -m 8350
  mosquitto_pub -h 127.0.0.1 -p "$port" -t 'shellypro3em-abc/status/em:0' -m '{"id":0,"total_act_power":-410.5}'
  mosquitto_pub -h 127.0.0.1 -p "$port" -t 'shellypro3em-abc/status/emdata:0' -m '{"id":0,"total_act":1234567.8}'
  mosquitto_pub -h 127.0.0.1 -p "$port" -t evcc/site/battery/power -m -1200
  mosquitto_pub -h 127.0.0.1 -p "$port" -t evcc/site/battery/soc -m 76
}
deadline=$((SECONDS + 60))
until grep -q '"patch"' "$work/dry-run.log"; do
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/dry-run.log"; fail "run --dry-run ended"; }
  [ $SECONDS -lt $deadline ] || { cat "$work/dry-run.log"; fail "no push within 60 s"; }
  publish
  sleep 1
done
kill "$daemon_pid"
wait "$daemon_pid" || fail "run --dry-run did not stop cleanly on SIGTERM"
daemon_pid=""
echo "flowbridge run --dry-run inside the root printed:"
cat "$work/dry-run.log"

step "upgrade: a newer package over it keeps the owner's config"
# The same package as a newer version: the postinst takes the upgrade's path (a running service
# is restarted, under systemd; no first-install notice), and dpkg keeps the edited conffile.
echo "# written by its owner" >> "$root/etc/flowbridge/config.yaml"
rm -rf "$work/upgrade"
dpkg-deb -R "$deb" "$work/upgrade"
sed -i 's/^Version: .*/&+upgrade/' "$work/upgrade/DEBIAN/control"
dpkg-deb --root-owner-group -b "$work/upgrade" "$root/tmp/flowbridge_upgrade.deb" >/dev/null
inside sh -c 'cd /tmp && DEBIAN_FRONTEND=noninteractive apt-get install -y ./flowbridge_upgrade.deb' | tee "$work/upgrade.log"
grep -q "^Unpacking flowbridge (.*+upgrade) over (" "$work/upgrade.log" || fail "not an upgrade"
! grep -q "then start the service" "$work/upgrade.log" || fail "the upgrade took the first install's path"
tail -n 1 "$root/etc/flowbridge/config.yaml" | grep -q '^# written by its owner$' || fail "the upgrade replaced the owner's config"
echo "upgraded; the owner's config kept"

step "purge: the config goes, the day stays"
# The state as the unit's StateDirectory= with DynamicUser= lays it out, written by the daemon.
mkdir -p -m 700 "$root/var/lib/private/flowbridge"
ln -sfn private/flowbridge "$root/var/lib/flowbridge"
"${in_root[@]}" STATE_DIRECTORY=/var/lib/flowbridge flowbridge run --config /tmp/dry-run.yaml > "$work/run.log" 2>&1 &
daemon_pid=$!
deadline=$((SECONDS + 60))
until grep -q 'connected to' "$work/run.log"; do
  kill -0 "$daemon_pid" 2>/dev/null || { cat "$work/run.log"; fail "run ended"; }
  [ $SECONDS -lt $deadline ] || { cat "$work/run.log"; fail "run did not connect within 60 s"; }
  sleep 0.2
done
kill "$daemon_pid"; wait "$daemon_pid" || fail "run did not stop cleanly on SIGTERM"; daemon_pid=""
[ -s "$root/var/lib/private/flowbridge/state.json" ] || fail "the daemon wrote no state"
# What a user adds: secrets beside the config, and the unit enabled.
install -m 600 /dev/null "$root/etc/flowbridge/mqtt-password"
install -m 600 /dev/null "$root/etc/flowbridge/widget-token"
inside systemctl enable flowbridge.service
[ -L "$root/etc/systemd/system/multi-user.target.wants/flowbridge.service" ] || fail "systemctl enable made no link"
inside dpkg -L flowbridge > "$work/files.txt"
inside sh -c 'DEBIAN_FRONTEND=noninteractive apt-get purge -y flowbridge' | tee "$work/purge.log"
inside dpkg-query -W -f='${Status}\n' flowbridge 2>/dev/null | grep -q 'not-installed' \
  || ! inside dpkg-query -W flowbridge >/dev/null 2>&1 || fail "flowbridge is still known to dpkg after the purge"
# Nothing named flowbridge may be left but the state; and nothing the package held.
left=$(cd "$root" && find . -xdev \( -path ./proc -o -path ./tmp \) -prune -o -name '*flowbridge*' -print \
  | grep -v -x -e ./var/lib/flowbridge -e ./var/lib/private/flowbridge || true)
[ -z "$left" ] || fail "the purge left: $left"
while read -r path; do
  [ -d "$root$path" ] && [ "$path" != "${path%flowbridge*}" ] && fail "the purge left $path"
  [ -d "$root$path" ] || [ ! -e "$root$path" ] || fail "the purge left $path"
done < "$work/files.txt"
[ -s "$root/var/lib/private/flowbridge/state.json" ] || fail "the purge removed the day's state"
echo "left after the purge: $(cd "$root" && find var/lib/private/flowbridge -mindepth 1 | tr '\n' ' ')and the link var/lib/flowbridge to it (the day's state, kept)"

step "reinstall, then purge with FLOWBRIDGE_PURGE_STATE=yes: the state goes too"
inside sh -c "cd /tmp && DEBIAN_FRONTEND=noninteractive apt-get install -y ./$name" > "$work/reinstall.log"
inside flowbridge check --config /etc/flowbridge/config.yaml | grep -q "state kept in /var/lib/flowbridge/state.json" \
  || fail "the reinstalled package does not find the kept state"
inside sh -c 'DEBIAN_FRONTEND=noninteractive FLOWBRIDGE_PURGE_STATE=yes apt-get purge -y flowbridge' > "$work/purge-state.log"
left=$(cd "$root" && find . -xdev \( -path ./proc -o -path ./tmp \) -prune -o -name '*flowbridge*' -print)
[ -z "$left" ] || fail "the purge with FLOWBRIDGE_PURGE_STATE=yes left: $left"
echo "nothing named flowbridge is left"

step "OK: $name installs, runs, pushes and purges in a clean Debian bookworm root"
