// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// Records the daemon's signals, in the order the bus delivered them, on a
/// thread of its own (so the bus never has to queue much for it).
final class SignalRecorder: @unchecked Sendable {
    typealias Signal = DaemonSignal

    private final class Store: @unchecked Sendable {
        let lock = NSLock()
        var recorded: [Signal] = []
        var stopping = false
    }

    private let connection: Connection
    private let store = Store()
    private let finished = DispatchSemaphore(value: 0)

    init(address: String) throws {
        let store = self.store
        connection = try DaemonSignal.listen(
            address: address,
            rules: ["PropertiesChanged", "InterfacesAdded", "InterfacesRemoved"].map { "type='signal',sender='\(UA.busName)',member='\($0)'" }
        ) { signal in
            store.lock.withLock { store.recorded.append(signal) }
        }
        let connection = self.connection, finished = self.finished
        Thread.detachNewThread {
            while !store.lock.withLock({ store.stopping }) { connection.readWriteDispatch(timeoutMilliseconds: 20) }
            finished.signal()
        }
    }

    /// Stops after `quietPeriod` seconds without a new signal.
    func stop(quietPeriod: Double = 0.5) -> [Signal] {
        var last = -1
        while true {
            let count = store.lock.withLock { store.recorded.count }
            if count == last { break }
            last = count
            Thread.sleep(forTimeInterval: quietPeriod)
        }
        store.lock.withLock { store.stopping = true }
        finished.wait()
        connection.close()
        return store.lock.withLock { store.recorded }
    }
}

/// The signal stream's view of the one-current-activity rule.
struct CurrentActivityChecker {
    private(set) var live: [String: Bool] = [:]
    private(set) var current = "/"
    private(set) var added = 0
    private(set) var removed = 0
    private(set) var managerChanges = 0
    private(set) var changesToAnActivity = 0
    /// InterfacesAdded that announced Current=true while another activity
    /// was still flagged current (its Current=false follows in the same
    /// burst): a transient the service's emission order allows.
    private(set) var transientDoubleCurrent = 0
    /// Added with Current=true and not yet confirmed by a PropertiesChanged.
    private var announcedCurrent: Set<String> = []
    private(set) var problems: [String] = []
    /// Activities still flagged current when the manager named another one:
    /// the service emits no Current=false for an activity it is removing, so
    /// each must be removed before the manager's next change.
    private var leaving: Set<String> = []

    private mutating func problem(_ text: String) {
        if problems.count < 20 { problems.append(text) }
    }

    mutating func consume(_ signal: SignalRecorder.Signal) {
        switch (signal.interface, signal.member) {
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesAdded"):
            guard let path = signal.arguments.first?.objectPathValue else { return problem("InterfacesAdded without a path") }
            let properties = signal.arguments.dropFirst().first.flatMap { dictionary -> [(String, TypedValue)]? in
                guard case .dictionary(_, _, let entries) = dictionary else { return nil }
                return entries.first { $0.key.stringValue == UA.activity }?.value.stringVariantEntries
            } ?? []
            if live[path] != nil { problem("\(path) added twice") }
            let isCurrent = properties.first { $0.0 == "Current" }?.1.boolValue ?? false
            if isCurrent {
                announcedCurrent.insert(path)
                if live.values.contains(true) { transientDoubleCurrent += 1 }
            }
            live[path] = isCurrent
            added += 1
        case ("org.freedesktop.DBus.ObjectManager", "InterfacesRemoved"):
            guard let path = signal.arguments.first?.objectPathValue else { return }
            if live.removeValue(forKey: path) == nil { problem("\(path) removed but never added") }
            leaving.remove(path)
            announcedCurrent.remove(path)
            removed += 1
        case (UA.properties, "PropertiesChanged"):
            let changed = signal.arguments.dropFirst().first?.stringVariantEntries ?? []
            if signal.path == UA.managerPath {
                guard let value = changed.first(where: { $0.0 == "CurrentActivity" })?.1.objectPathValue else { return }
                managerChanges += 1
                if value != "/" { changesToAnActivity += 1 }
                let stillCurrent = leaving.filter { live[$0] == true }
                if !stillCurrent.isEmpty { problem("\(stillCurrent.sorted()) stayed current and on the bus after CurrentActivity moved on") }
                if value == current { problem("CurrentActivity changed to \(value), which it already was") }
                if value != "/" && live[value] == nil { problem("CurrentActivity became \(value), which is not a live activity") }
                if value != "/" && live[value] != true { problem("CurrentActivity became \(value) before that activity's Current was true") }
                leaving = Set(live.filter { $0.value && $0.key != value }.map(\.key))
                current = value
            } else if let flag = changed.first(where: { $0.0 == "Current" })?.1.boolValue {
                guard let previous = live[signal.path] else { return problem("Current changed on \(signal.path), which is not live") }
                // The first Current=true after an InterfacesAdded that already said so repeats it.
                if previous == flag && !(flag && announcedCurrent.contains(signal.path)) {
                    problem("\(signal.path): Current=\(flag) twice in a row")
                }
                announcedCurrent.remove(signal.path)
                live[signal.path] = flag
            }
        default:
            break
        }
    }
}

@Suite("Load")
struct LoadTests {
    static let clients = 20
    static let cycles = 300

    /// 20 connections × 300 cycles of BecomeCurrent (manager) → ResignCurrent
    /// → Invalidate, with an Update read back every 10th cycle, a Donate and a
    /// Search every 5th, all at once against the built daemon.
    @Test("20 connections × 300 become-current/resign/invalidate cycles plus Donate and Search: all succeed, nothing lost, CurrentActivity consistent")
    func concurrentCycles() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let recorder = try SignalRecorder(address: daemon.bus.address)
        // The recorder's match rules are in place once a round trip through the bus is done.
        let probe = try daemon.connect()
        _ = probe.busDaemon("GetId")

        let apps = [(UA.editor, UA.editType), (UA.viewer, UA.viewType), (UA.player, UA.playType)]
        let failures = Failures()
        let donated = Failures()
        let start = Date()
        // A thread per client (concurrentPerform would run only as many at once as there are cores).
        let group = DispatchGroup()
        for k in 0..<Self.clients {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                let (app, type) = apps[k % apps.count]
                do {
                    let client = try BusClient(address: daemon.bus.address)
                    try client.manager("RegisterApplication", [.string(app)])
                    for i in 0..<Self.cycles {
                        let path = try client.create(type, app: nil, [("title", .string("c\(k)-\(i)"))], becomeCurrent: true)
                        if i % 10 == 0 {
                            try client.call(path, UA.activity, "Update", [.stringVariantDictionary([("title", .string("c\(k)-\(i)-updated"))])])
                            let title = try client.property(path, "Title", interface: UA.activity)
                            if title != .string("c\(k)-\(i)-updated") { failures.add("client \(k) cycle \(i): Title read back \(title)") }
                        }
                        try client.call(path, UA.activity, "ResignCurrent")
                        try client.call(path, UA.activity, "Invalidate")
                        if i % 5 == 0 {
                            let id = try client.donate(type, app: nil, [("title", .string("loadk\(k)x\(i)")),
                                                                        ("persistent-identifier", .string("load-\(k)-\(i)")),
                                                                        ("eligible-for-search", .boolean(true))])
                            if id.isEmpty { failures.add("client \(k): Donate returned an empty saved id") }
                            donated.add("\(k) \(id)")
                            _ = try client.search("c\(k) load")
                        }
                    }
                } catch {
                    failures.add("client \(k): \(error)")
                }
            }
        }
        group.wait()
        let elapsed = seconds(since: start)
        let signals = recorder.stop()

        #expect(failures.items.isEmpty, "\(failures.items.count) failures: \(failures.items.prefix(10))")
        #expect(try daemon.daemonPID() == pid, "the daemon is still the same process")

        // Nothing lost: every donation is found, with its own id.
        let expectedPerClient = (Self.cycles + 4) / 5
        for k in 0..<Self.clients {
            let hits = try probe.search("loadk\(k)x")
            let titles = Set(hits.map(\.title))
            #expect(titles.count == expectedPerClient, "client \(k): \(titles.count) of \(expectedPerClient) donations found")
        }
        #expect(Set(donated.items).count == Self.clients * expectedPerClient)

        // The end state: nothing live, nothing current.
        #expect(try probe.property(UA.managerPath, "CurrentActivity", interface: UA.manager) == .objectPath("/"))
        #expect(try probe.call(UA.managerPath, "org.freedesktop.DBus.ObjectManager", "GetManagedObjects").first
                .map { if case .dictionary(_, _, let entries) = $0 { return entries.isEmpty } else { return false } } == true)

        // The signal stream: every activity added and removed once, and
        // CurrentActivity only ever "/" or a live activity whose Current is true.
        var checker = CurrentActivityChecker()
        for signal in signals { checker.consume(signal) }
        let total = Self.clients * Self.cycles
        #expect(checker.added == total && checker.removed == total,
                "InterfacesAdded \(checker.added), InterfacesRemoved \(checker.removed), expected \(total) each")
        #expect(checker.changesToAnActivity == total, "CurrentActivity named an activity \(checker.changesToAnActivity) times; every cycle makes a new one current")
        #expect(checker.problems.isEmpty, "\(checker.problems)")
        #expect(checker.current == "/" && checker.live.isEmpty)
        print("Load: \(Self.clients) clients × \(Self.cycles) cycles, \(total * 3 + Self.clients * (Self.cycles / 10) * 2 + Self.clients * expectedPerClient * 2) calls in \(String(format: "%.1f", elapsed)) s; \(signals.count) signals checked; \(checker.transientDoubleCurrent) InterfacesAdded announced Current=true before the previous activity's Current=false")
    }
}

/// A thread-safe list of strings.
final class Failures: @unchecked Sendable {
    private let lock = NSLock()
    private var list: [String] = []
    func add(_ item: String) { lock.withLock { list.append(item) } }
    var items: [String] { lock.withLock { list } }
}
