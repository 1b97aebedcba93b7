// SPDX-License-Identifier: Apache-2.0
import HandoffCore
import Testing
import TypedValues
import UserActivityCore

/// The advert's one type: from useractivityd's Activity properties, through
/// the frame, to the other desktop's `Device.CurrentActivity`.
@Suite struct AdvertTests {
    /// An Activity object's properties as `GetAll` gives them (with some the advert does not keep).
    let properties: [String: TypedValue] = [
        "ActivityType": .string("com.example.Editor.edit"), "AppId": .string("com.example.Editor"),
        "Title": .string("Quarterly report"), "WebpageURL": .string("https://example.com/q3"),
        "EligibleForHandoff": .boolean(true), "UserInfo": .string("not kept"), "Keywords": .array(elementType: "s", []),
    ]

    @Test func readFromTheActivityObject() {
        let advert = Advert(activityPath: "/org/example/UserActivity/activity/42", properties: properties, since: 1_700_000_000_000_000)
        #expect(advert == Advert(id: "42", activityType: "com.example.Editor.edit", appID: "com.example.Editor", title: "Quarterly report",
                                 webpageURL: "https://example.com/q3", timestamp: 1_700_000_000_000_000, eligibleForHandoff: true))
        var ineligible = properties
        ineligible["EligibleForHandoff"] = .boolean(false)
        #expect(!Advert(activityPath: "/a/1", properties: ineligible, since: 0).eligibleForHandoff)
        // Not said: eligible, as the service's default.
        ineligible["EligibleForHandoff"] = nil
        #expect(Advert(activityPath: "/a/1", properties: ineligible, since: 0).eligibleForHandoff)
    }

    @Test func keepsOnlyTheFieldsItIsMadeOf() {
        #expect(Advert.propertyNames == ["ActivityType", "AppId", "Title", "WebpageURL", "EligibleForHandoff"])
        #expect(Set(Advert.activityFields.map(\.propertyName)) == Advert.propertyNames)
    }

    @Test func theFrameCarriesNoUserInfoAndReadsBack() {
        let advert = Advert(activityPath: "/org/example/UserActivity/activity/42", properties: properties, since: 77)
        let frame = Advert.frame(for: advert)
        #expect(frame.kind == .advert)
        #expect(Set(frame.body.keys) == ["id", "activity-type", "app-id", "title", "webpage-url", "timestamp"])
        #expect(Advert(frame: frame) == advert)
        #expect(Advert(frame: Advert.frame(for: nil)) == nil)
        #expect(Advert.frame(for: nil).body.isEmpty)
    }

    @Test func theFrameSurvivesTheWire() throws {
        let advert = Advert(id: "9", activityType: "a.b.c", appID: "a.b", title: "Ünïcode — title", webpageURL: "", timestamp: -1)
        let bytes = try #require(FrameCodec.encode(Advert.frame(for: advert), limit: FrameCodec.unpairedLimit))
        var reader = FrameReader(limit: FrameCodec.unpairedLimit)
        reader.append(bytes)
        let frame = try #require(try reader.next())
        #expect(Advert(frame: frame) == advert)
        #expect(try reader.next() == nil)
    }

    @Test func shownAsTheDevicesCurrentActivity() {
        let advert = Advert(activityPath: "/org/example/UserActivity/activity/42", properties: properties, since: 77)
        let shown = advert.currentActivity(continuable: true)
        #expect(shown == ["activity-type": .string("com.example.Editor.edit"), "app-id": .string("com.example.Editor"),
                          "title": .string("Quarterly report"), "webpage-url": .string("https://example.com/q3"),
                          "timestamp": .int64(77), "continuable": .boolean(true)])
        #expect(Advert(frame: Advert.frame(for: advert))?.currentActivity(continuable: false)[Advert.continuableKey] == .boolean(false))
    }

    @Test func theFetchedActivityIsComparedByTheSameKeys() {
        let advert = Advert(activityPath: "/a/3", properties: properties, since: 0)
        let fetched: [String: TypedValue] = [Advert.key(.appID): .string("com.example.Editor"), Advert.key(.webpageURL): .string("https://example.com/q3")]
        #expect(AdvertDecision.matches(advert, activityType: "com.example.Editor.edit", properties: fetched))
    }
}
