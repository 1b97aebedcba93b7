// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import DBusKit
#if canImport(Glibc)
import Glibc
#endif
import GLibSupport
import Logging
import UserActivityCore
import UserActivityService

/// `useractivityd`'s entry: parse, then print or serve.
enum DaemonCommand {
    /// The process's exit status: 0, 1 when serving failed, 64 (EX_USAGE) for a bad command line.
    static func main(arguments: [String]) -> Int32 {
        let options: DaemonOptions
        do {
            options = try DaemonOptions.parse(arguments)
        } catch {
            writeStandardError("Error: \(error)\nUsage: \(DaemonOptions.usage)\n  See 'useractivityd --help' for more information.\n")
            return 64
        }
        if options.help {
            print(DaemonOptions.helpText, terminator: "")
            return 0
        }
        if options.version {
            print(UserActivityVersion.current)
            return 0
        }
        if options.printIntrospection {
            print(Interfaces.documentedXML(), terminator: "")
            return 0
        }
        let level: Logger.Level = options.verbose ? .debug : .info
        LoggingSystem.bootstrap { label in JournalFriendlyLogHandler(label: label, level: level) }
        let log = Logger(label: "useractivityd")
        do {
            try Daemon.run(replace: options.replace, log: log)
            return 0
        } catch {
            log.critical("\(error)")
            return 1
        }
    }
}

/// Builds the context, exports the objects, then requests the name; runs until
/// SIGTERM/SIGINT, name loss or bus loss.
enum Daemon {
    static func run(replace: Bool, log: Logger) throws {
        let environment = processEnvironment()
        guard environment["DBUS_SESSION_BUS_ADDRESS"] != nil || environment["XDG_RUNTIME_DIR"] != nil else {
            throw DaemonError("no session bus: DBUS_SESSION_BUS_ADDRESS is not set. Run inside a desktop session, or start one with `dbus-run-session -- useractivityd`")
        }
        // Room for descriptors peers send (libdbus drops a connection whose fds it cannot receive).
        DescriptorLimit.raise()
        Memory.keepFreedHeapTop(bytes: 1 << 20)
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
        configuration.version = UserActivityVersion.current
        configuration.configDirectory = AppDirectories.configDirectory(environment: environment)
        configuration.recentFilesPath = AppDirectories.recentFilesPath(environment: environment)
        configuration.homeDirectory = environment["HOME"] ?? ""
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
            "version": "\(UserActivityVersion.current)", "state": "\(configuration.stateDirectory ?? "-")",
        ])
        let terminate = loop.onUnixSignal(SIGTERM) { log.info("SIGTERM: exiting"); loop.quit() }
        let interrupt = loop.onUnixSignal(SIGINT) { log.info("SIGINT: exiting"); loop.quit() }
        loop.run()
        terminate.cancel()
        interrupt.cancel()
        service.finishPendingWrites()
        bus.flush()
        withExtendedLifetime(service) {}
    }
}

struct DaemonError: Error, CustomStringConvertible {
    let description: String
    init(_ description: String) { self.description = description }
}
