// SPDX-License-Identifier: Apache-2.0
import DBusKit
import TestSupport
import Testing
import TypedValues

/// What libdbus would abort on is refused (or replaced) at DBusKit's boundary.
@Suite struct ValueCheckTests {
    func call() -> Message {
        Message.methodCall(destination: "org.example.Test", path: "/org/example/Test", interface: "org.example.Test", member: "Do")
    }

    @Test("A value libdbus would abort on is InvalidArgs, and nothing is appended")
    func invalidValuesAreRefused() throws {
        let bad: [TypedValue] = [
            .objectPath("not a path"), .objectPath("/trailing/"), .signature("a"), .string("nul\u{0}inside"),
            .array(elementType: "s", [.uint32(1)]), .array(elementType: "", []), .structure([]),
            .dictionary(keyType: "v", valueType: "s", []), .dictionary(keyType: "s", valueType: "v", [.init(key: .string("k"), value: .string("not a variant"))]),
            .variant(.objectPath("//")),
        ]
        for value in bad {
            let message = call()
            #expect(throws: DBusFailure.self, "\(value)") { try message.append([value]) }
            #expect(message.signature == "", "\(value)")
        }
        let message = call()
        try message.append([.objectPath("/org/example/a_1"), .array(elementType: "a{sv}", [.dictionary(keyType: "s", valueType: "v", [])]),
                            .variant(.structure([.int32(1), .signature("a{sv}")]))])
        #expect(message.signature == "oaa{sv}v")
    }

    @Test("An error name libdbus would abort on becomes org.freedesktop.DBus.Error.Failed, the name kept in the text")
    func invalidErrorNamesAreReplaced() throws {
        // An error answers a call that was sent (it needs the call's serial).
        let bus = try PrivateBus()
        let connection = try Connection.bus(address: bus.address)
        defer { connection.close() }
        let sent = call()
        sent.expectsReply = false
        _ = connection.send(sent)
        let reply = Message.error(to: sent, name: "org.example.Error.not a name!", message: "why")
        #expect(reply.errorName == "org.freedesktop.DBus.Error.Failed")
        #expect(reply.errorText.contains("why") && reply.errorText.contains("org.example.Error.not?a?name!"), "\(reply.errorText)")
        #expect(Message.error(to: sent, name: "org.example.Error.Fine", message: "").errorName == "org.example.Error.Fine")
    }
}
