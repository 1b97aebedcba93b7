// SPDX-License-Identifier: Apache-2.0
import FuzzGenerators
import DBusKit
import Foundation
import GLibSupport
import Logging
import TestSupport
import TypedValues
import UserActivityCore
import UserActivityService
#if canImport(Glibc)
import Glibc
#endif

/// How a test client's process looks to the service's `/proc` probe.
enum CallerProcess: Sendable, Equatable {
    /// An unconfined host process in no app's systemd unit.
    case host
    /// An unconfined host process in the systemd scope of `app` (the XDG naming).
    case hostUnit(String)
    /// A Flatpak sandbox of `app` (`/.flatpak-info` in its root).
    case flatpak(String)
}

/// The service in-process on a private `dbus-daemon` (its GLib loop on a
/// thread of its own), with limits of the test's choosing and an injected
/// `/proc` root.
///
/// Every client of the test runs in this one process, so they share a PID;
/// the service resolves a connection's identity once, on its first call, and
/// caches it. ``client(as:)`` therefore rewrites the fixture `/proc/<our
/// pid>` and makes that first call before handing the connection out: one
/// test can mix host callers, app units and Flatpak callers of several apps.
final class InProcessService: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus
    let procRoot: TemporaryDirectory
    private let loop: MainLoop
    private let ready = DispatchSemaphore(value: 0)
    private let stopped = DispatchSemaphore(value: 0)
    private let identityLock = NSLock()

    init(apps: [FixtureApp] = FixtureApp.standard, limits: ActivityLimits = .standard,
         stateDirectory: String? = nil, clock: (@Sendable () -> Int64)? = nil) throws {
        session = try SessionEnvironment(prefix: "uah-")
        for app in apps { try session.writeDesktopEntry(appID: app.id, types: app.types) }
        bus = try PrivateBus(environment: session)
        procRoot = try TemporaryDirectory(prefix: "uahp-")
        loop = MainLoop.withNewContext()
        var configuration = ServiceConfiguration(applicationDirectories: session.applicationDirectories, stateDirectory: stateDirectory)
        configuration.limits = limits
        configuration.procRoot = procRoot.path
        try writeIdentity(.host)

        // A stepped wall clock goes through the one seam, a GLib scheduler reading it.
        let context = StartContext(loop: loop, configuration: configuration, address: bus.address,
                                   scheduler: clock.map { GLibScheduler(loop: loop, clock: $0) })
        let ready = self.ready, stopped = self.stopped
        let failure = ErrorBox()
        let worker = Thread {
            var serviceConnection: Connection?
            var service: UserActivityService?
            do {
                let connection = try Connection.bus(address: context.address)
                try DBusMainLoopBridge.attach(connection, to: context.loop)
                let made = try context.loop.withThreadDefault {
                    try UserActivityService(bus: connection, loop: context.loop, scheduler: context.scheduler, configuration: context.configuration,
                                            log: Logger(label: "hardening-service"))
                }
                try context.loop.withThreadDefault { try made.export() }
                _ = try connection.requestName(UA.busName)
                service = made
                serviceConnection = connection
            } catch {
                failure.error = error
                ready.signal()
                stopped.signal()
                return
            }
            ready.signal()
            context.loop.withThreadDefault { context.loop.run() }
            // Released on the loop's thread, where they were made.
            withExtendedLifetime((service, serviceConnection)) {}
            service = nil
            serviceConnection = nil
            stopped.signal()
        }
        worker.start()
        ready.wait()
        if let error = failure.error { throw error }
    }

    private var isStopped = false

    func stop() {
        guard !isStopped else { return }
        isStopped = true
        loop.quit()
        _ = stopped.wait(timeout: .now() + 5)
        bus.stop()
    }

    deinit { stop() }

    /// A client that the service will take for `process`.
    func client(as process: CallerProcess = .host) throws -> BusClient {
        identityLock.lock()
        defer { identityLock.unlock() }
        try writeIdentity(process)
        let client = try BusClient(address: bus.address)
        // GetAll asks for the caller's identity: after its reply the identity is cached.
        _ = try client.call(UA.managerPath, UA.properties, "GetAll", [.string(UA.manager)])
        try writeIdentity(.host)
        return client
    }

    /// Rewrites `/proc/<our pid>` of the fixture tree.
    private func writeIdentity(_ process: CallerProcess) throws {
        let dir = procRoot.appending("\(getpid())")
        try? FileManager.default.removeItem(atPath: dir)
        try FileManager.default.createDirectory(atPath: dir + "/root", withIntermediateDirectories: true)
        try writeFileAtomically(dir + "/stat", contents: fakeProcessStat(pid: getpid()))
        let slice = "0::/user.slice/user-1000.slice/user@1000.service/app.slice"
        switch process {
        case .host:
            try writeFileAtomically(dir + "/cgroup", contents: "\(slice)/vte-spawn-1234.scope\n")
        case .hostUnit(let app):
            try writeFileAtomically(dir + "/cgroup", contents: "\(slice)/app-gnome-\(ParserProperties.systemdEscape(app))-4321.scope\n")
        case .flatpak(let app):
            try writeFileAtomically(dir + "/root/.flatpak-info", contents: "[Application]\nname=\(app)\nruntime=runtime/org.gnome.Platform/x86_64/47\n")
            try writeFileAtomically(dir + "/cgroup", contents: "\(slice)/app-flatpak-\(ParserProperties.systemdEscape(app))-99.scope\n")
        }
    }
}

private struct StartContext: @unchecked Sendable {
    let loop: MainLoop
    let configuration: ServiceConfiguration
    let address: String
    let scheduler: (any Scheduler)?
}

private final class ErrorBox: @unchecked Sendable {
    var error: Error?
}
