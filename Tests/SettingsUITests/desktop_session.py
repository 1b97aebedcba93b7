# SPDX-License-Identifier: Apache-2.0
"""A private desktop for the settings app: XDG dirs, a session bus with the
built daemons as D-Bus-activatable services, an X server (Xvfb) and the
accessibility bus (at-spi2-core). Nothing of the developer's session is used."""
import os
import random
import shutil
import signal
import socket
import subprocess
import tempfile
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("USERACTIVITY_BUILD_DIR", os.path.join(ROOT, ".build", "debug"))


def wait_until(condition, timeout=30.0, step=0.05):
    """Polls `condition` until it is true; False after `timeout` seconds."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = condition()
        if value:
            return value
        time.sleep(step)
    return condition()


def accessible_application(name):
    """The app called `name` on the accessibility bus of the session in
    DBUS_SESSION_BUS_ADDRESS, or None (import pyatspi after setting it)."""
    import pyatspi
    desktop = pyatspi.Registry.getDesktop(0)
    for index in range(desktop.childCount):
        child = desktop.getChildAtIndex(index)
        try:
            if child is not None and child.name == name:
                return child
        except Exception:
            continue
    return None


def child_path(root, predicate):
    """(node, child indices from `root`) of the first node, breadth first, that
    `predicate` accepts; None when there is none."""
    queue = [(root, [])]
    while queue:
        node, path = queue.pop(0)
        try:
            if predicate(node):
                return node, path
            queue.extend((node.getChildAtIndex(i), path + [i]) for i in range(node.childCount))
        except Exception:
            continue
    return None


def node_at(root, path):
    """The node at `path` under `root`, looked up afresh; None when it is gone."""
    node = root
    try:
        for index in path:
            node = node.getChildAtIndex(index)
            if node is None:
                return None
        return node
    except Exception:
        return None


class Session:
    """One desktop session; `Session(display=...)` for the first one also starts Xvfb."""

    def __init__(self, name, x_display=None, apps=()):
        self.name = name
        self.root = tempfile.mkdtemp(prefix=f"settings-ui-{name}-")
        self.children = []
        self.xdg = {key: os.path.join(self.root, sub) for key, sub in [
            ("XDG_CONFIG_HOME", "config"), ("XDG_DATA_HOME", "data"), ("XDG_CACHE_HOME", "cache"),
            ("XDG_STATE_HOME", "state"), ("XDG_RUNTIME_DIR", "runtime"), ("HOME", "home")]}
        for path in self.xdg.values():
            os.makedirs(path, mode=0o700, exist_ok=True)
        os.makedirs(os.path.join(self.xdg["XDG_DATA_HOME"], "applications"), exist_ok=True)
        for app_id, types in apps:
            self.write_app(app_id, types)
        services = os.path.join(self.root, "services")
        os.makedirs(services)
        self._write(os.path.join(services, "org.example.UserActivity.service"),
                    f"[D-BUS Service]\nName=org.example.UserActivity\nExec={BUILD}/useractivityd\n")
        self._write(os.path.join(services, "org.example.UserActivity.Handoff.service"),
                    "[D-BUS Service]\nName=org.example.UserActivity.Handoff\n"
                    f"Exec={BUILD}/useractivity-handoffd --listen 127.0.0.1:0\n")
        config = os.path.join(self.root, "session.conf")
        self._write(config, f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={self.root}</listen>
  <auth>EXTERNAL</auth>
  <servicedir>{services}</servicedir>
  <policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
  <limit name="service_start_timeout">30000</limit>
</busconfig>
""")
        base = {key: value for key, value in os.environ.items()
                if not key.startswith(("DBUS_", "XDG_", "AT_SPI", "DISPLAY", "WAYLAND"))}
        base.update(self.xdg)
        base.update({
            "DBUS_SYSTEM_BUS_ADDRESS": "unix:path=/nonexistent/system_bus_socket",
            "XDG_DATA_DIRS": f"{self.xdg['XDG_DATA_HOME']}:/usr/local/share:/usr/share",
            "XDG_SESSION_ID": "c1",
            "USERACTIVITY_HANDOFF_KEEPALIVE_SECONDS": "5",
            "GSETTINGS_BACKEND": "memory",
            "NO_AT_BRIDGE": "0",
            "LANG": "C.UTF-8",
        })
        bus = subprocess.Popen(["dbus-daemon", "--config-file", config, "--nofork", "--nopidfile", "--print-address"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=base, start_new_session=True)
        self.children.append(bus)
        self.address = bus.stdout.readline().decode().strip()
        if not self.address:
            raise RuntimeError("dbus-daemon did not start")
        base["DBUS_SESSION_BUS_ADDRESS"] = self.address
        self.env = base
        self.display = x_display
        self.x_log = None
        if x_display is None:
            self.display = self._start_x()
        self.env["DISPLAY"] = self.display
        # The accessibility bus of this session (org.a11y.Bus on the session bus).
        self.spawn(["/usr/libexec/at-spi-bus-launcher", "--launch-immediately"])
        if not wait_until(lambda: self.name_has_owner("org.a11y.Bus"), 20):
            raise RuntimeError("at-spi-bus-launcher did not take org.a11y.Bus")

    def _start_x(self):
        """Xvfb on a free display taken at random from a high range: other
        X servers on the machine (also in other mount namespaces, whose
        abstract sockets clients try first) keep the low numbers."""
        self.x_log = os.path.join(self.root, "xvfb.log")
        for _ in range(8):
            display = random.randrange(200, 60000)
            if os.path.exists(f"/tmp/.X{display}-lock") or self._x_socket_accepts(display, abstract=True):
                continue
            with open(self.x_log, "w") as log:
                xvfb = subprocess.Popen(["Xvfb", f":{display}", "-screen", "0", "1280x900x24", "-nolisten", "tcp", "-noreset"],
                                        stdout=log, stderr=log, start_new_session=True)
            if wait_until(lambda: xvfb.poll() is not None or self._x_socket_accepts(display), 15) and xvfb.poll() is None:
                self.children.append(xvfb)
                return f":{display}"
            xvfb.kill()
            xvfb.wait()
        raise RuntimeError(f"Xvfb did not start: {open(self.x_log).read()[-2000:]}")

    @staticmethod
    def _x_socket_accepts(display, abstract=False):
        path = f"/tmp/.X11-unix/X{display}"
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            probe.connect(("\0" + path) if abstract else path)
            return True
        except OSError:
            return False
        finally:
            probe.close()

    @staticmethod
    def _write(path, text):
        with open(path, "w") as handle:
            handle.write(text)

    def write_app(self, app_id, types, name=None, icon="accessories-text-editor"):
        self._write(os.path.join(self.xdg["XDG_DATA_HOME"], "applications", app_id + ".desktop"),
                    f"[Desktop Entry]\nType=Application\nName={name or app_id.split('.')[-1]}\nExec=/bin/true %U\n"
                    f"Icon={icon}\nX-UserActivityTypes={';'.join(types)};\n")

    def spawn(self, argv, **extra):
        env = dict(self.env, **extra)
        child = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                                 start_new_session=True)
        self.children.append(child)
        return child

    def gdbus(self, *args):
        """Runs `gdbus call` (or another gdbus command) on this session bus; returns its output."""
        result = subprocess.run(["gdbus", *args], env=self.env, capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"gdbus {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout.strip()

    def call(self, dest, path, method, *args):
        return self.gdbus("call", "--session", "--dest", dest, "--object-path", path, "--method", method, *args)

    def ctl(self, *args):
        result = subprocess.run([os.path.join(BUILD, "useractivityctl"), *args], env=self.env,
                                capture_output=True, text=True, timeout=60)
        if result.returncode != 0:
            raise RuntimeError(f"useractivityctl {' '.join(args)}: {result.stderr.strip()}")
        return result.stdout.strip()

    def name_has_owner(self, name):
        try:
            return self.call("org.freedesktop.DBus", "/org/freedesktop/DBus",
                             "org.freedesktop.DBus.NameHasOwner", name) == "(true,)"
        except RuntimeError:
            return False

    def get(self, dest, path, interface, prop):
        return self.call(dest, path, "org.freedesktop.DBus.Properties.Get", interface, prop)

    def close(self):
        for child in reversed(self.children):
            if child.poll() is None:
                try:
                    os.killpg(child.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for child in reversed(self.children):
            try:
                child.wait(timeout=3)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(child.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                child.wait()
        # Services the bus activated lose their bus with it and exit.
        shutil.rmtree(self.root, ignore_errors=True)
