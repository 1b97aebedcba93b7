#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The browser host's costs, on a private bus with the built useractivityd:

  1. idle: CPU time and context switches of the host over 10 s with a page
     published and nothing changing (the goal: none; no timer runs while idle);
  2. memory: the host's USS (private pages) with a page published, and
     useractivityd's in the same run as the baseline;
  3. a burst of 1,000 navigations written at once: how many Update (and
     BecomeCurrent) calls reach the service (dbus-monitor), the shortest gap
     between two Updates (the goal: at least 100 ms), and whether the last
     page is the one the service shows.

Usage: bench/browser-host.py [BUILD-DIR]   (default .build/release)
USS counts pages no other process maps: a shared library's pages count only
while no other process uses that library, so compare builds in one run."""
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
BUILD = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, ".build", "release"))
SERVICE = "org.example.UserActivity"


def frame(message):
    data = json.dumps(message).encode()
    return struct.pack("=I", len(data)) + data


def uss_kib(pid):
    total = 0
    with open(f"/proc/{pid}/smaps_rollup") as f:
        for line in f:
            if line.startswith(("Private_Clean:", "Private_Dirty:")):
                total += int(line.split()[1])
    return total


def cpu_ticks_and_switches(pid):
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    switches = 0
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if "ctxt_switches" in line:
                switches += int(line.split()[1])
    # Threads too: the client library may run threads of its own.
    return int(fields[11]) + int(fields[12]), switches


def main():
    root = tempfile.mkdtemp(prefix="ua-bench-browser-")
    try:
        apps = os.path.join(root, "data", "applications")
        os.makedirs(apps)
        with open(os.path.join(apps, "chromium.desktop"), "w") as f:
            f.write("[Desktop Entry]\nType=Application\nName=Chromium\nExec=/bin/true %U\nMimeType=x-scheme-handler/https;\n")
        services = os.path.join(root, "services")
        os.makedirs(services)
        with open(os.path.join(services, SERVICE + ".service"), "w") as f:
            f.write(f"[D-BUS Service]\nName={SERVICE}\nExec={BUILD}/useractivityd\n")
        config = os.path.join(root, "session.conf")
        with open(config, "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:dir={root}</listen><servicedir>{services}</servicedir>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy></busconfig>
""")
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": root, "XDG_DATA_HOME": os.path.join(root, "data"),
               "XDG_DATA_DIRS": os.path.join(root, "data"), "XDG_STATE_HOME": os.path.join(root, "state"),
               "XDG_CONFIG_HOME": os.path.join(root, "config"), "XDG_RUNTIME_DIR": root}
        bus = subprocess.Popen(["dbus-daemon", "--nofork", "--print-address=1", f"--config-file={config}"],
                               stdout=subprocess.PIPE, env=env, start_new_session=True)
        env["DBUS_SESSION_BUS_ADDRESS"] = bus.stdout.readline().decode().strip()
        monitor_log = os.path.join(root, "monitor.log")
        monitor = subprocess.Popen(["dbus-monitor", "--address", env["DBUS_SESSION_BUS_ADDRESS"],
                                    f"type='method_call',destination='{SERVICE}'"],
                                   stdout=open(monitor_log, "w"), stderr=subprocess.DEVNULL)
        host = subprocess.Popen([f"{BUILD}/useractivity-browser-host", "chrome-extension://benchmark/"],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL, env=env)
        host.stdin.write(frame({"type": "page", "url": "https://example.com/start", "title": "Start"}))
        host.stdin.flush()

        def current_url():
            out = subprocess.run(["busctl", f"--address={env['DBUS_SESSION_BUS_ADDRESS']}", "--json=short", "get-property",
                                  SERVICE, "/org/example/UserActivity", SERVICE, "CurrentActivity"],
                                 capture_output=True, text=True, env=env)
            path = json.loads(out.stdout)["data"] if out.returncode == 0 else "/"
            if path == "/":
                return None
            out = subprocess.run(["busctl", f"--address={env['DBUS_SESSION_BUS_ADDRESS']}", "--json=short", "get-property",
                                  SERVICE, path, SERVICE + ".Activity", "WebpageURL"], capture_output=True, text=True, env=env)
            return json.loads(out.stdout)["data"] if out.returncode == 0 else None

        deadline = time.time() + 30
        while current_url() != "https://example.com/start" and time.time() < deadline:
            time.sleep(0.05)
        time.sleep(1)
        daemon_pid = int(subprocess.run(["pgrep", "-f", f"^{BUILD}/useractivityd"], capture_output=True, text=True).stdout.split()[0])
        ticks0, switches0 = cpu_ticks_and_switches(host.pid)
        time.sleep(10)
        ticks1, switches1 = cpu_ticks_and_switches(host.pid)
        host_uss, daemon_uss = uss_kib(host.pid), uss_kib(daemon_pid)

        burst = b"".join(frame({"type": "page", "url": f"https://example.com/{n}", "title": f"Page {n}"}) for n in range(1, 1001))
        with open(monitor_log) as f:
            before = len(f.read())
        started = time.time()
        host.stdin.write(burst)
        host.stdin.flush()
        deadline = time.time() + 30
        while current_url() != "https://example.com/1000" and time.time() < deadline:
            time.sleep(0.02)
        settled = time.time() - started
        time.sleep(0.5)
        with open(monitor_log) as f:
            log = f.read()[before:]
        updates = [float(m) for m in re.findall(r"method call time=([0-9.]+) .*member=Update\b", log)]
        becomes = len(re.findall(r"method call time=[0-9.]+ .*member=BecomeCurrent\b", log))
        gaps = [b - a for a, b in zip(updates, updates[1:])]
        last = current_url()

        print(f"host build: {BUILD}")
        print(f"idle 10 s with a page published: {ticks1 - ticks0} CPU ticks, {switches1 - switches0} context switches (goal: 0)")
        print(f"USS: host {host_uss} KiB ({host_uss / 1024:.1f} MiB; goal 3 MiB), useractivityd {daemon_uss} KiB in the same run")
        print(f"burst of 1000 navigations: {len(updates)} Update and {becomes} BecomeCurrent call(s) reached the service"
              + (f"; shortest gap between Updates {min(gaps) * 1000:.0f} ms (goal: at least 100)" if gaps else ""))
        print(f"last page shown by the service: {last} (expected https://example.com/1000), after {settled * 1000:.0f} ms")
        host.stdin.close()
        host.wait(timeout=10)
        monitor.terminate()
        os.killpg(bus.pid, 15)
        bus.wait(timeout=10)
    finally:
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
