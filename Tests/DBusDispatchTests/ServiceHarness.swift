// SPDX-License-Identifier: Apache-2.0
import SchedulerTestSupport
import DBusKit
import Foundation
import GLibSupport
import Logging
import TestSupport
import TypedValues
import UserActivityService

/// The service in-process on a private `dbus-daemon`, its GLib loop on a
/// thread of its own; clients are plain blocking connections.
final class ServiceHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus
    private let loop: MainLoop
    /// The service's time when the test moves it by hand.
    let scheduler: ManualScheduler?
    private let threadState = ServiceThreadState()
    private var isStopped = false
    let procRoot: TemporaryDirectory

    static let editor = "com.example.Editor"
    static let viewer = "com.example.Viewer"
    static let sandboxed = "com.example.Sandboxed"

    /// - Parameters:
    ///   - confinedAs: when set, every in-process client appears as this Flatpak app.
    ///   - stateDirectory, configDirectory: where saved activities and settings live (nil: memory only).
    ///   - clock: the service's wall clock (Unix µs).
    ///   - scheduler: time for the service, moved by hand (``advance(byMilliseconds:)``); replaces `clock`.
    ///   - identityLookupFault: the service's ``ServiceConfiguration/identityLookupFault``.
    ///   - daemonPath: the bus's `dbus-daemon` (``PrivateBus/defaultDaemonPath``).
    ///   - recentFilesPath: the recent-files bridge's `recently-used.xbel` (nil: no bridge).
    init(confinedAs flatpakApp: String? = nil, stateDirectory: String? = nil, configDirectory: String? = nil,
         clock: (@Sendable () -> Int64)? = nil, scheduler: ManualScheduler? = nil,
         identityLookupFault: (@Sendable (String) -> DBusFailure?)? = nil,
         daemonPath: String = PrivateBus.defaultDaemonPath, recentFilesPath: String? = nil) throws {
        session = try SessionEnvironment()
        try session.writeDesktopEntry(appID: Self.editor, types: ["com.example.Editor.edit-document", "com.example.Editor.view"])
        try session.writeDesktopEntry(appID: Self.viewer, types: ["com.example.Viewer.view"])
        try session.writeDesktopEntry(appID: Self.sandboxed, types: ["com.example.Sandboxed.play"])
        bus = try PrivateBus(environment: session, daemonPath: daemonPath)
        procRoot = try TemporaryDirectory(prefix: "uap-")
        if let flatpakApp {
            // Our own PID appears sandboxed: /proc/<pid>/root/.flatpak-info names the app.
            let root = try procRoot.makeDirectory("\(getpid())/root")
            try writeFileAtomically(root + "/.flatpak-info", contents: "[Application]\nname=\(flatpakApp)\nruntime=runtime/org.gnome.Platform/x86_64/47\n")
            try writeFileAtomically(procRoot.appending("\(getpid())/cgroup"), contents: "0::/user.slice/app-flatpak-\(flatpakApp)-1.scope\n")
            try writeFileAtomically(procRoot.appending("\(getpid())/stat"), contents: fakeProcessStat(pid: getpid()))
        }
        loop = MainLoop.withNewContext()
        var configuration = ServiceConfiguration(applicationDirectories: session.applicationDirectories, stateDirectory: stateDirectory)
        configuration.configDirectory = configDirectory
        configuration.identityLookupFault = identityLookupFault
        configuration.procRoot = flatpakApp == nil ? "/proc" : procRoot.path
        configuration.recentFilesPath = recentFilesPath
        let address = bus.address
        let loopBox = UncheckedBox(loop)
        let configurationBox = UncheckedBox(configuration)
        self.scheduler = scheduler
        // A stepped wall clock goes through the one seam, a GLib scheduler reading it.
        let serviceScheduler = UncheckedBox<(any Scheduler)?>(scheduler ?? clock.map { GLibScheduler(loop: loop, clock: $0) })
        // The thread holds only this state, never the harness: the harness's
        // deinit (which stops the loop) must be able to run.
        let state = threadState
        let worker = Thread {
            let loop = loopBox.value
            do {
                let connection = try Connection.bus(address: address)
                try DBusMainLoopBridge.attach(connection, to: loop)
                let service = try loop.withThreadDefault {
                    try UserActivityService(bus: connection, loop: loop, scheduler: serviceScheduler.value, configuration: configurationBox.value,
                                            log: Logger(label: "test-service"))
                }
                try loop.withThreadDefault { try service.export() }
                state.service = service
                _ = try connection.requestName("org.example.UserActivity")
                state.ready.signal()
                loop.withThreadDefault { loop.run() }
                withExtendedLifetime((service, connection)) {}
            } catch {
                state.startError = error
                state.ready.signal()
            }
            state.finished.signal()
        }
        worker.start()
        threadState.ready.wait()
        if let startError = threadState.startError {
            bus.stop()
            throw startError
        }
    }

    /// Stops the service's loop (waiting for its thread) and the bus; idempotent.
    func stop() {
        guard !isStopped else { return }
        isStopped = true
        loop.quit()
        _ = threadState.finished.wait(timeout: .now() + 5)
        bus.stop()
    }

    deinit { stop() }

    /// Runs `body` on the service's thread, between two turns of its loop, and returns its result.
    func onLoop<T>(_ body: @escaping () -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = UncheckedBox<T?>(nil)
        let source = loop.idle {
            result.value = body()
            done.signal()
        }
        // A failure guard: a loop that stopped never runs it.
        let ran = done.wait(timeout: .now() + 60) == .success
        withExtendedLifetime(source) {}
        precondition(ran, "the service's loop did not run the work within 60 s")
        return result.value!
    }

    /// Runs `body` with the service on its thread (state that no call shows, such as who listens).
    func onService<T>(_ body: @escaping (UserActivityService) -> T) -> T {
        let state = threadState
        return onLoop { body(state.service!) }
    }

    /// Moves the service's ``ManualScheduler`` forward on its thread (timers due run there).
    func advance(byMilliseconds milliseconds: Int64) {
        guard let scheduler else { preconditionFailure("the harness was made without a manual scheduler") }
        onLoop { scheduler.advance(byMilliseconds: milliseconds) }
    }

    /// A new client connection to the private bus.
    func client() throws -> Connection { try Connection.bus(address: bus.address) }
}

/// What the service thread and the harness share: signals, and a start error
/// written before `ready` is signalled (so reading it after the wait is ordered).
final class ServiceThreadState: @unchecked Sendable {
    let ready = DispatchSemaphore(value: 0)
    let finished = DispatchSemaphore(value: 0)
    var startError: Error?
    /// The service, for ``ServiceHarness/onService(_:)``; read and used on its loop only.
    var service: UserActivityService?
}

final class UncheckedBox<T>: @unchecked Sendable {
    var value: T
    init(_ value: T) { self.value = value }
}

// MARK: - Client conveniences

let managerPath = "/org/example/UserActivity"
let managerInterface = "org.example.UserActivity"
let activityInterface = "org.example.UserActivity.Activity"

extension Connection {
    /// Calls a method of the service; an error reply is thrown as `DBusFailure`.
    @discardableResult
    func callService(on path: String = managerPath, _ interface: String, _ member: String,
                     _ arguments: [TypedValue] = []) throws -> [TypedValue] {
        let message = Message.methodCall(destination: "org.example.UserActivity", path: path, interface: interface, member: member)
        try message.append(arguments)
        return try call(message, timeoutMilliseconds: 10_000).arguments()
    }

    func createActivity(_ type: String, _ properties: [(String, TypedValue)], becomeCurrent: Bool = false) throws -> String {
        let reply = try callService(managerInterface, becomeCurrent ? "BecomeCurrent" : "CreateActivity",
                                    [.string(type), .stringVariantDictionary(properties)])
        return reply.first?.objectPathValue ?? ""
    }

    func property(_ path: String, _ interface: String, _ name: String) throws -> TypedValue {
        try callService(on: path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)])
            .first?.unwrappedVariant ?? .string("")
    }
}
