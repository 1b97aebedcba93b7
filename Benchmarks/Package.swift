// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
import PackageDescription

// useractivity-bench: the daemon's latency, throughput and size against a
// Ping baseline and against other services (bench/run.sh, bench/report.sh).
// Not part of the product: the modules it uses are symlinked from
// ../Sources and ../Tests/TestSupport (SwiftPM only takes target paths inside
// the package), so it always measures the current code. See docs/benchmarks.md.
let package = Package(
    name: "useractivity-benchmarks",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "useractivity-bench", targets: ["useractivity-bench"]),
        // In-process, no bus: the in-memory SearchIndex against an FTS5 table
        // answering the same queries (bench/search-index.sh).
        .executable(name: "searchindex-bench", targets: ["searchindex-bench"]),
    ],
    targets: [
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1"),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3"),
        .systemLibrary(name: "CGLib", pkgConfig: "gio-unix-2.0"),
        .target(name: "TypedValues"),
        .target(name: "ActivityStore", dependencies: ["CSQLite", "TypedValues"]),
        .target(name: "DBusKit", dependencies: ["CDBus", "TypedValues"]),
        .target(name: "GLibSupport", dependencies: ["CGLib", "DBusKit", "UserActivityCore"]),
        .target(name: "UserActivityCore", dependencies: ["TypedValues"]),
        .target(name: "UserActivityInterfaces", dependencies: ["UserActivityCore", "TypedValues"]),
        .target(name: "TestSupport", dependencies: ["DBusKit", "TypedValues"], exclude: ["README.md"]),
        .executableTarget(name: "useractivity-bench", dependencies: [
            "CDBus", "CGLib", "DBusKit", "GLibSupport", "TypedValues", "UserActivityInterfaces", "TestSupport",
        ]),
        .target(name: "CHeapInUse"),
        .executableTarget(name: "searchindex-bench", dependencies: ["ActivityStore", "CSQLite", "CHeapInUse"]),
    ],
    swiftLanguageModes: [.v6]
)
