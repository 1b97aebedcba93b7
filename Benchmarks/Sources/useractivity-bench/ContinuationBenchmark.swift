// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TypedValues

/// `ContinueActivity` delivered to a running handler: two hops (client →
/// daemon → app → daemon → client), so its target is 2.5× Ping.
///
/// The handler is a second connection of the bench, serviced on a thread of
/// its own, that registers as the bench app and answers `true` at once.
final class ContinueActivityBenchmark: Benchmark, @unchecked Sendable {
    static let handlerPath = "/com/example/Bench/Handler"
    private var handler: Connection?
    private var thread: Thread?
    private let stopping = NSLock()
    private var stopRequested = false
    private var delivered = 0

    func setUp(_ session: BenchSession) throws {
        let connection = try Connection.bus(address: session.bus.address)
        let register = Message.methodCall(destination: Service.busName, path: Service.managerPath,
                                          interface: Service.managerInterface, member: "RegisterApplication")
        try register.append([.string(Fixture.appID)])
        _ = try connection.call(register)
        let handlerRegistration = Message.methodCall(destination: Service.busName, path: Service.managerPath,
                                                     interface: Service.managerInterface, member: "RegisterHandler")
        try handlerRegistration.append([.objectPath(Self.handlerPath)])
        _ = try connection.call(handlerRegistration)
        try connection.addFilter { [unowned self, unowned connection] message in
            guard message.kind == .methodCall, message.path == Self.handlerPath,
                  message.interface == Service.handlerInterface else { return false }
            if message.member == "ContinueActivity" {
                delivered += 1
                if let reply = try? Message.methodReturn(to: message, [.boolean(true)]) { connection.send(reply) }
            } else if let reply = try? Message.methodReturn(to: message) {
                connection.send(reply)
            }
            return true
        }
        handler = connection
        let thread = Thread { [unowned self] in
            while !stopping.withLock({ stopRequested }) {
                connection.readWriteDispatch(timeoutMilliseconds: 50)
            }
        }
        self.thread = thread
        thread.start()
    }

    func sample(_ session: BenchSession) throws -> UInt64 {
        let message = try session.message(Service.managerPath, Service.managerInterface, "ContinueActivity", [
            .string(Fixture.activityType),
            .stringVariantDictionary([("app-id", .string(Fixture.appID)), ("title", .string("Quarterly report")),
                                      ("user-info", .stringVariantDictionary([("page", .uint32(3))]))]),
            .stringVariantDictionary([]),
        ])
        let (nanoseconds, reply) = try session.timedCall(message)
        guard try reply.arguments().first?.stringValue == Fixture.appID else {
            throw BenchError("ContinueActivity answered \(try reply.arguments()) instead of \(Fixture.appID)")
        }
        return nanoseconds
    }

    func tearDown(_ session: BenchSession) throws {
        stopping.withLock { stopRequested = true }
        while thread?.isFinished == false { usleep(1000) }
        handler?.close()
    }

    var facts: [(String, String)] {
        [("handler", "a second connection of the bench, registered for \(Fixture.appID), answering true at once"),
         ("delivered", "\(delivered) Handler.ContinueActivity calls answered")]
    }
}
