// SPDX-License-Identifier: Apache-2.0
import CSQLite

/// A failure of the saved-activity store: which call failed, SQLite's result
/// code and SQLite's own message.
///
/// Every failing SQLite call goes through one helper that builds this value,
/// so a log line always says where it broke (`sqlite3_step`, `sqlite3_prepare_v2`,
/// `mkdir`, …) and why; the service answers any of them with `StorageFailed`
/// and this description. ``isDiskFull`` and ``isReadOnly`` classify it.
public struct StoreError: Error, CustomStringConvertible, Sendable, Equatable {
    /// The C function (or store operation) that failed, e.g. `sqlite3_step`.
    public let function: String
    /// The SQLite extended result code (`SQLITE_FULL`, `SQLITE_IOERR_WRITE`, …).
    /// Failures outside SQLite (creating the directory, decoding a stored value)
    /// are given the nearest SQLite code (`SQLITE_CANTOPEN`, `SQLITE_FULL`,
    /// `SQLITE_CORRUPT`, …) so that callers have one classification to check.
    public let code: Int32
    /// SQLite's `sqlite3_errmsg`, or the system's message for non-SQLite failures.
    public let message: String

    public init(function: String, code: Int32, message: String) {
        self.function = function
        self.code = code
        self.message = message
    }

    /// The primary result code (the low byte of the extended code).
    public var primaryCode: Int32 { code & 0xFF }

    /// The disk (or quota) is full: nothing was written; retrying after space
    /// was freed can succeed.
    public var isDiskFull: Bool { primaryCode == SQLITE_FULL }

    /// The database cannot be written or opened for writing (read-only file
    /// system or file, missing permission, or the file cannot be opened).
    public var isReadOnly: Bool {
        [SQLITE_READONLY, SQLITE_CANTOPEN, SQLITE_PERM, SQLITE_AUTH].contains(primaryCode)
    }

    /// Another connection (another process: a second daemon during a
    /// restart, a person's `sqlite3` shell inside a transaction) holds the
    /// lock this needed, longer than ``ActivityStore/lockWaitMilliseconds``:
    /// nothing was written; the same call can succeed once it lets go.
    public var isLockedByAnotherConnection: Bool { primaryCode == SQLITE_BUSY }

    public var description: String {
        let name = String(cString: sqlite3_errstr(code))
        return "\(function) failed: \(message) (SQLite result code \(code), \(name))"
    }
}
