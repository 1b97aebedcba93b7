# SPDX-License-Identifier: Apache-2.0
# A paired device turned hostile (HostilePairedPeerTests): sends the frames it
# is given (hex, comma-separated, `-` for none) after the hellos and answers
# the first fetch it receives with the frame of its fifth argument, and sends
# the frame of its sixth (when given) once a fetch reply arrives; its seventh
# (when given) is the seconds it waits between two frames it sends.
# Lines: `HELLO`, `FRAME <kind>` for each frame the daemon sends, `CLOSED`.
import sys
import time
import handoff_peer

port, identity, hello, sends, reply = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
after_reply = sys.argv[6] if len(sys.argv) > 6 else "-"
pace = float(sys.argv[7]) if len(sys.argv) > 7 else 0
try:
    link = handoff_peer.connect_paired(port, identity)
    link.read_frame()
    print("HELLO", flush=True)
    link.send_hex(hello)
    if sends != "-":
        for part in sends.split(","):
            link.send_hex(part)
            if pace > 0:
                time.sleep(pace)
    answered = False
    while True:
        kind = link.read_frame()[0]
        print("FRAME %d" % kind, flush=True)
        if kind == 5 and reply != "-" and not answered:
            answered = True
            link.send_hex(reply)
        if kind == 6 and after_reply != "-":
            link.send_hex(after_reply)
            after_reply = "-"
except handoff_peer.LINK_ERRORS:
    pass
print("CLOSED", flush=True)
