# SPDX-License-Identifier: Apache-2.0
# A paired device asking for documents itself (FileTransferTests): fetches an
# activity and, once answered, sends the file requests it is given (hex,
# comma-separated), after the file named by its last argument exists when
# there is one. Lines: `HELLO`, `FRAME <kind> <hex of the frame>` for each
# frame received, `CLOSED`.
import os
import sys
import time
import handoff_peer

port, identity, hello, fetch, requests = int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]
flag = sys.argv[6] if len(sys.argv) > 6 else None
try:
    link = handoff_peer.connect_paired(port, identity)
    link.read_frame()
    print("HELLO", flush=True)
    link.send_hex(hello)
    link.send_hex(fetch)
    while True:
        received = link.read_frame()
        print("FRAME %d %s" % (received[0], received.hex()), flush=True)
        if received[0] == 6:
            while flag and not os.path.exists(flag):
                time.sleep(0.02)
            for part in requests.split(","):
                link.send_hex(part)
except handoff_peer.LINK_ERRORS:
    pass
print("CLOSED", flush=True)
