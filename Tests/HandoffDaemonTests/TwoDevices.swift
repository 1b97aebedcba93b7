// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import GLibSupport
import HandoffCore
import Logging
import SchedulerTestSupport
import TestSupport
import TypedValues
@testable import useractivity_handoffd

/// One device's handoffd parts in the test process: a ``HandoffContext`` on
/// its own connection to the test's private bus, its identity in a
/// temporary state directory, ``Pairing`` and ``PeerLinks`` listening on
/// 127.0.0.1, and what the links hand on recorded instead of an
/// ``ActivityExchange``.
final class DeviceUnderTest {
    let context: HandoffContext
    let pairing: Pairing
    let links: PeerLinks
    let stateDirectory: TemporaryDirectory
    /// The frames handed to the exchange, with the device each came from.
    var routedFrames: [(kind: FrameKind, from: String)] = []
    /// The links reported closed, with the reason.
    var closedLinks: [String] = []

    init(name: String, bus: Connection, loop: MainLoop, scheduler: ManualScheduler, environment: [String: String]) throws {
        stateDirectory = try TemporaryDirectory(prefix: "uah-")
        let directory = StateDirectory(path: stateDirectory.appending("handoff"))
        try directory.create()
        context = try HandoffContext(bus: bus, loop: loop, log: Logger(label: "test-\(name)"), scheduler: scheduler,
                                     directory: directory, environment: environment)
        context.state.deviceName = name
        context.state.enabled = true
        let identity = try IdentityStore.loadOrCreate(in: directory, expectedID: "", name: name)
        context.identity = identity
        context.state.deviceID = identity.deviceID
        pairing = Pairing(context: context)
        links = PeerLinks(context: context, pairing: pairing, listen: "127.0.0.1:0")
        links.routes.activityFrame = { [unowned self] frame, link in routedFrames.append((frame.kind, link.peerDeviceID)) }
        links.routes.linkClosed = { [unowned self] _, reason in closedLinks.append(reason) }
        try links.start(identity: identity)
    }

    var id: String { context.identity?.deviceID ?? "" }
    var address: String { "127.0.0.1:\(links.boundPort)" }

    /// The device object for `other`, if this device has one.
    func device(_ other: DeviceUnderTest) -> DeviceObject? { context.devices[other.id] }

    func stop() {
        links.stop(reason: "the test ended")
    }
}

/// An Agent on the bus (`RequestConfirmation`, `Cancel`) whose answer the test chooses.
final class TestAgent {
    enum Answer { case accept, refuse, never }
    let connection: Connection
    let path = "/org/example/TestAgent"
    var answer: Answer
    /// The codes it was asked to confirm.
    var codes: [String] = []
    var cancelled = 0
    /// Calls held unanswered (``Answer/never``).
    private var held: [Message] = []

    init(address: String, loop: MainLoop, answer: Answer) throws {
        connection = try Connection.bus(address: address)
        try DBusMainLoopBridge.attach(connection, to: loop)
        self.answer = answer
        try connection.registerFallback(path: path) { [unowned self] message in
            switch message.member {
            case "RequestConfirmation":
                codes.append((try? message.arguments())?.dropFirst().first?.stringValue ?? "")
                switch self.answer {
                case .accept: if let reply = try? Message.methodReturn(to: message) { _ = connection.send(reply) }
                case .refuse: _ = connection.send(Message.error(to: message, name: "org.example.UserActivity.Handoff.Error.PairingRefused", message: "no"))
                case .never: held.append(message)
                }
            case "Cancel": cancelled += 1
            default: break
            }
            return true
        }
    }
}

/// Two devices on one private bus and one GLib context (this thread's, for
/// the test), linked over 127.0.0.1; time is a ``ManualScheduler``.
final class TwoDevices {
    let session: SessionEnvironment
    let bus: PrivateBus
    let loop: MainLoop
    let scheduler = ManualScheduler(now: 1_800_000_000_000_000)
    /// The listener, discoverable unless the test says otherwise.
    var a: DeviceUnderTest!
    /// The one that dials `a`.
    var b: DeviceUnderTest!
    private var connections: [Connection] = []
    /// The agents, kept for the test's length (one that goes away answers every call it holds with an error).
    private var agents: [TestAgent] = []

    private init(loop: MainLoop) throws {
        session = try SessionEnvironment(prefix: "uhd-")
        bus = try PrivateBus(environment: session)
        self.loop = loop
    }

    /// Runs `body` with two devices whose GIO work runs on this thread's loop.
    static func run(_ body: (TwoDevices) throws -> Void) throws {
        let loop = MainLoop.withNewContext()
        try loop.withThreadDefault {
            let devices = try TwoDevices(loop: loop)
            defer { devices.stop() }
            devices.a = try devices.device("Desk")
            devices.b = try devices.device("Laptop")
            try body(devices)
        }
    }

    private func device(_ name: String) throws -> DeviceUnderTest {
        let connection = try Connection.bus(address: bus.address)
        try DBusMainLoopBridge.attach(connection, to: loop)
        connections.append(connection)
        return try DeviceUnderTest(name: name, bus: connection, loop: loop, scheduler: scheduler, environment: session.environment)
    }

    func agent(answering answer: TestAgent.Answer, for device: DeviceUnderTest) throws -> TestAgent {
        let agent = try TestAgent(address: bus.address, loop: loop, answer: answer)
        device.pairing.registerAgent(sender: agent.connection.uniqueName, path: agent.path)
        agents.append(agent)
        return agent
    }

    /// Turns the loop until `condition` holds (true) or 30 s pass (false).
    @discardableResult
    func spin(until condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(30)
        while !condition() {
            if Date() > deadline { return false }
            if !loop.iterate(mayBlock: false) { usleep(2000) }
        }
        return true
    }

    /// `b` dials `a` (which is discoverable) and both see the other's hello.
    func meet() -> Bool {
        a.context.discoverableWindow.set(true, now: scheduler.monotonic)
        b.links.dial(a.address)
        return spin { a.device(b)?.reachable == true && b.device(a)?.reachable == true }
    }

    /// `a` and `b` meet and are paired both ways (as a finished pairing leaves them).
    func meetPaired() -> Bool {
        guard meet() else { return false }
        for (side, other) in [(a!, b!), (b!, a!)] {
            side.device(other)?.paired = true
            side.device(other)?.link?.isPaired = true
        }
        return true
    }

    func stop() {
        a?.stop()
        b?.stop()
        // Let the closes run before the bus goes.
        for _ in 0..<50 { _ = loop.iterate(mayBlock: false) }
        bus.stop()
    }
}
