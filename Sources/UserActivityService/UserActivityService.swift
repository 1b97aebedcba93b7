// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import ActivityStore
import DBusKit
import GLibSupport
import Logging
import TypedValues
import UserActivityCore
#if canImport(Glibc)
import Glibc
#endif

/// What the service needs from its surroundings; tests inject their own.
public struct ServiceConfiguration: Sendable {
    public var version = UserActivityVersion.current
    /// Where `/proc` is (tests point it at fixture trees).
    public var procRoot = "/proc"
    public var applicationDirectories: [String]
    /// `$XDG_STATE_HOME/useractivity`; nil keeps saved activities in memory only (tests).
    public var stateDirectory: String?
    /// `$XDG_CONFIG_HOME/useractivity` (privacy settings); nil keeps them in memory only.
    public var configDirectory: String?
    public var limits = ActivityLimits.standard
    /// Wall-clock time in Unix microseconds.
    public var clock: @Sendable () -> Int64 = { currentTimeMicroseconds() }

    public init(applicationDirectories: [String], stateDirectory: String?) {
        self.applicationDirectories = applicationDirectories
        self.stateDirectory = stateDirectory
    }
}

/// The `org.example.UserActivity` service on one bus connection: routes
/// method calls through the dispatch tables to handlers, which decode, call
/// the core, reply, and turn the core's events into signals.
public final class UserActivityService {
    typealias Handler = (UserActivityService, Invocation) -> Void

    let bus: Connection
    let loop: MainLoop
    let configuration: ServiceConfiguration
    let log: Logger
    let registry: ActivityRegistry
    private(set) var catalog: AppCatalog
    var callers: CallerTracker!
    let saved: SavedActivities
    /// Continuation: handlers, tokens, continuations in flight.
    var continuation: ContinuationService!

    private var directoryMonitor: DirectoryMonitor?
    private var expiryTimer: GLibSource?
    /// The pending write of waiting donations (see ``SavedActivities/donate(type:app:properties:now:completion:)``):
    /// when the loop is idle, or after a deadline; whichever comes first cancels both.
    private var donationWrite: (whenIdle: GLibSource, deadline: GLibSource)?
    private var expiryTimerDate: Int64?

    /// Further objects below the manager (search providers): path → dispatch table.
    private(set) var extraObjects: [String: DispatchTable] = [:]

    /// A method's handler and the signature its arguments must have.
    struct MethodRoute {
        let inputSignature: String
        let handler: Handler
    }

    /// Interface name → member → route.
    typealias DispatchTable = [String: [String: MethodRoute]]

    /// Pairs each handler with the input signature `signature(interface, member)` gives.
    private static func dispatchTable(_ handlers: [String: [String: Handler]],
                                      signature: (String, String) -> String?) -> DispatchTable {
        var table: DispatchTable = [:]
        for (interface, members) in handlers {
            for (member, handler) in members {
                guard let input = signature(interface, member) else {
                    preconditionFailure("no documented signature for \(interface).\(member)")
                }
                table[interface, default: [:]][member] = MethodRoute(inputSignature: input, handler: handler)
            }
        }
        return table
    }

    /// Exports another object under `/org/example/UserActivity/…`, dispatched
    /// from `interfaces` (their input signatures are checked like ours). The
    /// object also answers `Introspect` with the interfaces' XML.
    func exportObject(path: String, interfaces: [InterfaceDescription], handlers: [String: [String: Handler]]) {
        precondition(path.hasPrefix(Interfaces.managerPath + "/"), "objects live under the manager")
        for interface in interfaces {
            for method in interface.methods {
                precondition(handlers[interface.name]?[method.name] != nil, "no handler for \(interface.name).\(method.name)")
            }
        }
        var all = handlers
        all["org.freedesktop.DBus.Introspectable"] = ["Introspect": { _, invocation in
            var xml = StandardInterfacesXML.doctype + "<node>\n"
            for interface in interfaces { xml += interface.xml() }
            xml += StandardInterfacesXML.introspectable + StandardInterfacesXML.peer + "</node>\n"
            invocation.reply([.string(xml)])
        }]
        extraObjects[path] = Self.dispatchTable(all) { interface, member in
            interfaces.first { $0.name == interface }?.method(member)?.inputSignature
                ?? Self.standardSignatures[interface]?[member]
        }
    }

    /// The manager's and the activity objects' dispatch tables.
    private var managerRoutes: DispatchTable = [:]
    private var activityRoutes: DispatchTable = [:]

    public init(bus: Connection, loop: MainLoop, configuration: ServiceConfiguration, log: Logger) throws {
        self.bus = bus
        self.loop = loop
        self.configuration = configuration
        self.log = log
        self.catalog = AppCatalog.load(applicationDirectories: configuration.applicationDirectories,
                                       loadKeyFile: { GLibKeyFile.load(path: $0) })
        self.saved = try SavedActivities(stateDirectory: configuration.stateDirectory, configDirectory: configuration.configDirectory,
                                         clock: configuration.clock, log: log)
        var isDeclared: (String, String) -> Bool = { _, _ in false }
        self.registry = ActivityRegistry(limits: configuration.limits, isDeclared: { isDeclared($0, $1) })
        isDeclared = { [unowned self] app, type in self.catalog.app(app)?.declares(type) ?? false }
        self.callers = CallerTracker(
            bus: bus, probe: ProcessIdentityProbe(procRoot: configuration.procRoot, loadKeyFile: { GLibKeyFile.load(path: $0) }),
            catalog: { [unowned self] in self.catalog }, log: log)
        self.continuation = ContinuationService(service: self)
        // Donations wait for the loop to have read every call queued on the bus, then share one commit;
        // at most a few milliseconds, should other callers keep the bus busy all that time.
        saved.scheduleWrite = { [unowned self] write in
            let run = { [unowned self] in
                donationWrite = nil
                write()
            }
            donationWrite = (loop.whenNothingElseIsReady(run),
                             loop.after(milliseconds: SavedActivities.longestDonationWaitMilliseconds, run))
        }
        for warning in catalog.warnings { log.warning("\(warning)") }
        buildDispatchTables()
    }

    // MARK: Exporting

    /// Registers the objects and subscriptions; call before requesting the name.
    public func export() throws {
        // As many descriptors as the kernel passes in one message (SCM_MAX_FD):
        // more than libdbus's 16 must not cost us the bus (they are closed unread).
        bus.setMaximumMessageUnixFDs(253)
        try bus.addMatch("type='signal',sender='org.freedesktop.DBus',interface='org.freedesktop.DBus',member='NameOwnerChanged'")
        callers.beganWatchingConnections()
        try bus.addFilter { [unowned self] message in self.filter(message) }
        try bus.registerFallback(path: Interfaces.managerPath) { [unowned self] message in self.route(message) }
        callers.learnNameOwners()
        directoryMonitor = loop.withThreadDefault {
            DirectoryMonitor(directories: configuration.applicationDirectories) { [unowned self] in self.reloadCatalog() }
        }
        saved.privacy.onChange = { [unowned self] names in
            propertiesChanged(Interfaces.managerPath, Interfaces.managerName,
                              names.compactMap { name in saved.privacy.settings.value(of: name).map { (name, $0) } })
        }
        loop.withThreadDefault { saved.privacy.start(on: loop) }
        saved.purgeExpired(now: configuration.clock())
        rearmExpiryTimer()
        exportDesktopSearch()
    }

    /// Writes and answers the donations still waiting; call after the loop
    /// stops (SIGTERM), before the last flush of the connection.
    public func finishPendingWrites() {
        saved.writePendingDonations()
    }

    /// Re-reads the desktop entries (they changed on disk).
    public func reloadCatalog() {
        catalog = AppCatalog.load(applicationDirectories: configuration.applicationDirectories,
                                  loadKeyFile: { GLibKeyFile.load(path: $0) })
        log.info("desktop entries reloaded", metadata: ["apps": "\(catalog.apps.count)"])
        for warning in catalog.warnings { log.warning("\(warning)") }
    }

    /// Called when the service loses its bus name or the bus goes away.
    public var onNameLost: (() -> Void)?

    private func filter(_ message: Message) -> Bool {
        guard message.kind == .signal else { return false }
        if message.interface == "org.freedesktop.DBus.Local" && message.member == "Disconnected" {
            log.notice("the session bus went away; exiting")
            onNameLost?()
            return false
        }
        // Any client can send us a unicast signal that looks like the bus's:
        // only the bus daemon itself is believed (a forged NameLost would
        // make the service exit).
        guard message.interface == "org.freedesktop.DBus", message.sender == "org.freedesktop.DBus" else { return false }
        switch message.member {
        case "NameOwnerChanged":
            guard let arguments = try? message.arguments(), arguments.count == 3,
                  let name = arguments[0].stringValue, let old = arguments[1].stringValue,
                  let new = arguments[2].stringValue
            else { return false }
            nameOwnerChanged(name: name, oldOwner: old, newOwner: new)
        case "NameLost":
            if (try? message.arguments())?.first?.stringValue == Interfaces.busName {
                log.notice("lost the bus name \(Interfaces.busName); exiting")
                onNameLost?()
            }
        default:
            return false
        }
        return false
    }

    private func nameOwnerChanged(name: String, oldOwner: String, newOwner: String) {
        callers.nameOwnerChanged(name: name, oldOwner: oldOwner, newOwner: newOwner)
        if name.hasPrefix(":") && newOwner.isEmpty {
            continuation.connectionClosed(name)
            let events = registry.connectionClosed(name)
            if !events.isEmpty {
                log.debug("connection closed; its activities were invalidated", metadata: ["sender": "\(name)"])
                emit(events)
            }
        }
    }

    // MARK: Routing

    private func buildDispatchTables() {
        let managerHandlers: [String: [String: Handler]] = [
            Interfaces.managerName: [
                "CreateActivity": { $0.createActivity($1) },
                "BecomeCurrent": { $0.createAndBecomeCurrent($1) },
                "Donate": { $0.donate($1) },
                "Search": { $0.search($1) },
                "GetSuggestions": { $0.getSuggestions($1) },
                "ContinueActivity": { $0.continuation.continueActivity($1) },
                "ContinueSavedActivity": { $0.continuation.continueSavedActivity($1) },
                "RegisterApplication": { $0.registerApplication($1) },
                "RegisterHandler": { $0.continuation.registerHandler($1) },
                "OpenContinuationStream": { $0.continuation.openContinuationStream($1) },
                "DeleteSavedActivities": { $0.deleteSavedActivities($1) },
                "DeleteAllSavedActivities": { $0.deleteAllSavedActivities($1) },
                "ForgetApplication": { $0.forgetApplication($1) },
                "ForgetRange": { $0.forgetRange($1) },
                "ForgetAll": { $0.forgetAll($1) },
            ],
            "org.freedesktop.DBus.Properties": [
                "Get": { $0.managerPropertyGet($1) }, "GetAll": { $0.managerPropertyGetAll($1) }, "Set": { $0.managerPropertySet($1) },
            ],
            "org.freedesktop.DBus.ObjectManager": ["GetManagedObjects": { $0.getManagedObjects($1) }],
            "org.freedesktop.DBus.Introspectable": ["Introspect": { $0.introspectManager($1) }],
        ]
        let activityHandlers: [String: [String: Handler]] = [
            Interfaces.activityName: [
                "Update": { $0.update($1) },
                "AddUserInfoEntries": { $0.addUserInfoEntries($1) },
                "BecomeCurrent": { $0.becomeCurrent($1) },
                "ResignCurrent": { $0.resignCurrent($1) },
                "Invalidate": { $0.invalidate($1) },
                "Continue": { $0.continuation.continueLiveActivity($1) },
            ],
            "org.freedesktop.DBus.Properties": [
                "Get": { $0.activityPropertyGet($1) }, "GetAll": { $0.activityPropertyGetAll($1) }, "Set": { $0.activityPropertySet($1) },
            ],
            "org.freedesktop.DBus.Introspectable": ["Introspect": { $0.introspectActivity($1) }],
        ]
        // Every documented method must have a handler: a gap is a programming error.
        for (interface, table) in [(Interfaces.manager, managerHandlers), (Interfaces.activity, activityHandlers)] {
            for method in interface.methods where table[interface.name]?[method.name] == nil {
                preconditionFailure("no handler for \(interface.name).\(method.name)")
            }
        }
        let signature = { (interface: String, member: String) in
            Self.ourInterfaces[interface]?.method(member)?.inputSignature ?? Self.standardSignatures[interface]?[member]
        }
        managerRoutes = Self.dispatchTable(managerHandlers, signature: signature)
        activityRoutes = Self.dispatchTable(activityHandlers, signature: signature)
    }

    /// Signatures of the standard interfaces' methods we handle.
    private static let standardSignatures: [String: [String: String]] = [
        "org.freedesktop.DBus.Properties": ["Get": "ss", "GetAll": "s", "Set": "ssv"],
        "org.freedesktop.DBus.ObjectManager": ["GetManagedObjects": ""],
        "org.freedesktop.DBus.Introspectable": ["Introspect": ""],
    ]

    private static let ourInterfaces = [Interfaces.managerName: Interfaces.manager, Interfaces.activityName: Interfaces.activity]

    private func route(_ message: Message) -> Bool {
        guard message.kind == .methodCall, let path = message.path, let member = message.member else { return false }
        // A connection's first call waits for its identity; the calls behind
        // it wait too, even those answered without one, so that replies come
        // in the order the calls were sent. (libdbus answers Peer itself.)
        let sender = message.sender ?? ""
        if callers.isResolving(sender), message.interface != "org.freedesktop.DBus.Peer" {
            callers.afterResolving(sender) { [unowned self] in _ = route(message) }
            return true
        }
        let interface = message.interface
        let routes: DispatchTable
        var activityID: String?
        if path == Interfaces.managerPath {
            routes = managerRoutes
        } else if path.hasPrefix(Interfaces.activityPathPrefix) {
            let id = String(path.dropFirst(Interfaces.activityPathPrefix.count))
            guard registry.activity(id) != nil else {
                send(error: "org.freedesktop.DBus.Error.UnknownObject",
                     "no activity at \(path): it was invalidated or its connection closed", to: message)
                return true
            }
            activityID = id
            routes = activityRoutes
        } else if let object = extraObjects[path] {
            routes = object
        } else if path == Interfaces.managerPath + "/activity" {
            if interface == nil || interface == "org.freedesktop.DBus.Introspectable", member == "Introspect" {
                let invocation = Invocation(message: message, sender: sender, arguments: [], activityID: nil, bus: bus)
                invocation.reply([.string(activityContainerXML())])
                return true
            }
            send(error: "org.freedesktop.DBus.Error.UnknownMethod", "\(path) only serves Introspect", to: message)
            return true
        } else {
            send(error: "org.freedesktop.DBus.Error.UnknownObject", "no object at \(path)", to: message)
            return true
        }

        // A call without an interface goes to the first interface that has the member.
        let interfaceName = interface ?? routes.keys.sorted().first { routes[$0]?[member] != nil }
        guard let interfaceName, let table = routes[interfaceName] else {
            if interface == "org.freedesktop.DBus.Peer" { return false } // libdbus answers Peer itself
            send(error: "org.freedesktop.DBus.Error.UnknownInterface",
                 "\(path) has no interface \(interface ?? "with member \(member)")", to: message)
            return true
        }
        guard let route = table[member] else {
            send(error: "org.freedesktop.DBus.Error.UnknownMethod", "\(interfaceName) has no method \(member)", to: message)
            return true
        }
        let expected = route.inputSignature
        let actual = message.signature
        guard actual == expected else {
            send(error: "org.freedesktop.DBus.Error.InvalidArgs",
                 "\(interfaceName).\(member) takes arguments of type (\(expected)) but was called with (\(actual))", to: message)
            return true
        }
        let arguments: [TypedValue]
        do {
            arguments = try message.arguments()
        } catch {
            send(error: "org.freedesktop.DBus.Error.InvalidArgs", "the arguments could not be read: \(error.message)", to: message)
            return true
        }
        // No method takes a file descriptor, but a variant can carry one.
        if message.carriesFileDescriptors { TypedValue.closeFileDescriptors(in: arguments) }
        route.handler(self, Invocation(message: message, sender: sender, arguments: arguments, activityID: activityID, bus: bus))
        return true
    }

    func send(error name: String, _ text: String, to message: Message) {
        guard message.expectsReply else { return }
        bus.send(Message.error(to: message, name: name, message: text))
    }

    /// Runs `body` with the caller's identity; errors it throws become the reply.
    func withCaller(_ invocation: Invocation, _ body: @escaping (inout ConnectionIdentity) throws -> Void) {
        callers.withIdentity(of: invocation.sender) { identity in
            do { try body(&identity) } catch { invocation.fail(error) }
        }
    }

    // MARK: Events → signals

    static func path(of id: String) -> String { Interfaces.activityPathPrefix + id }

    /// Writes the saved copies the events ask for; the reply waits for this so
    /// that an acknowledged save is durable.
    func persist(_ events: [RegistryEvent]) throws {
        for case .saveRequested(let id, let countsAsUse) in events {
            guard let activity = registry.activity(id) else { continue }
            // NeedsSave with a handler: written after the owner's SaveActivity, without holding up the reply.
            if continuation.needsSave.deferSave(of: activity, countsAsUse: countsAsUse) { continue }
            try saved.save(activity, countsAsUse: countsAsUse, now: configuration.clock())
        }
    }

    /// Emits the signals for what changed. Called after the reply; the
    /// signals are built and sent once the caller has had time to read it
    /// (``Connection/whenQuiet(_:)``), from what the events saw now.
    func emit(_ events: [RegistryEvent]) {
        for event in events {
            switch event {
            case .added(let id):
                guard let activity = registry.activity(id) else { continue }
                // A copy of the activity as it is now: the signal's 21 properties are only put together later.
                let isCurrent = registry.currentID == id
                signal(Interfaces.managerPath, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded") { [
                    .objectPath(Self.path(of: id)),
                    .dictionary(keyType: "s", valueType: "a{sv}", [
                        .init(key: .string(Interfaces.activityName), value: Self.allProperties(of: activity, isCurrent: isCurrent)),
                    ]),
                ] }
            case .removed(let id):
                signal(Interfaces.managerPath, "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved", [
                    .objectPath(Self.path(of: id)), .stringArray([Interfaces.activityName]),
                ])
            case .propertiesChanged(let id, let fields):
                guard let activity = registry.activity(id) else { continue }
                let isCurrent = registry.currentID == id
                propertiesChanged(Self.path(of: id), Interfaces.activityName,
                                  fields.map { ($0.propertyName, activity.value(of: $0, isCurrent: isCurrent)) })
            case .currentChanged(let from, let to):
                if let from, registry.activity(from) != nil {
                    propertiesChanged(Self.path(of: from), Interfaces.activityName, [("Current", .boolean(false))])
                }
                if let to, registry.activity(to) != nil {
                    propertiesChanged(Self.path(of: to), Interfaces.activityName, [("Current", .boolean(true))])
                }
                propertiesChanged(Interfaces.managerPath, Interfaces.managerName, [("CurrentActivity", currentActivityPath)])
            case .saveRequested:
                break
            }
        }
        rearmExpiryTimer()
    }

    var currentActivityPath: TypedValue { .objectPath(registry.currentID.map(Self.path(of:)) ?? "/") }

    func allProperties(of activity: LiveActivity) -> TypedValue {
        Self.allProperties(of: activity, isCurrent: registry.currentID == activity.id)
    }

    static func allProperties(of activity: LiveActivity, isCurrent: Bool) -> TypedValue {
        // Straight into the entries: no intermediate array of pairs.
        var entries: [TypedValue.DictionaryEntry] = []
        entries.reserveCapacity(ActivityField.allCases.count)
        for field in ActivityField.allCases {
            entries.append(.init(key: .string(field.propertyName), value: .variant(activity.value(of: field, isCurrent: isCurrent))))
        }
        return .dictionary(keyType: "s", valueType: "v", entries)
    }

    func propertiesChanged(_ path: String, _ interface: String, _ changed: [(String, TypedValue)]) {
        signal(path, "org.freedesktop.DBus.Properties", "PropertiesChanged",
               [.string(interface), .stringVariantDictionary(changed), .stringArray([])])
    }

    /// Sends a signal once the caller has had time to read its reply (``Connection/whenQuiet(_:)``).
    func signal(_ path: String, _ interface: String, _ member: String, _ values: [TypedValue]) {
        signal(path, interface, member) { values }
    }

    /// `values` runs later, so it must capture what it needs, not read the registry.
    private func signal(_ path: String, _ interface: String, _ member: String,
                        _ values: @escaping () -> [TypedValue]) {
        bus.whenQuiet { [unowned bus, log] in
            do {
                bus.send(try Message.signal(path: path, interface: interface, member: member, arguments: values()))
            } catch {
                log.error("could not emit \(interface).\(member): \(error)")
            }
        }
    }

    // MARK: Expiry

    /// One GLib timeout for the earliest expiration date; no polling.
    private func rearmExpiryTimer() {
        let next = [registry.nextExpiration(), saved.nextExpiration()].compactMap { $0 }.min()
        guard next != expiryTimerDate || expiryTimer?.isActive != true else { return }
        expiryTimer?.cancel()
        expiryTimer = nil
        expiryTimerDate = next
        guard let next else { return }
        let delayMilliseconds = max(0, min((next - configuration.clock()) / 1000 + 1, 86_400_000))
        expiryTimer = loop.after(milliseconds: UInt32(delayMilliseconds)) { [unowned self] in
            self.expiryTimer = nil
            self.expiryTimerDate = nil
            let now = configuration.clock()
            saved.purgeExpired(now: now)
            emit(registry.expireDue(now: now))
        }
    }
}

extension TypedValue {
    /// Closes every file descriptor in `values`. libdbus gives whoever reads
    /// a message a `dup()` of each descriptor in it; the service takes none,
    /// so it closes them at once (else every call carrying one would leak a
    /// descriptor until the daemon runs out).
    static func closeFileDescriptors(in values: [TypedValue]) {
        for value in values {
            switch value {
            case .unixFD(let fd): close(fd)
            case .variant(let inner): closeFileDescriptors(in: [inner])
            case .array(_, let elements), .structure(let elements): closeFileDescriptors(in: elements)
            case .dictionary(_, _, let entries): closeFileDescriptors(in: entries.flatMap { [$0.key, $0.value] })
            default: break
            }
        }
    }
}
