// SPDX-License-Identifier: Apache-2.0
internal import UserActivityCore

extension UserActivity {
    /// A web page the user is reading (`NSUserActivityTypeBrowsingWeb`): any
    /// app may use it without declaring it. Set ``webpageURL``; the service
    /// continues it in this app when its desktop entry handles
    /// `x-scheme-handler/https` with `%u` in `Exec`, else in the default browser.
    public static let browsingWebType = SystemActivityType.browsingWeb

    /// A document the user has open: any app may use it without declaring it.
    /// Put the document's URI in ``userInfo`` under `uri` (and optionally its
    /// MIME type under `mime-type`); the service continues it by launching
    /// this app with the URI when its `Exec` takes `%u`/`%U`/`%f`/`%F`, else
    /// with the MIME type's default handler.
    public static let openDocumentType = SystemActivityType.openDocument
}
