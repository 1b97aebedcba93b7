// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import GLibSupport
import Logging
import TestSupport
import Testing
import TypedValues
import UserActivityService

/// Start-up must not block the loop on the bus: the owners of the bus's
/// well-known names are learned with calls nobody waits for.
@Suite("Start-up")
struct StartupTests {
    @Test("The service answers calls while it is still learning who owns the bus's well-known names")
    func answersWhileLearningNameOwners() throws {
        let session = try SessionEnvironment()
        let bus = try PrivateBus(environment: session)
        defer { bus.stop() }
        let owner = try Connection.bus(address: bus.address)
        let ownedNames = 100  // their requests, sent first, must fit the frozen bus's socket buffer
        for index in 0..<ownedNames { _ = try owner.requestName("com.example.Owned.App\(index)") }

        let records = LogRecords()
        let loop = MainLoop.withNewContext()
        try loop.withThreadDefault {
            let connection = try Connection.bus(address: bus.address)
            try DBusMainLoopBridge.attach(connection, to: loop)
            let service = try UserActivityService(
                bus: connection, loop: loop,
                configuration: ServiceConfiguration(applicationDirectories: [session.dataHome + "/applications"], stateDirectory: nil),
                log: Logger(label: "startup-test") { _ in RecordingLogHandler(records: records) })
            try service.export()
            let serviceName = connection.uniqueName

            // A client calls the service at once; the call is written to the bus before anything else happens.
            let client = try Connection.bus(address: bus.address)
            let ping = Message.methodCall(destination: serviceName, path: "/org/example/UserActivity",
                                          interface: "org.freedesktop.DBus.Peer", member: "Ping")
            var answered = false
            client.callAsync(ping, timeoutMilliseconds: 20_000) { result in
                if case .success = result { answered = true }
            }
            client.flush()
            usleep(500_000)  // the bus's answer to ListNames and the client's call wait in the service's socket

            // Freeze the bus: from now on no answer about a name owner can reach the service.
            kill(bus.pid, SIGSTOP)
            var resumed = false
            defer { if !resumed { kill(bus.pid, SIGCONT) } }
            // The service reads the list of names, asks for every owner and
            // answers the client (the requests go first).
            for _ in 0..<400 { loop.iterate(mayBlock: false) }
            kill(bus.pid, SIGCONT)
            resumed = true

            // The loop stays still: the answer was written while the owners were unknown.
            let answerDeadline = Date().addingTimeInterval(10)
            while !answered && Date() < answerDeadline { _ = client.readWriteDispatch(timeoutMilliseconds: 100) }
            #expect(answered, "the service did not answer while it was learning the owners of well-known names")
            #expect(!records.contains("learned the owners of well-known names"))

            // Learning then completes.
            let deadline = Date().addingTimeInterval(10)
            while !records.contains("learned the owners of well-known names") && Date() < deadline {
                loop.iterate(mayBlock: false)
                usleep(1_000)
            }
            let learned = records.metadata(of: "learned the owners of well-known names")?["names"]
            #expect(learned.flatMap { Int("\($0)") }.map { $0 >= ownedNames } == true,
                    "learned \(String(describing: learned)) owners, expected at least \(ownedNames)")
            withExtendedLifetime((service, connection, owner, client)) {}
        }
    }
}

/// Log messages, in the order they were logged (any thread).
final class LogRecords: @unchecked Sendable {
    private let lock = NSLock()
    private var entries: [(message: String, metadata: Logger.Metadata)] = []
    func append(_ message: String, _ metadata: Logger.Metadata) { lock.withLock { entries.append((message, metadata)) } }
    func contains(_ message: String) -> Bool { lock.withLock { entries.contains { $0.message == message } } }
    func metadata(of message: String) -> Logger.Metadata? { lock.withLock { entries.first { $0.message == message }?.metadata } }
}

struct RecordingLogHandler: LogHandler {
    let records: LogRecords
    var metadata: Logger.Metadata = [:]
    var logLevel: Logger.Level = .trace
    subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }
    func log(level: Logger.Level, message: Logger.Message, metadata: Logger.Metadata?,
             source: String, file: String, function: String, line: UInt) {
        records.append(message.description, metadata ?? [:])
    }
}
