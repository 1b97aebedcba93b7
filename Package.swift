// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
import PackageDescription

let package = Package(
    name: "useractivity",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "useractivityd", targets: ["useractivityd"]),
        .library(name: "UserActivity", targets: ["UserActivity"]),
        .executable(name: "useractivityctl", targets: ["useractivityctl"]),
        .executable(name: "useractivity-handoffd", targets: ["useractivity-handoffd"]),
        .library(name: "HandoffDiscovery", targets: ["HandoffDiscovery"]),
        .executable(name: "handoff-discovery-probe", targets: ["handoff-discovery-probe"]),
        .executable(name: "useractivity-settings", targets: ["useractivity-settings"]),
        .executable(name: "useractivity-browser-host", targets: ["useractivity-browser-host"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
    ],
    targets: [
        // The C boundary: only what Swift cannot call lives in the shim headers.
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1",
                       providers: [.apt(["libdbus-1-dev"])]),
        .systemLibrary(name: "CGLib", pkgConfig: "gio-unix-2.0",
                       providers: [.apt(["libglib2.0-dev"])]),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3",
                       providers: [.apt(["libsqlite3-dev"])]),
        .systemLibrary(name: "CGnuTLS", pkgConfig: "gnutls",
                       providers: [.apt(["libgnutls28-dev"])]),
        .systemLibrary(name: "CGtk", pkgConfig: "libadwaita-1",
                       providers: [.apt(["libgtk-4-dev", "libadwaita-1-dev"])]),

        // A D-Bus-shaped value tree with no transport attached: shared by the
        // core (validation, storage) and DBusKit (marshalling).
        .target(name: "TypedValues"),
        // The only module that imports libdbus.
        .target(name: "DBusKit", dependencies: ["CDBus", "TypedValues"]),
        // The only module that imports GLib/GIO: main loop, the libdbus bridge,
        // key files, file monitors. Bookmark files are read into the core's
        // recent-file entries, so the entry is declared once.
        .target(name: "GLibSupport", dependencies: ["CGLib", "DBusKit", "UserActivityCore"]),
        // Plain Swift: activities, identity, declared types, limits. No D-Bus.
        .target(name: "UserActivityCore", dependencies: ["TypedValues"]),
        // SQLite-backed saved activities (the C API behind one small module).
        .target(name: "ActivityStore", dependencies: ["CSQLite", "TypedValues"]),
        // The contract as data: interfaces, members, signatures, docs, error
        // names. Shared by the service (dispatch, introspection) and the client
        // library (the Handler interface it serves), so they cannot drift.
        .target(name: "UserActivityInterfaces", dependencies: ["UserActivityCore", "TypedValues"]),
        // D-Bus glue: dispatch tables, handlers, introspection.
        .target(name: "UserActivityService", dependencies: [
            "DBusKit", "GLibSupport", "UserActivityCore", "UserActivityInterfaces", "ActivityStore", "TypedValues",
            .product(name: "Logging", package: "swift-log"),
        ]),
        // No swift-argument-parser and no Foundation here: the daemon runs all
        // session long, and each would add megabytes to its resident size.
        .executableTarget(name: "useractivityd", dependencies: [
            "UserActivityService", "UserActivityCore", "GLibSupport",
            .product(name: "Logging", package: "swift-log"),
        ]),
        .target(name: "UserActivity", dependencies: ["DBusKit", "GLibSupport", "TypedValues", "UserActivityCore", "UserActivityInterfaces"]),
        .executableTarget(name: "UserActivityExample", dependencies: ["UserActivity"]),
        .executableTarget(name: "useractivityctl", dependencies: [
            "DBusKit", "TypedValues", "UserActivityCore", "UserActivityInterfaces", "GLibSupport",
            .product(name: "ArgumentParser", package: "swift-argument-parser"),
        ]),

        // Handoff between devices, plain Swift: frames, pairing code and
        // rules, pinned devices, what may be advertised. No GLib, no network,
        // no SQLite; SHA-256 and HMAC come from GnuTLS (CGnuTLS, called in
        // SHA256.swift, LinkPrivacy.swift and FileTransfer.swift), which
        // handoffd links anyway.
        .target(name: "HandoffCore", dependencies: ["TypedValues", "UserActivityCore", "CGnuTLS"]),
        // The network-facing daemon: GIO TLS sockets on the GLib loop, GnuTLS
        // for its key, D-Bus objects of org.example.UserActivity.Handoff,
        // Avahi (HandoffDiscovery) to find and be found. The one exception to
        // "C only through the wrappers": its network files (GIO.swift,
        // ConnectionListener.swift, PeerLink.swift, the listener in
        // PeerLinks.swift, the stream relay's fd watch) call GIO's socket and
        // TLS API directly, and Identity.swift makes its certificates with
        // GnuTLS's X.509 API; no other module uses either, so a wrapper would
        // be a second copy of that API for one caller. Everything else here
        // imports the wrappers (GLibSupport, DBusKit).
        .executableTarget(name: "useractivity-handoffd", dependencies: [
            "HandoffCore", "HandoffDiscovery", "CGnuTLS", "CGLib", "DBusKit", "GLibSupport", "TypedValues", "UserActivityCore",
            "UserActivityInterfaces",
            .product(name: "Logging", package: "swift-log"),
        ]),

        // Handoff's DNS-SD discovery through Avahi's D-Bus API on the system
        // bus (publish `_useractivity._tcp`, browse, resolve). No Foundation:
        // it runs inside useractivity-handoffd.
        .target(name: "HandoffDiscovery", dependencies: ["DBusKit", "GLibSupport", "TypedValues"]),
        // Drives HandoffDiscovery from the command line (tests, trying it by hand).
        .executableTarget(name: "handoff-discovery-probe", dependencies: ["HandoffDiscovery", "GLibSupport"]),

        // GTK 4 / libadwaita for the settings app: signals, casts, small constructors.
        .target(name: "GtkSupport", dependencies: ["CGtk"]),
        // The settings app: Handoff, pairing, history and privacy pages, on
        // GTK's GLib main loop with the project's libdbus bridge. Its pages
        // call GTK and libadwaita (CGtk) directly: that widget API is the
        // app, and GtkSupport holds only what Swift cannot call plainly.
        .executableTarget(name: "useractivity-settings", dependencies: [
            "CGtk", "GtkSupport", "DBusKit", "GLibSupport", "TypedValues",
        ]),

        // The browser extension's native-messaging host: framing and a small
        // JSON reader/writer (plain Swift, fuzzed), the coalescing and
        // session logic on the Scheduler seam, and the executable that joins
        // them to stdin/stdout and the client library.
        .target(name: "BrowserHostProtocol", dependencies: ["UserActivityCore"]),
        .target(name: "BrowserHost", dependencies: ["BrowserHostProtocol", "GLibSupport"]),
        .executableTarget(name: "useractivity-browser-host", dependencies: [
            "BrowserHost", "BrowserHostProtocol", "UserActivity", "UserActivityCore", "GLibSupport",
        ]),

        // Test helpers: private dbus-daemon, child processes, fixture apps, a bus client.
        .target(name: "TestSupport", dependencies: ["DBusKit", "TypedValues"], path: "Tests/TestSupport", exclude: ["README.md"]),
        // Seeded generators and parser properties, shared by the hardening tests,
        // the store tests, the libFuzzer harnesses (Fuzz/, symlinked) and the benchmarks.
        .target(name: "FuzzGenerators", dependencies: ["TypedValues", "UserActivityCore", "ActivityStore"], path: "Tests/FuzzGenerators"),
        // Time moved by hand for tests (ManualScheduler), kept out of the product library.
        .target(name: "SchedulerTestSupport", dependencies: ["GLibSupport", "DBusKit"], path: "Tests/SchedulerTestSupport"),
        .testTarget(name: "UserActivityCoreTests", dependencies: ["UserActivityCore", "TypedValues", "GLibSupport"]),
        .testTarget(name: "ActivityStoreTests", dependencies: ["ActivityStore", "TypedValues", "FuzzGenerators"]),
        .testTarget(name: "GLibSupportTests", dependencies: ["GLibSupport", "CGLib", "DBusKit", "TestSupport", "SchedulerTestSupport"]),
        .testTarget(name: "DBusDispatchTests", dependencies: [
            "UserActivityService", "UserActivityInterfaces", "DBusKit", "GLibSupport", "TestSupport", "TypedValues", "ActivityStore",
            "SchedulerTestSupport",
        ]),
        .testTarget(name: "EndToEndTests", dependencies: ["TestSupport", "DBusKit", "TypedValues"]),
        .testTarget(name: "UserActivityTests", dependencies: ["UserActivity", "TestSupport", "DBusKit", "TypedValues"]),
        .testTarget(name: "ContinuationTests", dependencies: ["TestSupport", "DBusKit", "TypedValues"]),
        // The example apps of examples/ (C, Python, GJS, Qt): built from the
        // interface XML and run against the daemon. examples/ is in no target.
        .testTarget(name: "ExampleAppTests", dependencies: ["TestSupport", "DBusKit", "TypedValues"]),
        .testTarget(name: "CLITests", dependencies: ["TestSupport", "DBusKit", "TypedValues"], exclude: ["Expected"]),
        .testTarget(name: "SearchProviderTests", dependencies: ["TestSupport", "DBusKit", "TypedValues"]),
        // Real sandboxes: bwrap + xdg-dbus-proxy (Flatpak) and snap cgroups, around the built daemon.
        .testTarget(name: "SandboxTests", dependencies: ["TestSupport"]),
        .testTarget(name: "DiscoveryTests", dependencies: ["TestSupport", "HandoffDiscovery", "TypedValues", "DBusKit"]),
        .testTarget(name: "HardeningTests", dependencies: ["TestSupport", "DBusKit", "TypedValues", "UserActivityCore", "UserActivityService", "UserActivityInterfaces", "GLibSupport", "ActivityStore", "UserActivity", "FuzzGenerators"]),
        .testTarget(name: "HandoffCoreTests", dependencies: ["HandoffCore", "TypedValues", "UserActivityCore"]),
        // Peers/ (the Python TLS peers) and FuzzCorpus/ are read from the checkout.
        .testTarget(name: "HandoffTests", dependencies: ["TestSupport", "DBusKit", "TypedValues", "HandoffCore", "FuzzGenerators"], exclude: ["Peers", "FuzzCorpus"]),
        // handoffd's parts (Pairing, PeerLinks) in the test process, linked over 127.0.0.1, on a ManualScheduler.
        .testTarget(name: "HandoffDaemonTests", dependencies: [
            "useractivity-handoffd", "HandoffCore", "DBusKit", "GLibSupport", "TypedValues", "UserActivityInterfaces",
            "TestSupport", "SchedulerTestSupport", .product(name: "Logging", package: "swift-log"),
        ]),
        // The browser host: protocol property tests, coalescing on a ManualScheduler, the built host on a private bus.
        .testTarget(name: "BrowserHostTests", dependencies: ["BrowserHost", "BrowserHostProtocol", "GLibSupport", "SchedulerTestSupport", "TestSupport", "DBusKit", "TypedValues"]),
    ],
    swiftLanguageModes: [.v6]
)
