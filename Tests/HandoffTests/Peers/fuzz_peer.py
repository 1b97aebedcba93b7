# SPDX-License-Identifier: Apache-2.0
# The link end of the handoff fuzzer (HandoffFuzzTests): connects to a daemon
# as a paired device, once per input, and sends what the Swift side built.
# Commands arrive one per line on a FIFO (its path is the second argument):
#   RUN <identity> <sends> <replies>   connect, hellos, send each chunk (from the
#       first that names the fetch's handoff id, after the fetch's reply), then the
#       sentinel; `replies` (or `-`) answer the daemon's next fetch, their
#       request 0xDEADBEEF replaced by the fetch's. With replies the peer says
#       `READY` once the sentinel came back and waits for the fetch (or `SKIP`).
#   PROBE <identity>                   a fresh valid link: hellos, the sentinel.
# Chunks are hex, comma-separated. Answers, one line each:
#   RESULT <answered|closed|open|refused> <kinds the daemon sent, comma-separated>
#   PROBE <ok|failed> <milliseconds or why>
import os
import select
import sys
import time
import handoff_peer

port, fifo, hello, sentinel = int(sys.argv[1]), sys.argv[2], bytes.fromhex(sys.argv[3]), bytes.fromhex(sys.argv[4])
SENTINEL_REQUEST = bytes.fromhex(sys.argv[5])  # the sentinel fetch's request as its reply carries it (`vu` + 4 bytes)
MAGIC = b"vu" + (0xDEADBEEF).to_bytes(4, "little")
# Where a seed names its fetch: the handoff id the daemon's fetch reply gives
# goes in its place (both 32 bytes, so every length stays right).
HANDOFF_PLACEHOLDER = b"@handoff" + b"@" * 24
QUIET = 2.0  # seconds after the sentinel was sent until a link the daemon keeps open is left
FETCH_WAIT = 8.0  # seconds after READY until the daemon's fetch is given up
commands = os.open(fifo, os.O_RDONLY)
pending = b""


def command_line(timeout):
    """The next command, or None after `timeout` seconds (None: wait forever)."""
    global pending
    deadline = None if timeout is None else time.time() + timeout
    while b"\n" not in pending:
        wait = None if deadline is None else max(0, deadline - time.time())
        ready, _, _ = select.select([commands], [], [], wait)
        if not ready:
            return None
        chunk = os.read(commands, 1 << 20)
        if not chunk:
            sys.exit(0)
        pending += chunk
    line, pending = pending.split(b"\n", 1)
    return line.decode()


def chunks(text):
    return [] if text == "-" else [bytes.fromhex(part) for part in text.split(",")]


def request_of(body):
    """The `request` value of a frame body, as its `vu` + 4 bytes."""
    at = body.find(b"s\x07requestvu")
    return body[at + 9:at + 15] if at >= 0 else None


def handoff_of(body):
    """The `handoff` id of a fetch reply (`s` + its 32-byte length + 32 bytes), or None."""
    at = body.find(b"s\x07handoffvs\x20")
    return body[at + 12:at + 44] if at >= 0 else None


def next_frame(link, deadline, watch_commands=False):
    """The next frame; None once `deadline` (a time.time()) passed or, when
    `watch_commands`, on a SKIP command; raises when the link ends."""
    while link.tls.pending() == 0:
        watched = [link.tls, commands] if watch_commands else [link.tls]
        ready, _, _ = select.select(watched, [], [], max(0, deadline - time.time()))
        if not ready:
            return None
        if link.tls in ready:
            break
        if command_line(0) == "SKIP":
            return None
    return link.read_frame()


def run(identity, sends, replies):
    kinds = []
    try:
        link = handoff_peer.connect_paired(port, identity, timeout=10)
    except handoff_peer.LINK_ERRORS:
        return "refused", kinds
    try:
        link.settimeout(10)
        try:
            link.read_frame()
        except handoff_peer.LINK_ERRORS:
            return "refused", kinds
        link.send(hello)
        waiting = list(sends)
        while waiting and HANDOFF_PLACEHOLDER not in waiting[0]:
            link.send(waiting.pop(0))
        if waiting:
            # A report on the fetch: it must name the id the fetch's reply gave.
            handoff = None
            deadline = time.time() + QUIET
            while handoff is None:
                frame = next_frame(link, deadline)
                if frame is None:
                    break
                kinds.append(frame[0])
                if frame[0] == 6:
                    handoff = handoff_of(frame)
            for chunk in waiting:
                link.send(chunk.replace(HANDOFF_PLACEHOLDER, handoff) if handoff else chunk)
        link.send(sentinel)
        waiting_for_fetch = bool(replies)
        ready = False
        # Deadlines, not silences: the daemon's keepalives must not keep a link waiting.
        deadline = time.time() + QUIET
        while True:
            frame = next_frame(link, deadline, watch_commands=ready and waiting_for_fetch)
            if frame is None:
                return "open", kinds
            kinds.append(frame[0])
            if frame[0] == 7 and request_of(frame) == SENTINEL_REQUEST:
                if not waiting_for_fetch:
                    return "answered", kinds
                if not ready:
                    ready = True
                    deadline = time.time() + FETCH_WAIT
                    print("READY", flush=True)
            elif frame[0] == 5 and waiting_for_fetch and ready:
                waiting_for_fetch = False
                request = request_of(frame) or MAGIC
                for chunk in replies:
                    link.send(chunk.replace(MAGIC, request))
                link.send(sentinel)
                deadline = time.time() + QUIET
    except handoff_peer.LINK_ERRORS:
        return "closed", kinds
    finally:
        link.close()


def probe(identity):
    started = time.time()
    try:
        link = handoff_peer.connect_paired(port, identity, timeout=10)
    except handoff_peer.LINK_ERRORS as error:
        return "failed", "connect: %s" % error
    try:
        link.settimeout(10)
        link.read_frame()
        link.send(hello)
        link.send(sentinel)
        while True:
            frame = link.read_frame()
            if frame[0] == 7 and request_of(frame) == SENTINEL_REQUEST:
                return "ok", "%.1f" % ((time.time() - started) * 1000)
    except handoff_peer.LINK_ERRORS as error:
        return "failed", "%s: %s" % (type(error).__name__, error)
    finally:
        link.close()


print("STARTED", flush=True)
while True:
    words = command_line(None).split(" ")
    if words[0] == "RUN":
        outcome, kinds = run(words[1], chunks(words[2]), chunks(words[3]))
        print("RESULT %s %s" % (outcome, ",".join(map(str, kinds)) or "-"), flush=True)
    elif words[0] == "PROBE":
        print("PROBE %s %s" % probe(words[1]), flush=True)
