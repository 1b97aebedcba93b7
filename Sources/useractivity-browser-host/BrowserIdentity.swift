// SPDX-License-Identifier: Apache-2.0
import UserActivityCore
#if canImport(Glibc)
import Glibc
#endif

/// Which browser started the host, as a desktop-file ID.
///
/// The browser's own executable (`/usr/lib/chromium/chromium`,
/// `/usr/lib/firefox-esr/firefox-esr`) names its Debian desktop entry; else
/// the arguments tell Chromium (`chrome-extension://…/`) from Firefox, and the
/// first installed entry of that family is used. Nil lets the service identify
/// the caller from its process (the browser's systemd unit).
enum BrowserIdentity {
    static let chromiumFamily = ["chromium", "chromium-browser", "org.chromium.Chromium", "google-chrome", "com.google.Chrome"]
    static let firefoxFamily = ["firefox-esr", "firefox", "org.mozilla.firefox", "org.mozilla.firefox_esr"]

    static func appID(arguments: [String], parentExecutable: String?, environment: [String: String]) -> String? {
        let directories = AppCatalog.applicationDirectories(environment: environment)
        func installed(_ id: String) -> Bool {
            AppIDName.isWellFormed(id) && directories.contains { access($0 + "/" + id + ".desktop", R_OK) == 0 }
        }
        if let parentExecutable, installed(parentExecutable) { return parentExecutable }
        let isChromium = arguments.dropFirst().first?.hasPrefix("chrome-extension://") == true
        return (isChromium ? chromiumFamily : firefoxFamily).first(where: installed)
    }

    /// The parent process's executable name (its `/proc/PPID/exe` link).
    static func parentExecutableName() -> String? {
        var buffer = [CChar](repeating: 0, count: 4096)
        let count = readlink("/proc/\(getppid())/exe", &buffer, buffer.count - 1)
        guard count > 0 else { return nil }
        let path = String(decoding: buffer[0..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return path.split(separator: "/").last.map(String.init)
    }
}
