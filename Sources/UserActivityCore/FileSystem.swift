// SPDX-License-Identifier: Apache-2.0
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

// The few file-system calls the catalog and the identity code make, straight
// from libc: the daemon links no Foundation, whose static copy (with ICU)
// would more than double its resident size for four calls.

/// What a path names after following symlinks, as far as the catalog and the
/// identity code care.
enum FileKind: Equatable {
    case directory
    case other
}

/// The kind of `path`, or nil when it does not exist or cannot be examined.
func fileKind(atPath path: String) -> FileKind? {
    var info = stat()
    guard stat(path, &info) == 0 else { return nil }
    return (info.st_mode & S_IFMT) == S_IFDIR ? .directory : .other
}

/// The whole of a (small) file decoded as UTF-8, invalid bytes repaired;
/// nil when it cannot be opened or read.
func readTextFile(atPath path: String) -> String? {
    let descriptor = open(path, O_RDONLY | O_CLOEXEC)
    guard descriptor >= 0 else { return nil }
    defer { close(descriptor) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 16 * 1024)
    while true {
        let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
        if count > 0 {
            bytes.append(contentsOf: chunk[..<count])
        } else if count == 0 {
            return String(decoding: bytes, as: UTF8.self)
        } else if errno != EINTR {
            return nil
        }
    }
}

/// `path` with every symlink resolved (`realpath(3)`), or `path` itself when
/// it cannot be resolved.
func resolvingSymlinks(_ path: String) -> String {
    guard let resolved = realpath(path, nil) else { return path }
    defer { free(resolved) }
    return String(cString: resolved)
}

/// The names in directory `path` (without "." and ".."), or nil when it
/// cannot be listed.
func directoryEntries(atPath path: String) -> [String]? {
    guard let directory = opendir(path) else { return nil }
    defer { closedir(directory) }
    var names: [String] = []
    while let entry = readdir(directory) {
        let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
            String(cString: raw.baseAddress!.assumingMemoryBound(to: CChar.self))
        }
        if name != "." && name != ".." { names.append(name) }
    }
    return names
}
