// SPDX-License-Identifier: Apache-2.0

/// Which connections asked for the activity signals, and for which.
///
/// The signals are unicast copies (match rules do not choose them), so the
/// service itself keeps who listens: a connection that only acts
/// (`CreateActivity`, `Update`, `BecomeCurrent`, `Donate`, `Search`, …) is
/// in none of these sets and is sent nothing. Whether a listener may read a
/// signal is decided apart, by its identity (``CallerTracker/readers(of:_:)``).
struct SignalSubscriptions {
    /// What a signal is about.
    enum Topic {
        /// An activity: `InterfacesAdded`/`InterfacesRemoved` of it, its
        /// `PropertiesChanged` and `Continued`.
        case activity(String)
        /// The manager's properties (`CurrentActivity`, the privacy controls).
        case managerProperties
        /// The manager's `SavedActivitiesChanged`: only connections that
        /// follow everything (GetManagedObjects, `Subscribe`).
        case savedActivities
    }

    /// Connections that follow everything they may read: they called
    /// `GetManagedObjects` or `Subscribe`.
    private var everything: Set<String> = []
    /// Connections that read the manager's properties (`Properties.Get`/`GetAll`).
    private var managerProperties: Set<String> = []
    /// Activity ID → the connections that read its properties.
    private var activityReaders: [String: Set<String>] = [:]
    /// Connection → the activities whose properties it read, to forget it at once.
    private var activitiesRead: [String: Set<String>] = [:]

    var isEmpty: Bool { everything.isEmpty && managerProperties.isEmpty && activityReaders.isEmpty }

    mutating func subscribeToEverything(_ connection: String) { everything.insert(connection) }
    mutating func subscribeToManagerProperties(_ connection: String) { managerProperties.insert(connection) }

    mutating func subscribe(_ connection: String, toActivity id: String) {
        activityReaders[id, default: []].insert(connection)
        activitiesRead[connection, default: []].insert(id)
    }

    /// `Unsubscribe`, or the connection left the bus: it is sent nothing more.
    mutating func unsubscribe(_ connection: String) {
        everything.remove(connection)
        managerProperties.remove(connection)
        for id in activitiesRead.removeValue(forKey: connection) ?? [] {
            activityReaders[id]?.remove(connection)
            if activityReaders[id]?.isEmpty == true { activityReaders[id] = nil }
        }
    }

    /// The activity left the bus (after its `InterfacesRemoved` was sent).
    mutating func activityRemoved(_ id: String) {
        for connection in activityReaders.removeValue(forKey: id) ?? [] {
            activitiesRead[connection]?.remove(id)
            if activitiesRead[connection]?.isEmpty == true { activitiesRead[connection] = nil }
        }
    }

    /// Every connection that asked for signals about `topic`.
    func listeners(of topic: Topic) -> Set<String> {
        switch topic {
        case .savedActivities:
            return everything
        case .managerProperties:
            return managerProperties.isEmpty ? everything : everything.union(managerProperties)
        case .activity(let id):
            guard let readers = activityReaders[id] else { return everything }
            return everything.union(readers)
        }
    }
}
