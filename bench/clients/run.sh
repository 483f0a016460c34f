#!/usr/bin/env bash
# What an HTTP client library from Debian costs flowbridge in memory, measured in tiny C programs
# (bench/clients/*.c): each links libmosquitto as flowbridge does, initializes one library and sends
# a PUT and a PATCH with headers over one kept-alive connection to server.py on loopback, over HTTP
# and over HTTPS (a custom CA, verification on). Prints each probe's PSS, RSS and USS less those of
# none.c (libmosquitto alone), the median of ROUNDS runs, every library loaded from a private copy
# as bench/run.sh does: the cost on a machine where no other process maps the library.
# Not part of `make bench`. Needs, besides the build's packages: libneon27-dev libevent-dev
# libserf-dev libcurl3-gnutls.
# usage: bench/clients/run.sh [ROUNDS]
set -eu
here=$(cd "$(dirname "$0")" && pwd)
rounds=${1:-7}
work=$(mktemp -d /tmp/flowbridge-clients-XXXXXX)
servers=()
trap 'for pid in "${servers[@]}"; do kill $pid 2>/dev/null; done; rm -rf "$work"' EXIT
libdir=$(dirname "$(/sbin/ldconfig -p | awk '$1 == "libcurl.so.4" { print $NF; exit }')")
cc() { gcc -O2 -I/usr/include/apr-1.0 -I/usr/include/serf-1 -o "$work/$1" "$here/$2" -lmosquitto "${@:3}"; }
cc none none.c
cc curl-openssl curl.c -lcurl -lssl
cc curl-gnutls curl.c "$libdir/libcurl-gnutls.so.4" -lssl
cc neon neon.c -lneon
cc event event.c -levent_core -levent_extra -levent_openssl -lssl -lcrypto
cc serf serf.c -lserf-1 -lapr-1
# Private copies of every library the probes load, glibc's aside, synced (an unwritten page counts as dirty).
mkdir "$work/lib"
for probe in none curl-openssl curl-gnutls neon event serf; do ldd "$work/$probe"; done \
  | awk '$2 == "=>" && $3 ~ /^\// { print $3 }' | sort -u \
  | grep -vE '/(libc|libm|libmvec|libresolv|libpthread|libdl|librt|libutil|ld-linux[^/]*)\.so' \
  | while read -r library; do cp -L "$library" "$work/lib/"; done
sync "$work/lib"/*
openssl req -x509 -newkey rsa:2048 -nodes -days 1 -subj /CN=localhost -addext subjectAltName=DNS:localhost \
  -keyout "$work/key.pem" -out "$work/cert.pem" 2> /dev/null
free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
start_server() {  # PORT [CERT KEY]
  python3 "$here/server.py" "$@" > "$work/server-$1.log" 2>&1 & servers+=($!)
  until grep -q listening "$work/server-$1.log"; do sleep 0.05; done
}
http=$(free_port); start_server "$http"
https=$(free_port); start_server "$https" "$work/cert.pem" "$work/key.pem"
measure() {  # NAME COMMAND...: "RSS PSS USS" in kB, the median by PSS of ROUNDS runs
  for _ in $(seq "$rounds"); do
    env LD_LIBRARY_PATH="$work/lib" GNUTLS_NO_IMPLICIT_INIT=1 "${@:2}" | awk '{ print $2, $4, $6 }'
  done | sort -n -k2 | sed -n "$(( (rounds + 1) / 2 ))p"
}
read -r base_rss base_pss base_uss < <(measure none "$work/none")
echo "each probe less libmosquitto alone (PSS $base_pss kB), medians of $rounds runs, kB:"
printf '  %-36s %8s %8s %8s\n' probe PSS RSS USS
row() {  # TITLE COMMAND...
  read -r rss pss uss < <(measure "$@")
  printf '  %-36s %8d %8d %8d\n' "$1" $((pss - base_pss)) $((rss - base_rss)) $((uss - base_uss))
}
for scheme in http https; do
  port=${!scheme} ca=; [ "$scheme" = https ] && ca=$work/cert.pem
  url=$scheme://localhost:$port/widgets/probe
  row "libcurl4 (OpenSSL), $scheme" "$work/curl-openssl" "$url" $ca
  row "libcurl4, flowbridge's init, $scheme" env FLOWBRIDGE_OPENSSL_INIT=1 "$work/curl-openssl" "$url" $ca
  row "libcurl3-gnutls, $scheme" "$work/curl-gnutls" "$url" $ca
  row "libneon27 (OpenSSL), $scheme" "$work/neon" localhost "$port" $ca
  row "libevent 2.1 + OpenSSL, $scheme" "$work/event" localhost "$port" $ca
done
row "libserf-1, loaded and initialized" "$work/serf"
