// SPDX-License-Identifier: Apache-2.0
import UserActivityInterfaces
import DBusKit
import Foundation
import TestSupport
import Testing
import TypedValues
import UserActivityCore
import UserActivityService

/// Who calls, in the authorization matrix. The target activity and saved
/// entry always belong to com.example.Editor (team com.example).
enum MatrixCaller: String, CaseIterable, Sendable {
    /// Another connection of the owning app (unconfined, RegisterApplication).
    case owner
    /// The owning app inside its Flatpak sandbox.
    case confinedOwner
    /// com.example.Viewer: same team (com.example), another app.
    case sameTeam
    /// org.other.Player: another team.
    case otherTeam
    /// An unconfined process that never named an app.
    case unidentified
    /// A Flatpak of another app (com.example.Sandboxed).
    case confinedOther

    var process: CallerProcess {
        switch self {
        case .confinedOwner: return .flatpak(UA.editor)
        case .confinedOther: return .flatpak(UA.sandboxed)
        default: return .host
        }
    }

    /// The app an unconfined caller registers as, if any.
    var registeredApp: String? {
        switch self {
        case .owner: return UA.editor
        case .sameTeam: return UA.viewer
        case .otherTeam: return UA.player
        default: return nil
        }
    }

    var isConfined: Bool { self == .confinedOwner || self == .confinedOther }
}

/// What a cell must answer: success, or the error of that kind.
enum Expectation: Equatable, CustomStringConvertible {
    case ok
    case error(UserActivityError.Kind)

    var description: String {
        switch self {
        case .ok: return "ok"
        case .error(let kind): return ErrorNames.name(for: kind).split(separator: ".").last.map(String.init) ?? "\(kind)"
        }
    }
}

/// The table of the spec's authorization rules ("Who is calling", "Claims",
/// the Activity interface's owner rule, the privacy controls), one row per
/// method (and variants with an app-id claim), one column per caller.
@Suite("Authorization matrix")
struct AuthorizationMatrixTests {
    struct Context {
        let harness: InProcessService
        /// A connection of the owning app that creates the targets.
        let editor: BusClient

        /// A new live activity of the editor (eligible for handoff or not).
        func activity(handoff: Bool = true) throws -> String {
            try editor.create(app: nil, [("title", .string("matrix target")), ("eligible-for-handoff", .boolean(handoff)),
                                         ("eligible-for-search", .boolean(true))])
        }

        /// The editor's saved entry (the same one each time: same persistent identifier).
        func savedID() throws -> String {
            try editor.donate(app: nil, [("title", .string("matrix saved quokka")), ("persistent-identifier", .string("matrix-doc")),
                                         ("eligible-for-search", .boolean(true))])
        }

        /// Whether the editor's saved entry is still there.
        func editorEntryExists() throws -> Bool {
            try editor.search("matrix saved quokka").contains { !$0.savedID.isEmpty }
        }
    }

    typealias Call = (Context, BusClient) throws -> Result<[TypedValue], DBusFailure>

    struct Row {
        let interface: String
        let member: String
        let variant: String
        let expected: [MatrixCaller: Expectation]
        let call: Call
        /// Further checks after a cell's call (visibility, nothing touched); a failure description or nil.
        var check: ((Context, MatrixCaller, Result<[TypedValue], DBusFailure>) throws -> String?)?
    }

    /// `.ok` for every caller but those listed.
    static func allow(except denied: [MatrixCaller: UserActivityError.Kind] = [:]) -> [MatrixCaller: Expectation] {
        Dictionary(uniqueKeysWithValues: MatrixCaller.allCases.map { ($0, denied[$0].map(Expectation.error) ?? .ok) })
    }

    static let ownerOnly: [MatrixCaller: Expectation] = allow(except: [
        .sameTeam: .accessDenied, .otherTeam: .accessDenied, .unidentified: .accessDenied, .confinedOther: .accessDenied,
    ])
    static let ownAppDeclares: [MatrixCaller: Expectation] = allow(except: [
        .sameTeam: .notDeclared, .otherTeam: .notDeclared, .unidentified: .unknownApplication, .confinedOther: .notDeclared,
    ])
    static let needsIdentity: [MatrixCaller: Expectation] = allow(except: [.unidentified: .unknownApplication])
    static let unconfinedOnly: [MatrixCaller: Expectation] = allow(except: [.confinedOwner: .accessDenied, .confinedOther: .accessDenied])
    static let readers: [MatrixCaller: Expectation] = allow(except: [.confinedOther: .accessDenied])

    static func manager(_ member: String, _ arguments: @escaping (Context) throws -> [TypedValue]) -> Call {
        { context, client in client.attempt(UA.managerPath, UA.manager, member, try arguments(context)) }
    }

    static func onActivity(_ interface: String, _ member: String, handoff: Bool = true,
                           _ arguments: [TypedValue] = []) -> Call {
        { context, client in client.attempt(try context.activity(handoff: handoff), interface, member, arguments) }
    }

    static func properties(_ entries: [(String, TypedValue)]) -> TypedValue { .stringVariantDictionary(entries) }

    /// Results an unconfined caller sees; a confined one sees only its own app's.
    static func visibility(_ context: Context, _ caller: MatrixCaller, _ result: Result<[TypedValue], DBusFailure>) -> String? {
        guard case .success(let reply) = result, case .array(_, let hits) = reply.first ?? .string("") else { return nil }
        let apps = hits.compactMap { $0.stringVariantEntries?.first { $0.0 == "app-id" }?.1.stringValue }
        switch caller {
        case .confinedOther: return apps.isEmpty ? nil : "a confined caller of another app saw \(apps)"
        default: return apps.contains(UA.editor) ? nil : "\(caller) should see the editor's entry, saw \(apps)"
        }
    }

    /// The privacy controls are the user's: a confined caller's Forget changes nothing.
    static func confinedCannotForget(_ context: Context, _ caller: MatrixCaller, _ result: Result<[TypedValue], DBusFailure>) throws -> String? {
        guard caller.isConfined else { return nil }
        return try context.editorEntryExists() ? nil : "a confined caller made the service forget"
    }

    /// Deleting needs the caller's own app: the editor's entry survives anyone else's call.
    static func editorEntryUntouched(_ context: Context, _ caller: MatrixCaller, _ result: Result<[TypedValue], DBusFailure>) throws -> String? {
        guard caller != .owner && caller != .confinedOwner else { return nil }
        return try context.editorEntryExists() ? nil : "\(caller) deleted the editor's saved entry"
    }

    static var rows: [Row] { [
        // MARK: org.example.UserActivity
        Row(interface: UA.manager, member: "CreateActivity", variant: "own app", expected: ownAppDeclares,
            call: manager("CreateActivity") { _ in [.string(UA.editType), properties([])] }),
        Row(interface: UA.manager, member: "CreateActivity", variant: "app-id claim", expected: allow(except: [.confinedOther: .accessDenied]),
            call: manager("CreateActivity") { _ in [.string(UA.editType), properties([("app-id", .string(UA.editor))])] }),
        Row(interface: UA.manager, member: "BecomeCurrent", variant: "own app", expected: ownAppDeclares,
            call: manager("BecomeCurrent") { _ in [.string(UA.editType), properties([])] }),
        Row(interface: UA.manager, member: "BecomeCurrent", variant: "app-id claim", expected: allow(except: [.confinedOther: .accessDenied]),
            call: manager("BecomeCurrent") { _ in [.string(UA.editType), properties([("app-id", .string(UA.editor))])] }),
        Row(interface: UA.manager, member: "Donate", variant: "own app", expected: ownAppDeclares,
            call: manager("Donate") { _ in [.string(UA.editType), properties([("title", .string("donated"))])] }),
        Row(interface: UA.manager, member: "Donate", variant: "app-id claim", expected: allow(except: [.confinedOther: .accessDenied]),
            call: manager("Donate") { _ in [.string(UA.editType), properties([("app-id", .string(UA.editor))])] }),
        Row(interface: UA.manager, member: "Search", variant: "", expected: allow(),
            call: manager("Search") { context in _ = try context.savedID(); return [.string("matrix saved"), properties([])] },
            check: { context, caller, result in visibility(context, caller, result) }),
        Row(interface: UA.manager, member: "GetSuggestions", variant: "", expected: allow(),
            call: manager("GetSuggestions") { context in _ = try context.savedID(); return [properties([("limit", .uint32(200))])] },
            check: { context, caller, result in visibility(context, caller, result) }),
        Row(interface: UA.manager, member: "ContinueActivity", variant: "publisher = editor", expected: allow(except: [.confinedOther: .accessDenied]).mapValues { $0 == .ok ? .error(.noHandler) : $0 },
            call: manager("ContinueActivity") { _ in
                [.string("org.nobody.Thing.view"), properties([("app-id", .string(UA.editor))]), properties([("timeout-ms", .uint32(100))])]
            }),
        Row(interface: UA.manager, member: "ContinueActivity", variant: "stream-relay (from another device)",
            expected: unconfinedOnly.mapValues { $0 == .ok ? .error(.noHandler) : $0 },
            call: manager("ContinueActivity") { _ in
                [.string("org.nobody.Thing.view"), properties([("app-id", .string(UA.editor))]),
                 properties([("timeout-ms", .uint32(100)), ("stream-relay", .objectPath("/relay"))])]
            }),
        Row(interface: UA.manager, member: "ContinueSavedActivity", variant: "editor's entry", expected: allow(except: [.confinedOther: .notFound]).mapValues { $0 == .ok ? .error(.remoteApplicationTimedOut) : $0 },
            call: manager("ContinueSavedActivity") { context in [.string(try context.savedID()), properties([("timeout-ms", .uint32(150))])] }),
        Row(interface: UA.manager, member: "FetchForHandoff", variant: "editor's live activity", expected: unconfinedOnly,
            call: manager("FetchForHandoff") { context in [.objectPath(try context.activity()), properties([])] },
            check: { _, caller, result in
                guard case .success(let reply) = result else { return nil }
                return reply.first == .string(UA.editType) ? nil : "\(caller) got \(reply) instead of the editor's payload"
            }),
        Row(interface: UA.manager, member: "MarkContinued", variant: "editor's live activity", expected: unconfinedOnly,
            call: manager("MarkContinued") { context in [.objectPath(try context.activity()), .string(UA.viewer)] }),
        Row(interface: UA.manager, member: "OpenHandoffStream", variant: "editor's live activity (no streams)",
            expected: unconfinedOnly.mapValues { $0 == .ok ? .error(.continuationFailed) : $0 },
            call: manager("OpenHandoffStream") { context in [.objectPath(try context.activity())] }),
        Row(interface: UA.manager, member: "RegisterApplication", variant: "the editor", expected: allow(except: [.confinedOther: .accessDenied]),
            call: manager("RegisterApplication") { _ in [.string(UA.editor)] }),
        Row(interface: UA.manager, member: "RegisterHandler", variant: "", expected: needsIdentity,
            call: manager("RegisterHandler") { _ in [.objectPath("/matrix/Handler")] }),
        Row(interface: UA.manager, member: "OpenContinuationStream", variant: "unknown token",
            expected: allow(except: [.unidentified: .accessDenied]).mapValues { $0 == .ok ? .error(.notFound) : $0 },
            call: manager("OpenContinuationStream") { _ in [.string("no-such-token")] }),
        Row(interface: UA.manager, member: "DeleteSavedActivities", variant: "the editor's identifier", expected: needsIdentity,
            call: manager("DeleteSavedActivities") { context in _ = try context.savedID(); return [.stringArray(["matrix-doc"])] },
            check: editorEntryUntouched),
        Row(interface: UA.manager, member: "DeleteAllSavedActivities", variant: "", expected: needsIdentity,
            call: manager("DeleteAllSavedActivities") { context in _ = try context.savedID(); return [] },
            check: editorEntryUntouched),
        Row(interface: UA.manager, member: "ForgetApplication", variant: "the editor", expected: unconfinedOnly,
            call: manager("ForgetApplication") { context in _ = try context.savedID(); return [.string(UA.editor)] },
            check: confinedCannotForget),
        Row(interface: UA.manager, member: "ForgetRange", variant: "everything", expected: unconfinedOnly,
            call: manager("ForgetRange") { context in _ = try context.savedID(); return [.int64(.min), .int64(.max)] },
            check: confinedCannotForget),
        Row(interface: UA.manager, member: "ForgetAll", variant: "", expected: unconfinedOnly,
            call: manager("ForgetAll") { context in _ = try context.savedID(); return [] },
            check: confinedCannotForget),
        // Anyone may listen: what a listener is sent is chosen by its identity (the sandbox tier checks that).
        Row(interface: UA.manager, member: "Subscribe", variant: "", expected: allow(),
            call: manager("Subscribe") { _ in [] }),
        Row(interface: UA.manager, member: "Unsubscribe", variant: "", expected: allow(),
            call: manager("Unsubscribe") { _ in [] }),
        Row(interface: UA.properties, member: "Get", variant: "manager Version", expected: allow(),
            call: { _, client in client.attempt(UA.managerPath, UA.properties, "Get", [.string(UA.manager), .string("Version")]) }),
        Row(interface: UA.properties, member: "Get", variant: "manager Paused", expected: unconfinedOnly,
            call: { _, client in client.attempt(UA.managerPath, UA.properties, "Get", [.string(UA.manager), .string("Paused")]) }),
        Row(interface: UA.properties, member: "Set", variant: "manager Paused", expected: unconfinedOnly,
            call: { _, client in client.attempt(UA.managerPath, UA.properties, "Set", [.string(UA.manager), .string("Paused"), .variant(.boolean(false))]) }),
        Row(interface: UA.properties, member: "Set", variant: "manager CurrentActivity", expected: allow().mapValues { _ in .error(.propertyReadOnly) },
            call: { _, client in client.attempt(UA.managerPath, UA.properties, "Set", [.string(UA.manager), .string("CurrentActivity"), .variant(.objectPath("/"))]) }),
        Row(interface: UA.properties, member: "GetAll", variant: "manager", expected: allow(),
            call: { _, client in client.attempt(UA.managerPath, UA.properties, "GetAll", [.string(UA.manager)]) },
            check: { _, caller, result in
                guard case .success(let reply) = result, let names = reply.first?.stringVariantEntries?.map(\.0) else { return nil }
                return caller.isConfined == names.contains("Paused") ? "\(caller) got \(names)" : nil
            }),

        // MARK: org.example.UserActivity.Activity
        Row(interface: UA.activity, member: "Update", variant: "", expected: ownerOnly,
            call: onActivity(UA.activity, "Update", [properties([("title", .string("changed"))])])),
        Row(interface: UA.activity, member: "Update", variant: "app-id claim of the owner", expected: allow(except: [.confinedOther: .accessDenied]),
            call: onActivity(UA.activity, "Update", [properties([("app-id", .string(UA.editor)), ("title", .string("changed"))])])),
        Row(interface: UA.activity, member: "AddUserInfoEntries", variant: "", expected: ownerOnly,
            call: onActivity(UA.activity, "AddUserInfoEntries", [properties([("page", .uint32(2))])])),
        Row(interface: UA.activity, member: "BecomeCurrent", variant: "", expected: ownerOnly,
            call: onActivity(UA.activity, "BecomeCurrent")),
        Row(interface: UA.activity, member: "ResignCurrent", variant: "", expected: ownerOnly,
            call: onActivity(UA.activity, "ResignCurrent")),
        Row(interface: UA.activity, member: "Invalidate", variant: "", expected: ownerOnly,
            call: onActivity(UA.activity, "Invalidate")),
        // Not eligible for handoff: access is checked first, so the permitted get NotEligible.
        Row(interface: UA.activity, member: "Continue", variant: "not handoff-eligible", expected: readers.mapValues { $0 == .ok ? .error(.notEligible) : $0 },
            call: onActivity(UA.activity, "Continue", handoff: false, [properties([("timeout-ms", .uint32(100))])])),
        Row(interface: UA.properties, member: "Set", variant: "activity Title", expected: ownerOnly,
            call: onActivity(UA.properties, "Set", [.string(UA.activity), .string("Title"), .variant(.string("set"))])),
        Row(interface: UA.properties, member: "Set", variant: "activity AppId", expected: allow().mapValues { _ in .error(.propertyReadOnly) },
            call: onActivity(UA.properties, "Set", [.string(UA.activity), .string("AppId"), .variant(.string(UA.viewer))])),
        Row(interface: UA.properties, member: "Get", variant: "activity Title", expected: readers,
            call: onActivity(UA.properties, "Get", [.string(UA.activity), .string("Title")])),
        Row(interface: UA.properties, member: "GetAll", variant: "activity", expected: readers,
            call: onActivity(UA.properties, "GetAll", [.string(UA.activity)])),
    ] }

    @Test("The table names every method of the manager and Activity interfaces")
    func tableCoversTheContract() {
        let covered = Set(Self.rows.map { "\($0.interface).\($0.member)" })
        for interface in [Interfaces.manager, Interfaces.activity] {
            for method in interface.methods {
                #expect(covered.contains("\(interface.name).\(method.name)"), "no row for \(interface.name).\(method.name): add it with its expected results")
            }
        }
        for row in Self.rows {
            #expect(Set(row.expected.keys) == Set(MatrixCaller.allCases), "\(row.member) \(row.variant) misses callers")
        }
    }

    @Test("Every method × caller answers as the spec says")
    func matrix() throws {
        let harness = try InProcessService()
        let editor = try harness.client(as: .host)
        try editor.manager("RegisterApplication", [.string(UA.editor)])
        let context = Context(harness: harness, editor: editor)
        var table = "method | " + MatrixCaller.allCases.map(\.rawValue).joined(separator: " | ") + "\n"
        var mismatches: [String] = []
        for row in Self.rows {
            var line = "\(row.member)\(row.variant.isEmpty ? "" : " (\(row.variant))")"
            for caller in MatrixCaller.allCases {
                let client = try harness.client(as: caller.process)
                if let app = caller.registeredApp { try client.manager("RegisterApplication", [.string(app)]) }
                let result = try row.call(context, client)
                let actual: Expectation
                switch result {
                case .success: actual = .ok
                case .failure(let failure):
                    guard let kind = UserActivityError.Kind.allCases.first(where: { ErrorNames.name(for: $0) == failure.name }) else {
                        mismatches.append("\(line) × \(caller): undocumented \(failure.name): \(failure.message)")
                        continue
                    }
                    actual = .error(kind)
                }
                let expected = row.expected[caller]!
                if actual != expected {
                    let detail: String
                    switch result {
                    case .success(let values): detail = "\(values)"
                    case .failure(let failure): detail = failure.message
                    }
                    mismatches.append("\(line) × \(caller): expected \(expected), got \(actual): \(detail.prefix(200))")
                }
                if let check = row.check, let problem = try check(context, caller, result) {
                    mismatches.append("\(line) × \(caller): \(problem)")
                }
                line += " | \(actual)"
                client.close()
            }
            table += line + "\n"
        }
        for mismatch in mismatches { Issue.record(Comment(rawValue: mismatch)) }
        print(table)
    }
}
