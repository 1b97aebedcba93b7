// SPDX-License-Identifier: Apache-2.0
import GLibSupport
#if canImport(Glibc)
import Glibc
#endif

/// Writes to the browser without ever blocking: what the pipe does not take
/// now waits for the descriptor to become writable. A browser that stops
/// reading loses replies beyond ``limit`` instead of stalling the host.
public final class OutputQueue {
    public static let limit = 1 << 20

    private let fd: Int32
    private let loop: MainLoop
    private var pending: [UInt8] = []
    private var watch: GLibSource?
    public private(set) var droppedCount = 0

    /// `fd` is made non-blocking.
    public init(fd: Int32, loop: MainLoop) {
        self.fd = fd
        self.loop = loop
        let flags = fcntl(fd, F_GETFL)
        if flags >= 0 { _ = fcntl(fd, F_SETFL, flags | O_NONBLOCK) }
    }

    /// Queues a whole framed message (all of it or, past the limit, none of it).
    public func write(_ bytes: [UInt8]) {
        guard pending.count + bytes.count <= Self.limit else {
            droppedCount += 1
            return
        }
        pending += bytes
        if watch == nil { drain() }
    }

    public var pendingCount: Int { pending.count }

    private func drain() {
        while !pending.isEmpty {
            let written = pending.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
            if written > 0 {
                pending.removeFirst(written)
                continue
            }
            if written < 0 && errno == EINTR { continue }
            if written < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                if watch == nil {
                    watch = loop.onFileDescriptor(fd, events: .writable) { [weak self] in
                        guard let self else { return false }
                        self.watch = nil
                        self.drain()
                        return false
                    }
                }
                return
            }
            // The browser went away: nothing more can be delivered.
            pending.removeAll()
            return
        }
    }
}
