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

/// The links to other devices: the listener and who is admitted, dialing
/// (known devices, AddPeer, discovery, reconnecting), the pin policy of the
/// handshake, the hello that makes a link a device's, and where each
/// received frame goes. Frames of pairing go to ``Pairing``; those of the
/// current activity, its continuation, streams and documents to
/// ``routes``' `activityFrame` (``ActivityExchange``).
final class PeerLinks {
    /// Where what is not the links' own goes; set by the daemon's wiring.
    struct Routes {
        /// Adverts, fetches and their answers, streams and documents.
        var activityFrame: (Frame, PeerLink) -> Void = { _, _ in }
        /// A link closed: what went over it ends (streams, transfers).
        var linkClosed: (PeerLink, String) -> Void = { _, _ in }
        /// A link's queue of stream data emptied.
        var dataDrained: (PeerLink) -> Void = { _ in }
        /// A link's queue of document bytes emptied.
        var bulkDrained: (PeerLink) -> Void = { _ in }
    }

    let context: HandoffContext
    let pairing: Pairing
    var routes = Routes()
    let listenHost: String
    let listenPort: UInt16
    let keepaliveSeconds: Int64
    /// How long a connection may take to authenticate (TLS handshake and hello).
    let handshakeSeconds: Int64
    var certificate: GObjectRef?
    /// The listening socket while enabled.
    var service: ConnectionListener?
    /// Which connections are taken while they authenticate.
    let admission = ConnectionAdmission()
    /// Server handshakes started so far (the order of ``PeerLink/handshakeStartedAt``).
    var handshakesStarted = 0
    var socketClient: GObjectRef?
    var boundPort: UInt16 = 0
    var links: [PeerLink] = []
    var linkSerial = 0
    var refusedSinceLog = 0
    var refusalLogAllowedAt: Int64 = 0
    /// AddPeer calls waiting for the key of the device at an address.
    var pendingAddPeer: [(link: PeerLink, call: Message)] = []
    /// Devices that broke the protocol, by DeviceId: how long the last wait was, and until when they wait.
    var backOffs: [String: (delay: Int64, until: Int64)] = [:]
    /// How long a device that broke the protocol first waits before it may link again.
    let firstBackOffMicroseconds: Int64
    /// The token and certificate shown while not Discoverable.
    let disguise = NetworkDisguise()

    private var log: Logger { context.log }
    private var identity: DeviceIdentity? { context.identity }
    private var now: Int64 { context.now }

    /// `listen` is host:port (port 0: any free one).
    init(context: HandoffContext, pairing: Pairing, listen: String) {
        self.context = context
        self.pairing = pairing
        let parts = listen.split(separator: ":")
        listenHost = parts.count == 2 ? String(parts[0]) : "0.0.0.0"
        listenPort = parts.count == 2 ? UInt16(parts[1]) ?? 0 : 0
        keepaliveSeconds = max(Int64(context.environment["USERACTIVITY_HANDOFF_KEEPALIVE_SECONDS"] ?? "") ?? 15, 1)
        handshakeSeconds = max(Int64(context.environment["USERACTIVITY_HANDOFF_HANDSHAKE_SECONDS"] ?? "") ?? 10, 1)
        firstBackOffMicroseconds = max(Int64(context.environment["USERACTIVITY_HANDOFF_BACKOFF_SECONDS"] ?? "") ?? 10, 0) * 1_000_000
    }

    // MARK: Starting and stopping

    /// Listens with `identity`'s certificate and dials the devices it knows.
    func start(identity: DeviceIdentity) throws {
        certificate = try tlsCertificate(pem: identity.certificatePEM + identity.keyPEM)
        try startDisguise()
        try listen()
        let client = g_socket_client_new()!
        g_socket_client_set_enable_proxy(client, CGLIB_FALSE)
        g_socket_client_set_timeout(client, 10)
        socketClient = GObjectRef(taking: UnsafeMutableRawPointer(client))
        for device in context.devices.values where !device.address.isEmpty { dial(device.address, device: device) }
        for address in context.state.pendingPeers { dial(address) }
    }

    /// Stops listening and closes every link.
    func stop(reason: String) {
        service?.stop()
        service = nil
        boundPort = 0
        for link in links { link.close(reason: reason) }
        links.removeAll()
        disguise.stop()
    }

    /// Whether it listens (Handoff is on and the identity was usable).
    var isListening: Bool { service != nil }

    private func listen() throws {
        let listener = try ConnectionListener(host: listenHost, port: listenPort, loop: context.loop, scheduler: context.scheduler,
                                              log: log) { [weak self] connection in
            guard let self, let shown = self.certificateForStrangers else { return }
            let address = remoteAddress(of: connection)
            // Not taken: the connection is closed when the listener lets it go.
            guard self.admit(connectionFrom: address) else { return }
            let link = self.makeLink(role: .server, address: address)
            link.showedEphemeralCertificate = shown.ephemeral
            link.onClientHello = { [weak self] link in self?.handshakeSlot(for: link) }
            link.accept(connection: connection, certificate: shown.certificate)
        }
        boundPort = listener.port
        service = listener
        log.info("listening on \(listenHost):\(boundPort) as \(identity?.deviceID ?? "-")")
    }

    // MARK: Links

    func makeLink(role: PeerLink.Role, address: String) -> PeerLink {
        linkSerial += 1
        final class Box { weak var link: PeerLink? }
        let box = Box()
        let link = PeerLink(role: role, serial: linkSerial, address: address, loop: context.loop, scheduler: context.scheduler, log: log,
                            keepaliveSeconds: keepaliveSeconds, handshakeSeconds: handshakeSeconds) { [weak self] key in
            guard let self, let link = box.link else { return false }
            return self.acceptsKey(key, on: link)
        }
        box.link = link
        // Each may add a deadline (a keepalive, a pairing, a fetch, a reconnect).
        link.onEstablished = { [weak self] link in self?.established(link); self?.context.rescheduleTick() }
        link.onFrame = { [weak self] link, frame in self?.received(frame, on: link); self?.context.rescheduleTick() }
        link.onClosed = { [weak self] link, reason in self?.closed(link, reason: reason); self?.context.rescheduleTick() }
        link.onProtocolError = { [weak self] link, reason in self?.misbehaved(link, reason) }
        link.onDeadlineChanged = { [weak self] _ in self?.context.rescheduleTick() }
        link.onDataDrained = { [weak self] link in self?.routes.dataDrained(link) }
        link.onBulkDrained = { [weak self] link in self?.routes.bulkDrained(link) }
        links.append(link)
        context.rescheduleTick() // its handshake deadline
        return link
    }

    /// Dials `address`; `device` when it is a known device (see ``prepareDial(_:to:)``).
    @discardableResult
    func dial(_ address: String, device: DeviceObject? = nil) -> PeerLink? {
        guard let client = socketClient, certificate != nil else { return nil }
        let link = makeLink(role: .client, address: address)
        guard let shown = prepareDial(link, to: device) else { return nil }
        link.connect(client: client.as(GSocketClient.self), certificate: shown)
        return link
    }

    /// A DNS-SD browser found `_useractivity._tcp` somewhere.
    func peerFound(_ found: DiscoveryDecision.Found) {
        let devices = context.devices
        let paired = Set(devices.values.filter(\.paired).map(\.id))
        let reachable = Set(devices.values.filter(\.reachable).map(\.id))
        guard case .dial(let address) = DiscoveryDecision.action(for: found, ownID: identity?.deviceID ?? "", paired: paired, reachable: reachable,
                                                                       mayPair: context.discoverable || pairing.agent != nil),
              !links.contains(where: { $0.address == address && !$0.isClosed })
        else { return }
        let device = found.deviceID.flatMap { devices[$0] }
        if let device, device.paired { device.address = address }
        log.info("dialing \(address), found through discovery")
        dial(address, device: device)?.foundByDiscovery = true
    }

    /// The pin policy in the handshake: a paired key always; an unknown key
    /// only for pairing: dialed by this device (AddPeer, a person's Pair),
    /// or while Discoverable, or with a pairing in progress for it; or a
    /// key that must then prove it is paired (``beginProofPhase(_:)``).
    /// Dialing a paired device with pinned keys, only its key.
    func acceptsKey(_ key: [UInt8], on link: PeerLink) -> Bool {
        let id = Hex.encode(key)
        let devices = context.devices
        if id == identity?.deviceID { return false }
        if isBackingOff(id) { return false }
        if let expected = link.expectedKeyID { return key == expected }
        if devices[id]?.paired == true { return true }
        // Only to tell it that it was unpaired while away.
        if devices[id]?.tellUnpair == true { return true }
        if link.role == .client { return true }
        return link.showedEphemeralCertificate || context.discoverable || pairing.peer == id
    }

    private func established(_ link: PeerLink) {
        if beginProofPhase(link) { return }
        let id = link.peerDeviceID
        link.isPaired = context.devices[id]?.paired == true
        // The server speaks first; the client answers the server's hello.
        if link.role == .server { sendHello(on: link) }
    }

    func sendHello(on link: PeerLink) {
        link.send(Frame(.hello, ["name": .string(context.state.deviceName), "version": .uint32(HandoffContext.protocolVersion),
                                 "port": .uint32(UInt32(boundPort))]))
    }

    private func closed(_ link: PeerLink, reason: String) {
        links.removeAll { $0 === link }
        if let index = pendingAddPeer.firstIndex(where: { $0.link === link }) {
            let call = pendingAddPeer.remove(at: index).call
            context.reply(call, error: HandoffError("ConnectionUnavailable", "cannot reach \(link.address): \(reason)"))
        }
        routes.linkClosed(link, reason)
        guard let device = context.devices[link.peerDeviceID], device.link === link else { return }
        device.link = nil
        for (_, completion) in device.fetches { completion(.failure(HandoffError("ConnectionUnavailable", "\(device.name) went away: \(reason)"))) }
        device.fetches.removeAll()
        device.fetchDeadlines.removeAll()
        pairing.peerWentAway(device.id, reason: reason)
        device.forgetAdvert()
        context.notifier?.withdraw(device.id)
        // A key nobody paired or added (a pairing request, a device found
        // nearby): its object goes with its link.
        if context.isTransient(device) {
            context.devices[device.id] = nil
            context.emitInterfacesRemoved(device)
            return
        }
        device.reconnectAt = now + 2_000_000
        context.emitDeviceChanged(device, [.reachable, .currentActivity])
    }

    /// Where each frame goes.
    private func received(_ frame: Frame, on link: PeerLink) {
        if link.awaitingProof { return receivedDuringProof(frame, on: link) }
        switch frame.kind {
        case .hello: receivedHello(frame, on: link)
        case .keepalive: break
        case .pairRequest: pairing.receivedPairRequest(on: link)
        case .pairConfirm: pairing.receivedPairConfirm(frame, on: link)
        case .pairCancel: pairing.receivedPairCancel(on: link)
        case .unpair: pairing.receivedUnpair(on: link)
        case .advert, .fetch, .fetchReply, .continued, .error, .continueFailed,
             .streamOpen, .streamData, .streamCredit, .streamClose,
             .fileRequest, .fileHeader, .fileData, .fileCredit, .fileEnd, .fileHashRequest:
            routes.activityFrame(frame, link)
        case .proof: receivedProof(frame, on: link)
        case .proofAccepted: link.close(reason: "\(link.address) sent a proof answer it was not asked for: disconnected")
        case .pairKeys: context.receivedPairKeys(frame, on: link)
        }
    }

    private func receivedHello(_ frame: Frame, on link: PeerLink) {
        // The name becomes a D-Bus property, where a NUL would make every device unreadable.
        guard let name = AdvertDecision.deviceName(frame.string("name") ?? "") else {
            return link.close(reason: "\(link.address) sent a hello whose name holds a NUL byte: disconnected")
        }
        if link.helloReceived {
            // A later hello on an established link: the device was renamed.
            guard let device = context.devices[link.peerDeviceID], device.link === link, frame.string("name") != nil else { return }
            device.name = name
            if device.paired { context.persistDevice(device) }
            context.emitDeviceChanged(device, [.name])
            return
        }
        link.helloReceived = true
        link.peerVersion = frame.uint32("version") ?? 0
        log.info("link \(link.serial) (\(link.role.rawValue), \(link.address)) up after \(Double(now - link.createdAt) / 1000) ms")
        let id = link.peerDeviceID
        let devices = context.devices
        // An unknown key that got through the handshake just before Discoverable went off.
        if devices[id]?.paired != true && devices[id]?.tellUnpair != true && link.role == .server && !context.discoverable
            && pairing.peer != id {
            link.close(reason: "unknown key and not discoverable")
            return
        }
        var isNew = devices[id] == nil
        if isNew && devices.values.filter(context.isTransient).count >= HandoffContext.maximumTransientDevices {
            link.close(reason: "\(HandoffContext.maximumTransientDevices) unknown devices are already connected")
            return
        }
        let device = devices[id] ?? DeviceObject(id: id)
        context.devices[id] = device
        device.name = name
        if link.role == .client {
            device.address = link.address
            context.state.pendingPeers.removeAll { $0 == link.address }
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
            // Closing it forgot the object of a device nobody kept: this link brings it back.
            if context.devices[id] !== device {
                context.devices[id] = device
                isNew = true
            }
        }
        device.link = link
        if device.tellUnpair && !device.paired {
            device.tellUnpair = false
            context.persistDevice(device)
            log.info("telling \(device.name) it was unpaired")
            link.send(Frame(.unpair))
            link.close(afterSending: "unpaired while it was away")
            return
        }
        if link.role == .client { sendHello(on: link) }
        if isNew {
            context.emitInterfacesAdded(device)
        } else {
            context.emitDeviceChanged(device, [.name, .address, .reachable])
        }
        // Paired devices and those added with AddPeer are kept across restarts.
        if device.paired || (link.role == .client && !link.foundByDiscovery) { context.persistDevice(device) }
        if let index = pendingAddPeer.firstIndex(where: { $0.link === link }) {
            let call = pendingAddPeer.remove(at: index).call
            context.persistDevice(device)
            context.reply(call, [.objectPath(device.path)])
        }
        context.exchangeSecrets(on: link)
        if device.paired { link.send(Advert.frame(for: context.advertised)) }
    }

    // MARK: Devices that broke the protocol

    /// A device that broke the protocol waits ``firstBackOffMicroseconds``
    /// before its next link (dialed or accepted), twice as long at each
    /// further offence, up to the cap; an offence long after the last wait
    /// ended starts over.
    static let maximumBackOffMicroseconds: Int64 = 300_000_000
    static let backOffForgottenAfterMicroseconds: Int64 = 600_000_000

    /// Drops `link` for breaking the protocol (`reason` is logged once, by the
    /// close); its device may link again only after its back-off.
    func misbehaved(_ link: PeerLink, _ reason: String) {
        let id = link.peerDeviceID
        if !id.isEmpty && id != identity?.deviceID {
            backOffs = backOffs.filter { now - $0.value.until <= Self.backOffForgottenAfterMicroseconds }
            let delay = backOffs[id].map { min($0.delay * 2, Self.maximumBackOffMicroseconds) } ?? firstBackOffMicroseconds
            backOffs[id] = (delay, now + delay)
        }
        link.close(reason: reason)
    }

    /// Whether the device `id` is still waiting after breaking the protocol.
    func isBackingOff(_ id: String) -> Bool { (backOffs[id]?.until ?? 0) > now }

    /// When a paired device that went away is dialed again: its reconnect time, or the end of its back-off.
    private func reconnectDue(_ device: DeviceObject) -> Int64 { max(device.reconnectAt, backOffs[device.id]?.until ?? 0) }

    // MARK: Deadlines

    private func needsReconnect(_ device: DeviceObject) -> Bool {
        (device.paired || device.tellUnpair) && device.link == nil && !device.address.isEmpty
    }

    /// The links' deadlines (handshakes, keepalives) and the reconnects due.
    var deadlines: [Int64] {
        var due = links.compactMap(\.nextDue)
        if disguise.rotation.due < .max { due.append(disguise.rotation.due) }
        if context.state.enabled, service != nil {
            due += context.devices.values.filter(needsReconnect).map(reconnectDue)
        }
        return due
    }

    /// Keepalives, silence and handshake timeouts.
    func tickLinks() {
        for link in links { link.tick() }
    }

    /// Dials the paired devices whose reconnect is due.
    func reconnect(now: Int64) {
        guard context.state.enabled, service != nil else { return }
        for device in context.devices.values where needsReconnect(device) && now >= reconnectDue(device) {
            device.reconnectAt = now + 5_000_000
            if !links.contains(where: { $0.address == device.address }) { dial(device.address, device: device) }
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
