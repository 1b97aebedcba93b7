// SPDX-License-Identifier: Apache-2.0
import Foundation
import UserActivity

/// The example's flow, kept off the main actor: the library calls back on
/// its own loop thread and in tasks.
enum Example {
    static let appID = "com.example.UserActivityExample"

    struct Options {
        var serve = false
        /// Only register for continuations and serve them (how the service launches the app).
        var handleContinuationsOnly = false
        var address: String?
        /// Open this document (at `page`) and serve continuations: the Handoff walk-through.
        var document: String?
        var page: Int?
    }

    static func run(_ options: Options) async -> Int32 {
        do {
            return try await demo(options)
        } catch let error as DeclarationError {
            Output.error("UserActivityExample cannot start:\n\(error)")
            return 78   // EX_CONFIG
        } catch {
            Output.error("UserActivityExample failed: \(error)")
            return 1
        }
    }

    private static func demo(_ options: Options) async throws -> Int32 {
        // 1. Connect (a loop thread of the library's own) and declare the actions.
        let client = try UserActivityClient(appID: appID, address: options.address)
        client.onError = { error, request in Output.error("! \(request) failed: \(error)") }
        // The serving modes end when the session does.
        let (disconnection, disconnected) = AsyncStream<Void>.makeStream()
        client.onDisconnected = { disconnected.finish() }
        func serveUntilDisconnected() async -> Int32 {
            for await _ in disconnection {}
            Output.line("the session bus went away")
            return 0
        }
        let app = try ActivityApp(appID: appID, client: client, actions: [OpenDocument.self, ShowPage.self])
        app.onWillContinue = { type in Output.line("… the service is handing over \(type)") }
        app.onContinuationFailure = { type, error in Output.line("✗ continuation of \(type) failed: \(error.message)") }
        Output.line("UserActivityExample \(appID) on \(options.address ?? "the session bus") as \(client.uniqueName)")
        Output.line("activity types: \(app.activityTypes.joined(separator: ", "))")

        // 2. Check the desktop entry, register for continuations.
        try await app.start()
        Output.line("✓ the desktop entry declares every type; continuation handler registered at \(client.handlerPath)")
        Output.line("service version: \(try await client.serviceVersion())")

        if options.handleContinuationsOnly {
            // Launched to take a continuation: no demo activities of its own, which
            // the continued one would replace while the demo still works on them.
            Output.line("handling continuations for \(appID); stop with Ctrl-C")
            return await serveUntilDisconnected()
        }

        if let path = options.document {
            // The person opens a document: it becomes current, and Handoff offers it to paired devices.
            let document = try await app.perform(OpenDocument.self, with: DocumentRef(path: path, page: options.page ?? 1))
            document.wasContinued = { by in Output.line("✓ \(document.activityType) was continued by \(by)") }
            Output.line("✓ opened \(path), page \(options.page ?? 1): current activity \(document.objectPath ?? "?")")
            return await serveUntilDisconnected()
        }

        // 3. Perform both actions: each publishes its activity as the current one.
        let document = try await app.perform(OpenDocument.self, with: DocumentRef(path: "/home/user/Quarterly Report.odt", page: 3, zoom: 1.25))
        Output.line("✓ published \(document.activityType) \"\(document.title ?? "")\" at \(document.objectPath ?? "?")")
        document.wasContinued = { by in Output.line("✓ \(document.activityType) was continued by \(by)") }

        // Property changes after publishing go out as one batched Update.
        document.addUserInfoEntries(["page": 4])
        document.contentDescription = "Page 4 of /home/user/Quarterly Report.odt"
        await client.waitForPendingRequests()
        Output.line("✓ updated: page 4")

        let page = try await app.perform(ShowPage.self, with: PageRef(url: URL(string: "https://example.com/reports/q3")!, title: "Q3 results online"))
        Output.line("✓ published \(page.activityType) \"\(page.title ?? "")\"; current: \(try await client.currentActivityPath() ?? "none")")

        // 4. Search what the service saved (eligible for search, became current).
        let results = try await client.search("quarterly", appID: appID)
        Output.line("search \"quarterly\": \(results.count) result(s)")
        for result in results {
            Output.line("  \(result.title) — \(result.contentDescription) [\(result.activityType)]")
        }

        // 5. A link from elsewhere (a note, a script) asks to continue a
        //    document: the service routes it to this app's handler, which
        //    rebuilds the DocumentRef from user info and performs OpenDocument.
        let link = UserActivity(activityType: app.activityType(of: OpenDocument.self), client: client)
        try link.setUserInfo(from: DocumentRef(path: "/home/user/Notes.odt", page: 7))
        let by = try await client.continueActivity(link, options: ContinuationOptions(timeout: 5))
        Output.line("✓ continued by \(by)")

        if options.serve {
            Output.line("serving continuations for \(appID); stop with Ctrl-C")
            return await serveUntilDisconnected()
        }
        app.currentActivity?.invalidate()
        await client.waitForPendingRequests()
        client.close()
        Output.line("done")
        return 0
    }
}
