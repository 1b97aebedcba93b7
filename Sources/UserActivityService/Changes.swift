// SPDX-License-Identifier: Apache-2.0
import UserActivityCore

/// What a handler changed, handed to the one step that carries out the
/// effects after it (``ServiceContext/finish(_:_:reply:deferringTo:)``):
/// saved copies to write, the reply, signals and timers. Handlers themselves
/// only decode, call the core and say what changed.
struct Changes {
    /// A live activity was continued by an app (here or on another device):
    /// its owner's readers hear `Continued(by)`.
    struct Continued {
        let activityID: String
        /// The activity's app: whose readers may hear about it.
        let ownerApp: String
        let byApp: String
    }

    /// What the registry reported, in order.
    var events: [RegistryEvent]
    /// Saved activities were written (a donation): the earliest expiration may be another.
    var savedActivitiesChanged: Bool
    /// Continuations to announce, after the registry's events.
    var continued: [Continued]

    init(_ events: [RegistryEvent] = [], savedActivitiesChanged: Bool = false, continued: [Continued] = []) {
        self.events = events
        self.savedActivitiesChanged = savedActivitiesChanged
        self.continued = continued
    }
}
