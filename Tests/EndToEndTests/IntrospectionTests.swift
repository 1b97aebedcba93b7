// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing

@Suite("Introspection")
struct IntrospectionTests {
    @Test("busctl introspect/tree work, and Introspect serves the interface XML kept in dbus/")
    func introspectionMatchesTheDocumentedXML() throws {
        let h = try DaemonHarness()
        let app = try h.connect()
        let path = try app.create(UA.editType, app: UA.editor, [("title", .string("Introspected"))])

        // busctl --user introspect org.example.UserActivity /org/example/UserActivity
        let manager = try h.busctl(["introspect", UA.busName, UA.managerPath])
        #expect(manager.succeeded, "\(manager)")
        let managerMembers: [(String, String)] = [
            ("CreateActivity", #"\.CreateActivity\s+method\s+sa\{sv\}\s+o\s"#),
            ("BecomeCurrent", #"\.BecomeCurrent\s+method\s+sa\{sv\}\s+o\s"#),
            ("Donate", #"\.Donate\s+method\s+sa\{sv\}\s+s\s"#),
            ("Search", #"\.Search\s+method\s+sa\{sv\}\s+aa\{sv\}\s"#),
            ("GetSuggestions", #"\.GetSuggestions\s+method\s+a\{sv\}\s+aa\{sv\}\s"#),
            ("ContinueActivity", #"\.ContinueActivity\s+method\s+sa\{sv\}a\{sv\}\s+s\s"#),
            ("ContinueSavedActivity", #"\.ContinueSavedActivity\s+method\s+sa\{sv\}\s+s\s"#),
            ("RegisterApplication", #"\.RegisterApplication\s+method\s+s\s+-\s"#),
            ("RegisterHandler", #"\.RegisterHandler\s+method\s+o\s+-\s"#),
            ("OpenContinuationStream", #"\.OpenContinuationStream\s+method\s+s\s+h\s"#),
            ("DeleteSavedActivities", #"\.DeleteSavedActivities\s+method\s+as\s+-\s"#),
            ("DeleteAllSavedActivities", #"\.DeleteAllSavedActivities\s+method\s+-\s+-\s"#),
            ("CurrentActivity", #"\.CurrentActivity\s+property\s+o\s"#),
            ("Version", #"\.Version\s+property\s+s\s"#),
        ]
        for (name, pattern) in managerMembers {
            let regex = try Regex(pattern)
            #expect(manager.stdout.contains(regex), "busctl introspect lacks \(name) (\(pattern)):\n\(manager.stdout)")
        }
        for interface in [UA.managerInterface, "org.freedesktop.DBus.ObjectManager", "org.freedesktop.DBus.Properties",
                          "org.freedesktop.DBus.Introspectable", "org.freedesktop.DBus.Peer"] {
            #expect(manager.stdout.contains("\(interface) "), "no interface \(interface)")
        }

        // busctl --user introspect org.example.UserActivity <activity path>
        let activity = try h.busctl(["introspect", UA.busName, path])
        #expect(activity.succeeded, "\(activity)")
        for pattern in [#"\.Update\s+method\s+a\{sv\}\s+-\s"#, #"\.AddUserInfoEntries\s+method\s+a\{sv\}\s+-\s"#,
                        #"\.BecomeCurrent\s+method\s+-\s+-\s"#, #"\.ResignCurrent\s+method\s+-\s+-\s"#,
                        #"\.Invalidate\s+method\s+-\s+-\s"#, #"\.Continue\s+method\s+a\{sv\}\s+s\s"#,
                        #"\.Continued\s+signal\s+s\s"#, #"\.Title\s+property\s+s\s+"Introspected"\s+emits-change\s+writable"#,
                        #"\.ActivityType\s+property\s+s\s+"com\.example\.Editor\.edit-document"\s"#,
                        #"\.Current\s+property\s+b\s+false\s"#] {
            #expect(activity.stdout.contains(try Regex(pattern)), "activity introspection lacks \(pattern):\n\(activity.stdout)")
        }

        // busctl --user tree org.example.UserActivity
        let tree = try h.busctl(["tree", UA.busName])
        #expect(tree.succeeded, "\(tree)")
        #expect(tree.stdout.contains(UA.managerPath) && tree.stdout.contains(path), "\(tree.stdout)")

        // gdbus introspect --session --dest org.example.UserActivity --object-path /org/example/UserActivity (GLib parses the XML)
        let gdbus = try h.bus.run("gdbus", ["introspect", "--session", "--dest", UA.busName, "--object-path", UA.managerPath])
        #expect(gdbus.succeeded && gdbus.stdout.contains("CreateActivity("), "\(gdbus)")

        // The served XML contains exactly the interface blocks kept in dbus/.
        let root = repositoryRoot()
        let file = "\(root)/dbus/org.example.UserActivity.xml"
        let documented = try #require(try? String(contentsOfFile: file, encoding: .utf8), "cannot read \(file)")
        // busctl --user --json=short call org.example.UserActivity /org/example/UserActivity org.freedesktop.DBus.Introspectable Introspect
        func served(_ objectPath: String) throws -> String {
            let json = try h.busctlJSON(["call", UA.busName, objectPath, "org.freedesktop.DBus.Introspectable", "Introspect"])
            return json.arguments.first as? String ?? ""
        }
        for (interface, objectPath) in [(UA.managerInterface, UA.managerPath), (UA.activityInterface, path)] {
            let xml = try served(objectPath)
            let expected = try #require(interfaceBlock(interface, in: documented), "\(file) has no <interface name=\"\(interface)\">")
            let actual = try #require(interfaceBlock(interface, in: xml), "Introspect of \(objectPath) has no \(interface):\n\(xml)")
            #expect(expected.hasPrefix("  <!--") || expected.hasPrefix("<!--"), "the documented block starts with its doc comment")
            #expect(actual == expected, "\(interface) differs from \(file): \(firstDifference(expected, actual))")
        }
    }
}
