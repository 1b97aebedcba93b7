// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// The signal that asked a long-running command to stop (0: none yet).
///
/// A handler may only touch async-signal-safe state; an atomic store is.
/// Commands poll it between bounded waits on the bus (at most 200 ms), so
/// Ctrl-C ends them promptly and cleanly: the live activity is invalidated
/// and output is flushed, instead of the process dying mid-write.
let stopSignal = Atomic<Int32>(0)

enum Interrupts {
    /// Routes SIGINT and SIGTERM to ``stopSignal``.
    static func install() {
        for signalNumber in [SIGINT, SIGTERM] {
            var action = sigaction()
            action.__sigaction_handler.sa_handler = { received in stopSignal.store(received, ordering: .relaxed) }
            sigemptyset(&action.sa_mask)
            action.sa_flags = 0
            sigaction(signalNumber, &action, nil)
        }
    }

    static var stopRequested: Bool { stopSignal.load(ordering: .relaxed) != 0 }
}
