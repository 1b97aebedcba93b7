// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// DNS-SD discovery of Handoff devices on the local network through Avahi's
/// D-Bus API on the system bus: publishing this device as
/// `_useractivity._tcp` and browsing for the others.
///
/// Everything runs on one ``MainLoop`` (the daemon's): create the object,
/// call its methods and receive its callbacks on the thread that runs that
/// loop. The object talks to Avahi over a private connection to the system
/// bus at `DBUS_SYSTEM_BUS_ADDRESS`, or `/run/dbus/system_bus_socket`.
///
/// What was asked for (a publication, a browse) is kept as intent and
/// applied whenever Avahi is there: when Avahi is missing the methods still
/// succeed, ``state`` is ``State/unavailable(_:)`` with the reason, and the
/// publication and browse start by themselves once Avahi appears on the
/// system bus (and again after Avahi restarts). A device without Avahi is
/// reached with `AddPeer` instead.
///
/// What the TXT record carries is up to the caller; ``setDiscoverable(_:name:)``
/// adds the ``nameKey`` entry (the device name) and the ``pairingKey`` entry
/// while the device is discoverable and removes both otherwise, so that the
/// name is on the network only while the person asked for it.
///
/// ```swift
/// let discovery = AvahiDiscovery(loop: loop)
/// discovery.onStateChange = { state in log("discovery: \(state)") }
/// discovery.start(port: 48_300, txt: ["v": "1", "id": String(deviceId.prefix(16))])
/// discovery.setDiscoverable(true, name: "Kitchen laptop")
/// discovery.browse(onFound: { service in
///     connect(to: service.address, port: service.port, expecting: service.txt["id"])
/// }, onLost: { instance in markGone(instance) })
/// ```
public final class AvahiDiscovery {
    /// The DNS-SD service type of Handoff.
    public static let serviceType = "_useractivity._tcp"
    /// The TXT key that carries the device name while discoverable.
    public static let nameKey = "name"
    /// The TXT key (`pairing=1`) that says the device accepts pairing now.
    public static let pairingKey = "pairing"

    /// Whether Avahi can be used.
    public enum State: Equatable, Sendable, CustomStringConvertible {
        /// Looking for the system bus and Avahi on it.
        case connecting
        /// Avahi answers: the publication and the browse are applied.
        case running
        /// No system bus, or no Avahi on it, or Avahi failed: why, for a log
        /// line or a status display. Discovery resumes by itself when Avahi
        /// appears on the system bus.
        case unavailable(String)

        public var description: String {
            switch self {
            case .connecting: return "connecting"
            case .running: return "running"
            case .unavailable(let reason): return "unavailable: \(reason)"
            }
        }
    }

    /// One resolved instance of the service, as seen on one interface and
    /// address family.
    public struct Service: Equatable, Sendable {
        /// The DNS-SD instance name (random per start of the publisher).
        public var instance: String
        /// The publisher's mDNS host name, such as `laptop.local`.
        public var hostName: String
        /// The numeric address: `10.0.0.2`, or `fe80::1%eth0` (a link-local
        /// IPv6 address carries its interface as a scope).
        public var address: String
        public var port: UInt16
        /// The TXT record as keys and values (an entry without `=` has an empty value).
        public var txt: [String: String]
        /// The interface it was seen on (index and name).
        public var interfaceIndex: Int32
        public var interfaceName: String
        /// The record was published by this machine.
        public var isLocal: Bool

        /// `host:port` as `AddPeer` takes it (`[v6]:port` for IPv6).
        public var hostAndPort: String {
            address.contains(":") ? "[\(address)]:\(port)" : "\(address):\(port)"
        }

        public init(instance: String, hostName: String, address: String, port: UInt16, txt: [String: String],
                    interfaceIndex: Int32, interfaceName: String, isLocal: Bool) {
            self.instance = instance
            self.hostName = hostName
            self.address = address
            self.port = port
            self.txt = txt
            self.interfaceIndex = interfaceIndex
            self.interfaceName = interfaceName
            self.isLocal = isLocal
        }
    }

    /// The current state; ``onStateChange`` reports each change.
    public private(set) var state: State = .connecting
    /// Called on the loop's thread whenever ``state`` changes.
    public var onStateChange: ((State) -> Void)?
    /// Called with the instance name once Avahi has registered the
    /// publication on the network (again after a name collision forced a new name).
    public var onPublished: ((String) -> Void)?
    /// The instance name of the publication, once ``start(port:instanceName:txt:)`` was called.
    public private(set) var instanceName: String?

    private let loop: MainLoop
    private let type: String
    private let busAddress: String
    private var connection: Connection?
    /// Avahi's unique name while it is on the bus: calls go to it, and signals count only from it.
    private var avahiOwner: String?
    /// Bumped whenever Avahi goes away: answers to calls made before are stale.
    private var epoch = 0

    // Publication (intent, and what Avahi holds).
    private var publication: (port: UInt16, txt: [String: String])?
    /// ``setDiscoverable(_:name:)`` came while the entry group was busy.
    private var txtOutdated = false
    private var discoverableName: String?
    private var randomName = true
    private var groupPath: String?
    private var groupBusy = false

    // Browse (intent, and what Avahi holds).
    private var onFound: ((Service) -> Void)?
    private var onLost: ((String) -> Void)?
    private var browserPath: String?
    /// Instances seen, by name: the (interface, protocol) pairs Avahi reported them on.
    private var seen: [String: Set<Sighting>] = [:]
    private var serverRunning = false

    private struct Sighting: Hashable {
        var interface: Int32
        var proto: Int32
    }

    private struct ResolverKey: Hashable {
        var name: String
        var sighting: Sighting
    }

    /// Avahi's resolver objects, per instance and sighting ("" while being created), and back.
    private var resolverPaths: [ResolverKey: String] = [:]
    private var resolverKeys: [String: ResolverKey] = [:]

    private static let avahiName = "org.freedesktop.Avahi"
    private static let serverInterface = "org.freedesktop.Avahi.Server"
    private static let server2Interface = "org.freedesktop.Avahi.Server2"
    private static let groupInterface = "org.freedesktop.Avahi.EntryGroup"
    private static let browserInterface = "org.freedesktop.Avahi.ServiceBrowser"
    private static let resolverInterface = "org.freedesktop.Avahi.ServiceResolver"
    private static let unspecified: Int32 = -1
    private static let lookupResultLocal: UInt32 = 8
    private static let callTimeout: Int32 = 10_000

    /// - Parameters:
    ///   - loop: the loop whose thread runs everything (the daemon's main loop).
    ///   - serviceType: ``serviceType`` unless testing.
    ///   - systemBusAddress: the system bus; default `DBUS_SYSTEM_BUS_ADDRESS`,
    ///     else `unix:path=/run/dbus/system_bus_socket`.
    public init(loop: MainLoop, serviceType: String = AvahiDiscovery.serviceType, systemBusAddress: String? = nil) {
        self.loop = loop
        self.type = serviceType
        if let systemBusAddress {
            busAddress = systemBusAddress
        } else if let variable = getenv("DBUS_SYSTEM_BUS_ADDRESS"), variable.pointee != 0 {
            busAddress = String(cString: variable)
        } else {
            busAddress = "unix:path=/run/dbus/system_bus_socket"
        }
    }

    deinit {
        connection?.close()
    }

    // MARK: - API

    /// Publishes this device: `_useractivity._tcp` on `port`, under
    /// `instanceName` (default: a random name, new for each start, that says
    /// nothing about the device), with `txt`. Replaces an earlier publication.
    /// While Avahi is missing the publication waits for it (see ``state``).
    public func start(port: UInt16, instanceName: String? = nil, txt: [String: String] = [:]) {
        publication = (port, txt)
        randomName = instanceName == nil
        self.instanceName = instanceName ?? Self.randomInstanceName()
        connectIfNeeded()
        if groupPath != nil {
            resetGroupAndRepublish()
        } else {
            publishIfPossible()
        }
    }

    /// Adds the device name (``nameKey``) and ``pairingKey`` to the TXT
    /// record while `discoverable`, removes both otherwise. Takes effect on a
    /// running publication at once, and on every later one.
    public func setDiscoverable(_ discoverable: Bool, name: String?) {
        discoverableName = discoverable ? (name ?? "") : nil
        if groupBusy {
            // A commit or reset is under way and may carry the old record: update once it is done.
            txtOutdated = true
            return
        }
        txtOutdated = false
        guard let path = groupPath, let owner = avahiOwner, let publication, let instanceName else { return }
        call(owner, path, Self.groupInterface, "UpdateServiceTxt", [
            .int32(Self.unspecified), .int32(Self.unspecified), .uint32(0), .string(instanceName), .string(type),
            .string(""), txtRecord(publication.txt),
        ]) { [weak self] result in
            // Older Avahi without UpdateServiceTxt: publish anew.
            if case .failure = result { self?.resetGroupAndRepublish() }
        }
    }

    /// Withdraws the publication (the browse goes on).
    public func withdraw() {
        publication = nil
        instanceName = nil
        freeGroup()
    }

    /// Browses for `_useractivity._tcp`. `onFound` is called for each
    /// instance once resolved, on each interface and address family it is
    /// seen on (so possibly more than once, with other addresses), and again
    /// whenever its address, port or TXT record change; `onLost`
    /// once it is gone from all of them, or when Avahi went away. This
    /// device's own publication is not reported. Replaces an earlier browse's callbacks.
    public func browse(onFound: @escaping (Service) -> Void, onLost: @escaping (String) -> Void) {
        self.onFound = onFound
        self.onLost = onLost
        connectIfNeeded()
        browseIfPossible()
    }

    /// Withdraws the publication, ends the browse and closes the connection
    /// to the system bus. ``start(port:instanceName:txt:)`` or
    /// ``browse(onFound:onLost:)`` start anew.
    public func stop() {
        publication = nil
        instanceName = nil
        onFound = nil
        onLost = nil
        if let owner = avahiOwner, let connection {
            let resolvers = resolverKeys.keys.map { (Optional($0), Self.resolverInterface) }
            for (path, interface) in [(groupPath, Self.groupInterface), (browserPath, Self.browserInterface)] + resolvers {
                guard let path, !path.isEmpty else { continue }
                let message = Message.methodCall(destination: owner, path: path, interface: interface, member: "Free")
                message.allowsAutoStart = false
                connection.send(message)
            }
            connection.flush()
        }
        connection?.close()
        connection = nil
        avahiOwner = nil
        groupPath = nil
        browserPath = nil
        groupBusy = false
        seen = [:]
        resolverPaths = [:]
        resolverKeys = [:]
        epoch += 1
        serverRunning = false
        state = .connecting  // not reported: the caller ended it
    }

    /// A fresh random instance name: `UserActivity ` and 16 hex digits.
    public static func randomInstanceName() -> String {
        var generator = SystemRandomNumberGenerator()
        let value = generator.next() as UInt64
        let hex = String(value, radix: 16)
        return "UserActivity " + String(repeating: "0", count: 16 - hex.count) + hex
    }

    // MARK: - Connection and Avahi's presence

    private func setState(_ new: State) {
        guard new != state else { return }
        state = new
        onStateChange?(new)
    }

    private func connectIfNeeded() {
        guard connection == nil else { return }
        let bus: Connection
        do {
            bus = try Connection.bus(address: busAddress)
            try DBusMainLoopBridge.attach(bus, to: loop)
            try bus.addFilter { [weak self] message in
                self?.handle(message) ?? false
            }
            try bus.addMatch("type='signal',sender='org.freedesktop.DBus',path='/org/freedesktop/DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Self.avahiName)'")
        } catch let failure as DBusFailure {
            setState(.unavailable("no system bus at \(busAddress) (\(failure.name): \(failure.message))"))
            return
        } catch {
            setState(.unavailable("no system bus at \(busAddress) (\(error))"))
            return
        }
        connection = bus
        let lookup = Message.methodCall(destination: Connection.busDriverName, path: "/org/freedesktop/DBus",
                                        interface: Connection.busDriverName, member: "GetNameOwner")
        try? lookup.append([.string(Self.avahiName)])
        let current = epoch
        bus.callAsync(lookup, timeoutMilliseconds: Self.callTimeout) { [weak self] result in
            guard let self, self.epoch == current else { return }
            switch result {
            case .success(let reply):
                if let owner = (try? reply.arguments())?.first?.stringValue { self.avahiAppeared(owner) }
            case .failure:
                self.setState(.unavailable("Avahi is not running: \(Self.avahiName) has no owner on the system bus at \(self.busAddress)"))
                self.activateAvahi()
            }
        }
    }

    /// Asks the bus to start Avahi when it is activatable (as on most
    /// desktops); its arrival is then seen in `NameOwnerChanged`.
    private func activateAvahi() {
        let start = Message.methodCall(destination: Connection.busDriverName, path: "/org/freedesktop/DBus",
                                       interface: Connection.busDriverName, member: "StartServiceByName")
        try? start.append([.string(Self.avahiName), .uint32(0)])
        connection?.callAsync(start, timeoutMilliseconds: 30_000) { _ in }
    }

    private func avahiAppeared(_ owner: String) {
        guard let connection, avahiOwner != owner else { return }
        avahiOwner = owner
        // Signals from Avahi come from its unique name: only those count.
        do {
            for interface in [Self.serverInterface, Self.groupInterface, Self.browserInterface, Self.resolverInterface] {
                try connection.addMatch("type='signal',sender='\(owner)',interface='\(interface)'")
            }
        } catch {
            setState(.unavailable("cannot subscribe to Avahi's signals: \(error)"))
            return
        }
        call(owner, "/", Self.serverInterface, "GetState", []) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let arguments):
                if case .int32(let server)? = arguments.first { self.serverStateChanged(server, error: "") }
            case .failure(let failure):
                self.setState(.unavailable("Avahi does not answer: \(failure.name): \(failure.message)"))
            }
        }
        browseIfPossible()
    }

    private func avahiVanished() {
        guard avahiOwner != nil else { return }
        avahiOwner = nil
        epoch += 1
        groupPath = nil
        groupBusy = false
        browserPath = nil
        serverRunning = false
        let lost = seen.keys.sorted()
        seen = [:]
        resolverPaths = [:]
        resolverKeys = [:]
        for instance in lost { onLost?(instance) }
        setState(.unavailable("Avahi left the system bus"))
    }

    /// Avahi's server states: 1 registering, 2 running, 3 collision, 4 failure.
    private func serverStateChanged(_ server: Int32, error: String) {
        switch server {
        case 2:
            serverRunning = true
            setState(.running)
            publishIfPossible()
        case 1, 3:
            // The host name is (re)registering: entries wait until it runs again.
            serverRunning = false
            if groupPath != nil, let owner = avahiOwner, let path = groupPath {
                call(owner, path, Self.groupInterface, "Reset", []) { _ in }
            }
        case 4:
            serverRunning = false
            setState(.unavailable("Avahi failed" + (error.isEmpty ? "" : ": \(error)")))
        default:
            break
        }
    }

    // MARK: - Publishing

    private func publishIfPossible() {
        guard publication != nil, serverRunning, let owner = avahiOwner, !groupBusy else { return }
        if let path = groupPath {
            addServiceAndCommit(owner: owner, group: path)
            return
        }
        groupBusy = true
        call(owner, "/", Self.serverInterface, "EntryGroupNew", []) { [weak self] result in
            guard let self else { return }
            self.groupBusy = false
            switch result {
            case .success(let arguments):
                guard let path = arguments.first?.objectPathValue else { return }
                self.groupPath = path
                if self.publication == nil {
                    self.freeGroup()
                } else {
                    self.addServiceAndCommit(owner: owner, group: path)
                }
            case .failure(let failure):
                self.setState(.unavailable("Avahi refused a new entry group: \(failure.name): \(failure.message)"))
            }
        }
    }

    private func addServiceAndCommit(owner: String, group: String) {
        guard let publication, let instanceName else { return }
        groupBusy = true
        call(owner, group, Self.groupInterface, "AddService", [
            .int32(Self.unspecified), .int32(Self.unspecified), .uint32(0), .string(instanceName), .string(type),
            .string(""), .string(""), .uint16(publication.port), txtRecord(publication.txt),
        ]) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success:
                self.call(owner, group, Self.groupInterface, "Commit", []) { [weak self] _ in
                    guard let self else { return }
                    self.groupBusy = false
                    if self.txtOutdated { self.setDiscoverable(self.discoverableName != nil, name: self.discoverableName) }
                }
            case .failure(let failure):
                self.groupBusy = false
                if failure.name == "org.freedesktop.Avahi.CollisionError" {
                    self.pickNewName()
                    self.resetGroupAndRepublish()
                } else {
                    self.setState(.unavailable("Avahi refused the service: \(failure.name): \(failure.message)"))
                }
            }
        }
    }

    private func resetGroupAndRepublish() {
        guard let owner = avahiOwner, let path = groupPath, !groupBusy else { return }
        groupBusy = true
        call(owner, path, Self.groupInterface, "Reset", []) { [weak self] _ in
            guard let self else { return }
            self.groupBusy = false
            self.publishIfPossible()
        }
    }

    private func freeGroup() {
        guard let owner = avahiOwner, let path = groupPath else { return }
        groupPath = nil
        call(owner, path, Self.groupInterface, "Free", []) { _ in }
    }

    private func pickNewName() {
        guard let current = instanceName else { return }
        if randomName {
            instanceName = Self.randomInstanceName()
        } else {
            // `Name`, `Name #2`, `Name #3`…, as Avahi's own alternative names.
            let parts = current.split(separator: "#", omittingEmptySubsequences: false)
            if parts.count > 1, let n = Int(parts[parts.count - 1]), parts[parts.count - 2].hasSuffix(" ") {
                instanceName = parts.dropLast().joined(separator: "#") + "#\(n + 1)"
            } else {
                instanceName = current + " #2"
            }
        }
    }

    /// Entry group states: 0 uncommitted, 1 registering, 2 established, 3 collision, 4 failure.
    private func groupStateChanged(_ group: Int32, error: String) {
        switch group {
        case 2:
            if let instanceName { onPublished?(instanceName) }
        case 3:
            pickNewName()
            resetGroupAndRepublish()
        case 4:
            setState(.unavailable("Avahi could not publish the service" + (error.isEmpty ? "" : ": \(error)")))
        default:
            break
        }
    }

    /// The TXT record: the caller's entries, plus the name while discoverable; sorted by key.
    private func txtRecord(_ base: [String: String]) -> TypedValue {
        var entries = base
        entries[Self.nameKey] = nil
        entries[Self.pairingKey] = nil
        if let discoverableName {
            entries[Self.nameKey] = discoverableName
            entries[Self.pairingKey] = "1"
        }
        return Self.encodeTXT(entries)
    }

    /// `key=value` strings as `aay`, sorted by key; an entry is cut at the
    /// DNS-SD limit of 255 bytes (at a UTF-8 character boundary).
    public static func encodeTXT(_ entries: [String: String]) -> TypedValue {
        let strings = entries.sorted { $0.key < $1.key }.map { entry -> TypedValue in
            var bytes = Array((entry.key + "=").utf8)
            for scalar in entry.value.unicodeScalars {
                let encoded = Array(String(scalar).utf8)
                if bytes.count + encoded.count > 255 { break }
                bytes += encoded
            }
            return .bytes(bytes)
        }
        return .array(elementType: "ay", strings)
    }

    /// An `aay` TXT record as keys and values (the first of a repeated key
    /// wins, as RFC 6763 says; invalid UTF-8 is repaired).
    public static func decodeTXT(_ value: TypedValue) -> [String: String] {
        guard case .array(_, let strings) = value else { return [:] }
        var result: [String: String] = [:]
        for string in strings {
            guard let bytes = string.bytesValue, !bytes.isEmpty else { continue }
            let key: [UInt8]
            let value: [UInt8]
            if let equals = bytes.firstIndex(of: UInt8(ascii: "=")) {
                key = Array(bytes[..<equals])
                value = Array(bytes[(equals + 1)...])
            } else {
                key = bytes
                value = []
            }
            guard !key.isEmpty else { continue }
            let name = String(decoding: key, as: UTF8.self).lowercased()
            if result[name] == nil { result[name] = String(decoding: value, as: UTF8.self) }
        }
        return result
    }

    // MARK: - Browsing

    private func browseIfPossible() {
        guard onFound != nil, browserPath == nil, let owner = avahiOwner else { return }
        let arguments: [TypedValue] = [
            .int32(Self.unspecified), .int32(Self.unspecified), .string(type), .string(""), .uint32(0),
        ]
        browserPath = ""  // being created
        // Server2's Prepare/Start: nothing is announced before the path is known.
        call(owner, "/", Self.server2Interface, "ServiceBrowserPrepare", arguments) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let reply):
                guard let path = reply.first?.objectPathValue else { return }
                self.browserPath = path
                self.call(owner, path, Self.browserInterface, "Start", []) { _ in }
            case .failure:
                // Avahi before 0.7: ServiceBrowserNew starts at once; the
                // match on the interface, added earlier, sees every item
                // once the path is known (items are matched on it after the reply).
                self.call(owner, "/", Self.serverInterface, "ServiceBrowserNew", arguments) { [weak self] result in
                    guard let self else { return }
                    if case .success(let reply) = result, let path = reply.first?.objectPathValue {
                        self.browserPath = path
                    } else {
                        self.browserPath = nil
                        self.setState(.unavailable("Avahi refused to browse for \(self.type)"))
                    }
                }
            }
        }
    }

    private func itemNew(interface: Int32, proto: Int32, name: String, domain: String, flags: UInt32) {
        if flags & Self.lookupResultLocal != 0, name == instanceName { return }
        let sighting = Sighting(interface: interface, proto: proto)
        seen[name, default: []].insert(sighting)
        guard let owner = avahiOwner else { return }
        let key = ResolverKey(name: name, sighting: sighting)
        guard resolverPaths[key] == nil else { return }
        let arguments: [TypedValue] = [
            .int32(interface), .int32(proto), .string(name), .string(type), .string(domain), .int32(proto), .uint32(0),
        ]
        resolverPaths[key] = ""  // being created
        // A resolver object follows the instance: Found again whenever its
        // address, port or TXT record change (Discoverable turned on or off).
        call(owner, "/", Self.server2Interface, "ServiceResolverPrepare", arguments) { [weak self] result in
            guard let self else { return }
            switch result {
            case .success(let reply):
                guard let path = reply.first?.objectPathValue else { return }
                guard self.seen[name]?.contains(sighting) == true else {
                    self.resolverPaths[key] = nil
                    self.call(owner, path, Self.resolverInterface, "Free", []) { _ in }
                    return
                }
                self.resolverPaths[key] = path
                self.resolverKeys[path] = key
                self.call(owner, path, Self.resolverInterface, "Start", []) { _ in }
            case .failure:
                // Avahi before 0.7: resolve once.
                self.resolverPaths[key] = nil
                self.call(owner, "/", Self.serverInterface, "ResolveService", arguments) { [weak self] result in
                    guard let self, self.seen[name]?.contains(sighting) == true, case .success(let reply) = result else { return }
                    self.resolved(name: name, interface: interface, reply)
                }
            }
        }
    }

    /// A resolution (`ResolveService`'s reply, or a resolver's `Found`):
    /// interface, protocol, name, type, domain, host, aprotocol, address, port, txt, flags.
    private func resolved(name: String, interface: Int32, _ reply: [TypedValue]) {
        guard reply.count >= 10, case .string(let host) = reply[5], case .string(var address) = reply[7],
              case .uint16(let port) = reply[8]
        else { return }
        let resultFlags: UInt32 = reply.count > 10 ? (reply[10].uint32Value ?? 0) : 0
        let interfaceName = Self.interfaceName(interface)
        if address.lowercased().hasPrefix("fe80:"), !address.contains("%"), !interfaceName.isEmpty {
            address += "%" + interfaceName
        }
        onFound?(Service(instance: name, hostName: host, address: address, port: port,
                         txt: Self.decodeTXT(reply[9]), interfaceIndex: interface,
                         interfaceName: interfaceName, isLocal: resultFlags & Self.lookupResultLocal != 0))
    }

    private func itemRemove(interface: Int32, proto: Int32, name: String) {
        guard var sightings = seen[name] else { return }
        let sighting = Sighting(interface: interface, proto: proto)
        sightings.remove(sighting)
        if let path = resolverPaths.removeValue(forKey: ResolverKey(name: name, sighting: sighting)), !path.isEmpty {
            resolverKeys[path] = nil
            if let owner = avahiOwner { call(owner, path, Self.resolverInterface, "Free", []) { _ in } }
        }
        if sightings.isEmpty {
            seen[name] = nil
            onLost?(name)
        } else {
            seen[name] = sightings
        }
    }

    private static func interfaceName(_ index: Int32) -> String {
        guard index > 0 else { return "" }
        var buffer = [CChar](repeating: 0, count: Int(IF_NAMESIZE) + 1)
        guard if_indextoname(UInt32(index), &buffer) != nil else { return "" }
        return String(decoding: buffer.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    // MARK: - Messages

    private func handle(_ message: Message) -> Bool {
        guard message.kind == .signal, let interface = message.interface, let member = message.member,
              let path = message.path
        else { return false }
        if interface == "org.freedesktop.DBus.Local", member == "Disconnected" {
            connection = nil
            avahiVanished()
            setState(.unavailable("the system bus closed the connection"))
            return false
        }
        if interface == Connection.busDriverName {
            guard member == "NameOwnerChanged", message.sender == Connection.busDriverName,
                  let arguments = try? message.arguments(), arguments.count == 3,
                  arguments[0].stringValue == Self.avahiName, let newOwner = arguments[2].stringValue
            else { return false }
            if avahiOwner != nil { avahiVanished() }
            if !newOwner.isEmpty { avahiAppeared(newOwner) }
            return false
        }
        // Avahi's own signals: from its unique name, on its objects.
        guard let owner = avahiOwner, message.sender == owner, let arguments = try? message.arguments() else { return false }
        switch (interface, member) {
        case (Self.serverInterface, "StateChanged") where path == "/":
            if case .int32(let server)? = arguments.first { serverStateChanged(server, error: arguments.last?.stringValue ?? "") }
        case (Self.groupInterface, "StateChanged") where path == groupPath:
            if case .int32(let group)? = arguments.first { groupStateChanged(group, error: arguments.last?.stringValue ?? "") }
        case (Self.browserInterface, "ItemNew") where path == browserPath,
             (Self.browserInterface, "ItemRemove") where path == browserPath:
            guard arguments.count == 6, case .int32(let interface) = arguments[0], case .int32(let proto) = arguments[1],
                  case .string(let name) = arguments[2], case .string(let domain) = arguments[4],
                  case .uint32(let flags) = arguments[5]
            else { return false }
            if member == "ItemNew" {
                itemNew(interface: interface, proto: proto, name: name, domain: domain, flags: flags)
            } else {
                itemRemove(interface: interface, proto: proto, name: name)
            }
        case (Self.resolverInterface, "Found"):
            guard let key = resolverKeys[path], seen[key.name]?.contains(key.sighting) == true else { return false }
            resolved(name: key.name, interface: key.sighting.interface, arguments)
        case (Self.browserInterface, "Failure") where path == browserPath:
            setState(.unavailable("Avahi's browse failed: \(arguments.first?.stringValue ?? "")"))
        default:
            return false
        }
        return true
    }

    /// Calls a method of Avahi (by its unique name, so the reply is checked
    /// to come from it); answers from before Avahi went away are dropped.
    private func call(_ owner: String, _ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue],
                      _ completion: @escaping (Result<[TypedValue], DBusFailure>) -> Void) {
        guard let connection else { return }
        let message = Message.methodCall(destination: owner, path: path, interface: interface, member: member)
        message.allowsAutoStart = false
        do {
            try message.append(arguments)
        } catch {
            completion(.failure(error))
            return
        }
        let current = epoch
        connection.callAsync(message, timeoutMilliseconds: Self.callTimeout) { [weak self] result in
            guard let self, self.epoch == current else { return }
            switch result {
            case .success(let reply):
                do throws(DBusFailure) { completion(.success(try reply.arguments())) } catch { completion(.failure(error)) }
            case .failure(let failure):
                completion(.failure(failure))
            }
        }
    }
}
