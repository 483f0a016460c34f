#!/usr/bin/env bash
# The functions a lone reading runs, in the order `make release` links them first, side by side
# (bench/hot-functions.txt, lld's --symbol-ordering-file). A reading at a home's pace (a few a
# second) finds the caches cold: left where the compiler put them, the few hundred functions it
# runs are spread over some 170 pages of a 36 MB executable (perf's samples of a paced run), where
# mosquitto_sub's reading touches some 30; each page is a TLB miss and a few cold cache lines of
# its own. Linked together they share pages and lines (bench/NOTES.md, "A lone reading's code, side
# by side").
#
# The functions are those of BINARY's own code (the daemon's modules, Swift's static standard
# library and runtime) that callgrind counts at least once every two readings in bench/callgrind.sh's
# paced runs of 2,000 readings, every reading pushed and with the default policy; the most called
# first. C++ functions of the runtime are left out (callgrind gives their names demangled, which the
# linker does not know); a reading calls few of them. A name the build no longer has is passed over
# by the linker: the list ages without breaking the build, and is made again after changes to the
# way of a reading.
# usage: bench/hot-functions.sh BINARY > bench/hot-functions.txt   (a release binary, as make release
#   builds it; needs what bench/callgrind.sh needs, and python3)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
binary=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
work=$(mktemp -d /tmp/flowbridge-hot-XXXXXX)
trap 'rm -rf "$work"' EXIT
readings=2000
for policy in pushed default; do
  PROFILE_OUT="$work/$policy.out" "$here/callgrind.sh" "$binary" "$readings" 100 "$policy" >&2
done
python3 - "$binary" "$readings" "$work/pushed.out" "$work/default.out" <<'PY'
import collections, re, sys

binary, readings = sys.argv[1], int(sys.argv[2])
calls = collections.Counter()
for path in sys.argv[3:]:
    # callgrind's format: names given once as "(id) name", then "(id)"; a call is "cob=" (the
    # callee's object, the caller's when absent), "cfn=" and "calls=COUNT ...".
    names = {"ob": {}, "fn": {}}
    def name(space, value):
        m = re.match(r"\((\d+)\)(?: (.*))?$", value)
        if not m:
            return value
        if m.group(2) is not None:
            names[space][m.group(1)] = m.group(2)
        return names[space].get(m.group(1), "")
    ob = cob = cfn = None
    per_run = collections.Counter()
    for line in open(path, errors="replace"):
        key, _, value = line.rstrip("\n").partition("=")
        if key == "ob":
            ob = name("ob", value)
        elif key == "cob":
            cob = name("ob", value)
        elif key in ("fn", "cfn"):
            function = name("fn", value)
            if key == "cfn":
                cfn = function
        elif key == "calls":
            if (cob or ob) == binary and cfn:
                per_run[cfn] += int(value.split()[0])
            cob = cfn = None
    for function, count in per_run.items():
        if count * 2 >= readings:
            calls[re.sub(r"'\d+$", "", function)] += count

print("# The functions a lone reading runs, linked first and side by side by make release;")
print("# made by bench/hot-functions.sh (the most called first).")
for function, _ in sorted(calls.items(), key=lambda item: (-item[1], item[0])):
    if re.fullmatch(r"[A-Za-z0-9_$.]+", function):
        print(function)
PY
