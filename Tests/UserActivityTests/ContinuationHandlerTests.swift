// SPDX-License-Identifier: Apache-2.0
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
@testable import UserActivity

/// What a test handler saw.
struct Delivered: Sendable {
    var type: String
    var title: String?
    var userInfo: [String: UserInfoValue]
    var publisher: String?
    var activationToken: String?
    var hasStream: Bool
    var thread: String?
}

@Suite("Continuation into the library's handler", .serialized)
struct ContinuationHandlerTests {
    @Test("ContinueActivity reaches continue(_:) with the activity's data; willContinue runs first; the app ID comes back")
    func continueIntoHandler() async throws {
        let h = try LibraryHarness()
        let notes = try h.client(UA.notes)
        let caller = try h.client(UA.reader)
        let events = Recorder<String>()
        let delivered = Recorder<Delivered>()

        do {
            try await notes.register(continuationHandler: ContinuationClosures(
                willContinue: { type in events.append("will \(type)") },
                continue: { activity in
                    events.append("continue \(activity.activityType)")
                    delivered.append(Delivered(type: activity.activityType, title: activity.title, userInfo: activity.userInfo,
                                               publisher: activity.publisherAppID, activationToken: activity.activationToken,
                                               hasStream: activity.hasContinuationStream, thread: nil))
                    return true
                }))

            let link = UserActivity(activityType: UA.editNote, client: caller)
            link.title = "From a link"
            link.userInfo = ["note": "n-5", "line": .uint32(3)]
            let app = try await caller.continueActivity(link, options: .init(targetAppID: UA.notes, timeout: 60,
                                                                              activationToken: "token-123"))
            #expect(app == UA.notes)
            let got = try #require(delivered.values.first)
            #expect(got.type == UA.editNote)
            #expect(got.title == "From a link")
            #expect(got.userInfo == ["note": "n-5", "line": .uint32(3)])
            #expect(got.publisher == UA.reader)
            #expect(got.activationToken == "token-123")
            #expect(got.hasStream == false)
            #expect(events.values == ["will \(UA.editNote)", "continue \(UA.editNote)"])
        }
    }

    @Test("A handler answering false or throwing: the caller gets ContinuationFailed or the thrown error's name")
    func handlerRefuses() async throws {
        let h = try LibraryHarness()
        let notes = try h.client(UA.notes)
        let caller = try h.client(UA.reader)
        do {
            try await notes.register(continuationHandler: ContinuationClosures { activity in
                if activity.userInfo["refuse"]?.boolValue == true { return false }
                throw UserActivityError(.notFound, "note \(activity.userInfo["note"]?.stringValue ?? "?") was deleted")
            })
            let refused = UserActivity(activityType: UA.editNote, client: caller)
            refused.userInfo = ["refuse": true]
            await #expect { try await caller.continueActivity(refused, options: .init(targetAppID: UA.notes)) } throws: { error in
                (error as? UserActivityError)?.code == .continuationFailed
            }
            let failing = UserActivity(activityType: UA.editNote, client: caller)
            failing.userInfo = ["note": "n-404"]
            do {
                try await caller.continueActivity(failing, options: .init(targetAppID: UA.notes))
                Issue.record("the handler's error did not reach the caller")
            } catch let error as UserActivityError {
                #expect(error.code == .notFound)
                #expect(error.message == "note n-404 was deleted")
            }
        }
    }

    @Test("A handler that does not answer in time: the caller gets RemoteApplicationTimedOut, the app didFailToContinue")
    func didFailToContinue() async throws {
        let h = try LibraryHarness()
        let notes = try h.client(UA.notes)
        let caller = try h.client(UA.reader)
        let failures = Recorder<UserActivityError>()
        do {
            try await notes.register(continuationHandler: ContinuationClosures(
                didFailToContinue: { type, error in
                    if type == UA.editNote { failures.append(error) }
                },
                continue: { _ in
                    try await Task.sleep(nanoseconds: 2_000_000_000)
                    return true
                }))
            let slow = UserActivity(activityType: UA.editNote, client: caller)
            await #expect { try await caller.continueActivity(slow, options: .init(targetAppID: UA.notes, timeout: 0.3)) } throws: { error in
                (error as? UserActivityError)?.code == .remoteApplicationTimedOut
            }
            #expect(await failures.wait(), "didFailToContinue was not called\n\(h.logTail())")
            #expect(failures.values.first?.code == .remoteApplicationTimedOut)
            #expect(failures.values.first?.message.isEmpty == false)
        }
    }

    @Test("needsSave: the service asks before saving, willSave updates the activity, the saved copy has the fresh data")
    func needsSaveWillSave() async throws {
        let h = try LibraryHarness()
        let client = try h.client(UA.notes)
        let calls = Recorder<String>()
        do {
            try await client.register(continuationHandler: ContinuationClosures { _ in false })
            let activity = UserActivity(activityType: UA.editNote, client: client)
            activity.title = "Stale title"
            activity.userInfo = ["note": "n-9", "line": 1]
            activity.isEligibleForSearch = true
            activity.persistentIdentifier = "n-9"
            activity.needsSave = true
            activity.willSave = { activity in
                calls.append(activity.title ?? "")
                activity.title = "Fresh title"
                activity.addUserInfoEntries(["line": 99])
            }
            try await activity.becomeCurrent().wait()
            #expect(await calls.wait(), "willSave was not called\n\(h.logTail())")
            #expect(calls.values == ["Stale title"])

            let found = await waitUntil(timeout: 30, interval: 0.05) {
                (try? await client.search("fresh title").first?.title) == "Fresh title"
            }
            let titles = try await client.search("title").map(\.title)
            #expect(found, "the saved copy does not have the fresh title: \(titles)")
            let path = try #require(activity.objectPath)
            let properties = try await h.properties(path)
            #expect(properties["Title"] == .string("Fresh title"))
            #expect(properties["NeedsSave"] == .boolean(false))
            #expect(entries(properties["UserInfo"])["line"] == .int64(99))
            #expect(activity.needsSave == false)
        }
    }

    @Test("wasContinued: Activity.Continue of the live activity calls it with the app that took it; NeedsSave is honoured first")
    func wasContinued() async throws {
        let h = try LibraryHarness()
        let notes = try h.client(UA.notes)
        let reader = try h.client(UA.reader)
        let continuedBy = Recorder<String>()
        let delivered = Recorder<Delivered>()
        do {
            try await reader.register(continuationHandler: ContinuationClosures { activity in
                delivered.append(Delivered(type: activity.activityType, title: activity.title, userInfo: activity.userInfo,
                                           publisher: activity.publisherAppID, activationToken: nil,
                                           hasStream: activity.hasContinuationStream, thread: nil))
                return true
            })
            let activity = UserActivity(activityType: UA.editNote, client: notes)
            activity.title = "Handoff me"
            activity.userInfo = ["note": "n-1", "scroll": 0]
            activity.needsSave = true
            activity.willSave = { activity in activity.addUserInfoEntries(["scroll": 480]) }
            activity.wasContinued = { app in continuedBy.append(app) }
            try await activity.becomeCurrent().wait()
            let path = try #require(activity.objectPath)

            // As the shell or the CLI would: Activity.Continue on the live object.
            let reply = try await h.rawCall(path, UA.activityInterface, "Continue",
                                            [.stringVariantDictionary([("target-app-id", .string(UA.reader))])])
            #expect(reply.first == .string(UA.reader))
            #expect(await continuedBy.wait(), "wasContinued was not called\n\(h.logTail())")
            #expect(continuedBy.values == [UA.reader])
            let got = try #require(delivered.values.first)
            #expect(got.publisher == UA.notes)
            #expect(got.userInfo["scroll"] == .int(480), "the continuing app got the data willSave provided")

            // handOff(options:) does the same from the library.
            #expect(try await activity.handOff(options: .init(targetAppID: UA.reader)) == UA.reader)
            #expect(await continuedBy.wait { $0.count == 2 })
        }
    }

    @Test("Continuation streams: the continuing app opens a stream, the origin receives the other end")
    func continuationStreams() async throws {
        let h = try LibraryHarness()
        let notes = try h.client(UA.notes)
        let reader = try h.client(UA.reader)
        let originEnds = Recorder<UncheckedSendable<FileHandle>>()
        let readerEnds = Recorder<UncheckedSendable<FileHandle>>()
        do {
            try await reader.register(continuationHandler: ContinuationClosures { activity in
                guard activity.hasContinuationStream else { return false }
                let stream = try await activity.getContinuationStream()
                stream.write(Data("hello from the reader\n".utf8))
                readerEnds.append(UncheckedSendable(stream))
                return true
            })
            let activity = UserActivity(activityType: UA.editNote, client: notes)
            activity.title = "Streamed draft"
            activity.supportsContinuationStreams = true
            activity.didReceiveContinuationStream = { handle in originEnds.append(UncheckedSendable(handle)) }
            try await activity.becomeCurrent().wait()

            #expect(try await activity.handOff(options: .init(targetAppID: UA.reader, timeout: 60)) == UA.reader)
            #expect(await originEnds.wait(), "the origin got no stream\n\(h.logTail())")
            let origin = try #require(originEnds.values.first).value
            let readerEnd = try #require(readerEnds.values.first).value
            let fromReader = try await offload { String(decoding: origin.availableData, as: UTF8.self) }
            #expect(fromReader == "hello from the reader\n")
            origin.write(Data("hello from the origin\n".utf8))
            let fromOrigin = try await offload { String(decoding: readerEnd.availableData, as: UTF8.self) }
            #expect(fromOrigin == "hello from the origin\n")
        }
    }
}
