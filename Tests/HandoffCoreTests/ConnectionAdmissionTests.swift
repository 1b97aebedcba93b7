// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing

@Suite struct ConnectionAdmissionTests {
    let admission = ConnectionAdmission(limits: .init(total: 8, perGroup: 3))

    /// Connections from `groups`, oldest first, with ids 1, 2, ….
    func waiting(_ groups: [String]) -> [ConnectionAdmission.Waiting] {
        groups.enumerated().map { .init(id: $0.offset + 1, group: $0.element, since: Int64($0.offset)) }
    }

    func evicted(_ decision: ConnectionAdmission.Decision) -> Int? {
        if case .admitEvicting(let id, _) = decision { return id }
        return nil
    }

    @Test func admitsWhileUnderBothCaps() {
        #expect(admission.decide(group: "10.0.0.1", waiting: []) == .admit)
        #expect(admission.decide(group: "10.0.0.1", waiting: waiting(["10.0.0.1", "10.0.0.1", "10.0.0.2"])) == .admit)
    }

    @Test func aGroupAtItsCapLosesItsOldestConnection() {
        let now = waiting(["10.0.0.2", "10.0.0.1", "10.0.0.1", "10.0.0.1"])
        #expect(evicted(admission.decide(group: "10.0.0.1", waiting: now)) == 2)
    }

    @Test func whenFullTheLargestGroupMakesRoomForASmallerOne() {
        // 3 + 3 + 2: a newcomer from a fourth address takes a slot of the oldest largest group.
        let full = waiting(["10.0.0.2", "10.0.0.1", "10.0.0.1", "10.0.0.2", "10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.3"])
        #expect(evicted(admission.decide(group: "10.0.0.9", waiting: full)) == 1)
        // From an address with 2, still fewer than 3: a slot of a group of 3.
        #expect(evicted(admission.decide(group: "10.0.0.3", waiting: full)) == 1)
    }

    @Test func whenFullANewcomerWhoseGroupHoldsAsManyAsAnyIsRefused() {
        let full = waiting(["a", "b", "c", "d", "a", "b", "c", "d"])
        guard case .refuse(let reason) = admission.decide(group: "a", waiting: full) else {
            Issue.record("expected a refusal")
            return
        }
        #expect(reason.contains("8 connections are still authenticating"))
        // One address with none: admitted, in place of the oldest of those with the most.
        #expect(evicted(admission.decide(group: "e", waiting: full)) == 1)
    }

    @Test func strangersFromManyAddressesCannotKeepAPairedDeviceOut() {
        // Every slot held by a different address, one each: the paired
        // device's address is admitted in place of the oldest stranger, and
        // newer strangers take one another's slots, not the paired device's.
        var connections = waiting((1...8).map { "203.0.113.\($0)" })
        var serial = 8
        func arrive(_ group: String, preferred: Set<String>) -> Bool {
            serial += 1
            switch admission.decide(group: group, waiting: connections, preferred: preferred) {
            case .admit: break
            case .admitEvicting(let id, _): connections.removeAll { $0.id == id }
            case .refuse: return false
            }
            connections.append(.init(id: serial, group: group, since: Int64(serial)))
            return true
        }
        let paired: Set<String> = ["192.0.2.7"]
        #expect(arrive("192.0.2.7", preferred: paired))
        let pairedID = serial
        for index in 0..<100 { #expect(arrive("198.51.100.\(index)", preferred: paired)) }
        #expect(connections.contains { $0.id == pairedID })
        #expect(connections.count == 8)
    }

    @Test func aPairedDevicesAddressMayTakeASlotFromAnEqualGroup() {
        // Not preferred, one slot held like every other group: refused.
        let onlyOnes = waiting(["a", "b", "c", "d", "e", "f", "g", "p"])
        #expect(admission.decide(group: "p", waiting: onlyOnes) == .refuse(reason: "8 connections are still authenticating, 1 of them from p"))
        // Preferred: the other groups are evicted before it, also when they hold no more than it.
        #expect(evicted(admission.decide(group: "p", waiting: onlyOnes, preferred: ["p"])) == 1)
        // And its own connection is not the one a stranger's newcomer takes.
        let oldestIsPaired = waiting(["p", "b", "c", "d", "e", "f", "g", "h"])
        #expect(evicted(admission.decide(group: "z", waiting: oldestIsPaired, preferred: ["p"])) == 2)
    }

    @Test func withEveryHandshakeSlotTakenTheOldestStrangersHandshakeStops() {
        let running = waiting(["a", "p", "b", "c"])
        #expect(ConnectionAdmission.handshakeToStop(running: running, slots: 5) == nil)
        #expect(ConnectionAdmission.handshakeToStop(running: running, slots: 4) == 1)
        let pairedFirst = waiting(["p", "a", "b", "c"])
        #expect(ConnectionAdmission.handshakeToStop(running: pairedFirst, preferred: ["p"], slots: 4) == 2)
        #expect(ConnectionAdmission.handshakeToStop(running: waiting(["p", "p"]), preferred: ["p"], slots: 2) == 1)
    }

    @Test func addressGroups() {
        #expect(ConnectionAdmission.group(ofHost: "192.0.2.1") == "192.0.2.1")
        #expect(ConnectionAdmission.group(ofHost: "::ffff:192.0.2.1") == "192.0.2.1")
        #expect(ConnectionAdmission.group(ofHost: "[2001:db8:1:2:aaaa::1]") == "2001:db8:1:2::/64")
        #expect(ConnectionAdmission.group(ofHost: "2001:db8:1:2:bbbb:cccc:dddd:eeee") == "2001:db8:1:2::/64")
        #expect(ConnectionAdmission.group(ofHost: "fe80::1%eth0") == "fe80:0:0:0::/64")
        #expect(ConnectionAdmission.group(ofHost: "2001:db8::") == "2001:db8:0:0::/64")
        #expect(ConnectionAdmission.group(ofHost: "not:an::address::") == "not:an::address::")
    }

    @Test func acceptPausesDoubleAndStartAgainAfterASuccess() {
        var backoff = AcceptBackoff()
        #expect(backoff.failed() == 250)
        #expect(backoff.failed() == 500)
        #expect(backoff.failed() == 1000)
        #expect(backoff.failed() == 2000)
        #expect(backoff.failed() == 4000)
        #expect(backoff.failed() == 4000)
        #expect(backoff.pauses == 6)
        backoff.succeeded()
        #expect(backoff.failed() == 250)
    }
}
