// swift-tools-version:6.0
// SPDX-License-Identifier: Apache-2.0
import Foundation
import PackageDescription

// libFuzzer harnesses for the daemon's parsing code. The daemon's modules are
// symlinked from ../Sources (SwiftPM only takes target paths inside the
// package), so the fuzzers always test the current code without being part
// of the main package's build. Build and run with `Fuzz/run.sh`.
//
// lld: with `-sanitize=fuzzer` the default gold linker dies with an internal
// error (dwarf_reader.cc) on this toolchain; lld links fine.
let lld: [LinkerSetting] = [.unsafeFlags(["-use-ld=lld"])]

func harness(_ name: String, extra: [Target.Dependency] = []) -> Target {
    .executableTarget(name: name, dependencies: ["FuzzDriver", "FuzzGenerators"] + extra, linkerSettings: lld)
}

// Handoff's frame decoder (Sources/HandoffCore, symlinked like the others):
// its harness is built once that module is in the tree.
let hasHandoffCore = FileManager.default.fileExists(atPath: Context.packageDirectory + "/Sources/HandoffCore/Frame.swift")
let handoffTargets: [Target] = hasHandoffCore ? [
    .systemLibrary(name: "CGnuTLS", pkgConfig: "gnutls"),
    .target(name: "HandoffCore", dependencies: ["TypedValues", "UserActivityCore", "CGnuTLS"]),
    harness("fuzz-handoff-frame", extra: ["HandoffCore"]),
] : []

let package = Package(
    name: "useractivity-fuzz",
    targets: [
        .systemLibrary(name: "CDBus", pkgConfig: "dbus-1"),
        .systemLibrary(name: "CGLib", pkgConfig: "gio-unix-2.0"),
        .systemLibrary(name: "CSQLite", pkgConfig: "sqlite3"),
        .target(name: "TypedValues"),
        .target(name: "DBusKit", dependencies: ["CDBus", "TypedValues"]),
        .target(name: "GLibSupport", dependencies: ["CGLib", "DBusKit", "UserActivityCore"]),
        .target(name: "UserActivityCore", dependencies: ["TypedValues"]),
        .target(name: "ActivityStore", dependencies: ["CSQLite", "TypedValues"]),
        // Shared with Tests/HardeningTests (symlinked there): generators and properties.
        .target(name: "FuzzGenerators", dependencies: ["TypedValues", "UserActivityCore", "ActivityStore"]),
        .target(name: "FuzzDriver", dependencies: ["GLibSupport", "UserActivityCore"]),
        harness("fuzz-desktop-entries"),
        harness("fuzz-cgroup"),
        harness("fuzz-process-tree"),
        harness("fuzz-user-info"),
        harness("fuzz-codec-decode"),
        // The browser host's input: framing, JSON, messages.
        .target(name: "BrowserHostProtocol", dependencies: ["UserActivityCore"]),
        harness("fuzz-browser-message", extra: ["BrowserHostProtocol"]),
    ] + handoffTargets,
    swiftLanguageModes: [.v6]
)
