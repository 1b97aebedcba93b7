# SPDX-License-Identifier: Apache-2.0
"""Just enough of the DevTools protocol (Chromium) and Marionette (Firefox)
to drive a headless browser from the standard library: tabs, navigation,
private windows, a script in a page."""
import base64
import json
import os
import socket
import struct
import time
import urllib.request


class WebSocket:
    """A client WebSocket (RFC 6455) for text messages, without extensions."""

    def __init__(self, url, timeout=60):
        assert url.startswith("ws://")
        host_port, _, path = url[5:].partition("/")
        host, _, port = host_port.partition(":")
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET /{path} HTTP/1.1\r\nHost: {host_port}\r\nUpgrade: websocket\r\n"
                           f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n").encode())
        response = b""
        while b"\r\n\r\n" not in response:
            chunk = self.sock.recv(4096)
            if not chunk:
                raise ConnectionError("websocket handshake: connection closed")
            response += chunk
        head, _, self.pending = response.partition(b"\r\n\r\n")
        if b" 101 " not in head.split(b"\r\n")[0]:
            raise ConnectionError(f"websocket handshake refused: {head[:200]!r}")

    def _read(self, n):
        while len(self.pending) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("websocket closed")
            self.pending += chunk
        data, self.pending = self.pending[:n], self.pending[n:]
        return data

    def send(self, text):
        payload = text.encode()
        mask = os.urandom(4)
        header = bytes([0x81])
        if len(payload) < 126:
            header += bytes([0x80 | len(payload)])
        elif len(payload) < 65536:
            header += bytes([0x80 | 126]) + struct.pack("!H", len(payload))
        else:
            header += bytes([0x80 | 127]) + struct.pack("!Q", len(payload))
        masked = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
        self.sock.sendall(header + mask + masked)

    def receive(self):
        message = b""
        while True:
            first, second = self._read(2)
            length = second & 0x7F
            if length == 126:
                length = struct.unpack("!H", self._read(2))[0]
            elif length == 127:
                length = struct.unpack("!Q", self._read(8))[0]
            data = self._read(length)
            opcode = first & 0x0F
            if opcode == 0x8:
                raise ConnectionError("websocket closed by the browser")
            if opcode in (0x9, 0xA):
                continue
            message += data
            if first & 0x80:
                return message.decode()

    def close(self):
        self.sock.close()


class DevTools:
    """Chromium's DevTools protocol over the browser target's WebSocket."""

    def __init__(self, port, timeout=60):
        deadline = time.time() + timeout
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/version", timeout=5) as r:
                    url = json.load(r)["webSocketDebuggerUrl"]
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        self.ws = WebSocket(url, timeout=timeout)
        self.next_id = 0
        self.sessions = {}

    def call(self, method, params=None, session=None):
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        self.ws.send(json.dumps(message))
        while True:
            reply = json.loads(self.ws.receive())
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})

    def new_tab(self, url, context=None, new_window=False):
        params = {"url": url, "newWindow": new_window}
        if context:
            params["browserContextId"] = context
        return self.call("Target.createTarget", params)["targetId"]

    def activate(self, target):
        self.call("Target.activateTarget", {"targetId": target})

    def session(self, target):
        if target not in self.sessions:
            self.sessions[target] = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        return self.sessions[target]

    def navigate(self, target, url):
        self.call("Page.navigate", {"url": url}, session=self.session(target))

    def evaluate(self, target, expression):
        result = self.call("Runtime.evaluate", {"expression": expression, "awaitPromise": True, "returnByValue": True},
                           session=self.session(target))
        return result.get("result", {}).get("value")

    def targets(self):
        return self.call("Target.getTargets")["targetInfos"]

    def private_context(self):
        return self.call("Target.createBrowserContext")["browserContextId"]

    def close_browser(self):
        try:
            self.call("Browser.close")
        except (ConnectionError, OSError):
            pass


class Marionette:
    """Firefox's Marionette protocol: length-prefixed JSON over TCP."""

    def __init__(self, port, timeout=90):
        deadline = time.time() + timeout
        while True:
            try:
                self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.3)
        self.buffer = b""
        self._read_message()  # the server's hello
        self.next_id = 0
        self.call("WebDriver:NewSession", {"capabilities": {}})

    def _read_message(self):
        while b":" not in self.buffer:
            self.buffer += self._recv()
        length, _, rest = self.buffer.partition(b":")
        self.buffer = rest
        while len(self.buffer) < int(length):
            self.buffer += self._recv()
        data, self.buffer = self.buffer[:int(length)], self.buffer[int(length):]
        return json.loads(data)

    def _recv(self):
        chunk = self.sock.recv(65536)
        if not chunk:
            raise ConnectionError("marionette closed")
        return chunk

    def call(self, command, params=None):
        self.next_id += 1
        data = json.dumps([0, self.next_id, command, params or {}]).encode()
        self.sock.sendall(str(len(data)).encode() + b":" + data)
        while True:
            reply = self._read_message()
            if reply[0] == 1 and reply[1] == self.next_id:
                if reply[2]:
                    raise RuntimeError(f"{command}: {reply[2]}")
                return reply[3]

    def handle(self):
        return self.call("WebDriver:GetWindowHandle")["value"]

    def new_tab(self, url, private=False, window=False):
        handle = self.call("WebDriver:NewWindow", {"type": "window" if window else "tab", "private": private, "focus": True})["handle"]
        self.switch(handle)
        self.navigate(url)
        return handle

    def switch(self, handle):
        self.call("WebDriver:SwitchToWindow", {"handle": handle, "focus": True})

    def navigate(self, url):
        self.call("WebDriver:Navigate", {"url": url})

    def handles(self):
        return self.call("WebDriver:GetWindowHandles")

    def open_privileged_tab(self, url):
        """Opens a tab WebDriver:Navigate refuses (an extension's page) from the browser's own chrome."""
        before = set(self.handles())
        self.call("Marionette:SetContext", {"value": "chrome"})
        try:
            self.execute("gBrowser.selectedTab = gBrowser.addTab(arguments[0], "
                         "{triggeringPrincipal: Services.scriptSecurityManager.getSystemPrincipal()});", [url])
        finally:
            self.call("Marionette:SetContext", {"value": "content"})
        handle = next(iter(set(self.handles()) - before))
        self.switch(handle)
        return handle

    def execute(self, script, args=None):
        return self.call("WebDriver:ExecuteScript", {"script": script, "args": args or []}).get("value")

    def quit(self):
        try:
            self.call("Marionette:Quit", {"flags": ["eForceQuit"]})
        except (ConnectionError, OSError, RuntimeError):
            pass
