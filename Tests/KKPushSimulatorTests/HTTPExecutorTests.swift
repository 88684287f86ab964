import Foundation
import KKPushHTTP
import KKPushTestSupport
import NIOCore
import NIOPosix
import Testing

/// Where KKPushHTTP's servers run their tasks: the accept loop on named threads of their own (``OwnThreads``), each
/// connection on its event loop (``EventLoopTaskExecutor``).
@Suite("KKPushHTTP's executors: named threads, a connection's own event loop")
struct HTTPExecutorTests {
    /// The kernel's name of the thread a task preferring `OwnThreads(name: name)` runs on.
    static func nameSeen(onOwnThreadsNamed name: String) async throws -> String {
        try await withTaskExecutorPreference(OwnThreads(name: name)) {
            await Task.yield()
            return try kernelThreadName()
        }
    }

    @Test("OwnThreads' threads carry its name in the kernel, not the name of the thread that started them")
    func ownThreadsAreNamed() async throws {
        #expect(try await Self.nameSeen(onOwnThreadsNamed: "kk.test.own") == "kk.test.own")
    }

    @Test("a name longer than the kernel keeps is cut at 15 bytes")
    func longNameIsCut() async throws {
        #expect(try await Self.nameSeen(onOwnThreadsNamed: "kk.test.a-longer-name") == "kk.test.a-longe")
    }

    @Test("a task that prefers an event loop runs on that loop, also after it suspends")
    func eventLoopExecutorRunsOnTheLoop() async throws {
        let loop = HTTP1Server.serverGroup.next()
        let (first, afterSuspending) = await withTaskExecutorPreference(EventLoopTaskExecutor(loop)) {
            await Task.yield()
            let first = loop.inEventLoop
            try? await Task.sleep(for: .milliseconds(1))
            return (first, loop.inEventLoop)
        }
        #expect(first)
        #expect(afterSuspending)
    }
}
