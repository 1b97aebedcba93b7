// SPDX-License-Identifier: Apache-2.0
import UserActivityCore

/// What a handler changed, handed to the one step that carries out the
/// effects after it (``UserActivityService/finish(_:_:reply:)``): saved
/// copies to write, the reply, signals and timers. Handlers themselves only
/// decode, call the core and say what changed.
struct Changes {
    /// What the registry reported, in order.
    var events: [RegistryEvent]
    /// Saved activities were written (a donation): the earliest expiration may be another.
    var savedActivitiesChanged: Bool

    init(_ events: [RegistryEvent] = [], savedActivitiesChanged: Bool = false) {
        self.events = events
        self.savedActivitiesChanged = savedActivitiesChanged
    }
}
