// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import TypedValues
@testable import UserActivity

@Suite("UserInfoValue: Swift literals with exact D-Bus types")
struct UserInfoValueTests {
    @Test("Literals pick natural types; arrays of one type are typed arrays, mixed ones av")
    func literals() {
        let info: [String: UserInfoValue] = [
            "s": "text", "x": 42, "d": 1.5, "b": true,
            "as": ["a", "b"], "ax": [1, 2], "av": [1, "two"], "empty": [],
            "dict": ["k": 1, "nested": ["z": false]],
            "u": .uint32(7), "y": .byte(255), "ay": .data(Data([1, 2])),
        ]
        #expect(info["s"]?.typedValue == .string("text"))
        #expect(info["x"]?.typedValue == .int64(42))
        #expect(info["d"]?.typedValue == .double(1.5))
        #expect(info["b"]?.typedValue == .boolean(true))
        #expect(info["as"]?.typedValue.signature == "as")
        #expect(info["ax"]?.typedValue.signature == "ax")
        #expect(info["av"]?.typedValue.signature == "av")
        #expect(info["empty"]?.typedValue.signature == "av")
        #expect(info["dict"]?.typedValue.signature == "a{sv}")
        #expect(info["u"]?.typedValue == .uint32(7))
        #expect(info["ay"]?.typedValue.signature == "ay")

        #expect(info["u"]?.intValue == 7)
        #expect(info["x"]?.doubleValue == 42)
        #expect(info["av"]?.arrayValue == [1, "two"])
        #expect(info["dict"]?.dictionaryValue?["nested"]?.dictionaryValue?["z"]?.boolValue == false)
        #expect(info["ay"]?.dataValue == Data([1, 2]))
        #expect(UserInfoValue.date(Date(timeIntervalSince1970: 2)).dateValue == Date(timeIntervalSince1970: 2))

        // a{sv} and back, keys sorted on the wire, values exact.
        let wire = UserInfoCoding.typedValue(info)
        #expect(wire.stringVariantEntries?.map(\.0) == info.keys.sorted())
        #expect(UserInfoCoding.userInfo(wire) == info)
    }
}
