// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Logging
import TypedValues
import UserActivityCore

/// Who each bus connection is: resolved once per unique name (asynchronously,
/// from the bus daemon's credentials and /proc), cached, dropped on disconnect.
final class CallerTracker {
    private let bus: Connection
    private let probe: ProcessIdentityProbe
    /// The desktop entries identities are judged by; the service replaces it when they change on disk.
    var catalog: AppCatalog
    private let log: Logger

    private var identities: [String: ConnectionIdentity] = [:]
    /// What waits, in arrival order, for a sender's identity.
    private enum Waiter {
        /// A call's work with the identity, and what to do when there is none to be had.
        case withIdentity((inout ConnectionIdentity) -> Void, failed: (UserActivityError) -> Void)
        /// A call handled only once the calls before it have been: it runs
        /// on its own, since it may ask for the identity in turn.
        case afterwards(() -> Void)
    }
    private var waiting: [String: [Waiter]] = [:]
    private var departedWhileResolving: Set<String> = []
    /// Well-known name → unique name of its owner.
    private var ownerOfName: [String: String] = [:]
    /// Unique name → when its connection appeared (clock ticks since boot):
    /// the process behind it must have started by then, or its PID was reused.
    private var connectedAt: [String: UInt64] = [:]
    /// Since when every new connection is seen appearing; older ones appeared before.
    private var watchingSince: UInt64?

    /// Stands in for the bus's answer to `GetConnectionCredentials` when it
    /// returns a failure (tests: a lookup that fails or times out).
    private let lookupFault: (@Sendable (_ sender: String) -> DBusFailure?)?

    init(bus: Connection, probe: ProcessIdentityProbe, catalog: AppCatalog, log: Logger,
         lookupFault: (@Sendable (String) -> DBusFailure?)? = nil) {
        self.lookupFault = lookupFault
        self.bus = bus
        self.probe = probe
        self.catalog = catalog
        self.log = log
    }

    /// Whether `sender`'s identity is being looked up (its calls wait for it).
    func isResolving(_ sender: String) -> Bool {
        !waiting.isEmpty && waiting[sender] != nil
    }

    /// Runs `work` once `sender`'s identity is resolved, after the calls
    /// already waiting for it; only while ``isResolving(_:)``.
    func afterResolving(_ sender: String, _ work: @escaping () -> Void) {
        waiting[sender]!.append(.afterwards(work))
    }

    /// Runs `body` with the sender's identity, now when it is known, else once
    /// resolved; `failed` instead when the bus could not tell who it is.
    func withIdentity(of sender: String, _ body: @escaping (inout ConnectionIdentity) -> Void,
                      failed: @escaping (UserActivityError) -> Void) {
        if identities[sender] != nil {
            run(body, for: sender)
            return
        }
        if waiting[sender] != nil {
            waiting[sender]!.append(.withIdentity(body, failed: failed))
            return
        }
        waiting[sender] = [.withIdentity(body, failed: failed)]
        lookUp(sender, attempt: 1)
    }

    /// How often a failed or timed-out `GetConnectionCredentials` is asked
    /// again before the calls waiting for it fail.
    static let lookupAttempts = 2

    private func lookUp(_ sender: String, attempt: Int) {
        if let fault = lookupFault?(sender) {
            resolved(sender, .failure(fault), attempt: attempt)
            return
        }
        let request = Message.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                         interface: "org.freedesktop.DBus", member: "GetConnectionCredentials")
        try? request.append([.string(sender)])
        bus.callAsync(request, timeoutMilliseconds: 5000) { [weak self] result in
            guard let self else { return }
            if waitingForOwners != nil {
                waitingForOwners!.append { [weak self] in self?.resolved(sender, result, attempt: attempt) }
            } else {
                resolved(sender, result, attempt: attempt)
            }
        }
    }

    /// Runs `body` on a copy of the identity and keeps what it changed: the
    /// work may read the table meanwhile (the signals' recipients).
    private func run(_ body: (inout ConnectionIdentity) -> Void, for sender: String) {
        guard var identity = identities[sender] else { return }
        body(&identity)
        if identities[sender] != nil { identities[sender] = identity }
    }

    private func resolved(_ sender: String, _ result: Result<Message, DBusFailure>, attempt: Int) {
        if case .failure(let failure) = result, !departedWhileResolving.contains(sender) {
            // A lookup that failed says nothing about the caller: it is neither
            // cached nor taken for "confined, no app". Ask once more; then the
            // waiting calls fail, and the connection's next call asks afresh.
            log.warning("could not learn who a caller is", metadata: [
                "sender": "\(sender)", "attempt": "\(attempt)", "error": "\(failure.name): \(failure.message)",
            ])
            if attempt < Self.lookupAttempts {
                lookUp(sender, attempt: attempt + 1)
                return
            }
            let error = UserActivityError.unknownApplication(
                "the bus did not say which process is calling (GetConnectionCredentials: \(failure.name)), so the caller cannot be identified; nothing was done, try again")
            for waiter in waiting.removeValue(forKey: sender) ?? [] {
                switch waiter {
                case .withIdentity(_, let failed): failed(error)
                case .afterwards(let work): work()
                }
            }
            return
        }
        let queued = waiting.removeValue(forKey: sender) ?? []
        if departedWhileResolving.remove(sender) != nil {
            // Nobody is left to answer, and nothing may be created for a closed connection.
            return
        }
        var pid: UInt32?
        var processFD: Int32?
        var replyValues: [TypedValue] = []
        if case .success(let reply) = result, let values = try? reply.arguments() {
            replyValues = values
            if let credentials = values.first?.stringVariantEntries {
                pid = credentials.first { $0.0 == "ProcessID" }?.1.uint32Value
                // Where the bus offers a pidfd, it identifies the process that connected, not whoever has its PID now.
                if case .unixFD(let fd)? = credentials.first(where: { $0.0 == "ProcessFD" })?.1 { processFD = fd }
            }
        }
        // libdbus handed us a dup() of every descriptor in the reply.
        defer { TypedValue.closeFileDescriptors(in: replyValues) }
        let catalog = self.catalog
        let process: ProcessIdentity
        if let processFD {
            process = probe.identify(processFD: processFD, catalog: catalog)
        } else {
            process = pid.map { probe.identify(pid: $0, catalog: catalog, connectedAtTicks: connectedAt[sender] ?? watchingSince) }
                ?? ProcessIdentity(confinement: .flatpak, appID: nil, source: "no process ID from the bus; treated as confined with no app")
        }
        let owned = ownerOfName.filter { $0.value == sender && catalog.app($0.key) != nil }.map(\.key).sorted()
        identities[sender] = ConnectionIdentity(process: process, ownedAppNames: owned)
        log.debug("caller identified", metadata: [
            "sender": "\(sender)", "pid": "\(pid.map(String.init) ?? "?")",
            "app": "\(process.appID ?? "-")", "confinement": "\(process.confinement)", "source": "\(process.source)",
        ])
        for waiter in queued {
            guard identities[sender] != nil else { break }
            switch waiter {
            case .withIdentity(let body, _): run(body, for: sender)
            case .afterwards(let work): work()
            }
        }
    }

    /// Follows `NameOwnerChanged`: a unique name that leaves is forgotten; a
    /// well-known name that is an app ID updates its owner's identity.
    func nameOwnerChanged(name: String, oldOwner: String, newOwner: String) {
        if name.hasPrefix(":") {
            if newOwner.isEmpty {
                identities[name] = nil
                subscriptions.unsubscribe(name)
                connectedAt[name] = nil
                if waiting[name] != nil { departedWhileResolving.insert(name) }
            } else if oldOwner.isEmpty {
                connectedAt[name] = ProcessIdentityProbe.ticksSinceBoot()
            }
            return
        }
        if newOwner.isEmpty { ownerOfName[name] = nil } else { ownerOfName[name] = newOwner }
        // The cached identity was computed with the old owners; recompute its names.
        for owner in [oldOwner, newOwner] where !owner.isEmpty {
            guard let identity = identities[owner] else { continue }
            let owned = ownerOfName.filter { $0.value == owner && catalog.app($0.key) != nil }.map(\.key).sorted()
            identities[owner] = identity.replacingOwnedAppNames(owned)
        }
    }

    /// Called once `NameOwnerChanged` is watched: every connection without a
    /// recorded appearance appeared before now.
    func beganWatchingConnections() {
        watchingSince = ProcessIdentityProbe.ticksSinceBoot()
    }

    /// Identity lookups that finished while the owners of well-known names
    /// were still being learned: they complete once those are known.
    private var waitingForOwners: [() -> Void]?

    /// Starts learning the current owners of well-known names (at startup,
    /// once `NameOwnerChanged` is watched). Nothing waits for the answers: the
    /// bus is asked for the list, then for every owner at once, and the loop
    /// serves calls meanwhile; only a caller's identity (which names the
    /// app IDs it owns) waits until they are known. Replies and
    /// `NameOwnerChanged` arrive in the order the bus sent them, so a reply
    /// never undoes a later change.
    func learnNameOwners() {
        waitingForOwners = []
        bus.callAsync(Self.busCall("ListNames"), timeoutMilliseconds: 5000) { [weak self] result in
            guard let self else { return }
            let names = (try? result.get().arguments())?.first?.stringArrayValue ?? []
            let wanted = names.filter { !$0.hasPrefix(":") && ReverseDNSName.isValid($0) }
            var outstanding = wanted.count
            guard outstanding > 0 else { return learnedNameOwners() }
            for name in wanted {
                bus.callAsync(Self.busCall("GetNameOwner", .string(name)), timeoutMilliseconds: 5000) { [weak self] result in
                    guard let self else { return }
                    if case .success(let reply) = result, let owner = (try? reply.arguments())?.first?.stringValue {
                        ownerOfName[name] = owner
                    }
                    outstanding -= 1
                    if outstanding == 0 { learnedNameOwners() }
                }
            }
        }
    }

    /// Who asked for which signals; a connection leaves it with its unique name.
    var subscriptions = SignalSubscriptions()

    /// Who receives a signal about `topic` concerning `app`'s activities:
    /// among the connections that asked for it (``subscriptions``), those
    /// allowed to read it, the app's own and every unconfined one; with `app`
    /// nil, unconfined ones only.
    ///
    /// A connection still being identified is not among them: the reply it
    /// waits for is computed afterwards, from the state the signal reported.
    func readers(of app: String?, _ topic: SignalSubscriptions.Topic) -> [String] {
        var names: [String] = []
        for name in subscriptions.listeners(of: topic) {
            guard let identity = identities[name] else { continue }
            if !identity.isConfined || (app != nil && identity.process.appID == app) { names.append(name) }
        }
        return names
    }

    /// The confined connections known to act for `app` that asked for the manager's properties.
    func confinedListeners(of app: String) -> [String] {
        subscriptions.listeners(of: .managerProperties).filter { name in
            guard let identity = identities[name] else { return false }
            return identity.isConfined && identity.process.appID == app
        }
    }

    private func learnedNameOwners() {
        let queued = waitingForOwners ?? []
        waitingForOwners = nil
        log.debug("learned the owners of well-known names", metadata: ["names": "\(ownerOfName.count)"])
        for work in queued { work() }
    }

    private static func busCall(_ member: String, _ arguments: TypedValue...) -> Message {
        let message = Message.methodCall(destination: Connection.busDriverName, path: "/org/freedesktop/DBus",
                                         interface: Connection.busDriverName, member: member)
        try? message.append(arguments)
        return message
    }

    /// The unique name that owns the well-known `name` now, as the bus last said.
    func owner(of name: String) -> String? { ownerOfName[name] }
}
