// SPDX-License-Identifier: Apache-2.0
//
// Why scripts/sanitizers.sh leaves UserActivityTests out of the ThreadSanitizer
// run: a continuation resumed from a plain thread BEFORE the task reaches its
// await is reported as a data race on whatever the resuming thread wrote; the
// same hand-off resumed AFTER the await is not. (swift_continuation_await
// continues an already-resumed task in place, without the TSan acquire of the
// enqueue path.) Check a new toolchain with:
//
//   swiftc -sanitize=thread -g -parse-as-library scripts/tsan-continuation-repro.swift -o /tmp/tsan-repro
//   /tmp/tsan-repro before   # Swift 6.3.1: "WARNING: ThreadSanitizer: data race" (false positive)
//   /tmp/tsan-repro after    # no warning
//
// When `before` stays quiet, UserActivityTests can join the thread run.
import Foundation
import Synchronization

final class Box: @unchecked Sendable { var value = 0 }
final class Flag: Sendable { let raised = Atomic<Bool>(false) }

func fetch(resumeBeforeAwait: Bool) async -> Box {
    await withCheckedContinuation { (continuation: CheckedContinuation<Box, Never>) in
        let flag = Flag()
        Thread.detachNewThread {
            if !resumeBeforeAwait { usleep(2000) }   // let the task suspend first
            let box = Box()
            box.value = 42                           // written on the plain thread
            continuation.resume(returning: box)
            flag.raised.store(true, ordering: .relaxed)
        }
        // A relaxed atomic gives ThreadSanitizer no happens-before edge of its own.
        if resumeBeforeAwait { while !flag.raised.load(ordering: .relaxed) { sched_yield() } }
    }
}

@main struct Repro {
    static func main() async {
        let before = CommandLine.arguments.dropFirst().first != "after"
        // A task on the global executor, as the tests' are.
        let total = await Task.detached { () async -> Int in
            var total = 0
            for _ in 0..<20 { total += await fetch(resumeBeforeAwait: before).value }   // read after the await
            return total
        }.value
        print(before ? "resumed before the await" : "resumed after the await", total)
    }
}
