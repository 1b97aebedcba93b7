// SPDX-License-Identifier: Apache-2.0
import FuzzGenerators
import ActivityStore
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

@Suite("Faults")
struct FaultTests {
    // MARK: SIGKILL during writes

    /// Donors write continuously while the daemon is killed with SIGKILL at
    /// random moments; D-Bus activation starts it again on the next call.
    /// A Donate that was answered must survive; one whose answer was lost
    /// is retried with the same persistent identifier, so nothing is doubled.
    @Test("SIGKILL at random points during Donate traffic: every acknowledged Donate survives and the store opens cleanly")
    func killedDuringDonates() throws {
        let daemon = try ActivatedDaemon()
        var pids: Set<pid_t> = [try daemon.activate()]
        // No per-app trimming of the oldest entries (default 1000): every donation must stay.
        _ = try daemon.connect().call(UA.managerPath, UA.properties, "Set",
                                      [.string(UA.manager), .string("MaxSavedPerApplication"), .variant(.uint32(0))])
        let donors = 4
        let stop = Failures()
        let acknowledged = AcknowledgedDonations()
        let group = DispatchGroup()
        for donor in 0..<donors {
            group.enter()
            Thread.detachNewThread {
                defer { group.leave() }
                guard let client = try? daemon.connect() else { return stop.add("donor \(donor) could not connect") }
                var n = 0
                while stop.items.isEmpty {
                    let result = client.attempt(UA.managerPath, UA.manager, "Donate", [
                        .string(UA.editType), .stringVariantDictionary([
                            ("app-id", .string(UA.editor)), ("title", .string("killd\(donor)n\(n) survives")),
                            ("persistent-identifier", .string("kill-\(donor)-\(n)")), ("eligible-for-search", .boolean(true)),
                            ("user-info", .stringVariantDictionary([("n", .uint32(UInt32(n)))])),
                        ]),
                    ], timeoutMilliseconds: 20_000)
                    switch result {
                    case .success(let reply):
                        acknowledged.add(persistentID: "kill-\(donor)-\(n)", savedID: reply.first?.stringValue ?? "", title: "killd\(donor)n\(n) survives")
                        n += 1
                    case .failure:
                        // The daemon died under this call (NoReply) or was starting: retry the same donation.
                        Thread.sleep(forTimeInterval: 0.01)
                    }
                }
            }
        }
        var kills = 0
        var input = FuzzInput(seed: 4242)
        let probe = try daemon.connect()
        for _ in 0..<6 {
            Thread.sleep(forTimeInterval: Double(input.int(150...900)) / 1000)
            guard let pid = try daemon.daemonPID(using: probe) else { continue }
            pids.insert(pid)
            kill(pid, SIGKILL)
            kills += 1
            _ = waitUntil(timeout: 30) { !ProcessProbe.isAlive(pid) }
        }
        Thread.sleep(forTimeInterval: 0.5)
        // The last kill lands while the donors are still writing.
        if let pid = try daemon.daemonPID(using: probe) {
            pids.insert(pid)
            kill(pid, SIGKILL)
            kills += 1
            _ = waitUntil(timeout: 30) { !ProcessProbe.isAlive(pid) }
        }
        stop.add("stop")
        group.wait()
        // Whatever started after the last kill: kill it too, so the store is left as a crash leaves it.
        if let pid = try daemon.daemonPID(using: probe) {
            kill(pid, SIGKILL)
            _ = waitUntil(timeout: 30) { !ProcessProbe.isAlive(pid) }
        }

        let items = acknowledged.items
        #expect(kills >= 5 && items.count > 50, "\(kills) kills, \(items.count) acknowledged donations")
        print("SIGKILL: \(kills) kills during \(items.count) acknowledged donations from \(donors) connections")
        // The store, opened as the daemon opens it, after the crash.
        let store = try ActivityStore(directory: daemon.stateDirectory)
        var missing: [String] = []
        for item in items {
            let entry = try store.load(savedID: item.savedID, now: nowMicroseconds())
            if entry?.record.title != item.title || entry?.record.persistentIdentifier != item.persistentID { missing.append(item.persistentID) }
        }
        #expect(missing.count == 0, "\(missing.count) of \(items.count) acknowledged donations are missing: \(missing.prefix(10))")
        let stored = try store.count()
        #expect(stored >= items.count && stored <= items.count + donors,
                "\(stored) entries for \(items.count) acknowledged donations (at most one unacknowledged per donor may have landed)")
        if let check = try? runCommand("sqlite3", [daemon.stateDirectory + "/" + ActivityStore.fileName, "PRAGMA integrity_check;"],
                                       environment: ["PATH": standardSearchPath]), check.succeeded {
            #expect(check.trimmedStdout == "ok", "integrity_check: \(check.stdout)")
        }

        // And the daemon starts cleanly on that store and finds the donations.
        let after = try daemon.activate()
        #expect(!pids.contains(after))
        let client = try daemon.connect()
        if let last = items.last {
            #expect(try client.search(last.title).contains { $0.savedID == last.savedID })
        }
    }

    // MARK: A full disk

    /// The state directory is a 1 MiB tmpfs, filled with a filler file until
    /// writes fail. Mounting needs CAP_SYS_ADMIN (root here); where that is
    /// missing this test is skipped and `fileSizeLimit` below still runs.
    @Test("A full disk (1 MiB tmpfs): callers get StorageFailed, the daemon keeps serving, writes work again when space returns",
          .enabled(if: MountedTmpfs.canMount, "mounting a tmpfs needs CAP_SYS_ADMIN"))
    func diskFull() throws {
        let mount = MountedTmpfs()
        let daemon = try ActivatedDaemon(prepare: { session in
            try mount.mount(at: session.stateHome + "/useractivity", size: "1m")
        })
        defer { mount.unmount() }
        try #require(mount.isMounted, "tmpfs could not be mounted here: \(mount.failure)")
        let pid = try daemon.activate()
        let client = try daemon.connect()
        _ = try client.manager("RegisterApplication", [.string(UA.editor)])
        var donations = 0
        func donate(_ tag: String) -> Result<[TypedValue], DBusFailure> {
            donations += 1
            return client.attempt(UA.managerPath, UA.manager, "Donate", [.string(UA.editType), .stringVariantDictionary([
                ("title", .string("diskfull \(tag)")), ("persistent-identifier", .string("full-\(tag)")),
                ("eligible-for-search", .boolean(true)),
                ("user-info", .stringVariantDictionary([("blob", .string(String(repeating: "z", count: 20_000) + tag))])),
            ])])
        }
        let before = try #require(try donate("before").get().first?.stringValue)

        // Fill the file system.
        let filler = daemon.stateDirectory + "/filler"
        let fd = open(filler, O_WRONLY | O_CREAT, 0o600)
        var chunk = [UInt8](repeating: 0x55, count: 4096)
        while chunk.withUnsafeMutableBytes({ write(fd, $0.baseAddress, $0.count) }) > 0 {}
        close(fd)

        var errors: [String: Int] = [:]
        for i in 0..<20 {
            if case .failure(let failure) = donate("full\(i)") { errors[failure.name, default: 0] += 1 }
        }
        print("tmpfs full: \(errors) for 20 donations")
        #expect(errors.keys.allSatisfy { $0 == UA.error(.storageFailed) }, "errors while full: \(errors)")
        #expect(errors[UA.error(.storageFailed), default: 0] > 0, "no write failed on a full disk")
        // Still serving: live activities need no disk, reads still work.
        #expect(try daemon.daemonPID() == pid)
        #expect(client.ping() != nil)
        let path = try client.create(app: nil, [("title", .string("while full"))], becomeCurrent: true)
        #expect(try client.property(UA.managerPath, "CurrentActivity", interface: UA.manager) == .objectPath(path))
        #expect(try client.search("diskfull before").contains { $0.savedID == before })

        // Space returns: writes succeed again, and nothing written before is lost.
        unlink(filler)
        let afterwards = donate("after")
        #expect(afterwards.errorName == nil, "Donate after space returned: \(afterwards)")
        #expect(try client.search("diskfull").contains { $0.savedID == before })
        #expect(try daemon.daemonPID() == pid)
    }

    /// The stand-in for a full disk that needs no privilege: the daemon runs
    /// under RLIMIT_FSIZE (`ulimit -f`, with SIGXFSZ ignored so that writes
    /// fail with EFBIG instead of killing it), through a wrapper in the
    /// D-Bus service file. Space "returns" by restarting it without the limit.
    @Test("Files capped by RLIMIT_FSIZE: StorageFailed, no crash; after a restart without the cap everything acknowledged is there")
    func fileSizeLimit() throws {
        let daemon = try ActivatedDaemon(exec: { path in
            "/bin/sh -c " + shellQuote("trap '' XFSZ; ulimit -f 1024; exec \(shellQuote(path))")
        })
        let pid = try daemon.activate()
        let client = try daemon.connect()
        _ = try client.manager("RegisterApplication", [.string(UA.editor)])
        var acknowledged: [String: String] = [:]
        var errors: [String: Int] = [:]
        for i in 0..<80 {
            let result = client.attempt(UA.managerPath, UA.manager, "Donate", [.string(UA.editType), .stringVariantDictionary([
                ("title", .string("capped \(i)")), ("persistent-identifier", .string("cap-\(i)")), ("eligible-for-search", .boolean(true)),
                ("user-info", .stringVariantDictionary([("blob", .string(String(repeating: "c", count: 30_000)))])),
            ])])
            switch result {
            case .success(let reply): acknowledged["capped \(i)"] = reply.first?.stringValue
            case .failure(let failure): errors[failure.name, default: 0] += 1
            }
        }
        #expect(errors.keys.allSatisfy { $0 == UA.error(.storageFailed) }, "errors at the file size limit: \(errors)")
        #expect(errors[UA.error(.storageFailed), default: 0] > 0, "80 donations of 30 KB never reached a 512 KiB file limit")
        #expect(try daemon.daemonPID() == pid, "the daemon must not die of SIGXFSZ or of the failed writes")
        _ = try client.create(app: nil, becomeCurrent: true)

        // Restart without the limit: acknowledged donations are all there, and writing works.
        try daemon.bus.installService(name: UA.busName, exec: shellQuote(daemon.daemonPath))
        kill(pid, SIGTERM)
        _ = waitUntil(timeout: 30) { !ProcessProbe.isAlive(pid) }
        _ = try daemon.activate()
        let fresh = try daemon.connect()
        _ = try fresh.manager("RegisterApplication", [.string(UA.editor)])
        for (title, id) in acknowledged {
            #expect(try fresh.search(title).contains { $0.savedID == id }, "\(title) was acknowledged but is gone")
        }
        #expect(fresh.attempt(UA.managerPath, UA.manager, "Donate", [.string(UA.editType), .stringVariantDictionary([("title", .string("uncapped"))])]).errorName == nil)
        print("RLIMIT_FSIZE: \(acknowledged.count) donations acknowledged, then \(errors) until the cap was lifted")
    }

    // MARK: Clients and handlers that go away or never answer

    @Test("Clients that disconnect in the middle of their calls: the daemon keeps serving and cleans up after them")
    func clientsDisconnectMidCall() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        for i in 0..<40 {
            let client = try daemon.connect()
            let calls: [(String, String, String, [TypedValue])] = [
                (UA.managerPath, UA.manager, "BecomeCurrent", [.string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))])]),
                (UA.managerPath, UA.manager, "Donate", [.string(UA.editType), .stringVariantDictionary([
                    ("app-id", .string(UA.editor)), ("title", .string("gone \(i)")), ("eligible-for-search", .boolean(true))])]),
                (UA.managerPath, UA.manager, "Search", [.string(String(repeating: "long query ", count: 5000)), .stringVariantDictionary([])]),
                // A continuation that waits for an app to register (it never will).
                (UA.managerPath, UA.manager, "ContinueActivity", [.string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))]),
                                                                  .stringVariantDictionary([("timeout-ms", .uint32(60_000))])]),
            ]
            for (path, interface, member, arguments) in calls {
                let message = Message.methodCall(destination: UA.busName, path: path, interface: interface, member: member)
                try message.append(arguments)
                client.connection.send(message)
            }
            client.connection.flush()
            client.close()
        }
        // Half a message, then gone (the bus never forwards a partial message).
        do {
            let raw = try RawBusConnection(address: daemon.bus.address)
            let whole = raw.encode(.methodCall, destination: UA.busName, path: UA.managerPath, interface: UA.manager, member: "Donate",
                                   values: [.string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))])])
            try raw.sendRaw(Array(whole.prefix(whole.count / 2)))
        }
        let probe = try daemon.connect()
        #expect(try waitUntil(timeout: 30) {
            (try? probe.property(UA.managerPath, "CurrentActivity", interface: UA.manager)) == .objectPath("/")
        }, "the departed clients' activities are gone")
        #expect(probe.ping() != nil)
        #expect(try daemon.daemonPID() == pid)
        // Their pending continuations were dropped: a new client may start its full share.
        let fresh = try daemon.connect()
        let started = Date()
        let result = fresh.attempt(UA.managerPath, UA.manager, "ContinueActivity", [
            .string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))]), .stringVariantDictionary([("timeout-ms", .uint32(300))]),
        ])
        #expect(result.errorName == UA.error(.remoteApplicationTimedOut) && seconds(since: started) < 5, "\(result)")
    }

    /// A registered handler that never dispatches its messages: the
    /// continuation ends with RemoteApplicationTimedOut after timeout-ms, and
    /// everyone else is served meanwhile; a SaveActivity it never answers
    /// does not hold up BecomeCurrent, and the saved copy is written after 5 s.
    @Test("A handler that never answers: continuation times out, others are served meanwhile, NeedsSave falls back after 5 s")
    func handlerThatNeverAnswers() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let silent = try daemon.connect()
        _ = try silent.manager("RegisterApplication", [.string(UA.editor)])
        _ = try silent.manager("RegisterHandler", [.objectPath("/com/example/Editor/Handler")])

        let caller = try daemon.connect()
        let outcome = Failures()
        let done = DispatchSemaphore(value: 0)
        let started = Date()
        Thread.detachNewThread {
            let result = caller.attempt(UA.managerPath, UA.manager, "ContinueActivity", [
                .string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor)), ("title", .string("x"))]),
                .stringVariantDictionary([("timeout-ms", .uint32(1500))]),
            ])
            outcome.add("\(result.errorName ?? "success") after \(String(format: "%.2f", seconds(since: started))) s")
            done.signal()
        }
        var slowest = 0.0
        let other = try daemon.connect()
        while done.wait(timeout: .now() + 0.1) == .timedOut {
            slowest = max(slowest, other.ping() ?? 99)
            _ = try other.search("meanwhile")
        }
        let elapsed = seconds(since: started)
        #expect(outcome.items.first?.hasPrefix(UA.error(.remoteApplicationTimedOut)) == true, "\(outcome.items)")
        #expect(elapsed >= 1.4 && elapsed < 4, "answered after \(elapsed) s for timeout-ms 1500")
        #expect(slowest < 1, "Ping took up to \(slowest) s while the continuation waited")

        // NeedsSave: SaveActivity goes to the silent handler; BecomeCurrent answers at once.
        let becameCurrent = Date()
        let path = try silent.create(app: nil, [("title", .string("neverasked quokka")), ("needs-save", .boolean(true)),
                                                ("eligible-for-search", .boolean(true))], becomeCurrent: true)
        #expect(seconds(since: becameCurrent) < 1)
        #expect(try other.property(UA.managerPath, "CurrentActivity", interface: UA.manager) == .objectPath(path))
        #expect(try waitUntil(timeout: 30, interval: 0.25) { try !other.search("neverasked quokka").isEmpty },
                "the saved copy is written with the data as they are once SaveActivity's 5 s pass")
        #expect(try daemon.daemonPID() == pid)
    }

    @Test("The applications directory vanishes and comes back: apps are uninstalled, then installed again; the daemon keeps serving")
    func desktopDirectoryVanishes() throws {
        let daemon = try ActivatedDaemon()
        let pid = try daemon.activate()
        let client = try daemon.connect()
        let kept = try client.create(becomeCurrent: true)
        let share = daemon.session.sharedDataDir
        try FileManager.default.removeItem(atPath: share)
        #expect(try waitUntil(timeout: 30, interval: 0.1) {
            client.attempt(UA.managerPath, UA.manager, "CreateActivity", [
                .string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))]),
            ]).errorName == UA.error(.unknownApplication)
        }, "after rm -rf of the data directory the editor is no longer installed")
        #expect(try client.property(UA.managerPath, "CurrentActivity", interface: UA.manager) == .objectPath(kept), "live activities stay")
        #expect(try daemon.daemonPID() == pid)

        // Recreated, first empty, then with the entry (as a package manager would).
        try FileManager.default.createDirectory(atPath: share + "/applications", withIntermediateDirectories: true)
        Thread.sleep(forTimeInterval: 0.5)
        try daemon.session.writeDesktopEntry(appID: UA.editor, types: [UA.editType])
        #expect(try waitUntil(timeout: 30, interval: 0.1) {
            client.attempt(UA.managerPath, UA.manager, "CreateActivity", [
                .string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor))]),
            ]).errorName == nil
        }, "the editor is installed again once its entry is back")
        #expect(try daemon.daemonPID() == pid)
    }
}

/// Donations that were answered, from several threads.
final class AcknowledgedDonations: @unchecked Sendable {
    struct Item { let persistentID: String; let savedID: String; let title: String }
    private let lock = NSLock()
    private var list: [Item] = []
    func add(persistentID: String, savedID: String, title: String) {
        lock.withLock { list.append(Item(persistentID: persistentID, savedID: savedID, title: title)) }
    }
    var items: [Item] { lock.withLock { list } }
}

/// A size-limited tmpfs, mounted for one test (needs CAP_SYS_ADMIN; the
/// test is skipped without it). Unmounted lazily, so a process still using
/// it cannot keep the test from cleaning up.
final class MountedTmpfs: @unchecked Sendable {
    /// Whether this process may mount a tmpfs (tried once, on a scratch directory).
    static let canMount: Bool = {
        guard let scratch = try? TemporaryDirectory(prefix: "uahm-") else { return false }
        let probe = MountedTmpfs()
        try? probe.mount(at: scratch.appending("m"), size: "64k")
        defer { probe.unmount() }
        return probe.isMounted
    }()

    private(set) var path: String?
    private(set) var failure = ""

    var isMounted: Bool { path != nil }

    func mount(at path: String, size: String) throws {
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        let result = try runCommand("mount", ["-t", "tmpfs", "-o", "size=\(size),mode=0700", "tmpfs", path],
                                    environment: ["PATH": standardSearchPath])
        if result.succeeded { self.path = path } else { failure = result.stderr }
    }

    func unmount() {
        guard let path else { return }
        _ = try? runCommand("umount", ["-l", path], environment: ["PATH": standardSearchPath])
        self.path = nil
    }

    deinit { unmount() }
}
