// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity

// The library against the BUILT `useractivityd`, started by D-Bus activation
// on a private bus per test (USERACTIVITYD_PATH, or a .build* directory).
// What the library did is checked from the outside, with a plain DBusKit
// connection (as busctl would see it), never through the library itself.

extension UA {
    /// Declares editNote, openDocument, showPage; team com.example.
    static let notes = "com.example.Notes"
    static let editNote = "com.example.Notes.edit-note"
    static let openDocument = "com.example.Notes.open-document"
    static let showPage = "com.example.Notes.show-page"
    /// Declares com.example.Notes.edit-note too (same team): a second app to continue into.
    static let reader = "com.example.Reader"
    /// Declares only com.example.Partial.open-document (the declaration check).
    static let partial = "com.example.Partial"
}

struct FixtureEntry: Sendable {
    var id: String
    var types: [String]

    static let standard = [
        FixtureEntry(id: UA.notes, types: [UA.editNote, UA.openDocument, UA.showPage]),
        FixtureEntry(id: UA.reader, types: [UA.editNote]),
        FixtureEntry(id: UA.partial, types: ["com.example.Partial.open-document"]),
    ]
}

/// One private bus, the daemon as its activatable `org.example.UserActivity`,
/// and desktop entries for the fixture apps.
final class LibraryHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus

    init(entries: [FixtureEntry] = FixtureEntry.standard) throws {
        session = try SessionEnvironment()
        for entry in entries {
            try session.writeDesktopEntry(appID: entry.id, types: entry.types)
        }
        bus = try PrivateBus(environment: session)
        try bus.installService(name: UA.busName, exec: "\(shellQuote(try BuiltProducts.useractivityd())) --verbose")
    }

    deinit { bus.stop() }

    /// A library client for `appID` on the private bus (its own loop thread).
    func client(_ appID: String? = UA.notes) throws -> UserActivityClient {
        let client = try UserActivityClient(appID: appID, address: bus.address)
        client.onError = { error, request in print("client error (\(request)): \(error)") }
        return client
    }

    /// The bus log's tail, for failure messages.
    func logTail(_ lines: Int = 40) -> String {
        "--- bus log ---\n" + bus.log.split(separator: "\n", omittingEmptySubsequences: false).suffix(lines).joined(separator: "\n")
    }

    // MARK: Looking from the outside

    /// A plain DBusKit connection to the bus (blocking calls: use through ``offload(_:)``).
    func rawConnection() throws -> Connection { try Connection.bus(address: bus.address) }

    /// Calls the daemon on a thread of its own and returns the reply's arguments.
    func rawCall(_ path: String = UA.managerPath, _ interface: String = UA.managerInterface, _ member: String,
                 _ arguments: [TypedValue] = [], on connection: Connection? = nil, timeoutMilliseconds: Int32 = 25_000) async throws -> [TypedValue] {
        let address = bus.address
        let given = UncheckedSendable(connection)
        return try await offload {
            let connection = try given.value ?? Connection.bus(address: address)
            let message = Message.methodCall(destination: UA.busName, path: path, interface: interface, member: member)
            try message.append(arguments)
            return try connection.call(message, timeoutMilliseconds: timeoutMilliseconds).arguments()
        }
    }

    /// The manager's CurrentActivity ("/" when none).
    func currentActivity() async throws -> String {
        let reply = try await rawCall(UA.managerPath, "org.freedesktop.DBus.Properties", "Get",
                                      [.string(UA.managerInterface), .string("CurrentActivity")])
        return reply.first?.unwrappedVariant.objectPathValue ?? "<none>"
    }

    /// Every property of an activity object (`Properties.GetAll`).
    func properties(_ path: String) async throws -> [String: TypedValue] {
        let reply = try await rawCall(path, "org.freedesktop.DBus.Properties", "GetAll", [.string(UA.activityInterface)])
        guard let entries = reply.first?.stringVariantEntries else { return [:] }
        return Dictionary(entries, uniquingKeysWith: { first, _ in first })
    }

    /// The D-Bus error name a raw call on `path` fails with (nil when it succeeds).
    func rawErrorName(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue] = []) async -> String? {
        do {
            _ = try await rawCall(path, interface, member, arguments)
            return nil
        } catch let failure as DBusFailure {
            return failure.name
        } catch {
            return "\(error)"
        }
    }

    /// Records the signals matching `rules` on a connection of its own, pumped by a thread.
    func monitor(_ rules: [String]) throws -> SignalRecorder {
        try SignalRecorder(address: bus.address, rules: rules)
    }
}

// MARK: - Threads

/// Runs blocking work (libdbus calls, child processes) on a thread of its own,
/// so that it never holds one of the few cooperative threads the library's
/// own tasks need.
func offload<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result { try body() })
        }
        thread.stackSize = 1 << 20
        thread.start()
    }
}

/// Values recorded from callbacks on other threads.
final class Recorder<Value: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [Value] = []

    func append(_ value: Value) { lock.withLock { items.append(value) } }
    var values: [Value] { lock.withLock { items } }

    /// Waits (without blocking a cooperative thread) until `predicate` holds.
    @discardableResult
    func wait(timeout: Double = 30, until predicate: ([Value]) -> Bool = { !$0.isEmpty }) async -> Bool {
        // The async waitUntil: sleeps with Task.sleep instead of holding a cooperative thread.
        await waitUntil(timeout: timeout, interval: 0.01) { () async -> Bool in predicate(values) }
    }
}

// MARK: - Signals

extension DaemonSignal {
    /// PropertiesChanged's changed properties; empty for any other signal.
    var changed: [String: TypedValue] { changedProperties?.changed ?? [:] }
}

/// A connection with match rules, read by a background thread until released.
final class SignalRecorder: @unchecked Sendable {
    private let connection: Connection
    private let recorder = Recorder<DaemonSignal>()
    private let lock = NSLock()
    private var stopped = false
    private let finished = DispatchSemaphore(value: 0)

    init(address: String, rules: [String]) throws {
        let recorder = self.recorder
        connection = try DaemonSignal.listen(address: address, rules: rules) { recorder.append($0) }
        let box = UncheckedSendable(self)
        Thread {
            while !box.value.isStopped { box.value.connection.readWriteDispatch(timeoutMilliseconds: 20) }
            box.value.finished.signal()
        }.start()
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    func stop() {
        let first: Bool = lock.withLock {
            defer { stopped = true }
            return !stopped
        }
        if first { finished.wait() }
    }

    var signals: [DaemonSignal] { recorder.values }

    @discardableResult
    func wait(timeout: Double = 30, until predicate: ([DaemonSignal]) -> Bool) async -> Bool {
        await recorder.wait(timeout: timeout, until: predicate)
    }
}

// MARK: - Known issues

/// `a{sv}` entries as a dictionary.
func entries(_ value: TypedValue?) -> [String: TypedValue] {
    Dictionary(value?.unwrappedVariant.stringVariantEntries ?? [], uniquingKeysWith: { first, _ in first })
}
