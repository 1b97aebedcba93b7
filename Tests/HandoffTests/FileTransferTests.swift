// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import HandoffCore
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

/// Continuing on B an open-document activity of A whose file is not on B:
/// the file comes along over the paired link, into B's downloads folder.
@Suite("Handoff brings the document along", .serialized)
struct FileTransferTests {
    static let openDocument = "org.example.UserActivity.open-document"

    /// Two paired stacks; on B the editor opens documents (its Exec records how it was launched).
    struct Setup {
        let stacks: TwoStacks
        let onB: String
        let record: String
        var homeA: String { stacks.a.session.home }
        var homeB: String { stacks.b.session.home }
        var downloads: String { homeB + "/Downloads/Stack A" }
    }

    func setUp(cap: UInt64? = nil, appsA: [(id: String, types: [String])] = [(UA.editor, [])], placementB: HandoffStack.Placement? = nil) throws -> Setup {
        let stacks = try TwoStacks(appsA: appsA, placementB: placementB)
        let recorder = try LaunchRecorder(directory: stacks.b.session.root)
        let record = stacks.b.session.root + "/editor.argv"
        try stacks.b.session.writeDesktopEntry(appID: UA.editor, types: [], exec: recorder.command(recordingTo: record).joined(separator: " ") + " %U",
                                               extraLines: ["MimeType=application/octet-stream;application/vnd.oasis.opendocument.text;"])
        if let cap { try stacks.a.set("MaximumFileSize", .uint64(cap)) }
        let (_, onB) = try stacks.pair()
        return Setup(stacks: stacks, onB: onB, record: record)
    }

    func title(_ activity: TypedValue?) -> String? {
        activity?.stringVariantEntries?.first { $0.0 == "title" }?.1.unwrappedVariant.stringValue
    }

    func continuable(_ activity: TypedValue?) -> TypedValue? {
        activity?.stringVariantEntries?.first { $0.0 == "continuable" }?.1.unwrappedVariant
    }

    /// Makes `path` (given as the URI names it) A's current document and waits until B shows it.
    func publish(_ setup: Setup, uri: String, title: String, mimeType: String = "application/octet-stream") throws {
        _ = try setup.stacks.a.becomeCurrent(app: UA.editor, type: Self.openDocument, [
            ("title", .string(title)),
            ("user-info", .stringVariantDictionary([("uri", .string(uri)), ("mime-type", .string(mimeType))])),
        ])
        #expect(setup.stacks.b.waitForDevice(setup.onB, "CurrentActivity", { self.title($0) == title }), "\(setup.stacks.logs)")
    }

    func fileURI(_ path: String) -> String { "file://" + path.replacingOccurrences(of: " ", with: "%20") }

    /// B continues A's activity: the app id, or the error name.
    func continueOnB(_ setup: Setup) -> (appID: String?, error: String?) {
        var appID: String?
        let error = dbusErrorName {
            appID = try setup.stacks.b.call(HO.busName, setup.onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])], timeout: 120_000)
                .first?.stringValue
        }
        return (appID, error)
    }

    func randomFile(_ path: String, bytes: Int) throws -> Data {
        try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        var data = Data(count: bytes)
        data.withUnsafeMutableBytes { raw in
            let words = raw.bindMemory(to: UInt64.self)
            for index in words.indices { words[index] = generator.next() }
        }
        try data.write(to: URL(fileURLWithPath: path))
        return data
    }

    /// Everything under B's home that a transfer could have left (downloads and temporaries).
    func filesUnder(_ directory: String) -> [String] {
        (FileManager.default.enumerator(atPath: directory)?.allObjects as? [String] ?? []).filter {
            var info = stat()
            return lstat(directory + "/" + $0, &info) == 0 && (info.st_mode & S_IFMT) == S_IFREG
        }
    }

    @Test("A 50 MiB file and a small .odt arrive intact in B's downloads folder and B's app opens them")
    func documentsArriveIntactAndOpen() throws {
        let setup = try setUp()
        let blobPath = setup.homeA + "/Documents/data set.bin"
        let blob = try randomFile(blobPath, bytes: 50 << 20)
        try publish(setup, uri: fileURI(blobPath), title: "data set.bin")
        #expect(continuable(try setup.stacks.b.deviceProperties(setup.onB)["CurrentActivity"]) == .boolean(true))
        let first = continueOnB(setup)
        #expect(first.error == nil && first.appID == UA.editor, "\(first) \(setup.stacks.logs)")
        let arrived = setup.downloads + "/data set.bin"
        #expect(FileManager.default.contents(atPath: arrived) == blob, "\(setup.stacks.logs)")
        let launched = LaunchRecorder.read(setup.record) ?? []
        #expect(launched.contains("ARG \(arrived)"), "\(launched)")
        #expect(filesUnder(setup.downloads) == ["data set.bin"], "no temporary file stays")

        // The .odt goes where B's user-dirs.dirs says downloads go; a second copy of a name gets a suffix.
        try writeFileAtomically(setup.stacks.b.session.configHome + "/user-dirs.dirs", contents: "XDG_DOWNLOAD_DIR=\"$HOME/Fetched\"\n")
        let odtPath = setup.homeA + "/Report.odt"
        let odt = try randomFile(odtPath, bytes: 12_345)
        try FileManager.default.createDirectory(atPath: setup.homeB + "/Fetched/Stack A", withIntermediateDirectories: true)
        try Data("older, unrelated".utf8).write(to: URL(fileURLWithPath: setup.homeB + "/Fetched/Stack A/Report.odt"))
        try publish(setup, uri: fileURI(odtPath), title: "Report.odt", mimeType: "application/vnd.oasis.opendocument.text")
        unlink(setup.record)
        let second = continueOnB(setup)
        #expect(second.error == nil, "\(second) \(setup.stacks.logs)")
        let copy = setup.homeB + "/Fetched/Stack A/Report (2).odt"
        #expect(FileManager.default.contents(atPath: copy) == odt, "\(setup.stacks.logs)")
        #expect(FileManager.default.contents(atPath: setup.homeB + "/Fetched/Stack A/Report.odt") == Data("older, unrelated".utf8))
        #expect((LaunchRecorder.read(setup.record) ?? []).contains("ARG \(copy)"))
    }

    @Test("The same bytes at the same path on B (a shared home): opened in place, nothing is sent")
    func identicalFileIsOpenedInPlace() throws {
        let setup = try setUp()
        let sharedPath = setup.homeA + "/shared.bin"
        _ = try randomFile(sharedPath, bytes: 1 << 20)
        // B's handoffd now sees A's home as its own: the path exists there with the same bytes.
        setup.stacks.b.killHandoffd()
        setup.stacks.b.extraEnvironment["HOME"] = setup.homeA
        try setup.stacks.b.startHandoffd()
        #expect(setup.stacks.b.waitForDevice(setup.onB, "Reachable", timeout: 60, { $0 == .boolean(true) }), "\(setup.stacks.logs)")
        try publish(setup, uri: fileURI(sharedPath), title: "shared.bin")
        let outcome = continueOnB(setup)
        #expect(outcome.error == nil, "\(outcome) \(setup.stacks.logs)")
        #expect(setup.stacks.b.logEventually(contains: "already here at \(sharedPath): opened in place"), "\(setup.stacks.logs)")
        #expect(!FileManager.default.fileExists(atPath: setup.homeA + "/Downloads"), "nothing was written")
        #expect(!setup.stacks.b.handoffLog.contains("received "), "nothing was sent")
        #expect((LaunchRecorder.read(setup.record) ?? []).contains("ARG \(sharedPath)"))
    }

    /// B's handoffd, once ``bind(_:over:)`` was called, in a mount namespace
    /// of its own where B's own file is bind-mounted over the document's path:
    /// the same path names other bytes on B than on A, as on two machines.
    final class OwnFileOnB: @unchecked Sendable {
        private let lock = NSLock()
        private var mount: (source: String, target: String)?

        func bind(_ source: String, over target: String) { lock.withLock { mount = (source, target) } }

        var placement: HandoffStack.Placement {
            HandoffStack.Placement(listen: "127.0.0.1:0", systemBusAddress: nil) { [self] executable, arguments, environment in
                guard let mount = lock.withLock({ mount }) else {
                    return try ChildProcess(executable: executable, arguments: arguments, environment: environment, stdout: .capture, stderr: .capture)
                }
                let tool = try resolveExecutable("mount", environment: ["PATH": standardSearchPath])
                // unshare and sh exec in turn: the PID is handoffd's.
                return try ChildProcess(executable: "/usr/bin/unshare",
                                        arguments: ["--mount", "--propagation", "private", "--", "/bin/sh", "-c", "\"$0\" --bind \"$1\" \"$2\" && shift 2 && exec \"$@\"",
                                                    tool, mount.source, mount.target, executable] + arguments,
                                        environment: environment, stdout: .capture, stderr: .capture)
            }
        }
    }

    @Test("Other bytes of the same size at the same path on B: B asks for the SHA-256, brings the file to its downloads folder, opens that copy, and leaves its own as it was",
          .enabled(if: canMakeMountNamespaces, "needs unshare -m and mount --bind (root)"))
    func sameSizeOtherBytesAreBrought() throws {
        let ownFile = OwnFileOnB()
        let setup = try setUp(placementB: ownFile.placement)
        let sharedPath = setup.homeA + "/Notes.bin"
        let bytesOfA = try randomFile(sharedPath, bytes: 1 << 20)
        let ownPath = setup.homeB + "/Notes.bin"
        let bytesOfB = try randomFile(ownPath, bytes: 1 << 20)
        try #require(bytesOfA != bytesOfB)
        // B's handoffd sees A's home path as its own, and at the document's path its own file.
        setup.stacks.b.killHandoffd()
        ownFile.bind(ownPath, over: sharedPath)
        setup.stacks.b.extraEnvironment["HOME"] = setup.homeA
        try setup.stacks.b.startHandoffd()
        #expect(setup.stacks.b.waitForDevice(setup.onB, "Reachable", timeout: 60, { $0 == .boolean(true) }), "\(setup.stacks.logs)")
        try publish(setup, uri: fileURI(sharedPath), title: "Notes.bin")
        let outcome = continueOnB(setup)
        #expect(outcome.error == nil && outcome.appID == UA.editor, "\(outcome) \(setup.stacks.logs)")
        // The SHA-256s were compared (B asked A for its own), and they differ.
        #expect(setup.stacks.b.logEventually(contains: "differs from the one at \(sharedPath)"), "\(setup.stacks.logs)")
        let downloads = setup.homeA + "/Downloads/Stack A"
        let arrived = downloads + "/Notes.bin"
        #expect(FileManager.default.contents(atPath: arrived) == bytesOfA, "\(setup.stacks.logs)")
        #expect(filesUnder(downloads) == ["Notes.bin"], "no temporary file stays")
        #expect(FileManager.default.contents(atPath: ownPath) == bytesOfB, "B's own file is untouched")
        #expect(FileManager.default.contents(atPath: sharedPath) == bytesOfA)
        let launched = LaunchRecorder.read(setup.record) ?? []
        #expect(launched.contains("ARG \(arrived)") && !launched.contains("ARG \(sharedPath)"), "\(launched)")
    }

    @Test("Refused: over the cap (FileTooLarge), a hidden path, a symlink to /etc/passwd; nothing is left on B")
    func refusalsLeaveNothing() throws {
        let setup = try setUp(cap: 1 << 20)
        let cases: [(name: String, make: (String) throws -> Void, error: String)] = [
            ("big.bin", { _ = try self.randomFile($0, bytes: (1 << 20) + 1) }, UA.error("FileTooLarge")),
            (".hidden/secret.txt", { _ = try self.randomFile($0, bytes: 100) }, UA.error("HandoffFailed")),
            ("passwd.txt", { try FileManager.default.createSymbolicLink(atPath: $0, withDestinationPath: "/etc/passwd") }, UA.error("HandoffFailed")),
        ]
        for (index, item) in cases.enumerated() {
            let path = setup.homeA + "/" + item.name
            try FileManager.default.createDirectory(atPath: (path as NSString).deletingLastPathComponent, withIntermediateDirectories: true)
            try item.make(path)
            try publish(setup, uri: fileURI(path), title: "case \(index)")
            let outcome = continueOnB(setup)
            #expect(outcome.error == item.error, "\(item.name): \(outcome) \(setup.stacks.logs)")
            #expect(filesUnder(setup.homeB).filter { $0.contains("Downloads") }.isEmpty, "\(item.name)")
        }
    }

    @Test("A file changed on A during the transfer (its time, not its bytes) is refused at the end: HandoffFailed, nothing left on B")
    func fileChangedDuringTransfer() throws {
        let setup = try setUp()
        let path = setup.homeA + "/changing.bin"
        _ = try randomFile(path, bytes: 16 << 20)
        try publish(setup, uri: fileURI(path), title: "changing.bin")
        let daemonB = try #require(setup.stacks.b.handoffd)
        let call = try setup.stacks.b.callInBackground(setup.onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])])
        // B is held once bytes arrive: A can send no more than B's credit, so the file is changed before A's last check.
        #expect(waitUntil(timeout: 60) { partialFiles(setup.downloads).contains { $0.size > 0 } }, "\(setup.stacks.logs)")
        daemonB.signal(SIGSTOP)
        var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        daemonB.signal(SIGCONT)
        #expect(waitUntil(timeout: 120) { call.value != nil })
        #expect(call.value == UA.error("HandoffFailed"), "\(call.value ?? "-") \(setup.stacks.logs)")
        #expect(filesUnder(setup.downloads).isEmpty, "\(filesUnder(setup.downloads))")
        // A log line reaches handoffLog some time after the reply: waited for, not read once.
        #expect(waitUntil(timeout: 30) {
            setup.stacks.a.handoffLog.contains("changed while it was sent") || setup.stacks.b.handoffLog.contains("changed while it was sent")
        }, "\(setup.stacks.logs)")
    }

    /// The temporary files in `directory`, with their sizes.
    func partialFiles(_ directory: String) -> [(name: String, size: Int)] {
        filesUnder(directory).filter { $0.contains(".part-") }.compactMap { name in
            var info = stat()
            return stat(directory + "/" + name, &info) == 0 ? (name, Int(info.st_size)) : nil
        }
    }

    @Test("A killed mid-transfer: B answers ConnectionUnavailable, leaves no partial file and keeps working")
    func originKilledMidTransfer() throws {
        let setup = try setUp()
        let path = setup.homeA + "/large.bin"
        _ = try randomFile(path, bytes: 16 << 20)
        try publish(setup, uri: fileURI(path), title: "large.bin")
        let call = try setup.stacks.b.callInBackground(setup.onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])])
        // Once the temporary file holds some bytes, B is held (A can send no more than B's credit) and A goes away.
        let started = waitUntil(timeout: 60) { partialFiles(setup.downloads).contains { $0.size > 0 } }
        #expect(started, "\(setup.stacks.logs)")
        let daemonB = try #require(setup.stacks.b.handoffd)
        daemonB.signal(SIGSTOP)
        setup.stacks.a.killHandoffd()
        daemonB.signal(SIGCONT)
        #expect(waitUntil(timeout: 60) { call.value != nil })
        #expect(call.value == UA.error("ConnectionUnavailable"), "\(call.value ?? "-") \(setup.stacks.logs)")
        #expect(filesUnder(setup.downloads).isEmpty, "\(filesUnder(setup.downloads))")
        #expect(try setup.stacks.b.nameHasOwner(HO.busName))
        #expect(try setup.stacks.b.managerProperty("Enabled") == .boolean(true))
    }

    /// Makes `path` A's current document and stops B's handoffd, so that the
    /// asking peer (with B's key) is the only one to talk to A; the activity's
    /// id and B's device path on A (taken while B's handoffd still answers).
    func currentWithBStopped(_ setup: Setup, path: String) throws -> (id: String, onA: String) {
        let activity = try setup.stacks.a.becomeCurrent(app: UA.editor, type: Self.openDocument, [
            ("title", .string((path as NSString).lastPathComponent)), ("user-info", .stringVariantDictionary([("uri", .string(fileURI(path)))])),
        ])
        let onA = setup.stacks.a.devicePath(of: setup.stacks.b)
        setup.stacks.b.killHandoffd()
        #expect(setup.stacks.a.waitForDevice(onA, "Reachable", { $0 == .boolean(false) }), "\(setup.stacks.logs)")
        return (String(activity.split(separator: "/").last ?? ""), onA)
    }

    func hex(_ frame: Frame) -> String { FrameCodec.encode(frame).map { String(format: "%02x", $0) }.joined() }

    /// Runs the asking peer (`Peers/asking_peer.py`: B's key, B's daemon
    /// stopped; it fetches `activityID` and, once answered, sends `requests`)
    /// against A until it has `ends` file-end frames or is closed; the frames it received.
    func ask(_ stacks: TwoStacks, activityID: String, requests: [FileTransferMessage], ends: Int, header: Bool = true, waitingFor flag: String? = nil,
             until done: (([Frame]) -> Bool)? = nil, onFetchReply: () throws -> Void = {}) throws -> (frames: [Frame], closed: Bool) {
        let hello = Frame(.hello, ["name": .string("Stack B"), "version": .uint32(1), "port": .uint32(0)])
        let fetch = Frame(.fetch, ["request": .uint32(1000), "id": .string(activityID), "timeout-ms": .uint32(10_000)])
        let process = try stacks.b.bus.spawn("/usr/bin/python3", [PeerScripts.path("asking_peer.py"), "\(stacks.a.port)", PeerScripts.identity(of: stacks.b),
                                                                 hex(hello), hex(fetch), requests.map { hex($0.frame) }.joined(separator: ",")] + (flag.map { [$0] } ?? []))
        defer { process.terminate(grace: 0.5) }
        var frames: [Frame] = []
        while let line = try process.readLine(timeout: 30) {
            if line == "CLOSED" { return (frames, true) }
            guard line.hasPrefix("FRAME "), let bytes = line.split(separator: " ").last.flatMap({ Hex.decode(String($0)) }) else { continue }
            let frame = try FrameCodec.decode(bytes[...])
            frames.append(frame)
            if frame.kind == .fetchReply { try onFetchReply() }
            if let done {
                if done(frames) { break }
                continue
            }
            if frames.filter({ $0.kind == .fileEnd }).count >= ends && (!header || frames.contains(where: { $0.kind == .fileHeader })) { break }
        }
        return (frames, false)
    }

    @Test("A paired device gets nothing for a path the activity does not name or another activity, only the document it fetched; once unpaired, nothing")
    func onlyTheFetchedDocumentIsSent() throws {
        let setup = try setUp()
        let stacks = setup.stacks
        let named = setup.homeA + "/Named.txt"
        let other = setup.homeA + "/Other.txt"
        _ = try randomFile(named, bytes: 1000)
        _ = try randomFile(other, bytes: 1000)
        let (id, onA) = try currentWithBStopped(setup, path: named)

        let answer = try ask(stacks, activityID: id, requests: [
            .request(request: 1, activityID: id, uri: fileURI(other)),
            .request(request: 2, activityID: "999", uri: fileURI(named)),
            .request(request: 3, activityID: id, uri: fileURI(named)),
        ], ends: 2)
        func end(_ request: UInt32) -> StreamFailure?? {
            for frame in answer.frames where frame.kind == .fileEnd {
                if case .end(request, let failure)? = FileTransferMessage.parse(frame) { return .some(failure) }
            }
            return nil
        }
        #expect(end(1)??.name == UA.error("HandoffFailed"), "\(answer) \(stacks.logs)")
        #expect(end(2)??.name == UA.error("HandoffFailed"), "\(answer)")
        // The document the activity names is offered (a header), the others are not.
        let headers = answer.frames.compactMap { FileTransferMessage.parse($0) }.filter { if case .header = $0 { return true }; return false }
        #expect(headers.map(\.request) == [3], "\(answer) \(stacks.logs)")

        // Unpaired on A: the same device's key gets no answer but the unpairing.
        _ = try stacks.a.call(HO.busName, onA, HO.device, "Unpair")
        let afterUnpair = try ask(stacks, activityID: id, requests: [.request(request: 4, activityID: id, uri: fileURI(named))], ends: 1)
        #expect(afterUnpair.closed && !afterUnpair.frames.contains { $0.kind == .fileHeader || $0.kind == .fileData || $0.kind == .fetchReply },
                "\(afterUnpair)")
    }

    @Test("Asked for the SHA-256 first, A answers with a second header carrying it and sends no byte; asking after credit drops the link")
    func hashAskedFirst() throws {
        let setup = try setUp()
        let stacks = setup.stacks
        let named = setup.homeA + "/Named.bin"
        let bytes = try randomFile(named, bytes: 300_000)
        let (id, _) = try currentWithBStopped(setup, path: named)
        let hash = SHA256Stream()
        hash.update([UInt8](bytes))
        let expected = hash.finish()

        func headers(_ frames: [Frame]) -> [FileTransferMessage] {
            frames.compactMap { FileTransferMessage.parse($0) }.filter { if case .header = $0 { return true }; return false }
        }
        let answer = try ask(stacks, activityID: id, requests: [.request(request: 1, activityID: id, uri: fileURI(named)), .hashRequest(request: 1)],
                             ends: 0, until: { headers($0).count >= 2 })
        #expect(headers(answer.frames) == [.header(request: 1, size: 300_000, sha256: nil, name: "Named.bin"),
                                           .header(request: 1, size: 300_000, sha256: expected, name: "Named.bin")], "\(answer) \(stacks.logs)")
        #expect(!answer.frames.contains { $0.kind == .fileData }, "no byte before credit")

        // Once bytes were credited (and sent), the SHA-256 is no longer asked for: the link drops.
        let late = try ask(stacks, activityID: id, requests: [.request(request: 2, activityID: id, uri: fileURI(named)),
                                                              .credit(request: 2, bytes: 65_536), .hashRequest(request: 2)],
                           ends: 0, until: { _ in false })
        #expect(late.closed, "\(late)")
        #expect(stacks.a.logEventually(contains: "asked for a document's SHA-256 again or after its bytes"), "\(stacks.logs)")
    }

    @Test("A transfer that takes over a second shows its progress in a notification whose Cancel ends it: HandoffFailed, nothing left, B keeps working")
    func cancelledFromTheNotification() throws {
        let setup = try setUp()
        // B's notification server presses Cancel on whatever offers it.
        let server = try setup.stacks.b.spawnScript(notificationServerScript, "notifications.py", ["cancel"])
        let path = setup.homeA + "/slow.bin"
        _ = try randomFile(path, bytes: 16 << 20)
        try publish(setup, uri: fileURI(path), title: "slow.bin")
        let call = try setup.stacks.b.callInBackground(setup.onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])])
        // A is held once bytes arrive: the transfer takes as long as the test needs.
        let daemonA = try #require(setup.stacks.a.handoffd)
        #expect(waitUntil(timeout: 60) { partialFiles(setup.downloads).contains { $0.size > 0 } }, "\(setup.stacks.logs)")
        daemonA.signal(SIGSTOP)
        defer { daemonA.signal(SIGCONT) }
        var progress: String?
        while let line = try server.readLine(timeout: 30) {
            if line.contains("Receiving “slow.bin” from Stack A") { progress = line; break }
        }
        #expect(progress?.contains("cancel Cancel") == true, "\(progress ?? "no progress notification") \(setup.stacks.logs)")
        #expect(waitUntil(timeout: 30) { call.value != nil })
        #expect(call.value == UA.error("HandoffFailed"), "\(call.value ?? "-") \(setup.stacks.logs)")
        #expect(filesUnder(setup.downloads).isEmpty, "\(filesUnder(setup.downloads))")
        #expect(setup.stacks.b.logEventually(contains: "the person cancelled the transfer of slow.bin"), "\(setup.stacks.logs)")
        daemonA.signal(SIGCONT)
        // The link stays: A's next document still comes.
        let next = setup.homeA + "/next.txt"
        let bytes = try randomFile(next, bytes: 4096)
        try publish(setup, uri: fileURI(next), title: "next.txt")
        let outcome = continueOnB(setup)
        #expect(outcome.error == nil, "\(outcome) \(setup.stacks.logs)")
        #expect(FileManager.default.contents(atPath: setup.downloads + "/next.txt") == bytes)
    }

    @Test("A file changed on A after the fetch, before it is asked for, gets nothing: HandoffFailed")
    func fileChangedAfterTheFetch() throws {
        let setup = try setUp()
        let stacks = setup.stacks
        let path = setup.homeA + "/Edited.txt"
        _ = try randomFile(path, bytes: 1000)
        let activity = try stacks.a.becomeCurrent(app: UA.editor, type: Self.openDocument, [
            ("title", .string("Edited.txt")), ("user-info", .stringVariantDictionary([("uri", .string(fileURI(path)))])),
        ])
        let id = String(activity.split(separator: "/").last ?? "")
        let onA = stacks.a.devicePath(of: stacks.b)
        stacks.b.killHandoffd()
        #expect(stacks.a.waitForDevice(onA, "Reachable", { $0 == .boolean(false) }), "\(stacks.logs)")
        let flag = stacks.b.session.root + "/changed"
        // The peer has the fetched activity; the file is rewritten (same size, new time) before it asks.
        let answer = try ask(stacks, activityID: id, requests: [.request(request: 1, activityID: id, uri: fileURI(path))], ends: 1,
                             header: false, waitingFor: flag, onFetchReply: {
            var times = [timespec(tv_sec: 1_000_000_000, tv_nsec: 0), timespec(tv_sec: 1_000_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
            try writeFileAtomically(flag, contents: "")
        })
        let ends = answer.frames.compactMap { FileTransferMessage.parse($0) }.compactMap { message -> StreamFailure?? in
            if case .end(1, let failure) = message { return .some(failure) }
            return nil
        }
        #expect(ends.first??.name == UA.error("HandoffFailed"), "\(answer) \(stacks.logs)")
        #expect(!answer.frames.contains { $0.kind == .fileHeader || $0.kind == .fileData }, "\(answer)")
        #expect(stacks.a.logEventually(contains: "changed since"), "\(stacks.logs)")
    }
}
