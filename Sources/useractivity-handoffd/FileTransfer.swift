// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#endif
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
    var headerSent = false
    init(request: UInt32, link: PeerLink, fd: Int32, size: Int64, grant: FileGrant) {
        self.request = request
        self.link = link
        self.fd = fd
        self.size = size
        self.grant = grant
    }
    deinit { close(fd) }
}

/// On the asker: one document being received into a hidden temporary file
/// next to where it will stay.
final class IncomingFile {
    let request: UInt32
    weak var link: PeerLink?
    let deviceName: String
    let localPath: String
    var size: Int64 = -1
    var announcedHash = ""
    var name = ""
    var fd: Int32 = -1
    var temporaryPath = ""
    var folder = ""
    var received: Int64 = 0
    var uncredited = 0
    /// When the origin last answered or sent bytes (monotonic µs).
    var lastProgress: Int64
    let hash = SHA256Stream()
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
        if fd >= 0 { close(fd); fd = -1 }
        if !temporaryPath.isEmpty { unlink(temporaryPath); temporaryPath = "" }
    }
    deinit { discard() }
}

/// Document transfers of this daemon, both directions.
final class FileTransfers {
    var grants: [String: FileGrant] = [:]
    var outgoing: [String: OutgoingFile] = [:]
    var incoming: [UInt32: IncomingFile] = [:]

    static func key(_ link: PeerLink, _ request: UInt32) -> String { "\(link.serial)/\(request)" }
    /// An origin that keeps the link up but sends nothing for this long fails the transfer
    /// (hashing a large file on a slow disk comes first).
    static let stallMicroseconds: Int64 = 60_000_000
    /// Documents one link may be sending at once (each holds a descriptor and, first, a hashing thread).
    static let maximumOutgoingPerLink = 4
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
        guard transfers.outgoing[key] == nil else { return link.close(reason: "\(link.address) reused a file request number: disconnected") }
        guard transfers.outgoing.values.filter({ $0.link === link }).count < FileTransfers.maximumOutgoingPerLink else {
            link.sendBulk(FileTransferMessage.end(request: request, failure: StreamFailure(name: HandoffInterfaces.ErrorName.handoffFailed,
                message: "\(FileTransfers.maximumOutgoingPerLink) documents are already being sent to \(device.name)")).frame)
            return
        }
        switch openGranted(activityID, uri: uri, for: device) {
        case .failure(let error):
            log.info("refused \(device.name) the document of \(activityID): \(error.message)")
            link.sendBulk(FileTransferMessage.end(request: request, failure: StreamFailure(name: error.name, message: error.message)).frame)
        case .success(let (fd, size, grant)):
            let transfer = OutgoingFile(request: request, link: link, fd: fd, size: size, grant: grant)
            transfers.outgoing[key] = transfer
            // The whole file is read once for its SHA-256, away from the loop.
            let dup = fcntl(fd, F_DUPFD_CLOEXEC, 0)
            loop.inBackground(name: "hash", { () -> String? in
                defer { if dup >= 0 { close(dup) } }
                guard dup >= 0 else { return nil }
                return Self.hashFile(fd: dup, size: size)
            }, then: { [weak self, weak transfer] digest in
                guard let self, let transfer, self.transfers.outgoing[key] === transfer, let link = transfer.link, !link.isClosed else { return }
                guard let digest else {
                    self.transfers.outgoing[key] = nil
                    link.sendBulk(FileTransferMessage.end(request: request, failure: StreamFailure(name: HandoffInterfaces.ErrorName.handoffFailed, message: "the document changed while it was read")).frame)
                    return
                }
                let name = String(grant.path.split(separator: "/").last ?? "document")
                link.sendBulk(FileTransferMessage.header(request: request, size: UInt64(size), sha256: digest, name: name).frame)
                transfer.headerSent = true
            })
        }
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

    /// Sends what the asker's credit and the link's bulk queue allow.
    func pumpFiles(on link: PeerLink) {
        for (key, transfer) in transfers.outgoing where transfer.link === link && transfer.headerSent {
            var buffer = [UInt8](repeating: 0, count: FileTransferLimits.chunk)
            while !link.isClosed, link.queuedBulkFrames < StreamLimits.queuedDataFrames, transfer.sent < transfer.size, transfer.credit > 0 {
                let want = min(FileTransferLimits.chunk, transfer.credit, Int(transfer.size - transfer.sent))
                let n = buffer.withUnsafeMutableBytes { pread(transfer.fd, $0.baseAddress, want, off_t(transfer.sent)) }
                guard n > 0 else {
                    transfers.outgoing[key] = nil
                    link.sendBulk(FileTransferMessage.end(request: transfer.request, failure: StreamFailure(name: HandoffInterfaces.ErrorName.handoffFailed, message: "the document changed while it was sent")).frame)
                    break
                }
                transfer.sent += Int64(n)
                transfer.credit -= n
                link.sendBulk(FileTransferMessage.data(request: transfer.request, Array(buffer[0..<n])).frame)
            }
            guard transfers.outgoing[key] === transfer, transfer.sent == transfer.size else { continue }
            transfers.outgoing[key] = nil
            // The size and time again at the end: a file written meanwhile is not passed off as the one fetched.
            var info = stat()
            let unchanged = fstat(transfer.fd, &info) == 0 && Int64(info.st_size) == transfer.grant.size && same(modifiedTime(info), transfer.grant.modified)
            link.sendBulk(FileTransferMessage.end(request: transfer.request, failure: unchanged ? nil
                : StreamFailure(name: HandoffInterfaces.ErrorName.handoffFailed, message: "the document changed while it was sent")).frame)
        }
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
        completion?(result)
    }

    private func receivedFileHeader(_ transfer: IncomingFile, size: UInt64, sha256: String, name: String) {
        guard transfer.size < 0 else { return finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "a second header")), tellOrigin: true) }
        guard size <= UInt64(maximumFileSize) else {
            return finishIncoming(transfer, .failure(HandoffError("FileTooLarge", "the document is \(size) bytes, more than the \(maximumFileSize) this device takes")), tellOrigin: true)
        }
        transfer.size = Int64(size)
        transfer.announcedHash = sha256
        transfer.name = DownloadPlacement.component(name, fallback: "document")
        // The same bytes already at the same path (a synced folder, a shared home): opened in place, nothing sent.
        var info = stat()
        if lstat(transfer.localPath, &info) == 0, (info.st_mode & S_IFMT) == S_IFREG, Int64(info.st_size) == transfer.size,
           FileSharingPolicy.refusal(resolvedPath: transfer.localPath, roots: sharableRoots) == nil {
            let path = transfer.localPath
            loop.inBackground(name: "hash", { () -> String? in
                let fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
                guard fd >= 0 else { return nil }
                defer { close(fd) }
                return Self.hashFile(fd: fd, size: Int64(size))
            }, then: { [weak self] digest in
                guard let self, self.transfers.incoming[transfer.request] === transfer else { return }
                if digest == sha256 {
                    self.log.info("\(transfer.deviceName)'s document is already here at \(path): opened in place")
                    transfer.link?.send(FileTransferMessage.end(request: transfer.request, failure: nil).frame)
                    return self.finishIncoming(transfer, .success(FileSharingPolicy.fileURI(forPath: path)), tellOrigin: false)
                }
                self.startReceiving(transfer)
            })
            return
        }
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
        transfer.fd = fd
        transfer.temporaryPath = String(cString: template)
        if transfer.size == 0 { return }
        transfer.link?.send(FileTransferMessage.credit(request: transfer.request, bytes: UInt32(FileTransferLimits.window)).frame)
        transfer.progressTimer = scheduler.after(milliseconds: 1000) { [weak self, weak transfer] in
            guard let self, let transfer else { return }
            self.showProgress(transfer)
        }
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
        guard transfer.fd >= 0, transfer.received + Int64(bytes.count) <= transfer.size,
              transfer.uncredited + bytes.count <= FileTransferLimits.window else { return false }
        transfer.hash.update(bytes)
        var written = 0
        while written < bytes.count {
            let n = bytes.withUnsafeBytes { write(transfer.fd, $0.baseAddress! + written, bytes.count - written) }
            if n < 0 && errno == EINTR { continue }
            guard n > 0 else {
                finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "cannot write \(transfer.name): \(String(cString: strerror(errno)))")), tellOrigin: true)
                return true
            }
            written += n
        }
        transfer.received += Int64(bytes.count)
        transfer.uncredited += bytes.count
        if transfer.uncredited >= FileTransferLimits.window / 4 && transfer.received < transfer.size {
            transfer.link?.send(FileTransferMessage.credit(request: transfer.request, bytes: UInt32(transfer.uncredited)).frame)
            transfer.uncredited = 0
        }
        return true
    }

    private func receivedFileEnd(_ transfer: IncomingFile, failure: StreamFailure?) {
        if let failure {
            let known = [HandoffInterfaces.ErrorName.handoffFailed, HandoffInterfaces.errorPrefix + "FileTooLarge"].contains(failure.name)
            let name = known ? failure.name : HandoffInterfaces.ErrorName.handoffFailed
            return finishIncoming(transfer, .failure(HandoffError(name, String(failure.message.prefix(HandoffLimits.maximumMessageBytes)))), tellOrigin: false)
        }
        guard transfer.fd >= 0, transfer.received == transfer.size else {
            return finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "the document ended early")), tellOrigin: false)
        }
        guard transfer.hash.finish() == transfer.announcedHash else {
            return finishIncoming(transfer, .failure(HandoffError("HandoffFailed", "the document arrived damaged (SHA-256 differs)")), tellOrigin: false)
        }
        fsync(transfer.fd)
        close(transfer.fd)
        transfer.fd = -1
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
            return link.close(reason: "\(link.address) sent a malformed \(frame.kind) frame: disconnected")
        }
        switch message {
        case .request(let request, let id, let uri):
            receivedFileRequest(request, activityID: id, uri: uri, on: link, device: device)
        case .credit(let request, let bytes):
            guard let transfer = transfers.outgoing[FileTransfers.key(link, request)] else { return }
            guard transfer.credit + Int(bytes) <= FileTransferLimits.window else {
                return link.close(reason: "\(link.address) credited more than the window: disconnected")
            }
            transfer.credit += Int(bytes)
            pumpFiles(on: link)
        case .end(let request, let failure):
            if let transfer = transfers.outgoing.removeValue(forKey: FileTransfers.key(link, request)) {
                log.info("\(device.name) ended the transfer of \(transfer.grant.path)\(failure.map { ": \($0.message)" } ?? "")")
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
            if !receivedFileData(transfer, bytes) { link.close(reason: "\(link.address) sent more of a document than announced or credited: disconnected") }
        }
    }

    /// The link went away: transfers on it end, and no partial file stays.
    func fileLinkClosed(_ link: PeerLink, reason: String) {
        for (key, transfer) in transfers.outgoing where transfer.link === link || transfer.link == nil { transfers.outgoing[key] = nil }
        for transfer in transfers.incoming.values where transfer.link === link || transfer.link == nil {
            finishIncoming(transfer, .failure(HandoffError("ConnectionUnavailable", "\(transfer.deviceName) went away during the transfer: \(reason)")), tellOrigin: false)
        }
    }
}
