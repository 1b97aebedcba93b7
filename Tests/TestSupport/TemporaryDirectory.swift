// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// A directory made with `mkdtemp`, removed recursively by ``remove()`` or
/// when the object is released.
public final class TemporaryDirectory: @unchecked Sendable {
    /// The absolute path of the directory.
    public let path: String
    private let lock = NSLock()
    private var removed = false

    /// Creates `<base>/<prefix>XXXXXX`.
    ///
    /// - Parameters:
    ///   - prefix: The start of the directory name.
    ///   - base: The parent directory; default ``defaultBase(maxLength:)``.
    public init(prefix: String = "uat-", base: String? = nil) throws {
        let parent = base ?? TemporaryDirectory.defaultBase()
        var template = Array("\(parent)/\(prefix)XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { buffer -> String? in
            guard let result = mkdtemp(buffer.baseAddress!) else { return nil }
            return String(cString: result)
        }
        guard let made else {
            throw ChildProcessError.systemCallFailed(call: "mkdtemp(\(parent)/\(prefix)XXXXXX)", errno: errno)
        }
        path = made
    }

    deinit { remove() }

    /// `$TMPDIR` when set and no longer than `maxLength` bytes, else `/tmp`.
    ///
    /// Unix socket paths are limited to 108 bytes, so directories that will
    /// hold sockets need a short parent.
    public static func defaultBase(maxLength: Int = 48) -> String {
        if let tmp = ProcessInfo.processInfo.environment["TMPDIR"], !tmp.isEmpty, tmp.utf8.count <= maxLength {
            var trimmed = tmp
            while trimmed.count > 1 && trimmed.hasSuffix("/") { trimmed.removeLast() }
            return trimmed
        }
        return "/tmp"
    }

    /// The URL of the directory.
    public var url: URL { URL(fileURLWithPath: path, isDirectory: true) }

    /// `path` + `/` + `relativePath`.
    public func appending(_ relativePath: String) -> String {
        "\(path)/\(relativePath)"
    }

    /// Creates `relativePath` (with intermediate directories) and returns its path.
    @discardableResult
    public func makeDirectory(_ relativePath: String, mode: Int = 0o755) throws -> String {
        let full = appending(relativePath)
        try FileManager.default.createDirectory(
            atPath: full, withIntermediateDirectories: true, attributes: [.posixPermissions: mode])
        return full
    }

    /// Whether ``remove()`` already ran.
    public var isRemoved: Bool {
        lock.lock(); defer { lock.unlock() }
        return removed
    }

    /// Removes the directory and everything in it (idempotent; errors ignored).
    public func remove() {
        lock.lock()
        if removed { lock.unlock(); return }
        removed = true
        lock.unlock()
        let fm = FileManager.default
        if (try? fm.removeItem(atPath: path)) == nil, fm.fileExists(atPath: path) {
            // Make every directory writable (a test may have chmod'ed one) and retry.
            if let walker = fm.enumerator(atPath: path) {
                while let rel = walker.nextObject() as? String {
                    var isDir: ObjCBool = false
                    if fm.fileExists(atPath: "\(path)/\(rel)", isDirectory: &isDir), isDir.boolValue {
                        chmod("\(path)/\(rel)", 0o700)
                    }
                }
            }
            chmod(path, 0o700)
            try? fm.removeItem(atPath: path)
        }
    }
}
