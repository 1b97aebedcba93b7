// SPDX-License-Identifier: Apache-2.0
import GLibSupport
import DBusKit
import HandoffCore
import Logging
import TypedValues
import UserActivityInterfaces
#if canImport(Glibc)
import Glibc
#endif

/// Whether the session is locked, and a callback when that changes.
protocol SessionLockMonitor: AnyObject {
    var isLocked: Bool { get }
    func start(onChange: @escaping () -> Void) throws
    /// Sees every message of the session bus first; false to pass it on.
    func handle(_ message: Message) -> Bool
}

/// `org.freedesktop.ScreenSaver` on the session bus: GetActive, ActiveChanged.
final class ScreenSaverLockMonitor: SessionLockMonitor {
    private let bus: Connection
    private(set) var isLocked = false
    private var onChange: (() -> Void)?
    static let name = "org.freedesktop.ScreenSaver"

    init(bus: Connection) { self.bus = bus }

    func start(onChange: @escaping () -> Void) throws {
        self.onChange = onChange
        try bus.addMatch("type='signal',interface='\(Self.name)',member='ActiveChanged'")
        let call = Message.methodCall(destination: Self.name, path: "/org/freedesktop/ScreenSaver", interface: Self.name, member: "GetActive")
        call.allowsAutoStart = false
        bus.callAsync(call, timeoutMilliseconds: 5000) { [weak self] result in
            guard let self, case .success(let reply) = result, case .boolean(let active)? = try? reply.arguments().first else { return }
            self.set(active)
        }
    }

    func handle(_ message: Message) -> Bool {
        guard message.kind == .signal, message.interface == Self.name, message.member == "ActiveChanged",
              case .boolean(let active)? = try? message.arguments().first else { return false }
        set(active)
        return false
    }

    private func set(_ locked: Bool) {
        guard locked != isLocked else { return }
        isLocked = locked
        onChange?()
    }
}

/// logind's `LockedHint` of this session, on the system bus: the session of
/// `XDG_SESSION_ID`, else the user's display session (`User.Display`).
final class LogindLockMonitor: SessionLockMonitor {
    static let name = "org.freedesktop.login1"
    private let system: Connection
    private let sessionID: String?
    private let log: Logger
    private(set) var isLocked = false
    private var sessionPath: String?
    private var onChange: (() -> Void)?

    init(system: Connection, sessionID: String?, log: Logger) {
        self.system = system
        self.sessionID = sessionID
        self.log = log
    }

    func start(onChange: @escaping () -> Void) throws {
        self.onChange = onChange
        try system.addFilter { [weak self] message in self?.handle(message) ?? false }
        try system.addMatch("type='signal',sender='\(Self.name)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        findSession()
    }

    private func call(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue],
                      _ completion: @escaping ([TypedValue]?) -> Void) {
        guard let message = try? Message.methodCall(destination: Self.name, path: path, interface: interface, member: member, arguments: arguments) else {
            return completion(nil)
        }
        system.callAsync(message, timeoutMilliseconds: 10_000) { result in
            completion(try? result.get().arguments())
        }
    }

    private func findSession() {
        if let sessionID, !sessionID.isEmpty {
            call("/org/freedesktop/login1", "org.freedesktop.login1.Manager", "GetSession", [.string(sessionID)]) { [weak self] values in
                guard let self else { return }
                if let path = values?.first?.objectPathValue { self.watch(path) } else { self.findDisplaySession() }
            }
        } else {
            findDisplaySession()
        }
    }

    private func findDisplaySession() {
        call("/org/freedesktop/login1", "org.freedesktop.login1.Manager", "GetUser", [.uint32(getuid())]) { [weak self] values in
            guard let self, let user = values?.first?.objectPathValue else {
                self?.log.info("logind: no session found; the screen saver alone tells whether the session is locked")
                return
            }
            self.call(user, "org.freedesktop.DBus.Properties", "Get", [.string("org.freedesktop.login1.User"), .string("Display")]) { values in
                guard case .variant(.structure(let fields))? = values?.first, fields.count == 2, let path = fields[1].objectPathValue, path != "/" else {
                    self.log.info("logind: the user has no display session; the screen saver alone tells whether the session is locked")
                    return
                }
                self.watch(path)
            }
        }
    }

    private func watch(_ path: String) {
        sessionPath = path
        call(path, "org.freedesktop.DBus.Properties", "Get", [.string("org.freedesktop.login1.Session"), .string("LockedHint")]) { [weak self] values in
            if case .variant(.boolean(let locked))? = values?.first { self?.set(locked) }
        }
    }

    func handle(_ message: Message) -> Bool {
        guard message.kind == .signal, message.member == "PropertiesChanged", let sessionPath, message.path == sessionPath,
              let arguments = try? message.arguments(), arguments.count >= 2,
              let entry = arguments[1].stringVariantEntries?.first(where: { $0.0 == "LockedHint" }),
              case .boolean(let locked) = entry.1 else { return false }
        set(locked)
        return false
    }

    private func set(_ locked: Bool) {
        guard locked != isLocked else { return }
        isLocked = locked
        onChange?()
    }
}

/// Locked when either source says so (logind's LockedHint, the screen saver).
final class EitherLockMonitor: SessionLockMonitor {
    private let monitors: [SessionLockMonitor]
    init(_ monitors: [SessionLockMonitor]) { self.monitors = monitors }
    var isLocked: Bool { monitors.contains { $0.isLocked } }
    func start(onChange: @escaping () -> Void) throws {
        for monitor in monitors { try monitor.start(onChange: onChange) }
    }
    func handle(_ message: Message) -> Bool { monitors.contains { $0.handle(message) } }
}

/// The local useractivityd as handoff sees it: the current activity, the
/// privacy settings, and the calls a handoff needs.
///
/// The advert follows the service's signals without a round trip: the
/// manager's properties come from `GetAll` once per service instance, then
/// from `PropertiesChanged`; the few fields an advert needs of every live
/// activity come from `GetManagedObjects`, `InterfacesAdded` and the
/// activity's `PropertiesChanged`. Only signals sent by the service's unique
/// name are read for content (anyone may address a signal to this
/// connection); anything else, or a change the copies cannot follow, falls
/// back to reading the properties again.
final class ActivitySource {
    private let bus: Connection
    private let log: Logger
    private let changed: () -> Void
    /// The advert's timestamp is when the activity became current, on the wall clock.
    private let scheduler: Scheduler
    let lock: SessionLockMonitor
    private(set) var current: Advert?
    private(set) var conditions = AdvertConditions()
    private var currentPath = "/"
    private var currentSince: Int64 = 0
    private var generation = 0
    /// The service's unique name, learnt from its replies and NameOwnerChanged.
    private var serviceOwner = ""
    /// The manager's properties; nil until read from this service instance.
    private var manager: [String: TypedValue]?
    /// ``Advert/propertyNames`` of each live activity, by object path.
    private var activities: [String: [String: TypedValue]] = [:]

    init(bus: Connection, log: Logger, scheduler: Scheduler, lock: SessionLockMonitor? = nil, changed: @escaping () -> Void) {
        self.bus = bus
        self.scheduler = scheduler
        self.log = log
        self.lock = lock ?? ScreenSaverLockMonitor(bus: bus)
        self.changed = changed
    }

    func start() throws {
        try bus.addMatch("type='signal',sender='\(Interfaces.busName)',interface='org.freedesktop.DBus.Properties',member='PropertiesChanged'")
        try bus.addMatch("type='signal',sender='\(Interfaces.busName)',interface='org.freedesktop.DBus.ObjectManager'")
        try bus.addMatch("type='signal',sender='org.freedesktop.DBus',member='NameOwnerChanged',arg0='\(Interfaces.busName)'")
        try lock.start { [weak self] in self?.recompute() }
        introduce()
        refresh()
    }

    /// Calls GetManagedObjects once per service instance: that subscribes
    /// this connection to the service's activity signals (it sends them only
    /// to connections that asked). The reply gives the activities that already exist.
    private func introduce() {
        let call = Message.methodCall(destination: Interfaces.busName, path: Interfaces.managerPath,
                                      interface: "org.freedesktop.DBus.ObjectManager", member: "GetManagedObjects")
        call.allowsAutoStart = false
        bus.callAsync(call, timeoutMilliseconds: 10_000) { [weak self] result in
            guard let self, case .success(let reply) = result, self.learnOwner(from: reply),
                  case .dictionary(_, _, let objects)? = (try? reply.arguments())?.first else { return }
            // The service sends in order: this reply is newer than every signal before it.
            var activities: [String: [String: TypedValue]] = [:]
            for object in objects {
                guard let path = object.key.objectPathValue, case .dictionary(_, _, let interfaces) = object.value,
                      let properties = interfaces.first(where: { $0.key.stringValue == Interfaces.activityName })?.value.stringVariantEntries
                else { continue }
                activities[path] = Self.advertPart(of: properties)
            }
            self.activities = activities
        }
    }

    /// Takes the sender of a reply as the service's owner when none is known yet.
    private func learnOwner(from reply: Message) -> Bool {
        guard let sender = reply.sender, !sender.isEmpty else { return false }
        if serviceOwner.isEmpty { serviceOwner = sender }
        return sender == serviceOwner
    }

    private static func advertPart(of properties: [(String, TypedValue)]) -> [String: TypedValue] {
        var kept: [String: TypedValue] = [:]
        for (name, value) in properties where Advert.propertyNames.contains(name) { kept[name] = value }
        return kept
    }

    /// Sees every message of the session bus first; never consumes it.
    func handle(_ message: Message) -> Bool {
        if lock.handle(message) { return true }
        guard message.kind == .signal, let path = message.path else { return false }
        if message.member == "NameOwnerChanged" && message.interface == "org.freedesktop.DBus",
           message.sender == "org.freedesktop.DBus", let arguments = try? message.arguments(),
           arguments.count == 3, arguments[0].stringValue == Interfaces.busName {
            serviceOwner = arguments[2].stringValue ?? ""
            manager = nil
            activities = [:]
            introduce()
            refresh()
            return false
        }
        let fromService = !serviceOwner.isEmpty && message.sender == serviceOwner
        switch (message.interface, message.member) {
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"?) where fromService:
            guard let arguments = try? message.arguments(), arguments.count == 2, let added = arguments[0].objectPathValue,
                  case .dictionary(_, _, let interfaces) = arguments[1],
                  let properties = interfaces.first(where: { $0.key.stringValue == Interfaces.activityName })?.value.stringVariantEntries
            else { return false }
            activities[added] = Self.advertPart(of: properties)
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"?) where fromService:
            if let removed = (try? message.arguments())?.first?.objectPathValue { activities[removed] = nil }
        case ("org.freedesktop.DBus.Properties", "PropertiesChanged"?):
            if path == Interfaces.managerPath {
                guard fromService, let changes = Self.changes(in: message), var next = manager else { refresh(); break }
                for (name, value) in changes { next[name] = value }
                manager = next
                follow(next)
            } else if path.hasPrefix(Interfaces.activityPathPrefix) {
                let changes = fromService ? Self.changes(in: message) : nil
                if let changes, var known = activities[path] {
                    for (name, value) in changes where Advert.propertyNames.contains(name) { known[name] = value }
                    activities[path] = known
                    if path == currentPath, let manager { follow(manager) }
                } else if path == currentPath {
                    refresh()
                }
            }
        default: break
        }
        return false
    }

    /// The changed properties of a PropertiesChanged; nil when it invalidates some (their values are not in it).
    private static func changes(in message: Message) -> [(String, TypedValue)]? {
        guard let arguments = try? message.arguments(), arguments.count == 3, let changed = arguments[1].stringVariantEntries,
              case .array(_, let invalidated) = arguments[2], invalidated.isEmpty
        else { return nil }
        return changed
    }

    /// Applies the manager's properties and the current activity's copy at
    /// once, or reads the activity when no copy is known.
    private func follow(_ manager: [String: TypedValue]) {
        generation += 1
        let path = manager["CurrentActivity"]?.objectPathValue ?? "/"
        if path == "/" { return apply(path: "/", properties: [:], manager: manager) }
        if let known = activities[path] { return apply(path: path, properties: known, manager: manager) }
        readActivity(path, manager: manager, generation: generation)
    }

    private func recompute() {
        var next = conditions
        next.sessionLocked = lock.isLocked
        conditions = next
        changed()
    }

    /// Reads the manager's properties, then the current activity's.
    func refresh() {
        generation += 1
        let mine = generation
        let call = try? Message.methodCall(destination: Interfaces.busName, path: Interfaces.managerPath, interface: "org.freedesktop.DBus.Properties",
                                           member: "GetAll", arguments: [.string(Interfaces.managerName)])
        guard let call else { return }
        call.allowsAutoStart = false
        bus.callAsync(call, timeoutMilliseconds: 10_000) { [weak self] result in
            guard let self, mine == self.generation else { return }
            guard case .success(let reply) = result, let entries = (try? reply.arguments())?.first?.stringVariantEntries else {
                self.manager = nil
                self.apply(path: "/", properties: [:], manager: [:])
                return
            }
            let manager = Dictionary(entries, uniquingKeysWith: { $1 })
            self.manager = self.learnOwner(from: reply) ? manager : nil
            let path = manager["CurrentActivity"]?.objectPathValue ?? "/"
            guard path != "/" else { return self.apply(path: "/", properties: [:], manager: manager) }
            self.readActivity(path, manager: manager, generation: mine)
        }
    }

    private func readActivity(_ path: String, manager: [String: TypedValue], generation mine: Int) {
        let read = try? Message.methodCall(destination: Interfaces.busName, path: path, interface: "org.freedesktop.DBus.Properties",
                                           member: "GetAll", arguments: [.string(Interfaces.activityName)])
        guard let read else { return }
        read.allowsAutoStart = false
        bus.callAsync(read, timeoutMilliseconds: 10_000) { [weak self] result in
            guard let self, mine == self.generation else { return }
            let properties = (try? result.get().arguments().first?.stringVariantEntries).flatMap { $0 } ?? []
            if !properties.isEmpty, case .success(let reply) = result, reply.sender == self.serviceOwner {
                self.activities[path] = Self.advertPart(of: properties)
            }
            self.apply(path: path, properties: Dictionary(properties, uniquingKeysWith: { $1 }), manager: manager)
        }
    }

    private func apply(path: String, properties: [String: TypedValue], manager: [String: TypedValue]) {
        var next = AdvertConditions()
        if case .boolean(let paused)? = manager["Paused"] { next.paused = paused }
        next.blockedApplications = manager["BlockedApplications"]?.stringArray ?? []
        next.blockedActivityTypes = manager["BlockedActivityTypes"]?.stringArray ?? []
        next.sessionLocked = lock.isLocked
        conditions = next
        if path != currentPath { currentSince = scheduler.now }
        currentPath = path
        current = path == "/" || properties.isEmpty ? nil : Advert(activityPath: path, properties: properties, since: currentSince)
        changed()
    }

    // MARK: Calls for a handoff

    private func managerCall(_ member: String, _ arguments: [TypedValue], timeoutMilliseconds: Int32,
                             completion: @escaping (Result<[TypedValue], HandoffError>) -> Void) {
        let message: Message
        do {
            message = try Message.methodCall(destination: Interfaces.busName, path: Interfaces.managerPath, interface: Interfaces.managerName,
                                             member: member, arguments: arguments)
        } catch {
            return completion(.failure(HandoffError("HandoffFailed", "\(error)")))
        }
        bus.callAsync(message, timeoutMilliseconds: timeoutMilliseconds) { result in
            switch result {
            case .success(let reply): completion(.success((try? reply.arguments()) ?? []))
            case .failure(let error): completion(.failure(HandoffError(error.name, error.message)))
            }
        }
    }

    /// Origin side: the payload after NeedsSave (FetchForHandoff).
    func fetchForHandoff(activityID: String, timeoutMilliseconds: Int32,
                         completion: @escaping (Result<(String, TypedValue), HandoffError>) -> Void) {
        managerCall("FetchForHandoff", [.objectPath(Interfaces.activityPathPrefix + activityID),
                                        .stringVariantDictionary([("timeout-ms", .uint32(UInt32(max(timeoutMilliseconds, 0))))])],
                    timeoutMilliseconds: timeoutMilliseconds + 5000) { result in
            switch result {
            case .success(let values):
                guard values.count == 2, let type = values[0].stringValue else {
                    return completion(.failure(HandoffError("HandoffFailed", "useractivityd sent an unexpected reply")))
                }
                completion(.success((type, values[1])))
            case .failure(let error):
                // The activity ended, expired or is no longer eligible: the spec's HandoffFailed.
                let passOn = error.name.hasSuffix(".UserInfoTooLarge")
                completion(.failure(passOn ? error : HandoffError("HandoffFailed", "the activity cannot be handed off: \(error.message)")))
            }
        }
    }

    /// Origin side: the other device continued it (MarkContinued).
    func markContinued(activityID: String, byApp app: String) {
        managerCall("MarkContinued", [.objectPath(Interfaces.activityPathPrefix + activityID), .string(app)], timeoutMilliseconds: 10_000) { [log] result in
            if case .failure(let error) = result { log.info("MarkContinued failed: \(error.name): \(error.message)") }
        }
    }

    /// Origin side: a continuing app on another device opened a stream; the
    /// owner gets the other end of the socket returned here (OpenHandoffStream).
    func openHandoffStream(activityID: String, completion: @escaping (Result<Int32, HandoffError>) -> Void) {
        managerCall("OpenHandoffStream", [.objectPath(Interfaces.activityPathPrefix + activityID)], timeoutMilliseconds: 25_000) { result in
            switch result {
            case .success(let values):
                guard case .unixFD(let fd)? = values.first, fd >= 0 else {
                    TypedValue.closeFileDescriptors(in: values)
                    return completion(.failure(HandoffError("ContinuationFailed", "useractivityd sent no stream")))
                }
                completion(.success(fd))
            case .failure(let error): completion(.failure(error))
            }
        }
    }

    /// Receiving side: ContinueActivity of the local useractivityd.
    func continueLocally(type: String, properties: TypedValue, options: [(String, TypedValue)], timeoutMilliseconds: Int32,
                         completion: @escaping (Result<String, HandoffError>) -> Void) {
        managerCall("ContinueActivity", [.string(type), properties, .stringVariantDictionary(options)],
                    timeoutMilliseconds: timeoutMilliseconds) { result in
            completion(result.map { $0.first?.stringValue ?? "" })
        }
    }
}

extension TypedValue {
    var stringArray: [String]? {
        guard case .array("s", let elements) = self else { return nil }
        return elements.compactMap(\.stringValue)
    }
}
