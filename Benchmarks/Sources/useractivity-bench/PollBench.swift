// SPDX-License-Identifier: Apache-2.0
import CGLib
import GLibSupport
import Glibc

/// One main-loop wake-up per round, shaped like a D-Bus connection's: a byte
/// arrives on a socket, the loop wakes and dispatches the read watch, which
/// reads it and, as libdbus does when it queues a reply and writes it at
/// once, enables and disables the write watch. `bench/callgrind-libcompare.sh`
/// counts the instructions of each way under callgrind:
/// - `glib`: GLib's fd sources (`g_unix_fd_source_new`), the write watch
///   created and destroyed per toggle, as the libdbus bridge does;
/// - `pollsource`: both watches are the retired hand-written source
///   (``RetiredPollSource``), toggling rewrites what it polls;
/// - `empty`: the same write and read without a main loop (the shared cost).
enum PollBench {
    static let usage = "useractivity-bench --poll pollsource|glib|empty COUNT"

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
        case "pollsource":
            let writeWatch = RetiredPollSource(fileDescriptor: reading, condition: G_IO_OUT, enabled: false, loop: loop) { _ in true }
            let readWatch = RetiredPollSource(fileDescriptor: reading, condition: G_IO_IN, loop: loop) { _ in
                received += read(reading, &byte, 1)
                writeWatch.update(enabled: true, condition: G_IO_OUT)
                writeWatch.update(enabled: false, condition: G_IO_OUT)
                return true
            }
            for _ in 0..<count {
                _ = write(writing, &byte, 1)
                loop.iterate(mayBlock: true)
            }
            readWatch.cancel()
            writeWatch.cancel()
        case "glib":
            let readWatch = loop.onFileDescriptor(reading, condition: G_IO_IN) { _ in
                received += read(reading, &byte, 1)
                loop.onFileDescriptor(reading, condition: G_IO_OUT) { _ in true }.cancel()
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
