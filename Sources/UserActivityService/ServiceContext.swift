// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import ActivityStore
import DBusKit
import GLibSupport
import Logging
import TypedValues
import UserActivityCore

/// What the service's parts share, handed to each explicitly (the handlers,
/// continuation, the recent-files bridge): the registry, the saved
/// activities, the desktop entries, the bus, time, and the effects that
/// follow a change (saved copies, signals, the expiry timer). No part holds
/// the service itself.
final class ServiceContext {
    let bus: Connection
    let loop: MainLoop
    /// Time: the wall clock, timers and idle work (a manual one in tests).
    let scheduler: Scheduler
    let configuration: ServiceConfiguration
    let log: Logger
    let registry: ActivityRegistry
    let saved: SavedActivities
    let callers: CallerTracker
    /// The desktop entries; the registry and the caller tracker get each new one as a value.
    var catalog: AppCatalog {
        didSet { catalogChanged() }
    }

    /// The apps' registered continuation handlers (continuation and NeedsSave both ask).
    var continuationHandlers = ContinuationHandlerTable()

    private var expiryTimer: ScheduledWork?
    private var expiryTimerDate: Int64?

    init(bus: Connection, loop: MainLoop, scheduler: Scheduler, configuration: ServiceConfiguration, log: Logger,
         catalog: AppCatalog, saved: SavedActivities) {
        self.bus = bus
        self.loop = loop
        self.scheduler = scheduler
        self.configuration = configuration
        self.log = log
        self.catalog = catalog
        self.saved = saved
        self.registry = ActivityRegistry(limits: configuration.limits, isDeclared: Self.declarations(in: catalog))
        self.callers = CallerTracker(
            bus: bus, probe: ProcessIdentityProbe(procRoot: configuration.procRoot, loadKeyFile: { GLibKeyFile.load(path: $0) }),
            catalog: catalog, log: log, lookupFault: configuration.identityLookupFault)
        saved.onChange = { [unowned self] in savedActivitiesChanged() }
    }

    private func catalogChanged() {
        registry.isDeclared = Self.declarations(in: catalog)
        callers.catalog = catalog
    }

    /// Whether an app of `catalog` declares a type, over a copy of the catalog (no reference back to the context).
    private static func declarations(in catalog: AppCatalog) -> (_ app: String, _ type: String) -> Bool {
        { app, type in catalog.app(app)?.declares(type) ?? false }
    }

    /// ContinueSavedActivity calls the desktop search objects sent to
    /// ourselves (by serial), with the caller each counts against.
    var desktopContinuationCallers: [UInt32: AccountedCaller] = [:]
    /// App and browser launches per caller (``ActivityLimits/launchBurstPerApp``).
    lazy var launchBudget = LaunchBudget(burst: registry.limits.launchBurstPerApp,
                                         intervalMicroseconds: registry.limits.launchIntervalMicroseconds)

    /// Donations per sandboxed app (``ActivityLimits/donationBurstPerApp``).
    lazy var donationBudget = LaunchBudget(burst: registry.limits.donationBurstPerApp,
                                           intervalMicroseconds: registry.limits.donationIntervalMicroseconds)

    /// Takes one donation from a sandboxed `app`'s share; the LimitExceeded to answer with when it is spent.
    func takeDonation(app: String) -> UserActivityError? {
        let now = scheduler.now
        guard !donationBudget.take(app, now: now) else { return nil }
        let wait = (donationBudget.wait(app, now: now) + 999) / 1000
        let limits = registry.limits
        return UserActivityError(.limitExceeded, "too many donations: this app already donated \(limits.donationBurstPerApp) activities in a short time (one more per \(limits.donationIntervalMicroseconds / 1000) ms is allowed); nothing was saved, try again in \(wait) ms")
    }

    /// Takes one launch from `key`'s budget; the LimitExceeded to answer with when it is spent.
    func takeLaunch(_ key: String, what: String) -> UserActivityError? {
        let now = scheduler.now
        guard !launchBudget.take(key, now: now) else { return nil }
        let wait = (launchBudget.wait(key, now: now) + 999) / 1000
        let limits = registry.limits
        return UserActivityError(.limitExceeded, "too many launches: the service did not \(what) because this caller already launched \(limits.launchBurstPerApp) apps or browsers in a short time (one more per \(limits.launchIntervalMicroseconds / 1000) ms is allowed); try again in \(wait) ms")
    }

    /// Whom a ContinueSavedActivity we forwarded to ourselves counts against; nil for any other call.
    func desktopContinuationCaller(of invocation: Invocation) -> AccountedCaller? {
        guard invocation.sender == bus.uniqueName else { return nil }
        return desktopContinuationCallers[invocation.message.serial]
    }

    /// Runs `body` with the caller's identity; errors it throws become the reply.
    func withCaller(_ invocation: Invocation, _ body: @escaping (inout ConnectionIdentity) throws -> Void) {
        callers.withIdentity(of: invocation.sender, { identity in
            do { try body(&identity) } catch { invocation.fail(error) }
        }, failed: { invocation.fail($0) })
    }

    // MARK: Effects

    /// Carries out what a handler changed, in order: the saved copies the
    /// changes ask for (the reply waits for them, so an acknowledged save is
    /// durable; a save `needsSave` takes over is written later), the reply,
    /// then signals and timers. A failed write throws before anything is
    /// answered or signalled.
    func finish(_ invocation: Invocation, _ changes: Changes, reply: [TypedValue] = [],
                deferringTo needsSave: NeedsSaveRequests) throws {
        try persist(changes.events, deferringTo: needsSave)
        invocation.reply(reply)
        afterReply(changes)
    }

    /// Signals and the expiry timer for changes already answered, or nobody's
    /// call (expiry, a closed connection, an app's late SaveActivity answer,
    /// a continuation whose app answered).
    func afterReply(_ changes: Changes) {
        sendSignals(for: changes.events)
        for continued in changes.continued {
            // The owner's connection hears that its own activity was continued
            // (userActivityWasContinued) without asking; listeners as for any activity signal.
            var recipients = callers.readers(of: continued.ownerApp, .activity(continued.activityID))
            // (The recent-files bridge's activities are held by the service's own connection.)
            if let owner = registry.activity(continued.activityID)?.connection, owner != bus.uniqueName, !recipients.contains(owner) {
                recipients.append(owner)
            }
            signal(UserActivityService.path(of: continued.activityID), Interfaces.activityName, "Continued",
                   to: recipients, [.string(continued.byApp)])
        }
        if !changes.events.isEmpty || changes.savedActivitiesChanged { rearmExpiryTimer() }
    }

    /// Writes the saved copies the events ask for; the reply waits for this so
    /// that an acknowledged save is durable. A save `needsSave` takes over is
    /// written after the owner's SaveActivity, without holding up the reply.
    func persist(_ events: [RegistryEvent], deferringTo needsSave: NeedsSaveRequests) throws {
        for case .saveRequested(let id, let countsAsUse) in events {
            guard let activity = registry.activity(id) else { continue }
            if needsSave.deferSave(of: activity, countsAsUse: countsAsUse) { continue }
            try saved.save(activity, countsAsUse: countsAsUse, now: scheduler.now)
        }
    }

    /// The signals for what changed, built from the state the events left.
    /// Called right after the reply, in the same dispatch: they leave after
    /// it and before anything the daemon handles next.
    ///
    /// Every signal about an activity carries its app's data (or, for the
    /// manager's `CurrentActivity`, names its object), so none is broadcast:
    /// each goes as unicast copies to the connections that asked for it and
    /// may read it (``CallerTracker/readers(of:_:)``), chosen now.
    private func sendSignals(for events: [RegistryEvent]) {
        // An activity removed in this batch is no longer in the registry.
        var removedApps: [String: String] = [:]
        for case .removed(let id, let app) in events { removedApps[id] = app }
        func app(of id: String) -> String? { registry.activity(id)?.appID ?? removedApps[id] }
        for event in events {
            switch event {
            case .added(let id):
                guard let activity = registry.activity(id) else { continue }
                let isCurrent = registry.currentID == id
                signal(Interfaces.managerPath, "org.freedesktop.DBus.ObjectManager", "InterfacesAdded",
                       to: callers.readers(of: activity.appID, .activity(id))) { [
                    .objectPath(UserActivityService.path(of: id)),
                    .dictionary(keyType: "s", valueType: "a{sv}", [
                        .init(key: .string(Interfaces.activityName), value: UserActivityService.allProperties(of: activity, isCurrent: isCurrent)),
                    ]),
                ] }
            case .removed(let id, let app):
                signal(Interfaces.managerPath, "org.freedesktop.DBus.ObjectManager", "InterfacesRemoved",
                       to: callers.readers(of: app, .activity(id)), [.objectPath(UserActivityService.path(of: id)), .stringArray([Interfaces.activityName])])
                callers.subscriptions.activityRemoved(id)
            case .propertiesChanged(let id, let fields):
                guard let activity = registry.activity(id) else { continue }
                let isCurrent = registry.currentID == id
                propertiesChanged(UserActivityService.path(of: id), Interfaces.activityName,
                                  fields.map { ($0.propertyName, activity.value(of: $0, isCurrent: isCurrent)) },
                                  to: callers.readers(of: activity.appID, .activity(id)))
            case .currentChanged(let from, let to):
                if let from, let activity = registry.activity(from) {
                    propertiesChanged(UserActivityService.path(of: from), Interfaces.activityName, [("Current", .boolean(false))],
                                      to: callers.readers(of: activity.appID, .activity(from)))
                }
                if let to, let activity = registry.activity(to) {
                    propertiesChanged(UserActivityService.path(of: to), Interfaces.activityName, [("Current", .boolean(true))],
                                      to: callers.readers(of: activity.appID, .activity(to)))
                }
                currentActivityChanged(fromApp: from.flatMap(app(of:)), toApp: to.flatMap(app(of:)), to: to)
            case .saveRequested:
                break
            }
        }
    }

    /// `CurrentActivity` changed from an activity of `fromApp` to `to` (of
    /// `toApp`): unconfined listeners and `toApp`'s learn the new path;
    /// `fromApp`'s confined listeners, for which it is now `/`, learn that.
    private func currentActivityChanged(fromApp: String?, toApp: String?, to: String?) {
        let path: TypedValue = .objectPath(to.map(UserActivityService.path(of:)) ?? "/")
        propertiesChanged(Interfaces.managerPath, Interfaces.managerName, [("CurrentActivity", path)],
                          to: callers.readers(of: toApp, .managerProperties))
        if let fromApp, fromApp != toApp {
            propertiesChanged(Interfaces.managerPath, Interfaces.managerName, [("CurrentActivity", .objectPath("/"))],
                              to: callers.confinedListeners(of: fromApp))
        }
    }

    func propertiesChanged(_ path: String, _ interface: String, _ changed: [(String, TypedValue)], to recipients: [String]) {
        signal(path, "org.freedesktop.DBus.Properties", "PropertiesChanged", to: recipients,
               [.string(interface), .stringVariantDictionary(changed), .stringArray([])])
    }

    /// Sends a signal to `recipients`, one unicast copy each.
    func signal(_ path: String, _ interface: String, _ member: String, to recipients: [String], _ values: [TypedValue]) {
        signal(path, interface, member, to: recipients) { values }
    }

    /// `values` runs only when there is a recipient: the 21 properties of an
    /// `InterfacesAdded` are not put together for nobody. The signal is built
    /// once and sent as one unicast copy per recipient.
    private func signal(_ path: String, _ interface: String, _ member: String, to recipients: [String],
                        _ values: () -> [TypedValue]) {
        guard !recipients.isEmpty else { return }
        do {
            let message = try Message.signal(path: path, interface: interface, member: member, arguments: values())
            for recipient in recipients {
                guard let copy = message.copy(addressedTo: recipient) else {
                    log.error("could not address \(interface).\(member) to \(recipient)")
                    continue
                }
                bus.send(copy)
            }
        } catch {
            log.error("could not emit \(interface).\(member): \(error)")
        }
    }

    /// The shortest time between two `SavedActivitiesChanged`.
    static let savedActivitiesSignalIntervalMilliseconds: UInt32 = 250
    private var savedActivitiesSignal: ScheduledWork?

    /// Saved activities were added, changed or removed: one
    /// `SavedActivitiesChanged` follows within
    /// ``savedActivitiesSignalIntervalMilliseconds``, for this change and
    /// every other until it leaves, so a burst of donations or a large
    /// forget costs listeners one search, and the last change is always
    /// followed by a signal.
    private func savedActivitiesChanged() {
        guard savedActivitiesSignal?.isPending != true else { return }
        // Nobody listening: no timer (a publishing app's donations cost nothing more);
        // whoever subscribes later searches after subscribing.
        guard !callers.readers(of: nil, .savedActivities).isEmpty else { return }
        savedActivitiesSignal = scheduler.after(milliseconds: Self.savedActivitiesSignalIntervalMilliseconds) { [unowned self] in
            savedActivitiesSignal = nil
            // Unconfined listeners only: when another app's history changes is
            // itself something a confined app may not learn.
            signal(Interfaces.managerPath, Interfaces.managerName, "SavedActivitiesChanged",
                   to: callers.readers(of: nil, .savedActivities), [])
        }
    }

    /// One GLib timeout for the earliest expiration date; no polling.
    func rearmExpiryTimer() {
        let next = [registry.nextExpiration(), saved.nextExpiration()].compactMap { $0 }.min()
        guard next != expiryTimerDate || expiryTimer?.isPending != true else { return }
        expiryTimer?.cancel()
        expiryTimer = nil
        expiryTimerDate = next
        guard let next else { return }
        let delayMilliseconds = max(0, min((next - scheduler.now) / 1000 + 1, 86_400_000))
        expiryTimer = scheduler.after(milliseconds: UInt32(delayMilliseconds)) { [unowned self] in
            self.expiryTimer = nil
            self.expiryTimerDate = nil
            let now = scheduler.now
            saved.purgeExpired(now: now)
            afterReply(Changes(registry.expireDue(now: now)))
        }
    }
}
