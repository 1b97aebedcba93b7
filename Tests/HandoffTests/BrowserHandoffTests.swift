// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
import TypedValues

/// A page in a real headless Chromium on desktop A, through the extension and
/// useractivity-browser-host, shows on desktop B's Device.CurrentActivity,
/// and continuing it there opens it in B's `chromium` entry (a fixture that
/// records its arguments). Needs Debian's chromium; runs when
/// USERACTIVITY_REAL_BROWSER=1 (scripts/test.sh's real-browser step), never
/// under the sanitizers.
@Suite("A browser's page handed over", .serialized,
       .enabled(if: ProcessInfo.processInfo.environment["USERACTIVITY_REAL_BROWSER"] == "1"))
struct BrowserHandoffTests {
    static let repository = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().path

    func value(_ activity: TypedValue?, _ key: String) -> String? {
        activity?.stringVariantEntries?.first { $0.0 == key }?.1.stringValue
    }

    @Test func aChromiumPageIsContinuedInTheOtherDesktopsBrowser() throws {
        let stacks = try TwoStacks()
        let mimeTypes = "MimeType=text/html;x-scheme-handler/http;x-scheme-handler/https;"
        try stacks.a.session.writeDesktopEntry(appID: "chromium", types: [], name: "Chromium", exec: "/bin/true %U", extraLines: [mimeTypes])
        let recorder = try LaunchRecorder(directory: stacks.b.session.root)
        let record = stacks.b.session.root + "/chromium.argv"
        try stacks.b.session.writeDesktopEntry(appID: "chromium", types: [], name: "Chromium",
                                               exec: recorder.command(recordingTo: record).joined(separator: " ") + " %U",
                                               extraLines: [mimeTypes])
        let (_, onB) = try stacks.pair()

        // A page on loopback.
        let site = stacks.a.session.root + "/site"
        try FileManager.default.createDirectory(atPath: site, withIntermediateDirectories: true)
        try "<!DOCTYPE html><title>Handed page</title><p>hello".write(toFile: site + "/page.html", atomically: true, encoding: .utf8)
        let server = try ChildProcess(
            executable: "python3",
            arguments: ["-c", "import http.server,sys,functools; s=http.server.ThreadingHTTPServer(('127.0.0.1',0),"
                        + "functools.partial(http.server.SimpleHTTPRequestHandler,directory=sys.argv[1])); "
                        + "print(s.server_address[1],flush=True); s.serve_forever()", site],
            environment: stacks.a.session.environment, stdout: .capture, stderr: .discard)
        defer { server.terminate(grace: 0.5) }
        let port = try #require(try server.readLine(timeout: 20))
        let url = "http://127.0.0.1:\(port)/page.html"

        // Chromium on A, with the extension and the built host registered in its profile.
        let host = try BuiltProducts.executable(named: "useractivity-browser-host")
        let chromiumID = try String(contentsOfFile: Self.repository + "/browser/extension-id.txt", encoding: .utf8)
            .split(separator: "\n").first { $0.hasPrefix("chromium-id:") }.map { $0.dropFirst("chromium-id:".count).trimmingCharacters(in: .whitespaces) }
        let profile = stacks.a.session.root + "/chromium-profile"
        try FileManager.default.createDirectory(atPath: profile + "/NativeMessagingHosts", withIntermediateDirectories: true)
        try """
            {"name": "org.example.useractivity", "description": "test", "path": "\(host)", "type": "stdio",
             "allowed_origins": ["chrome-extension://\(try #require(chromiumID))/"]}
            """.write(toFile: profile + "/NativeMessagingHosts/org.example.useractivity.json", atomically: true, encoding: .utf8)
        let browser = try ChildProcess(
            executable: "chromium",
            arguments: ["--headless=new", "--no-sandbox", "--no-first-run", "--disable-gpu", "--user-data-dir=\(profile)",
                        "--load-extension=\(Self.repository)/browser/extension", url],
            environment: stacks.a.bus.environment, stdout: .discard, stderr: .file(stacks.a.session.root + "/chromium.log"),
            newProcessGroup: true)
        defer { browser.terminate(grace: 2) }

        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", timeout: 60, {
            value($0, "webpage-url") == url && value($0, "title") == "Handed page"
        }), "B shows A's page\n\(stacks.logs)")
        let continued = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])])
        #expect(continued.first == .string("chromium"), "\(stacks.logs)")
        let launched = LaunchRecorder.read(record, timeout: 30) ?? []
        #expect(launched.contains("ARG \(url)"), "B's chromium was launched with the page: \(launched)")
    }
}
