#!/bin/sh
# What the demo home costs an SD card: the daemon's own write_bytes (/proc/PID/io) and its
# fsync/fdatasync calls (strace -f -c) over SECONDS of Config/demo.yaml against the simulator at 1x
# (real time), state and day book together, scaled to a day. A slot closes every 15 minutes, so
# give it more than 900 s to see the book's share.
#
# usage: bench/sd-writes.sh FLOWBRIDGE [SECONDS]
set -eu
flowbridge=$1
seconds=${2:-900}
work=$(mktemp -d)
trap 'kill $sim $daemon $broker 2>/dev/null || true; wait 2>/dev/null || true; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" > "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" > "$work/mosquitto.log" 2>&1 & broker=$!
sleep 1
sed -e "s/^  port: 1883/  port: $port/" -e "s|^state_file: .*|state_file: $work/state.json|" Config/demo.yaml > "$work/demo.yaml"
printf 'output: {stdout: false}\n' >> "$work/demo.yaml" 2>/dev/null || true
"$flowbridge" simulate --broker "127.0.0.1:$port" --speed 1 > "$work/simulate.log" 2>&1 & sim=$!
strace -f -qq -c -e trace=fsync,fdatasync -o "$work/strace.txt" "$flowbridge" run --config "$work/demo.yaml" > /dev/null 2> "$work/run.log" & daemon=$!
sleep 2
# The daemon is strace's child, whatever its binary is called (strace's own write_bytes are not its).
pid=$(pgrep -P "$daemon" | head -1)
[ -n "$pid" ] || { echo "sd-writes: flowbridge did not start under strace; see $work/run.log" >&2; cat "$work/run.log" >&2; exit 1; }
start_bytes=$(awk '/^write_bytes/ {print $2}' "/proc/$pid/io")
sleep "$seconds"
end_bytes=$(awk '/^write_bytes/ {print $2}' "/proc/$pid/io")
kill -TERM "$pid"; wait "$daemon" || true
syncs=$(awk '$NF == "fsync" || $NF == "fdatasync" {n += $4} END {print n + 0}' "$work/strace.txt")
bytes=$((end_bytes - start_bytes))
book=$(ls "$work"/*.sqlite 2>/dev/null | head -1 || true)
echo "over ${seconds}s at 1x: write_bytes $bytes, fsync+fdatasync $syncs (the stop's included)"
awk -v b="$bytes" -v s="$syncs" -v t="$seconds" 'BEGIN { printf "a day: %.1f MB written, %d syncs\n", b * 86400 / t / 1e6, s * 86400 / t }'
[ -n "$book" ] && "$flowbridge" history --book "$book" --period today --by slot --format csv | tail -n +2 | wc -l | xargs echo "slots in the book:"
