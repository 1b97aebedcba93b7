// SPDX-License-Identifier: Apache-2.0
import GLibSupport

/// The GLib main loop a ``UserActivityClient`` can attach to, so that an app
/// needs no other import to drive the client from a loop of its own.
///
/// ```swift
/// import UserActivity
///
/// let loop = GLibMainLoop.withNewContext()      // or GLibMainLoop() for the default context
/// let client = try UserActivityClient(appID: "com.example.Editor", mainLoop: loop)
/// loop.run()                                     // the client's callbacks run here
/// ```
public typealias GLibMainLoop = MainLoop
