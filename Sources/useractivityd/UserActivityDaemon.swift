// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import ArgumentParser
import DBusKit
import Foundation
import GLibSupport
import Logging
import UserActivityService

struct UserActivityDaemon: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "useractivityd",
        abstract: "Serves org.example.UserActivity on the session bus: activities, search, suggestions and continuation.",
        discussion: """
        Usually started by D-Bus activation or its systemd user unit. Saved activities live in \
        $XDG_STATE_HOME/useractivity (default ~/.local/state/useractivity); apps declare activity \
        types with X-UserActivityTypes in their desktop entries.
        """,
        version: ServiceVersion.current)

    @Flag(help: "Take the bus name over from a running instance.")
    var replace = false

    @Flag(name: .shortAndLong, help: "Log debug messages.")
    var verbose = false

    @Flag(name: .customLong("print-introspection"), help: "Print the documented D-Bus interface XML (as kept in dbus/) and exit.")
    var printIntrospection = false

    func run() throws {
        if printIntrospection {
            print(Interfaces.documentedXML(), terminator: "")
            return
        }
        let level: Logger.Level = verbose ? .debug : .info
        LoggingSystem.bootstrap { label in JournalFriendlyLogHandler(label: label, level: level) }
        let log = Logger(label: "useractivityd")
        do {
            try Daemon.run(replace: replace, log: log)
        } catch {
            log.critical("\(error)")
            throw ExitCode(1)
        }
    }
}

enum ServiceVersion {
    static let current = "0.1.0"
}

/// Builds the context, exports the objects, then requests the name; runs until
/// SIGTERM/SIGINT, name loss or bus loss.
enum Daemon {
    static func run(replace: Bool, log: Logger) throws {
        let environment = ProcessInfo.processInfo.environment
        guard environment["DBUS_SESSION_BUS_ADDRESS"] != nil || environment["XDG_RUNTIME_DIR"] != nil else {
            throw DaemonError("no session bus: DBUS_SESSION_BUS_ADDRESS is not set. Run inside a desktop session, or start one with `dbus-run-session -- useractivityd`")
        }
        let bus: Connection
        do {
            bus = try Connection.session()
        } catch {
            throw DaemonError("cannot connect to the session bus (\(error)). Is DBUS_SESSION_BUS_ADDRESS right?")
        }
        let loop = MainLoop()
        try DBusMainLoopBridge.attach(bus, to: loop)

        var configuration = ServiceConfiguration(
            applicationDirectories: AppDirectories.applicationDirectories(environment: environment),
            stateDirectory: AppDirectories.stateDirectory(environment: environment))
        configuration.version = ServiceVersion.current
        configuration.configDirectory = AppDirectories.configDirectory(environment: environment)
        let service = try UserActivityService(bus: bus, loop: loop, configuration: configuration, log: log)
        service.onNameLost = { loop.quit() }
        try service.export()

        switch try bus.requestName(Interfaces.busName, allowReplacement: true, replace: replace) {
        case .primaryOwner, .alreadyOwner:
            break
        case .exists, .inQueue:
            throw DaemonError("\(Interfaces.busName) is already owned by another process; stop it or pass --replace")
        }
        log.info("serving \(Interfaces.busName)", metadata: [
            "version": "\(ServiceVersion.current)", "state": "\(configuration.stateDirectory ?? "-")",
        ])
        let terminate = loop.onUnixSignal(SIGTERM) { log.info("SIGTERM: exiting"); loop.quit() }
        let interrupt = loop.onUnixSignal(SIGINT) { log.info("SIGINT: exiting"); loop.quit() }
        loop.run()
        terminate.cancel()
        interrupt.cancel()
        bus.flush()
        withExtendedLifetime(service) {}
    }
}

struct DaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
