// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import DBusKit
import Foundation
import TypedValues
import UserActivityInterfaces

/// Where `pair` serves its Handoff agent (the CLI's own path; the contract's
/// names come from ``HandoffInterfaces``).
enum PairingAgent {
    static let path = "/org/example/useractivityctl/HandoffAgent"
}

/// The session bus, talking to useractivity-handoffd.
final class HandoffClient {
    let client: ServiceClient

    init() throws(CLIError) { client = try ServiceClient() }

    @discardableResult
    func call(path: String = HandoffInterfaces.managerPath, interface: String = HandoffInterfaces.managerName, _ member: String,
              _ arguments: [TypedValue] = [], autoStart: Bool = true, timeoutMilliseconds: Int32 = 25_000) throws(CLIError) -> [TypedValue] {
        do {
            return try client.call(destination: HandoffInterfaces.busName, path: path, interface: interface, member, arguments,
                                   autoStart: autoStart, timeoutMilliseconds: timeoutMilliseconds)
        } catch {
            throw Self.explained(error)
        }
    }

    /// Replaces the hint about useractivityd with one about useractivity-handoffd.
    static func explained(_ failure: CLIError) -> CLIError {
        var failure = failure
        if failure.exitCode == CLIError.unavailable, failure.hint?.contains("useractivityd is not running") == true {
            failure.hint = "useractivity-handoffd is not running and D-Bus could not start it: install the package "
                + "(it ships /usr/share/dbus-1/services/\(HandoffInterfaces.busName).service) or start useractivity-handoffd by hand."
        }
        return failure
    }

    func managerProperties(autoStart: Bool = true) throws(CLIError) -> [String: TypedValue] {
        let reply = try call(interface: "org.freedesktop.DBus.Properties", "GetAll", [.string(HandoffInterfaces.managerName)], autoStart: autoStart)
        return dictionary(reply.first ?? .stringVariantDictionary([]))
    }

    func setManagerProperty(_ name: String, _ value: TypedValue) throws(CLIError) {
        try call(interface: "org.freedesktop.DBus.Properties", "Set", [.string(HandoffInterfaces.managerName), .string(name), .variant(value)])
    }

    /// The device objects: path and Device properties, sorted by name then id.
    func devices(autoStart: Bool = true) throws(CLIError) -> [HandoffDevice] {
        let reply = try call(interface: "org.freedesktop.DBus.ObjectManager", "GetManagedObjects", autoStart: autoStart)
        var devices: [HandoffDevice] = []
        if case .dictionary(_, _, let entries)? = reply.first {
            for entry in entries {
                guard let path = entry.key.objectPathValue, case .dictionary(_, _, let interfaces) = entry.value,
                      let properties = interfaces.first(where: { $0.key.stringValue == HandoffInterfaces.deviceName })?.value
                else { continue }
                devices.append(HandoffDevice(path: path, properties: properties.stringVariantEntries ?? []))
            }
        }
        return devices.sorted { ($0.name, $0.id) < ($1.name, $1.id) }
    }

    /// DEVICE as the person typed it: a device id (or a prefix of it, or of
    /// its path's last part), or a name (exact, then ignoring case).
    func device(_ text: String) throws(CLIError) -> HandoffDevice {
        let devices = try devices()
        let lowered = text.lowercased()
        let candidates: [[HandoffDevice]] = [
            devices.filter { $0.id == lowered || $0.path == text || $0.pathID == text },
            devices.filter { $0.name == text },
            devices.filter { $0.name.lowercased() == lowered },
            lowered.count >= 4 && lowered.allSatisfy(\.isHexDigit)
                ? devices.filter { $0.id.hasPrefix(lowered) || $0.pathID.hasPrefix(lowered) } : [],
        ]
        for matches in candidates where !matches.isEmpty {
            guard matches.count == 1 else {
                throw CLIError("'\(text)' matches \(matches.count) devices: "
                               + matches.map { "\($0.name) (\($0.shortID))" }.joined(separator: ", "),
                               hint: "give more of the device id (`useractivityctl handoff devices` lists them).")
            }
            return matches[0]
        }
        throw CLIError("no device matches '\(text)'",
                       hint: "name a device by its name or the start of its id (at least 4 hex digits); `useractivityctl handoff devices` lists them.")
    }
}

/// One device object.
struct HandoffDevice {
    var path: String
    var properties: [(String, TypedValue)]

    private var byName: [String: TypedValue] { Dictionary(properties, uniquingKeysWith: { _, last in last }) }
    var name: String { byName["Name"]?.plainText ?? "" }
    var id: String { byName["DeviceId"]?.plainText ?? "" }
    var pathID: String { path.hasPrefix(HandoffInterfaces.devicePathPrefix) ? String(path.dropFirst(HandoffInterfaces.devicePathPrefix.count)) : path }
    var shortID: String { String((id.isEmpty ? pathID : id).prefix(12)) }
    var paired: Bool { byName["Paired"]?.boolValue ?? false }
    var reachable: Bool { byName["Reachable"]?.boolValue ?? false }
    var address: String { byName["Address"]?.plainText ?? "" }
    var currentTitle: String {
        guard let current = byName["CurrentActivity"] else { return "" }
        let activity = dictionary(current)
        let title = activity["title"]?.plainText ?? ""
        let app = activity["app-id"]?.plainText ?? ""
        return app.isEmpty && title.isEmpty ? "" : "\(title) (\(app))"
    }

    var json: [String: Any] {
        var values: [String: Any] = [:]
        for (name, value) in properties { values[name] = value.jsonObject }
        return ["path": path, "properties": values]
    }
}

struct Handoff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Handoff between your devices: status, pairing, continuing what another device is doing.",
        discussion: """
        Talks to useractivity-handoffd (org.example.UserActivity.Handoff) on the session bus; D-Bus starts it \
        when needed. DEVICE is a device's name or the start of its id (at least 4 hex digits), as \
        `useractivityctl handoff devices` lists them.
        """,
        subcommands: [
            HandoffStatus.self, HandoffEnable.self, HandoffDisable.self, HandoffDevices.self, HandoffDiscoverable.self,
            HandoffPair.self, HandoffUnpair.self, HandoffContinue.self, HandoffAddPeer.self, HandoffResetIdentity.self,
        ])
}

struct HandoffStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show whether Handoff is enabled, this device's name and id, discoverability and the devices.",
        discussion: "Does not start useractivity-handoffd. Exits with 69 when it is neither running nor activatable.")

    @OptionGroup var output: OutputOptions

    func run() throws {
        let handoff = try HandoffClient()
        let running = try handoff.client.busDaemon("NameHasOwner", [.string(HandoffInterfaces.busName)]).first?.boolValue ?? false
        let activatable = (try handoff.client.busDaemon("ListActivatableNames").first?.stringArrayValue ?? []).contains(HandoffInterfaces.busName)
        var properties: [String: TypedValue] = [:]
        var devices: [HandoffDevice] = []
        if running {
            properties = try handoff.managerProperties(autoStart: false)
            devices = try handoff.devices(autoStart: false)
        }
        if output.json {
            var object: [String: Any] = ["running": running, "activatable": activatable]
            object["enabled"] = properties["Enabled"]?.boolValue ?? NSNull()
            object["device-name"] = properties["DeviceName"]?.stringValue ?? NSNull()
            object["device-id"] = properties["DeviceId"]?.stringValue ?? NSNull()
            object["discoverable"] = properties["Discoverable"]?.boolValue ?? NSNull()
            object["discoverable-timeout"] = properties["DiscoverableTimeout"]?.uint32Value.map { Int($0) } ?? NSNull()
            object["devices"] = devices.count
            object["paired-devices"] = devices.filter(\.paired).count
            object["reachable-devices"] = devices.filter(\.reachable).count
            try Output.json(object)
        } else {
            var fields: [(String, String)] = [("Service", running ? "running"
                : activatable ? "not running; D-Bus starts it on first use" : "not running and not activatable")]
            if running {
                fields.append(("Handoff", properties["Enabled"]?.boolValue == true ? "enabled" : "disabled (useractivityctl handoff enable)"))
                fields.append(("Device name", properties["DeviceName"]?.plainText ?? ""))
                fields.append(("Device id", properties["DeviceId"]?.plainText ?? ""))
                let timeout = properties["DiscoverableTimeout"]?.uint32Value ?? 0
                fields.append(("Discoverable", properties["Discoverable"]?.boolValue == true
                    ? "yes" + (timeout == 0 ? " (until turned off)" : " (turns off after \(timeout) s)") : "no"))
                fields.append(("Devices", "\(devices.count) (\(devices.filter(\.paired).count) paired, \(devices.filter(\.reachable).count) reachable)"))
            }
            Output.fields(fields)
        }
        if !running && !activatable {
            throw CLIError("\(HandoffInterfaces.busName) is not running and cannot be started",
                           hint: "install the package, or start useractivity-handoffd by hand.", exitCode: CLIError.unavailable)
        }
    }
}

struct HandoffEnable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "enable", abstract: "Turn Handoff on (listen, advertise to paired devices, discover); remembered.")
    func run() throws { try HandoffClient().setManagerProperty("Enabled", .boolean(true)) }
}

struct HandoffDisable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "disable", abstract: "Turn Handoff off: nothing is published, advertised or listened on.")
    func run() throws { try HandoffClient().setManagerProperty("Enabled", .boolean(false)) }
}

struct HandoffDevices: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "devices", abstract: "List the nearby and paired devices.")

    @OptionGroup var output: OutputOptions

    func run() throws {
        let devices = try HandoffClient().devices()
        if output.json {
            try Output.json(devices.map(\.json))
            return
        }
        guard !devices.isEmpty else {
            Output.line("No devices. Make another device discoverable, or add it with `useractivityctl handoff add-peer HOST:PORT`.")
            return
        }
        Output.table(["ID", "NAME", "ADDRESS", "PAIRED", "REACHABLE", "CURRENT"], devices.map {
            [$0.shortID, $0.name, $0.address, $0.paired ? "yes" : "no", $0.reachable ? "yes" : "no", $0.currentTitle]
        })
    }
}

struct HandoffDiscoverable: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "discoverable",
        abstract: "Show, or turn on or off, whether this device announces its name and accepts pairing.",
        discussion: """
        While on, this device's name is announced on the local network (DNS-SD through Avahi), other \
        discoverable devices nearby appear in `useractivityctl handoff devices`, and pairing requests are \
        accepted. It turns itself off after DiscoverableTimeout seconds (default 120). Where mDNS is \
        blocked, add the other device with `useractivityctl handoff add-peer HOST:PORT`.
        """)

    @Argument(help: ArgumentHelp("on or off; without it, print the current value.", valueName: "on|off"))
    var value: String?

    func run() throws {
        let handoff = try HandoffClient()
        guard let value else {
            let current = try handoff.managerProperties()["Discoverable"]?.boolValue ?? false
            Output.line(current ? "on" : "off")
            return
        }
        switch value.lowercased() {
        case "on", "yes", "true", "1": try handoff.setManagerProperty("Discoverable", .boolean(true))
        case "off", "no", "false", "0": try handoff.setManagerProperty("Discoverable", .boolean(false))
        default: throw ValidationError("expected on or off, got '\(value)'")
        }
    }
}

struct HandoffPair: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pair",
        abstract: "Pair with a device, confirming the 6-digit code shown on both devices.",
        discussion: """
        Serves a pairing agent while it runs and asks "Accept pairing with NAME, code 123456? [y/N]" on the \
        terminal (stdin); anything but y or yes refuses. Ctrl-C cancels the pairing.
        """)

    @Argument(help: ArgumentHelp("The device: its name or the start of its id.", valueName: "device"))
    var device: String

    func run() throws {
        let handoff = try HandoffClient()
        let target = try handoff.device(device)
        let connection = handoff.client.connection
        Interrupts.install()
        // Only the service may ask this agent anything.
        let owner = try handoff.client.busDaemon("GetNameOwner", [.string(HandoffInterfaces.busName)]).first?.stringValue ?? ""
        var requests: [Message] = []
        var cancelled = false
        do {
            try connection.registerFallback(path: PairingAgent.path) { message in
                guard message.kind == .methodCall else { return false }
                guard message.sender == owner, message.interface == HandoffInterfaces.agentName || message.interface == nil else {
                    connection.send(Message.error(to: message, name: "org.freedesktop.DBus.Error.AccessDenied",
                                                  message: "only \(HandoffInterfaces.busName) may use this agent"))
                    return true
                }
                switch message.member {
                case "RequestConfirmation": requests.append(message)
                case "Cancel":
                    cancelled = true
                    if let reply = try? Message.methodReturn(to: message) { connection.send(reply) }
                default:
                    connection.send(Message.error(to: message, name: "org.freedesktop.DBus.Error.UnknownMethod",
                                                  message: "no method \(message.member ?? "") here"))
                }
                return true
            }
        } catch {
            throw CLIError(error)
        }
        try handoff.call("RegisterAgent", [.objectPath(PairingAgent.path)])
        defer { _ = try? handoff.call("UnregisterAgent", [.objectPath(PairingAgent.path)], timeoutMilliseconds: 2000) }

        var outcome: Result<Message, DBusFailure>?
        let pair = Message.methodCall(destination: owner, path: target.path, interface: HandoffInterfaces.deviceName, member: "Pair")
        // A person answers on both devices: no short deadline.
        connection.callAsync(pair, timeoutMilliseconds: 10 * 60 * 1000) { outcome = $0 }
        Output.error("pairing with \(target.name) (\(target.shortID))…")
        let input = LineInput()
        while outcome == nil {
            if Interrupts.stopRequested {
                _ = try? handoff.call(path: target.path, interface: HandoffInterfaces.deviceName, "CancelPairing", timeoutMilliseconds: 2000)
                throw CLIError("pairing cancelled", exitCode: 130)
            }
            guard connection.readWriteDispatch(timeoutMilliseconds: 200) else {
                throw CLIError("the session bus closed", exitCode: CLIError.unavailable)
            }
            while !requests.isEmpty {
                let request = requests.removeFirst()
                cancelled = false
                let arguments = (try? request.arguments()) ?? []
                let code = arguments.count > 1 ? arguments[1].stringValue ?? "" : ""
                let devicePath = arguments.first?.objectPathValue ?? target.path
                let name = devicePath == target.path ? target.name : devicePath
                Output.prompt("Accept pairing with \(name), code \(code)? [y/N] ")
                var answer: String?
                while answer == nil && !cancelled && !Interrupts.stopRequested {
                    answer = input.line(timeoutMilliseconds: 100)
                    if answer == nil && input.atEnd { answer = "" }
                    _ = connection.readWriteDispatch(timeoutMilliseconds: 0)
                }
                if cancelled {
                    Output.error("\nthe pairing request ended before an answer")
                    continue
                }
                let accepted = ["y", "yes"].contains(answer?.trimmingCharacters(in: .whitespaces).lowercased() ?? "")
                if accepted, let reply = try? Message.methodReturn(to: request) {
                    connection.send(reply)
                } else {
                    connection.send(Message.error(to: request, name: HandoffInterfaces.ErrorName.pairingRefused, message: "refused on this device"))
                }
                connection.flush()
            }
        }
        switch outcome! {
        case .success:
            Output.line("Paired with \(target.name) (\(target.shortID)).")
        case .failure(let failure):
            throw HandoffClient.explained(CLIError(failure))
        }
    }
}

/// Lines from stdin without blocking the bus: poll, then read what is there.
final class LineInput {
    private var buffer: [UInt8] = []
    private(set) var atEnd = false

    func line(timeoutMilliseconds: Int32) -> String? {
        if let line = takeLine() { return line }
        guard !atEnd else { return nil }
        var descriptor = pollfd(fd: 0, events: Int16(POLLIN), revents: 0)
        guard poll(&descriptor, 1, timeoutMilliseconds) > 0 else { return nil }
        var chunk = [UInt8](repeating: 0, count: 512)
        let count = read(0, &chunk, chunk.count)
        if count <= 0 {
            atEnd = true
            if !buffer.isEmpty { defer { buffer = [] }; return String(decoding: buffer, as: UTF8.self) }
            return nil
        }
        buffer += chunk[..<count]
        return takeLine()
    }

    private func takeLine() -> String? {
        guard let newline = buffer.firstIndex(of: UInt8(ascii: "\n")) else { return nil }
        defer { buffer.removeSubrange(...newline) }
        return String(decoding: buffer[..<newline], as: UTF8.self)
    }
}

struct HandoffUnpair: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpair", abstract: "Forget a paired device's key (the device is told when reachable).")

    @Argument(help: ArgumentHelp("The device: its name or the start of its id.", valueName: "device"))
    var device: String

    func run() throws {
        let handoff = try HandoffClient()
        let target = try handoff.device(device)
        try handoff.call(path: target.path, interface: HandoffInterfaces.deviceName, "Unpair")
        Output.line("Unpaired \(target.name) (\(target.shortID)).")
    }
}

struct HandoffContinue: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "continue",
        abstract: "Continue here what a paired device is doing now; prints the app that took it.")

    @Argument(help: ArgumentHelp("The device: its name or the start of its id.", valueName: "device"))
    var device: String

    func run() throws {
        let handoff = try HandoffClient()
        let target = try handoff.device(device)
        let reply = try handoff.call(path: target.path, interface: HandoffInterfaces.deviceName, "ContinueActivity",
                                     [.stringVariantDictionary([])], timeoutMilliseconds: 60_000)
        Output.line(reply.first?.stringValue ?? "")
    }
}

struct HandoffAddPeer: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "add-peer",
        abstract: "Add a device reached at HOST:PORT without discovery (kept across restarts); prints its object path.")

    @Argument(help: ArgumentHelp("host:port, or [IPv6]:port.", valueName: "host:port"))
    var address: String

    func run() throws {
        let reply = try HandoffClient().call("AddPeer", [.string(address)])
        Output.line(reply.first?.objectPathValue ?? "")
    }
}

struct HandoffResetIdentity: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "reset-identity",
        abstract: "Make a new key for this device (a new DeviceId); other devices must pair again. Prints the new id.")

    func run() throws {
        let handoff = try HandoffClient()
        try handoff.call("ResetIdentity")
        Output.line(try handoff.managerProperties()["DeviceId"]?.plainText ?? "")
    }
}

extension Output {
    /// A question on stderr, without a newline, flushed.
    static func prompt(_ text: String) {
        FileHandle.standardError.write(Data(text.utf8))
    }
}
