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
    /// The desktop's recently-used list (`$XDG_DATA_HOME/recently-used.xbel`)
    /// the recent-files bridge follows; nil: no bridge (tests).
    public var recentFilesPath: String?
    /// `$HOME`, shown as `~` in bridged documents' folders.
    public var homeDirectory = ""
    public var limits = ActivityLimits.standard
    /// Tests: when it returns a failure for a sender, that is the bus's answer
    /// to the identity lookup (`GetConnectionCredentials`) instead of asking.
    public var identityLookupFault: (@Sendable (_ sender: String) -> DBusFailure?)?

    public init(applicationDirectories: [String], stateDirectory: String?) {
        self.applicationDirectories = applicationDirectories
        self.stateDirectory = stateDirectory
    }
}

/// The `org.example.UserActivity` service on one bus connection: routes
/// method calls through the dispatch tables to handlers, which decode, call
/// the core and hand what changed to one step (``finish(_:_:reply:)``) that
/// writes saved copies, replies, and sends the signals. What the parts share
/// is a ``ServiceContext``; continuation and the recent-files bridge get that,
/// never the service.
public final class UserActivityService {
    typealias Handler = (UserActivityService, Invocation) -> Void

    /// What the handlers and the other parts share (``ServiceContext``).
    let context: ServiceContext
    /// Continuation: handlers, tokens, continuations in flight.
    let continuation: ContinuationService

    // The context's parts and effects, under the names the handlers use.
    var bus: Connection { context.bus }
    var loop: MainLoop { context.loop }
    var scheduler: Scheduler { context.scheduler }
    var configuration: ServiceConfiguration { context.configuration }
    var log: Logger { context.log }
    var registry: ActivityRegistry { context.registry }
    var saved: SavedActivities { context.saved }
    var callers: CallerTracker { context.callers }
    var catalog: AppCatalog { context.catalog }

    func withCaller(_ invocation: Invocation, _ body: @escaping (inout ConnectionIdentity) throws -> Void) {
        context.withCaller(invocation, body)
    }
    func afterReply(_ changes: Changes) { context.afterReply(changes) }
    func takeLaunch(_ key: String, what: String) -> UserActivityError? { context.takeLaunch(key, what: what) }
    func propertiesChanged(_ path: String, _ interface: String, _ changed: [(String, TypedValue)], to recipients: [String]) {
        context.propertiesChanged(path, interface, changed, to: recipients)
    }
    /// KRunner's SetActivationToken, by connection, for its next Run.
    var krunnerActivationTokens: [String: String] = [:]
    /// The recent-files bridge, when configured.
    private(set) var recentFiles: RecentFilesBridge?

    private var directoryMonitor: DirectoryMonitor?
    /// The pending write of waiting donations (see ``SavedActivities/donate(type:app:properties:now:completion:)``):
    /// when the loop is idle, or after a deadline; whichever comes first cancels both.
    private var donationWrite: (whenIdle: ScheduledWork, deadline: ScheduledWork)?

    /// Further objects below the manager (search providers): path → dispatch table.
    private(set) var extraObjects: [String: DispatchTable] = [:]

    /// A method's handler and the signature its arguments must have.
    struct MethodRoute {
        let inputSignature: String
        let handler: Handler
    }

    /// Interface name → member → route.
    typealias DispatchTable = [String: [String: MethodRoute]]

    /// One interface's routes: each of its methods with the handler
    /// `handler` (an exhaustive `switch`) gives it.
    private static func routes<Member: InterfaceMember>(_ handler: (Member) -> Handler) -> [String: MethodRoute] {
        Dictionary(uniqueKeysWithValues: Member.allCases.map { member in
            let method = member.method
            return (method.name, MethodRoute(inputSignature: method.inputSignature, handler: handler(member)))
        })
    }

    /// The standard `org.freedesktop.DBus.Properties` methods.
    private static func propertiesRoutes(get: @escaping Handler, getAll: @escaping Handler, set: @escaping Handler) -> [String: MethodRoute] {
        ["Get": MethodRoute(inputSignature: "ss", handler: get), "GetAll": MethodRoute(inputSignature: "s", handler: getAll),
         "Set": MethodRoute(inputSignature: "ssv", handler: set)]
    }

    /// The standard `org.freedesktop.DBus.Introspectable` method.
    private static func introspectRoute(_ introspect: @escaping Handler) -> [String: MethodRoute] {
        ["Introspect": MethodRoute(inputSignature: "", handler: introspect)]
    }

    /// Exports another object under `/org/example/UserActivity/…` serving
    /// `Member`'s interface through `handler` (input signatures are checked
    /// like ours). The object also answers `Introspect` with the interface's XML.
    func exportObject<Member: InterfaceMember>(path: String, handler: (Member) -> Handler) {
        precondition(path.hasPrefix(Interfaces.managerPath + "/"), "objects live under the manager")
        let xml = StandardInterfacesXML.doctype + "<node>\n" + Member.interface.xml()
            + StandardInterfacesXML.introspectable + StandardInterfacesXML.peer + "</node>\n"
        extraObjects[path] = [
            Member.interface.name: Self.routes(handler),
            "org.freedesktop.DBus.Introspectable": Self.introspectRoute { _, invocation in invocation.reply([.string(xml)]) },
        ]
    }

    /// The manager's and the activity objects' dispatch tables.
    private let managerRoutes: DispatchTable = [
        Interfaces.managerName: routes(managerHandler),
        "org.freedesktop.DBus.Properties": propertiesRoutes(get: { $0.managerPropertyGet($1) }, getAll: { $0.managerPropertyGetAll($1) },
                                                            set: { $0.managerPropertySet($1) }),
        "org.freedesktop.DBus.ObjectManager": ["GetManagedObjects": MethodRoute(inputSignature: "") { $0.getManagedObjects($1) }],
        "org.freedesktop.DBus.Introspectable": introspectRoute { $0.introspectManager($1) },
    ]
    private let activityRoutes: DispatchTable = [
        Interfaces.activityName: routes(activityHandler),
        "org.freedesktop.DBus.Properties": propertiesRoutes(get: { $0.activityPropertyGet($1) }, getAll: { $0.activityPropertyGetAll($1) },
                                                            set: { $0.activityPropertySet($1) }),
        "org.freedesktop.DBus.Introspectable": introspectRoute { $0.introspectActivity($1) },
    ]

    /// - Parameter scheduler: time for expiry, donation batching and
    ///   continuation deadlines; GLib's on `loop` unless given (the one clock).
    public init(bus: Connection, loop: MainLoop, scheduler: Scheduler? = nil, configuration: ServiceConfiguration, log: Logger) throws {
        let scheduler = scheduler ?? GLibScheduler(loop: loop)
        var configuration = configuration
        // URLs are judged by GLib's RFC 3986 parser, as GIO will open them.
        configuration.limits.isValidURL = { GLibURI.isValid($0, webOnly: $1) }
        let catalog = AppCatalog.load(applicationDirectories: configuration.applicationDirectories,
                                      loadKeyFile: { GLibKeyFile.load(path: $0) })
        let saved = try SavedActivities(stateDirectory: configuration.stateDirectory, configDirectory: configuration.configDirectory,
                                        scheduler: scheduler, log: log)
        let context = ServiceContext(bus: bus, loop: loop, scheduler: scheduler, configuration: configuration, log: log,
                                     catalog: catalog, saved: saved)
        self.context = context
        self.continuation = ContinuationService(context: context)
        // Donations with calls queued behind them wait for the loop to have read every call queued on the bus,
        // then share one commit; at most a few milliseconds, should other callers keep the bus busy all that time.
        saved.scheduleWrite = { [unowned self] write in
            let run = { [unowned self] in
                donationWrite = nil
                write()
            }
            donationWrite = (scheduler.whenIdle(run),
                             scheduler.after(milliseconds: SavedActivities.longestDonationWaitMilliseconds, run))
        }
        saved.cancelScheduledWrite = { [unowned self] in
            donationWrite?.whenIdle.cancel()
            donationWrite?.deadline.cancel()
            donationWrite = nil
        }
        saved.callsAreQueued = { [unowned self] in bus.hasQueuedMessages }
        for warning in catalog.warnings { log.warning("\(warning)") }
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
            // The privacy controls are the user's: only unconfined connections may read them.
            recentFiles?.settingsChanged()
            propertiesChanged(Interfaces.managerPath, Interfaces.managerName,
                              names.compactMap { name in saved.privacy.settings.value(of: name).map { (name, $0) } },
                              to: callers.readers(of: nil, .managerProperties))
        }
        loop.withThreadDefault { saved.privacy.start(scheduler: scheduler) }
        saved.purgeExpired(now: scheduler.now)
        context.rearmExpiryTimer()
        exportDesktopSearch()
        if let path = configuration.recentFilesPath {
            recentFiles = loop.withThreadDefault { RecentFilesBridge(context: context, path: path) }
        }
    }

    /// Writes and answers the donations still waiting; call after the loop
    /// stops (SIGTERM), before the last flush of the connection.
    public func finishPendingWrites() {
        saved.writePendingDonations(mayWaitForLock: false)
    }

    /// Re-reads the desktop entries (they changed on disk).
    public func reloadCatalog() {
        context.catalog = AppCatalog.load(applicationDirectories: configuration.applicationDirectories,
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
            krunnerActivationTokens[name] = nil
            continuation.connectionClosed(name)
            let bytesBefore = registry.totalDataBytes
            let events = registry.connectionClosed(name)
            if !events.isEmpty {
                log.debug("connection closed; its activities were invalidated", metadata: ["sender": "\(name)"])
                afterReply(Changes(events))
            }
            // A large free: the signals above hold their own copies, so the pages can go back now.
            if bytesBefore - registry.totalDataBytes >= Self.trimAfterFreedBytes {
                Memory.returnFreedMemory()
            }
        }
    }

    /// Freed activity data (bytes) after which the heap is trimmed.
    static let trimAfterFreedBytes = 1024 * 1024

    // MARK: Routing

    /// The contract's manager methods, each with its handler.
    private static func managerHandler(_ method: Interfaces.Manager) -> Handler {
        switch method {
        case .createActivity: { $0.createActivity($1) }
        case .becomeCurrent: { $0.createAndBecomeCurrent($1) }
        case .donate: { $0.donate($1) }
        case .search: { $0.search($1) }
        case .getSuggestions: { $0.getSuggestions($1) }
        case .continueActivity: { $0.continuation.continueActivity($1) }
        case .fetchForHandoff: { $0.continuation.fetchForHandoff($1) }
        case .markContinued: { $0.continuation.markContinued($1) }
        case .continueSavedActivity: { $0.continuation.continueSavedActivity($1) }
        case .registerApplication: { $0.registerApplication($1) }
        case .registerHandler: { $0.continuation.registerHandler($1) }
        case .openContinuationStream: { $0.continuation.openContinuationStream($1) }
        case .openHandoffStream: { $0.continuation.openHandoffStream($1) }
        case .deleteSavedActivities: { $0.deleteSavedActivities($1) }
        case .deleteAllSavedActivities: { $0.deleteAllSavedActivities($1) }
        case .forgetApplication: { $0.forgetApplication($1) }
        case .forgetRange: { $0.forgetRange($1) }
        case .forgetAll: { $0.forgetAll($1) }
        case .subscribe: { $0.subscribe($1) }
        case .unsubscribe: { $0.unsubscribe($1) }
        }
    }

    /// The contract's activity methods, each with its handler.
    private static func activityHandler(_ method: Interfaces.Activity) -> Handler {
        switch method {
        case .update: { $0.update($1) }
        case .addUserInfoEntries: { $0.addUserInfoEntries($1) }
        case .becomeCurrent: { $0.becomeCurrent($1) }
        case .resignCurrent: { $0.resignCurrent($1) }
        case .invalidate: { $0.invalidate($1) }
        case .continue: { $0.continuation.continueLiveActivity($1) }
        }
    }

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
        } else if DesktopSearchInterfaces.perAppProviderApp(path: path) != nil,
                  let object = extraObjects[DesktopSearchInterfaces.searchProviderPath] {
            // An app's own GNOME Shell provider: the shared object, narrowed by the path.
            routes = object
        } else if path == Interfaces.managerPath + "/activity" {
            if interface == nil || interface == "org.freedesktop.DBus.Introspectable", member == "Introspect" {
                let invocation = Invocation(message: message, sender: sender, arguments: [], activityID: nil, bus: bus)
                // Which nodes are listed depends on who asks.
                withCaller(invocation) { [unowned self] identity in
                    invocation.reply([.string(activityContainerXML(visibleApp: identity.visibleApp()))])
                }
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
        if let refusal = sizeRefusal(interfaceName, member, message) {
            send(error: ErrorNames.name(for: refusal.kind), refusal.message, to: message)
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

    /// A call carrying activity data bigger than any valid one, refused
    /// before it is decoded (decoding a 60 MiB user-info would take
    /// gigabytes and seconds, and every other caller would wait). The sizes
    /// come from libdbus's iterators without decoding (see
    /// ``Message/marshalledSizes(ofEntriesIn:upTo:)``); the error is the one
    /// the full validation would give.
    func sizeRefusal(_ interface: String, _ member: String, _ message: Message) -> UserActivityError? {
        let limits = registry.limits
        // The properties argument, the user-info argument, or the value of Properties.Set.
        var properties: Int?
        var userInfo: Int?
        switch (interface, member) {
        case (Interfaces.managerName, "CreateActivity"), (Interfaces.managerName, "BecomeCurrent"),
             (Interfaces.managerName, "Donate"), (Interfaces.managerName, "ContinueActivity"):
            properties = 1
        case (Interfaces.activityName, "Update"): properties = 0
        case (Interfaces.activityName, "AddUserInfoEntries"): userInfo = 0
        case ("org.freedesktop.DBus.Properties", "Set"):
            guard message.signature == "ssv", let size = message.marshalledSize(ofArgument: 2, upTo: limits.maximumActivityBytes),
                  size > limits.maximumActivityBytes else { return nil }
            return UserActivityError(.limitExceeded, "the value is more than \(limits.maximumActivityBytes) bytes, the most an activity's data may have in all")
        default:
            // No other call of the service needs more than a few KiB (DeleteSavedActivities lists identifiers).
            let allowed = member == "DeleteSavedActivities" ? Self.largestIdentifierListBytes : Self.largestOtherCallBytes
            guard message.marshalledBodySize(upTo: allowed) > allowed else { return nil }
            return UserActivityError(.limitExceeded, "the arguments of \(member) are more than \(allowed) bytes, more than any valid call takes")
        }
        let userInfoTooLarge = UserActivityError(.userInfoTooLarge, "user-info is more than \(limits.maximumUserInfoBytes) bytes when marshalled, the most allowed. Keep large data elsewhere and store a reference to it")
        if let userInfo, let size = message.marshalledSize(ofArgument: userInfo, upTo: limits.maximumUserInfoBytes),
           size > limits.maximumUserInfoBytes {
            return userInfoTooLarge
        }
        guard let properties else { return nil }
        // Keys, type signatures and padding add a little to the fields' own sizes.
        let allowed = limits.maximumActivityBytes + Self.propertiesOverheadBytes
        // The array's wire length bounds every size the walk below would
        // find: a record that small cannot break a limit, and needs no walk.
        if let length = message.marshalledArrayLength(ofArgument: properties),
           length <= min(limits.maximumUserInfoBytes, limits.maximumActivityBytes) {
            return nil
        }
        var total = 0
        for (key, size) in message.marshalledSizes(ofEntriesIn: properties, upTo: allowed) {
            if key == "user-info", size > limits.maximumUserInfoBytes { return userInfoTooLarge }
            if size > limits.maximumActivityBytes {
                return UserActivityError(.limitExceeded, "\(key.prefix(200)) is more than \(limits.maximumActivityBytes) bytes, the most an activity's data may have in all")
            }
            total += size
        }
        if total > allowed {
            return UserActivityError(.limitExceeded, "the properties argument is more than \(allowed) bytes; an activity's data may have at most \(limits.maximumActivityBytes) bytes in all")
        }
        return nil
    }

    /// The body of any call other than those with activity data, at most;
    /// and DeleteSavedActivities's list of persistent identifiers.
    static let largestOtherCallBytes = 1024 * 1024
    static let largestIdentifierListBytes = 16 * 1024 * 1024

    /// What an `a{sv}` of every property adds to the data's own bytes, generously.
    static let propertiesOverheadBytes = 16 * 1024

    func send(error name: String, _ text: String, to message: Message) {
        guard message.expectsReply else { return }
        bus.send(Message.error(to: message, name: name, message: text))
    }


    // MARK: Events → signals

    static func path(of id: String) -> String { Interfaces.activityPathPrefix + id }

    /// Carries out what a handler changed (``ServiceContext/finish(_:_:reply:deferringTo:)``).
    func finish(_ invocation: Invocation, _ changes: Changes, reply: [TypedValue] = []) throws {
        try context.finish(invocation, changes, reply: reply, deferringTo: continuation.needsSave)
    }


    /// The manager's `CurrentActivity` as `identity` may see it: an
    /// unconfined caller sees the session's; a confined one only its own
    /// app's activity, else `/`.
    func currentActivityPath(for identity: ConnectionIdentity) -> TypedValue {
        guard let id = registry.currentID else { return .objectPath("/") }
        if let visible = identity.visibleApp(), registry.activity(id)?.appID != visible { return .objectPath("/") }
        return .objectPath(Self.path(of: id))
    }

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

}
