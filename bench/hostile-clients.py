#!/usr/bin/env python3
"""Hostile clients of flowbridge's window, all at once, for SECONDS (bench/hostile.sh):

  idle         1,000 connections from 127.0.0.1 that never send a byte; every 5 s the ones the
               listener closed are opened again
  slow         4 clients from 127.0.0.2 sending a request's headers a byte a second, each starting
               again once cut
  big          a 100 MB request every 2 s from 127.0.0.3, as a body (Content-Length) and as one
               header, in turn
  paths        `..` paths and odd methods from 127.0.0.4, 5 requests a second
  credentials  from ADDRESS (this machine's address beyond loopback): no credential, a wrong bearer
               token, a wrong Basic password, 5 requests a second (skipped without ADDRESS)
  scraper      a well-behaved GET /metrics every 5 s, as Prometheus on another machine would (from
               ADDRESS with the token in TOKEN_FILE; without ADDRESS from 127.0.0.5): answered?

Each kind comes from an address of its own (all of 127.0.0.0/8 is loopback), so that the listener's
limit per address (32) does not let the idle ones refuse the others before they are read. Each
prints one line at the end: what it did and how it was answered (an HTTP status; `closed`: the
connection ended without an answer; `refused`; `timeout`).

usage: hostile-clients.py PORT SECONDS [ADDRESS TOKEN_FILE]
"""
import collections
import itertools
import resource
import select
import socket
import statistics
import sys
import threading
import time

PORT = int(sys.argv[1])
DEADLINE = time.monotonic() + float(sys.argv[2])
ADDRESS = sys.argv[3] if len(sys.argv) > 4 else None
TOKEN = open(sys.argv[4]).read().strip() if ADDRESS else None
results = {}


def running():
    return time.monotonic() < DEADLINE


def pause(seconds):
    time.sleep(max(0.0, min(seconds, DEADLINE - time.monotonic())))


def connect(source, timeout):
    """A connection to the window from `source`: a loopback address, or ADDRESS (to ADDRESS)."""
    target = ADDRESS if source == ADDRESS else "127.0.0.1"
    return socket.create_connection((target, PORT), timeout=timeout, source_address=(source, 0))


def outcome(source, raw, timeout=5.0):
    """Sends a whole request on a connection of its own; the answer's status, or what went wrong."""
    try:
        with connect(source, timeout) as connection:
            connection.sendall(raw)
            answer = b""
            while b"\r\n" not in answer:
                chunk = connection.recv(4096)
                if not chunk:
                    break
                answer += chunk
    except ConnectionRefusedError:
        return "refused"
    except socket.timeout:
        return "timeout"
    except OSError:
        return "closed"
    line = answer.split(b"\r\n", 1)[0].split()
    return line[1].decode() if len(line) > 1 and answer.startswith(b"HTTP/") else "closed"


def tally(counter):
    return ", ".join(f"{key} x{count}" for key, count in sorted(counter.items())) or "none"


def idle():
    # 1,000 sockets and the rest: more than a default limit of 1,024 descriptors.
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (max(soft, min(hard, 4096)), hard))
    held, opened, failed, closed, kept = [], 0, collections.Counter(), 0, []
    poller = select.poll()
    while running():
        while len(held) < 1000 and running():
            try:
                connection = connect("127.0.0.1", 2)
                held.append(connection)
                poller.register(connection, select.POLLIN)
                opened += 1
            except OSError as error:
                failed[type(error).__name__] += 1
                break
        pause(5)
        # Readable without a request sent: the listener closed it (the end of the stream or a reset).
        ended = {fd for fd, _ in poller.poll(0)}
        for connection in [c for c in held if c.fileno() in ended]:
            poller.unregister(connection)
            connection.close()
            held.remove(connection)
            closed += 1
        kept.append(len(held))
    for connection in held:
        connection.close()
    results["idle"] = (f"{opened} connections opened, {closed} closed by the listener; still open 5 s after each "
                       f"opening: {min(kept, default=0)} to {max(kept, default=0)}"
                       + (f"; could not connect: {tally(failed)}" if failed else ""))


def slow():
    cuts, ended = [], collections.Counter()
    head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Slow: " + b"a" * 100000
    while running():
        started = time.monotonic()
        try:
            connection = connect("127.0.0.2", 2)
        except OSError as error:
            ended[type(error).__name__] += 1
            pause(1)
            continue
        with connection:
            for sent, byte in enumerate(head, 1):
                if not running():
                    break
                try:
                    connection.send(bytes([byte]))
                    connection.settimeout(1)
                    if connection.recv(1024) == b"":
                        cuts.append(time.monotonic() - started)
                        ended["cut"] += 1
                        break
                except socket.timeout:
                    continue
                except OSError:
                    cuts.append(time.monotonic() - started)
                    ended["reset"] += 1
                    break
    results.setdefault("slow", []).append((cuts, ended))


def big():
    answers, taken = collections.Counter(), []
    chunk = b"a" * (1 << 20)
    for attempt in itertools.count():
        if not running():
            break
        started = time.monotonic()
        head = (b"POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 104857600\r\n\r\n" if attempt % 2 == 0
                else b"GET / HTTP/1.1\r\nHost: x\r\nX-Big: ")
        sent = 0
        try:
            with connect("127.0.0.3", 5) as connection:
                connection.sendall(head)
                try:
                    while sent < 100 and running():
                        connection.sendall(chunk)
                        sent += 1
                except OSError:
                    pass  # the listener stopped taking it: read what it said
                try:
                    answer = connection.recv(4096)
                    status = answer.split()[1].decode() if answer.startswith(b"HTTP/") else "closed"
                except OSError:
                    status = "closed"
        except OSError:
            status = "refused"
        answers[status] += 1
        taken.append(sent)
        pause(2 - (time.monotonic() - started))
    results["big"] = (f"{sum(answers.values())} requests of 100 MB: {tally(answers)}; "
                      f"MB taken before the answer: median {statistics.median(taken) if taken else 0:.0f}, max {max(taken, default=0)}")


def paths():
    requests = [f"GET {path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n".encode()
                for path in ("/../../etc/passwd", "/%2e%2e/%2e%2e/etc/passwd", "/..", "/api/v1/../../state.json")]
    requests += [f"{method} / HTTP/1.1\r\nHost: x\r\nConnection: close\r\nContent-Length: 0\r\n\r\n".encode()
                 for method in ("POST", "PUT", "DELETE", "TRACE", "BREW")]
    answers = collections.Counter()
    for index in itertools.count():
        if not running():
            break
        answers[outcome("127.0.0.4", requests[index % len(requests)])] += 1
        pause(0.2)
    results["paths"] = f"{sum(answers.values())} requests: {tally(answers)}"


def credentials():
    if ADDRESS is None:
        results["credentials"] = "skipped: no address beyond loopback"
        return
    import base64
    wrong = base64.b64encode(b"anyone:not-the-token").decode()
    headers = ["", "Authorization: Bearer not-the-token\r\n", f"Authorization: Basic {wrong}\r\n"]
    answers = collections.Counter()
    for index in itertools.count():
        if not running():
            break
        raw = f"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{headers[index % 3]}\r\n".encode()
        answers[outcome(ADDRESS, raw)] += 1
        pause(0.2)
    results["credentials"] = f"{sum(answers.values())} requests from {ADDRESS}: {tally(answers)}"


def scraper():
    source = ADDRESS or "127.0.0.5"
    token = f"Authorization: Bearer {TOKEN}\r\n" if TOKEN else ""
    answers = collections.Counter()
    while running():
        answers[outcome(source, f"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: close\r\n{token}\r\n".encode())] += 1
        pause(5)
    results["scraper"] = f"{sum(answers.values())} scrapes of /metrics from {source}: {tally(answers)}"


threads = [threading.Thread(target=target, daemon=True) for target in (idle, big, paths, credentials, scraper)]
threads += [threading.Thread(target=slow, daemon=True) for _ in range(4)]
for thread in threads:
    thread.start()
for thread in threads:
    thread.join(timeout=max(0.0, DEADLINE - time.monotonic()) + 15)
cuts = [cut for each, _ in results.get("slow", []) for cut in each]
ends = sum((ended for _, ended in results.get("slow", [])), collections.Counter())
results["slow"] = (f"4 clients, a byte a second: ended {tally(ends)}"
                   + (f"; seconds before the cut: median {statistics.median(cuts):.1f}, max {max(cuts):.1f}" if cuts else ""))
for name in ("idle", "slow", "big", "paths", "credentials", "scraper"):
    print(f"{name}: {results.get(name, 'did not finish')}")
