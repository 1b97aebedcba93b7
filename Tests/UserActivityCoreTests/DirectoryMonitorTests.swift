// SPDX-License-Identifier: Apache-2.0
import CGLib
import Foundation
import GLibSupport
import Testing

/// Counts callbacks; only touched on the test's own thread.
private final class Counter {
    var value = 0
}

/// Runs `body` with a fresh context as this thread's default, as the service's
/// GLib thread does, and pops it afterwards so no other test sees it.
private func withFreshContext<T>(_ body: (OpaquePointer) throws -> T) rethrows -> T {
    let context = g_main_context_new()!
    g_main_context_push_thread_default(context)
    defer {
        g_main_context_pop_thread_default(context)
        g_main_context_unref(context)
    }
    return try body(context)
}

/// Iterates `context` until `condition` holds or `seconds` pass.
private func iterate(_ context: OpaquePointer, seconds: Double = 5, until condition: () -> Bool) -> Bool {
    let deadline = Date().addingTimeInterval(seconds)
    while !condition() && Date() < deadline {
        if g_main_context_iteration(context, CGLIB_FALSE) == 0 { usleep(5_000) }
    }
    return condition()
}

@Suite struct DirectoryMonitorTests {
    @Test func reportsANewFile() throws {
        let tree = try FixtureTree()
        try tree.makeDirectory("applications")
        try withFreshContext { context in
            let counter = Counter()
            let monitor = DirectoryMonitor(directories: [tree.path("applications")], debounceMilliseconds: 50) {
                counter.value += 1
            }
            #expect(monitor.watchedPaths == [tree.path("applications")])
            try tree.write("applications/org.example.App.desktop", desktopEntry())
            #expect(iterate(context) { counter.value > 0 }, "no change callback within 5 s")
            withExtendedLifetime(monitor) {}
        }
    }

    @Test func followsADirectoryThatAppearsLater() throws {
        let tree = try FixtureTree()
        let target = tree.path("share/applications")
        try withFreshContext { context in
            let counter = Counter()
            let monitor = DirectoryMonitor(directories: [target], debounceMilliseconds: 50) { counter.value += 1 }
            #expect(monitor.watchedPaths == [tree.root], "the nearest existing ancestor is watched")

            try tree.makeDirectory("share/applications")
            #expect(iterate(context) { monitor.watchedPaths.contains(target) })
            let before = counter.value
            #expect(before > 0)

            try tree.write("share/applications/vendor/org.example.App.desktop", desktopEntry())
            #expect(iterate(context) { counter.value > before }, "a file in the new directory is seen")
            #expect(iterate(context) { monitor.watchedPaths.contains(target + "/vendor") }, "subdirectories are watched")
            withExtendedLifetime(monitor) {}
        }
    }
}
