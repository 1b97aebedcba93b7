// SPDX-License-Identifier: Apache-2.0
import CGnuTLS
import TypedValues

/// Bounds of document transfers between two devices.
public enum FileTransferLimits {
    /// The default largest document sent or taken (`MaximumFileSize`).
    public static let defaultMaximumSize: UInt64 = 1 << 30
    /// How long after a fetch its document may be asked for (microseconds).
    public static let grantMicroseconds: Int64 = 5 * 60 * 1_000_000
    /// Bytes per ``FrameKind/fileData`` frame: four times a continuation
    /// stream's, so that a bulk copy costs fewer frames and wakeups; one such
    /// frame ahead of an advert on the wire still delays it by well under a millisecond.
    public static let chunk = 64 * 1024
    /// Bytes in flight before the asker credits some back. Everything in
    /// flight is ahead of an advert on the wire: a larger window (2 MiB)
    /// was no faster and tripled an advert's delay during a transfer.
    public static let window = 512 * 1024
}

/// The document transfer frames, typed. A transfer is named by the asker's
/// `request` number. The asker requests; the origin answers at once with a
/// header (size, name) and sends data only against the asker's credit,
/// hashing what it sends, and ends it with the SHA-256 of what it sent
/// (``finished(request:sha256:)``). An asker that has a file of that size
/// where the document would be asks for the SHA-256 first (``hashRequest(request:)``,
/// answered by a second header that carries it) and ends the transfer before
/// any byte is sent when the bytes are the same. Either side may end it with a failure.
public enum FileTransferMessage: Sendable, Equatable {
    case request(request: UInt32, activityID: String, uri: String)
    case header(request: UInt32, size: UInt64, sha256: String?, name: String)
    case hashRequest(request: UInt32)
    case data(request: UInt32, [UInt8])
    case credit(request: UInt32, bytes: UInt32)
    /// Ended without the document: by the asker (it needs no more), or a failure.
    case end(request: UInt32, failure: StreamFailure?)
    /// The origin sent every byte; `sha256` is theirs.
    case finished(request: UInt32, sha256: String)

    public var request: UInt32 {
        switch self {
        case .request(let r, _, _), .header(let r, _, _, _), .hashRequest(let r), .data(let r, _), .credit(let r, _), .end(let r, _),
             .finished(let r, _): return r
        }
    }

    /// The message a frame carries; nil for other kinds and for a file frame
    /// that lacks its fields or exceeds its bounds (the link is dropped).
    public static func parse(_ frame: Frame) -> FileTransferMessage? {
        guard let request = frame.uint32("request") else { return nil }
        switch frame.kind {
        case .fileRequest:
            guard let id = frame.string("id"), !id.isEmpty, let uri = frame.string("uri"), uri.utf8.count <= 4096 else { return nil }
            return .request(request: request, activityID: id, uri: uri)
        case .fileHeader:
            guard case .uint64(let size)? = frame.body["size"], let name = frame.string("name"), name.utf8.count <= 255 else { return nil }
            let hash = frame.string("sha256")
            if let hash, !isSHA256(hash) { return nil }
            return .header(request: request, size: size, sha256: hash, name: name)
        case .fileHashRequest:
            return .hashRequest(request: request)
        case .fileData:
            guard !frame.data.isEmpty, frame.data.count <= FileTransferLimits.chunk else { return nil }
            return .data(request: request, frame.data)
        case .fileCredit:
            guard let bytes = frame.uint32("bytes"), bytes > 0, bytes <= UInt32(FileTransferLimits.window) else { return nil }
            return .credit(request: request, bytes: bytes)
        case .fileEnd:
            if let hash = frame.string("sha256") { return isSHA256(hash) ? .finished(request: request, sha256: hash) : nil }
            guard let name = frame.string("name") else { return .end(request: request, failure: nil) }
            return .end(request: request, failure: StreamFailure(name: name, message: frame.string("message") ?? ""))
        default:
            return nil
        }
    }

    public var frame: Frame {
        switch self {
        case .request(let request, let id, let uri):
            return Frame(.fileRequest, ["request": .uint32(request), "id": .string(id), "uri": .string(uri)])
        case .header(let request, let size, let hash, let name):
            var body: [String: TypedValue] = ["request": .uint32(request), "size": .uint64(size), "name": .string(name)]
            if let hash { body["sha256"] = .string(hash) }
            return Frame(.fileHeader, body)
        case .hashRequest(let request): return Frame(.fileHashRequest, ["request": .uint32(request)])
        case .data(let request, let bytes): return Frame(.fileData, ["request": .uint32(request)], data: bytes)
        case .credit(let request, let bytes): return Frame(.fileCredit, ["request": .uint32(request), "bytes": .uint32(bytes)])
        case .end(let request, let failure):
            guard let failure else { return Frame(.fileEnd, ["request": .uint32(request)]) }
            return Frame(.fileEnd, ["request": .uint32(request), "name": .string(failure.name), "message": .string(failure.message)])
        case .finished(let request, let hash): return Frame(.fileEnd, ["request": .uint32(request), "sha256": .string(hash)])
        }
    }

    static func isSHA256(_ text: String) -> Bool { text.utf8.count == 64 && Hex.decode(text) != nil }
}

/// Which files a paired device may be sent: the rules on the origin's side,
/// on paths only (the daemon opens and checks what it names).
public enum FileSharingPolicy {
    /// Why `path` (absolute, symlinks resolved) may not be sent, or nil.
    /// `roots` are the places documents may come from (the home directory,
    /// mounted removable disks), also resolved.
    public static func refusal(resolvedPath path: String, roots: [String]) -> String? {
        guard path.hasPrefix("/") else { return "not an absolute path" }
        guard let root = roots.first(where: { !$0.isEmpty && path.hasPrefix($0.hasSuffix("/") ? $0 : $0 + "/") }) else {
            return "not under the home directory or a removable disk"
        }
        let below = path.dropFirst(root.hasSuffix("/") ? root.count : root.count + 1)
        if below.split(separator: "/").contains(where: { $0.hasPrefix(".") }) { return "a hidden path" }
        return nil
    }

    /// The path a `file://` URI names (percent-decoded), nil for any other
    /// URI, a remote host, or one that decodes to a NUL or a relative path.
    public static func localPath(ofFileURI uri: String) -> String? {
        var rest: Substring
        if uri.hasPrefix("file:///") { rest = uri.dropFirst(7) }
        else if uri.hasPrefix("file://localhost/") { rest = uri.dropFirst(16) }
        else { return nil }
        if let query = rest.firstIndex(where: { $0 == "?" || $0 == "#" }) { rest = rest[..<query] }
        var bytes: [UInt8] = []
        var utf8 = Array(rest.utf8)[...]
        while let byte = utf8.popFirst() {
            if byte == UInt8(ascii: "%") {
                guard utf8.count >= 2, let decoded = Hex.decode(String(decoding: utf8.prefix(2), as: UTF8.self).lowercased()) else { return nil }
                bytes += decoded
                utf8 = utf8.dropFirst(2)
            } else {
                bytes.append(byte)
            }
        }
        guard !bytes.contains(0), bytes.first == UInt8(ascii: "/") else { return nil }
        let path = String(decoding: bytes, as: UTF8.self)
        return path.split(separator: "/").contains("..") ? nil : path
    }

    /// A `file://` URI for an absolute path, every byte outside the unreserved set percent-encoded.
    public static func fileURI(forPath path: String) -> String {
        var out = "file://"
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                out.append(Character(Unicode.Scalar(byte)))
            default:
                out += "%" + Hex.encode([byte]).uppercased()
            }
        }
        return out
    }
}

/// Where a received document goes on the asker's side.
public enum DownloadPlacement {
    /// `XDG_DOWNLOAD_DIR` from the text of `user-dirs.dirs`, with `$HOME`
    /// expanded; nil when the file does not set it (or sets it to the home itself).
    public static func downloadDirectory(userDirs text: String, home: String) -> String? {
        for line in text.split(separator: "\n") {
            let trimmed = line.drop(while: { $0 == " " || $0 == "\t" })
            guard trimmed.hasPrefix("XDG_DOWNLOAD_DIR=") else { continue }
            var value = trimmed.dropFirst("XDG_DOWNLOAD_DIR=".count)
            guard value.hasPrefix("\""), value.count >= 2, value.hasSuffix("\"") else { return nil }
            value = value.dropFirst().dropLast()
            let path: String
            if value.hasPrefix("$HOME") { path = home + value.dropFirst(5) } else { path = String(value) }
            guard path.hasPrefix("/"), path != home, path != home + "/" else { return nil }
            return path
        }
        return nil
    }

    /// A name safe as one path component: the other device's name or file
    /// name, without slashes, NULs, control characters or a leading dot.
    public static func component(_ name: String, fallback: String) -> String {
        var cleaned = String(name.unicodeScalars.map { scalar -> Character in
            scalar == "/" || scalar.value < 0x20 || scalar.value == 0x7f ? "_" : Character(scalar)
        })
        while cleaned.hasPrefix(".") { cleaned.removeFirst() }
        cleaned = String(cleaned.prefix(200))
        return cleaned.isEmpty ? fallback : cleaned
    }

    /// The `attempt`-th name for a file (1: the name itself, then
    /// `Report (2).odt`, `Report (3).odt`…), the extension kept.
    public static func candidate(_ name: String, attempt: Int) -> String {
        guard attempt > 1 else { return name }
        if let dot = name.lastIndex(of: "."), dot != name.startIndex {
            return "\(name[..<dot]) (\(attempt))\(name[dot...])"
        }
        return "\(name) (\(attempt))"
    }
}

/// SHA-256 over bytes given piece by piece (GnuTLS's).
public final class SHA256Stream {
    private var handle: gnutls_hash_hd_t?

    public init() {
        // Only fails for an unknown algorithm or out of memory.
        let code = gnutls_hash_init(&handle, GNUTLS_DIG_SHA256)
        precondition(code == 0, "gnutls_hash_init(SHA256) failed: \(code)")
    }

    deinit { if let handle { gnutls_hash_deinit(handle, nil) } }

    public func update(_ bytes: UnsafeRawBufferPointer) {
        guard let base = bytes.baseAddress, bytes.count > 0 else { return }
        _ = gnutls_hash(handle, base, bytes.count)
    }

    public func update(_ bytes: [UInt8]) { bytes.withUnsafeBytes { update($0) } }

    /// The digest in lowercase hex; the stream starts over.
    public func finish() -> String {
        var digest = [UInt8](repeating: 0, count: 32)
        digest.withUnsafeMutableBytes { gnutls_hash_output(handle, $0.baseAddress) }
        return Hex.encode(digest)
    }
}
