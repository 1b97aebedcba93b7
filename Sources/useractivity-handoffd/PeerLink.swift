// SPDX-License-Identifier: Apache-2.0
import CGLib
#if canImport(Glibc)
import Glibc
#endif
import GLibSupport
import HandoffCore
import Logging

/// One mutual-TLS 1.3 connection to another handoff daemon, on the GLib
/// main context: handshake, pin check, frames in and out.
final class PeerLink {
    enum Role: String { case client, server }

    let role: Role
    let serial: Int
    /// host:port dialed, or the remote address of an incoming connection.
    let address: String
    /// Where its connections are counted while they authenticate
    /// (``ConnectionAdmission/group(ofHost:)``), worked out once: under a
    /// flood every new connection is weighed against all those waiting.
    private(set) lazy var admissionGroup = ConnectionAdmission.group(ofHost: hostPart(of: address))
    /// The peer's SPKI SHA-256 once the handshake finished.
    private(set) var peerKeyID: [UInt8] = []
    var peerDeviceID: String { Hex.encode(peerKeyID) }
    private(set) var channelBinding: [UInt8] = []
    /// The peer's hello arrived: the link is up.
    var helloReceived = false
    /// Dialed because DNS-SD announced the device, not because a person added its address.
    var foundByDiscovery = false
    /// Its key is pinned: all frames allowed, larger frames.
    var isPaired = false {
        didSet { updateFrameLimit() }
    }
    /// Neither end showed its long-lived key: until the client's proof is
    /// checked (``FrameKind/proof``), the server reads only a proof-sized
    /// frame (the client may first get a Discoverable device's hello).
    var awaitingProof = false {
        didSet { updateFrameLimit() }
    }
    /// The peer proved it is this paired device (``FrameKind/proof``), not by its TLS key.
    private(set) var isProven = false
    /// Client side: the paired device this link dials without showing its
    /// key, to which it proves the pair's secret.
    var provingTo: String?
    /// Server side: this connection was shown the certificate for strangers.
    var showedEphemeralCertificate = false
    /// Client side: the key the answering device must have (a paired
    /// device reached with pinned keys).
    var expectedKeyID: [UInt8]?
    /// This side sent its resolving key on this link.
    var sentPairKeys = false
    /// The `version` of the peer's hello (0 before it).
    var peerVersion: UInt32 = 0

    private func updateFrameLimit() {
        reader.limit = awaitingProof && role == .server ? FrameCodec.proofLimit
            : isPaired ? FrameCodec.pairedLimit : FrameCodec.unpairedLimit
    }

    /// The peer proved it is the paired device `keyID`: from now on it is that device.
    func identify(as keyID: [UInt8]) {
        peerKeyID = keyID
        isProven = true
        awaitingProof = false
    }
    private(set) var isClosed = false
    private var liveness: LinkLiveness

    var onEstablished: ((PeerLink) -> Void)?
    var onFrame: ((PeerLink, Frame) -> Void)?
    var onClosed: ((PeerLink, String) -> Void)?
    /// A paired device's frame that breaks the protocol (too large, not a
    /// frame): the owner drops the link and makes the device wait.
    var onProtocolError: ((PeerLink, String) -> Void)?
    /// ``nextDue`` moved outside a frame or a close (the wait after a last frame began).
    var onDeadlineChanged: ((PeerLink) -> Void)?
    /// A stream-data frame was written and fewer than
    /// ``StreamLimits/queuedDataFrames`` wait: the relays may read their apps again.
    var onDataDrained: ((PeerLink) -> Void)?

    private let log: Logger
    private let scheduler: Scheduler
    private let cancellable: GObjectRef
    private var connection: GObjectRef?
    private var tls: GObjectRef?
    private var acceptHandler: SignalHandler?
    /// Decides on the peer's key during the handshake (and again after it).
    private let acceptsKey: ([UInt8]) -> Bool
    private var reader = FrameReader(limit: FrameCodec.unpairedLimit)
    /// Which queue a frame waits in; a queue is written only when those before it are empty.
    enum Priority: Int, CaseIterable {
        /// Adverts, fetches, credits, keepalives, pairing.
        case control
        /// Continuation-stream data: adverts and fetches overtake it.
        case streamData
        /// Document transfers wait behind continuation streams too: a file
        /// of a gigabyte must not hold up what a person is watching.
        case bulk
    }
    private var queues: [[[UInt8]]] = Priority.allCases.map { _ in [] }
    var queuedDataFrames: Int { queues[Priority.streamData.rawValue].count }
    var queuedBulkFrames: Int { queues[Priority.bulk.rawValue].count }
    /// A document frame was written and few wait: transfers may read their files again.
    var onBulkDrained: ((PeerLink) -> Void)?
    /// The frame being written and how much of it the socket took.
    private var partlyWritten: (bytes: [UInt8], written: Int, queue: Priority)?
    /// Inside the write loop: a frame queued from a callback it runs waits for the loop.
    private var isWriting = false
    /// Frames queued before the handshake finished wait for it: a non-blocking
    /// write during the handshake would only report that it would block.
    private(set) var isHandshakeDone = false
    /// An accepted connection's whole ClientHello is there: asks for a
    /// handshake slot, then calls ``startServerHandshake()``. Unset, the
    /// handshake starts at once.
    var onClientHello: ((PeerLink) -> Void)?
    /// The server handshake runs (on a pool thread) since this serial
    /// (``PeerLinks``' count of handshakes started); nil before it started.
    var handshakeStartedAt: Int?
    private var startHandshake: (() -> Void)?
    /// The socket took no more: the rest waits for `writeWatch`.
    private var waitingForRoom = false
    /// Once everything queued is written (after a last frame), stop
    /// sending and wait for the peer to close, then close with this reason.
    private var closeWhenWritten: String?
    /// Set once the last frame is written: nothing more is read into frames,
    /// and the link closes when the peer does or at this time (monotonic µs).
    private var drainUntil: Int64?
    /// How long a peer told its last frame may take to close its end.
    static let drainMicroseconds: Int64 = 10_000_000
    private let readBuffer = UnsafeMutableRawPointer.allocate(byteCount: 16384, alignment: 8)
    private let loop: MainLoop
    private var readWatch: GLibSource?
    private var writeWatch: GLibSource?

    /// When the link was made (monotonic µs) and how long its handshake and
    /// hello may take: a connection that does not authenticate in time is
    /// closed, so silent or slow clients cannot hold descriptors for long.
    let createdAt: Int64
    let handshakeDeadlineMicroseconds: Int64

    init(role: Role, serial: Int, address: String, loop: MainLoop, scheduler: Scheduler, log: Logger, keepaliveSeconds: Int64,
         handshakeSeconds: Int64, acceptsKey: @escaping ([UInt8]) -> Bool) {
        createdAt = scheduler.monotonic
        handshakeDeadlineMicroseconds = handshakeSeconds * 1_000_000
        self.role = role
        self.loop = loop
        self.serial = serial
        self.address = address
        self.scheduler = scheduler
        self.log = log
        self.acceptsKey = acceptsKey
        cancellable = GObjectRef(taking: UnsafeMutableRawPointer(g_cancellable_new()!))
        liveness = LinkLiveness(keepaliveSeconds: keepaliveSeconds, now: scheduler.monotonic)
    }

    deinit {
        readBuffer.deallocate()
    }

    private var cancellablePointer: UnsafeMutablePointer<GCancellable> { cancellable.as(GCancellable.self) }

    // MARK: Setting up

    /// Dials `address` (host:port), without proxy, then runs the TLS client handshake.
    func connect(client: UnsafeMutablePointer<GSocketClient>, certificate: GObjectRef) {
        let (callback, data) = AsyncCompletion.callback { [self] source, result in
            let connection: UnsafeMutablePointer<GSocketConnection>
            do {
                connection = try gioCall("g_socket_client_connect_to_host_finish") {
                    g_socket_client_connect_to_host_finish(gcast(graw(source)), result, $0)
                }
            } catch {
                close(reason: "cannot connect to \(address): \(error.gioMessage)")
                return
            }
            self.startTLS(on: GObjectRef(taking: UnsafeMutableRawPointer(connection)), certificate: certificate)
        }
        g_socket_client_connect_to_host_async(client, address, 0, cancellablePointer, callback, data)
    }

    /// Takes an accepted TCP connection and runs the TLS server handshake
    /// once the client's first record is there (``ClientHelloGate``).
    func accept(connection: UnsafeMutableRawPointer, certificate: GObjectRef) {
        let connection = GObjectRef(retaining: connection)
        self.connection = connection
        guard let fd = socketDescriptor else { return }
        let ready = { [weak self] () -> Bool in
            guard let self, !self.isClosed else { return false }
            switch ClientHelloGate.state(of: fd) {
            case .waiting: return true
            case .closed: self.close(reason: "\(self.address) closed the connection before its handshake")
            case .complete:
                self.startHandshake = { [unowned self] in self.startTLS(on: connection, certificate: certificate) }
                if let onClientHello = self.onClientHello { onClientHello(self) } else { self.startServerHandshake() }
            }
            return false
        }
        if ready() {
            readWatch = loop.onFileDescriptor(fd, condition: G_IO_IN, nested: .skipped, priority: ConnectionListener.priority) { _ in ready() }
        }
    }

    /// Runs the server handshake of an accepted connection whose ClientHello is there.
    func startServerHandshake() {
        let start = startHandshake
        startHandshake = nil
        start?()
    }

    private func startTLS(on connection: GObjectRef, certificate: GObjectRef) {
        guard !isClosed else { return }
        self.connection = connection
        let socket = g_socket_connection_get_socket(connection.as(GSocketConnection.self))
        // The client's connect timeout would also end idle reads: liveness is the keepalive's job.
        g_socket_set_timeout(socket, 0)
        // Without TCP_NODELAY a small request and its answer take ~40 ms (Nagle + delayed ACK).
        _ = try? gioCall("g_socket_set_option") { g_socket_set_option(socket, Int32(IPPROTO_TCP), TCP_NODELAY, 1, $0) != 0 ? true : nil }
        let base: UnsafeMutablePointer<GIOStream> = connection.as(GIOStream.self)
        let stream: UnsafeMutablePointer<GIOStream>
        do {
            stream = try gioCall(role == .client ? "g_tls_client_connection_new" : "g_tls_server_connection_new") { error in
                role == .client
                    ? cglib_tls_client_new(base, certificate.as(GTlsCertificate.self), error)
                    : cglib_tls_server_new(base, certificate.as(GTlsCertificate.self), error)
            }
        } catch {
            close(reason: "TLS unavailable: \(error.gioMessage) (is glib-networking installed?)")
            return
        }
        let tls = GObjectRef(taking: UnsafeMutableRawPointer(stream))
        self.tls = tls
        acceptHandler = connectAcceptCertificate(tls.raw) { [weak self] certificate in
            guard let self, let certificate else { return false }
            guard let key = try? DeviceIdentity.keyID(ofDER: certificateDER(certificate)) else { return false }
            return self.acceptsKey(key)
        }
        let (callback, data) = AsyncCompletion.callback { [self] source, result in
            do {
                _ = try gioCall("g_tls_connection_handshake_finish") {
                    g_tls_connection_handshake_finish(gcast(graw(source)), result, $0) != 0 ? true : nil
                }
            } catch {
                close(reason: "TLS handshake with \(address) failed: \(error.gioMessage)")
                return
            }
            handshakeFinished()
        }
        g_tls_connection_handshake_async(tls.as(GTlsConnection.self), G_PRIORITY_DEFAULT, cancellablePointer, callback, data)
    }

    private func handshakeFinished() {
        guard let tls, !isClosed else { return }
        let connection = tls.as(GTlsConnection.self)
        guard g_tls_connection_get_protocol_version(connection) == G_TLS_PROTOCOL_VERSION_TLS_1_3 else {
            close(reason: "\(address) negotiated a TLS version below 1.3: refused")
            return
        }
        // A resumed session would skip accept-certificate: check the pin again.
        guard let certificate = g_tls_connection_get_peer_certificate(connection),
              let key = try? DeviceIdentity.keyID(ofDER: certificateDER(UnsafeMutableRawPointer(certificate))),
              acceptsKey(key)
        else {
            close(reason: "\(address) presented no acceptable key")
            return
        }
        peerKeyID = key
        let binding = g_byte_array_new()!
        defer { g_byte_array_unref(binding) }
        do {
            _ = try gioCall("g_tls_connection_get_channel_binding_data") {
                g_tls_connection_get_channel_binding_data(connection, G_TLS_CHANNEL_BINDING_TLS_EXPORTER, binding, $0) != 0 ? true : nil
            }
        } catch {
            close(reason: "no TLS channel binding: \(error.gioMessage)")
            return
        }
        channelBinding = Array(UnsafeBufferPointer(start: binding.pointee.data, count: Int(binding.pointee.len)))
        liveness.received(now: scheduler.monotonic)
        isHandshakeDone = true
        watchInput(of: tls)
        writeNext()
        onEstablished?(self)
    }

    // MARK: Frames

    /// Queues a frame behind those of its priority and before those of
    /// lower ones; false (and nothing sent) when the peer would refuse it as
    /// too large. Stream data and documents go only to a paired peer.
    @discardableResult
    func send(_ frame: Frame, priority: Priority = .control) -> Bool {
        guard !isClosed, priority == .control || isPaired,
              let bytes = FrameCodec.encode(frame, limit: isPaired ? FrameCodec.pairedLimit : FrameCodec.unpairedLimit) else {
            return false
        }
        queues[priority.rawValue].append(bytes)
        liveness.sent(now: scheduler.monotonic)
        writeNext()
        return true
    }

    /// Sends what is queued, then ends this side's writing and waits (up to
    /// ``drainMicroseconds``) for the peer to close. Closing at once would
    /// reset the connection while the peer's own frames are unread, and a
    /// reset can discard the last frame before the peer reads it.
    func close(afterSending reason: String) {
        closeWhenWritten = reason
        writeNext()
    }

    // Reads and writes go through the TLS streams' pollable interface, woken
    // by the socket's own descriptor: one source for the link's life instead
    // of a GTask and a new source per read, and a frame written in the call
    // that queues it instead of completed from an idle pass. A source for
    // writing exists only while the socket takes no more. Watching the socket
    // is enough once the handshake is over: GnuTLS takes from it only the
    // record it decrypts, so nothing readable hides in a buffer the
    // descriptor does not show. The TLS streams' own pollable sources would
    // also do, but GLib blocks their inner socket source while it dispatches,
    // which wakes the loop four times per record; ours are not blocked
    // (`.skipped`: handoffd runs no nested loop, and one run inside a read
    // would leave the link alone until the read returns).

    private func writeNext() {
        guard !isWriting, !waitingForRoom else { return }
        if writeQueued() { waitForRoom() }
    }

    /// Writes frames until the queues are empty or the socket is full; true when full.
    private func writeQueued() -> Bool {
        isWriting = true
        defer { isWriting = false }
        while !isClosed, isHandshakeDone, let tls {
            if partlyWritten == nil {
                guard let queue = Priority.allCases.first(where: { !queues[$0.rawValue].isEmpty }) else { break }
                partlyWritten = (queues[queue.rawValue].removeFirst(), 0, queue)
            }
            guard let pending = partlyWritten else { break }
            let (bytes, written, queue) = (pending.bytes, pending.written, pending.queue)
            let output = OpaquePointer(g_io_stream_get_output_stream(tls.as(GIOStream.self)))
            let count: Int
            do {
                count = try gioCall("g_pollable_output_stream_write_nonblocking") { error -> Int? in
                    let n = bytes.withUnsafeBytes {
                        g_pollable_output_stream_write_nonblocking(output, $0.baseAddress! + written, gsize(bytes.count - written), nil, error)
                    }
                    return n < 0 ? nil : n
                }
            } catch let failure as GIOFailure where failure.wouldBlock {
                return true
            } catch {
                close(reason: "writing to \(address) failed: \(error.gioMessage)")
                return false
            }
            if written + count < bytes.count {
                partlyWritten?.written = written + count
                continue
            }
            partlyWritten = nil
            if queue == .streamData && queuedDataFrames < StreamLimits.queuedDataFrames { onDataDrained?(self) }
            if queue == .bulk && queuedBulkFrames < StreamLimits.queuedDataFrames { onBulkDrained?(self) }
        }
        if !isClosed, partlyWritten == nil, queues.allSatisfy(\.isEmpty), closeWhenWritten != nil, drainUntil == nil {
            drainUntil = scheduler.monotonic + Self.drainMicroseconds
            if let fd = socketDescriptor { shutdown(fd, Int32(SHUT_WR)) }
            onDeadlineChanged?(self)
        }
        return false
    }

    private var socketDescriptor: Int32? {
        guard let connection else { return nil }
        return g_socket_get_fd(g_socket_connection_get_socket(connection.as(GSocketConnection.self)))
    }

    private func waitForRoom() {
        guard !isClosed, let fd = socketDescriptor else { return }
        waitingForRoom = true
        writeWatch = loop.onFileDescriptor(fd, condition: G_IO_OUT, nested: .skipped) { [weak self] _ in
            guard let self, !self.isClosed else { return false }
            if self.writeQueued() { return true }
            self.waitingForRoom = false
            return false
        }
    }

    private func watchInput(of tls: GObjectRef) {
        guard let fd = socketDescriptor else { return }
        let input = OpaquePointer(g_io_stream_get_input_stream(tls.as(GIOStream.self)))
        readWatch = loop.onFileDescriptor(fd, condition: G_IO_IN, nested: .skipped) { [weak self] _ in
            self?.readAvailable(from: input) ?? false
        }
    }

    /// A few reads per wakeup: GnuTLS takes a record (at most 16 KiB) at a
    /// time from the socket, so a bulk transfer would otherwise cost a poll
    /// and a dispatch per record; what is left after them stays in the
    /// socket and makes the source ready again, so other sources take turns.
    private func readAvailable(from input: OpaquePointer?) -> Bool {
        for _ in 0..<Self.readsPerWakeup {
            guard !isClosed else { return false }
            let count: Int
            do {
                count = try gioCall("g_pollable_input_stream_read_nonblocking") { error -> Int? in
                    let n = g_pollable_input_stream_read_nonblocking(input, readBuffer, 16384, nil, error)
                    return n < 0 ? nil : n
                }
            } catch let failure as GIOFailure where failure.wouldBlock {
                return true
            } catch {
                close(reason: drainUntil != nil ? closeWhenWritten ?? "" : "reading from \(address) failed: \(error.gioMessage)")
                return false
            }
            guard !isClosed else { return false }
            if count == 0 {
                close(reason: drainUntil != nil ? closeWhenWritten ?? "" : "\(address) closed the connection")
                return false
            }
            if drainUntil != nil { continue }
            liveness.received(now: scheduler.monotonic)
            reader.append(UnsafeRawBufferPointer(start: readBuffer, count: count))
            do {
                while !isClosed, let frame = try reader.next() {
                    if !isPaired && !frame.kind.isPairing {
                        close(reason: "\(address) is not paired and sent a \(frame.kind) frame: disconnected")
                        return false
                    }
                    onFrame?(self, frame)
                }
            } catch {
                let reason = "\(address) sent a bad frame (\(error)): disconnected"
                if isPaired, let onProtocolError { onProtocolError(self, reason) } else { close(reason: reason) }
                return false
            }
        }
        return !isClosed
    }

    /// Records read per wakeup: a 64 KiB document frame.
    private static let readsPerWakeup = 4

    // MARK: Liveness

    /// Called every second: keepalive, silence and stalled-frame timeouts.
    /// When ``tick()`` next has something to do: the handshake deadline until
    /// the peer's hello, then keepalives; nil once closed.
    var nextDue: Int64? {
        if isClosed { return nil }
        if let drainUntil { return drainUntil }
        let keepalive = peerKeyID.isEmpty ? Int64.max : liveness.nextDue
        return helloReceived ? keepalive : min(keepalive, createdAt + handshakeDeadlineMicroseconds)
    }

    func tick() {
        guard !isClosed else { return }
        if let drainUntil {
            if scheduler.monotonic >= drainUntil { close(reason: closeWhenWritten ?? "") }
            return
        }
        if !helloReceived && scheduler.monotonic >= createdAt + handshakeDeadlineMicroseconds {
            return close(reason: "\(address) did not complete the handshake within \(handshakeDeadlineMicroseconds / 1_000_000) s")
        }
        guard !peerKeyID.isEmpty else { return }
        switch liveness.action(now: scheduler.monotonic, midFrame: reader.isMidFrame) {
        case .nothing: break
        case .sendKeepalive: send(Frame(.keepalive))
        case .timedOut(let midFrame):
            close(reason: midFrame ? "\(address) stalled in the middle of a frame" : "\(address) stopped answering")
        }
    }

    func close(reason: String) {
        guard !isClosed else { return }
        isClosed = true
        // A stranger's connection that never authenticated is not worth a line
        // each: under a flood the refusals are summed up instead.
        log.log(level: role == .server && !helloReceived ? .debug : .info, "link \(serial) (\(role.rawValue), \(address)) closed: \(reason)")
        g_cancellable_cancel(cancellablePointer)
        readWatch?.cancel()
        writeWatch?.cancel()
        acceptHandler = nil
        if let tls, isHandshakeDone {
            g_io_stream_close_async(tls.as(GIOStream.self), G_PRIORITY_DEFAULT, nil, nil, nil)
        } else if tls != nil, let fd = socketDescriptor {
            // Mid-handshake: the peer is cut off now and the cancelled
            // handshake thread returns at once; the descriptor goes with the
            // last reference (not closed here, so its number cannot be reused
            // under that thread). No TLS close: it would wait for a pool
            // thread of its own.
            shutdown(fd, Int32(SHUT_RDWR))
        } else if let connection {
            // Closed before its handshake: the descriptor goes now, not when the link is released.
            g_io_stream_close(connection.as(GIOStream.self), nil, nil)
        }
        onClosed?(self, reason)
        onClosed = nil
        onDataDrained = nil
        onBulkDrained = nil
        onFrame = nil
        onEstablished = nil
    }
}
