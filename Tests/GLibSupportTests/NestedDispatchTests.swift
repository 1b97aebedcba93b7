// SPDX-License-Identifier: Apache-2.0
import CGLib
import Foundation
import GLibSupport
import Testing

/// A descriptor source's action with a loop nested inside it (as an app's
/// modal dialog runs one): what each `MainLoop.NestedDispatch` lets the
/// nested loop do with the same, still ready, descriptor.
@Suite("MainLoop.NestedDispatch")
struct NestedDispatchTests {
    /// The action's calls, each as its nesting depth: after one pass of the
    /// outer loop whose call runs three nested passes, then after one more
    /// outer pass. The pipe stays readable: the action never reads it.
    private static func calls(_ nested: MainLoop.NestedDispatch) throws -> (first: [Int], second: [Int]) {
        let loop = MainLoop.withNewContext()
        var fds: [Int32] = [0, 0]
        try #require(pipe(&fds) == 0)
        defer { close(fds[0]); close(fds[1]) }
        try #require(write(fds[1], "x", 1) == 1)
        var depth = 0
        var entries: [Int] = []
        let source = loop.onFileDescriptor(fds[0], condition: G_IO_IN, nested: nested) { _ in
            depth += 1
            defer { depth -= 1 }
            entries.append(depth)
            if entries.count == 1 {
                for _ in 0..<3 { _ = loop.iterate(mayBlock: false) }
            }
            return true
        }
        defer { source.cancel() }
        _ = loop.iterate(mayBlock: false)
        let first = entries
        _ = loop.iterate(mayBlock: false)
        #expect(source.isActive)
        return (first, entries)
    }

    @Test("blocked: GLib keeps the source out of the nested loop")
    func blocked() throws {
        let calls = try Self.calls(.blocked)
        #expect(calls.first == [1])
        #expect(calls.second == [1, 1])
    }

    @Test("allowed: the nested loop calls the action again, inside itself")
    func allowed() throws {
        let calls = try Self.calls(.allowed)
        #expect(calls.first == [1, 2, 2, 2])
        #expect(calls.second == [1, 2, 2, 2, 1])
    }

    @Test("skipped: the nested loop leaves the action alone; the next outer pass calls it again")
    func skipped() throws {
        let calls = try Self.calls(.skipped)
        #expect(calls.first == [1])
        #expect(calls.second == [1, 1])
    }
}
