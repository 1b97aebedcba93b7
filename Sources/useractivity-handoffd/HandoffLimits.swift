// SPDX-License-Identifier: Apache-2.0
import DBusKit
import TypedValues
import UserActivityInterfaces

/// Bounds on what a paired device sends, checked before any of it reaches
/// libdbus, GLib or arithmetic: pairing is trust to share activities, not
/// trust to run code.
enum HandoffLimits {
    /// As for every Continue method (`timeout-ms`, at most 10 minutes).
    static let maximumTimeoutMilliseconds: UInt32 = 600_000
    /// Fetched activities a device may still report on; more (a device that
    /// fetches and never reports) start the count again.
    static let maximumFetchesAwaitingAnswer = 16
    /// Adverts from one device: the first after a quiet spell is shown at
    /// once; those within this interval after it wait, the latest replacing
    /// the one before, and the latest is shown when the interval ends.
    static let advertIntervalMicroseconds: Int64 = 250_000
    /// More adverts than this from one device within ``advertFloodWindowMicroseconds``
    /// (no desktop's current activity changes that often) is a protocol error.
    static let maximumAdvertsPerWindow = 100
    static let advertFloodWindowMicroseconds: Int64 = 10_000_000
    /// An error's text passed on from another device, in UTF-8 bytes (a count of
    /// characters would let combining marks make it as large as a frame).
    static let maximumMessageBytes = 1024
    /// The errors an origin answers a fetch with, passed on by name; any other is HandoffFailed.
    static let originErrors: Set<String> = [
        HandoffInterfaces.ErrorName.handoffFailed,
        ErrorNames.name(for: .userInfoTooLarge),
    ]

    /// What is wrong with a value from another device that is to go on the
    /// bus, or nil: what libdbus would abort on, and descriptors (a number
    /// from the other machine would name one of this process's files).
    static func problem(inPeerValue value: TypedValue) -> String? {
        if containsFileDescriptor(value) { return "a file descriptor" }
        do { try DBusValueCheck.check(value) } catch { return error.message }
        return nil
    }

    private static func containsFileDescriptor(_ value: TypedValue) -> Bool {
        switch value {
        case .unixFD: return true
        case .variant(let inner): return containsFileDescriptor(inner)
        case .structure(let fields), .array(_, let fields): return fields.contains(where: containsFileDescriptor)
        case .dictionary(_, _, let entries): return entries.contains { containsFileDescriptor($0.key) || containsFileDescriptor($0.value) }
        default: return false
        }
    }
}
