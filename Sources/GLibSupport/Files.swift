// SPDX-License-Identifier: Apache-2.0
import CGLib
#if canImport(Glibc)
import Glibc
#endif

/// A failed file operation, with GLib's message.
public struct FileFailure: Error, CustomStringConvertible, Sendable {
    public let description: String
}

/// Writes `contents` to `path` atomically (a temporary file renamed over it,
/// fsynced), with `mode`, so that readers and a crash never see half a file.
public func replaceFileContents(_ path: String, contents: String, mode: Int32 = 0o600) throws {
    var error: UnsafeMutablePointer<GError>?
    let bytes = Array(contents.utf8)
    let ok = bytes.withUnsafeBufferPointer { buffer in
        buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: max(bytes.count, 1)) { text in
            g_file_set_contents_full(path, text, gssize(bytes.count),
                                     GFileSetContentsFlags(rawValue: G_FILE_SET_CONTENTS_CONSISTENT.rawValue | G_FILE_SET_CONTENTS_ONLY_EXISTING.rawValue),
                                     mode, &error)
        }
    }
    if ok == 0 {
        let message = error.map { String(cString: $0.pointee.message) } ?? "unknown error"
        g_clear_error(&error)
        throw FileFailure(description: "cannot write \(path): \(message)")
    }
}

/// Creates a directory and its parents with `mode` (`g_mkdir_with_parents`).
public func makeDirectory(_ path: String, mode: Int32 = 0o700) throws {
    if g_mkdir_with_parents(path, mode) != 0 {
        throw FileFailure(description: "cannot create the directory \(path): \(String(cString: g_strerror(errno)))")
    }
}

/// Whether something exists at `path` (a dangling symlink does not).
public func pathExists(_ path: String) -> Bool {
    access(path, F_OK) == 0
}
