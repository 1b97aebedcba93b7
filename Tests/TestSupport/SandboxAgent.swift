// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A scripted D-Bus client (Python with GIO's GDBus, `/usr/bin/python3`) that
/// runs inside a ``SandboxedApp`` or ``SnapScope``, or on the host
/// (``SandboxAgent/host(bus:directory:steps:)``): it performs ``Step``s in
/// order, reports each as a JSON line on stdout, and appends every message it
/// receives (replies, errors and signals, as the bytes that came off the wire)
/// to a dump file, so a test can count what reached it.
public final class SandboxAgent: @unchecked Sendable {
    /// One thing the agent does.
    public enum Step: Sendable {
        /// A method call; `arguments` in GVariant text format (`('a', {'k': <'v'>})`), empty for none.
        /// In `path` and `arguments`, `@LAST@` stands for the last object path a reply returned
        /// (``lastPath``), so a script can act on the activity it just created.
        case call(path: String, interface: String, member: String, arguments: String = "", destination: String = "org.example.UserActivity")
        /// `org.freedesktop.DBus.AddMatch(rule)`.
        case addMatch(String)
        /// Reports `text` (a marker the test waits for).
        case say(String)
        /// Waits (up to 120 s) until the file exists.
        case waitForFile(String)
        /// Waits until a received message contains `text`; reported ok or not.
        case waitForReceived(String, timeout: Double = 60)

        var json: Any {
            switch self {
            case let .call(path, interface, member, arguments, destination):
                return ["call", path, interface, member, arguments, destination]
            case .addMatch(let rule): return ["match", rule]
            case .say(let text): return ["say", text]
            case .waitForFile(let path): return ["wait-file", path]
            case let .waitForReceived(text, timeout): return ["wait-received", text, timeout]
            }
        }
    }

    /// What the agent reported for one step.
    public struct Report: Sendable, CustomStringConvertible {
        /// The step's kind (`call`, `match`, `say`, …; `connected` and `done` frame the run).
        public var step: String
        public var ok: Bool
        /// A call's reply in GVariant text format.
        public var reply: String?
        /// A failed call's D-Bus error name.
        public var error: String?
        /// A failed call's error message (without the name).
        public var message: String?
        /// ``Step/say(_:)``'s text, or the unique name for `connected`.
        public var text: String?
        /// The whole line.
        public var line: String

        /// The line, cut to 400 characters (an Introspect reply is long).
        public var description: String { line.count > 400 ? line.prefix(400) + "…" : line }
    }

    /// Stands for the last object path a reply returned, in a later call step.
    public static let lastPath = "@LAST@"

    /// The agent's process.
    public let process: ChildProcess
    /// Where received messages are dumped (4-byte little-endian length, then the message).
    public let dumpPath: String?

    private let lock = NSLock()
    private var reports: [Report] = []

    /// Writes the agent script into `directory` (once) and returns its path.
    static func install(in directory: TemporaryDirectory) throws -> String {
        let path = directory.appending("agent.py")
        if !FileManager.default.fileExists(atPath: path) {
            try writeFileAtomically(path, contents: script)
        }
        return path
    }

    /// Starts the agent through `launch` (given the script's arguments).
    init(steps: [Step], directory: TemporaryDirectory, dumpReceived: Bool,
         launch: ([String]) throws -> ChildProcess) throws {
        let data = try JSONSerialization.data(withJSONObject: steps.map(\.json))
        dumpPath = dumpReceived ? directory.appending("received-\(UInt32.random(in: 0...UInt32.max)).bin") : nil
        process = try launch([String(decoding: data, as: UTF8.self), dumpPath ?? ""])
    }

    /// Runs the agent on the host (unconfined), attached to `bus` directly.
    public static func host(bus: PrivateBus, directory: TemporaryDirectory, steps: [Step],
                            dumpReceived: Bool = true, extraEnvironment: [String: String] = [:]) throws -> SandboxAgent {
        let script = try install(in: directory)
        return try SandboxAgent(steps: steps, directory: directory, dumpReceived: dumpReceived) { arguments in
            try ChildProcess(executable: "/usr/bin/python3", arguments: [script] + arguments,
                             environment: bus.environment(adding: extraEnvironment),
                             stdout: .capture, stderr: .capture, newProcessGroup: true)
        }
    }

    deinit { process.terminate(grace: 1) }

    /// Reads reports until one satisfies `predicate` (or the agent ends / `timeout` passes).
    @discardableResult
    public func waitFor(timeout: Double = 60, _ predicate: (Report) -> Bool) throws -> Report? {
        lock.lock()
        if let found = reports.first(where: predicate) { lock.unlock(); return found }
        lock.unlock()
        let deadline = monotonicNow() + timeout
        while monotonicNow() < deadline {
            guard let line = try? process.readLine(timeout: max(0.01, deadline - monotonicNow())) else { return nil }
            guard let report = Self.parse(line) else { continue }
            lock.lock()
            reports.append(report)
            lock.unlock()
            if predicate(report) { return report }
        }
        return nil
    }

    /// Waits for the `say` report with `text`.
    @discardableResult
    public func waitForSay(_ text: String, timeout: Double = 60) throws -> Bool {
        try waitFor(timeout: timeout) { $0.step == "say" && $0.text == text } != nil
    }

    /// Waits for the agent to finish all steps and exit; returns every report.
    public func finish(timeout: Double = 120) throws -> [Report] {
        _ = try waitFor(timeout: timeout) { $0.step == "done" }
        _ = process.waitForExit(timeout: 10)
        lock.lock(); defer { lock.unlock() }
        return reports
    }

    /// The reports read so far.
    public var allReports: [Report] {
        lock.lock(); defer { lock.unlock() }
        return reports
    }

    /// The reports of ``Step/call(path:interface:member:arguments:destination:)`` steps, in order.
    public var callReports: [Report] { allReports.filter { $0.step == "call" } }

    /// Every message the agent received so far, as it came off the wire.
    public func receivedMessages() -> [[UInt8]] {
        guard let dumpPath, let data = FileManager.default.contents(atPath: dumpPath) else { return [] }
        let bytes = [UInt8](data)
        var messages: [[UInt8]] = []
        var offset = 0
        while offset + 4 <= bytes.count {
            let length = Int(bytes[offset]) | Int(bytes[offset + 1]) << 8 | Int(bytes[offset + 2]) << 16 | Int(bytes[offset + 3]) << 24
            offset += 4
            guard offset + length <= bytes.count else { break }
            messages.append(Array(bytes[offset..<offset + length]))
            offset += length
        }
        return messages
    }

    /// How many bytes of `needles` occur in the received messages: the sum,
    /// over each needle, of its length times its number of occurrences.
    public func leakedBytes(of needles: [String]) -> Int {
        let messages = receivedMessages()
        var total = 0
        for needle in needles {
            let pattern = Array(needle.utf8)
            for message in messages { total += occurrences(of: pattern, in: message) * pattern.count }
        }
        return total
    }

    /// How many received messages contain `needle`.
    public func messagesContaining(_ needle: String) -> Int {
        let pattern = Array(needle.utf8)
        return receivedMessages().filter { occurrences(of: pattern, in: $0) > 0 }.count
    }

    static func parse(_ line: String) -> Report? {
        guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
              let step = object["step"] as? String else { return nil }
        return Report(step: step, ok: object["ok"] as? Bool ?? false, reply: object["reply"] as? String,
                      error: (object["error"] as? String).flatMap { $0.isEmpty ? nil : $0 },
                      message: object["message"] as? String,
                      text: (object["text"] as? String) ?? (object["name"] as? String), line: line)
    }

    /// The agent (Python 3 with PyGObject's Gio).
    static let script = #"""
    # A D-Bus client that runs a list of steps and reports each as a JSON line;
    # every message it receives is appended (length-prefixed) to a dump file.
    import json, os, struct, sys, threading, time
    from gi.repository import Gio, GLib

    steps = json.loads(sys.argv[1])
    dump = open(sys.argv[2], "ab") if len(sys.argv) > 2 and sys.argv[2] else None
    cond = threading.Condition()
    received = []

    def out(obj):
        sys.stdout.write(json.dumps(obj) + "\n")
        sys.stdout.flush()

    def on_message(connection, message, incoming):
        if incoming:
            try:
                blob = bytes(message.to_blob(Gio.DBusCapabilityFlags.UNIX_FD_PASSING))
            except Exception:
                blob = b""
            with cond:
                received.append(blob)
                if dump is not None:
                    dump.write(struct.pack("<I", len(blob)) + blob)
                    dump.flush()
                cond.notify_all()
        return message

    bus = Gio.DBusConnection.new_for_address_sync(
        os.environ["DBUS_SESSION_BUS_ADDRESS"],
        Gio.DBusConnectionFlags.AUTHENTICATION_CLIENT | Gio.DBusConnectionFlags.MESSAGE_BUS_CONNECTION, None, None)
    bus.add_filter(on_message)
    out({"step": "connected", "ok": True, "name": bus.get_unique_name()})

    last_path = ""

    def call(destination, path, interface, method, args):
        global last_path
        path = path.replace("@LAST@", last_path)
        args = args.replace("@LAST@", last_path)
        parameters = GLib.Variant.parse(None, args, None, None) if args else None
        try:
            reply = bus.call_sync(destination, path, interface, method, parameters, None,
                                  Gio.DBusCallFlags.NONE, 25000, None)
            if reply.n_children() > 0 and reply.get_child_value(0).get_type_string() == "o":
                last_path = reply.get_child_value(0).get_string()
            return {"ok": True, "reply": reply.print_(False)}
        except GLib.Error as error:
            name = Gio.DBusError.get_remote_error(error) or ""
            Gio.DBusError.strip_remote_error(error)
            return {"ok": False, "error": name, "message": error.message}

    for index, step in enumerate(steps):
        kind = step[0]
        result = {"step": kind, "index": index}
        if kind == "call":
            result.update(call(step[5], step[1], step[2], step[3], step[4]))
        elif kind == "match":
            result.update(call("org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "AddMatch", "(%s,)" % GLib.Variant("s", step[1]).print_(False)))
        elif kind == "say":
            result.update({"ok": True, "text": step[1]})
        elif kind == "wait-file":
            deadline = time.monotonic() + 120
            while not os.path.exists(step[1]) and time.monotonic() < deadline:
                time.sleep(0.01)
            result.update({"ok": os.path.exists(step[1])})
        elif kind == "wait-received":
            needle = step[1].encode()
            deadline = time.monotonic() + step[2]
            with cond:
                while not any(needle in blob for blob in received) and time.monotonic() < deadline:
                    cond.wait(0.1)
                result.update({"ok": any(needle in blob for blob in received)})
        else:
            result.update({"ok": False, "error": "unknown step " + kind})
        out(result)
    bus.flush_sync(None)
    with cond:
        out({"step": "done", "ok": True, "received": len(received)})

    """#
}

private func occurrences(of pattern: [UInt8], in bytes: [UInt8]) -> Int {
    guard !pattern.isEmpty, bytes.count >= pattern.count else { return 0 }
    var count = 0
    var i = 0
    let last = bytes.count - pattern.count
    while i <= last {
        if bytes[i] == pattern[0] && bytes[i..<i + pattern.count].elementsEqual(pattern) {
            count += 1
            i += pattern.count
        } else {
            i += 1
        }
    }
    return count
}
