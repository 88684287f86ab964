import CKKPushSystem
import Foundation
import KKPushTestSupport
import Testing

/// The C bridge that reads libc's structures for the Swift code (`Sources/CKKPushSystem/shim.h`), against the real
/// system: files, a pipe, loopback sockets, the clock.
@Suite("CKKPushSystem: libc's structures read in C")
struct SystemBridgeTests {
    @Test("kk_stat and kk_fstat: a file, a hard link to it, a folder, a missing path (errno ENOENT)")
    func fileStatus() throws {
        try withTemporaryDirectory { folder in
            let file = folder + "/a.txt"
            let second = folder + "/b.txt"
            try Data("x".utf8).write(to: URL(fileURLWithPath: file))
            #expect(link(file, second) == 0)

            var a = kk_file_status()
            var b = kk_file_status()
            #expect(kk_stat(file, &a) == 0)
            #expect(kk_stat(second, &b) == 0)
            #expect(a.is_regular == 1 && a.is_directory == 0)
            #expect(a.device == b.device && a.inode == b.inode)

            let fd = open(file, O_RDONLY)
            #expect(fd >= 0)
            defer { close(fd) }
            var c = kk_file_status()
            #expect(kk_fstat(fd, &c) == 0)
            #expect(c.device == a.device && c.inode == a.inode && c.is_regular == 1)

            var d = kk_file_status()
            #expect(kk_stat(folder, &d) == 0)
            #expect(d.is_directory == 1 && d.is_regular == 0)
            #expect(d.inode != a.inode)

            var missing = kk_file_status()
            #expect(kk_stat(folder + "/none", &missing) == -1)
            #expect(errno == ENOENT)
        }
    }

    @Test(
        "kk_utc_time_of: calendar fields in UTC, before 1970 too",
        arguments: [
            0: [1970, 1, 1, 0, 0, 0], -1: [1969, 12, 31, 23, 59, 59], 1_800_000_000: [2027, 1, 15, 8, 0, 0],
            951_782_400: [2000, 2, 29, 0, 0, 0],
        ] as [Int64: [Int]])
    func utcTime(seconds: Int64, fields: [Int]) {
        var t = kk_utc_time()
        #expect(kk_utc_time_of(seconds, &t) == 0)
        #expect([t.year, t.month, t.day, t.hour, t.minute, t.second].map(Int.init) == fields)
    }

    @Test("kk_thread_cpu_seconds grows with work on this thread")
    func threadCPU() {
        let before = kk_thread_cpu_seconds()
        var x: UInt64 = 1
        var after = before
        // Bounded: at most 10^9 steps, until the clock has moved.
        for i in 0..<1_000_000_000 {
            x = x &* 6_364_136_223_846_793_005 &+ UInt64(i)
            if i % 1_000_000 == 0 {
                after = kk_thread_cpu_seconds()
                if after > before { break }
            }
        }
        #expect(before >= 0 && after > before, "before \(before) s, after \(after) s (work: \(x))")
    }

    @Test("kk_open_file_limit_raised: a positive limit, no lower than before")
    func openFileLimit() {
        let first = kk_open_file_limit_raised(1 << 20)
        #expect(first > 0)
        #expect(kk_open_file_limit_raised(1 << 20) >= first)
    }

    @Test("Loopback sockets: bind to a free port, read it back, connect to it; a pipe is writable")
    func loopback() throws {
        let server = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(server >= 0)
        defer { close(server) }
        #expect(kk_bind_loopback(server, 0) == 0)
        let port = kk_bound_port(server)
        #expect(port > 0 && port < 65_536)
        #expect(listen(server, 1) == 0)

        let client = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #expect(client >= 0)
        defer { close(client) }
        #expect(kk_set_receive_timeout(client, 5) == 0)
        #expect(kk_connect_loopback(client, UInt16(port)) == 0)

        var fds: [Int32] = [0, 0]
        #expect(pipe(&fds) == 0)
        defer { for fd in fds { close(fd) } }
        #expect(kk_wait_writable(fds[1], 1000) == 1)
    }

    /// Why: with MemberImportVisibility, a glibc structure's fields belong to whichever clang module loaded the header
    /// first, which differs between builds; a file that reads one may pass every incremental build and fail a fresh
    /// one. So the rule is checked here, on the sources, not left to the build that happens to run.
    @Test("No Swift file reads a glibc structure's fields or calls its initializer: CKKPushSystem does")
    func noGlibcStructuresInSwift() throws {
        let fields =
            #"\.(st_[a-z]+|tv_(sec|nsec|usec)|tm_[a-z]+|rlim_(cur|max)|sin6?_[a-z]+|sa_(flags|mask|handler)|revents)\b"#
        let initializers =
            #"\b(stat|timespec|timeval|tm|rlimit|pollfd|sockaddr_in6?|sockaddr_storage|sigaction|sigset_t|posix_spawnattr_t|posix_spawn_file_actions_t)\(\)"#
        let pattern = try Regex("\(fields)|\(initializers)")
        let root = Repository.root
        var found: [String] = []
        for folder in ["Sources", "Tests"] {
            let base = root.appendingPathComponent(folder)
            let files = FileManager.default.enumerator(atPath: base.path)?.compactMap { $0 as? String } ?? []
            #expect(files.count > 100, "no sources found under \(base.path)")
            for file in files where file.hasSuffix(".swift") && !file.hasSuffix("SystemBridgeTests.swift") {
                let text = try String(contentsOfFile: base.appendingPathComponent(file).path, encoding: .utf8)
                for (number, line) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated()
                where !line.trimmingCharacters(in: .whitespaces).hasPrefix("//") && line.contains(pattern) {
                    found.append("\(folder)/\(file):\(number + 1): \(line.trimmingCharacters(in: .whitespaces))")
                }
            }
        }
        #expect(found.isEmpty, "read through CKKPushSystem instead: \(found.joined(separator: "; "))")
    }
}
