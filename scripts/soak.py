#!/usr/bin/env python3
"""make soak: one simulated day at high speed through a real broker and the widget stand-in, with
faults, then the widget's document against a fault-free replay of the same day, and the daemon's
memory.

    scripts/soak.py FLOWBRIDGE WIDGETSTANDIN      (make soak builds both and passes them)

What runs: a private mosquitto on a free loopback port; the widget stand-in
(Tests/WidgetStandIn); `flowbridge run` with the simulated home's widget (the sources and widget
of Config/demo.yaml) and `push:` to the stand-in; and a publisher that sends the day of
`flowbridge simulate --trace` (midnight to midnight, one cycle every SOAK_CYCLE simulated
seconds) with the trace's own spacing divided by SOAK_SPEED. While the day runs, the faults come
at fixed points of it: API 500s, 429s with Retry-After, slow answers, dropped connections (the
request applied, and not), a widget API outage, a `kill -9` of flowbridge and a restart on its
state file, the broker stopped and restarted, and the broker killed and restarted. The last
third of the day is free of faults: retries back off for up to 10 s, and the faults queued at
the stand-in wait for the requests that take them.

What "the same messages" means. The daemon lives by the wall clock: at SOAK_SPEED times the
simulated speed, a total it integrated itself would count real seconds, and a replay of the trace
counts simulated ones; and messages published while the broker or the daemon is down never reach
the daemon. So the soak's totals come from device counters, as Config/demo.yaml's do: Solar from
the inverters' daily yield, Grid from the meter's import counter. A counter total depends on the
counter's readings, not on when they arrived nor on the readings lost in between (the day's
first reading is its baseline, the latest its end; the daily counter's restart at sunrise is
found as a drop wherever it is seen). The rates, the balance and the battery level are the latest
readings. So the document the daemon leaves at the stand-in, once the faults are over and the
day's last readings are in, must equal `flowbridge replay --final` of the whole trace, without
faults, state or restarts: totals within 0.01 kWh, everything else exactly. The policy has no rate
deadband, so the last push shows the last readings rather than what a history of pushes let
through. The day is read in a fixed-offset zone (Etc/GMT-N) where it is near noon on the wall
clock, so the daemon's own day does not end during the soak.

Memory: the daemon's RSS (VmRSS) is read every second. For the first process (before the first
kill -9) and the last (the restart that runs to the end) the start is its RSS once it has delivered its
first document and the end its last reading; the soak fails when the last process (which runs
for most of the day, some 50,000 messages and 150 pushes) grows by more than SOAK_RSS_GROWTH_KB
(default 2048 kB, some 40 bytes a message) between them. A healthy run grows by well under 100 kB.

Writes: the last process's block writes (`write_bytes` of /proc/PID/io) from 10 s into its life
(past the saves of its start, as for memory) to its end, said per day of the wall clock, which is
what the state saves follow (once a minute while an integrated energy moves, at once at a
counter's new baseline or a reload), so the soak's speed changes it little. They are the state's
alone: the daemon's log goes through a pipe (as it goes to journald under systemd), and the soak
writes it to the file; the state is in a folder of its own (`state/`, as under StateDirectory=). The soak fails beyond SOAK_WRITES_MB_PER_DAY (default 20 MB). A price change is saved at once,
and the simulated day's changes come SPEED times as often as a home's: with strace, the saves
within 2.5 s after a change are counted at a home's pace (24 / SOAK_PRICE_HOURS changes a day), the
others as they came but at least once a minute (a price save restarts the minute's wait, and so
stands in for a save of the home's integrated consumption), each at the window's bytes a save. With strace
installed, each restarted process runs under it (`strace -f --seccomp-bpf`, which stops it at its
fsyncs and fdatasyncs only), and the summary says its syncs a day over the same window. That
figure is reported, not bounded: at 240x a save due at once (a counter's new baseline, the daily
counter's restart at sunrise) comes 240 times as often as in a home; bench/state-writes.py
measures a steady home at 1x.

Money: a price feed joins the day (soak/price, EUR/MWh, fees 0.05), repeating its price every 15
simulated minutes and changing it every SOAK_PRICE_HOURS (default 2) to a price drawn from the
seed, and the grid's import is priced by it. Besides the kill -9 at a sixth of the day, SOAK_KILLS
− 1 more (default 2) come at moments drawn from the seed. When the day is over and flowbridge
stopped, the import cost in its state must equal the fault-free replay's to half a cent: through
every kill, the state held the prices the pending counter rise needed. The import comes from the
grid's counter, so it is the same day whatever the wall clock did (consumption and export are
integrated on the wall clock here, and the replay on the simulated one: not compared). A price
sent while no daemon runs or the broker is away never reaches the daemon, as a meter's reading
would not: the kills and the broker's outages come between price changes (not within the second
after one either, before the tick that saves it: a kill there loses the new price, see
docs/service.md).

Exit status: 0 when everything matched; 1 on a mismatch, a fault that never took effect, memory
growth beyond the bound, or a daemon that did not start or stop cleanly.
"""
import base64
import json
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import threading
import zlib
import time
import urllib.request
from datetime import datetime, timezone

SPEED = float(os.environ.get("SOAK_SPEED", "240"))
CYCLE = os.environ.get("SOAK_CYCLE", "10")
DATE = os.environ.get("SOAK_DATE", "2026-06-21")
SEED = os.environ.get("SOAK_SEED", "1")
RSS_GROWTH_KB = int(os.environ.get("SOAK_RSS_GROWTH_KB", "2048"))
WRITES_MB_PER_DAY = float(os.environ.get("SOAK_WRITES_MB_PER_DAY", "20"))
TOTAL_TOLERANCE_KWH = 0.01
PRICE_HOURS = float(os.environ.get("SOAK_PRICE_HOURS", "2"))
KILLS = int(os.environ.get("SOAK_KILLS", "3"))
MONEY_TOLERANCE = 0.005
PRICE_TOPIC = "soak/price"
TOKEN = "soak-token"
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
WORK = os.path.join(ROOT, ".build", "soak")
# In a folder of its own, which the daemon creates, as under systemd's StateDirectory=: what a
# save writes depends on where the file system puts the folder's and the files' inodes.
STATE = os.path.join(WORK, "state", "state.json")


def saved_state():
    """The state a restart continues from: of its two copies (state.json, state.json.alt), the one
    with the higher "sequence" whose "crc32" matches every byte before it (docs/service.md#state).
    After a kill -9 the newer one is either file."""
    newest = None
    for path in (STATE, STATE + ".alt"):
        try:
            with open(path, "rb") as copy:
                data = copy.read().rstrip()
            lead = data.rindex(b',"crc32":"')
            if zlib.crc32(data[:lead]) != int(data[lead + 10:lead + 18], 16):
                continue
        except (FileNotFoundError, ValueError):
            continue
        state = json.loads(data)
        if newest is None or state["sequence"] > newest["sequence"]:
            newest = state
    return newest


def say(text):
    print(f"[{time.strftime('%H:%M:%S')}] {text}", flush=True)


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def noon_zone():
    """A fixed-offset zone in which the wall clock is near noon: the daemon's day lasts the soak."""
    offset = 12 - datetime.now(timezone.utc).hour
    offset = max(-11, min(12, offset))
    # POSIX sign: Etc/GMT-3 is three hours ahead of UTC.
    return "UTC" if offset == 0 else f"Etc/GMT{'-' if offset > 0 else '+'}{abs(offset)}"


# MARK: - Processes


class Broker:
    """A private mosquitto on a loopback port, stopped and started again on the same port."""

    def __init__(self, port):
        self.port = port
        self.config = os.path.join(WORK, "mosquitto.conf")
        with open(self.config, "w") as out:
            out.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n"
                      f"log_dest file {os.path.join(WORK, 'mosquitto.log')}\n")
        self.process = None
        self.start()

    def start(self):
        mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        self.process = subprocess.Popen([mosquitto, "-c", self.config], stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        deadline = time.time() + 10
        while time.time() < deadline:
            try:
                socket.create_connection(("127.0.0.1", self.port), timeout=0.2).close()
                return
            except OSError:
                time.sleep(0.05)
        raise SystemExit("soak: mosquitto did not start")

    def stop(self, kill=False):
        self.process.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        self.process.wait()


class StandIn:
    def __init__(self, executable):
        self.process = subprocess.Popen([executable, "--token", TOKEN, "--path", "/widget"],
                                        stdout=subprocess.PIPE, stderr=open(os.path.join(WORK, "standin.log"), "w"), text=True)
        line = self.process.stdout.readline()
        if not line.startswith("listening on 127.0.0.1:"):
            raise SystemExit(f"soak: the widget stand-in did not start: {line!r}")
        self.port = int(line.rsplit(":", 1)[1])
        self.url = f"http://127.0.0.1:{self.port}"

    def call(self, method, path, body=None):
        data = None if body is None else json.dumps(body).encode()
        request = urllib.request.Request(self.url + path, data=data, method=method)
        with urllib.request.urlopen(request, timeout=10) as answer:
            return json.load(answer)

    def fault(self, fault, count):
        self.call("POST", "/control", {"fault": fault, "count": count})

    def outage(self, seconds):
        self.call("POST", "/control", {"outage": seconds})

    def state(self):
        return self.call("GET", "/state")


class Daemon:
    """flowbridge run, its log in a file, its RSS and block writes sampled every second."""

    def __init__(self, executable, config, log_path):
        self.executable, self.config, self.log_path = executable, config, log_path
        self.process = None
        self.pid = None  # flowbridge's own, also under strace (whose child it then is)
        self.syncs_path = None  # strace's record of its syncs, when it runs under strace
        self.samples = []  # (time, rss kB, process number)
        self.writes = []  # (time, write_bytes, process number)
        self.generation = 0
        self.sampling = True
        threading.Thread(target=self.sample, daemon=True).start()

    def start(self, trace_syncs=False):
        """Starts flowbridge run; with `trace_syncs` (and strace installed) under strace, which
        records its fsyncs and fdatasyncs in `syncs_path`."""
        self.generation += 1
        log = open(self.log_path, "a")
        log.write(f"---- start {self.generation}\n")
        log.flush()
        command = [self.executable, "run", "--config", self.config]
        strace = shutil.which("strace") if trace_syncs else None
        self.syncs_path = os.path.join(WORK, f"syncs-{self.generation}.txt") if strace else None
        if strace:
            command = [strace, "-f", "--seccomp-bpf", "-qq", "-ttt", "-y", "-e", "trace=fsync,fdatasync", "-o", self.syncs_path] + command
        self.process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=dict(os.environ))
        self.log_copier = threading.Thread(target=self.copy_log, args=(self.process.stderr, log), daemon=True)
        self.log_copier.start()
        self.pid = self.process.pid
        deadline = time.time() + 10
        while strace and self.pid == self.process.pid and time.time() < deadline:
            children = subprocess.run(["pgrep", "-P", str(self.process.pid)], capture_output=True, text=True).stdout.split()
            self.pid = int(children[0]) if children else self.pid
            time.sleep(0.05)
        self.wait_for_log("connected to", since=f"---- start {self.generation}")

    @staticmethod
    def copy_log(pipe, log):
        for line in pipe:
            log.write(line.decode(errors="replace"))
            log.flush()
        log.close()

    def signal(self, number):
        os.kill(self.pid, number)

    def sync_calls(self, begin, end):
        """The fsyncs and fdatasyncs strace saw between two times: [(time, "fsync" or "fdatasync",
        the file synced)]."""
        found = []
        with open(self.syncs_path) as calls:
            for line in calls:
                fields = line.split(None, 2)
                if len(fields) == 3 and begin <= float(fields[1]) <= end:
                    call, _, rest = fields[2].partition("(")
                    found.append((float(fields[1]), call, rest.partition("<")[2].partition(">")[0]))
        return found

    def syncs(self, begin, end):
        """The fsyncs and fdatasyncs strace saw between two times: {"fsync": n, "fdatasync": m}."""
        counts = {"fsync": 0, "fdatasync": 0}
        for _, call, _ in self.sync_calls(begin, end):
            counts[call] = counts.get(call, 0) + 1
        return counts

    def wait_for_log(self, text, since, seconds=30):
        deadline = time.time() + seconds
        while time.time() < deadline:
            with open(self.log_path) as log:
                content = log.read()
            if text in content[content.rfind(since):]:
                return
            if self.process.poll() is not None:
                raise SystemExit(f"soak: flowbridge exited with {self.process.returncode}; see {self.log_path}")
            time.sleep(0.1)
        raise SystemExit(f"soak: flowbridge did not log '{text}' within {seconds}s; see {self.log_path}")

    def rss_kb(self):
        try:
            with open(f"/proc/{self.pid}/status") as status:
                for line in status:
                    if line.startswith("VmRSS:"):
                        return int(line.split()[1])
        except (OSError, AttributeError):
            return None

    def write_bytes(self):
        try:
            with open(f"/proc/{self.pid}/io") as io:
                for line in io:
                    if line.startswith("write_bytes:"):
                        return int(line.split()[1])
        except (OSError, AttributeError):
            return None

    def cpu_seconds(self):
        try:
            with open(f"/proc/{self.pid}/stat") as stat:
                fields = stat.read().rsplit(")", 1)[1].split()
            return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
        except (OSError, AttributeError):
            return None

    def sample(self):
        while self.sampling:
            if self.process is not None and self.process.poll() is None:
                rss = self.rss_kb()
                if rss is not None:
                    self.samples.append((time.time(), rss, self.generation))
                written = self.write_bytes()
                if written is not None:
                    self.writes.append((time.time(), written, self.generation))
            time.sleep(1)


# MARK: - Publishing the day


def packet(kind, body):
    """An MQTT 3.1.1 control packet: type byte, remaining length, body."""
    length, encoded = len(body), bytearray()
    while True:
        digit, length = length % 128, length // 128
        encoded.append(digit | (0x80 if length else 0))
        if not length:
            return bytes([kind]) + bytes(encoded) + body


def text(value):
    data = value.encode() if isinstance(value, str) else value
    return len(data).to_bytes(2, "big") + data


class Publisher(threading.Thread):
    """Sends the trace at its own spacing / SPEED (QoS 0, as the meters do), reconnecting when the
    broker goes away; a message due while it is away is lost, as a meter's would be."""

    def __init__(self, trace, port, started):
        super().__init__(daemon=True)
        self.messages = trace
        self.port = port
        self.started = started
        self.sent = self.lost = 0
        self.socket = None
        self.progress = 0.0  # the share of the day published
        self.done = threading.Event()
        # When the price feed last changed its price (the wall clock), and to what.
        self.price_changed_at = time.time()
        self.price = None
        self.price_changes = []  # the wall clock's times of every change

    def connect(self):
        try:
            connection = socket.create_connection(("127.0.0.1", self.port), timeout=1)
            connection.sendall(packet(0x10, text("MQTT") + bytes([4, 0x02]) + (60).to_bytes(2, "big") + text("soak-publisher")))
            if connection.recv(4)[:1] != b"\x20":
                connection.close()
                return None
            return connection
        except OSError:
            return None

    def run(self):
        first = self.messages[0][0]
        span = self.messages[-1][0] - first
        next_attempt = 0
        for at, topic, payload in self.messages:
            due = self.started + (at - first) / SPEED
            pause = due - time.time()
            if pause > 0:
                time.sleep(pause)
            self.progress = (at - first) / span
            if self.socket is None and time.time() >= next_attempt:
                self.socket = self.connect()
                next_attempt = time.time() + 0.2
            if self.socket is None:
                self.lost += 1
                continue
            try:
                self.socket.sendall(packet(0x30, text(topic) + payload))
                self.sent += 1
                if topic == PRICE_TOPIC and payload != self.price:
                    self.price, self.price_changed_at = payload, time.time()
                    self.price_changes.append(self.price_changed_at)
            except OSError:
                self.socket.close()
                self.socket = None
                self.lost += 1
        if self.socket is not None:
            try:
                self.socket.sendall(bytes([0xE0, 0]))  # DISCONNECT
            except OSError:
                pass
            self.socket.close()
        self.done.set()


def add_prices(path):
    """Adds the day's price feed to the trace at `path`: the price every 15 simulated minutes from
    its first instant, a new one every PRICE_HOURS, drawn from the seed (EUR/MWh)."""
    with open(path) as trace:
        lines = trace.read().splitlines()
    times = [datetime.fromisoformat(json.loads(line)["t"].replace("Z", "+00:00")).timestamp() for line in lines]
    draw = random.Random(f"prices {SEED}")
    feed = []
    at, price = times[0], None
    for slot in range(int((times[-1] - times[0]) // 900) + 1):
        if slot % max(1, round(PRICE_HOURS * 4)) == 0:
            price = draw.randrange(20, 400)
        stamp = datetime.fromtimestamp(at + slot * 900, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")
        feed.append((at + slot * 900, 0, json.dumps({"payload": str(price), "t": stamp, "topic": PRICE_TOPIC})))
    # A price first at an instant it shares with the meters; the trace's own order kept.
    merged = sorted(feed + [(t, 1, line) for t, line in zip(times, lines)], key=lambda entry: entry[:2])
    with open(path, "w") as trace:
        trace.write("".join(line + "\n" for _, _, line in merged))


def read_trace(path):
    messages = []
    with open(path) as trace:
        for line in trace:
            entry = json.loads(line)
            at = datetime.fromisoformat(entry["t"].replace("Z", "+00:00")).timestamp()
            payload = entry["payload"].encode() if "payload" in entry else base64.b64decode(entry["payload_b64"])
            messages.append((at, entry["topic"], payload))
    return messages


# MARK: - The soak


CONFIG = """\
# The soak's widget: the sources and the flow widget of Config/demo.yaml (its totals from device
# counters), with the push to the widget stand-in, a policy without rate deadband, and retries
# bounded to seconds (scripts/soak.py says why).
timezone: {zone}
mqtt: {{host: 127.0.0.1, port: {broker_port}, client_id: flowbridge-soak, topic_prefix: flowbridge-soak}}
state_file: {state}
sources:
  solar:     {{topic: solar/ac/power}}
  solar_day: {{topic: solar/ac/yieldday, unit: Wh, max_power: 50000000}}
  grid:      {{topic: shellypro3em-08f9e0e5a1c4/status/em:0, json: total_act_power}}
  grid_in:   {{topic: shellypro3em-08f9e0e5a1c4/status/emdata:0, json: total_act, unit: Wh, max_power: 50000000}}
  battery:   {{topic: evcc/site/battery/power, invert: true}}
  soc:       {{topic: evcc/site/battery/soc, unit: "%"}}
  price:     {{topic: soak/price, unit: EUR/MWh, stale_after: 1h}}
widgets:
  power:
    template: flow
    label: Soak home
    unit: W
    flow:
      inputs:
        - {{name: Solar, rate: solar, total: {{daily: solar_day}}, icon: sun.max.fill}}
      storage: {{name: Battery, rate: battery, level: soc}}
      exchange: {{name: Grid, rate: grid, total: {{counter: grid_in}}}}
      output: {{name: Home, rate: balance}}
    policy: {{min_interval: 2s, rate_step: 10, rate_deadband: 0, total_step: 0.01, level_step: 1}}
    push:
      url: http://127.0.0.1:{standin_port}/widget
      token_file: {token}
      retry: {{min: 1s, max: 10s}}
      timeout: 10s
tariff:
  import: {{price: price, fees: 0.05}}
"""


def compare(got, want, path=""):
    """The differences between two documents: totals within the tolerance, the rest exactly."""
    if isinstance(got, dict) and isinstance(want, dict):
        found = []
        for key in sorted(set(got) | set(want)):
            found += compare(got.get(key), want.get(key), f"{path}.{key}" if path else key)
        return found
    if isinstance(got, list) and isinstance(want, list) and len(got) == len(want):
        return [d for index, (a, b) in enumerate(zip(got, want)) for d in compare(a, b, f"{path}[{index}]")]
    if path.endswith(".total") and isinstance(got, (int, float)) and isinstance(want, (int, float)):
        return [] if abs(got - want) <= TOTAL_TOLERANCE_KWH + 1e-9 else [f"{path}: {got} kWh, the replay {want} kWh"]
    return [] if got == want else [f"{path}: {json.dumps(got)}, the replay {json.dumps(want)}"]


def main():
    if len(sys.argv) != 3:
        raise SystemExit(__doc__.split("\n\n")[1])
    flowbridge, standin_executable = (os.path.abspath(p) for p in sys.argv[1:])
    shutil.rmtree(WORK, ignore_errors=True)
    os.makedirs(WORK)
    zone = noon_zone()
    os.environ["TZ"] = zone
    processes = []
    failures = []
    try:
        trace_path = os.path.join(WORK, "day.ndjson")
        subprocess.run([flowbridge, "simulate", "--trace", trace_path, "--date", DATE, "--speed", CYCLE, "--seed", SEED],
                       check=True, stderr=subprocess.DEVNULL)
        add_prices(trace_path)
        trace = read_trace(trace_path)
        span = trace[-1][0] - trace[0][0]
        say(f"day {DATE} (seed {SEED}) in {zone}: {len(trace)} messages over {span / 3600:.1f} simulated hours, "
            f"at {SPEED:g}x: {span / SPEED:.0f} s")

        broker = Broker(free_port())
        processes.append(broker)
        standin = StandIn(standin_executable)
        processes.append(standin)
        token = os.path.join(WORK, "token")
        with open(token, "w") as out:
            out.write(TOKEN + "\n")
        config = os.path.join(WORK, "soak.yaml")
        with open(config, "w") as out:
            out.write(CONFIG.format(zone=zone, broker_port=broker.port, state=STATE,
                                    standin_port=standin.port, token=token))
        daemon = Daemon(flowbridge, config, os.path.join(WORK, "flowbridge.log"))
        processes.append(daemon)
        daemon.start()
        say(f"broker on {broker.port}, stand-in on {standin.port}, flowbridge {daemon.pid} connected")

        publisher = Publisher(trace, broker.port, time.time() + 0.5)
        publisher.start()
        pids = {}
        restart_doubt = [None]

        def between_price_changes(needed):
            """Waits for a moment a second or more after the price changed and `needed` seconds or
            more before it changes again: what the fault loses then is no price."""
            change_every = PRICE_HOURS * 3600 / SPEED
            while not publisher.done.is_set():
                since = time.time() - publisher.price_changed_at
                if since >= 1.5 and change_every - since >= needed:
                    return
                time.sleep(0.02)

        def restart_broker(kill):
            between_price_changes(20)
            broker.stop(kill=kill)
            time.sleep(3)
            broker.start()

        def kill_daemon():
            between_price_changes(8)
            pids[daemon.generation] = daemon.pid
            daemon.signal(signal.SIGKILL)
            daemon.process.wait()
            # What the state says the widget shows must be what it shows, or be marked in doubt:
            # the restart's first patch is made against it.
            delivery = (saved_state() or {}).get("sinks", {}).get("push:power", {})
            shown = standin.state()["document"]
            if delivery.get("in_doubt") is False and delivery.get("shown") != shown:
                failures.append("after kill -9 the state says the widget shows, without doubt, a document it does not show: "
                                + "; ".join(compare(delivery.get("shown"), shown)).replace("the replay", "the widget"))
            restart_doubt[0] = delivery.get("in_doubt")
            time.sleep(2)
            daemon.start(trace_syncs=True)
            pids[daemon.generation] = daemon.pid

        # (share of the day, what, action)
        faults = [
            (0.05, "API: 3 × 500", lambda: standin.fault({"status": 500}, 3)),
            (0.10, "API: 2 × 429, Retry-After: 2", lambda: standin.fault({"status": 429, "retry_after": "2"}, 2)),
            (0.16, "flowbridge: kill -9, restart on its state 2 s later", kill_daemon),
            (0.24, "broker: stopped, started 3 s later", lambda: restart_broker(kill=False)),
            (0.32, "API: 422 (a rejected patch is followed by one full replace)", lambda: standin.fault({"status": 422}, 1)),
            (0.38, "API: 2 slow answers (3 s), a dropped connection after applying, one before",
             lambda: (standin.fault({"delay": 3}, 2), standin.fault({"drop": True, "apply": True}, 1),
                      standin.fault({"drop": True, "apply": False}, 1))),
            (0.48, "API: outage of 4 s", lambda: standin.outage(4)),
            (0.56, "broker: kill -9, started 3 s later", lambda: restart_broker(kill=True)),
            (0.64, "API: 2 × 503 (Retry-After: 1), 2 × 500",
             lambda: (standin.fault({"status": 503, "retry_after": "1"}, 2), standin.fault({"status": 500}, 2))),
        ]
        draw = random.Random(f"kills {SEED}")
        faults += [(round(draw.uniform(0.04, 0.64), 3), "flowbridge: kill -9 at a drawn moment, restart 2 s later", kill_daemon)
                   for _ in range(KILLS - 1)]
        faults.sort(key=lambda fault: fault[0])
        for share, what, action in faults:
            while publisher.progress < share and not publisher.done.is_set():
                time.sleep(0.05)
            say(f"{share * 24:5.1f} h  {what}")
            action()
        publisher.done.wait()
        say(f"day published: {publisher.sent} messages sent, {publisher.lost} lost while the broker was away")

        # The replay: the same day, no faults, no state, no restart.
        replay = subprocess.run([flowbridge, "replay", "--config", config, "--final", trace_path],
                                check=True, capture_output=True, text=True).stdout.splitlines()
        expected = next(json.loads(line)["content"] for line in reversed(replay) if line.startswith('{"content"'))

        # The last readings settle, go out, and any retry still waiting is done.
        deadline = time.time() + 60
        differences = ["nothing delivered"]
        while time.time() < deadline:
            document = standin.state()["document"]
            differences = compare(document, expected)
            if not differences:
                break
            time.sleep(1)
        state = standin.state()
        with open(os.path.join(WORK, "standin-state.json"), "w") as out:
            json.dump(state, out, indent=1)
        end_cpu = daemon.cpu_seconds()

        daemon.signal(signal.SIGTERM)
        stop_status = daemon.process.wait(timeout=30)
        daemon.sampling = False
        expected_money = next((json.loads(line)["money"] for line in replay
                               if line.startswith("{") and json.loads(line).get("widget") == "power" and "money" in json.loads(line)), {})
        with open(STATE) as saved:
            saved_money = json.load(saved).get("money", {}).get("power", {})

        # MARK: summary
        print()
        print("soak summary")
        print(f"  day:       {DATE}, seed {SEED}, {len(trace)} messages, {SPEED:g}x ({span / SPEED:.0f} s), zone {zone}")
        print(f"  published: {publisher.sent} sent, {publisher.lost} lost during broker outages")
        requests = state["requests"]
        outcomes = {}
        for request in requests:
            key = f"{request['method']} {int(request['status'])}{'' if request['outcome'] == 'answered' else ' ' + request['outcome']}"
            outcomes[key] = outcomes.get(key, 0) + 1
        print(f"  requests:  {len(requests)} at the stand-in: " + ", ".join(f"{k} ×{v}" for k, v in sorted(outcomes.items())))
        print(f"  in flight: at most {int(state['max_in_flight'])} at once")
        # Each fault is taken by whichever request comes next, a patch or a full replace.
        for needed in ["500", "429", "503", "422", "200 slow", "200 dropped", "0 dropped"]:
            if not any(key.split(" ", 1)[1] == needed for key in outcomes):
                failures.append(f"no request met the fault '{needed}': the fault never took effect")
        full_replaces = sum(1 for r in requests if r["method"] == "PUT")
        print(f"  kill -9:   the saved delivery was {'in doubt' if restart_doubt[0] else 'not in doubt'}")
        print(f"  replaces:  {full_replaces} full documents (the first, and after each doubt)")
        daemon.log_copier.join(timeout=10)
        with open(daemon.log_path) as log:
            log_lines = log.read().splitlines()
        warnings = sum(1 for line in log_lines if "warning" in line.lower() or line.startswith("<4>"))
        print(f"  daemon:    {len(log_lines)} log lines, {warnings} warnings; CPU {end_cpu:.1f} s in its second life; "
              f"stopped with exit status {stop_status}")
        if stop_status != 0:
            failures.append(f"flowbridge exited with {stop_status} on SIGTERM")
        print("  document:  " + ("equals the fault-free replay (totals within 0.01 kWh)" if not differences else "DIFFERS"))
        for difference in differences:
            print(f"             {difference}")
            failures.append(f"document: {difference}")
        got, want = saved_money.get("import_cost"), expected_money.get("import_cost")
        money_ok = isinstance(got, (int, float)) and isinstance(want, (int, float)) and abs(got - want) <= MONEY_TOLERANCE
        print(f"  money:     import cost {got} in the state after {KILLS} kills, the replay {want}: "
              + (f"equal to half a cent" if money_ok else "DIFFERS")
              + f"; unpriced {saved_money.get('unpriced_kwh', {})} kWh, the replay {expected_money.get('unpriced_kwh', {})}")
        if not money_ok:
            failures.append(f"money: import cost {got} in the state, the fault-free replay {want}")
        if not want:
            failures.append("money: the replay priced no import")
        totals = {f"{slot}": node.get("total") for slot, node in expected["flow"].items() if isinstance(node, dict) and "total" in node}
        totals.update({f"inputs[{i}]": node.get("total") for i, node in enumerate(expected["flow"].get("inputs", []))})
        print(f"             replay totals: " + ", ".join(f"{k} {v} kWh" for k, v in sorted(totals.items())))

        last = daemon.generation
        for generation in (1, last):
            samples = [rss for at, rss, g in daemon.samples if g == generation]
            start_times = [at for at, rss, g in daemon.samples if g == generation]
            if len(samples) < 3:
                failures.append(f"memory: too few RSS samples of process {generation}")
                continue
            # The start: 10 s into its life, once it has connected and delivered.
            begin = start_times[0] + 10
            start = next((rss for at, rss in zip(start_times, samples) if at >= begin), samples[0])
            end, peak = samples[-1], max(samples)
            growth = end - start
            bounded = generation == last
            verdict = ""
            if bounded:
                verdict = f"(bound {RSS_GROWTH_KB} kB) " + ("ok" if growth <= RSS_GROWTH_KB else "EXCEEDED")
                if growth > RSS_GROWTH_KB:
                    failures.append(f"memory: RSS grew by {growth} kB (bound {RSS_GROWTH_KB} kB)")
            print(f"  memory {generation}:  pid {pids.get(generation)}: RSS {start} kB at start, {end} kB at the end, "
                  f"peak {peak} kB, {len(samples)} s sampled; growth {growth:+d} kB {verdict}".rstrip())
        # From 10 s into its life, as its memory: the save at its start (the restart's first
        # readings) is the restart's, not the day's.
        second_life = [at for at, written, g in daemon.writes if g == last]
        writes = [(at, written) for at, written, g in daemon.writes if g == last and at >= second_life[0] + 10] if second_life else []
        if len(writes) < 2 or writes[-1][0] - writes[0][0] < 60:
            failures.append(f"writes: too few /proc/PID/io samples of process {last}")
        else:
            seconds, written = writes[-1][0] - writes[0][0], writes[-1][1] - writes[0][1]
            syncs = daemon.syncs(writes[0][0], writes[-1][0]) if daemon.syncs_path else None
            # One fdatasync a save, of one of the state's two copies (state.json, state.json.alt):
            # what a save wrote, whatever the window caught (the day book's few commits in it).
            saves = [at for at, call, path in daemon.sync_calls(writes[0][0], writes[-1][0])
                     if call == "fdatasync" and path in (STATE, STATE + ".alt")] if syncs else []
            per_save = written // len(saves) if saves else None
            # A price change is saved at once (at the next tick), and once more when the counter's
            # rise passed it: at SPEED, SPEED times as often as at home. The state's saves within
            # 2.5 s after a change are counted at a home's pace (24 / SOAK_PRICE_HOURS changes a
            # day), the rest as they came.
            changes = [at for at in publisher.price_changes if writes[0][0] <= at <= writes[-1][0]]
            # A save at once restarts the minute's wait, so the price saves stand in for the
            # minute's saves of the home's integrated consumption: at home those come once a minute
            # at least.
            price_saves = sum(1 for at in saves if any(0 <= at - change <= 2.5 for change in changes))
            if per_save:
                other_saves_a_day = max((len(saves) - price_saves) / seconds, 1 / 60) * 86400
                price_saves_a_day = 24 / PRICE_HOURS * price_saves / len(changes) if changes else 0
                per_day_mb = per_save * (other_saves_a_day + price_saves_a_day) / 1e6
            else:
                per_day_mb = written / seconds * 86400 / 1e6
            verdict = "ok" if per_day_mb <= WRITES_MB_PER_DAY else "EXCEEDED"
            paced = (f", the {price_saves} saves of its {len(changes)} price changes at a home's pace" if per_save
                     else " (price changes as they came: strace is not installed to tell a save's size)")
            print(f"  writes {last}:  {written} bytes of block writes in {seconds:.0f} s: {per_day_mb:.1f} MB a day{paced} "
                  f"(bound {WRITES_MB_PER_DAY:g} MB) {verdict}")
            if per_day_mb > WRITES_MB_PER_DAY:
                failures.append(f"writes: {per_day_mb:.1f} MB a day (bound {WRITES_MB_PER_DAY:g} MB)")
            if syncs:
                each = f", {per_save} bytes of writes a save" if per_save else ""
                print(f"  syncs {last}:   {syncs['fsync']} fsync, {syncs['fdatasync']} fdatasync in {seconds:.0f} s: "
                      f"{sum(syncs.values()) / seconds * 86400:.0f} a day{each} (saves due at once come {SPEED:g} times as "
                      "often as at home)")
            else:
                print(f"  syncs {last}:   not counted (strace is not installed)")
        print()
        if failures:
            print("soak: FAILED")
            for failure in failures:
                print(f"  {failure}")
            print(f"  (logs and files in {os.path.relpath(WORK, ROOT)}/)")
            return 1
        print("soak: OK")
        return 0
    finally:
        for process in reversed(processes):
            running = getattr(process, "process", None)
            if running is not None and running.poll() is None:
                # flowbridge itself, not the strace it may run under.
                pid = getattr(process, "pid", None) or running.pid
                os.kill(pid, signal.SIGTERM)
                try:
                    running.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.kill(pid, signal.SIGKILL)
                    running.kill()


if __name__ == "__main__":
    sys.exit(main())
