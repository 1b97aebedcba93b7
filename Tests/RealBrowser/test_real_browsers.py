#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""The extension and useractivity-browser-host in real headless browsers
(Debian's chromium and firefox-esr), against the built useractivityd on a
private session bus, with pages from a loopback HTTP server.

Each browser gets its own bus, XDG directories, HOME and profile, all in a
temporary directory removed afterwards. Run from scripts/test.sh, or:

    python3 Tests/RealBrowser/test_real_browsers.py [-v] [RealBrowserTests.test_chromium]

USERACTIVITY_BUILD_DIR names the build (default .build/debug).
"""
import http.server
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import unittest
import zipfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from drivers import DevTools, Marionette  # noqa: E402

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))
BUILD = os.environ.get("USERACTIVITY_BUILD_DIR", os.path.join(ROOT, ".build", "debug"))
EXTENSION = os.path.join(ROOT, "browser", "extension")
HOST_NAME = "org.example.useractivity"
GECKO_ID = "useractivity@example.org"
# Fixed by "key" in manifest.json (browser/extension-id.txt).
with open(os.path.join(ROOT, "browser", "extension-id.txt")) as _ids:
    CHROMIUM_ID = next(line.split(":", 1)[1].strip() for line in _ids if line.startswith("chromium-id:"))
FIREFOX_UUID = "2f1f6c44-8d3e-4c38-9a53-6d2f0b7a1e15"
BROWSING_WEB = "org.example.UserActivity.browsing-web"
SERVICE = "org.example.UserActivity"


def wait_until(condition, timeout=45, interval=0.1):
    deadline = time.time() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.time() > deadline:
            return value
        time.sleep(interval)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PAGES = {
    "/a.html": "<title>Page A</title><p>A",
    "/b.html": "<title>Page B</title><p>B",
    "/c.html": "<title>Page C</title><p>C",
    "/after.html": "<title>Sentinel</title><p>after",
    "/after2.html": "<title>Sentinel 2</title><p>after",
    "/secret.html": "<title>Secret page</title><p>excluded",
    "/private.html": "<title>Private page</title><p>private",
}


class Site:
    """Pages on a loopback port, for 127.0.0.1 and localhost alike."""

    def __init__(self):
        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):
                body = PAGES.get(self.path.split("?")[0])
                if body is None:
                    self.send_error(404)
                    return
                data = ("<!DOCTYPE html><meta charset=utf-8>" + body).encode()
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()

    def url(self, path, host="127.0.0.1"):
        return f"http://{host}:{self.port}{path}"

    def close(self):
        self.server.shutdown()
        self.server.server_close()


# A listener on the private bus: Subscribe, then stay connected.
SUBSCRIBER = """
import sys
from gi.repository import Gio, GLib
flags = Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION
bus = Gio.DBusConnection.new_for_address_sync(sys.argv[1], flags, None, None)
bus.call_sync("org.example.UserActivity", "/org/example/UserActivity", "org.example.UserActivity",
              "Subscribe", None, None, Gio.DBusCallFlags.NONE, 30000, None)
print("subscribed", flush=True)
GLib.MainLoop().run()
"""


class Desktop:
    """A private session: XDG directories with the browsers' desktop entries,
    a dbus-daemon that activates the built useractivityd, a monitor of what
    the service announces."""

    def __init__(self):
        self.root = tempfile.mkdtemp(prefix="ua-browser-")
        self.home = os.path.join(self.root, "home")
        data = os.path.join(self.root, "data")
        apps = os.path.join(data, "applications")
        os.makedirs(apps)
        os.makedirs(self.home)
        for app, name in (("chromium", "Chromium"), ("firefox-esr", "Firefox ESR")):
            with open(os.path.join(apps, app + ".desktop"), "w") as f:
                f.write(f"[Desktop Entry]\nType=Application\nName={name}\nExec=/bin/true %U\n"
                        "MimeType=text/html;x-scheme-handler/http;x-scheme-handler/https;\n")
        services = os.path.join(self.root, "services")
        os.makedirs(services)
        with open(os.path.join(services, SERVICE + ".service"), "w") as f:
            f.write(f"[D-BUS Service]\nName={SERVICE}\nExec={os.path.join(BUILD, 'useractivityd')}\n")
        config = os.path.join(self.root, "session.conf")
        with open(config, "w") as f:
            f.write(f"""<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig><type>session</type><listen>unix:dir={self.root}</listen><servicedir>{services}</servicedir>
<policy context="default"><allow send_destination="*" eavesdrop="true"/><allow eavesdrop="true"/><allow own="*"/></policy>
</busconfig>
""")
        self.env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home,
            "XDG_DATA_HOME": data, "XDG_DATA_DIRS": data,
            "XDG_CONFIG_HOME": os.path.join(self.root, "config"), "XDG_STATE_HOME": os.path.join(self.root, "state"),
            "XDG_CACHE_HOME": os.path.join(self.root, "cache"), "XDG_RUNTIME_DIR": self.root,
            "LANG": "C.UTF-8",
        }
        self.bus = subprocess.Popen(["dbus-daemon", "--nofork", "--print-address=1", f"--config-file={config}"],
                                    stdout=subprocess.PIPE, env=self.env, start_new_session=True)
        self.address = self.bus.stdout.readline().decode().strip()
        self.env["DBUS_SESSION_BUS_ADDRESS"] = self.address
        self.monitor_log = os.path.join(self.root, "monitor.log")
        self.monitor = subprocess.Popen(["dbus-monitor", "--address", self.address, f"type='signal',sender='{SERVICE}'"],
                                        stdout=open(self.monitor_log, "w"), stderr=subprocess.DEVNULL, env=self.env)
        # The service sends its activity signals only to connections that
        # subscribed: one listener makes them visible to the monitor.
        self.subscriber = subprocess.Popen(["/usr/bin/python3", "-c", SUBSCRIBER, self.address],
                                           stdout=subprocess.PIPE, env=self.env)
        if self.subscriber.stdout.readline().strip() != b"subscribed":
            raise RuntimeError("the signal subscriber could not call Subscribe")

    def busctl(self, *args):
        result = subprocess.run(["busctl", f"--address={self.address}", "--json=short", *args],
                                capture_output=True, text=True, env=self.env, timeout=30)
        if result.returncode != 0:
            return None
        return json.loads(result.stdout)["data"]

    def current(self):
        return self.busctl("get-property", SERVICE, "/org/example/UserActivity", SERVICE, "CurrentActivity") or "/"

    def prop(self, path, name):
        return self.busctl("get-property", SERVICE, path, SERVICE + ".Activity", name)

    def current_page(self):
        path = self.current()
        if path == "/":
            return None
        return {"path": path, "type": self.prop(path, "ActivityType"), "app": self.prop(path, "AppId"),
                "url": self.prop(path, "WebpageURL"), "title": self.prop(path, "Title")}

    def announced(self):
        with open(self.monitor_log, errors="replace") as f:
            return f.read()

    def close(self):
        for process in (self.subscriber, self.monitor, self.bus):
            try:
                os.killpg(process.pid, signal.SIGTERM) if process is self.bus else process.terminate()
            except ProcessLookupError:
                pass
            process.wait(timeout=10)
        shutil.rmtree(self.root, ignore_errors=True)


def host_processes():
    out = subprocess.run(["pgrep", "-f", os.path.join(BUILD, "useractivity-browser-host")], capture_output=True, text=True)
    return [int(p) for p in out.stdout.split()]


class RealBrowserTests(unittest.TestCase):
    def setUp(self):
        for program in ("useractivityd", "useractivity-browser-host"):
            if not os.access(os.path.join(BUILD, program), os.X_OK):
                self.fail(f"{program} is not built in {BUILD}: run swift build")
        self.site = Site()
        self.desktop = Desktop()
        self.addCleanup(self.desktop.close)
        self.addCleanup(self.site.close)
        self.host_manifest = {"name": HOST_NAME, "description": "UserActivity browser host",
                              "path": os.path.join(BUILD, "useractivity-browser-host"), "type": "stdio"}

    def expect_page(self, app, path, title, same_as=None):
        url = self.site.url(path)
        page = wait_until(lambda: (p := self.desktop.current_page()) and p["url"] == url and p["title"] == title and p)
        self.assertTrue(page, f"expected {url} '{title}', the service shows {self.desktop.current_page()}")
        self.assertEqual(page["type"], BROWSING_WEB)
        self.assertEqual(page["app"], app)
        if same_as:
            self.assertEqual(page["path"], same_as, "updated in place, not a new activity")
        return page["path"]

    def expect_never_announced(self, *needles):
        log = self.desktop.announced()
        self.assertIn("Sentinel", log, "the monitor saw the service's signals")
        self.assertIn("/c.html", log, "the signals carry the pages' URLs")
        for needle in needles:
            self.assertNotIn(needle, log)

    def expect_ended(self, browser):
        self.assertTrue(wait_until(lambda: self.desktop.current() == "/"), "the activity ends with the browser")
        self.assertTrue(wait_until(lambda: browser.poll() is not None, timeout=30), "the browser exits")
        self.assertTrue(wait_until(lambda: not host_processes(), timeout=30), "the host exits with its stdin")

    def test_chromium(self):
        profile = os.path.join(self.desktop.root, "chromium")
        os.makedirs(os.path.join(profile, "NativeMessagingHosts"))
        with open(os.path.join(profile, "NativeMessagingHosts", HOST_NAME + ".json"), "w") as f:
            json.dump({**self.host_manifest, "allowed_origins": [f"chrome-extension://{CHROMIUM_ID}/"]}, f)
        port = free_port()
        browser = subprocess.Popen(
            ["chromium", "--headless=new", "--no-sandbox", "--no-first-run", "--disable-gpu", f"--user-data-dir={profile}",
             f"--load-extension={EXTENSION}", f"--remote-debugging-port={port}", self.site.url("/a.html")],
            env=self.desktop.env, stdout=subprocess.DEVNULL, stderr=open(os.path.join(self.desktop.root, "chromium.log"), "w"),
            start_new_session=True)
        self.addCleanup(lambda: browser.poll() is None and os.killpg(browser.pid, signal.SIGKILL))
        tools = DevTools(port)
        first = next(t["targetId"] for t in tools.targets() if t["type"] == "page" and t["url"].endswith("/a.html"))

        path = self.expect_page("chromium", "/a.html", "Page A")
        second = tools.new_tab(self.site.url("/b.html"))
        self.expect_page("chromium", "/b.html", "Page B", same_as=path)
        tools.activate(first)
        self.expect_page("chromium", "/a.html", "Page A", same_as=path)
        tools.navigate(first, self.site.url("/c.html"))
        self.expect_page("chromium", "/c.html", "Page C", same_as=path)

        # An excluded domain, set on the options page as a person would.
        options = tools.new_tab(f"chrome-extension://{CHROMIUM_ID}/options.html")
        # The new tab is about:blank (and "complete") until the options page has loaded.
        self.assertTrue(wait_until(lambda: tools.evaluate(
            options, "location.protocol === 'chrome-extension:' && document.readyState === 'complete'")))
        tools.evaluate(options, "document.getElementById('excluded').value = 'localhost';"
                                "document.getElementById('save').click();")
        self.assertTrue(wait_until(lambda: tools.evaluate(options, "document.getElementById('status').textContent") == "Saved."))
        tools.navigate(second, self.site.url("/secret.html", host="localhost"))
        tools.activate(second)
        # A private (off-the-record) window.
        context = tools.private_context()
        tools.new_tab(self.site.url("/private.html"), context=context, new_window=True)
        # Then a page that is published: everything before it reached the service first.
        tools.activate(first)
        tools.navigate(first, self.site.url("/after.html"))
        self.expect_page("chromium", "/after.html", "Sentinel", same_as=path)
        self.expect_never_announced("secret.html", "Secret page", "private.html", "Private page")

        tools.close_browser()
        self.expect_ended(browser)

    def test_firefox(self):
        profile = os.path.join(self.desktop.root, "firefox")
        os.makedirs(os.path.join(profile, "extensions"))
        hosts = os.path.join(self.desktop.home, ".mozilla", "native-messaging-hosts")
        os.makedirs(hosts)
        with open(os.path.join(hosts, HOST_NAME + ".json"), "w") as f:
            json.dump({**self.host_manifest, "allowed_extensions": [GECKO_ID]}, f)
        with zipfile.ZipFile(os.path.join(profile, "extensions", GECKO_ID + ".xpi"), "w") as xpi:
            for directory, _, files in os.walk(EXTENSION):
                for name in files:
                    full = os.path.join(directory, name)
                    xpi.write(full, os.path.relpath(full, EXTENSION))
        port = free_port()
        prefs = {
            "xpinstall.signatures.required": False, "extensions.autoDisableScopes": 0,
            "marionette.port": port, "browser.shell.checkDefaultBrowser": False,
            "datareporting.policy.dataSubmissionEnabled": False, "toolkit.telemetry.reportingpolicy.firstRun": False,
            "browser.startup.homepage_override.mstone": "ignore", "app.update.auto": False,
            "extensions.webextensions.uuids": json.dumps({GECKO_ID: FIREFOX_UUID}),
        }
        with open(os.path.join(profile, "user.js"), "w") as f:
            for key, value in prefs.items():
                f.write(f"user_pref({json.dumps(key)}, {json.dumps(value)});\n")
        browser = subprocess.Popen(
            ["firefox-esr", "--headless", "--no-remote", "--marionette", "--remote-allow-system-access", "--profile", profile, self.site.url("/a.html")],
            env={**self.desktop.env, "MOZ_CRASHREPORTER_DISABLE": "1"}, stdout=subprocess.DEVNULL,
            stderr=open(os.path.join(self.desktop.root, "firefox.log"), "w"), start_new_session=True)
        self.addCleanup(lambda: browser.poll() is None and os.killpg(browser.pid, signal.SIGKILL))

        path = self.expect_page("firefox-esr", "/a.html", "Page A")
        driver = Marionette(port)
        first = driver.handle()
        second = driver.new_tab(self.site.url("/b.html"))
        self.expect_page("firefox-esr", "/b.html", "Page B", same_as=path)
        driver.switch(first)
        self.expect_page("firefox-esr", "/a.html", "Page A", same_as=path)
        driver.navigate(self.site.url("/c.html"))
        self.expect_page("firefox-esr", "/c.html", "Page C", same_as=path)

        driver.open_privileged_tab(f"moz-extension://{FIREFOX_UUID}/options.html")
        self.assertTrue(wait_until(lambda: driver.execute(
            "return location.protocol === 'moz-extension:' && document.readyState === 'complete'")))
        driver.execute("document.getElementById('excluded').value = 'localhost'; document.getElementById('save').click();")
        self.assertTrue(wait_until(lambda: driver.execute("return document.getElementById('status').textContent") == "Saved."))
        driver.switch(second)
        driver.navigate(self.site.url("/secret.html", host="localhost"))
        driver.new_tab(self.site.url("/private.html"), private=True, window=True)
        driver.switch(first)
        driver.navigate(self.site.url("/after.html"))
        self.expect_page("firefox-esr", "/after.html", "Sentinel", same_as=path)
        self.expect_never_announced("secret.html", "Secret page", "private.html", "Private page")

        driver.quit()
        self.expect_ended(browser)


if __name__ == "__main__":
    unittest.main()
