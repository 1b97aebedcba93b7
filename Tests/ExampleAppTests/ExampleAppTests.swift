// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

// The example apps of examples/ (C with gdbus-codegen, Python with PyGObject,
// JavaScript with GJS, C++ with Qt 5's qdbusxml2cpp), built from the
// repository's interface XML and run against the built useractivityd, started
// by D-Bus activation on a private bus. A missing toolchain or a generator that
// fails is a failed test, never a skipped one.

/// A private bus with the daemon as an activatable service and the example's
/// own desktop entry (Exec made absolute) in the test's XDG data dir.
final class ExampleHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus
    let client: Connection

    init(_ app: ExampleApp, command: [String]) throws {
        session = try SessionEnvironment()
        bus = try PrivateBus(environment: session)
        try bus.installService(name: UA.busName, exec: "\(shellQuote(try BuiltProducts.useractivityd())) --verbose")
        let entry = try String(contentsOfFile: "\(app.sourceDirectory)/\(app.appID).desktop", encoding: .utf8)
        let lines = entry.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("Exec=") ? "Exec=" + command.map(shellQuote).joined(separator: " ") : String(line)
        }
        try writeFileAtomically("\(session.applicationsDirectory())/\(app.appID).desktop",
                                contents: lines.joined(separator: "\n"))
        client = try Connection.bus(address: bus.address)
    }

    deinit {
        client.close()
        bus.stop()
    }

    @discardableResult
    func call(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue]) throws -> [TypedValue] {
        let message = Message.methodCall(destination: UA.busName, path: path, interface: interface, member: member)
        try message.append(arguments)
        return try client.call(message, timeoutMilliseconds: 30_000).arguments()
    }

    func property(_ path: String, _ interface: String, _ name: String) throws -> TypedValue {
        try call(path, "org.freedesktop.DBus.Properties", "Get", [.string(interface), .string(name)]).first?.unwrappedVariant
            ?? .string("<no value>")
    }

    func currentActivity() throws -> String {
        try property(UA.managerPath, UA.managerInterface, "CurrentActivity").objectPathValue ?? "<not a path>"
    }

    func logTail(_ lines: Int = 30) -> String {
        "--- bus log ---\n" + bus.log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }
}

/// Dictionaries with their entries sorted by key, all the way down: an a{sv}
/// is a map, so entry order is not data.
func canonical(_ value: TypedValue) -> TypedValue {
    switch value {
    case .variant(let inner): return .variant(canonical(inner))
    case .array(let elementType, let elements): return .array(elementType: elementType, elements.map(canonical))
    case .structure(let fields): return .structure(fields.map(canonical))
    case .dictionary(let keyType, let valueType, let entries):
        let sorted = entries.map { TypedValue.DictionaryEntry(key: $0.key, value: canonical($0.value)) }
            .sorted { "\($0.key)" < "\($1.key)" }
        return .dictionary(keyType: keyType, valueType: valueType, sorted)
    default: return value
    }
}

@Suite("Example apps in C, Python, GJS and Qt, built from the interface XML and run against the daemon")
struct ExampleAppTests {
    /// What a test hands the example to continue: every value must come back with its type.
    static let userInfo: TypedValue = .stringVariantDictionary([
        ("note", .string("Trip plan")),
        ("path", .string("/home/user/Notes/Trip plan.md")),
        ("line", .int64(42)),
        ("column", .uint32(7)),
        ("zoom", .double(1.25)),
        ("pinned", .boolean(true)),
        ("rating", .byte(4)),
        ("offset", .int16(-3)),
        ("tags", .stringArray(["travel", "2026"])),
        ("cursor", .stringVariantDictionary([("row", .int32(3)), ("anchors", .array(elementType: "i", [.int32(1), .int32(-2)]))])),
    ])

    @Test("C example (gdbus-codegen): publishes, donates, continues through its Handler")
    func cExample() throws { try runExample(.c) }

    @Test("Python example (PyGObject): publishes, donates, continues through its Handler")
    func pythonExample() throws { try runExample(.python) }

    @Test("JavaScript example (GJS): publishes, donates, continues through its Handler")
    func gjsExample() throws { try runExample(.gjs) }

    @Test("C++ example (Qt 5, qdbusxml2cpp): publishes, donates, continues through its Handler")
    func qtExample() throws { try runExample(.qt) }

    func runExample(_ app: ExampleApp) throws {
        let buildDirectory = try ExampleBuilds.shared.build(app)
        let command = app.command(buildDirectory)
        let h = try ExampleHarness(app, command: command)
        let example = try h.bus.spawn(command[0], Array(command.dropFirst()))
        defer { example.terminate(grace: 1) }

        // Every step prints one line; a missing line is a failure with what it printed.
        func nextLine(_ prefix: String) throws -> String {
            let line = try? example.readLine(timeout: 60)
            guard let line, line.hasPrefix(prefix + " ") else {
                example.terminate(grace: 1)
                throw ExampleFailure("""
                    the \(app) example printed \(line.map { "\"\($0)\"" } ?? "nothing more") where "\(prefix) …" was expected
                    stdout: \(example.stdoutText)
                    stderr: \(example.stderrText)
                    \(h.logTail())
                    """)
            }
            return String(line.dropFirst(prefix.count + 1))
        }

        // 1. It became current: the manager's CurrentActivity is its activity, with its title.
        let published = try nextLine("current")
        #expect(published.hasPrefix(UA.activityPathPrefix), "\(published)")
        #expect(try h.currentActivity() == published)
        #expect(try h.property(published, UA.activityInterface, "Title") == .string("Welcome note (\(app.label))"))
        #expect(try h.property(published, UA.activityInterface, "AppId") == .string(app.appID))
        #expect(try h.property(published, UA.activityInterface, "ActivityType") == .string(app.noteType))
        #expect(canonical(try h.property(published, UA.activityInterface, "UserInfo"))
                == canonical(.stringVariantDictionary([("note", .string("welcome")), ("line", .int64(1))])))

        // 2. It donated: Search finds the shortcut.
        let savedID = try nextLine("donated")
        #expect(!savedID.isEmpty)
        let results = try h.call(UA.managerPath, UA.managerInterface, "Search", [
            .string("groceries"), .stringVariantDictionary([("app-id", .string(app.appID))]),
        ]).first
        let found = (results.flatMap { value -> [TypedValue]? in
            if case .array(_, let elements) = value { return elements }
            return nil
        } ?? []).compactMap { $0.stringVariantEntries }
        #expect(found.count == 1, "\(String(describing: results))")
        if let result = found.first {
            let fields = Dictionary(result.map { ($0.0, $0.1.unwrappedVariant) }, uniquingKeysWith: { a, _ in a })
            #expect(fields["saved-id"] == .string(savedID))
            #expect(fields["title"] == .string("Groceries note (\(app.label))"))
            #expect(fields["app-id"] == .string(app.appID))
            #expect(fields["activity-type"] == .string(app.noteType))
        }

        // 3. Its Handler is registered: continuing its type reaches it and returns its app ID.
        #expect(try nextLine("ready") == app.handlerPath)
        let title = "Trip plan, continued from a \(app) test"
        let reply = try h.call(UA.managerPath, UA.managerInterface, "ContinueActivity", [
            .string(app.noteType),
            .stringVariantDictionary([("title", .string(title)), ("user-info", Self.userInfo)]),
            .stringVariantDictionary([]),
        ])
        #expect(reply.first == .string(app.appID), "\(reply)\n\(h.logTail())")

        let continued = try nextLine("continued")
        #expect(continued.hasPrefix("\(app.noteType): \(title) "), "\(continued)")
        if app.folder == "qt" {
            #expect(continued.hasSuffix("(user-info keys: column, cursor, line, note, offset, path, pinned, rating, tags, zoom)"),
                    "\(continued)")
        } else {  // GLib's text format of the a{sv} it got
            #expect(continued.contains("'path': <'/home/user/Notes/Trip plan.md'>"), "\(continued)")
            #expect(continued.contains("'line': <int64 42>"), "\(continued)")
        }

        // 4. It shows what it got: its new current activity has exactly that title and user info.
        let shown = try nextLine("current")
        #expect(shown != published)
        #expect(try h.currentActivity() == shown)
        #expect(try h.property(shown, UA.activityInterface, "Title") == .string(title))
        #expect(try h.property(shown, UA.activityInterface, "AppId") == .string(app.appID))
        let received = try h.property(shown, UA.activityInterface, "UserInfo")
        #expect(canonical(received).isIdentical(to: canonical(Self.userInfo)), "\(received)")
    }
}

@Suite("The example builds fail when their generator cannot use the interface XML")
struct ExampleGeneratorTests {
    /// The repository's XML with a double hyphen in a comment: not well-formed.
    static func malformedXML(in directory: TemporaryDirectory) throws -> String {
        let xml = try String(contentsOfFile: "\(repositoryRoot())/dbus/org.example.UserActivity.xml", encoding: .utf8)
        let path = directory.appending("malformed.xml")
        try writeFileAtomically(path, contents: xml.replacingOccurrences(of: "<node>", with: "<!-- run with --verbose -->\n<node>"))
        return path
    }

    @Test("The repository's interface XML is well-formed: no double hyphen inside a comment")
    func wellFormedComments() throws {
        let xml = try String(contentsOfFile: "\(repositoryRoot())/dbus/org.example.UserActivity.xml", encoding: .utf8)
        var rest = Substring(xml)
        while let open = rest.range(of: "<!--") {
            let afterOpen = rest[open.upperBound...]
            let close = try #require(afterOpen.range(of: "-->"), "an unclosed comment")
            let body = afterOpen[..<close.lowerBound]
            #expect(!body.contains("--") && !body.hasSuffix("-"), "a comment holds \"--\": \(body.prefix(120))")
            rest = afterOpen[close.upperBound...]
        }
    }

    @Test("C: gdbus-codegen refusing the XML fails the build")
    func cGeneratorFailure() throws {
        let directory = try TemporaryDirectory(prefix: "uaex-")
        let result = try runMake(.c, buildDirectory: directory.appending("build"),
                                 variables: ["XML=\(try Self.malformedXML(in: directory))"], timeout: 120)
        #expect(!result.succeeded, "\(result)")
        #expect(result.stderr.contains("not well-formed"), "\(result)")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("build/notes-c")))
    }

    @Test("Qt: an unreadable XML, or a signature qdbusxml2cpp cannot map, fails the build")
    func qtGeneratorFailure() throws {
        let directory = try TemporaryDirectory(prefix: "uaex-")
        let malformed = try runMake(.qt, buildDirectory: directory.appending("malformed"),
                                    variables: ["XML=\(try Self.malformedXML(in: directory))"], timeout: 120)
        #expect(!malformed.succeeded, "\(malformed)")
        #expect(malformed.stderr.contains("not well-formed"), "\(malformed)")

        // A member whose struct type Qt 5 has no C++ type for (and no annotation names one).
        let unmappable = directory.appending("unmappable.xml")
        try writeFileAtomically(unmappable, contents: """
            <node><interface name="org.example.UserActivity">
            <method name="Pair"><arg name="pair" type="(ii)" direction="in"/></method>
            </interface><interface name="org.example.UserActivity.Handler"/></node>
            """)
        let unknown = try runMake(.qt, buildDirectory: directory.appending("unmappable"),
                                  variables: ["XML=\(unmappable)"], timeout: 120)
        #expect(!unknown.succeeded, "\(unknown)")
        #expect(unknown.stderr.contains("Got unknown type `(ii)'"), "\(unknown)")
        #expect(!FileManager.default.fileExists(atPath: directory.appending("unmappable/notes-qt")))
    }
}
