// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity

/// A GLib main loop run by a thread the test owns, as a GTK app runs its own.
final class LoopThread: @unchecked Sendable {
    let loop = GLibMainLoop.withNewContext()
    let name: String
    private let finished = DispatchSemaphore(value: 0)

    init(name: String) {
        self.name = name
        let started = DispatchSemaphore(value: 0)
        let thread = Thread { [self] in
            started.wait()               // Linux Foundation: name the thread once start() returned
            Thread.current.name = name
            loop.run()
            finished.signal()
        }
        thread.start()
        started.signal()
    }

    func stop() {
        // quit() before run() started would be lost: wait until the loop runs.
        _ = waitUntil(timeout: 5, interval: 0.005) { loop.isRunning }
        loop.quit()
        finished.wait()
    }
}

/// Hands `activity` off to its own app; the threads that willContinue and
/// `activity`'s wasContinued (which records into `threads`) ran on.
private func handOffToItsOwnApp(_ activity: UserActivity, client: UserActivityClient,
                                threads: Recorder<String>) async throws -> [String] {
    try await client.register(continuationHandler: ContinuationClosures(
        willContinue: { _ in threads.append(Thread.current.name ?? "?") },
        continue: { _ in true }))
    try await activity.handOff(options: .init(targetAppID: UA.notes))
    #expect(await threads.wait { $0.count == 2 })
    return threads.values
}

@Suite("The library's loop: on a thread of its own, or attached to the app's GLib main loop", .serialized)
struct MainLoopTests {
    @Test("Without a loop of the app's own, the library runs one on its thread; callbacks come from it")
    func ownThread() async throws {
        let h = try LibraryHarness()
        let client = try h.client(UA.notes)
        #expect(client.runner.ownsThread)
        let threads = Recorder<String>()
        let activity = UserActivity(activityType: UA.editNote, client: client)
        activity.title = "Own thread"
        activity.wasContinued = { _ in threads.append(Thread.current.name ?? "?") }
        try await activity.becomeCurrent().wait()
        #expect(try await h.currentActivity() == activity.objectPath)

        #expect(try await handOffToItsOwnApp(activity, client: client, threads: threads) == ["UserActivity", "UserActivity"],
                "willContinue and wasContinued run on the library's loop thread")
        client.close()
        await #expect(throws: UserActivityError.self) { try await client.search("x") }
    }

    @Test("Attached to a caller's MainLoop: requests are served by that loop, callbacks run on its thread")
    func attachedToCallersLoop() async throws {
        let h = try LibraryHarness()
        let loopThread = LoopThread(name: "app-main-loop")
        defer { loopThread.stop() }
        let client = try UserActivityClient(appID: UA.notes, address: h.bus.address, mainLoop: loopThread.loop)
        #expect(!client.runner.ownsThread)
        let threads = Recorder<String>()
        let activity = UserActivity(activityType: UA.editNote, client: client)
        activity.title = "Attached"
        activity.userInfo = ["where": "the app's loop"]
        activity.wasContinued = { _ in threads.append(Thread.current.name ?? "?") }
        try await activity.becomeCurrent().wait()
        #expect(try await h.currentActivity() == activity.objectPath)
        activity.title = "Attached (updated)"
        await client.waitForPendingRequests()
        #expect(try await h.properties(try #require(activity.objectPath))["Title"] == .string("Attached (updated)"))
        #expect(try await client.serviceVersion().isEmpty == false)

        #expect(try await handOffToItsOwnApp(activity, client: client, threads: threads) == ["app-main-loop", "app-main-loop"])
        client.close()
    }

    @Test("Attached to a loop that is not running yet: requests wait for it, then go out in order")
    func attachedBeforeRunning() async throws {
        let h = try LibraryHarness()
        let loop = GLibMainLoop.withNewContext()
        let client = try UserActivityClient(appID: UA.notes, address: h.bus.address, mainLoop: loop)
        let first = UserActivity(activityType: UA.editNote, client: client)
        first.title = "queued first"
        let firstDone = first.becomeCurrent()
        let second = UserActivity(activityType: UA.showPage, client: client)
        second.title = "queued second"
        let secondDone = second.becomeCurrent()
        try await Task.sleep(nanoseconds: 100_000_000)
        #expect(!firstDone.isFinished, "nothing is sent before the loop runs")

        // Now the app runs its loop (here by iterating it on a thread).
        let stop = Recorder<Bool>()
        let box = UncheckedSendable(loop)
        let iterating = Thread {
            while stop.values.isEmpty { box.value.iterate(mayBlock: false); usleep(1000) }
        }
        iterating.start()
        defer { stop.append(true) }
        try await firstDone.wait()
        try await secondDone.wait()
        #expect(try await h.currentActivity() == second.objectPath)
    }
}

@Suite("When the service restarts", .serialized)
struct ServiceRestartTests {
    @Test("The client registers again and publishes its current activity again; continuations reach it")
    func serviceRestart() async throws {
        try await restart()
    }

    private func restart() async throws {
        let h = try LibraryHarness()
        let client = try h.client(UA.notes)
        let continued = Recorder<String>()
        let disconnections = Recorder<Void>()
        client.onDisconnected = { disconnections.append(()) }
        try await client.register(continuationHandler: ContinuationClosures { activity in
            continued.append(activity.title ?? "")
            return true
        })
        let activity = UserActivity(activityType: UA.editNote, client: client)
        activity.title = "Survives a restart"
        activity.userInfo = ["note": "n-3"]
        try await activity.becomeCurrent().wait()
        let before = try #require(activity.objectPath)

        func daemonPID() async -> UInt32? {
            let reply = try? await offload {
                let connection = try h.rawConnection()
                let message = Message.methodCall(destination: "org.freedesktop.DBus", path: "/org/freedesktop/DBus",
                                                 interface: "org.freedesktop.DBus", member: "GetConnectionUnixProcessID")
                try message.append([.string(UA.busName)])
                return try connection.call(message, timeoutMilliseconds: 5000).arguments()
            }
            if case .uint32(let pid)? = reply?.first { return pid }
            return nil
        }
        let oldPID = try #require(await daemonPID())
        kill(pid_t(oldPID), SIGKILL)

        // The client starts the service again by itself and republishes
        // (the new instance may well reuse the same object path).
        let republished = await waitUntil(timeout: 30, interval: 0.05) {
            guard let pid = await daemonPID(), pid != oldPID, let path = activity.objectPath else { return false }
            return (try? await h.currentActivity()) == path
        }
        #expect(republished, "the current activity was not published again (before: \(before))\n\(h.logTail())")
        if let path = activity.objectPath {
            let properties = try await h.properties(path)
            #expect(properties["Title"] == .string("Survives a restart"))
            #expect(entries(properties["UserInfo"]) == ["note": .string("n-3")])
        }
        // The handler is registered with the new instance.
        let caller = try h.client(UA.reader)
        let link = UserActivity(activityType: UA.editNote, client: caller)
        link.title = "after the restart"
        #expect(try await caller.continueActivity(link, options: .init(targetAppID: UA.notes, timeout: 60)) == UA.notes)
        #expect(continued.values == ["after the restart"])
        #expect(disconnections.values.isEmpty, "onDisconnected ran although only the service restarted")
    }

    @Test("onDisconnected runs once when the bus goes away, on the loop thread; not for close()")
    func busGoesAway() async throws {
        let h = try LibraryHarness()
        let lost = try h.client(UA.notes)
        let closed = try h.client(UA.reader)
        let calls = Recorder<Bool>()
        lost.onDisconnected = { calls.append(Thread.isMainThread) }
        closed.onDisconnected = { Issue.record("onDisconnected ran for a client that was closed") }
        #expect(!(try await lost.serviceVersion()).isEmpty)
        closed.close()
        #expect(calls.values.isEmpty)

        kill(h.bus.pid, SIGKILL)
        let called = await waitUntil(timeout: 30, interval: 0.02) { !calls.values.isEmpty }
        #expect(called, "onDisconnected was not called after the bus was killed")
        try await Task.sleep(nanoseconds: 200_000_000)
        #expect(calls.values == [false], "called \(calls.values.count) times, or on the main thread")
        await #expect(throws: UserActivityError.self) { _ = try await lost.serviceVersion() }
    }
}
