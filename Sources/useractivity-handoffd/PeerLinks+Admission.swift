// SPDX-License-Identifier: Apache-2.0
import HandoffCore

/// Which incoming connections are taken while they authenticate: the
/// policy is ``ConnectionAdmission``; here it meets the links.
extension PeerLinks {
    /// Whether a new connection from `address` is taken, after closing the
    /// waiting connection the policy gives its slot to, if any.
    func admit(connectionFrom address: String) -> Bool {
        let waiting = links.filter { $0.role == .server && !$0.helloReceived && !$0.isClosed }
        let group = ConnectionAdmission.group(ofHost: hostPart(of: address))
        let decision = admission.decide(
            group: group,
            waiting: waiting.map { .init(id: $0.serial, group: $0.admissionGroup, since: Int64($0.serial)) },
            preferred: pairedDeviceGroups)
        switch decision {
        case .admit:
            return true
        case .admitEvicting(let id, let reason):
            noteAdmissionPressure("closing the oldest: \(reason)")
            waiting.first { $0.serial == id }?.close(reason: "its slot went to a newer connection (\(reason))")
            return true
        case .refuse(let reason):
            noteAdmissionPressure("refusing new connections: \(reason)")
            return false
        }
    }

    /// A stranger's ClientHello is there: its handshake starts, in place of
    /// the oldest running one when all slots are taken.
    func handshakeSlot(for link: PeerLink) {
        let running = links.filter { $0.role == .server && $0.handshakeStartedAt != nil && !$0.isHandshakeDone && !$0.isClosed }
        let waiting = running.map {
            ConnectionAdmission.Waiting(id: $0.serial, group: $0.admissionGroup, since: Int64($0.handshakeStartedAt ?? 0))
        }
        if let id = ConnectionAdmission.handshakeToStop(running: waiting, preferred: pairedDeviceGroups) {
            noteAdmissionPressure("stopping the oldest handshake: \(running.count) are running")
            running.first { $0.serial == id }?.close(reason: "its handshake stopped for a newer one")
        }
        handshakesStarted += 1
        link.handshakeStartedAt = handshakesStarted
        link.startServerHandshake()
    }

    /// Where paired devices were last seen: their connections are closed last to make room.
    var pairedDeviceGroups: Set<String> {
        var groups = Set<String>()
        for device in context.devices.values where device.paired {
            if !device.address.isEmpty { groups.insert(ConnectionAdmission.group(ofHost: hostPart(of: device.address))) }
            if let link = device.link { groups.insert(link.admissionGroup) }
        }
        return groups
    }

    /// One log line per ten seconds of refusals and evictions, not one per connection.
    func noteAdmissionPressure(_ what: String) {
        refusedSinceLog += 1
        guard context.now >= refusalLogAllowedAt else { return }
        context.log.warning("\(what) (\(refusedSinceLog) connection\(refusedSinceLog == 1 ? "" : "s") refused or closed for room)")
        refusedSinceLog = 0
        refusalLogAllowedAt = context.now + 10_000_000
    }
}
