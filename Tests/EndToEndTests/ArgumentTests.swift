// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

@Suite("Malformed calls and identity errors")
struct ArgumentTests {
    @Test("Wrong signature → InvalidArgs")
    func wrongSignature() throws {
        let h = try DaemonHarness()
        // busctl --user call org.example.UserActivity /org/example/UserActivity org.example.UserActivity CreateActivity s foo
        let wrong = try h.busctl(["call", UA.busName, UA.managerPath, UA.managerInterface, "CreateActivity", "s", "foo"],
                                 debug: true)
        #expect(!wrong.succeeded)
        #expect(wrong.busctlErrorName == UA.invalidArgs, "\(wrong.stderr.suffix(600))")
        #expect(wrong.stderr.contains("Call failed:"))

        let app = try h.connect()
        #expect(dbusErrorName { try app.manager("CreateActivity", [.string(UA.editType)]) } == UA.invalidArgs)
        #expect(dbusErrorName {
            try app.manager("CreateActivity", [.string(UA.editType), .dictionary(keyType: "s", valueType: "s", [])])
        } == UA.invalidArgs)
        #expect(dbusErrorName { try app.manager("RegisterApplication", [.uint32(1)]) } == UA.invalidArgs)
    }

    @Test("Bad properties and app IDs → InvalidArgument; unknown or missing app → UnknownApplication")
    func invalidArgumentsAndIdentity() throws {
        let h = try DaemonHarness()
        let cases: [(String, [String], String)] = [
            ("unknown key", [UA.editType, "{'app-id': <'com.example.Editor'>, 'colour': <'red'>}"], UA.error("InvalidArgument")),
            ("wrong value type", [UA.editType, "{'app-id': <'com.example.Editor'>, 'title': <int32 42>}"], UA.error("InvalidArgument")),
            ("activity-type in properties", [UA.editType, "{'app-id': <'com.example.Editor'>, 'activity-type': <'com.example.Editor.edit-document'>}"], UA.error("InvalidArgument")),
            ("malformed activity type", ["not a type", "{'app-id': <'com.example.Editor'>}"], UA.error("InvalidArgument")),
            ("type starting with a digit", ["com.9example.edit", "{'app-id': <'com.example.Editor'>}"], UA.error("InvalidArgument")),
            ("malformed app-id", [UA.editType, "{'app-id': <'not an app'>}"], UA.error("InvalidArgument")),
            ("app-id with an empty element", [UA.editType, "{'app-id': <'com..Editor'>}"], UA.error("InvalidArgument")),
            ("legacy desktop ID not installed", [UA.editType, "{'app-id': <'Editor'>}"], UA.error("UnknownApplication")),
            ("not installed app-id", [UA.editType, "{'app-id': <'com.example.Missing'>}"], UA.error("UnknownApplication")),
            ("no identity", [UA.editType, "{}"], UA.error("UnknownApplication")),
            ("malformed webpage-url", [UA.editType, "{'app-id': <'com.example.Editor'>, 'webpage-url': <'ftp://example.com/x'>}"], UA.error("InvalidArgument")),
        ]
        for (what, arguments, expected) in cases {
            // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity --method org.example.UserActivity.CreateActivity <type> "<a{sv}>"
            let r = try h.gdbusManager("CreateActivity", arguments)
            #expect(r.gdbusErrorName == expected, "\(what): \(r)")
            #expect(!r.stderr.contains("Failed"), "\(what): the message should say what was wrong: \(r.stderr)")
        }

        // No identity at all, from busctl with an empty a{sv}:
        // busctl --user call org.example.UserActivity /org/example/UserActivity org.example.UserActivity CreateActivity sa{sv} com.example.Editor.edit-document 0
        let anonymous = try h.busctl(["call", UA.busName, UA.managerPath, UA.managerInterface, "CreateActivity",
                                      "sa{sv}", UA.editType, "0"], debug: true)
        #expect(anonymous.busctlErrorName == UA.error("UnknownApplication"), "\(anonymous.stderr.suffix(600))")

        // RegisterApplication: malformed / not installed / installed.
        let malformed = try h.gdbusManager("RegisterApplication", ["not an app"])
        #expect(malformed.gdbusErrorName == UA.error("InvalidArgument"), "\(malformed)")
        let missing = try h.gdbusManager("RegisterApplication", ["com.example.Missing"])
        #expect(missing.gdbusErrorName == UA.error("UnknownApplication"), "\(missing)")
        // gdbus call --session --dest org.example.UserActivity --object-path /org/example/UserActivity --method org.example.UserActivity.RegisterApplication com.example.Editor
        let registered = try h.gdbusManager("RegisterApplication", [UA.editor])
        #expect(registered.succeeded && registered.trimmedStdout == "()", "\(registered)")

        // After RegisterApplication the same connection needs no app-id.
        let app = try h.connect()
        try app.manager("RegisterApplication", [.string(UA.editor)])
        let reply = try app.manager("CreateActivity", [.string(UA.editType), .stringVariantDictionary([])])
        let path = try #require(reply.first?.objectPathValue)
        #expect(try app.property(path, "AppId") == .string(UA.editor))
        // …and a per-call app-id still wins for that call.
        let viewerPath = try app.create(UA.viewType, app: UA.viewer)
        #expect(try app.property(viewerPath, "AppId") == .string(UA.viewer))
        // A later registration replaces the earlier one.
        try app.manager("RegisterApplication", [.string(UA.viewer)])
        #expect(dbusErrorName {
            try app.manager("CreateActivity", [.string(UA.editType), .stringVariantDictionary([])])
        } == UA.error("NotDeclared"))

        // Nothing broke.
        #expect(try !h.activate().isEmpty)
    }
}
