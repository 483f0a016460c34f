#!/usr/bin/env bash
# The demo that `make run` starts: a private mosquitto on a free loopback port, the simulated home
# publishing its day N times faster (`flowbridge simulate`), and `flowbridge run --dry-run --summary`
# on a copy of Config/demo.yaml pointed at that port, which prints every push as it goes out (its
# NDJSON line, and under it the widget in one line). With DEMO_URL and DEMO_TOKEN set, the pushes
# go to that widget as well (a `push:` with `token_env: DEMO_TOKEN` in the copy, and no dry run).
#
# Everything lives in a folder of its own under $TMPDIR (the config, the state, the logs), so the
# demo never touches a real daemon's state. Ctrl-C, SIGTERM or the end of --duration stops the
# daemon, the simulator and the broker, in that order, each by its PID (SIGTERM, SIGKILL after
# 5 s), and removes the folder.
#
# usage: scripts/demo.sh [--duration SECONDS] [--speed N] FLOWBRIDGE
set -euo pipefail

usage() { echo "usage: $0 [--duration SECONDS] [--speed N] FLOWBRIDGE" >&2; exit 64; }
duration=""
speed=720
bin=""
while [ $# -gt 0 ]; do
  case $1 in
    --duration) [ $# -ge 2 ] || usage; duration=$2; shift 2 ;;
    --speed) [ $# -ge 2 ] || usage; speed=$2; shift 2 ;;
    -*) usage ;;
    *) [ -z "$bin" ] || usage; bin=$1; shift ;;
  esac
done
[ -n "$bin" ] || usage
case $duration in ''|*[!0-9]*) [ -z "$duration" ] || { echo "error: --duration takes whole seconds, not '$duration'" >&2; exit 64; } ;; esac
case $speed in ''|*[!0-9]*|0) echo "error: --speed takes a whole number from 1 to 3600, not '$speed'" >&2; exit 64 ;; esac
[ -x "$bin" ] || { echo "error: $bin is not an executable flowbridge (make run builds it)" >&2; exit 66; }
root=$(cd "$(dirname "$0")/.." && pwd)
mosquitto=$(command -v mosquitto || ls /usr/sbin/mosquitto /usr/local/sbin/mosquitto 2>/dev/null | head -n 1 || true)
[ -n "$mosquitto" ] || { echo "error: mosquitto is not installed (make run installs it: apt-get install mosquitto)" >&2; exit 69; }
if [ -n "${DEMO_URL:-}" ] && [ -z "${DEMO_TOKEN:-}" ]; then
  echo "error: DEMO_URL is set but DEMO_TOKEN is not: the widget's token is needed too" >&2
  exit 64
fi

work=$(mktemp -d "${TMPDIR:-/tmp}/flowbridge-demo.XXXXXX")
broker_pid="" simulate_pid="" run_pid=""

# True while the process runs (a child that has exited but is not yet reaped does not count).
running() {
  local state
  [ -n "$1" ] && read -r _ _ state _ 2>/dev/null < "/proc/$1/stat" && [ "$state" != Z ]
}

# Waits up to TENTHS tenths of a second for PATTERN in FILE, while PID runs; true once it is there.
wait_for() {
  local pattern=$1 file=$2 pid=$3 tenths=$4
  for _ in $(seq "$tenths"); do
    grep -q "$pattern" "$file" && return 0
    running "$pid" || break
    sleep 0.1
  done
  grep -q "$pattern" "$file"
}

# Stops one child: SIGTERM, then SIGKILL when it is still there after 5 s; reaps it.
stop() {
  local name=$1 pid=$2 tenths=0
  [ -n "$pid" ] || return 0
  kill -TERM "$pid" 2>/dev/null || true
  while running "$pid"; do
    if [ $tenths -ge 50 ]; then
      echo "demo: $name (pid $pid) did not stop within 5 s: killed" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
    sleep 0.1
    tenths=$((tenths + 1))
  done
  wait "$pid" 2>/dev/null || true
}

cleaned=""
cleanup() {
  [ -z "$cleaned" ] || return 0
  cleaned=1
  # The daemon first (its last push goes out), then what feeds it.
  stop "flowbridge run" "$run_pid"
  stop "flowbridge simulate" "$simulate_pid"
  stop mosquitto "$broker_pid"
  rm -rf "$work"
  [ -z "$broker_pid" ] || echo "demo: stopped; removed $work" >&2
}
finish() {
  cleanup
  exit "$1"
}
trap 'echo >&2; echo "demo: stopping" >&2; finish 0' INT TERM HUP
trap cleanup EXIT

# Each child in a session of its own: a Ctrl-C in the terminal reaches this script alone, which
# stops the children in order, rather than all of them at once. (setsid execs the command: $! is
# the child's own PID.)
detached=()
if command -v setsid >/dev/null 2>&1; then detached=(setsid); fi

# The broker, on a free port: a port someone else took meanwhile makes mosquitto exit; then another.
for _ in 1 2 3 4 5 6 7 8; do
  port=$((20000 + RANDOM % 40000))
  printf '%s\n' "listener $port 127.0.0.1" "allow_anonymous true" "persistence false" "log_dest stderr" \
    "log_type error" "log_type warning" "log_type notice" "log_type information" "user $(id -un)" > "$work/mosquitto.conf"
  "${detached[@]}" "$mosquitto" -c "$work/mosquitto.conf" 2> "$work/mosquitto.log" &
  broker_pid=$!
  if wait_for " running" "$work/mosquitto.log" "$broker_pid" 50 && running "$broker_pid"; then break; fi
  stop mosquitto "$broker_pid"
  broker_pid=""
done
if [ -z "$broker_pid" ]; then
  echo "error: mosquitto did not start on a loopback port; its last words:" >&2
  cat "$work/mosquitto.log" >&2
  exit 69
fi

# The demo config, pointed at that broker, with its state in the demo's folder.
config=$work/demo.yaml
sed -e "s|^  port: 1883\$|  port: $port|" -e "s|^state_file: .*\$|state_file: $work/state.json|" "$root/Config/demo.yaml" > "$config"
if ! grep -q "^  port: $port\$" "$config" || ! grep -q "^state_file: $work/state.json\$" "$config"; then
  echo "error: Config/demo.yaml has no '  port: 1883' or 'state_file:' line to point at the demo's broker and folder" >&2
  exit 78
fi
# The window (status page, /metrics) on a port the system picks; the daemon's log says which.
printf '\n# The demo'"'"'s window: the daemon says its address.\nhttp: {listen: 127.0.0.1:0}\n' >> "$config"
mode=(--dry-run)
if [ -n "${DEMO_URL:-}" ]; then
  # A YAML double-quoted string: backslashes and quotes escaped. The token stays in the environment.
  url=${DEMO_URL//\\/\\\\}
  url=${url//\"/\\\"}
  PUSH_LINE="    push: {url: \"$url\", token_env: DEMO_TOKEN}" awk '{ print } /^  power:$/ { print ENVIRON["PUSH_LINE"] }' "$config" > "$config.new"
  printf '\n# The demo prints what it pushes.\noutput: {stdout: true}\n' >> "$config.new"
  mv "$config.new" "$config"
  mode=()
fi
if ! "$bin" check --config "$config" > "$work/check.txt" 2>&1; then
  echo "error: the demo config does not pass flowbridge check:" >&2
  cat "$work/check.txt" >&2
  exit 78
fi
if [ -n "${DEMO_URL:-}" ] && ! grep -q "^  push to " "$work/check.txt"; then
  echo "error: the demo config has no widget 'power' to push to DEMO_URL" >&2
  exit 78
fi

# One clock for the home and the daemon: from a moment just ahead (both are up by then), each
# runs $speed times as fast, so the daemon counts and closes its days in the home's hours.
origin=$(( $(date +%s) + 3 ))
"${detached[@]}" "$bin" simulate --broker "127.0.0.1:$port" --speed "$speed" --origin "$origin" --log-level warning > "$work/simulate.out" &
simulate_pid=$!
if ! wait_for "^simulating" "$work/simulate.out" "$simulate_pid" 100; then
  echo "error: flowbridge simulate did not start publishing (see above)" >&2
  exit 69
fi
# "simulating 2026-06-21 from 14:05 at 720x (seed 1), publishing to …": the day, and where it starts.
day=$(sed -n 's/^simulating \([^ ]*\) from \([^ ]*\) at.*/\1 from \2/p' "$work/simulate.out")

if [ -n "${DEMO_URL:-}" ]; then
  where="sent to the widget at DEMO_URL (token from DEMO_TOKEN) and printed below"
  daemon="flowbridge run --summary"
else
  where="printed below, delivered nowhere (DEMO_URL and DEMO_TOKEN send them to a widget)"
  daemon="flowbridge run --dry-run --summary"
fi
clock=()
[ "$speed" = 1 ] || clock=(--speed "$speed" --origin "$origin")
"${detached[@]}" "$bin" run --config "$config" "${mode[@]}" --summary "${clock[@]}" 2> >(tee "$work/run.log" >&2) &
run_pid=$!
window="(not yet listening)"
if wait_for "window at http" "$work/run.log" "$run_pid" 100; then
  window=$(sed -n 's|.*window at \(http://[^ ]*\).*|\1|p' "$work/run.log" | head -n 1)
fi
cat >&2 <<EOF
flowbridge demo
  broker   mosquitto (pid $broker_pid) on 127.0.0.1:$port, private to the demo
  home     flowbridge simulate (pid $simulate_pid): an OpenDTU, a Shelly Pro 3EM grid meter and a battery
           behind evcc, on $day, ${speed}x: a simulated hour every $((3600 / speed)) s
  daemon   $daemon (pid $run_pid) on a copy of Config/demo.yaml pointed at that broker,
           its state in $work, on the home's clock
  pushes   $where:
           each push's NDJSON line (the first the whole document, then merge patches) and under it
           the widget in words. The times are the simulated home's: the daemon runs on its clock.
  window   $window  (the status page; metrics and api/v1/state beside it)
Ctrl-C stops it all.
EOF
started=$SECONDS
while running "$run_pid"; do
  if [ -n "$duration" ] && [ $((SECONDS - started)) -ge "$duration" ]; then
    echo "demo: $duration s passed: stopping" >&2
    finish 0
  fi
  if ! running "$simulate_pid" || ! running "$broker_pid"; then
    echo "error: $(running "$simulate_pid" && echo mosquitto || echo "flowbridge simulate") stopped by itself" >&2
    finish 1
  fi
  sleep 1
done
status=0
wait "$run_pid" || status=$?
run_pid=""
echo "error: flowbridge run stopped by itself with status $status (see above)" >&2
finish 1
