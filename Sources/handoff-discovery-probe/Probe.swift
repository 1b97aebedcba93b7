// SPDX-License-Identifier: Apache-2.0
// A small driver of AvahiDiscovery for tests and for trying discovery by
// hand: publishes or browses `_useractivity._tcp` and prints what happens as
// one JSON object per line on stdout.
//
//   handoff-discovery-probe publish --port 48300 [--instance NAME] [--txt k=v]... [--discoverable NAME]
//       SIGUSR1: discoverable (with the --discoverable name, default "probe"); SIGUSR2: not discoverable
//   handoff-discovery-probe browse [--seconds N]
//   handoff-discovery-probe state [--seconds N]     exits 0 when Avahi runs, 3 when unavailable
//
// Events: {"event":"state","state":"running"}, {"event":"published","instance":…},
// {"event":"found","instance":…,"address":…,"host":…,"port":…,"txt":{…},"interface":…},
// {"event":"lost","instance":…}. SIGTERM or SIGINT end it (exit 0).
import Foundation
import GLibSupport
import HandoffDiscovery

@main
enum Probe {
    static func main() {
        var arguments = Array(CommandLine.arguments.dropFirst())
        guard let mode = arguments.first else { usage() }
        arguments.removeFirst()
        var port: UInt16 = 0
        var instance: String?
        var txt: [String: String] = [:]
        var discoverableName: String?
        var seconds: Double = 0
        while !arguments.isEmpty {
            let option = arguments.removeFirst()
            guard let value = arguments.first else { usage() }
            arguments.removeFirst()
            switch option {
            case "--port": port = UInt16(value) ?? 0
            case "--instance": instance = value
            case "--txt":
                let parts = value.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
                txt[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
            case "--discoverable": discoverableName = value
            case "--seconds": seconds = Double(value) ?? 0
            default: usage()
            }
        }

        let loop = MainLoop()
        let discovery = AvahiDiscovery(loop: loop)
        var exitCode: Int32 = 0
        // A source lives as long as its GLibSource: keep them.
        var sources = [loop.onUnixSignal(SIGTERM) { loop.quit() }, loop.onUnixSignal(SIGINT) { loop.quit() }]
        if seconds > 0 { sources.append(loop.after(milliseconds: UInt32(seconds * 1000)) { loop.quit() }) }
        discovery.onStateChange = { state in
            switch state {
            case .connecting: emit(["event": "state", "state": "connecting"])
            case .running: emit(["event": "state", "state": "running"])
            case .unavailable(let reason): emit(["event": "state", "state": "unavailable", "reason": reason])
            }
            if mode == "state" {
                if case .running = state { exitCode = 0; loop.quit() }
                if case .unavailable = state { exitCode = 3; loop.quit() }
            }
        }
        discovery.onPublished = { name in emit(["event": "published", "instance": name]) }

        switch mode {
        case "publish":
            guard port != 0 else { usage() }
            if let discoverableName { discovery.setDiscoverable(true, name: discoverableName) }
            discovery.start(port: port, instanceName: instance, txt: txt)
            sources.append(loop.onUnixSignal(SIGUSR1) { discovery.setDiscoverable(true, name: discoverableName ?? "probe") })
            sources.append(loop.onUnixSignal(SIGUSR2) { discovery.setDiscoverable(false, name: nil) })
        case "browse":
            discovery.browse(onFound: { service in
                emit([
                    "event": "found", "instance": service.instance, "host": service.hostName,
                    "address": service.address, "port": Int(service.port), "txt": service.txt,
                    "interface": service.interfaceName, "local": service.isLocal,
                ])
            }, onLost: { name in emit(["event": "lost", "instance": name]) })
        case "state":
            discovery.browse(onFound: { _ in }, onLost: { _ in })
        default:
            usage()
        }
        if mode == "state", case .unavailable(let reason) = discovery.state {
            emit(["event": "state", "state": "unavailable", "reason": reason])
            exit(3)
        }
        loop.run()
        discovery.stop()
        sources.removeAll()
        exit(exitCode)
    }

    static func emit(_ object: [String: Any]) {
        guard let data = try? JSONSerialization.data(withJSONObject: object, options: [.sortedKeys, .withoutEscapingSlashes])
        else { return }
        // Unbuffered: a test reads the lines while the probe runs.
        FileHandle.standardOutput.write(data + Data("\n".utf8))
    }

    static func usage() -> Never {
        FileHandle.standardError.write(Data("""
        usage: handoff-discovery-probe publish --port PORT [--instance NAME] [--txt KEY=VALUE]... [--discoverable NAME]
               handoff-discovery-probe browse [--seconds N]
               handoff-discovery-probe state [--seconds N]

        """.utf8))
        exit(2)
    }
}
