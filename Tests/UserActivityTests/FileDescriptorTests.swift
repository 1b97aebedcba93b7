// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity
#if canImport(Glibc)
import Glibc
#endif

/// Descriptors a handler call carries where the library takes none (in the
/// activity's data, nested in variants, arrays and dictionaries) are closed.
@Suite("Library file descriptors")
struct LibraryFileDescriptorTests {
    /// How many of this process's descriptors refer to `path` (other tests
    /// in this process open and close their own meanwhile).
    static func descriptors(to path: String) -> Int {
        let entries = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []
        return entries.filter { (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/fd/" + $0)) == path }.count
    }

    @Test("ContinueActivity with descriptors nested in its data: the library closes every one")
    func nestedDescriptorsClosed() throws {
        let session = try SessionEnvironment()
        let bus = try PrivateBus(environment: session)
        defer { bus.stop() }
        // The test plays the service: the library accepts handler calls only from the owner of its name.
        let service = try Connection.bus(address: bus.address)
        _ = try service.requestName(UA.busName)
        let client = try UserActivityClient(appID: UA.notes, address: bus.address)
        defer { client.close() }
        let marker = session.root + "/fd-marker"
        FileManager.default.createFile(atPath: marker, contents: Data("marker".utf8))
        let fd = open(marker, O_RDONLY | O_CLOEXEC)
        #expect(fd >= 0)
        defer { close(fd) }
        #expect(Self.descriptors(to: marker) == 1)

        var answered = 0
        func send(_ rounds: Int) throws {
            for _ in 0..<rounds {
                let call = Message.methodCall(destination: client.uniqueName, path: client.handlerPath,
                                              interface: "org.example.UserActivity.Handler", member: "ContinueActivity")
                try call.append([
                    .string(UA.editNote),
                    .stringVariantDictionary([
                        ("user-info", .stringVariantDictionary([
                            ("handle", .unixFD(fd)),
                            ("list", .array(elementType: "h", [.unixFD(fd), .unixFD(fd)])),
                            ("deeper", .variant(.variant(.structure([.unixFD(fd), .string("x")])))),
                        ])),
                    ]),
                    .stringVariantDictionary([("stray", .unixFD(fd))]),
                ])
                if (try? service.call(call, timeoutMilliseconds: 10_000)) != nil { answered += 1 }
            }
        }
        try send(50)
        _ = waitUntil(timeout: 2) { Self.descriptors(to: marker) == 1 }
        let afterFifty = Self.descriptors(to: marker)
        try send(250)
        _ = waitUntil(timeout: 2) { Self.descriptors(to: marker) == 1 }
        let afterThreeHundred = Self.descriptors(to: marker)
        print("library: ContinueActivity calls with 5 nested descriptors each; descriptors to the marker open: \(afterFifty) after 50, \(afterThreeHundred) after 300")
        #expect(answered == 300, "\(answered) of 300 calls were answered")
        // At most the last message's own 5 may still be held (libdbus frees it with the message); nothing accumulates.
        #expect(afterFifty <= 6 && afterThreeHundred == afterFifty,
                "descriptors to the marker: \(afterFifty) after 50 calls, \(afterThreeHundred) after 300")
    }
}
