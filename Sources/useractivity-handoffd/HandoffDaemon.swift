// SPDX-License-Identifier: Apache-2.0
import DBusKit
import GLibSupport
import HandoffCore
import Logging
import UserActivityCore
import UserActivityInterfaces

/// useractivity-handoffd: the wiring of the context and its parts. The
/// shared state is ``HandoffContext``'s; pairing is ``Pairing``'s, the
/// links ``PeerLinks``', the current activity between devices
/// ``ActivityExchange``'s; the D-Bus objects (the manager here, one
/// ``DeviceObject`` per device) decode a call, call a part and return what
/// changed. What is left here: starting and stopping, and the one timer.
final class HandoffDaemon {
    let context: HandoffContext
    let pairing: Pairing
    let links: PeerLinks
    let exchange: ActivityExchange
    /// Re-reads the catalog when apps are installed or removed, as useractivityd does.
    var catalogMonitor: DirectoryMonitor?
    /// DNS-SD publishing, when a discovery module is plugged in.
    var discovery: DiscoveryPublisher?
    /// The system bus, for logind; nil when it cannot be reached.
    var systemBus: Connection?
    /// The next check of deadlines (pairing, fetches, keepalives, the
    /// discoverable window, reconnects), armed only while one is pending:
    /// with nothing to do, the daemon does not wake up.
    var ticker: ScheduledWork?
    /// When ``ticker`` fires (monotonic µs).
    var tickerDue = Int64.max

    init(bus: Connection, loop: MainLoop, log: Logger, directory: StateDirectory, listen: String,
         environment: [String: String], scheduler: Scheduler? = nil) throws {
        context = try HandoffContext(bus: bus, loop: loop, log: log, scheduler: scheduler ?? GLibScheduler(loop: loop),
                                     directory: directory, environment: environment)
        pairing = Pairing(context: context)
        links = PeerLinks(context: context, pairing: pairing, listen: listen)
        exchange = ActivityExchange(context: context)
        links.routes = PeerLinks.Routes(
            activityFrame: { [unowned exchange] frame, link in exchange.received(frame, on: link) },
            linkClosed: { [unowned exchange] link, reason in exchange.linkClosed(link, reason: reason) },
            dataDrained: { [unowned exchange] link in exchange.streams.resume(link) },
            bulkDrained: { [unowned exchange] link in exchange.pumpFiles(on: link) })
        context.onWorkAdded = { [weak self] in self?.rescheduleTick() }
    }

    var log: Logger { context.log }
    var state: HandoffState { context.state }

    // MARK: Starting and stopping

    func start() throws {
        let environment = context.environment
        let bus = context.bus
        let systemAddress = environment["DBUS_SYSTEM_BUS_ADDRESS"] ?? "unix:path=/run/dbus/system_bus_socket"
        do {
            let system = try Connection.bus(address: systemAddress)
            try DBusMainLoopBridge.attach(system, to: context.loop)
            systemBus = system
        } catch {
            log.info("no system bus (\(error)): logind's lock state is not read")
        }
        try bus.addFilter { [weak self] message in self?.filter(message) ?? false }
        catalogMonitor = DirectoryMonitor(directories: AppCatalog.applicationDirectories(environment: environment)) { [weak self] in
            self?.exchange.reloadCatalog()
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
        context.activitySource = ActivitySource(bus: bus, log: log, scheduler: context.scheduler, lock: EitherLockMonitor(locks)) { [weak self] in
            self?.exchange.advertiseIfChanged()
        }
        try context.activitySource?.start()
        context.notifier = Notifier(bus: bus, log: log, scheduler: context.scheduler)
        try context.notifier?.start()
        startDiscovery(systemBusAddress: systemAddress)
        if state.enabled {
            do { try enable() } catch {
                log.error("cannot enable handoff: \(error)")
                context.state.enabled = false
            }
        }
        rescheduleTick()
    }

    /// Loads (or on first use makes) the identity, then listens and dials.
    func enable() throws {
        if context.identity == nil {
            do {
                let made = try IdentityStore.loadOrCreate(in: context.directory, expectedID: state.deviceID, name: state.deviceName)
                context.identity = made
                context.identityError = ""
                if state.deviceID != made.deviceID {
                    context.state.deviceID = made.deviceID
                    context.save()
                }
            } catch {
                context.identityError = "\(error)"
                throw HandoffError("HandoffFailed", context.identityError)
            }
        }
        guard let identity = context.identity else { return }
        try links.start(identity: identity)
        republish()
    }

    /// Publishes (again) what DNS-SD should say about this device.
    func republish() {
        guard let discovery else { return }
        guard state.enabled, links.boundPort > 0, let identity = context.identity else { return discovery.withdraw() }
        discovery.publish(port: links.boundPort, txt: DiscoveryDecision.txt(deviceID: identity.deviceID, name: state.deviceName,
                                                                            discoverable: context.discoverable))
    }

    func disable() {
        discovery?.withdraw()
        links.stop(reason: "handoff turned off")
        context.discoverableWindow.set(false, now: context.now)
    }

    // MARK: The timer

    /// The earliest deadline of pending work; nil when there is none.
    private func nextDeadline() -> Int64? {
        var due: [Int64] = []
        if let deadline = pairing.deadline { due.append(deadline) }
        due += links.deadlines
        due += exchange.deadlines
        if let off = context.discoverableWindow.nextDue(timeoutSeconds: state.discoverableTimeout) { due.append(off) }
        return due.min()
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
        let milliseconds = UInt32(clamping: max(0, (due - context.now + 999) / 1000))
        ticker = context.scheduler.after(milliseconds: milliseconds) { [weak self] in
            guard let self else { return }
            self.ticker = nil
            self.tickerDue = .max
            self.tick()
            self.rescheduleTick()
        }
    }

    private func tick() {
        let now = context.now
        pairing.expire(now: now)
        exchange.expireFileTransfers()
        links.tickLinks()
        exchange.expireFetches(now: now)
        if context.discoverableWindow.expire(now: now, timeoutSeconds: state.discoverableTimeout) {
            republish()
            emitManagerChanged(["Discoverable"])
        }
        links.reconnect(now: now)
    }
}
