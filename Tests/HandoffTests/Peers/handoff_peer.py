# SPDX-License-Identifier: Apache-2.0
"""The frame format and TLS of useractivity-handoffd, for the test peers.

A frame is a 4-byte big-endian length, then that many bytes: a kind byte and
the body. The tests build bodies with the Swift encoder (HandoffCore) and
hand them over as hex; this module only moves frames.

How a paired device authenticates lives in `connect_paired` alone.
"""
import os
import socket
import ssl
import struct

# An empty a{sv} body as the Swift codec writes it (version 1, `{`, "s", "v", 0 entries).
EMPTY_BODY = bytes([1, 0x7B, 1, 0x73, 1, 0x76, 0])


def frame(kind, body=EMPTY_BODY):
    """A frame with its length prefix."""
    return struct.pack(">I", len(body) + 1) + bytes([kind]) + body


class Link:
    """A TLS connection to a daemon that reads and writes whole frames."""

    def __init__(self, tls):
        self.tls = tls

    def read_exact(self, count):
        data = b""
        while len(data) < count:
            chunk = self.tls.recv(count - len(data))
            if not chunk:
                raise ConnectionResetError("eof")
            data += chunk
        return data

    def read_frame(self):
        """The next frame without its length prefix: kind byte, then body."""
        return self.read_exact(struct.unpack(">I", self.read_exact(4))[0])

    def send(self, data):
        self.tls.sendall(data)

    def send_hex(self, text):
        self.tls.sendall(bytes.fromhex(text))

    def settimeout(self, seconds):
        self.tls.settimeout(seconds)

    def version(self):
        return self.tls.version()

    def close(self):
        try:
            self.tls.close()
        except OSError:
            pass


def connect_tls(port, cert, key, host="127.0.0.1", timeout=60, tls13=True, max_tls12=False):
    """A TLS client with the given certificate and key (the daemon checks keys, not chains)."""
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    context.check_hostname = False
    context.verify_mode = ssl.CERT_NONE
    if tls13:
        context.minimum_version = ssl.TLSVersion.TLSv1_3
    if max_tls12:
        context.maximum_version = ssl.TLSVersion.TLSv1_2
    context.load_cert_chain(cert, key)
    raw = socket.create_connection((host, port), timeout=timeout)
    try:
        return Link(context.wrap_socket(raw))
    except BaseException:
        raw.close()
        raise


def connect_paired(port, identity, host="127.0.0.1", timeout=60):
    """Connects as a paired device. `identity` is that device's handoff state
    directory (`$XDG_STATE_HOME/useractivity/handoff`): its key and
    certificate are what the other daemon pinned at pairing."""
    return connect_tls(port, os.path.join(identity, "certificate.pem"), os.path.join(identity, "key.pem"),
                       host=host, timeout=timeout)


# What ends a link from the peer's side: the daemon closed it, or TLS or the socket failed.
LINK_ERRORS = (ConnectionResetError, ssl.SSLError, OSError)
