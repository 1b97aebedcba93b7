// SPDX-License-Identifier: Apache-2.0
import TypedValues

/// The `options` of every Continue method (`ContinueActivity`,
/// `ContinueSavedActivity`, `Activity.Continue`).
///
/// | key | type | meaning |
/// |---|---|---|
/// | `target-app-id` | s | choose this app among the candidates |
/// | `timeout-ms` | u | how long delivery may take; 0 or absent: 10 000; at most 600 000 |
/// | `activation-token` | s | passed on in platform data (and as `XDG_ACTIVATION_TOKEN` to a launched app) |
/// | `desktop-startup-id` | s | passed on in platform data (and as `DESKTOP_STARTUP_ID` to a launched app) |
/// | `stream-relay` | o | `ContinueActivity` from unconfined callers only: the activity's origin is on another device, and a continuation stream the receiving app opens goes to `ContinuationStreamOpened` at this path on the caller's connection (useractivity-handoffd relays it) |
///
/// Unknown keys and wrong types are `InvalidArgument`, as for every other
/// options argument.
public struct ContinuationOptions: Sendable, Equatable {
    /// The spec's default for `timeout-ms`.
    public static let defaultTimeoutMilliseconds: UInt32 = 10_000
    /// Longer requests are clamped: a continuation holds state in the service
    /// until it ends, so it must end in bounded time.
    public static let maximumTimeoutMilliseconds: UInt32 = 600_000

    /// `target-app-id`: the candidate to choose; nil lets the documented order decide.
    public var targetAppID: String?
    /// `timeout-ms`, after defaulting and clamping.
    public var timeoutMilliseconds: UInt32 = defaultTimeoutMilliseconds
    /// `activation-token`, passed on unchanged.
    public var activationToken: String?
    /// `desktop-startup-id`, passed on unchanged.
    public var desktopStartupID: String?
    /// `stream-relay`: where the stream of an origin on another device goes.
    public var streamRelay: String?

    /// The defaults: no target, 10 s, no tokens.
    public init() {}

    /// Parses an options `a{sv}`; `method` names the call in error messages.
    public static func parse(_ entries: [(String, TypedValue)], method: String) throws(UserActivityError) -> ContinuationOptions {
        let reader = try OptionsReader(entries, method: method, known: [
            "target-app-id": "s", "timeout-ms": "u", "activation-token": "s", "desktop-startup-id": "s", "stream-relay": "o",
        ])
        var options = ContinuationOptions()
        if let target = reader["target-app-id"]?.stringValue {
            try AppIDName.validate(target, as: "target-app-id option")
            options.targetAppID = target
        }
        options.timeoutMilliseconds = UInt32(clamp(reader["timeout-ms"]?.uint32Value,
                                                   default: Int(defaultTimeoutMilliseconds),
                                                   maximum: Int(maximumTimeoutMilliseconds)))
        options.activationToken = reader["activation-token"]?.stringValue
        options.desktopStartupID = reader["desktop-startup-id"]?.stringValue
        if let relay = reader["stream-relay"]?.objectPathValue {
            // Only an activity from outside has no live origin here to stream with.
            guard method == "ContinueActivity" else {
                throw .invalidArgument("option 'stream-relay' is for ContinueActivity only, not \(method)")
            }
            options.streamRelay = relay
        }
        return options
    }

    /// The platform-data entries these options contribute (only those given),
    /// in the spec's key names; GTK reads `activation-token`, else
    /// `desktop-startup-id`.
    public var platformData: [(String, TypedValue)] {
        var entries: [(String, TypedValue)] = []
        if let activationToken { entries.append(("activation-token", .string(activationToken))) }
        if let desktopStartupID { entries.append(("desktop-startup-id", .string(desktopStartupID))) }
        return entries
    }
}
