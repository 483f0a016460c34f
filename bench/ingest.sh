#!/usr/bin/env bash
# One consumer through the ingest benchmark: a private mosquitto on a free loopback port, the
# consumer subscribed to bench/meter/#, then bench/meterpub publishing N readings at QoS 1 and the
# sentinel {"power": 424242}. Prints one line:
#   NAME: <µs> us CPU/msg, publish <s> s, lag after publish <ms> ms, peak RSS <kB> KB, idle CPU <s> s
# CPU per message is the consumer's utime+stime (from /proc) over the run divided by N+1: the figure
# that stays stable on a shared machine. Lag runs from the publisher's last acknowledgement until
# the consumer has processed the sentinel: it printed a line holding 424242, or PROBE (a command with
# {PORT}/{PORT2}) succeeds, for consumers that print nothing. Memory is the consumer's
# /proc/PID/smaps_rollup once the sentinel is through: RSS (resident), PSS (shared pages divided
# among the processes that map them) and USS (private pages: what ending it would free); with
# SMAPS=FILE, its whole /proc/PID/smaps is copied there too (bench/smaps.py reads it). With IDLE=S,
# the consumer's CPU over S seconds of silence (connected, no messages) is measured first.
# usage: ingest.sh NAME N 'COMMAND with {PORT} and {PORT2}'   (needs: $BENCH_BIN/meterpub, mosquitto)
#   optional environment: PROBE, IDLE, SMAPS, BENCH_LIBS
set -eu
name=$1 n=$2 command=$3
bin=${BENCH_BIN:?BENCH_BIN: the folder holding meterpub}
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
dir=$(mktemp -d /tmp/flowbridge-bench-XXXXXX)
# With BENCH_LIBS (a folder of private copies of the libraries: bench/run.sh), the broker and the
# consumer load their libraries from there.
libraries=${BENCH_LIBS:+LD_LIBRARY_PATH=$BENCH_LIBS}
start_broker "$dir" "log_type information" "log_type subscribe"
port=$broker_port; port2=$(free_port)
consumer=
trap 'kill $broker_pid 2>/dev/null; [ -n "$consumer" ] && kill $consumer 2>/dev/null; wait 2>/dev/null; rm -rf "$dir"' EXIT
expand() { local text=${1//\{PORT\}/$port}; echo "${text//\{PORT2\}/$port2}"; }
env $libraries bash -c "exec $(expand "$command")" > "$dir/out" 2> "$dir/err" & consumer=$!
# Subscribed to every meter's topic: the broker has taken the consumer's subscriptions.
wait_meters "$dir" "$consumer" || { tail -3 "$dir/err" >&2; exit 1; }
# A moment for what a consumer does once subscribed (flowbridge gives back its start's pages)
# before its CPU is first read.
sleep 0.5
cpu() { cpu_seconds "$consumer"; }
idle=-
if [ -n "${IDLE:-}" ]; then
  before=$(cpu); sleep "$IDLE"; idle=$(awk -v a="$before" -v b="$(cpu)" 'BEGIN { printf "%.2f", b - a }')
fi
before=$(cpu)
if [ -n "${PROBE:-}" ]; then
  result=$("$bin/meterpub" "$port" "$n" bench/meter)
  published=$(date +%s.%N)
  probe=$(expand "$PROBE")
  until bash -c "$probe" > /dev/null 2>&1; do
    sleep 0.005
    awk -v a="$published" -v b="$(date +%s.%N)" 'BEGIN { exit !(b - a > 100) }' && { echo "$name: no sentinel within 100 s"; exit 1; }
  done
  lag=$(awk -v a="$published" -v b="$(date +%s.%N)" 'BEGIN { printf "%.0f", (b - a) * 1000 }')
  result="${result% lag *} lag $lag"
else
  result=$("$bin/meterpub" "$port" "$n" bench/meter "$dir/out") || { echo "$name: failed"; tail -3 "$dir/err"; exit 1; }
fi
after=$(cpu)
memory=$(awk '/^Rss:/ { r = $2 } /^Pss:/ { p = $2 } /^Private_(Clean|Dirty):/ { u += $2 }
  END { printf "RSS %d KB, PSS %d KB, USS %d KB", r, p, u }' "/proc/$consumer/smaps_rollup")
[ -z "${SMAPS:-}" ] || cp "/proc/$consumer/smaps" "$SMAPS"
set -- $result
awk -v name="$name" -v a="$before" -v b="$after" -v n="$n" -v publish="$2" -v lag="$4" -v memory="$memory" -v idle="$idle" 'BEGIN {
  printf "%s: %.2f us CPU/msg, publish %.2f s, lag after publish %d ms, %s, idle CPU %s s\n", name, (b - a) * 1e6 / (n + 1), publish, lag, memory, idle
}'
