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

/// A D-Bus error a handler answers with.
struct HandoffError: Error {
    let name: String
    let message: String
    init(_ short: String, _ message: String) {
        name = short.contains(".") ? short : HandoffInterfaces.errorPrefix + short
        self.message = message
    }
}

extension TypedValue {
    static func stringVariantDictionary(_ pairs: [(String, TypedValue)]) -> TypedValue {
        .dictionary(keyType: "s", valueType: "v", pairs.map { .init(key: .string($0.0), value: .variant($0.1)) })
    }
}

/// Where DNS-SD publishing plugs in (Avahi, in HandoffDiscovery): the daemon
/// publishes its port and TXT (``DiscoveryDecision/txt(deviceID:name:discoverable:)``)
/// while Enabled and withdraws it when turned off; a browser hands what it
/// finds to ``HandoffDaemon/peerFound(_:)``.
protocol DiscoveryPublisher: AnyObject {
    func publish(port: UInt16, txt: [String: String])
    func withdraw()
}

/// useractivity-handoffd: owns the state, the identity, the listener, the
/// links and the D-Bus objects. Handlers are glue over HandoffCore.
final class HandoffDaemon {
    let bus: Connection
    let loop: MainLoop
    let log: Logger
    let directory: StateDirectory
    let listenHost: String
    let listenPort: UInt16
    var state: HandoffState
    var identity: DeviceIdentity?
    var identityError = ""
    var certificate: GObjectRef?
    var devices: [String: DeviceObject] = [:]
    var pairing = PairingMachine()
    var agent: (sender: String, path: String)?
    var confinedCallers: [String: Bool] = [:]
    var service: GObjectRef?
    var incomingHandler: SignalHandler?
    var socketClient: GObjectRef?
    var boundPort: UInt16 = 0
    var links: [PeerLink] = []
    var linkSerial = 0
    var refusedSinceLog = 0
    var refusalLogAllowedAt: Int64 = 0
    /// AddPeer calls waiting for the key of the device at an address.
    var pendingAddPeer: [(link: PeerLink, call: Message)] = []
    /// The next check of deadlines (pairing, fetches, keepalives, the
    /// discoverable window, reconnects), armed only while one is pending:
    /// with nothing to do, the daemon does not wake up.
    var ticker: ScheduledWork?
    /// When ``ticker`` fires (monotonic µs).
    var tickerDue = Int64.max
    /// The one clock and timer source (GLib's on the loop unless given).
    let scheduler: Scheduler
    /// Monotonic microseconds, for every interval and deadline here.
    var now: Int64 { scheduler.monotonic }
    var requestSerial: UInt32 = 0
    let keepaliveSeconds: Int64
    /// How long a connection may take to authenticate (TLS handshake and hello).
    let handshakeSeconds: Int64
    var discoverableWindow = DiscoverableWindow()
    var discoverable: Bool { discoverableWindow.isOn }
    var activitySource: ActivitySource?
    var advertised: LocalActivity?
    var catalog = AppCatalog()
    /// Re-reads the catalog when apps are installed or removed, as useractivityd does.
    var catalogMonitor: DirectoryMonitor?
    var notifier: Notifier?
    /// DNS-SD publishing, when a discovery module is plugged in.
    var discovery: DiscoveryPublisher?
    /// The system bus, for logind; nil when it cannot be reached.
    var systemBus: Connection?
    let environment: [String: String]
    /// Continuation streams relayed to and from paired devices.
    lazy var streams = StreamRelay(loop: loop, log: log)
    /// Documents of open-document activities sent to and brought from paired devices.
    var transfers = FileTransfers()

    init(bus: Connection, loop: MainLoop, log: Logger, directory: StateDirectory, listen: String,
         environment: [String: String], scheduler: Scheduler? = nil) throws {
        self.bus = bus
        self.loop = loop
        self.scheduler = scheduler ?? GLibScheduler(loop: loop)
        self.log = log
        self.directory = directory
        self.environment = environment
        let parts = listen.split(separator: ":")
        listenHost = parts.count == 2 ? String(parts[0]) : "0.0.0.0"
        listenPort = parts.count == 2 ? UInt16(parts[1]) ?? 0 : 0
        keepaliveSeconds = max(Int64(environment["USERACTIVITY_HANDOFF_KEEPALIVE_SECONDS"] ?? "") ?? 15, 1)
        handshakeSeconds = max(Int64(environment["USERACTIVITY_HANDOFF_HANDSHAKE_SECONDS"] ?? "") ?? 10, 1)
        for warning in directory.tightenModes(files: [IdentityStore.keyFile, IdentityStore.certificateFile, "peers.ini"]) {
            log.warning("\(warning)")
        }
        let loaded = try directory.loadState()
        state = loaded.state
        for warning in loaded.warnings { log.warning("\(directory.file("peers.ini")): \(warning)") }
        if state.deviceName.isEmpty { state.deviceName = prettyHostName() }
        for known in state.devices.values {
            let device = DeviceObject(id: known.id)
            device.name = known.name
            device.address = known.address
            device.paired = known.paired
            device.tellUnpair = known.tellUnpair
            device.wasKept = true
            devices[known.id] = device
        }
        catalog = Self.loadCatalog(environment: environment)
    }

    static func loadCatalog(environment: [String: String]) -> AppCatalog {
        AppCatalog.load(applicationDirectories: AppCatalog.applicationDirectories(environment: environment),
                        loadKeyFile: { path -> (any KeyFileReading)? in GLibKeyFile.load(path: path) })
    }

    /// Apps were installed or removed here: whether a shown advert can be continued may have changed.
    func reloadCatalog() {
        catalog = Self.loadCatalog(environment: environment)
        for device in devices.values where device.remoteActivity != nil {
            let before = device.currentActivity["continuable"]
            showAdvert(on: device)
            if device.currentActivity["continuable"] != before { emitDeviceChanged(device, [.currentActivity]) }
        }
    }

    // MARK: Starting and stopping

    func start() throws {
        let systemAddress = environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
        do {
            let system = try Connection.bus(address: systemAddress)
            try DBusMainLoopBridge.attach(system, to: loop)
            systemBus = system
        } catch {
            log.info("no system bus (\(error)): logind's lock state is not read")
        }
        try bus.addFilter { [weak self] message in self?.filter(message) ?? false }
        catalogMonitor = DirectoryMonitor(directories: AppCatalog.applicationDirectories(environment: environment)) { [weak self] in
            self?.reloadCatalog()
        }
        // Callers that leave are dropped from the confinement cache (and a departed agent is forgotten).
        try bus.addMatch("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg2=''")
        try bus.registerFallback(path: HandoffInterfaces.managerPath) { [weak self] message in
            guard let self else { return false }
            defer { self.rescheduleTick() }
            return self.route(message)
        }
        var locks: [SessionLockMonitor] = [ScreenSaverLockMonitor(bus: bus)]
        if let system = systemBus {
            locks.append(LogindLockMonitor(system: system, sessionID: environment["XDG_SESSION_ID"], log: log))
        }
        activitySource = ActivitySource(bus: bus, log: log, scheduler: scheduler, lock: EitherLockMonitor(locks)) { [weak self] in self?.advertiseIfChanged() }
        try activitySource?.start()
        notifier = Notifier(bus: bus, log: log, scheduler: scheduler)
        try notifier?.start()
        startDiscovery(systemBusAddress: systemAddress)
        if state.enabled {
            do { try enable() } catch {
                log.error("cannot enable handoff: \(error)")
                state.enabled = false
            }
        }
        rescheduleTick()
    }

    /// The earliest deadline of pending work; nil when there is none.
    private func nextDeadline() -> Int64? {
        var due: [Int64] = []
        if let attempt = pairing.current { due.append(attempt.deadline) }
        due += links.compactMap(\.nextDue)
        for device in devices.values { due += device.fetchDeadlines.values }
        due += fileTransferDeadlines
        if let off = discoverableWindow.nextDue(timeoutSeconds: state.discoverableTimeout) { due.append(off) }
        if state.enabled, service != nil {
            due += devices.values.filter(needsReconnect).map(\.reconnectAt)
        }
        return due.min()
    }

    private func needsReconnect(_ device: DeviceObject) -> Bool {
        (device.paired || device.tellUnpair) && device.link == nil && !device.address.isEmpty
    }

    /// Arms the timer for the earliest pending deadline (or none); called
    /// after anything that may add work. An early wake-up is harmless (the
    /// checks find nothing due and re-arm); a late one is not, so only an
    /// earlier deadline re-arms a pending timer.
    func rescheduleTick() {
        guard let due = nextDeadline() else {
            ticker?.cancel()
            ticker = nil
            tickerDue = .max
            return
        }
        if ticker?.isPending == true && tickerDue <= due { return }
        ticker?.cancel()
        tickerDue = due
        let milliseconds = UInt32(clamping: max(0, (due - now + 999) / 1000))
        ticker = scheduler.after(milliseconds: milliseconds) { [weak self] in
            guard let self else { return }
            self.ticker = nil
            self.tickerDue = .max
            self.tick()
            self.rescheduleTick()
        }
    }

    /// Loads (or on first use makes) the identity, then listens and dials.
    func enable() throws {
        if identity == nil {
            do {
                let made = try IdentityStore.loadOrCreate(in: directory, expectedID: state.deviceID, name: state.deviceName)
                identity = made
                identityError = ""
                if state.deviceID != made.deviceID {
                    state.deviceID = made.deviceID
                    save()
                }
            } catch {
                identityError = "\(error)"
                throw HandoffError("HandoffFailed", identityError)
            }
        }
        guard let identity else { return }
        certificate = try tlsCertificate(pem: identity.certificatePEM + identity.keyPEM)
        try listen()
        let client = g_socket_client_new()!
        g_socket_client_set_enable_proxy(client, CGLIB_FALSE)
        g_socket_client_set_timeout(client, 10)
        socketClient = GObjectRef(taking: UnsafeMutableRawPointer(client))
        for device in devices.values where !device.address.isEmpty { dial(device.address) }
        for address in state.pendingPeers { dial(address) }
        republish()
    }

    /// Publishes (again) what DNS-SD should say about this device.
    func republish() {
        guard let discovery else { return }
        guard state.enabled, boundPort > 0, let identity else { return discovery.withdraw() }
        discovery.publish(port: boundPort, txt: DiscoveryDecision.txt(deviceID: identity.deviceID, name: state.deviceName, discoverable: discoverable))
    }

    /// A DNS-SD browser found `_useractivity._tcp` somewhere.
    func peerFound(_ found: DiscoveryDecision.Found) {
        let paired = Set(devices.values.filter(\.paired).map(\.id))
        let reachable = Set(devices.values.filter(\.reachable).map(\.id))
        guard case .dial(let address) = DiscoveryDecision.action(for: found, ownID: identity?.deviceID ?? "", paired: paired, reachable: reachable),
              !links.contains(where: { $0.address == address && !$0.isClosed })
        else { return }
        if let id = found.deviceID, let device = devices[id], device.paired { device.address = address }
        log.info("dialing \(address), found through discovery")
        dial(address)?.foundByDiscovery = true
    }

    func disable() {
        discovery?.withdraw()
        if let service { g_socket_service_stop(service.as(GSocketService.self)); g_socket_listener_close(service.as(GSocketListener.self)) }
        incomingHandler = nil
        service = nil
        boundPort = 0
        for link in links { link.close(reason: "handoff turned off") }
        links.removeAll()
        discoverableWindow.set(false, now: now)
    }

    private func listen() throws {
        let service = g_socket_service_new()!
        let ref = GObjectRef(taking: UnsafeMutableRawPointer(service))
        let address = g_inet_socket_address_new_from_string(listenHost, UInt32(listenPort))
        guard let address else { throw HandoffError("InvalidArgument", "cannot listen on \(listenHost):\(listenPort)") }
        defer { g_object_unref(address) }
        var effective: UnsafeMutablePointer<GSocketAddress>?
        _ = try gioCall("g_socket_listener_add_address") { error in
            g_socket_listener_add_address(gcast(UnsafeMutableRawPointer(service)), gcast(UnsafeMutableRawPointer(address)),
                                          G_SOCKET_TYPE_STREAM, G_SOCKET_PROTOCOL_TCP, nil, &effective, error) != 0 ? true : nil
        }
        if let effective {
            boundPort = g_inet_socket_address_get_port(gcast(UnsafeMutableRawPointer(effective)))
            g_object_unref(effective)
        }
        incomingHandler = connectIncoming(ref.raw) { [weak self] connection in
            guard let self, let connection, let certificate = self.certificate else { return }
            let address = remoteAddress(of: connection)
            // Not accepted: GIO drops the connection once the signal returns.
            if let refusal = self.admissionRefusal(from: address) {
                return self.logRefusal(refusal)
            }
            let link = self.makeLink(role: .server, address: address)
            link.accept(connection: connection, certificate: certificate)
        }
        g_socket_service_start(service)
        self.service = ref
        log.info("listening on \(listenHost):\(boundPort) as \(identity?.deviceID ?? "-")")
    }

    // MARK: Links

    /// Connections that have not authenticated yet (handshake and hello):
    /// at most this many in all, and from one address.
    static let maximumUnauthenticated = 64
    static let maximumUnauthenticatedPerAddress = 8

    /// Why an incoming connection from `address` is not taken, or nil.
    func admissionRefusal(from address: String) -> String? {
        let waiting = links.filter { $0.role == .server && !$0.helloReceived && !$0.isClosed }
        if waiting.count >= Self.maximumUnauthenticated { return "\(waiting.count) connections are still authenticating" }
        let host = hostPart(of: address)
        if waiting.lazy.filter({ hostPart(of: $0.address) == host }).count >= Self.maximumUnauthenticatedPerAddress {
            return "\(Self.maximumUnauthenticatedPerAddress) connections from \(host) are still authenticating"
        }
        return nil
    }

    /// One log line per burst of refusals, not one per connection.
    func logRefusal(_ reason: String) {
        refusedSinceLog += 1
        guard now >= refusalLogAllowedAt else { return }
        log.warning("refusing new connections: \(reason) (\(refusedSinceLog) refused)")
        refusedSinceLog = 0
        refusalLogAllowedAt = now + 10_000_000
    }

    func makeLink(role: PeerLink.Role, address: String) -> PeerLink {
        linkSerial += 1
        let link = PeerLink(role: role, serial: linkSerial, address: address, loop: loop, scheduler: scheduler, log: log,
                            keepaliveSeconds: keepaliveSeconds, handshakeSeconds: handshakeSeconds) { [weak self] key in
            self?.acceptsKey(key, role: role) ?? false
        }
        // Each may add a deadline (a keepalive, a pairing, a fetch, a reconnect).
        link.onEstablished = { [weak self] link in self?.established(link); self?.rescheduleTick() }
        link.onFrame = { [weak self] link, frame in self?.received(frame, on: link); self?.rescheduleTick() }
        link.onClosed = { [weak self] link, reason in self?.closed(link, reason: reason); self?.rescheduleTick() }
        link.onDataDrained = { [weak self] link in self?.streams.resume(link) }
        link.onBulkDrained = { [weak self] link in self?.pumpFiles(on: link) }
        links.append(link)
        rescheduleTick() // its handshake deadline
        return link
    }

    @discardableResult
    func dial(_ address: String) -> PeerLink? {
        guard let client = socketClient, let certificate else { return nil }
        let link = makeLink(role: .client, address: address)
        link.connect(client: client.as(GSocketClient.self), certificate: certificate)
        return link
    }

    /// The pin policy in the handshake: a paired key always; an unknown key
    /// only for pairing: dialed by this device (AddPeer, a person's Pair),
    /// or while Discoverable, or with a pairing in progress for it.
    func acceptsKey(_ key: [UInt8], role: PeerLink.Role) -> Bool {
        let id = Hex.encode(key)
        if id == identity?.deviceID { return false }
        if devices[id]?.paired == true { return true }
        // Only to tell it that it was unpaired while away.
        if devices[id]?.tellUnpair == true { return true }
        if role == .client { return true }
        return discoverable || pairing.current?.peer == id
    }

    private func established(_ link: PeerLink) {
        let id = link.peerDeviceID
        link.isPaired = devices[id]?.paired == true
        // The server speaks first; the client answers the server's hello.
        if link.role == .server { sendHello(on: link) }
    }

    func sendHello(on link: PeerLink) {
        link.send(Frame(.hello, ["name": .string(state.deviceName), "version": .uint32(1), "port": .uint32(UInt32(boundPort))]))
    }

    private func closed(_ link: PeerLink, reason: String) {
        links.removeAll { $0 === link }
        if let index = pendingAddPeer.firstIndex(where: { $0.link === link }) {
            let call = pendingAddPeer.remove(at: index).call
            reply(call, error: HandoffError("ConnectionUnavailable", "cannot reach \(link.address): \(reason)"))
        }
        streams.linkClosed(link, deviceName: devices[link.peerDeviceID]?.name ?? link.address, reason: reason)
        fileLinkClosed(link, reason: reason)
        guard let device = devices[link.peerDeviceID], device.link === link else { return }
        device.link = nil
        for (_, completion) in device.fetches { completion(.failure(HandoffError("ConnectionUnavailable", "\(device.name) went away: \(reason)"))) }
        device.fetches.removeAll()
        device.fetchDeadlines.removeAll()
        if let event = pairing.peerWentAway(device.id) { finishPairing(event, reason: reason) }
        device.remoteActivity = nil
        device.currentActivity = [:]
        notifier?.withdraw(device.id)
        // A key nobody paired or added (a pairing request, a device found
        // nearby): its object goes with its link.
        if isTransient(device) {
            devices[device.id] = nil
            emitInterfacesRemoved(device)
            return
        }
        device.reconnectAt = now + 2_000_000
        emitDeviceChanged(device, [.reachable, .currentActivity])
    }

    /// Device objects of keys nobody paired or added, at most this many at once.
    static let maximumTransientDevices = 32

    func isTransient(_ device: DeviceObject) -> Bool {
        !device.wasKept && !device.paired && !device.tellUnpair && state.devices[device.id] == nil
    }

    private func received(_ frame: Frame, on link: PeerLink) {
        switch frame.kind {
        case .hello: receivedHello(frame, on: link)
        case .keepalive: break
        case .pairRequest: receivedPairRequest(on: link)
        case .pairConfirm: receivedPairConfirm(frame, on: link)
        case .pairCancel:
            if let event = pairing.cancel(peer: link.peerDeviceID) { finishPairing(event) }
        case .advert: receivedAdvert(frame, on: link)
        case .unpair: receivedUnpair(on: link)
        case .fetch, .fetchReply, .continued, .error, .continueFailed: receivedContinuation(frame, on: link)
        case .streamOpen, .streamData, .streamCredit, .streamClose: receivedStream(frame, on: link)
        case .fileRequest, .fileHeader, .fileData, .fileCredit, .fileEnd: receivedFile(frame, on: link)
        }
    }

    private func receivedHello(_ frame: Frame, on link: PeerLink) {
        // The name becomes a D-Bus property, where a NUL would make every device unreadable.
        if frame.string("name")?.utf8.contains(0) == true { return protocolError(link, "a hello whose name holds a NUL byte") }
        if link.helloReceived {
            // A later hello on an established link: the device was renamed.
            guard let device = devices[link.peerDeviceID], device.link === link, let name = frame.string("name") else { return }
            device.name = String(name.prefix(256))
            if device.paired { persistDevice(device) }
            emitDeviceChanged(device, [.name])
            return
        }
        link.helloReceived = true
        let id = link.peerDeviceID
        // An unknown key that got through the handshake just before Discoverable went off.
        if devices[id]?.paired != true && devices[id]?.tellUnpair != true && link.role == .server && !discoverable
            && pairing.current?.peer != id {
            link.close(reason: "unknown key and not discoverable")
            return
        }
        let isNew = devices[id] == nil
        if isNew && devices.values.filter(isTransient).count >= Self.maximumTransientDevices {
            link.close(reason: "\(Self.maximumTransientDevices) unknown devices are already connected")
            return
        }
        let device = devices[id] ?? DeviceObject(id: id)
        devices[id] = device
        device.name = String((frame.string("name") ?? "").prefix(256))
        if link.role == .client {
            device.address = link.address
            state.pendingPeers.removeAll { $0 == link.address }
        } else if let port = frame.uint32("port"), port > 0, port < 65536 {
            device.address = hostPart(of: link.address) + ":\(port)"
        }
        // Two links to one device (both dialed at once): keep the one whose
        // client has the lower id, so both sides keep the same link.
        if let old = device.link, old !== link, !old.isClosed {
            let mine = identity?.deviceID ?? ""
            let oldClient = old.role == .client ? mine : id
            let newClient = link.role == .client ? mine : id
            if oldClient <= newClient && old.helloReceived {
                link.close(reason: "a link to \(device.name) is already up")
                return
            }
            old.close(reason: "replaced by a newer link")
        }
        device.link = link
        if device.tellUnpair && !device.paired {
            device.tellUnpair = false
            persistDevice(device)
            log.info("telling \(device.name) it was unpaired")
            link.send(Frame(.unpair))
            link.close(afterSending: "unpaired while it was away")
            return
        }
        if link.role == .client { sendHello(on: link) }
        if isNew {
            emitInterfacesAdded(device)
        } else {
            emitDeviceChanged(device, [.name, .address, .reachable])
        }
        // Paired devices and those added with AddPeer are kept across restarts.
        if device.paired || (link.role == .client && !link.foundByDiscovery) { persistDevice(device) }
        if let index = pendingAddPeer.firstIndex(where: { $0.link === link }) {
            let call = pendingAddPeer.remove(at: index).call
            persistDevice(device)
            reply(call, [.objectPath(device.path)])
        }
        if device.paired { link.send(AdvertDecision.frame(for: advertised)) }
    }

    func persistDevice(_ device: DeviceObject) {
        device.wasKept = true
        state.devices[device.id] = KnownDevice(id: device.id, name: device.name, address: device.address, paired: device.paired,
                                               tellUnpair: device.tellUnpair)
        save()
    }

    func save() {
        do { try directory.save(state) } catch { log.error("cannot save state: \(error)") }
    }

    // MARK: Pairing

    /// Device.Pair: `completion` runs when the pairing ends (``finishPairing(_:reason:)``).
    func startPairing(_ device: DeviceObject, completion: @escaping DeviceCompletion) {
        guard let link = device.link, device.reachable else {
            return completion(.failure(HandoffError("ConnectionUnavailable", "\(device.name) is not reachable")))
        }
        guard agent != nil || notifier?.isAvailable == true else {
            return completion(.failure(HandoffError("NoAgent", "no pairing agent is registered and no notification server is running")))
        }
        let code = pairingCode(link)
        do {
            _ = try pairing.start(peer: device.id, code: code, initiatedLocally: true, discoverable: discoverable, now: now)
        } catch {
            return completion(.failure(HandoffError("PairingRefused", "\(error)")))
        }
        device.pairCompletion = completion
        link.send(Frame(.pairRequest, ["name": .string(state.deviceName)]))
        askPerson(device, code: code)
    }

    private func receivedPairRequest(on link: PeerLink) {
        guard let device = devices[link.peerDeviceID] else { return }
        if device.paired {
            // It forgot us: only a fresh pairing helps; refuse so it says so.
            link.send(Frame(.pairConfirm, ["accepted": .boolean(false), "reason": .string("already paired")]))
            return
        }
        guard agent != nil || notifier?.isAvailable == true else {
            link.send(Frame(.pairConfirm, ["accepted": .boolean(false), "reason": .string("nobody can confirm pairing on that device")]))
            return
        }
        let code = pairingCode(link)
        do {
            _ = try pairing.start(peer: device.id, code: code, initiatedLocally: false, discoverable: discoverable, now: now)
        } catch {
            log.info("pairing request from \(device.name) refused: \(error)")
            link.send(Frame(.pairConfirm, ["accepted": .boolean(false), "reason": .string("\(error)")]))
            return
        }
        askPerson(device, code: code)
    }

    private func receivedPairConfirm(_ frame: Frame, on link: PeerLink) {
        let accepted = frame.bool("accepted") ?? false
        if let event = pairing.answerRemotely(peer: link.peerDeviceID, accepted: accepted, now: now) {
            finishPairing(event, reason: frame.string("reason"))
        }
    }

    private func pairingCode(_ link: PeerLink) -> String {
        PairingCode.derive(localKeyID: identity?.keyID ?? [], remoteKeyID: Array(Hex.decode(link.peerDeviceID) ?? []),
                           channelBinding: link.channelBinding)
    }

    private func askPerson(_ device: DeviceObject, code: String) {
        device.agentAsked = true
        let answer: (Bool) -> Void = { [weak self, weak device] accepted in
            guard let self, let device else { return }
            device.agentAsked = false
            guard self.pairing.current?.peer == device.id else { return }
            device.link?.send(Frame(.pairConfirm, ["accepted": .boolean(accepted)]))
            if let event = self.pairing.answerLocally(peer: device.id, accepted: accepted, now: self.now) {
                self.finishPairing(event)
            }
        }
        if let agent {
            do {
                let message = try Message.methodCall(destination: agent.sender, path: agent.path, interface: HandoffInterfaces.agentName,
                                                     member: "RequestConfirmation", arguments: [.objectPath(device.path), .string(code)])
                bus.callAsync(message, timeoutMilliseconds: 60_000) { result in
                    if case .failure(let error) = result { self.log.info("agent refused pairing with \(device.name): \(error.name)") }
                    if case .success = result { answer(true) } else { answer(false) }
                }
            } catch {
                answer(false)
            }
        } else if let notifier {
            notifier.askPairing(deviceID: device.id, deviceName: device.name, code: code, answer: answer)
        } else {
            answer(false)
        }
    }

    func finishPairing(_ event: PairingEvent, reason: String? = nil) {
        let peer: String
        switch event {
        case .paired(let id), .refused(let id), .timedOut(let id), .cancelled(let id), .wentAway(let id): peer = id
        }
        guard let device = devices[peer] else { return }
        if device.agentAsked, let agent {
            device.agentAsked = false
            if let message = try? Message.methodCall(destination: agent.sender, path: agent.path, interface: HandoffInterfaces.agentName, member: "Cancel", arguments: []) {
                message.expectsReply = false
                bus.send(message)
            }
        }
        if case .cancelled = event { device.link?.send(Frame(.pairCancel)) }
        if case .timedOut = event { device.link?.send(Frame(.pairCancel)) }
        // The person's Pair call is answered with the change; a pairing the peer started emits it directly.
        let completion = device.pairCompletion ?? { [weak self, weak device] outcome in
            guard let self, let device, case .success(let changes) = outcome, !changes.changed.isEmpty else { return }
            self.emitDeviceChanged(device, changes.changed)
        }
        device.pairCompletion = nil
        let because = reason.map { ": \($0)" } ?? ""
        switch event {
        case .paired:
            device.paired = true
            device.link?.isPaired = true
            persistDevice(device)
            log.info("paired with \(device.name) (\(device.id))")
            completion(.success(DeviceChanges(changed: [.paired])))
            device.link?.send(AdvertDecision.frame(for: advertised))
        case .refused:   completion(.failure(HandoffError("PairingRefused", "pairing with \(device.name) was refused\(because)")))
        case .timedOut:  completion(.failure(HandoffError("PairingRefused", "nobody confirmed the pairing with \(device.name) in time")))
        case .cancelled: completion(.failure(HandoffError("PairingRefused", "the pairing with \(device.name) was cancelled")))
        case .wentAway:  completion(.failure(HandoffError("ConnectionUnavailable", "\(device.name) went away during the pairing\(because)")))
        }
    }

    /// Device.CancelPairing.
    func cancelPairing(with device: DeviceObject) {
        if let event = pairing.cancel(peer: device.id) { finishPairing(event) }
    }

    /// Device.Unpair; returns what changed.
    func unpair(_ device: DeviceObject) -> [HandoffInterfaces.DeviceProperty] {
        if device.reachable {
            device.link?.send(Frame(.unpair))
        } else if !device.address.isEmpty {
            device.tellUnpair = true
        }
        return forget(device)
    }

    private func receivedUnpair(on link: PeerLink) {
        guard let device = devices[link.peerDeviceID], device.paired else { return }
        log.info("\(device.name) unpaired this device")
        emitDeviceChanged(device, forget(device))
    }

    private func forget(_ device: DeviceObject) -> [HandoffInterfaces.DeviceProperty] {
        device.paired = false
        device.remoteActivity = nil
        device.currentActivity = [:]
        notifier?.withdraw(device.id)
        if device.tellUnpair { persistDevice(device) } else { state.devices[device.id] = nil; save() }
        device.link?.close(reason: "unpaired")
        return [.paired, .currentActivity]
    }

    // MARK: Adverts

    func advertiseIfChanged() {
        guard let source = activitySource else { return }
        let next = AdvertDecision.advert(for: source.current, conditions: source.conditions)
        guard next != advertised else { return }
        advertised = next
        let frame = AdvertDecision.frame(for: next)
        for device in devices.values where device.paired && device.reachable { device.link?.send(frame) }
    }

    private func receivedAdvert(_ frame: Frame, on link: PeerLink) {
        guard let device = devices[link.peerDeviceID], device.paired else { return }
        let read = AdvertDecision.activity(from: frame)
        let activity = read.flatMap(AdvertDecision.bounded)
        if read != nil && activity == nil { return protocolError(link, "an advert over the service's limits") }
        device.remoteActivity = activity
        let continuable = showAdvert(on: device)
        // The signal before the notification: the bus routes what it gets in order.
        emitDeviceChanged(device, [.currentActivity])
        if let activity, continuable && state.notifyContinuable {
            notifier?.offerContinue(deviceID: device.id, title: activity.title, deviceName: device.name) { [weak self, weak device] in
                guard let self, let device else { return }
                self.continueActivity(on: device, options: []) { result in
                    if case .failure(let error) = result { self.log.info("continue from notification failed: \(error.name): \(error.message)") }
                }
            }
        } else {
            notifier?.withdraw(device.id)
        }
    }

    /// Sets the device's CurrentActivity from its advert, with whether it can be continued here.
    @discardableResult
    func showAdvert(on device: DeviceObject) -> Bool {
        guard let activity = device.remoteActivity else {
            device.currentActivity = [:]
            return false
        }
        // An open-document's file is brought here and opened by the app for its type.
        let continuable = activity.activityType == AdvertDecision.openDocumentType
            || (AdvertDecision.refusalFromAnotherDevice(activityType: activity.activityType, webpageURL: activity.webpageURL) == nil
                && (!activity.webpageURL.isEmpty || isContinuableHere(activity)))
        device.currentActivity = [
            "activity-type": .string(activity.activityType), "app-id": .string(activity.appID),
            "title": .string(activity.title), "webpage-url": .string(activity.webpageURL),
            "timestamp": .int64(activity.timestamp), "continuable": .boolean(continuable),
        ]
        return continuable
    }

    /// An installed app declares the type within the publisher's team.
    func isContinuableHere(_ activity: LocalActivity) -> Bool {
        let publisherTeam = catalog.app(activity.appID)?.team ?? AppCatalog.implicitTeam(of: activity.appID)
        return catalog.apps(declaring: activity.activityType).contains { candidate in
            activity.appID.isEmpty || candidate.id == activity.appID || candidate.team == publisherTeam
        }
    }

    // MARK: Continuing

    func nextRequest() -> UInt32 {
        requestSerial &+= 1
        return requestSerial
    }

    /// Receiver side: fetch from the origin, continue through the local useractivityd, tell the origin.
    func continueActivity(on device: DeviceObject, options: [(String, TypedValue)], completion: @escaping (Result<String, HandoffError>) -> Void) {
        guard device.paired else { return completion(.failure(HandoffError("NotPaired", "\(device.name) is not paired"))) }
        guard let link = device.link, device.reachable else {
            return completion(.failure(HandoffError("ConnectionUnavailable", "\(device.name) is not reachable")))
        }
        guard let remote = device.remoteActivity else {
            return completion(.failure(HandoffError("HandoffFailed", "\(device.name) has no current activity")))
        }
        if remote.activityType != AdvertDecision.openDocumentType,
           let refusal = AdvertDecision.refusalFromAnotherDevice(activityType: remote.activityType, webpageURL: remote.webpageURL) {
            return completion(.failure(HandoffError("HandoffFailed", refusal)))
        }
        let request = nextRequest()
        let timeout = min(options.first { $0.0 == "timeout-ms" }?.1.uint32Value ?? 10_000, HandoffLimits.maximumTimeoutMilliseconds)
        device.fetches[request] = { [weak self] result in
            guard let self else { return }
            switch result {
            case .failure(let error): completion(.failure(error))
            case .success(let reply):
                guard let type = reply.string("activity-type"), let properties = reply.body["properties"] else {
                    return completion(.failure(HandoffError("HandoffFailed", "\(device.name) sent an incomplete activity")))
                }
                // What is continued is what the person saw, and only what may be opened from another device.
                let fields = Dictionary(properties.stringVariantEntries ?? [], uniquingKeysWith: { $1 })
                guard AdvertDecision.matches(remote, activityType: type, properties: fields) else {
                    completion(.failure(HandoffError("HandoffFailed", "\(device.name) sent another activity than the one it showed")))
                    return self.protocolError(link, "another activity than the one it advertised")
                }
                func continueHere(_ properties: TypedValue) {
                    let relay = self.streamRelayPath(for: properties, from: device, activityID: remote.id)
                    let options = options + (relay.map { [("stream-relay", TypedValue.objectPath($0))] } ?? [])
                    self.activitySource?.continueLocally(type: type, properties: properties, options: options,
                                                        timeoutMilliseconds: Int32(min(Int(timeout == 0 ? 10_000 : timeout) * 2 + 1000, 1_300_000))) { result in
                        switch result {
                        case .success(let appID):
                            link.send(Frame(.continued, ["id": .string(remote.id), "app-id": .string(appID)]))
                            completion(.success(appID))
                        case .failure(let error):
                            if let relay { self.streams.unregister(relay) }
                            link.send(Frame(.continueFailed, ["id": .string(remote.id), "name": .string(error.name), "message": .string(error.message)]))
                            completion(.failure(HandoffError(error.name, error.message)))
                        }
                    }
                }
                // A document is opened here only from a copy brought from the origin (or the same bytes already here).
                if type == AdvertDecision.openDocumentType {
                    let uri = Self.documentURI(in: properties) ?? ""
                    switch self.documentPath(in: properties) {
                    case .failure(let error): return completion(.failure(error))
                    case .success(let path):
                        self.bringDocument(path: path, activityID: remote.id, uri: uri, from: device, link: link) { brought in
                            switch brought {
                            case .failure(let error):
                                link.send(Frame(.continueFailed, ["id": .string(remote.id), "name": .string(error.name), "message": .string(error.message)]))
                                completion(.failure(error))
                            case .success(let local):
                                continueHere(Self.replacingDocumentURI(in: properties, with: local))
                            }
                        }
                        return
                    }
                }
                if let refusal = AdvertDecision.refusalFromAnotherDevice(activityType: type, webpageURL: fields["webpage-url"]?.stringValue ?? "") {
                    return completion(.failure(HandoffError("HandoffFailed", refusal)))
                }
                continueHere(properties)
            }
        }
        // The origin's owner may take timeout-ms to save; then the reply has to travel.
        device.fetchDeadlines[request] = now + Int64(timeout == 0 ? 10_000 : timeout) * 1000 + 10_000_000
        link.send(Frame(.fetch, ["request": .uint32(request), "id": .string(remote.id), "timeout-ms": .uint32(timeout)]))
        rescheduleTick()
    }

    /// A frame from a peer that cannot be served: the link drops (logged once), nothing else is affected.
    private func protocolError(_ link: PeerLink, _ what: String) {
        link.close(reason: "\(link.address) sent \(what): disconnected")
    }

    private func receivedContinuation(_ frame: Frame, on link: PeerLink) {
        guard let device = devices[link.peerDeviceID], device.paired else { return }
        switch frame.kind {
        case .fetch:
            let request = frame.uint32("request") ?? 0
            let id = frame.string("id") ?? ""
            // The owner's SaveActivity may take as long as a local continuation allows, not more.
            let timeout = min(frame.uint32("timeout-ms") ?? 10_000, HandoffLimits.maximumTimeoutMilliseconds)
            guard let advertised, advertised.id == id, let source = activitySource else {
                link.send(Frame(.error, ["request": .uint32(request), "name": .string(HandoffInterfaces.errorPrefix + "HandoffFailed"),
                                         "message": .string("the activity ended or is no longer current")]))
                return
            }
            source.fetchForHandoff(activityID: advertised.id, timeoutMilliseconds: Int32(timeout)) { result in
                switch result {
                case .success(let (type, properties)):
                    self.streams.grant(device: device.id, activityID: id, now: self.now)
                    self.grantDocument(of: properties, type: type, activityID: id, to: device)
                    device.recordFetch(id)
                    if !link.send(Frame(.fetchReply, ["request": .uint32(request), "activity-type": .string(type), "properties": properties])) {
                        link.send(Frame(.error, ["request": .uint32(request), "name": .string(HandoffInterfaces.errorPrefix + "UserInfoTooLarge"),
                                                 "message": .string("the activity is larger than a handoff frame may be (\(FrameCodec.pairedLimit / 1024) KiB)")]))
                    }
                case .failure(let error):
                    // Without its session bus this device is going away, not failing to provide the activity.
                    guard self.bus.isConnected else { return link.close(reason: "this device lost its session bus") }
                    link.send(Frame(.error, ["request": .uint32(request), "name": .string(error.name), "message": .string(error.message)]))
                }
            }
        case .fetchReply:
            guard let request = frame.uint32("request"), let completion = device.fetches.removeValue(forKey: request) else { return }
            device.fetchDeadlines[request] = nil
            // Everything in it goes to useractivityd and on to an app: checked before libdbus sees it.
            if let problem = HandoffLimits.problem(inPeerValue: frame.body["properties"] ?? .stringVariantDictionary([])) {
                completion(.failure(HandoffError("HandoffFailed", "\(device.name) sent an activity that cannot be continued: \(problem)")))
                return protocolError(link, "an activity with \(problem)")
            }
            completion(.success(frame))
        case .error:
            guard let request = frame.uint32("request"), let completion = device.fetches.removeValue(forKey: request) else { return }
            device.fetchDeadlines[request] = nil
            // Only the errors an origin may give are passed on, by a name libdbus accepts; anything else is HandoffFailed.
            let name = frame.string("name") ?? ""
            let known = HandoffLimits.originErrors.contains(name) ? name : "HandoffFailed"
            completion(.failure(HandoffError(known, String((frame.string("message") ?? "").prefix(HandoffLimits.maximumMessageBytes)))))
            if !DBusValueCheck.isValidErrorName(name) { protocolError(link, "an error reply whose name is not an error name") }
        case .continued:
            // Only for an activity this device fetched from here, and once.
            guard let id = frame.string("id"), device.takeFetch(id),
                  let app = frame.string("app-id"), app.isEmpty || (try? ReverseDNSName.validate(app, as: "app-id")) != nil else {
                return protocolError(link, "a continued frame for an activity it did not fetch")
            }
            activitySource?.markContinued(activityID: id, byApp: app)
        case .continueFailed:
            guard let id = frame.string("id"), device.takeFetch(id) else {
                return protocolError(link, "a continue-failed frame for an activity it did not fetch")
            }
            receivedContinueFailed(frame, from: device)
        default: break
        }
    }

    // MARK: Timers

    private func tick() {
        let now = self.now
        if let event = pairing.expire(now: now) { finishPairing(event) }
        expireFileTransfers()
        for link in links { link.tick() }
        for device in devices.values {
            for (request, deadline) in device.fetchDeadlines where now >= deadline {
                device.fetchDeadlines[request] = nil
                device.fetches.removeValue(forKey: request)?(.failure(HandoffError("HandoffFailed", "\(device.name) did not send the activity in time")))
            }
        }
        if discoverableWindow.expire(now: now, timeoutSeconds: state.discoverableTimeout) {
            republish()
            emitManagerChanged(["Discoverable"])
        }
        guard state.enabled, service != nil else { return }
        for device in devices.values where needsReconnect(device) && now >= device.reconnectAt {
            device.reconnectAt = now + 5_000_000
            if !links.contains(where: { $0.address == device.address }) { dial(device.address) }
        }
    }
}

func remoteAddress(of connection: UnsafeMutableRawPointer) -> String {
    guard let address = g_socket_connection_get_remote_address(gcast(connection), nil) else { return "?" }
    defer { g_object_unref(address) }
    let inet = g_inet_socket_address_get_address(gcast(UnsafeMutableRawPointer(address)))
    let host = g_inet_address_to_string(inet).map { pointer -> String in defer { g_free(pointer) }; return String(cString: pointer) } ?? "?"
    let port = g_inet_socket_address_get_port(gcast(UnsafeMutableRawPointer(address)))
    return host.contains(":") ? "[\(host)]:\(port)" : "\(host):\(port)"
}

func hostPart(of address: String) -> String {
    guard let colon = address.lastIndex(of: ":") else { return address }
    return String(address[..<colon])
}

/// The machine's pretty host name (/etc/machine-info), else its host name.
func prettyHostName() -> String {
    if let text = try? StateDirectory(path: "/etc").read("machine-info"),
       let pretty = MachineInfo.prettyHostName(fromMachineInfo: String(decoding: text, as: UTF8.self)) {
        return pretty
    }
    var buffer = [CChar](repeating: 0, count: 256)
    gethostname(&buffer, 255)
    return buffer.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
}

extension GLibKeyFile: KeyFileReading {}
