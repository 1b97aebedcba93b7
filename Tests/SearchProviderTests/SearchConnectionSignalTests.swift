// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// The shell's and KRunner's connection only searches and activates: the
/// service must not send it every app's activity signals.
@Suite("Desktop search connections and the activity signals")
struct SearchConnectionSignalTests {
    @Test("A connection that searches through the providers is sent no activity signal while apps publish")
    func searchingSubscribesToNothing() throws {
        let h = try DesktopSearchHarness()
        _ = try h.donate("Quarterly signal report")
        let shell = try Connection.bus(address: h.bus.address)
        defer { shell.close() }
        var received: [String] = []
        var answered: Set<UInt32> = []
        try shell.addFilter { message in
            if message.kind == .signal, message.sender != "org.freedesktop.DBus" {
                received.append("\(message.path ?? "") \(message.member ?? "")")
            } else if message.kind == .methodReturn || message.kind == .error {
                answered.insert(message.replySerial)
            }
            return false
        }
        /// Calls through the filter and waits for the answer: signals sent before it are counted by then.
        func call(_ path: String, _ interface: String, _ member: String, _ arguments: [TypedValue]) -> Bool {
            let message = Message.methodCall(destination: UA.busName, path: path, interface: interface, member: member)
            try? message.append(arguments)
            shell.send(message)
            let serial = message.serial
            return waitUntil(timeout: 30) {
                shell.readWriteDispatch(timeoutMilliseconds: 20)
                return answered.contains(serial)
            }
        }
        #expect(call(UA.searchProviderPath, UA.searchProvider, "GetInitialResultSet", [.stringArray(["quarterly"])]))
        #expect(call(UA.krunnerPath, UA.krunner, "Match", [.string("quarterly")]))

        // An app publishes and changes an activity; a subscribed listener sees it happen.
        let listener = try SignalMonitor(address: h.bus.address, rules: [DaemonSignal.rule(interface: "org.freedesktop.DBus.Properties")])
        let app = try Connection.bus(address: h.bus.address)
        defer { app.close() }
        let create = Message.methodCall(destination: UA.busName, path: UA.managerPath, interface: UA.managerInterface, member: "BecomeCurrent")
        try create.append([.string(UA.editType), .stringVariantDictionary([("app-id", .string(UA.editor)), ("title", .string("Published"))])])
        let path = try #require(try app.call(create).arguments().first?.objectPathValue)
        let update = Message.methodCall(destination: UA.busName, path: path, interface: UA.activityInterface, member: "Update")
        try update.append([.stringVariantDictionary([("title", .string("Published again"))])])
        _ = try app.call(update)
        #expect(listener.wait(timeout: 30) { $0.contains { $0.path == path && $0.changedProperties?.changed["Title"] != nil } },
                "\(listener.signals.map(\.member))")

        #expect(call(UA.searchProviderPath, UA.searchProvider, "GetSubsearchResultSet", [.stringArray([]), .stringArray(["quarterly"])]))
        #expect(received.isEmpty, "the search connection was sent \(received)")
    }
}
