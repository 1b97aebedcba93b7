// SPDX-License-Identifier: Apache-2.0
import GLibSupport
import UserActivityCore

/// One continuation on its way: from the Continue call to its reply.
///
/// Nothing here waits: every step that involves an app (the owner's
/// SaveActivity, launching, the target's answer) is an asynchronous call or
/// a registration that resumes the continuation later, and a GLib timer
/// bounds the whole delivery. Whatever happens first (answer, failure,
/// timer, the caller leaving) finishes it; later events find it finished and
/// are ignored.
final class PendingContinuation {
    enum Stage: Equatable {
        /// Waiting for the live origin's owner to answer SaveActivity.
        case refreshingOrigin
        /// The target was chosen; nothing sent yet.
        case planned
        /// The app was launched; waiting for it to register a handler.
        case awaitingHandler
        /// Handler.ContinueActivity or ActivateAction is in flight.
        case delivering
        case finished
    }

    let serial: UInt64
    let invocation: Invocation
    /// The Continue method, for messages (`ContinueActivity`, `Activity.Continue`, …).
    let method: String
    var payload: ContinuationPayload
    /// The live origin (`Activity.Continue` only): NeedsSave, `Continued` and streams refer to it.
    let originID: String?
    let options: ContinuationOptions
    var stage: Stage = .planned
    /// The app chosen to continue it.
    var app: String?
    /// The continuation-token put in the platform data, if any.
    var token: String?
    /// When delivery must have succeeded (Unix µs, the service clock).
    var deadline: Int64 = 0
    /// Fires at ``deadline``.
    var timer: ScheduledWork?

    /// Whom it counts against in the continuation limits.
    let accounted: AccountedCaller

    init(serial: UInt64, invocation: Invocation, method: String, payload: ContinuationPayload,
         originID: String?, options: ContinuationOptions, accounted: AccountedCaller) {
        self.serial = serial
        self.accounted = accounted
        self.invocation = invocation
        self.method = method
        self.payload = payload
        self.originID = originID
        self.options = options
    }

    var isFinished: Bool { stage == .finished }

    /// For log lines.
    var summary: String {
        "#\(serial) \(method) \(payload.activityType)\(app.map { " → \($0)" } ?? "")"
    }
}

/// The caller a continuation counts against: its connection, and its app
/// when that is sandboxed (nil for an unconfined caller).
struct AccountedCaller: Equatable {
    var connection: String
    var confinedApp: String?
}
