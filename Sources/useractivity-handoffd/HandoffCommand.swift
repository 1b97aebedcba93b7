// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import DBusKit
import GLibSupport
import HandoffCore
import Logging
import UserActivityInterfaces

/// `useractivity-handoffd`'s entry: parse, then print or serve.
enum HandoffCommand {
    static let usage = "useractivity-handoffd [--replace] [--verbose] [--listen HOST:PORT] [--print-introspection]"
    static let help = """
        OVERVIEW: Serves org.example.UserActivity.Handoff on the session bus: pairs this
        device with others and continues their activities here (and the reverse).

        Keys and paired devices live in $XDG_STATE_HOME/useractivity/handoff.

        USAGE: \(usage)

        OPTIONS:
          --replace               Take the bus name over from a running instance.
          -v, --verbose           Log debug messages.
          --listen HOST:PORT      Address to accept other devices on (default 0.0.0.0:0,
                                  any free port; see the ListenPort property).
          --print-introspection   Print the documented D-Bus interface XML and exit.
          -h, --help              Show help information.

        """

    static func main(arguments: [String]) -> Int32 {
        var replace = false, verbose = false, listen = "0.0.0.0:0"
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            switch argument {
            case "--replace": replace = true
            case "-v", "--verbose": verbose = true
            case "--listen":
                guard let value = iterator.next() else { return usageError("--listen needs HOST:PORT") }
                listen = value
            case "--print-introspection":
                print(HandoffInterfaces.documentedXML(), terminator: "")
                return 0
            case "-h", "--help":
                print(help, terminator: "")
                return 0
            default:
                return usageError("Unknown option '\(argument)'")
            }
        }
        let level: Logger.Level = verbose ? .debug : .info
        LoggingSystem.bootstrap { label in
            var handler = StreamLogHandler.standardError(label: label)
            handler.logLevel = level
            return handler
        }
        let log = Logger(label: "useractivity-handoffd")
        do {
            try run(replace: replace, listen: listen, log: log)
            return 0
        } catch {
            log.critical("\(error)")
            return 1
        }
    }

    static func usageError(_ text: String) -> Int32 {
        let line = "Error: \(text)\nUsage: \(usage)\n"
        _ = line.withCString { write(2, $0, strlen($0)) }
        return 64
    }

    static func run(replace: Bool, listen: String, log: Logger) throws {
        let environment = processEnvironment()
        guard let directory = StateDirectory.resolve(environment: environment) else {
            throw HandoffError("HandoffFailed", "neither XDG_STATE_HOME nor HOME is set")
        }
        let bus = try Connection.session()
        let loop = MainLoop()
        try DBusMainLoopBridge.attach(bus, to: loop)
        let daemon = try HandoffDaemon(bus: bus, loop: loop, log: log, directory: directory, listen: listen, environment: environment)
        try daemon.start()
        switch try bus.requestName(HandoffInterfaces.busName, allowReplacement: true, replace: replace) {
        case .primaryOwner, .alreadyOwner: break
        case .exists, .inQueue:
            throw HandoffError("HandoffFailed", "\(HandoffInterfaces.busName) is already owned by another process; stop it or pass --replace")
        }
        try bus.addMatch("type='signal',sender='org.freedesktop.DBus',member='NameLost',arg0='\(HandoffInterfaces.busName)'")
        log.info("serving \(HandoffInterfaces.busName)", metadata: ["state": "\(directory.path)"])
        let terminate = loop.onUnixSignal(SIGTERM) { loop.quit() }
        let interrupt = loop.onUnixSignal(SIGINT) { loop.quit() }
        loop.run()
        terminate.cancel()
        interrupt.cancel()
        daemon.disable()
        bus.flush()
        withExtendedLifetime(daemon) {}
    }
}

extension HandoffError: CustomStringConvertible {
    var description: String { "\(name): \(message)" }
}
