// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Thrown when a built executable cannot be found.
public struct BuiltProductNotFound: Error, CustomStringConvertible, Sendable {
    /// The executable's name.
    public var name: String
    /// The environment variable that would override the search.
    public var overrideVariable: String
    /// The places looked at.
    public var searched: [String]

    public var description: String {
        "\(name) is not built: run `swift build` first (or set \(overrideVariable) to its path). Looked in:\n"
            + searched.map { "  \($0)" }.joined(separator: "\n")
    }
}

/// Locates executables built by SwiftPM (`useractivityd`) for tests and benchmarks.
///
/// Order:
/// 1. `<NAME>_PATH` (for `useractivityd`: `USERACTIVITYD_PATH`), a file or the
///    directory holding it.
/// 2. The directory of the running binary (`/proc/self/exe`,
///    `CommandLine.arguments[0]`, `Bundle.main`): test bundles and the bench
///    sit next to the executables of the same build.
/// 3. Walking up from there and from the current directory: every
///    `.build*` scratch directory met on the way, its `debug`/`release` and
///    `<triple>/debug|release` subdirectories; the configuration of the running
///    binary wins, then the newest file.
public enum BuiltProducts {
    /// The path of `useractivityd`.
    public static func useractivityd() throws -> String {
        try executable(named: "useractivityd")
    }

    /// The path of the built executable `name`.
    public static func executable(named name: String) throws -> String {
        let variable = overrideVariable(for: name)
        var searched: [String] = []
        if let value = ProcessInfo.processInfo.environment[variable], !value.isEmpty {
            let candidate = isDirectory(value) ? "\(value)/\(name)" : value
            if isExecutableFile(candidate) { return candidate }
            searched.append("\(variable)=\(value)")
        }

        let starts = startDirectories()
        // 2. Next to the running binary.
        for dir in starts.binaryDirs {
            let candidate = "\(dir)/\(name)"
            searched.append(candidate)
            if isExecutableFile(candidate) { return candidate }
        }

        // 3. Scratch directories further up.
        let preferredConfiguration = starts.binaryDirs.first.map { ($0 as NSString).lastPathComponent }
        var found: Set<String> = []
        for start in starts.binaryDirs + [starts.currentDirectory] {
            var dir = start
            while true {
                for scratch in scratchDirectories(in: dir) {
                    for productsDir in productDirectories(in: scratch) {
                        let candidate = "\(productsDir)/\(name)"
                        if isExecutableFile(candidate) { found.insert(candidate) }
                    }
                    searched.append("\(scratch)/…/{debug,release}")
                }
                let parent = (dir as NSString).deletingLastPathComponent
                if parent == dir || parent.isEmpty { break }
                dir = parent
            }
        }
        let ranked = found.sorted { a, b in
            let ca = ((a as NSString).deletingLastPathComponent as NSString).lastPathComponent == preferredConfiguration
            let cb = ((b as NSString).deletingLastPathComponent as NSString).lastPathComponent == preferredConfiguration
            if ca != cb { return ca }
            return modificationTime(a) > modificationTime(b)
        }
        if let best = ranked.first { return best }
        throw BuiltProductNotFound(name: name, overrideVariable: variable, searched: searched)
    }

    /// `useractivityd` → `USERACTIVITYD_PATH`, `useractivity-bench` → `USERACTIVITY_BENCH_PATH`.
    public static func overrideVariable(for name: String) -> String {
        String(name.uppercased().map { $0.isLetter || $0.isNumber ? $0 : "_" }) + "_PATH"
    }

    private static func startDirectories() -> (binaryDirs: [String], currentDirectory: String) {
        let cwd = FileManager.default.currentDirectoryPath
        var binaries: [String] = []
        if let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") {
            binaries.append(exe)
        }
        if let arg0 = CommandLine.arguments.first, arg0.contains("/") {
            binaries.append(arg0.hasPrefix("/") ? arg0 : "\(cwd)/\(arg0)")
        }
        if let path = Bundle.main.executablePath { binaries.append(path) }
        var dirs: [String] = []
        for binary in binaries {
            let dir = (URL(fileURLWithPath: binary).resolvingSymlinksInPath().standardizedFileURL.path as NSString)
                .deletingLastPathComponent
            if !dirs.contains(dir) { dirs.append(dir) }
        }
        let bundle = Bundle.main.bundlePath
        if !bundle.isEmpty, !dirs.contains(bundle), isDirectory(bundle) {
            dirs.append(bundle)
        }
        return (dirs, cwd)
    }

    /// `.build`, `.build-support`, … directly inside `dir`.
    private static func scratchDirectories(in dir: String) -> [String] {
        guard let entries = try? FileManager.default.contentsOfDirectory(atPath: dir) else { return [] }
        return entries.filter { $0.hasPrefix(".build") }.map { "\(dir)/\($0)" }.filter(isDirectory).sorted()
    }

    /// `<scratch>/{debug,release}` and `<scratch>/<triple>/{debug,release}`.
    private static func productDirectories(in scratch: String) -> [String] {
        var result: [String] = []
        let configurations = ["debug", "release"]
        for configuration in configurations where isDirectory("\(scratch)/\(configuration)") {
            result.append("\(scratch)/\(configuration)")
        }
        if let entries = try? FileManager.default.contentsOfDirectory(atPath: scratch) {
            for entry in entries.sorted() where !configurations.contains(entry) {
                for configuration in configurations where isDirectory("\(scratch)/\(entry)/\(configuration)") {
                    result.append("\(scratch)/\(entry)/\(configuration)")
                }
            }
        }
        return result
    }

    private static func isDirectory(_ path: String) -> Bool {
        var isDir: ObjCBool = false
        return FileManager.default.fileExists(atPath: path, isDirectory: &isDir) && isDir.boolValue
    }

    private static func isExecutableFile(_ path: String) -> Bool {
        var st = stat()
        return stat(path, &st) == 0 && (st.st_mode & S_IFMT) == S_IFREG && access(path, X_OK) == 0
    }

    private static func modificationTime(_ path: String) -> Double {
        var st = stat()
        guard stat(path, &st) == 0 else { return 0 }
        return Double(st.st_mtim.tv_sec) + Double(st.st_mtim.tv_nsec) / 1e9
    }
}
