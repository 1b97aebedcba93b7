// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
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

    func setUp(cap: UInt64? = nil) throws -> Setup {
        let stacks = try TwoStacks(appsA: [(UA.editor, [])])
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
        _ = try randomFile(path, bytes: 100 << 20)
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
        #expect(setup.stacks.a.handoffLog.contains("changed while it was sent") || setup.stacks.b.handoffLog.contains("changed while it was sent"),
                "\(setup.stacks.logs)")
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
        _ = try randomFile(path, bytes: 200 << 20)
        try publish(setup, uri: fileURI(path), title: "large.bin")
        let call = try setup.stacks.b.callInBackground(setup.onB, HO.device, "ContinueActivity", [.stringVariantDictionary([])])
        // Once the temporary file holds some bytes, A goes away.
        let started = waitUntil(timeout: 60) { partialFiles(setup.downloads).contains { $0.size > 0 } }
        #expect(started, "\(setup.stacks.logs)")
        setup.stacks.a.killHandoffd()
        #expect(waitUntil(timeout: 60) { call.value != nil })
        #expect(call.value == UA.error("ConnectionUnavailable"), "\(call.value ?? "-") \(setup.stacks.logs)")
        #expect(filesUnder(setup.downloads).isEmpty, "\(filesUnder(setup.downloads))")
        #expect(try setup.stacks.b.nameHasOwner(HO.busName))
        #expect(try setup.stacks.b.managerProperty("Enabled") == .boolean(true))
    }
}
