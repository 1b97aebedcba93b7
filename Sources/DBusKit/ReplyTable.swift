// SPDX-License-Identifier: Apache-2.0
import CDBus
#if canImport(Glibc)
import Glibc
#endif

/// The replies ``Connection/callAsync(_:timeoutMilliseconds:acceptingReplyFrom:completion:)``
/// awaits on a connection driven by a main loop, keyed by the call's serial.
///
/// Why not `dbus_connection_send_with_reply`: for every call it builds, up
/// front, the complete error message it would deliver on a timeout, and adds
/// and later removes a libdbus timeout (a main-loop source); that is about
/// 20 000 instructions, as much as reading and validating the call that
/// caused it. Here a call costs a table entry, one filter sees the replies,
/// and one main-loop timer covers the earliest deadline.
final class ReplyTable: @unchecked Sendable {
    private struct Waiting {
        let completion: (Result<Message, DBusFailure>) -> Void
        /// CLOCK_MONOTONIC nanoseconds.
        let deadline: UInt64
        /// Who must send the reply, when that is known from the call: a unique
        /// name or the bus itself (the bus may always answer). Matching on the
        /// serial alone (as libdbus pending calls do) would let any peer
        /// answer in another's place.
        let expectedSender: String?
        /// For a call to a well-known name: whether a sender may answer (the
        /// caller knows the name's owner; asked on the dispatching thread).
        let acceptsSender: ((String) -> Bool)?
    }

    private let lock = ThreadLock()
    private var waiting: [UInt32: Waiting] = [:]
    /// The deadline a main-loop timer is armed for, if any.
    private var armedDeadline: UInt64?
    private let armTimer: (_ milliseconds: Int32, _ fire: @escaping () -> Void) -> Void

    init(armTimer: @escaping (_ milliseconds: Int32, _ fire: @escaping () -> Void) -> Void) {
        self.armTimer = armTimer
    }

    static func monotonicNanoseconds() -> UInt64 {
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        return UInt64(now.tv_sec) * 1_000_000_000 + UInt64(now.tv_nsec)
    }

    /// Sends `message` and files its completion under the serial libdbus
    /// gives it. The lock is held across the send so that a reply dispatched
    /// on another thread cannot look for the entry before it exists.
    func send(_ message: Message, on connection: OpaquePointer, timeoutMilliseconds: Int32,
              acceptingReplyFrom acceptsSender: ((String) -> Bool)?,
              completion: @escaping (Result<Message, DBusFailure>) -> Void) -> Bool {
        let milliseconds = timeoutMilliseconds < 0 ? Int32(25_000) : timeoutMilliseconds
        let deadline = Self.monotonicNanoseconds() + UInt64(milliseconds) * 1_000_000
        // A well-known name's owner is not known here; a unique name answers for itself.
        let expectedSender = message.destination.flatMap { $0.hasPrefix(":") || $0 == Connection.busDriverName ? $0 : nil }
        let (sent, needsTimer) = lock.withLock { () -> (Bool, Bool) in
            var serial: UInt32 = 0
            guard dbus_connection_send(connection, message.pointer, &serial) != 0 else { return (false, false) }
            waiting[serial] = Waiting(completion: completion, deadline: deadline, expectedSender: expectedSender,
                                      acceptsSender: expectedSender == nil ? acceptsSender : nil)
            guard armedDeadline.map({ deadline < $0 }) ?? true else { return (true, false) }
            armedDeadline = deadline
            return (true, true)
        }
        if needsTimer { arm(deadline: deadline, milliseconds: milliseconds) }
        return sent
    }

    private func arm(deadline: UInt64, milliseconds: Int32) {
        armTimer(milliseconds) { [weak self] in self?.deadlinePassed(deadline) }
    }

    /// Completes the call `reply` answers, if it is one of ours and comes
    /// from whom the call went to; anything else is left to other filters.
    func complete(with reply: Message) -> Bool {
        let serial = reply.replySerial
        let sender = dbus_message_get_sender(reply.pointer)
        let check = lock.withLock { () -> ((String) -> Bool)?? in
            guard let entry = waiting[serial] else { return nil }
            // The bus may answer too: it reports a destination that left or
            // never existed (NoReply, ServiceUnknown), and no one can send in its name.
            if let expected = entry.expectedSender {
                guard let sender, expected.withCString({ strcmp($0, sender) == 0 })
                    || Connection.busDriverName.withCString({ strcmp($0, sender) == 0 }) else { return nil }
            }
            return .some(entry.acceptsSender)
        }
        // Asked outside the lock: the check may look at its owner's state.
        guard let check else { return false }
        if let accepts = check {
            guard let sender, accepts(String(cString: sender)) else { return false }
        }
        let entry = lock.withLock { waiting.removeValue(forKey: serial) }
        guard let entry else { return false }
        if reply.kind == .error {
            let text = reply.errorText
            entry.completion(.failure(DBusFailure(name: reply.errorName ?? DBusFailure.failed, message: text)))
        } else {
            entry.completion(.success(reply))
        }
        return true
    }

    /// Fails every call whose deadline has passed, then arms the timer for the next one.
    private func deadlinePassed(_ deadline: UInt64) {
        let now = Self.monotonicNanoseconds()
        let (expired, next) = lock.withLock { () -> ([Waiting], UInt64?) in
            if armedDeadline == deadline { armedDeadline = nil }
            let due = waiting.filter { $0.value.deadline <= now }
            for serial in due.keys { waiting.removeValue(forKey: serial) }
            let earliest = waiting.values.lazy.map(\.deadline).min()
            guard let earliest, armedDeadline.map({ earliest < $0 }) ?? true else { return (Array(due.values), nil) }
            armedDeadline = earliest
            return (Array(due.values), earliest)
        }
        if let next {
            arm(deadline: next, milliseconds: Int32(clamping: (next - min(now, next)) / 1_000_000 + 1))
        }
        for entry in expired {
            entry.completion(.failure(DBusFailure(name: "org.freedesktop.DBus.Error.NoReply",
                message: "no reply within the timeout (the remote application did not answer, or the bus closed the connection)")))
        }
    }

    /// Fails every waiting call: the connection is gone.
    func failAll(_ failure: DBusFailure) {
        let all = lock.withLock { () -> [Waiting] in
            defer { waiting.removeAll() }
            return Array(waiting.values)
        }
        for entry in all { entry.completion(.failure(failure)) }
    }
}
