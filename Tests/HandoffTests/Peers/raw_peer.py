# SPDX-License-Identifier: Apache-2.0
# A TLS client that is not a handoff daemon, with a key of its own (made by
# openssl), for HostilePeerTests: it does one bad thing and reports what the
# daemon did. Lines: `HANDSHAKE <version>`, `HELLO` (the daemon's first frame
# arrived), `CLOSED` (the daemon ended the connection).
import struct
import sys
import handoff_peer
from handoff_peer import frame

port, mode, cert, key = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4]
try:
    link = handoff_peer.connect_tls(port, cert, key, timeout=30, tls13=False, max_tls12=(mode == "tls12"))
    print("HANDSHAKE " + link.version(), flush=True)
    link.read_frame()
    print("HELLO", flush=True)
    if mode == "advert":
        link.send(frame(4))
    elif mode == "oversize":
        link.send(struct.pack(">I", 1 << 20) + bytes([4]) + b"x" * 1000)
    elif mode == "garbage":
        link.send(frame(200, b"\xff\xfe"))
    elif mode == "stall":
        link.send(struct.pack(">I", 100) + bytes([1]) + b"partial")
    elif mode == "hello":
        link.send(frame(1))
    elif mode == "trickle":
        for byte in frame(4):
            link.send(bytes([byte]))
    while True:
        if not link.tls.recv(4096):
            break
except handoff_peer.LINK_ERRORS:
    pass
print("CLOSED", flush=True)
