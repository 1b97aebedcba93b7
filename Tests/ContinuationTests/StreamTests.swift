// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
#if canImport(Glibc)
import Glibc
#endif

extension ContinuationTests {
    @Suite("Continuation streams")
    struct Streams {
        static let apps = [
            AppEntry(UA.editor, .handler()),
            AppEntry(UA.viewer, .handler()),
        ]

        static let streamingOrigin = "{'title': <'Whiteboard'>, 'supports-continuation-streams': <true>}"

        @Test("Both directions: the continuing app opens the stream with its token; each end reads what the other wrote")
        func bothDirections() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer, answer: "stream")
            let (_, path) = try LiveOrigin.origin(h, props: Self.streamingOrigin)
            let client = try h.connect()
            #expect(try client.continueLive(path, options: [("target-app-id", .string(UA.viewer))]) == UA.viewer, "\(h.logTail())")

            let continued = try #require(h.waitForEvent(UA.viewer, "continue"))
            #expect((continued.dictionary("platform")["continuation-token"] as? String)?.count == 32)
            let opened = try #require(h.waitForEvent(UA.editor, "stream-opened"), "ContinuationStreamOpened never reached the origin\n\(h.logTail())")
            #expect(opened.string("path") == path)
            let atOrigin = try #require(h.waitForEvent(UA.editor, "stream-read"), "\(h.events(UA.editor))")
            #expect(atOrigin.string("data") == "hello from continuing \(UA.viewer)")
            let atContinuing = try #require(h.waitForEvent(UA.viewer, "stream-read"), "\(h.events(UA.viewer))")
            #expect(atContinuing.string("data") == "hello from origin \(UA.editor)")
        }

        @Test("Token rules: AccessDenied for an unidentified caller and for another app (token kept), single use, NotFound after the origin ends")
        func tokenRules() throws {
            let h = try ContinuationHarness(apps: Self.apps)
            try h.startHandler(UA.viewer, answer: "true")   // receives the token, does not use it
            let (origin, path) = try LiveOrigin.origin(h, props: Self.streamingOrigin)
            let client = try h.connect()
            #expect(try client.continueLive(path, options: [("target-app-id", .string(UA.viewer))]) == UA.viewer)
            let token = try #require(h.waitForEvent(UA.viewer, "continue")?.dictionary("platform")["continuation-token"] as? String)

            func open(_ connection: Client) throws -> Int32 {
                let reply = try connection.call(UA.managerPath, UA.managerInterface, "OpenContinuationStream", [.string(token)])
                guard case .unixFD(let fd)? = reply.first else { throw FixtureFailure("OpenContinuationStream replied \(reply)") }
                return fd
            }

            let stranger = try h.connect()
            #expect(dbusError { try open(stranger) }?.name == UA.error("AccessDenied"), "unidentified caller")
            let otherApp = try h.connect()
            try otherApp.registerApplication(UA.editor)
            #expect(dbusError { try open(otherApp) }?.name == UA.error("AccessDenied"), "not the receiving app")

            // The receiving app (an unconfined connection naming Viewer) may, and the refusals did not use the token up.
            let receiver = try h.connect()
            try receiver.registerApplication(UA.viewer)
            let fd = try open(receiver)
            defer { close(fd) }
            #expect(try readLine(fd) == "hello from origin \(UA.editor)", "the origin's end did not reach the origin's handler")
            #expect(writeLine(fd, "hello from the test"))
            let atOrigin = try #require(h.waitForEvent(UA.editor, "stream-read"))
            #expect(atOrigin.string("data") == "hello from the test")

            #expect(dbusError { try open(receiver) }?.name == UA.error("NotFound"), "a token is single-use")
            #expect(dbusError {
                try receiver.call(UA.managerPath, UA.managerInterface, "OpenContinuationStream", [.string("no-such-token")])
            }?.name == UA.error("NotFound"))

            // A fresh token dies with its origin.
            #expect(try client.continueLive(path, options: [("target-app-id", .string(UA.viewer))]) == UA.viewer)
            let second = try #require(h.waitForEvent(UA.viewer, "continue", count: 2)?.dictionary("platform")["continuation-token"] as? String)
            #expect(second != token)
            origin.process.terminate(grace: 0.5)
            let gone = waitUntil(timeout: 30) { (try? client.property(path, "Title")) == nil }
            #expect(gone, "the origin's activity outlived its connection")
            let afterwards = dbusError {
                try receiver.call(UA.managerPath, UA.managerInterface, "OpenContinuationStream", [.string(second)])
            }
            #expect(afterwards?.name == UA.error("NotFound"), "\(String(describing: afterwards))")
        }
    }
}

/// Reads one line from a stream socket (5 s limit).
private func readLine(_ fd: Int32) throws -> String {
    var timeout = timeval(tv_sec: 5, tv_usec: 0)
    setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
    var data: [UInt8] = []
    var byte: UInt8 = 0
    while true {
        let n = read(fd, &byte, 1)
        guard n == 1 else { throw FixtureFailure("stream read ended after \(data.count) bytes (errno \(errno))") }
        if byte == UInt8(ascii: "\n") { break }
        data.append(byte)
    }
    return String(decoding: data, as: UTF8.self)
}

private func writeLine(_ fd: Int32, _ text: String) -> Bool {
    let bytes = Array((text + "\n").utf8)
    return bytes.withUnsafeBytes { write(fd, $0.baseAddress, $0.count) } == bytes.count
}
