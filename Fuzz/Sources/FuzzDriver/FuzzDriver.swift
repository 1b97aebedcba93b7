// SPDX-License-Identifier: Apache-2.0
import Foundation
import GLibSupport
import UserActivityCore

// The daemon states this conformance in UserActivityService, which the
// fuzzers do not build (it needs swift-log); the same one-liner here.
extension GLibKeyFile: KeyFileReading {}

/// libFuzzer's entry point for programs that own `main`: the toolchain's
/// `libclang_rt.fuzzer` provides it, and SwiftPM renames an executable's
/// `main`, so `@_cdecl("LLVMFuzzerTestOneInput")` alone would not be called.
@_silgen_name("LLVMFuzzerRunDriver")
private func LLVMFuzzerRunDriver(
    _ argc: UnsafeMutablePointer<CInt>,
    _ argv: UnsafeMutablePointer<UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?>,
    _ callback: @convention(c) (UnsafePointer<UInt8>?, Int) -> CInt) -> CInt

public enum FuzzDriver {
    /// The check of the running harness (a C callback cannot capture it).
    nonisolated(unsafe) private static var check: (([UInt8]) -> [String])?

    /// GLib's key-file parser, as the daemon uses it.
    public static let keyFileLoader: KeyFileLoader = { GLibKeyFile.load(path: $0) }

    /// A scratch directory of this process, emptied by each check that uses it.
    public static let scratch: String = {
        let path = NSTemporaryDirectory() + "ua-fuzz-\(getpid())"
        try? FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
        atexit { try? FileManager.default.removeItem(atPath: NSTemporaryDirectory() + "ua-fuzz-\(getpid())") }
        return path
    }()

    /// Runs libFuzzer with `body` as the test: a returned violation aborts,
    /// so that libFuzzer saves the input as a crash artifact.
    public static func run(_ body: @escaping ([UInt8]) -> [String]) -> Never {
        check = body
        var argc = CommandLine.argc
        var argv: UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>? = CommandLine.unsafeArgv
        exit(LLVMFuzzerRunDriver(&argc, &argv) { data, count in
            let bytes = data.map { Array(UnsafeBufferPointer(start: $0, count: count)) } ?? []
            let violations = FuzzDriver.check?(bytes) ?? []
            if !violations.isEmpty {
                FileHandle.standardError.write(Data(("property violated:\n" + violations.joined(separator: "\n") + "\n").utf8))
                abort()
            }
            return 0
        })
    }
}
