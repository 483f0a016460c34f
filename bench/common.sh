# What the benchmark's scripts share (sourced, POSIX sh): a free port, a private broker, a
# process's CPU and wake-ups, and bench/bench.yaml filled in for one flowbridge.
# shellcheck shell=sh

bench_dir=$(cd "$(dirname "$0")" && pwd)

# A loopback port nobody listens on now.
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

# start_broker DIR [LINE...]: a private mosquitto on a free loopback port, its config and log in
# DIR, LINEs added to its config (log_type all: its log says each SUBACK). Returns once it runs,
# with broker_port and broker_pid set. With BENCH_LIBS (a folder of private copies of the
# libraries: bench/run.sh), it loads its libraries from there.
start_broker() {
  broker_dir=$1
  shift
  broker_port=$(free_port)
  { printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\nmax_queued_messages 0\n' "$broker_port"
    for line in "$@"; do echo "$line"; done; } > "$broker_dir/mosquitto.conf"
  env ${BENCH_LIBS:+LD_LIBRARY_PATH=$BENCH_LIBS} mosquitto -c "$broker_dir/mosquitto.conf" > "$broker_dir/mosquitto.log" 2>&1 &
  # shellcheck disable=SC2034 # for the caller
  broker_pid=$!
  until grep -q "running" "$broker_dir/mosquitto.log" 2>/dev/null; do sleep 0.05; done
}

# wait_subscribed DIR COUNT: until the broker of DIR (with log_type all) has sent COUNT SUBACKs.
wait_subscribed() {
  until [ "$(grep -c "Sending SUBACK" "$1/mosquitto.log")" -ge "$2" ]; do sleep 0.05; done
}

# wait_meters DIR PID: until the broker of DIR (with log_type subscribe: a line per filter a
# client subscribes to) has a subscription covering each meter topic bench/meterpub publishes on
# (bench/meter/solar, battery and grid: each its own filter, or bench/meter/+ or bench/meter/#).
# Fails when PID ends first, or after 60 s.
wait_meters() {
  waited=0
  until awk 'NF == 4 && $NF ~ /^bench\/meter\// {
               if ($NF == "bench/meter/#" || $NF == "bench/meter/+") all = 1; else seen[$NF] = 1 }
             END { exit !(all || (seen["bench/meter/solar"] && seen["bench/meter/battery"] && seen["bench/meter/grid"])) }' \
          "$1/mosquitto.log"; do
    kill -0 "$2" 2>/dev/null || { echo "the consumer ended before subscribing" >&2; return 1; }
    [ "$waited" -lt 1200 ] || { echo "the consumer did not subscribe to the meters within 60 s" >&2; return 1; }
    sleep 0.05; waited=$((waited + 1))
  done
}

# A process's seconds on a processor (/proc/PID/stat's user and system time, in ticks of 10 ms:
# the threads that ended are counted too).
cpu_seconds() { awk -v t="$(getconf CLK_TCK)" '{ print ($14 + $15) / t }' "/proc/$1/stat"; }

# threads_now PID: a line per thread of the process, "TID NS SWITCHES NAME": its nanoseconds on a
# processor (/proc/PID/task/TID/schedstat: finer than ticks), its context switches, voluntary
# and not (its status), and its name without spaces (its comm).
threads_now() {
  for task in /proc/"$1"/task/*; do
    ns=$(cut -d' ' -f1 "$task/schedstat" 2>/dev/null) || continue  # ended meanwhile
    echo "${task##*/} $ns $(awk '/_ctxt_switches:/ { n += $2 } END { print n + 0 }' "$task/status" 2>/dev/null) $(tr -d ' ' < "$task/comm" 2>/dev/null)"
  done
}

# threads_per BEFORE AFTER COUNT: each thread's time on a processor (µs) and context switches
# between two of threads_now's files, divided by COUNT (readings, seconds), and their sum over
# the threads; a thread in only one of the files (started or ended between them) is left out.
threads_per() {
  join "$1" "$2" | awk -v n="$3" '
    { printf "  %-20s %7.1f µs  %5.3f switches\n", $4, ($5 - $2) / n / 1000, ($6 - $3) / n; ns += $5 - $2; switches += $6 - $3 }
    END { printf "  %-20s %7.1f µs  %5.3f switches\n", "all threads", ns / n / 1000, switches / n }'
}

# threads_since FILE PID: "NS SWITCHES" that the process's threads have added since FILE (what
# threads_now said then), thread by thread: a thread that ended in between (a dispatch worker
# retires after a few idle seconds) must not take what it had used before off the sum.
threads_since() {
  threads_now "$2" | awk 'NR == FNR { ns[$1] = $2; sw[$1] = $3; next } { n += $2 - ns[$1]; s += $3 - sw[$1] }
    END { printf "%d %d", n, s }' "$1" -
}

# The topics bench/bench.yaml's sources read, as mosquitto_sub's options (-t TOPIC ...): the floor
# subscribes to these, as flowbridge does, when both share a broker. mosquitto serves a reading's
# exact-topic subscribers before a `#` filter's, whenever they subscribed; subscribers of the same
# topics are served in the order they subscribed.
bench_topic_options() {
  sed -n 's/.*{topic: \([^,}]*\).*/-t \1/p' "$bench_dir/bench.yaml" | tr '\n' ' '
}

# bench_config PORT STATE WINDOW [POLICY]: bench/bench.yaml for the broker's PORT, with the state
# file STATE and the window listening on loopback port WINDOW, on standard output. POLICY: pushed
# (unless given: bench.yaml's policy, every reading pushed) or default (its policy line left out:
# the defaults, a burst settled for 2 s, a push at most every 10 s).
bench_config() {
  local policy_line
  case ${4:-pushed} in
    pushed) policy_line= ;;
    default) policy_line='/^    policy:/d' ;;
    *) echo "POLICY is pushed or default, not '$4'" >&2; return 2 ;;
  esac
  sed -e "s/@PORT@/$1/" -e "s|@STATE@|$2|" -e "s/@WINDOW@/$3/" ${policy_line:+-e "$policy_line"} "$bench_dir/bench.yaml"
}
