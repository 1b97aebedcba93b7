// SPDX-License-Identifier: Apache-2.0
import CSQLite
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// The few file-system calls the store needs, without Foundation.
enum FileSystem {
    /// A system-call failure as a ``StoreError``, classified like SQLite's
    /// (ENOSPC → full, EROFS/EACCES → read-only) so callers check one set of flags.
    static func error(_ function: String, _ path: String, errno code: Int32) -> StoreError {
        let sqliteCode: Int32
        switch code {
        case ENOSPC, EDQUOT: sqliteCode = SQLITE_FULL
        case EROFS: sqliteCode = SQLITE_READONLY
        case EACCES, EPERM: sqliteCode = SQLITE_PERM
        default: sqliteCode = SQLITE_CANTOPEN
        }
        return StoreError(function: function, code: sqliteCode,
                          message: "\(path): " + String(cString: strerror(code)))
    }

    /// `mkdir -p` where every directory it creates gets exactly `mode`
    /// (chmod after mkdir, so the umask cannot loosen or break it).
    /// Directories that already exist are left as they are.
    static func makeDirectories(_ path: String, mode: mode_t) throws(StoreError) {
        guard !path.isEmpty else { throw error("mkdir", path, errno: ENOENT) }
        var prefix = path.hasPrefix("/") ? "/" : ""
        for component in path.split(separator: "/", omittingEmptySubsequences: true) {
            prefix += (prefix.isEmpty || prefix.hasSuffix("/") ? "" : "/") + component
            if mkdir(prefix, mode) == 0 {
                guard chmod(prefix, mode) == 0 else { throw error("chmod", prefix, errno: errno) }
                continue
            }
            let mkdirErrno = errno
            var info = stat()
            guard stat(prefix, &info) == 0 else { throw error("mkdir", prefix, errno: mkdirErrno) }
            guard (info.st_mode & S_IFMT) == S_IFDIR else { throw error("mkdir", prefix, errno: ENOTDIR) }
        }
    }

    /// Creates the file if needed and sets its mode, before SQLite opens it:
    /// SQLite would create it with 0644 & ~umask, and gives its `-wal` and
    /// `-shm` files the database file's mode.
    static func createPrivateFile(_ path: String, mode: mode_t) throws(StoreError) {
        let fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, mode)
        guard fd >= 0 else { throw error("open", path, errno: errno) }
        defer { close(fd) }
        guard fchmod(fd, mode) == 0 else { throw error("fchmod", path, errno: errno) }
    }
}
