// SPDX-License-Identifier: Apache-2.0
import CGLib
#if canImport(Glibc)
import Glibc
#endif
import GLibSupport
import HandoffCore
import Logging

/// The listening socket, accepting on the GLib main loop.
///
/// Not a `GSocketService`: when `accept` fails, GIO's service logs a warning
/// and accepts again at once; out of descriptors (`EMFILE`, `ENFILE`) the
/// socket stays readable, so it spins, logging thousands of lines a second,
/// until something else that needs a descriptor aborts the process. Here a
/// failed accept stops watching the socket for a while (``AcceptBackoff``),
/// with one log line per pause, and the scheduler resumes it; connections
/// wait in the kernel's backlog meanwhile.
///
/// It pauses before that too: the kernel gives an accepted connection the
/// lowest free descriptor, so its number says how many are in use at
/// least; one within ``headroom(limit:)`` of the process's limit is closed
/// at once and accepting pauses, leaving the rest to what the daemon needs
/// them for (its bus, TLS threads' wake-ups, files, paired devices). GLib
/// aborts when it cannot make a wake-up pipe.
final class ConnectionListener {
    /// Connections the kernel queues while the daemon is not accepting.
    static let backlog: Int32 = 128
    /// Accepted per wake-up, so that a burst does not hold up the rest of the
    /// loop: between two batches a paired device's frames and the bus go first.
    static let acceptsPerWakeup = 16
    /// New connections, and strangers' until their ClientHello is there, wait
    /// while the bus and established links have something ready: under a
    /// flood of connections, a paired device's frames go first.
    static let priority = G_PRIORITY_LOW

    let port: UInt16
    private let socket: GObjectRef
    private let loop: MainLoop
    private let scheduler: Scheduler
    private let log: Logger
    private let onConnection: (UnsafeMutableRawPointer) -> Void
    private var watch: GLibSource?
    private var resume: ScheduledWork?
    private var backoff = AcceptBackoff()
    /// Accepted descriptors from this number on are closed at once.
    private let highestDescriptor: Int32

    /// Descriptors kept free of connections: an eighth of the limit, at least 16.
    static func headroom(limit: Int) -> Int { max(16, limit / 8) }

    /// Listens on `host:port` (port 0: any free one); `onConnection` gets each
    /// accepted `GSocketConnection`, to retain if it keeps it.
    init(host: String, port: UInt16, loop: MainLoop, scheduler: Scheduler, log: Logger,
         onConnection: @escaping (UnsafeMutableRawPointer) -> Void) throws {
        guard let address = g_inet_socket_address_new_from_string(host, UInt32(port)) else {
            throw HandoffError("InvalidArgument", "cannot listen on \(host):\(port)")
        }
        defer { g_object_unref(address) }
        let family = g_socket_address_get_family(gcast(UnsafeMutableRawPointer(address)))
        let raw = try gioCall("g_socket_new") { g_socket_new(family, G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, $0) }
        socket = GObjectRef(taking: UnsafeMutableRawPointer(raw))
        g_socket_set_listen_backlog(raw, Self.backlog)
        _ = try gioCall("g_socket_bind") { g_socket_bind(raw, gcast(UnsafeMutableRawPointer(address)), CGLIB_TRUE, $0) != 0 ? true : nil }
        _ = try gioCall("g_socket_listen") { g_socket_listen(raw, $0) != 0 ? true : nil }
        g_socket_set_blocking(raw, CGLIB_FALSE)
        let local = try gioCall("g_socket_get_local_address") { g_socket_get_local_address(raw, $0) }
        self.port = g_inet_socket_address_get_port(gcast(UnsafeMutableRawPointer(local)))
        g_object_unref(local)
        self.loop = loop
        self.scheduler = scheduler
        self.log = log
        self.onConnection = onConnection
        var limit = rlimit()
        let soft = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 ? Int(clamping: limit.rlim_cur) : 1024
        highestDescriptor = Int32(clamping: soft - Self.headroom(limit: soft))
        startWatching()
    }

    deinit { stop() }

    func stop() {
        watch?.cancel()
        watch = nil
        resume?.cancel()
        resume = nil
        g_socket_close(socket.as(GSocket.self), nil)
    }

    private func startWatching() {
        watch = loop.onFileDescriptor(g_socket_get_fd(socket.as(GSocket.self)), condition: G_IO_IN, nested: .skipped,
                                      priority: Self.priority) { [weak self] _ in
            self?.acceptWaiting() ?? false
        }
    }

    /// Accepts what the backlog holds; false (stop watching) when accepting failed and is paused.
    private func acceptWaiting() -> Bool {
        for _ in 0..<Self.acceptsPerWakeup {
            let accepted: UnsafeMutablePointer<GSocket>
            do {
                accepted = try gioCall("g_socket_accept") { g_socket_accept(socket.as(GSocket.self), nil, $0) }
            } catch let failure where failure.wouldBlock {
                return true
            } catch {
                pause(because: error.message)
                return false
            }
            if g_socket_get_fd(accepted) >= highestDescriptor {
                g_object_unref(accepted)
                pause(because: "descriptors are running low")
                return false
            }
            backoff.succeeded()
            let connection = g_socket_connection_factory_create_connection(accepted)!
            g_object_unref(accepted)
            onConnection(UnsafeMutableRawPointer(connection))
            g_object_unref(connection)
        }
        return true
    }

    /// Stops accepting for a while: out of descriptors, accepting again at once would fail again.
    private func pause(because reason: String) {
        let milliseconds = backoff.failed()
        log.warning("not accepting connections: \(reason); accepting again in \(milliseconds) ms (pause \(backoff.pauses))")
        watch?.cancel()
        watch = nil
        resume = scheduler.after(milliseconds: milliseconds) { [weak self] in
            guard let self else { return }
            self.resume = nil
            self.startWatching()
        }
    }
}

/// Whether the first TLS record (a ClientHello) has arrived whole on `fd`,
/// looked at without taking it from the socket. GIO runs a server handshake
/// on a pool thread that blocks on every read, so a client that sends
/// nothing, or a byte a second, would hold a thread until the handshake
/// deadline; waiting on the main loop for the whole record first holds none.
/// `SO_RCVLOWAT` keeps the socket from polling readable before the bytes
/// needed are there, so a slow client does not wake the loop byte by byte.
enum ClientHelloGate {
    enum State { case waiting, complete, closed }

    /// TLS record header: type, version (2 bytes), length (2 bytes).
    static let headerBytes = 5
    /// A record's body is at most 2^14 bytes (plus expansion for protected records).
    static let largestRecord = headerBytes + 16384 + 256

    static func state(of fd: Int32) -> State {
        var header = [UInt8](repeating: 0, count: headerBytes)
        let peeked = recv(fd, &header, headerBytes, Int32(MSG_PEEK | MSG_DONTWAIT))
        if peeked == 0 { return .closed }
        if peeked < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR { return .closed }
        var available: Int32 = 0
        if peeked > 0 { guard ioctl(fd, UInt(FIONREAD), &available) == 0 else { return .closed } }
        let needed = peeked < headerBytes ? headerBytes : min(headerBytes + (Int(header[3]) << 8 | Int(header[4])), largestRecord)
        var mark: Int32 = 0
        var size = socklen_t(MemoryLayout<Int32>.size)
        getsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &mark, &size)
        if Int(available) >= needed {
            var one: Int32 = 1
            setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &one, socklen_t(MemoryLayout<Int32>.size))
            return .complete
        }
        // Readable with the mark already at what is needed, yet less is there: the peer closed.
        if Int(mark) == needed { return .closed }
        mark = Int32(needed)
        setsockopt(fd, SOL_SOCKET, SO_RCVLOWAT, &mark, socklen_t(MemoryLayout<Int32>.size))
        return .waiting
    }
}
