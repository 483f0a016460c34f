# The daemon under valgrind at the ingest benchmark's readings, for bench/callgrind.sh and
# bench/reading-lines.sh (sourced, once they set binary, rate and policy). The release binary runs
# bench/bench.yaml as a dry run against a private mosquitto that queues without limit
# (`max_queued_messages 0`: its default of 1,000 drops messages under a consumer this slow), while
# bench/meterpub.c publishes the readings and the sentinel at QoS 1 (RATE a second, or as fast as
# the broker takes them); the daemon is stopped once the sentinel is in its output. The runs go in
# $dir, a folder of their own; at the exit the broker and the daemon are stopped, the caller's
# `before_cleanup` runs (a command, if it sets one: callgrind.sh keeps its profiles), and $dir goes.
case $policy in pushed|default) ;; *) echo "POLICY is pushed or default, not '$policy'" >&2; exit 2;; esac
# shellcheck source=bench/common.sh
. "$(dirname "$0")/common.sh"
dir=$(mktemp -d /tmp/flowbridge-valgrind-XXXXXX)
broker= consumer=
trap '[ -n "$consumer" ] && kill "$consumer" 2>/dev/null; [ -n "$broker" ] && kill "$broker" 2>/dev/null; wait 2>/dev/null; ${before_cleanup:-}; rm -rf "$dir"' EXIT
cc -O2 -o "$dir/meterpub" "$bench_dir/meterpub.c" -lmosquitto -lm
# Preloaded into the daemon, two stand-ins around it (its own code is the release binary as built):
# - Valgrind 3.19 writes into the signal mask handed to sigsuspend, and libdispatch's main thread
#   (the daemon's top level awaits) hands it one in read-only memory: valgrind dies of a SIGSEGV at
#   the start. This sigsuspend passes a copy on the stack.
# - The release of the pages read only to start (StartupPages.release, at the first connection, on
#   a thread of its own beside the messages) reads /proc/self/smaps, which under valgrind costs from
#   20 to 350 million instructions by the mappings valgrind has made: more than the messages. Its
#   reading of /proc/self/maps (the one made with O_CLOEXEC) is refused, and the release does nothing,
#   as where /proc is not mounted.
cat > "$dir/preload.c" <<'C'
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>
int sigsuspend(const sigset_t *mask) { sigset_t copy = *mask; return syscall(SYS_rt_sigsuspend, &copy, 8); }
int open(const char *path, int flags, ...) {
    va_list arguments;
    va_start(arguments, flags);
    mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(arguments, mode_t) : 0;
    va_end(arguments);
    if ((flags & O_CLOEXEC) && strcmp(path, "/proc/self/maps") == 0) { errno = ENOENT; return -1; }
    return syscall(SYS_openat, AT_FDCWD, path, flags, mode);
}
C
cc -O2 -shared -fPIC -o "$dir/preload.so" "$dir/preload.c"

# Runs the daemon under valgrind (the tool and its options: the arguments after the first) for a
# run of $1 readings, in $dir/run-$1 (its output in out, its log in err; what the tool writes, where
# its options say); the number of lines it printed (its pushes) in $dir/pushes-$1. Nothing printed:
# a command substitution's subshell would keep the broker and the daemon from the trap above.
daemon_under_valgrind() {
  local readings=$1 run=$dir/run-$1
  shift
  mkdir "$run"
  start_broker "$run" "log_type information" "log_type subscribe"
  broker=$broker_pid
  # Without the window (bench.yaml's http line): the figure stays the ingest's, comparable across
  # releases; the window's cost is make bench's, scraped every 15 s.
  bench_config "$broker_port" "$run/state.json" 0 "$policy" | sed '/^http:/d' > "$run/config.yaml"
  LD_PRELOAD="$dir/preload.so" valgrind "$@" \
    "$binary" run --config "$run/config.yaml" --dry-run --log-level warning > "$run/out" 2> "$run/err" & consumer=$!
  # Subscribed to every meter (valgrind starts the daemon slowly).
  wait_meters "$run" "$consumer" || { tail -5 "$run/err" >&2; exit 1; }
  timeout 1200 "$dir/meterpub" ${rate:+-r "$rate"} "$broker_port" "$readings" bench/meter > /dev/null
  # The sentinel ({"power": 424242}) in what the daemon printed; 42424 since the default policy
  # rounds it to 424240 W, and pushes it once the burst has settled.
  local waited=0
  until grep -q 42424 "$run/out"; do
    [ $waited -lt 12000 ] || { echo "no sentinel within 1200 s" >&2; exit 1; }
    sleep 0.1; waited=$((waited + 1))
  done
  kill -TERM "$consumer"
  wait "$consumer" || true
  consumer=
  kill "$broker"
  wait "$broker" 2>/dev/null || true
  broker=
  wc -l < "$run/out" > "$dir/pushes-$readings"
}

