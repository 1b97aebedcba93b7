// SPDX-License-Identifier: Apache-2.0
import CGLib
#if canImport(Glibc)
import Glibc
#endif
import DBusKit
import GLibSupport
import HandoffCore
import Logging
import UserActivityInterfaces
import TypedValues
import UserActivityCore

/// One continuation stream between a local app's socket and a peer link.
///
/// Bytes the app writes go out as stream-data frames while the peer has
/// credit left and the link's data queue is short; bytes from the peer wait
/// in ``toApp`` (at most a window) until the app's socket takes them.
final class RelayedStream {
    let key: StreamKey
    let device: String
    let linkSerial: Int
    weak var link: PeerLink?
    /// The local socket; -1 on the origin side until useractivityd handed it over.
    private(set) var fd: Int32 = -1
    /// Polls the socket for ``polledCondition``; none while the stream wants nothing.
    private var source: GLibSource?
    private var polledCondition: UInt32 = 0
    private var loop: MainLoop?
    var flow = StreamFlow()
    private var toApp: [UInt8] = []
    private var toAppStart = 0
    /// The peer's end closed: ours closes once ``toApp`` is written.
    var peerClosed = false
    private(set) var isFinished = false
    var onFinished: ((RelayedStream) -> Void)?
    private let log: Logger

    init(key: StreamKey, device: String, link: PeerLink, log: Logger) {
        self.key = key
        self.device = device
        self.link = link
        self.linkSerial = link.serial
        self.log = log
    }

    /// Takes ownership of `fd` and starts relaying.
    func attach(_ fd: Int32, loop: MainLoop) {
        guard !isFinished else { close(fd); return }
        self.fd = fd
        _ = fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK)
        self.loop = loop
        writeToApp()
        update()
    }

    private var wantsRead: Bool {
        fd >= 0 && !peerClosed && flow.sendCredit > 0 && (link?.queuedDataFrames ?? Int.max) < StreamLimits.queuedDataFrames
    }

    /// Polls for what the stream can use now.
    func update() {
        guard let loop, !isFinished else { return }
        var condition: UInt32 = 0
        if wantsRead { condition |= G_IO_IN.rawValue | G_IO_HUP.rawValue | G_IO_ERR.rawValue }
        if toAppStart < toApp.count { condition |= G_IO_OUT.rawValue | G_IO_ERR.rawValue }
        guard condition != polledCondition else { return }
        source?.cancel()
        source = nil
        polledCondition = condition
        guard condition != 0 else { return }
        source = loop.onFileDescriptor(fd, condition: GIOCondition(condition)) { [weak self] fired in
            self?.ready(fired)
            return true
        }
    }

    private func ready(_ fired: GIOCondition) {
        if fired.rawValue & G_IO_OUT.rawValue != 0 { writeToApp() }
        if !isFinished, wantsRead, fired.rawValue & (G_IO_IN.rawValue | G_IO_HUP.rawValue | G_IO_ERR.rawValue) != 0 { readFromApp() }
        update()
    }

    private func readFromApp() {
        guard let link else { return }
        let want = min(StreamLimits.chunk, flow.sendCredit)
        var bytes = [UInt8](repeating: 0, count: want)
        let count = bytes.withUnsafeMutableBytes { recv(fd, $0.baseAddress, want, 0) }
        if count < 0 && (errno == EAGAIN || errno == EINTR) { return }
        guard count > 0 else {
            // The app closed its end (or it broke): the other end closes after what was sent.
            link.send(StreamMessage.close(key, nil).frame, priority: .streamData)
            finish("the app here closed it")
            return
        }
        bytes.removeSubrange(count...)
        flow.sent(count)
        link.send(StreamMessage.data(key, bytes).frame, priority: .streamData)
    }

    /// Bytes from the peer; false when they exceed its credit (a broken peer).
    func received(_ bytes: [UInt8]) -> Bool {
        guard flow.received(bytes.count) else { return false }
        if toAppStart > 0 && toAppStart == toApp.count {
            toApp.removeAll(keepingCapacity: true)
            toAppStart = 0
        }
        toApp += bytes
        writeToApp()
        update()
        return true
    }

    private func writeToApp() {
        guard fd >= 0, !isFinished else { return }
        while toAppStart < toApp.count {
            let count = toApp.withUnsafeBytes { send(fd, $0.baseAddress! + toAppStart, toApp.count - toAppStart, Int32(MSG_NOSIGNAL)) }
            if count < 0 {
                if errno == EAGAIN || errno == EINTR { break }
                link?.send(StreamMessage.close(key, nil).frame, priority: .streamData)
                finish("the app here closed it")
                return
            }
            toAppStart += count
            if let credit = flow.delivered(count) { link?.send(StreamMessage.credit(key, credit).frame) }
        }
        if toAppStart == toApp.count {
            toApp.removeAll(keepingCapacity: true)
            toAppStart = 0
            if peerClosed { finish("the other device's app closed it") }
        }
    }

    /// The peer's end closed; ours closes once the app has what came before.
    func closedByPeer(_ failure: StreamFailure?) {
        peerClosed = true
        if let failure {
            finish("\(failure.name): \(failure.message)", failed: true)
        } else if fd >= 0 {
            writeToApp()
            update()
        }
    }

    /// Ends the stream here: the app's socket is closed, so it reads end of file.
    func finish(_ reason: String, failed: Bool = false) {
        guard !isFinished else { return }
        isFinished = true
        source?.cancel()
        source = nil
        loop = nil
        if fd >= 0 { close(fd) }
        fd = -1
        let line: Logger.Message = "continuation stream \(key) with \(device) closed: \(reason)"
        if failed { log.info(line) } else { log.debug(line) }
        onFinished?(self)
        onFinished = nil
    }
}

/// Continuation streams between this device's apps and a paired device's,
/// over the peer link (the frames of ``StreamMessage``).
///
/// Continuing side: `ContinueActivity` of useractivityd gets a `stream-relay`
/// path (``register(device:handoff:now:)``); when the app opens its stream,
/// useractivityd calls `Handler.ContinuationStreamOpened` there and the
/// daemon sends `streamOpen`. Origin side: a `streamOpen` for an activity the
/// device fetched (``grant(device:handoff:activityID:now:)``) becomes
/// `OpenHandoffStream` of useractivityd, whose socket the origin app's other
/// end is connected to.
final class StreamRelay {
    static let relayPathPrefix = HandoffInterfaces.managerPath + "/relay/"
    /// How long a fetched activity may be streamed to, or a relay path used:
    /// the continuation-token's 60 s after a delivery that itself may take a while.
    static let grantMicroseconds: Int64 = 180_000_000

    private struct Key: Hashable {
        let link: Int
        let stream: StreamKey
    }
    private struct Relay {
        let device: String
        let handoff: String
        let expires: Int64
    }
    private struct Grant {
        let activityID: String
        let expires: Int64
    }

    private let loop: MainLoop
    private let log: Logger
    private var streams: [Key: RelayedStream] = [:]
    private var relays: [String: Relay] = [:]
    /// Origin side: the fetches each device made, by handoff id: the activity,
    /// and until when it may open a stream for it.
    private var grants: [String: [String: Grant]] = [:]
    private var nextStream: UInt32 = 0

    init(loop: MainLoop, log: Logger) {
        self.loop = loop
        self.log = log
    }

    var count: Int { streams.count }

    private func count(on link: PeerLink) -> Int { streams.keys.lazy.filter { $0.link == link.serial }.count }

    // MARK: Continuing side

    /// A fresh relay path for the continuation of the fetch `handoff` from
    /// `device`: its last element is random, so only the useractivityd it was
    /// given to can use it.
    func register(device: String, handoff: String, now: Int64) -> String {
        expire(now: now)
        let path = Self.relayPathPrefix + ContinuationTokenBook.randomValue()
        relays[path] = Relay(device: device, handoff: handoff, expires: now + Self.grantMicroseconds)
        return path
    }

    func unregister(_ path: String) { relays[path] = nil }

    /// `ContinuationStreamOpened(o, h)` at a relay path: the local app's end
    /// is `fd` (owned here); the stream goes to the device's link.
    func opened(relayPath: String, fd: Int32, link: (String) -> PeerLink?, now: Int64) -> HandoffError? {
        guard let relay = relays.removeValue(forKey: relayPath), relay.expires > now else {
            close(fd)
            return HandoffError("NotFound", "no continuation stream is expected at \(relayPath)")
        }
        guard let link = link(relay.device) else {
            close(fd)
            return HandoffError("ConnectionUnavailable", "the device the activity came from is not reachable")
        }
        guard count(on: link) < StreamLimits.maximumPerLink else {
            close(fd)
            return HandoffError("LimitExceeded", "\(StreamLimits.maximumPerLink) continuation streams are already open with that device")
        }
        nextStream &+= 1
        let stream = add(RelayedStream(key: StreamKey(id: nextStream, openedHere: true), device: relay.device, link: link, log: log))
        link.send(StreamMessage.open(stream: nextStream, handoff: relay.handoff).frame)
        stream.attach(fd, loop: loop)
        return nil
    }

    // MARK: Origin side

    /// `device` fetched `activityID` to continue it (the fetch `handoff`): it may open one stream for it.
    func grant(device: String, handoff: String, activityID: String, now: Int64) {
        expire(now: now)
        grants[device, default: [:]][handoff] = Grant(activityID: activityID, expires: now + Self.grantMicroseconds)
    }

    func revoke(device: String, handoff: String) { grants[device]?[handoff] = nil }

    /// A stream frame from a paired device; false when it breaks the
    /// protocol (the caller drops the link).
    func received(_ message: StreamMessage, on link: PeerLink, device: String, now: Int64,
                  openOrigin: (String, @escaping (Result<Int32, HandoffError>) -> Void) -> Void) -> Bool {
        switch message {
        case .open(let id, let handoff):
            let key = StreamKey(id: id, openedHere: false)
            guard streams[Key(link: link.serial, stream: key)] == nil else { return false }
            guard let grant = grants[device]?.removeValue(forKey: handoff), grant.expires > now else {
                link.send(StreamMessage.close(key, StreamFailure(name: HandoffInterfaces.errorPrefix + "HandoffFailed",
                                                                     message: "that activity was not handed off to this device, or too long ago")).frame, priority: .streamData)
                return true
            }
            guard count(on: link) < StreamLimits.maximumPerLink else {
                link.send(StreamMessage.close(key, StreamFailure(name: HandoffInterfaces.errorPrefix + "LimitExceeded",
                                                                     message: "too many continuation streams with this device")).frame, priority: .streamData)
                return true
            }
            let stream = add(RelayedStream(key: key, device: device, link: link, log: log))
            openOrigin(grant.activityID) { [weak self, weak stream] result in
                guard let self, let stream else {
                    if case .success(let fd) = result { close(fd) }
                    return
                }
                switch result {
                case .success(let fd): stream.attach(fd, loop: self.loop)
                case .failure(let error):
                    stream.link?.send(StreamMessage.close(key, StreamFailure(name: error.name, message: error.message)).frame, priority: .streamData)
                    stream.finish("the origin app could not take it: \(error.name): \(error.message)", failed: true)
                }
            }
            return true
        case .data(let key, let bytes):
            guard let stream = streams[Key(link: link.serial, stream: key)] else { return true }
            return stream.received(bytes)
        case .credit(let key, let bytes):
            guard let stream = streams[Key(link: link.serial, stream: key)] else { return true }
            guard stream.flow.granted(bytes) else { return false }
            stream.update()
            return true
        case .close(let key, let failure):
            streams[Key(link: link.serial, stream: key)]?.closedByPeer(failure)
            return true
        }
    }

    // MARK: Both sides

    private func add(_ stream: RelayedStream) -> RelayedStream {
        let key = Key(link: stream.linkSerial, stream: stream.key)
        streams[key] = stream
        stream.onFinished = { [weak self] _ in self?.streams[key] = nil }
        return stream
    }

    /// The link's data queue drained: its streams may read their apps again.
    func resume(_ link: PeerLink) {
        for (key, stream) in streams where key.link == link.serial { stream.update() }
    }

    /// The link went down: every stream over it ends with a clear reason.
    func linkClosed(_ link: PeerLink, deviceName: String, reason: String) {
        for (key, stream) in streams where key.link == link.serial {
            stream.finish("\(HandoffInterfaces.errorPrefix)ConnectionUnavailable: \(deviceName) went away (\(reason))", failed: true)
        }
    }

    /// Forgets relay paths and grants nobody used in time. Each is checked
    /// when used, so this runs only as new ones are added (no timer).
    private func expire(now: Int64) {
        relays = relays.filter { $0.value.expires > now }
        for device in grants.keys {
            grants[device] = grants[device]?.filter { $0.value.expires > now }
            if grants[device]?.isEmpty == true { grants[device] = nil }
        }
    }
}
