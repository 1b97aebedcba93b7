// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing
import UserActivityInterfaces
@testable import useractivity_handoffd

/// ``Pairing`` in the test process: two linked devices, each person answering
/// through an Agent on the bus (or not at all), the clock moved by hand.
/// `b` asks (a person's `Device.Pair` there); `a` is discoverable and is asked.
@Suite(.serialized) struct PairingTests {
    /// What `Device.Pair` was answered with.
    final class Outcome {
        var result: Result<DeviceChanges, HandoffError>?
        var errorName: String? {
            if case .failure(let error)? = result { return error.name }
            return nil
        }
    }

    private func pair(_ devices: TwoDevices) throws -> Outcome {
        let outcome = Outcome()
        let device = try #require(devices.b.device(devices.a))
        devices.b.pairing.start(device) { outcome.result = $0 }
        return outcome
    }

    @Test func bothPeopleConfirmTheSameCodeAndBothArePaired() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            #expect(devices.meet())
            let agentA = try devices.agent(answering: .accept, for: a)
            let agentB = try devices.agent(answering: .accept, for: b)
            let outcome = try pair(devices)
            #expect(devices.spin { outcome.result != nil && a.device(b)?.paired == true })
            guard case .success(let changes)? = outcome.result else { Issue.record("Pair failed: \(String(describing: outcome.result))"); return }
            #expect(changes.changed == [.paired])
            #expect(b.device(a)?.paired == true)
            #expect(agentA.codes.count == 1 && agentA.codes == agentB.codes)
            #expect(agentA.codes.first?.count == 6)
            #expect(a.context.state.devices[b.id]?.paired == true && b.context.state.devices[a.id]?.paired == true)
            #expect(a.pairing.peer == nil && b.pairing.peer == nil)
        }
    }

    @Test func theOtherPersonRefusingIsPairingRefused() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            #expect(devices.meet())
            let agentA = try devices.agent(answering: .refuse, for: a)
            _ = try devices.agent(answering: .accept, for: b)
            let outcome = try pair(devices)
            #expect(devices.spin { outcome.result != nil })
            #expect(agentA.codes.count == 1)
            #expect(outcome.errorName == HandoffInterfaces.errorPrefix + "PairingRefused")
            #expect(a.device(b)?.paired == false && b.device(a)?.paired == false)
        }
    }

    @Test func nobodyToAskIsNoAgent() throws {
        try TwoDevices.run { devices in
            #expect(devices.meet())
            let outcome = try pair(devices)
            #expect(outcome.errorName == HandoffInterfaces.errorPrefix + "NoAgent")
            #expect(devices.b.pairing.peer == nil)
        }
    }

    @Test func theDeviceGoingAwayDuringPairIsConnectionUnavailable() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            #expect(devices.meet())
            let agentA = try devices.agent(answering: .never, for: a)
            _ = try devices.agent(answering: .never, for: b)
            let outcome = try pair(devices)
            #expect(devices.spin { agentA.codes.count == 1 })
            a.device(b)?.link?.close(reason: "the test closed it")
            #expect(devices.spin { outcome.result != nil })
            #expect(outcome.errorName == HandoffInterfaces.errorPrefix + "ConnectionUnavailable")
        }
    }

    @Test func nobodyAnsweringInTimeIsRefusedAndTheAgentsAreCancelled() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            #expect(devices.meet())
            let agentA = try devices.agent(answering: .never, for: a)
            let agentB = try devices.agent(answering: .never, for: b)
            let outcome = try pair(devices)
            #expect(devices.spin { agentA.codes.count == 1 && agentB.codes.count == 1 })
            let deadline = try #require(b.pairing.deadline)
            b.pairing.expire(now: deadline - 1)
            #expect(outcome.result == nil)
            devices.scheduler.advance(byMilliseconds: (deadline - devices.scheduler.monotonic) / 1000)
            b.pairing.expire(now: devices.scheduler.monotonic)
            #expect(outcome.errorName == HandoffInterfaces.errorPrefix + "PairingRefused")
            // b's person is told it is over, and so (through pair-cancel) is a's.
            #expect(devices.spin { agentB.cancelled == 1 && agentA.cancelled == 1 })
            #expect(devices.spin { a.pairing.peer == nil })
        }
    }

    @Test func unpairingTellsTheOtherDevice() throws {
        try TwoDevices.run { devices in
            let (a, b) = (devices.a!, devices.b!)
            #expect(devices.meet())
            _ = try devices.agent(answering: .accept, for: a)
            _ = try devices.agent(answering: .accept, for: b)
            let outcome = try pair(devices)
            #expect(devices.spin { outcome.result != nil && a.device(b)?.paired == true })
            let device = try #require(b.device(a))
            #expect(b.pairing.unpair(device) == [.paired, .currentActivity])
            #expect(!device.paired && b.context.state.devices[a.id] == nil)
            #expect(devices.spin { a.device(b)?.paired != true })
            #expect(a.context.state.devices[b.id]?.paired != true)
        }
    }
}
