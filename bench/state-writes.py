#!/usr/bin/env python3
"""What the state saves of a steady home cost a disk: the simulated home at 1x for a while (the
demo home's devices, live through a private mosquitto, pushed to the widget stand-in), and
`flowbridge run` under strace, said per day of the wall clock.

    bench/state-writes.py FLOWBRIDGE WIDGETSTANDIN [integrating|counters]

integrating (the default): the widget's Solar and Grid totals integrated by the daemon from the
rates, as a home without energy counters does (the save policy's busiest case: once a minute
while power flows). counters: the demo home's totals, from the inverters' daily yield and the
grid meter's import counter.

Measured over a window that starts STATE_WRITES_SETTLE seconds (default 15) after the daemon has
connected and lasts STATE_WRITES_SECONDS (default 600), so the start's save and the stop's are
not in it:
  - saves: the renames onto the state file (strace -f -ttt of fsync, fdatasync and the renames);
  - fsyncs and fdatasyncs: every one the daemon made (the state is the only file it syncs);
  - write_bytes of /proc/PID/io: what the daemon dirtied in the page cache (a save dirties at
    least one 4 KiB page, whatever the file's size; on an ext4 without a journal the folder's and
    the inodes' blocks too, which a journal writes from its own thread instead); the log goes to
    a file in the run's folder, and says nothing while the home is steady;
  - device: the sectors written to the block device holding the state (/sys/dev/block/M:m/stat),
    which is what an SD card receives (the ext4 journal's commits and the metadata written back
    to its place included). Said only with STATE_DIR, which should be a device nobody else
    writes: a loop-mounted ext4 image (bench/NOTES.md says how). Read STATE_WRITES_TAIL seconds
    (default 35) after the window, when the writeback of the window's metadata (30 s) has gone out.
"""
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

SECONDS = float(os.environ.get("STATE_WRITES_SECONDS", "600"))
SETTLE = float(os.environ.get("STATE_WRITES_SETTLE", "15"))
TAIL = float(os.environ.get("STATE_WRITES_TAIL", "35"))
SYNCS = ("fsync", "fdatasync")
RENAMES = ("rename", "renameat", "renameat2")

CONFIG = """\
timezone: {zone}
mqtt: {{host: 127.0.0.1, port: {port}, client_id: flowbridge-state-writes, topic_prefix: flowbridge-state-writes}}
state_file: {state}
sources:
  solar:     {{topic: solar/ac/power}}
  solar_day: {{topic: solar/ac/yieldday, unit: Wh}}
  grid:      {{topic: shellypro3em-08f9e0e5a1c4/status/em:0, json: total_act_power}}
  grid_in:   {{topic: shellypro3em-08f9e0e5a1c4/status/emdata:0, json: total_act, unit: Wh}}
  grid_out:  {{topic: shellypro3em-08f9e0e5a1c4/status/emdata:0, json: total_act_ret, unit: Wh}}
  battery:   {{topic: evcc/site/battery/power, invert: true}}
  soc:       {{topic: evcc/site/battery/soc, unit: "%"}}
widgets:
  power:
    template: flow
    label: State writes
    unit: W
    flow:
      inputs: [{{name: Solar, rate: solar, total: {solar_total}}}]
      storage: {{name: Battery, rate: battery, level: soc}}
      exchange: {{name: Grid, rate: grid, total: {grid_total}, accounts: {{export: {{counter: grid_out}}}}}}
      output: {{name: Home, rate: balance}}
    push: {{url: "http://127.0.0.1:{standin_port}/widget", token_file: {token}}}
"""
TOTALS = {
    "integrating": {"solar_total": "integrate", "grid_total": "import"},
    "counters": {"solar_total": "{daily: solar_day}", "grid_total": "{counter: grid_in}"},
}


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def noon_zone():
    """A fixed-offset zone in which the wall clock is near noon: the sun shines on the simulated
    home (which follows the clock at 1x) and the day does not end during the run."""
    offset = max(-11, min(12, 12 - time.gmtime().tm_hour))
    # POSIX sign: Etc/GMT-3 is three hours ahead of UTC.
    return "UTC" if offset == 0 else f"Etc/GMT{'-' if offset > 0 else '+'}{abs(offset)}"


def device_sectors(path):
    """Sectors written so far to the block device that holds `path` (None when it has no stat)."""
    number = os.stat(path).st_dev
    try:
        with open(f"/sys/dev/block/{os.major(number)}:{os.minor(number)}/stat") as stat:
            return int(stat.read().split()[6])
    except OSError:
        return None


def write_bytes(pid):
    with open(f"/proc/{pid}/io") as io:
        return next(int(line.split()[1]) for line in io if line.startswith("write_bytes:"))


def main():
    if len(sys.argv) not in (3, 4) or (len(sys.argv) == 4 and sys.argv[3] not in TOTALS):
        raise SystemExit(__doc__.split("\n\n")[1])
    flowbridge, standin_executable = (os.path.abspath(p) for p in sys.argv[1:3])
    home = sys.argv[3] if len(sys.argv) == 4 else "integrating"
    work = tempfile.mkdtemp(prefix="flowbridge-state-writes-")
    state_dir = os.environ.get("STATE_DIR") or work
    state = os.path.join(state_dir, "state.json")
    for stale in [state, state + ".lock"]:
        if os.path.exists(stale):
            os.unlink(stale)
    children = []
    zone = noon_zone()
    os.environ["TZ"] = zone
    try:
        port = free_port()
        with open(os.path.join(work, "mosquitto.conf"), "w") as out:
            out.write(f"listener {port} 127.0.0.1\nallow_anonymous true\npersistence false\n")
        mosquitto = shutil.which("mosquitto") or "/usr/sbin/mosquitto"
        children.append(subprocess.Popen([mosquitto, "-c", os.path.join(work, "mosquitto.conf")],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        standin = subprocess.Popen([standin_executable, "--token", "t", "--path", "/widget"],
                                   stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        children.append(standin)
        standin_port = int(standin.stdout.readline().rsplit(":", 1)[1])
        token = os.path.join(work, "token")
        with open(token, "w") as out:
            out.write("t\n")
        config = os.path.join(work, "config.yaml")
        with open(config, "w") as out:
            out.write(CONFIG.format(zone=zone, port=port, state=state, standin_port=standin_port, token=token, **TOTALS[home]))
        time.sleep(0.5)
        children.append(subprocess.Popen([flowbridge, "simulate", "--broker", f"127.0.0.1:{port}", "--speed", "1"],
                                         stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
        trace = os.path.join(work, "strace.txt")
        log_path = os.path.join(work, "flowbridge.log")
        log = open(log_path, "w")
        tracer = subprocess.Popen(["strace", "-f", "-qq", "-ttt", "-e", "trace=" + ",".join(SYNCS + RENAMES), "-o", trace,
                                   flowbridge, "run", "--config", config], stdout=subprocess.DEVNULL, stderr=log)
        children.append(tracer)
        deadline = time.time() + 30
        while "connected to" not in open(log_path).read():
            if time.time() > deadline or tracer.poll() is not None:
                raise SystemExit(f"state-writes: flowbridge did not connect; see {log_path}")
            time.sleep(0.1)
        pid = int(subprocess.run(["pgrep", "-P", str(tracer.pid)], capture_output=True, text=True).stdout.split()[0])
        time.sleep(SETTLE)
        begin, bytes_begin, sectors_begin = time.time(), write_bytes(pid), device_sectors(state_dir)
        time.sleep(SECONDS)
        end, bytes_end = time.time(), write_bytes(pid)
        size = os.path.getsize(state)
        time.sleep(TAIL)
        sectors_end = device_sectors(state_dir)
        os.kill(pid, signal.SIGTERM)
        tracer.wait(timeout=30)

        counts = {name: 0 for name in SYNCS + ("saves",)}
        with open(trace) as calls:
            for line in calls:
                fields = line.split(None, 2)
                if len(fields) < 3 or not begin <= float(fields[1]) <= end:
                    continue
                call = fields[2].split("(", 1)[0]
                if call in SYNCS and "= 0" in fields[2]:
                    counts[call] += 1
                elif call in RENAMES and json.dumps(state) in fields[2]:
                    counts["saves"] += 1
        seconds = end - begin
        day = 86400 / seconds
        saves = counts["saves"]
        mount = subprocess.run(["findmnt", "-n", "-o", "FSTYPE,OPTIONS,SOURCE", "--target", state_dir],
                               capture_output=True, text=True).stdout.split()
        print(f"state writes: {home} home at 1x, {seconds:.0f} s, state on {state_dir} ({' '.join(mount)}), "
              f"the state {size} bytes")
        print(f"  saves:       {saves} ({saves * day:.0f} a day)")
        print(f"  fsyncs:      {counts['fsync']} fsync, {counts['fdatasync']} fdatasync "
              f"({(counts['fsync'] + counts['fdatasync']) * day:.0f} a day)")
        written = bytes_end - bytes_begin
        print(f"  write_bytes: {written} bytes ({written * day / 1e6:.1f} MB a day"
              + (f", {written / saves:.0f} bytes a save)" if saves else ")"))
        if os.environ.get("STATE_DIR") and sectors_begin is not None and sectors_end is not None:
            device = (sectors_end - sectors_begin) * 512
            print(f"  device:      {device} bytes written to the state's device ({device * day / 1e6:.1f} MB a day"
                  + (f", {device / saves:.0f} bytes a save)" if saves else ")"))
        return 0
    finally:
        for child in reversed(children):
            if child.poll() is None:
                child.send_signal(signal.SIGTERM)
                try:
                    child.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    child.kill()
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
