// SPDX-License-Identifier: Apache-2.0
import BrowserHostProtocol
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues

/// The built `useractivity-browser-host`, started as a browser starts it
/// (the extension's origin as argument, pipes on stdin/stdout), against the
/// real daemon on a private bus with a `chromium` desktop entry installed.
final class BrowserHostHarness: @unchecked Sendable {
    let session: SessionEnvironment
    let bus: PrivateBus
    let host: Process
    let toHost = Pipe()
    let fromHost = Pipe()
    private let lock = NSLock()
    private var replyBytes: [UInt8] = []

    init(browserEntry: String? = "chromium") throws {
        session = try SessionEnvironment()
        if let browserEntry {
            try session.writeDesktopEntry(appID: browserEntry, types: [], name: "Chromium", exec: "/bin/true %U",
                                          extraLines: ["MimeType=x-scheme-handler/https;x-scheme-handler/http;"])
        }
        bus = try PrivateBus(environment: session)
        try bus.installService(name: UA.busName, exec: "\(shellQuote(try BuiltProducts.useractivityd())) --verbose")
        host = Process()
        host.executableURL = URL(fileURLWithPath: try BuiltProducts.executable(named: "useractivity-browser-host"))
        host.arguments = ["chrome-extension://abcdefghijklmnopabcdefghijklmnop/"]
        host.environment = bus.environment
        host.standardInput = toHost
        host.standardOutput = fromHost
        host.standardError = FileHandle.standardError
        fromHost.fileHandleForReading.readabilityHandler = { [weak self] handle in
            let data = handle.availableData
            guard let self else { return }
            self.lock.withLock { self.replyBytes += data }
        }
        try host.run()
    }

    deinit {
        fromHost.fileHandleForReading.readabilityHandler = nil
        if host.isRunning { host.terminate() }
        bus.stop()
    }

    func send(_ json: String) { sendRaw(NativeMessaging.frame(Array(json.utf8))!) }
    func sendRaw(_ bytes: [UInt8]) { toHost.fileHandleForWriting.write(Data(bytes)) }
    func closeInput() { try? toHost.fileHandleForWriting.close() }

    /// The replies so far, decoded.
    func replies() -> [JSONValue] {
        var reader = NativeMessageReader()
        reader.append(lock.withLock { replyBytes })
        var result: [JSONValue] = []
        while case .message(let payload)? = reader.next() {
            result.append((try? JSONReader.parse(payload)) ?? .string("<not JSON>"))
        }
        return result
    }

    func currentActivity(_ client: BusClient) throws -> String {
        try client.property(UA.managerPath, "CurrentActivity", interface: UA.managerInterface).objectPathValue ?? "?"
    }
}

@Suite("The browser host against the daemon", .serialized)
struct HostEndToEndTests {
    static func page(_ url: String, _ title: String) -> String {
        #"{"type":"page","url":"\#(url)","title":"\#(title)"}"#
    }

    @Test("A page becomes the browser's current activity, updated in place; none resigns; closing stdin ends it and the host")
    func publishesFollowsAndEnds() throws {
        let h = try BrowserHostHarness()
        let client = try BusClient(address: h.bus.address)
        #expect(waitUntil(timeout: 30) { h.replies().first?["type"] == .string("ready") }, "\(h.bus.log.suffix(2000))")
        #expect(h.replies().first?["appId"] == .string("chromium"))

        h.send(Self.page("https://example.com/one", "One"))
        var path = "/"
        #expect(try waitUntil(timeout: 30) { path = try h.currentActivity(client); return path != "/" }, "\(h.replies()) \(h.bus.log.suffix(2000))")
        #expect(try client.property(path, "ActivityType") == .string("org.example.UserActivity.browsing-web"))
        #expect(try client.property(path, "AppId") == .string("chromium"))
        #expect(try client.property(path, "WebpageURL") == .string("https://example.com/one"))
        #expect(try client.property(path, "Title") == .string("One"))
        #expect(try client.property(path, "EligibleForHandoff") == .boolean(true))
        #expect(try client.property(path, "EligibleForSearch") == .boolean(false))

        h.send(Self.page("https://example.com/two", "Two"))
        #expect(try waitUntil(timeout: 30) { try client.property(path, "Title") == .string("Two") })
        #expect(try h.currentActivity(client) == path, "updated in place")
        #expect(try client.property(path, "WebpageURL") == .string("https://example.com/two"))

        // Another app becomes current; the browser's next page makes its activity current again.
        let other = try client.call(UA.managerPath, UA.managerInterface, "BecomeCurrent", [
            .string("org.example.UserActivity.browsing-web"),
            .stringVariantDictionary([("app-id", .string("chromium")), ("webpage-url", .string("https://example.org/other"))]),
        ]).first?.objectPathValue
        #expect(try h.currentActivity(client) == other)
        h.send(Self.page("https://example.com/two-b", "Two b"))
        #expect(try waitUntil(timeout: 30) { try h.currentActivity(client) == path }, "the page is current again, in place")
        #expect(try client.property(path, "Title") == .string("Two b"))

        h.send(#"{"type":"none"}"#)
        #expect(try waitUntil(timeout: 30) { try h.currentActivity(client) == "/" })
        h.send(Self.page("https://example.com/three", "Three"))
        #expect(try waitUntil(timeout: 30) { try h.currentActivity(client) == path })
        #expect(try waitUntil(timeout: 30) { try client.property(path, "Title") == .string("Three") })

        h.closeInput()
        #expect(waitUntil(timeout: 30) { !h.host.isRunning }, "the host exits when the browser closes its stdin")
        #expect(h.host.terminationStatus == 0)
        #expect(try waitUntil(timeout: 30) { try h.currentActivity(client) == "/" })
        #expect(dbusErrorName { try client.property(path, "Title") } != nil, "the activity is gone")
        #expect(h.replies().allSatisfy { $0["type"] != .string("error") }, "\(h.replies())")
    }

    @Test("Bad input gets error replies and the host goes on publishing")
    func badInput() throws {
        let h = try BrowserHostHarness()
        let client = try BusClient(address: h.bus.address)
        #expect(waitUntil(timeout: 30) { h.replies().first?["type"] == .string("ready") })
        h.send("this is not json")
        h.send(#"{"type":"page","url":"https://user:secret@example.com/"}"#)
        h.send(#"{"type":"page","url":"file:///etc/passwd","title":"x"}"#)
        h.sendRaw(withUnsafeBytes(of: UInt32(5_000_000)) { Array($0) } + [UInt8](repeating: 0x20, count: 5_000_000))
        h.send(Self.page("https://example.com/after", "After"))
        #expect(waitUntil(timeout: 30) { h.replies().filter { $0["type"] == .string("error") }.count == 4 }, "\(h.replies())")
        var path = "/"
        #expect(try waitUntil(timeout: 30) { path = try h.currentActivity(client); return path != "/" })
        #expect(try client.property(path, "WebpageURL") == .string("https://example.com/after"))
        #expect(h.host.isRunning)
    }

    @Test("A flood of navigations is coalesced; the last page is what the service shows")
    func floodIsCoalesced() throws {
        let h = try BrowserHostHarness()
        let client = try BusClient(address: h.bus.address)
        #expect(waitUntil(timeout: 30) { h.replies().first?["type"] == .string("ready") })
        var burst: [UInt8] = []
        for n in 1...1_000 { burst += NativeMessaging.frame(Array(Self.page("https://example.com/\(n)", "Page \(n)").utf8))! }
        h.sendRaw(burst)
        var path = "/"
        #expect(try waitUntil(timeout: 30) { path = try h.currentActivity(client); return path != "/" })
        #expect(try waitUntil(timeout: 30) { try client.property(path, "Title") == .string("Page 1000") })
        #expect(try client.property(path, "WebpageURL") == .string("https://example.com/1000"))
    }
}
