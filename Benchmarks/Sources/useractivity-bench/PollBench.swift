// SPDX-License-Identifier: Apache-2.0
import CGLib
import GLibSupport
import Glibc

/// One main-loop wake-up per round, shaped like a D-Bus connection's: a byte
/// arrives on a socket, the loop wakes and dispatches the read watch, which
/// reads it. (libdbus writes a reply as it queues it; its write watch is
/// enabled only when the socket does not take the message at once, which a
/// daemon answering small calls almost never sees, so no round toggles it.)
/// `bench/callgrind-libcompare.sh` counts the instructions of each way under
/// callgrind:
/// - `glib`: a GLib fd source (`g_unix_fd_source_new`) that may recurse, as
///   the libdbus bridge makes it;
/// - `glib-blocked`: the same source without recursion, which GLib blocks
///   while it dispatches (and wakes its own loop to block and unblock);
/// - `empty`: the same write and read without a main loop (the shared cost).
enum PollBench {
    static let usage = "useractivity-bench --poll glib|glib-blocked|empty COUNT"

    static func run(_ arguments: [String]) -> Int32 {
        guard arguments.count == 2, let count = Int(arguments[1]), count >= 0 else {
            note(usage)
            return 2
        }
        var pair: [Int32] = [-1, -1]
        guard socketpair(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0, &pair) == 0 else {
            note("useractivity-bench --poll: socketpair failed")
            return 1
        }
        let (reading, writing) = (pair[0], pair[1])
        defer { close(reading); close(writing) }
        let loop = MainLoop.withNewContext()
        var byte: UInt8 = 0
        var received = 0

        switch arguments[0] {
        case "glib", "glib-blocked":
            let readWatch = loop.onFileDescriptor(reading, condition: G_IO_IN, nested: arguments[0] == "glib" ? .allowed : .blocked) { _ in
                received += read(reading, &byte, 1)
                return true
            }
            for _ in 0..<count {
                _ = write(writing, &byte, 1)
                loop.iterate(mayBlock: true)
            }
            readWatch.cancel()
        case "empty":
            for _ in 0..<count {
                _ = write(writing, &byte, 1)
                received += read(reading, &byte, 1)
            }
        default:
            note(usage)
            return 2
        }
        guard received == count else {
            note("useractivity-bench --poll: \(received) of \(count) wake-ups read their byte")
            return 1
        }
        return 0
    }
}
