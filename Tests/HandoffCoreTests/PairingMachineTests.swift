// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import TypedValues
import Testing

@Suite struct PairingMachineTests {
    let clock = ManualClock()

    @Test func pairsOnceBothSidesAcceptInEitherOrder() throws {
        var machine = PairingMachine()
        _ = try machine.start(peer: "p", code: "123456", initiatedLocally: true, discoverable: false, now: clock.nowMicroseconds)
        #expect(machine.answerRemotely(peer: "p", accepted: true, now: clock.nowMicroseconds) == nil)
        #expect(machine.answerLocally(peer: "p", accepted: true, now: clock.nowMicroseconds) == .paired(peer: "p"))
        #expect(machine.current == nil)
    }

    @Test func eitherRefusalEndsIt() throws {
        var machine = PairingMachine()
        _ = try machine.start(peer: "p", code: "1", initiatedLocally: true, discoverable: false, now: 0)
        #expect(machine.answerLocally(peer: "p", accepted: true, now: 0) == nil)
        #expect(machine.answerRemotely(peer: "p", accepted: false, now: 0) == .refused(peer: "p"))
        _ = try machine.start(peer: "p", code: "1", initiatedLocally: true, discoverable: false, now: 0)
        #expect(machine.answerLocally(peer: "p", accepted: false, now: 0) == .refused(peer: "p"))
    }

    @Test func aPeerMayAskOnlyWhileDiscoverable() throws {
        var machine = PairingMachine()
        #expect(throws: PairingRefusal.notDiscoverable) {
            try machine.start(peer: "p", code: "1", initiatedLocally: false, discoverable: false, now: 0)
        }
        _ = try machine.start(peer: "p", code: "1", initiatedLocally: false, discoverable: true, now: 0)
    }

    @Test func oneAtATime() throws {
        var machine = PairingMachine()
        _ = try machine.start(peer: "p", code: "1", initiatedLocally: true, discoverable: true, now: 0)
        #expect(throws: PairingRefusal.busy) {
            try machine.start(peer: "q", code: "2", initiatedLocally: false, discoverable: true, now: 0)
        }
        #expect(machine.answerLocally(peer: "q", accepted: true, now: 0) == nil)
        #expect(machine.cancel(peer: "p") == .cancelled(peer: "p"))
        _ = try machine.start(peer: "q", code: "2", initiatedLocally: false, discoverable: true, now: 0)
    }

    @Test func aPeerThatGoesAwayIsNotARefusal() throws {
        var machine = PairingMachine()
        _ = try machine.start(peer: "p", code: "1", initiatedLocally: true, discoverable: false, now: 0)
        #expect(machine.answerLocally(peer: "p", accepted: true, now: 0) == nil)
        #expect(machine.peerWentAway("q") == nil)
        #expect(machine.peerWentAway("p") == .wentAway(peer: "p"))
        #expect(machine.current == nil)
        #expect(machine.answerRemotely(peer: "p", accepted: true, now: 0) == nil)
    }

    @Test func timesOutOnTheInjectedClock() throws {
        var machine = PairingMachine(timeoutSeconds: 30)
        _ = try machine.start(peer: "p", code: "1", initiatedLocally: true, discoverable: false, now: clock.nowMicroseconds)
        clock.advance(seconds: 29)
        #expect(machine.expire(now: clock.nowMicroseconds) == nil)
        clock.advance(seconds: 1)
        #expect(machine.expire(now: clock.nowMicroseconds) == .timedOut(peer: "p"))
        #expect(machine.answerLocally(peer: "p", accepted: true, now: clock.nowMicroseconds) == nil)
    }

    @Test func rateLimitsRequestsPerWindow() throws {
        var machine = PairingMachine(maximumInWindow: 3, windowSeconds: 60)
        for _ in 0..<3 {
            _ = try machine.start(peer: "p", code: "1", initiatedLocally: false, discoverable: true, now: clock.nowMicroseconds)
            _ = machine.cancel(peer: "p")
        }
        #expect(throws: PairingRefusal.rateLimited) {
            try machine.start(peer: "p", code: "1", initiatedLocally: false, discoverable: true, now: clock.nowMicroseconds)
        }
        clock.advance(seconds: 61)
        _ = try machine.start(peer: "p", code: "1", initiatedLocally: false, discoverable: true, now: clock.nowMicroseconds)
    }
}

@Suite struct AdvertDecisionTests {
    let activity = Advert(id: "7", activityType: "com.example.Editor.edit", appID: "com.example.Editor",
                          title: "Notes", webpageURL: "", timestamp: 42, eligibleForHandoff: true)

    @Test func advertisesAnEligibleActivity() {
        #expect(AdvertDecision.advert(for: activity, conditions: AdvertConditions()) == activity)
        #expect(AdvertDecision.advert(for: nil, conditions: AdvertConditions()) == nil)
    }

    @Test func nothingWhenIneligiblePausedBlockedOrLocked() {
        var ineligible = activity
        ineligible.eligibleForHandoff = false
        #expect(AdvertDecision.advert(for: ineligible, conditions: AdvertConditions()) == nil)
        var conditions = AdvertConditions()
        conditions.paused = true
        #expect(AdvertDecision.advert(for: activity, conditions: conditions) == nil)
        conditions = AdvertConditions()
        conditions.sessionLocked = true
        #expect(AdvertDecision.advert(for: activity, conditions: conditions) == nil)
        conditions = AdvertConditions()
        conditions.blockedApplications = ["com.example.Editor"]
        #expect(AdvertDecision.advert(for: activity, conditions: conditions) == nil)
        conditions = AdvertConditions()
        conditions.blockedActivityTypes = ["com.example.Editor.edit"]
        #expect(AdvertDecision.advert(for: activity, conditions: conditions) == nil)
    }

    @Test func onlyHTTPPagesAndNoDocumentsFromAnotherDevice() {
        #expect(AdvertDecision.refusalFromAnotherDevice(activityType: "com.example.Editor.edit", webpageURL: "") == nil)
        #expect(AdvertDecision.refusalFromAnotherDevice(activityType: "x.y", webpageURL: "https://example.com/a") == nil)
        #expect(AdvertDecision.refusalFromAnotherDevice(activityType: "x.y", webpageURL: "HTTP://example.com/") == nil)
        for url in ["javascript:alert(1)", "file:///etc/passwd", "smb://203.0.113.9/share/x.txt", "https", "data:text/html,x"] {
            #expect(AdvertDecision.refusalFromAnotherDevice(activityType: "x.y", webpageURL: url) != nil, "\(url)")
        }
        #expect(AdvertDecision.refusalFromAnotherDevice(activityType: AdvertDecision.openDocumentType, webpageURL: "") != nil)
    }

    @Test func theFetchedActivityMustBeTheAdvertisedOne() {
        let shown = Advert(id: "3", activityType: "com.example.Editor.edit", appID: "com.example.Editor", title: "Quarterly report",
                           webpageURL: "", timestamp: 1, eligibleForHandoff: true)
        let same: [String: TypedValue] = ["app-id": .string("com.example.Editor"), "title": .string("Quarterly report"), "user-info": .string("x")]
        #expect(AdvertDecision.matches(shown, activityType: shown.activityType, properties: same))
        #expect(!AdvertDecision.matches(shown, activityType: AdvertDecision.openDocumentType, properties: same))
        var other = same
        other["title"] = .string("Renamed by the owner's save")
        #expect(AdvertDecision.matches(shown, activityType: shown.activityType, properties: other))
        other["app-id"] = .string("com.example.Other")
        #expect(!AdvertDecision.matches(shown, activityType: shown.activityType, properties: other))
        other = same
        other["webpage-url"] = .string("https://example.com/")
        #expect(!AdvertDecision.matches(shown, activityType: shown.activityType, properties: other))
    }

    @Test func advertFieldsAreBoundedByTheServiceLimits() {
        let long = Advert(id: "3", activityType: "a.b", appID: "a.b", title: String(repeating: "é", count: 200_000),
                          webpageURL: "", timestamp: 1, eligibleForHandoff: true)
        let bounded = AdvertDecision.bounded(long)
        #expect(bounded?.title.utf8.count == AdvertDecision.maximumTitleBytes)
        var huge = long
        huge.webpageURL = "https://example.com/" + String(repeating: "x", count: 70_000)
        #expect(AdvertDecision.bounded(huge) == nil)
        var withNUL = long
        withNUL.title = String(repeating: "x", count: 2000) + "\0"
        #expect(AdvertDecision.bounded(withNUL) == nil)
        withNUL = long
        withNUL.appID = "a.b\0c"
        #expect(AdvertDecision.bounded(withNUL) == nil)
    }

    @Test func aDeviceNameIsBoundedInBytesNotCharacters() {
        // One character of a letter and 10,000 combining marks: a count of characters would keep all 20 KB.
        let stacked = String(repeating: "e" + String(repeating: "\u{301}", count: 10_000), count: 3)
        #expect(stacked.count == 3)
        let name = AdvertDecision.deviceName(stacked)
        #expect(name != nil && name!.utf8.count <= AdvertDecision.maximumDeviceNameBytes)
        #expect(AdvertDecision.deviceName("Laptop") == "Laptop")
        let long = String(repeating: "ü", count: 300)
        #expect(AdvertDecision.deviceName(long)?.utf8.count == AdvertDecision.maximumDeviceNameBytes)
        #expect(AdvertDecision.deviceName("Lap\0top") == nil)
    }
}
