// SPDX-License-Identifier: Apache-2.0
import Foundation
import TestSupport
import Testing
import TypedValues

/// A page in a real headless Chromium or Firefox ESR on desktop A, through the
/// extension and useractivity-browser-host, shows on desktop B's
/// Device.CurrentActivity, and continuing it there opens it in B's entry of
/// the same browser (a fixture that records its arguments). Needs Debian's
/// chromium and firefox-esr; runs when
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

    /// Starts `browser` ("chromium" or "firefox-esr") on desktop A with the
    /// extension and the built host, showing `url`.
    func startBrowser(_ browser: String, on stack: HandoffStack, url: String) throws -> ChildProcess {
        let host = try BuiltProducts.executable(named: "useractivity-browser-host")
        let extensionDir = Self.repository + "/browser/extension"
        let profile = stack.session.root + "/\(browser)-profile"
        var environment = stack.bus.environment
        let arguments: [String]
        if browser == "chromium" {
            let chromiumID = try String(contentsOfFile: Self.repository + "/browser/extension-id.txt", encoding: .utf8)
                .split(separator: "\n").first { $0.hasPrefix("chromium-id:") }
                .map { $0.dropFirst("chromium-id:".count).trimmingCharacters(in: .whitespaces) }
            try FileManager.default.createDirectory(atPath: profile + "/NativeMessagingHosts", withIntermediateDirectories: true)
            try """
                {"name": "org.example.useractivity", "description": "test", "path": "\(host)", "type": "stdio",
                 "allowed_origins": ["chrome-extension://\(try #require(chromiumID))/"]}
                """.write(toFile: profile + "/NativeMessagingHosts/org.example.useractivity.json", atomically: true, encoding: .utf8)
            arguments = ["--headless=new", "--no-sandbox", "--no-first-run", "--disable-gpu", "--user-data-dir=\(profile)",
                         "--load-extension=\(extensionDir)", url]
        } else {
            // A test profile that takes the unsigned extension; the host's manifest in the test's HOME.
            let home = stack.session.root + "/firefox-home"
            environment["HOME"] = home
            try FileManager.default.createDirectory(atPath: home + "/.mozilla/native-messaging-hosts", withIntermediateDirectories: true)
            try """
                {"name": "org.example.useractivity", "description": "test", "path": "\(host)", "type": "stdio",
                 "allowed_extensions": ["useractivity@example.org"]}
                """.write(toFile: home + "/.mozilla/native-messaging-hosts/org.example.useractivity.json", atomically: true, encoding: .utf8)
            try FileManager.default.createDirectory(atPath: profile + "/extensions", withIntermediateDirectories: true)
            try """
                user_pref("xpinstall.signatures.required", false);
                user_pref("extensions.autoDisableScopes", 0);
                user_pref("browser.shell.checkDefaultBrowser", false);
                user_pref("datareporting.policy.dataSubmissionEnabled", false);
                """.write(toFile: profile + "/user.js", atomically: true, encoding: .utf8)
            let zip = try ChildProcess(executable: "python3", arguments: [
                "-c", "import shutil,sys; shutil.make_archive(sys.argv[1], 'zip', sys.argv[2])",
                profile + "/extensions/useractivity@example.org", extensionDir,
            ], environment: environment, stdout: .discard, stderr: .discard)
            #expect(zip.waitForExit(timeout: 30) == 0)
            try FileManager.default.moveItem(atPath: profile + "/extensions/useractivity@example.org.zip",
                                             toPath: profile + "/extensions/useractivity@example.org.xpi")
            environment["MOZ_CRASHREPORTER_DISABLE"] = "1"
            arguments = ["--headless", "--no-remote", "--profile", profile, url]
        }
        return try ChildProcess(executable: browser, arguments: arguments, environment: environment, stdout: .discard,
                                stderr: .file(stack.session.root + "/\(browser).log"), newProcessGroup: true)
    }

    @Test(arguments: ["chromium", "firefox-esr"])
    func aPageIsContinuedInTheOtherDesktopsBrowser(browser: String) throws {
        let stacks = try TwoStacks()
        let mimeTypes = "MimeType=text/html;x-scheme-handler/http;x-scheme-handler/https;"
        try stacks.a.session.writeDesktopEntry(appID: browser, types: [], name: browser, exec: "/bin/true %U", extraLines: [mimeTypes])
        let recorder = try LaunchRecorder(directory: stacks.b.session.root)
        let record = stacks.b.session.root + "/\(browser).argv"
        try stacks.b.session.writeDesktopEntry(appID: browser, types: [], name: browser,
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

        let process = try startBrowser(browser, on: stacks.a, url: url)
        defer { process.terminate(grace: 2) }

        // A new Firefox profile takes a while to start.
        #expect(stacks.b.waitForDevice(onB, "CurrentActivity", timeout: 90, {
            value($0, "webpage-url") == url && value($0, "title") == "Handed page"
        }), "B shows A's page\n\(stacks.logs)")
        let continued = try stacks.b.call(HO.busName, onB, HO.device, "ContinueActivity", [.dictionary(keyType: "s", valueType: "v", [])])
        #expect(continued.first == .string(browser), "\(stacks.logs)")
        let launched = LaunchRecorder.read(record, timeout: 30) ?? []
        #expect(launched.contains("ARG \(url)"), "B's \(browser) was launched with the page: \(launched)")
    }
}
