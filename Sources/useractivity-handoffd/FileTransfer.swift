// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
import DBusKit
import GLibSupport
import HandoffCore
import Logging
import TypedValues
import UserActivityCore
import UserActivityInterfaces

/// On the origin: the document a device may ask for, recorded when it
/// fetched the open-document activity naming it, with the file's size and
/// modification time then (a file changed since gets nothing).
struct FileGrant {
    var activityID: String
    var uri: String
    var path: String
    var size: Int64
    var modified: timespec
    var grantedAt: Int64
}

/// On the origin: one document being sent.
final class OutgoingFile {
    let request: UInt32
    weak var link: PeerLink?
    let fd: Int32
    let size: Int64
    let grant: FileGrant
    var sent: Int64 = 0
    var credit = 0
    /// Of the bytes sent so far, for the end of the transfer.
    let hasher: FileHasher
    /// The asker asked for the SHA-256 before any byte (it has a file of that size).
    var hashAsked = false
    init(request: UInt32, link: PeerLink, fd: Int32, size: Int64, grant: FileGrant, loop: MainLoop) {
        self.request = request
        self.link = link
        self.fd = fd
        self.size = size
        self.grant = grant
        hasher = FileHasher(loop: loop)
    }
    deinit {
        hasher.cancel()
        close(fd)
    }
}

/// On the origin: the SHA-256 of the bytes sent, computed on a thread of its
/// own while the loop reads and sends; at most a window of bytes waits for it.
final class FileHasher: @unchecked Sendable {
    private let worker: SerialWorker
    /// Only on the worker's thread.
    private let hash = SHA256Stream()
    private let lock = ThreadLock()
    /// Under `lock`: bytes given and not yet hashed; the loop waits for room;
    /// the transfer is over without a digest.
    private var waiting = 0
    private var stalled = false
    private var cancelled = false
    /// On the loop's thread.
    private var finishing = false
    /// On the loop's thread: there is room again; the digest of all after ``finish()``.
    var onRoom: (() -> Void)?
    var onDigest: ((String) -> Void)?

    init(loop: MainLoop) {
        worker = SerialWorker(name: "file-hash", replyingOn: loop, niceness: FileTransfers.workerNiceness)
    }

    /// Whether more may be given now; if not, ``onRoom`` says when.
    var hasRoom: Bool {
        lock.withLock {
            if waiting < FileTransferLimits.window { return true }
            stalled = true
            return false
        }
    }

    /// Pieces to hash, in order (several at once: one wakeup of the thread for all).
    func append(_ pieces: [[UInt8]]) {
        let count = pieces.reduce(0) { $0 + $1.count }
        guard count > 0 else { return }
        lock.withLock { waiting += count }
        worker.async { [self] in
            guard !lock.withLock({ cancelled }) else { return }
            for bytes in pieces { hash.update(bytes) }
            let wake = lock.withLock { () -> Bool in
                waiting -= count
                guard stalled, waiting <= FileTransferLimits.window / 2 else { return false }
                stalled = false
                return true
            }
            if wake { worker.reply { [self] in onRoom?() } }
        }
    }

    /// After the last ``append(_:)``: the digest, then the thread ends.
    func finish() {
        finishing = true
        worker.async { [self] in
            guard !lock.withLock({ cancelled }) else { return }
            let digest = hash.finish()
            worker.reply { [self] in onDigest?(digest) }
        }
        worker.stop()
    }

    /// The transfer ended early: what waits is dropped and the thread ends.
    func cancel() {
        guard !finishing else { return }
        lock.withLock { cancelled = true }
        worker.stop()
    }
}

/// On the asker: the file being written, hashed and finally `fsync`ed on a
/// thread of its own, so that the loop stays free for adverts and the link
/// while the disk works. It holds at most the credit window: the asker
/// credits the origin only for bytes written.
final class FileSink: @unchecked Sendable {
    private let worker: SerialWorker
    /// Only on the worker's thread from here on.
    private let fd: Int32
    private let hash = SHA256Stream()
    private var failed = false
    private var closed = false
    private let lock = ThreadLock()
    /// Under `lock`: written bytes not yet reported, and whether a report is on its way.
    private var unreported = 0
    private var reportQueued = false
    private var cancelled = false
    /// On the loop's thread: bytes written since the last call; a write that
    /// failed; the SHA-256 of everything once ``finish()`` synced and closed
    /// the file (nil when a write or the sync failed).
    var onWritten: ((Int) -> Void)?
    var onFailed: ((String) -> Void)?
    var onFinished: ((String?) -> Void)?

    init(fd: Int32, loop: MainLoop) {
        self.fd = fd
        worker = SerialWorker(name: "file-write", replyingOn: loop, niceness: FileTransfers.workerNiceness)
    }

    private var isCancelled: Bool { lock.withLock { cancelled } }

    /// Queues bytes to hash and write after those before.
    func append(_ bytes: [UInt8]) {
        worker.async { [self] in
            guard !failed, !closed, !isCancelled else { return }
            hash.update(bytes)
            var written = 0
            while written < bytes.count {
                let n = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress! + written, bytes.count - written) }
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else {
                    failed = true
                    let message = String(cString: strerror(n < 0 ? errno : ENOSPC))
                    worker.reply { [self] in onFailed?(message) }
                    return
                }
                written += n
            }
            // One report at a time: the loop takes all that was written since.
            let report = lock.withLock { () -> Bool in
                unreported += bytes.count
                defer { reportQueued = true }
                return !reportQueued
            }
            if report {
                worker.reply { [self] in
                    let count = lock.withLock { () -> Int in
                        reportQueued = false
                        defer { unreported = 0 }
                        return unreported
                    }
                    onWritten?(count)
                }
            }
        }
    }

    /// After the last ``append(_:)``: syncs and closes the file, then ``onFinished``.
    func finish() {
        worker.async { [self] in
            guard !closed, !isCancelled else { return }
            let digest: String? = !failed && fsync(fd) == 0 ? hash.finish() : nil
            closed = true
            close(fd)
            worker.reply { [self] in onFinished?(digest) }
        }
        worker.stop()
    }

    /// Drops what is queued and closes the file (the caller removes it).
    func cancel() {
        lock.withLock { cancelled = true }
        worker.async { [self] in
            guard !closed else { return }
            closed = true
            close(fd)
        }
        worker.stop()
    }
}

/// On the asker: one document being received into a hidden temporary file
/// next to where it will stay.
final class IncomingFile {
    let request: UInt32
    weak var link: PeerLink?
    let deviceName: String
    let localPath: String
    var size: Int64 = -1
    var name = ""
    /// Asked for the SHA-256 first: a file of the same size is where the
    /// document would be. Then the origin's SHA-256 and this file's, once known.
    var hashAsked = false
    var announcedHash: String?
    var localHash: String??
    var sink: FileSink?
    var temporaryPath = ""
    var folder = ""
    var received: Int64 = 0
    /// Bytes the origin may send in all (credit given), and bytes written.
    var granted: Int64 = 0
    var written: Int64 = 0
    /// The origin sent everything: the SHA-256 it announced at the end.
    var finishedHash: String?
    /// When the origin last answered or sent bytes (monotonic µs).
    var lastProgress: Int64
    /// The progress notification (shown once a transfer takes a second) and its next update.
    var notificationID: UInt32?
    var progressTimer: ScheduledWork?
    /// With the local URI to continue with, or why it failed.
    var completion: ((Result<String, HandoffError>) -> Void)?
    init(request: UInt32, link: PeerLink, deviceName: String, localPath: String, now: Int64,
         completion: @escaping (Result<String, HandoffError>) -> Void) {
        self.request = request
        lastProgress = now
        self.link = link
        self.deviceName = deviceName
        self.localPath = localPath
        self.completion = completion
    }

    /// Removes what was written: no partial file stays.
    func discard() {
        progressTimer?.cancel()
        progressTimer = nil
        sink?.cancel()
        sink = nil
        if !temporaryPath.isEmpty { unlink(temporaryPath); temporaryPath = "" }
    }
    deinit { discard() }
}

/// Document transfers of this daemon, both directions.
final class FileTransfers {
    var grants: [String: FileGrant] = [:]
    var outgoing: [String: OutgoingFile] = [:]
    var incoming: [UInt32: IncomingFile] = [:]
    /// Inside ``HandoffDaemon/pumpFiles(on:)``, and whether it was asked again meanwhile.
    var isPumping = false
    var pumpAgain = false
    /// The heap top is kept for transfers (``keptHeapTop``).
    var keepsHeap = false

    static func key(_ link: PeerLink, _ request: UInt32) -> String { "\(link.serial)/\(request)" }
    /// An origin that keeps the link up but sends nothing for this long fails the transfer
    /// (hashing a large file on a slow disk comes first).
    static let stallMicroseconds: Int64 = 60_000_000
    /// Documents one link may be sending at once (each holds a descriptor and, first, a hashing thread).
    static let maximumOutgoingPerLink = 4
    /// Hashing and writing documents run below the loop's priority: on a
    /// busy machine the adverts and the link come first.
    static let workerNiceness: Int32 = 10
    /// Free memory kept at the top of the heap once a document moves: its
    /// 64 KiB frames are allocated and freed by the thousand, and glibc's
    /// default (128 KiB) gave the pages back and faulted them in again each
    /// time. Bounded by the window in flight on each side.
    static let keptHeapTop: Int32 = 2 << 20
    /// glibc's default, again once no document moves.
    static let defaultHeapTop: Int32 = 128 << 10
}

/// The `user-info` key of an open-document activity's URI.
private let documentURIKey = "uri"

private func modifiedTime(_ info: stat) -> timespec { info.st_mtim }
private func same(_ a: timespec, _ b: timespec) -> Bool { a.tv_sec == b.tv_sec && a.tv_nsec == b.tv_nsec }

extension ActivityExchange {
    /// The largest document sent or taken (`MaximumFileSize`).
    var maximumFileSize: Int64 { Int64(clamping: state.maximumFileSize) }

    /// Where documents may be sent from: the home directory and mounted
    /// removable disks (resolved, as the paths they are compared with).
    var sharableRoots: [String] {
        let home = environment["HOME"] ?? String(cString: getpwuid(getuid())?.pointee.pw_dir ?? strdup("/nonexistent"))
        return [home, "/media", "/run/media"].compactMap(resolvedPath)
    }

    func resolvedPath(_ path: String) -> String? {
        guard let resolved = realpath(path, nil) else { return nil }
        defer { free(resolved) }
        return String(cString: resolved)
    }

    // MARK: Origin

    /// A device fetched `activityID`: if it is an open-document of a local
    /// file, that file (as it is now) may be asked for during the next minutes.
    func grantDocument(of properties: TypedValue, type: String, activityID: String, to device: DeviceObject) {
        transfers.grants[device.id] = nil
        guard type == AdvertDecision.openDocumentType, let uri = Self.documentURI(in: properties),
              let path = FileSharingPolicy.localPath(ofFileURI: uri) else { return }
        var info = stat()
        guard stat(path, &info) == 0 else { return }
        transfers.grants[device.id] = FileGrant(activityID: activityID, uri: uri, path: path, size: Int64(info.st_size),
                                                modified: modifiedTime(info), grantedAt: now)
    }

    /// The `uri` of an activity's user info.
    static func documentURI(in properties: TypedValue) -> String? {
        let info = properties.stringVariantEntries?.first { $0.0 == "user-info" }?.1.unwrappedVariant
        return info?.stringVariantEntries?.first { $0.0 == documentURIKey }?.1.unwrappedVariant.stringValue
    }

    /// The activity's properties with its user info's `uri` replaced.
    static func replacingDocumentURI(in properties: TypedValue, with uri: String) -> TypedValue {
        let entries = (properties.stringVariantEntries ?? []).map { key, value -> (String, TypedValue) in
            guard key == "user-info" else { return (key, value) }
            let info = (value.unwrappedVariant.stringVariantEntries ?? []).map { infoKey, infoValue in
                infoKey == documentURIKey ? (infoKey, TypedValue.string(uri)) : (infoKey, infoValue.unwrappedVariant)
            }
            return (key, .stringVariantDictionary(info))
        }
        return .stringVariantDictionary(entries)
    }

    /// Why `device` may not have the document it asks for, or the open file.
    private func openGranted(_ id: String, uri: String, for device: DeviceObject) -> Result<(Int32, Int64, FileGrant), HandoffError> {
        func failed(_ message: String) -> Result<(Int32, Int64, FileGrant), HandoffError> { .failure(HandoffError("HandoffFailed", message)) }
        guard let grant = transfers.grants[device.id], grant.activityID == id, grant.uri == uri,
              now - grant.grantedAt <= FileTransferLimits.grantMicroseconds else {
            return failed("that is not the document of the activity \(device.name) fetched")
        }
        let roots = sharableRoots
        if let refusal = FileSharingPolicy.refusal(resolvedPath: grant.path, roots: roots + [environment["HOME"] ?? ""]) {
            return failed("the document is not shared: \(refusal)")
        }
        guard let resolved = resolvedPath(grant.path) else { return failed("the document is gone") }
        if let refusal = FileSharingPolicy.refusal(resolvedPath: resolved, roots: roots) {
            return failed("the document is not shared: \(refusal)")
        }
        let fd = open(resolved, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard fd >= 0 else { return failed("the document cannot be read") }
        var info = stat()
        guard fstat(fd, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG else {
            close(fd)
            return failed("the document is not a regular file")
        }
        if Int64(info.st_size) > maximumFileSize {
            close(fd)
            return .failure(HandoffError("FileTooLarge", "the document is \(info.st_size) bytes, more than the \(maximumFileSize) this device sends"))
        }
        guard Int64(info.st_size) == grant.size, same(modifiedTime(info), grant.modified) else {
            close(fd)
            return failed("the document changed since \(device.name) fetched the activity")
        }
        return .success((fd, Int64(info.st_size), grant))
    }

    /// A paired device asks for the document of the activity it fetched.
    private func receivedFileRequest(_ request: UInt32, activityID: String, uri: String, on link: PeerLink, device: DeviceObject) {
        let key = FileTransfers.key(link, request)
        guard transfers.outgoing[key] == nil else { return onProtocolError(link, "\(link.address) reused a file request number: disconnected") }
        guard transfers.outgoing.values.filter({ $0.link === link }).count < FileTransfers.maximumOutgoingPerLink else {
            link.send(FileTransferMessage.end(request: request, failure: StreamFailure(name: HandoffInterfaces.ErrorName.handoffFailed,
                message: "\(FileTransfers.maximumOutgoingPerLink) documents are already being sent to \(device.name)")).frame, priority: .bulk)
            return
        }
        switch openGranted(activityID, uri: uri, for: device) {
        case .failure(let error):
            log.info("refused \(device.name) the document of \(activityID): \(error.message)")
            link.send(FileTransferMessage.end(request: request, failure: StreamFailure(name: error.name, message: error.message)).frame, priority: .bulk)
        case .success(let (fd, size, grant)):
            keepHeapForTransfers()
            let transfer = OutgoingFile(request: request, link: link, fd: fd, size: size, grant: grant, loop: loop)
            transfer.hasher.onRoom = { [weak self, weak link] in
                guard let self, let link else { return }
                self.pumpFiles(on: link)
            }
            transfers.outgoing[key] = transfer
            // The header goes at once; the SHA-256 of what is sent follows the last byte.
            let name = String(grant.path.split(separator: "/").last ?? "document")
            link.send(FileTransferMessage.header(request: request, size: UInt64(size), sha256: nil, name: name).frame, priority: .bulk)
        }
    }

    /// The asker has a file of the document's size: the SHA-256 of the whole
    /// file, read once away from the loop, in a second header before any byte.
    private func receivedHashRequest(_ transfer: OutgoingFile, key: String, on link: PeerLink) {
        guard !transfer.hashAsked, transfer.sent == 0, transfer.credit == 0 else {
            return onProtocolError(link, "\(link.address) asked for a document's SHA-256 again or after its bytes: disconnected")
        }
        transfer.hashAsked = true
        let (request, size) = (transfer.request, transfer.size)
        let dup = fcntl(transfer.fd, F_DUPFD_CLOEXEC, 0)
        loop.inBackground(name: "hash", { () -> String? in
            defer { if dup >= 0 { close(dup) } }
            guard dup >= 0 else { return nil }
            return Self.hashFile(fd: dup, size: size)
        }, then: { [weak self, weak transfer] digest in
            guard let self, let transfer, self.transfers.outgoing[key] === transfer, let link = transfer.link, !link.isClosed else { return }
            guard let digest else {
                self.transfers.outgoing[key] = nil
                link.send(FileTransferMessage.end(request: request, failure: StreamFailure(name: HandoffInterfaces.ErrorName.handoffFailed, message: "the document changed while it was read")).frame, priority: .bulk)
                return
            }
            let name = String(transfer.grant.path.split(separator: "/").last ?? "document")
            link.send(FileTransferMessage.header(request: request, size: UInt64(size), sha256: digest, name: name).frame, priority: .bulk)
        })
    }

    /// The SHA-256 of exactly `size` bytes of `fd`, nil when it has fewer.
    static func hashFile(fd: Int32, size: Int64) -> String? {
        let hash = SHA256Stream()
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
        defer { buffer.deallocate() }
        var offset: Int64 = 0
        while offset < size {
            let n = pread(fd, buffer.baseAddress, min(buffer.count, Int(size - offset)), off_t(offset))
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else { return nil }
            hash.update(UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
            offset += Int64(n)
        }
        return hash.finish()
    }

    /// Sends what the asker's credit and the link's bulk queue allow, and
    /// hands what it sent to the hashing thread, in order. A frame written
    /// while sending drains the queue and asks again: that call only marks
    /// the pump to run once more, so no piece overtakes another.
    func pumpFiles(on link: PeerLink) {
        guard !transfers.isPumping else { transfers.pumpAgain = true; return }
        transfers.isPumping = true
        defer { transfers.isPumping = false }
        repeat {
            transfers.pumpAgain = false
            pumpOnce(on: link)
        } while transfers.pumpAgain && !link.isClosed
        releaseTransferMemoryIfIdle()
    }

    private func pumpOnce(on link: PeerLink) {
        for (key, transfer) in transfers.outgoing where transfer.link === link {
            var sent: [[UInt8]] = []
            while !link.isClosed, link.queuedBulkFrames < StreamLimits.queuedDataFrames, transfer.sent < transfer.size, transfer.credit > 0,
                  transfer.hasher.hasRoom {
                let want = min(FileTransferLimits.chunk, transfer.credit, Int(transfer.size - transfer.sent))
                // Read straight into the frame's bytes.
                let chunk = [UInt8](unsafeUninitializedCapacity: want) { buffer, count in
                    count = max(0, pread(transfer.fd, buffer.baseAddress, want, off_t(transfer.sent)))
                }
                guard !chunk.isEmpty else {
                    transfers.outgoing[key] = nil
                    link.send(FileTransferMessage.end(request: transfer.request, failure: StreamFailure(name: HandoffInterfaces.ErrorName.handoffFailed, message: "the document changed while it was sent")).frame, priority: .bulk)
                    break
                }
                sent.append(chunk)
                transfer.sent += Int64(chunk.count)
                transfer.credit -= chunk.count
                link.send(FileTransferMessage.data(request: transfer.request, chunk).frame, priority: .bulk)
            }
            transfer.hasher.append(sent)
            guard transfers.outgoing[key] === transfer, transfer.sent == transfer.size else { continue }
            transfers.outgoing[key] = nil
            // The size and time again at the end: a file written meanwhile is not passed off as the one fetched.
            var info = stat()
            let unchanged = fstat(transfer.fd, &info) == 0 && Int64(info.st_size) == transfer.grant.size && same(modifiedTime(info), transfer.grant.modified)
            guard unchanged else {
                link.send(FileTransferMessage.end(request: transfer.request, failure: StreamFailure(name: HandoffInterfaces.ErrorName.handoffFailed, message: "the document changed while it was sent")).frame, priority: .bulk)
                continue
            }
            let request = transfer.request
            transfer.hasher.onDigest = { [weak self, weak link] digest in
                link?.send(FileTransferMessage.finished(request: request, sha256: digest).frame, priority: .bulk)
                self?.releaseTransferMemoryIfIdle()
            }
            transfer.hasher.finish()
        }
    }

    func keepHeapForTransfers() {
        guard !transfers.keepsHeap else { return }
        transfers.keepsHeap = true
        Memory.keepFreedHeapTop(bytes: FileTransfers.keptHeapTop)
    }

    /// Once no document moves in either direction, the heap kept for
    /// transfers goes back to the system: an idle daemon stays small.
    func releaseTransferMemoryIfIdle() {
        guard transfers.keepsHeap, transfers.outgoing.isEmpty, transfers.incoming.isEmpty else { return }
        transfers.keepsHeap = false
        Memory.keepFreedHeapTop(bytes: FileTransfers.defaultHeapTop)
        Memory.returnFreedMemory()
    }

    // MARK: Asker

    /// The local path an open-document activity from another device names,
    /// or a failure when it cannot be continued here.
    func documentPath(in properties: TypedValue) -> Result<String, HandoffError> {
        guard let uri = Self.documentURI(in: properties), let path = FileSharingPolicy.localPath(ofFileURI: uri) else {
            return .failure(HandoffError("HandoffFailed", "only a local file (file://) can be brought from another device"))
        }
        return .success(path)
    }

    /// Brings the document of an open-document activity fetched from
    /// `device`, or finds the same bytes here: `completion` gets the URI to continue with.
    func bringDocument(path: String, activityID: String, uri: String, from device: DeviceObject, link: PeerLink,
                       completion: @escaping (Result<String, HandoffError>) -> Void) {
        let request = nextRequest()
        transfers.incoming[request] = IncomingFile(request: request, link: link, deviceName: device.name, localPath: path, now: now, completion: completion)
        link.send(FileTransferMessage.request(request: request, activityID: activityID, uri: uri).frame)
    }

    /// The directory documents from `deviceName` go to.
    func downloadFolder(for deviceName: String) -> String {
        let home = environment["HOME"] ?? "/nonexistent"
        let config = environment["XDG_CONFIG_HOME"].flatMap { $0.hasPrefix("/") ? $0 : nil } ?? home + "/.config"
        let text = (try? StateDirectory(path: config).read("user-dirs.dirs")).map { String(decoding: $0, as: UTF8.self) } ?? ""
        let downloads = DownloadPlacement.downloadDirectory(userDirs: text, home: home) ?? home + "/Downloads"
        return downloads + "/" + DownloadPlacement.component(deviceName, fallback: "Other device")
    }

    private func finishIncoming(_ transfer: IncomingFile, _ result: Result<String, HandoffError>, tellOrigin: Bool) {
        transfers.incoming[transfer.request] = nil
        transfer.progressTimer?.cancel()
        transfer.progressTimer = nil
        if let id = transfer.notificationID {
            notifier?.actions[id] = nil
            notifier?.close(id)
        }
        if case .failure(let error) = result {
            transfer.discard()
            if tellOrigin { transfer.link?.send(FileTransferMessage.end(request: transfer.request, failure: StreamFailure(name: error.name, message: error.message)).frame) }
        }
        let completion = transfer.completion
        transfer.completion = nil
        releaseTransferMemoryIfIdle()
        completion?(result)
    }

    private func receivedFileHeader(_ transfer: IncomingFile, size: UInt64, sha256: String?, name: String) {
        if transfer.size >= 0 {
            // Only the answer to this side's question: the same size, now with its SHA-256.
            guard transfer.hashAsked, transfer.announcedHash == nil, let sha256, size == UInt64(transfer.size) else {
                return finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "a second header")), tellOrigin: true)
            }
            transfer.announcedHash = sha256
            return decideInPlace(transfer)
        }
        guard size <= UInt64(maximumFileSize) else {
            return finishIncoming(transfer, .failure(HandoffError("FileTooLarge", "the document is \(size) bytes, more than the \(maximumFileSize) this device takes")), tellOrigin: true)
        }
        transfer.size = Int64(size)
        transfer.name = DownloadPlacement.component(name, fallback: "document")
        // A file of that size at the same path (a synced folder, a shared home) may be the same bytes:
        // the origin's SHA-256 is asked for first, and this side hashes its own file meanwhile.
        var info = stat()
        guard lstat(transfer.localPath, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) == transfer.size,
              FileSharingPolicy.refusal(resolvedPath: transfer.localPath, roots: sharableRoots) == nil else {
            return startReceiving(transfer)
        }
        transfer.hashAsked = true
        transfer.link?.send(FileTransferMessage.hashRequest(request: transfer.request).frame)
        let path = transfer.localPath
        loop.inBackground(name: "hash", { () -> String? in
            let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
            guard fd >= 0 else { return nil }
            defer { close(fd) }
            return Self.hashFile(fd: fd, size: Int64(size))
        }, then: { [weak self] digest in
            guard let self, self.transfers.incoming[transfer.request] === transfer else { return }
            transfer.localHash = .some(digest)
            self.decideInPlace(transfer)
        })
    }

    /// Once both SHA-256 are known: the same bytes are opened in place and
    /// nothing is sent; other bytes are brought.
    private func decideInPlace(_ transfer: IncomingFile) {
        guard let announced = transfer.announcedHash, let local = transfer.localHash else { return }
        if local == announced {
            log.info("\(transfer.deviceName)'s document is already here at \(transfer.localPath): opened in place")
            transfer.link?.send(FileTransferMessage.end(request: transfer.request, failure: nil).frame)
            return finishIncoming(transfer, .success(FileSharingPolicy.fileURI(forPath: transfer.localPath)), tellOrigin: false)
        }
        log.info("\(transfer.deviceName)'s document differs from the one at \(transfer.localPath) (the same size, another SHA-256): brought to the downloads folder")
        startReceiving(transfer)
    }

    private func startReceiving(_ transfer: IncomingFile) {
        transfer.folder = downloadFolder(for: transfer.deviceName)
        let fail: (String) -> Void = { [weak self] message in
            self?.finishIncoming(transfer, .failure(HandoffError("HandoffFailed", message)), tellOrigin: true)
        }
        guard (try? makeDirectory(transfer.folder, mode: 0o755)) != nil else { return fail("cannot make \(transfer.folder)") }
        var template = Array((transfer.folder + "/." + transfer.name + ".part-XXXXXX").utf8CString)
        let fd = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard fd >= 0 else { return fail("cannot write in \(transfer.folder)") }
        _ = fcntl(fd, F_SETFD, FD_CLOEXEC)
        transfer.temporaryPath = String(cString: template)
        keepHeapForTransfers()
        let sink = FileSink(fd: fd, loop: loop)
        transfer.sink = sink
        sink.onWritten = { [weak self, weak transfer] count in
            guard let self, let transfer, self.transfers.incoming[transfer.request] === transfer else { return }
            self.wrote(count, of: transfer)
        }
        sink.onFailed = { [weak self, weak transfer] message in
            guard let self, let transfer, self.transfers.incoming[transfer.request] === transfer else { return }
            self.finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "cannot write \(transfer.name): \(message)")), tellOrigin: true)
        }
        sink.onFinished = { [weak self, weak transfer] digest in
            guard let self, let transfer, self.transfers.incoming[transfer.request] === transfer else { return }
            self.synced(transfer, digest: digest)
        }
        if transfer.size == 0 { return }
        transfer.granted = min(Int64(FileTransferLimits.window), transfer.size)
        transfer.link?.send(FileTransferMessage.credit(request: transfer.request, bytes: UInt32(transfer.granted)).frame)
        transfer.progressTimer = scheduler.after(milliseconds: 1000) { [weak self, weak transfer] in
            guard let self, let transfer else { return }
            self.showProgress(transfer)
        }
    }

    /// Bytes reached the file: the origin may send as many more (a quarter
    /// of the window at a time, or what is left).
    private func wrote(_ count: Int, of transfer: IncomingFile) {
        transfer.written += Int64(count)
        let more = min(transfer.written + Int64(FileTransferLimits.window), transfer.size) - transfer.granted
        guard more > 0, more >= Int64(FileTransferLimits.window / 4) || transfer.granted + more == transfer.size else { return }
        transfer.granted += more
        transfer.link?.send(FileTransferMessage.credit(request: transfer.request, bytes: UInt32(more)).frame)
    }

    /// The notification of a transfer that takes longer than a second:
    /// how much arrived, updated each second, and Cancel.
    private func showProgress(_ transfer: IncomingFile) {
        guard transfers.incoming[transfer.request] === transfer, let notifier, notifier.isAvailable else { return }
        let percent = transfer.size > 0 ? Int(transfer.received * 100 / transfer.size) : 100
        let megabytes = { (bytes: Int64) in String(Double(bytes / 104_858) / 10) }
        notifier.notify(replacing: transfer.notificationID ?? 0, summary: "Receiving “\(transfer.name)” from \(transfer.deviceName)",
                        body: "\(percent) % of \(megabytes(transfer.size)) MiB", actionList: ["cancel", "Cancel"]) { [weak self, weak transfer, weak notifier] id in
            guard let self, let transfer, let notifier, let id else { return }
            guard self.transfers.incoming[transfer.request] === transfer else { return notifier.close(id) }
            transfer.notificationID = id
            notifier.actions[id] = { [weak self, weak transfer] key in
                guard key == "cancel", let self, let transfer, self.transfers.incoming[transfer.request] === transfer else { return }
                self.log.info("the person cancelled the transfer of \(transfer.name) from \(transfer.deviceName)")
                self.finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "the transfer of \(transfer.name) was cancelled")), tellOrigin: true)
            }
        }
        transfer.progressTimer = scheduler.after(milliseconds: 1000) { [weak self, weak transfer] in
            guard let self, let transfer else { return }
            self.showProgress(transfer)
        }
    }

    private func receivedFileData(_ transfer: IncomingFile, _ bytes: [UInt8]) -> Bool {
        guard let sink = transfer.sink, transfer.finishedHash == nil, transfer.received + Int64(bytes.count) <= transfer.size,
              transfer.received + Int64(bytes.count) <= transfer.granted else { return false }
        transfer.received += Int64(bytes.count)
        sink.append(bytes)
        return true
    }

    private func receivedFileEnd(_ transfer: IncomingFile, failure: StreamFailure?) {
        if let failure {
            let known = [HandoffInterfaces.ErrorName.handoffFailed, HandoffInterfaces.errorPrefix + "FileTooLarge"].contains(failure.name)
            let name = known ? failure.name : HandoffInterfaces.ErrorName.handoffFailed
            return finishIncoming(transfer, .failure(HandoffError(name, failure.message.prefix(utf8Bytes: HandoffLimits.maximumMessageBytes))), tellOrigin: false)
        }
        finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "the document ended early")), tellOrigin: false)
    }

    /// The origin sent everything: once the file is written and synced, its SHA-256 is compared.
    private func receivedFileFinished(_ transfer: IncomingFile, sha256: String) {
        guard let sink = transfer.sink, transfer.finishedHash == nil, transfer.received == transfer.size else {
            return finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "the document ended early")), tellOrigin: true)
        }
        transfer.finishedHash = sha256
        sink.finish()
    }

    private func synced(_ transfer: IncomingFile, digest: String?) {
        transfer.sink = nil
        guard let digest else {
            return finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "cannot write \(transfer.name)")), tellOrigin: false)
        }
        guard digest == transfer.finishedHash else {
            return finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "the document arrived damaged (SHA-256 differs)")), tellOrigin: false)
        }
        // Never over an existing file: link(2) refuses to replace one.
        for attempt in 1...1000 {
            let path = transfer.folder + "/" + DownloadPlacement.candidate(transfer.name, attempt: attempt)
            if link(transfer.temporaryPath, path) == 0 {
                unlink(transfer.temporaryPath)
                transfer.temporaryPath = ""
                log.info("received \(transfer.size) bytes from \(transfer.deviceName) as \(path)")
                return finishIncoming(transfer, .success(FileSharingPolicy.fileURI(forPath: path)), tellOrigin: false)
            }
            guard errno == EEXIST else { break }
        }
        finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "cannot name the document in \(transfer.folder)")), tellOrigin: false)
    }

    var fileTransferDeadlines: [Int64] { transfers.incoming.values.map { $0.lastProgress + FileTransfers.stallMicroseconds } }

    func expireFileTransfers() {
        for transfer in transfers.incoming.values where now >= transfer.lastProgress + FileTransfers.stallMicroseconds {
            finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "\(transfer.deviceName) stopped sending the document")), tellOrigin: true)
        }
    }

    // MARK: Both

    func receivedFile(_ frame: Frame, on link: PeerLink) {
        guard let device = devices[link.peerDeviceID], device.paired, device.link === link else { return }
        guard let message = FileTransferMessage.parse(frame) else {
            return onProtocolError(link, "\(link.address) sent a malformed \(frame.kind) frame: disconnected")
        }
        switch message {
        case .request(let request, let id, let uri):
            receivedFileRequest(request, activityID: id, uri: uri, on: link, device: device)
        case .credit(let request, let bytes):
            guard let transfer = transfers.outgoing[FileTransfers.key(link, request)] else { return }
            guard transfer.credit + Int(bytes) <= FileTransferLimits.window else {
                return onProtocolError(link, "\(link.address) credited more than the window: disconnected")
            }
            transfer.credit += Int(bytes)
            pumpFiles(on: link)
        case .hashRequest(let request):
            guard let transfer = transfers.outgoing[FileTransfers.key(link, request)] else { return }
            receivedHashRequest(transfer, key: FileTransfers.key(link, request), on: link)
        case .finished(let request, let hash):
            guard let transfer = transfers.incoming[request], transfer.link === link else { return }
            transfer.lastProgress = now
            receivedFileFinished(transfer, sha256: hash)
        case .end(let request, let failure):
            if let transfer = transfers.outgoing.removeValue(forKey: FileTransfers.key(link, request)) {
                log.info("\(device.name) ended the transfer of \(transfer.grant.path)\(failure.map { ": \($0.message)" } ?? "")")
                releaseTransferMemoryIfIdle()
            } else if let transfer = transfers.incoming[request], transfer.link === link {
                receivedFileEnd(transfer, failure: failure)
            }
        case .header(let request, let size, let hash, let name):
            guard let transfer = transfers.incoming[request], transfer.link === link else { return }
            transfer.lastProgress = now
            receivedFileHeader(transfer, size: size, sha256: hash, name: name)
        case .data(let request, let bytes):
            guard let transfer = transfers.incoming[request], transfer.link === link else { return }
            transfer.lastProgress = now
            if !receivedFileData(transfer, bytes) { onProtocolError(link, "\(link.address) sent more of a document than announced or credited: disconnected") }
        }
    }

    /// The link went away: transfers on it end, and no partial file stays.
    func fileLinkClosed(_ link: PeerLink, reason: String) {
        for (key, transfer) in transfers.outgoing where transfer.link === link || transfer.link == nil { transfers.outgoing[key] = nil }
        for transfer in transfers.incoming.values where transfer.link === link || transfer.link == nil {
            finishIncoming(transfer, .failure(HandoffError("ConnectionUnavailable", "\(transfer.deviceName) went away during the transfer: \(reason)")), tellOrigin: false)
        }
        releaseTransferMemoryIfIdle()
    }
}
