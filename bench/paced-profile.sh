#!/usr/bin/env bash
# Where a lone reading's CPU goes: one flowbridge (POLICY: default, or pushed for bench/bench.yaml's
# policy, every reading pushed) and the floor (mosquitto_sub) on one private broker, COUNT readings
# published one at a time at RATE a second (bench/meterpub -r). Prints, per reading, each one's
# user and system time (/proc/PID/stat), minor page faults, and flowbridge's threads one by one
# (name, time on a processor, context switches). With PROFILE=DIR, `perf record` (the cpu-clock
# event at 20 kHz) samples both meanwhile, and flowbridge's samples are summed by where the code
# lives: the kernel, a library, or a Swift module of the binary. perf's sampling slows both, so
# the times of a profiled run are not the benchmark's (bench/paced.sh); its shares are the point.
# usage: bench/paced-profile.sh FLOWBRIDGE_BINARY [POLICY] [RATE] [COUNT]   (default 100 a second, 3000)
#   needs: mosquitto, mosquitto_sub, gcc, libmosquitto-dev; perf (Debian's linux-perf) for PROFILE
set -eu
here=$(cd "$(dirname "$0")" && pwd)
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
policy=${2:-default} rate=${3:-100} count=${4:-3000}
work=$(mktemp -d /tmp/flowbridge-profile-XXXXXX)
pids=()
# shellcheck disable=SC2154 # pid: the loop's, in the trap's own text
trap 'for pid in "${pids[@]}"; do kill $pid 2>/dev/null; done; wait 2>/dev/null; rm -rf "$work"' EXIT
gcc -O2 -D_POSIX_C_SOURCE=200809L -o "$work/meterpub" "$here/meterpub.c" -lmosquitto -lm
# shellcheck source=bench/common.sh
. "$here/common.sh"
start_broker "$work" "log_type all"
pids+=("$broker_pid")
bench_config "$broker_port" "$work/state.json" "$(free_port)" "$policy" > "$work/config.yaml"
"$binary" run --config "$work/config.yaml" --dry-run --log-level warning > "$work/out" 2> "$work/err" & flowbridge=$!
pids+=("$flowbridge")
# shellcheck disable=SC2046 # the topics' options, split into words
mosquitto_sub -p "$broker_port" -q 1 $(bench_topic_options) > "$work/floor" & floor=$!
pids+=("$floor")
wait_subscribed "$work" 2

# faults_and_ticks PID: minor faults, user and system ticks (/proc/PID/stat).
faults_and_ticks() { cut -d' ' -f10,14,15 "/proc/$1/stat"; }
if [ -n "${PROFILE:-}" ]; then
  mkdir -p "$PROFILE"
  perf record -q -e cpu-clock -F 20000 -o "$PROFILE/flowbridge.data" -p $flowbridge 2> /dev/null & recorders=($!)
  perf record -q -e cpu-clock -F 20000 -o "$PROFILE/floor.data" -p $floor 2> /dev/null & recorders+=($!)
  sleep 0.5  # perf attaches
fi
threads_now $flowbridge > "$work/threads-before"
before_flowbridge=$(faults_and_ticks $flowbridge) before_floor=$(faults_and_ticks $floor)
"$work/meterpub" -r "$rate" "$broker_port" "$count" bench/meter > /dev/null
until grep -q 424242 "$work/floor"; do sleep 0.05; done
sleep 0.2  # flowbridge takes the sentinel too (nothing waits for it under the default policy)
after_flowbridge=$(faults_and_ticks $flowbridge) after_floor=$(faults_and_ticks $floor)
threads_now $flowbridge > "$work/threads-after"
[ -z "${PROFILE:-}" ] || { kill -INT "${recorders[@]}"; wait "${recorders[@]}" 2> /dev/null || true; }

ticks=$(getconf CLK_TCK)
per_reading() {  # NAME BEFORE AFTER
  echo "$2 $3" | awk -v name="$1" -v n="$count" -v t="$ticks" '{ printf "%-12s user %6.1f µs  system %6.1f µs  minor faults %.3f a reading\n", name, ($5 - $2) / t / n * 1e6, ($6 - $3) / t / n * 1e6, ($4 - $1) / n }'
}
echo "$count readings at $rate a second, flowbridge with the $policy policy"
per_reading floor "$before_floor" "$after_floor"
per_reading flowbridge "$before_flowbridge" "$after_flowbridge"
echo "flowbridge's threads, a reading:"
threads_per "$work/threads-before" "$work/threads-after" "$count"
if [ -n "${PROFILE:-}" ]; then
  echo "flowbridge's samples by where the code lives (perf report -i $PROFILE/flowbridge.data):"
  perf report -i "$PROFILE/flowbridge.data" --stdio --no-children --sort dso,sym 2> /dev/null | awk -v binary="$(basename "$binary")" '
    $1 ~ /%$/ {
      share = $1; sub(/%/, "", share); where = $2
      if ($3 == "[k]") where = "kernel"
      else if (where == binary) {
        where = "other code of the binary"
        if (match($4, /^\$s[0-9]+/)) { length_ = substr($4, 3, RLENGTH - 2) + 0; where = "Swift module " substr($4, RLENGTH + 1, length_) }
        if ($4 ~ /^\$s[sS]/) where = "Swift standard library"
        if ($4 ~ /^_?_?swift_/) where = "Swift runtime"
      }
      sum[where] += share
    }
    END { for (where in sum) printf "  %6.2f%%  %s\n", sum[where], where }' | sort -rn
fi
