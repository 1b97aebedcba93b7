// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity

/// The client library's side of the forged-reply problem: its calls go to
/// the service's well-known name, so the sender of a reply cannot be checked
/// against the destination; the library checks it against the name's owner.
@Suite("Replies the client library accepts")
struct LibraryForgeryTests {
    /// Calls a stand-in service keeps unanswered; replies a watcher saw.
    private final class Recorder: @unchecked Sendable {
        private let lock = NSLock()
        private var calls: [Message] = []
        private var strayReplies = 0
        private var stopped = false
        private var answer: String?

        func hold(_ message: Message) { lock.withLock { calls.append(message) } }
        func stray() { lock.withLock { strayReplies += 1 } }
        var held: [Message] { lock.withLock { calls } }
        var strays: Int { lock.withLock { strayReplies } }
        var isStopped: Bool { lock.withLock { stopped } }
        func stop() { lock.withLock { stopped = true } }
        func finish(_ value: String) { lock.withLock { answer = value } }
        var result: String? { lock.withLock { answer } }
    }

    @Test("A reply forged by another connection does not answer the library's call to the service")
    func forgedReplyToTheLibrary() throws {
        let session = try SessionEnvironment()
        let bus = try PrivateBus(environment: session)
        defer { bus.stop() }
        // A stand-in that owns the service's name and holds every call.
        let service = try Connection.bus(address: bus.address)
        #expect(try service.requestName(UA.busName) == .primaryOwner)
        let recorder = Recorder()
        try service.addFilter { message in
            guard message.kind == .methodCall else { return false }
            recorder.hold(message)
            return true
        }
        let pump = Thread { while !recorder.isStopped { service.readWriteDispatch(timeoutMilliseconds: 20) } }
        pump.start()
        defer { recorder.stop(); while !pump.isFinished { usleep(1000) } }

        let client = try UserActivityClient(address: bus.address)
        defer { client.close() }
        // What serviceVersion() does, driven from the library's own loop thread
        // rather than a task: a test must not wait on the cooperative threads
        // that the other tests' blocking waits may hold.
        _ = client.runner.enqueue {
            client.callOnLoop(interface: "org.freedesktop.DBus.Properties", "Get",
                              [.string(UserActivityClient.managerInterface), .string("Version")]) { result in
                recorder.finish((try? result.get())?.first?.unwrappedVariant.stringValue ?? "(failed: \(result))")
            }
        }
        let call = try #require(waitUntil(timeout: 10) { !recorder.held.isEmpty } ? recorder.held.first : nil,
                                "the library's call did not reach the stand-in")
        #expect(call.member == "Get")

        // Positive control: this bus delivers an unrequested reply from another connection.
        let rogue = try RawBusConnection(address: bus.address)
        let watcher = try Connection.bus(address: bus.address)
        try watcher.addFilter { message in
            if message.kind == .methodReturn, message.sender == rogue.uniqueName { recorder.stray() }
            return false
        }
        _ = try rogue.send(.methodReturn, destination: watcher.uniqueName, path: nil, interface: nil, member: nil,
                           replySerial: 4242, values: [.variant(.string("stray"))])
        #expect(waitUntil(timeout: 30) {
            watcher.readWriteDispatch(timeoutMilliseconds: 20)
            return recorder.strays == 1
        }, "an unrequested reply from another connection reached a client")

        // The forgery: the library's serial, a version of the rogue's choosing.
        _ = try rogue.send(.methodReturn, destination: try #require(call.sender), path: nil, interface: nil, member: nil,
                           replySerial: call.serial, values: [.variant(.string("6.6.6-forged"))])
        Thread.sleep(forTimeInterval: 0.5)
        #expect(recorder.result == nil, "the forged reply answered the library: \(recorder.result ?? "")")

        // The owner of the name answers.
        service.send(try Message.methodReturn(to: call, [.variant(.string("0.1.0-genuine"))]))
        #expect(waitUntil(timeout: 30) { recorder.result != nil })
        #expect(recorder.result == "0.1.0-genuine")
    }
}
