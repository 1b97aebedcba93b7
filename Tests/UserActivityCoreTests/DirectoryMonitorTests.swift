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

    @Test func seesEditsRenamesAndRemovalsAndStopsWhenReleased() throws {
        let tree = try FixtureTree()
        try tree.makeDirectory("applications/vendor")
        try tree.write("applications/vendor/a.desktop", desktopEntry())
        try withFreshContext { context in
            let counter = Counter()
            var monitor: DirectoryMonitor? = DirectoryMonitor(directories: [tree.path("applications")],
                                                              debounceMilliseconds: 20) { counter.value += 1 }
            #expect(monitor?.watchedPaths == [tree.path("applications"), tree.path("applications/vendor")])

            func expectCallback(after change: () throws -> Void, _ what: Comment) rethrows {
                let before = counter.value
                try change()
                #expect(iterate(context) { counter.value > before }, what)
                // Let the burst settle so the next change starts a new one.
                _ = iterate(context, seconds: 0.1) { false }
            }
            try expectCallback(after: { try tree.write("applications/vendor/a.desktop", desktopEntry() + "Comment=x\n") },
                               "an edit in a subdirectory")
            try expectCallback(after: {
                try FileManager.default.moveItem(atPath: tree.path("applications/vendor/a.desktop"),
                                                 toPath: tree.path("applications/vendor/b.desktop"))
            }, "a rename")
            try expectCallback(after: { try FileManager.default.removeItem(atPath: tree.path("applications/vendor")) },
                               "a removed subdirectory")
            #expect(monitor?.watchedPaths == [tree.path("applications")], "the removed directory's watch is gone")

            monitor = nil
            let afterRelease = counter.value
            try tree.write("applications/c.desktop", desktopEntry())
            #expect(!iterate(context, seconds: 0.3) { counter.value > afterRelease }, "no callback after release")
        }
    }
}
