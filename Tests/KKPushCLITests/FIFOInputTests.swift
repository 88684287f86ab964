import Foundation
import KKPushCore
import KKPushSystem
import KKPushTestSupport
import Testing

/// Files a user names that are not regular files: a FIFO without a writer never holds a command (a bounded wait,
/// then `file-no-writer`, or `file-not-regular` where a database needs a file), a pipe or process substitution is
/// read as a stream, `-` is standard input for `build inspect` too, and a name that is not UTF-8 is found.
@Suite("Pipes, FIFOs and odd names as input files")
struct FIFOInputTests {
    static let profile = CLI.root.appendingPathComponent("Tests/Fuzz/Corpus/build-profile/development.mobileprovision")

    /// A fresh folder with a FIFO in it (mkfifo); the caller removes the folder.
    static func makeFIFO() throws -> (folder: String, fifo: String) {
        let folder = try makeTemporaryDirectory(prefix: "kkpush-fifo").path
        let fifo = folder + "/input"
        try #require(mkfifo(fifo, 0o600) == 0, "mkfifo: \(errno)")
        return (folder, fifo)
    }

    /// Runs a bash command line (the kkpush binary is `$K`), bounded by 60 s.
    static func bash(_ script: String, stdin: Data? = nil) async throws -> CLIResult {
        let out = try await runProcess(
            URL(fileURLWithPath: "/bin/bash"), ["-c", script], stdin: stdin,
            environment: CLI.environment(["K": CLI.binary.path]), currentDirectory: CLI.root, timeout: 60)
        #expect(!out.timedOut, "bash -c \(script) did not finish")
        return CLIResult(
            status: out.status, stdout: String(decoding: out.stdout, as: UTF8.self),
            stderr: String(decoding: out.stderr, as: UTF8.self))
    }

    @Test(
        "A FIFO without a writer: build inspect and diagnose --enrollment refuse it within the writer grace; audit refuses at once"
    )
    func noWriter() async throws {
        let (folder, fifo) = try Self.makeFIFO()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try await InputFile.$writerGrace.withValue(.milliseconds(300)) {
            let build = try await CLI.run(["build", "inspect", fifo], timeout: 20)
            #expect(build.status == 2, "\(build.stderr)")
            // The grace is this test's 0.3 s (the message names it); each run is bounded.
            #expect(
                build.stderr.contains("is a named pipe that nothing has open for writing (none came within 0.3 s)"),
                "\(build.stderr)")
            let diagnose = try await CLI.run(["diagnose", "--enrollment", fifo], timeout: 20)
            #expect(diagnose.status == 2, "\(diagnose.stderr)")
            #expect(diagnose.stderr.contains("nothing has open for writing"), "\(diagnose.stderr)")
        }
        // A writer that has the FIFO open but writes nothing: the stream wait, then file-no-writer.
        let writer = open(fifo, O_RDWR | O_CLOEXEC)
        try #require(writer >= 0, "open: \(errno)")
        defer { close(writer) }
        try await InputFile.$streamWait.withValue(.milliseconds(300)) {
            let silent = try await CLI.run(["build", "inspect", fifo], timeout: 20)
            #expect(silent.status == 2, "\(silent.stderr)")
            #expect(silent.stderr.contains("is a named pipe nothing wrote into within 0.3 s"), "\(silent.stderr)")
        }
        let audit = try await CLI.run(["audit", "--store", fifo], timeout: 20)
        #expect(audit.status == 2, "\(audit.stderr)")
        #expect(audit.stderr.contains("is a named pipe (FIFO), not a regular file"), "\(audit.stderr)")
        let export = try await CLI.run(["backend", "export", "--db", fifo], timeout: 20)
        #expect(export.status == 2 && export.stderr.contains("named pipe (FIFO)"), "\(export.stderr)")
    }

    @Test(
        "The binary as a user runs it, on a FIFO nothing writes into: refused after the writer's grace (exit 2), not the 10 s stream wait"
    )
    func noWriterBinary() async throws {
        let (folder, fifo) = try Self.makeFIFO()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        // Out of this process, with the defaults: what `kkpush build inspect FIFO` does in a shell. Every reader of a
        // named file goes through InputFile, so payload lint and diagnose --enrollment are the same. The message
        // says which wait ended it: the writer's 0.5 s grace, not the 10 s stream wait for a silent writer (a wall
        // clock bound would measure the machine's load, not kkpush).
        for args in [["build", "inspect", fifo], ["payload", "lint", fifo], ["diagnose", "--enrollment", fifo]] {
            let r = try await CLI.spawn(args, timeout: 120)
            #expect(r.status == 2, "\(args): \(r.stdout) \(r.stderr)")
            #expect(
                r.stderr.contains("is a named pipe that nothing has open for writing (none came within 0.5 s)"),
                "\(args): \(r.stderr)")
            #expect(!r.stderr.contains("within 10 s"), "\(args) waited for a writer that never came: \(r.stderr)")
        }
    }

    @Test("build inspect reads a profile from a FIFO with a writer, a process substitution and - (stdin)")
    func streams() async throws {
        let (folder, fifo) = try Self.makeFIFO()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let profile = Self.profile.path
        let direct = try await CLI.run(["build", "inspect", profile, "--json"])
        #expect(direct.status == 0, "\(direct.stderr)")
        for (script, name) in [
            ("cat '\(profile)' > '\(fifo)' & \"$K\" build inspect '\(fifo)' --json", fifo),
            ("\"$K\" build inspect <(cat '\(profile)') --json", "/dev/fd/"),
            ("\"$K\" build inspect - --json < '\(profile)'", "standard input"),
        ] {
            let r = try await Self.bash(script)
            #expect(r.status == 0, "\(script): \(r.stdout) \(r.stderr)")
            #expect(!r.stderr.contains("not a dictionary") && !r.stderr.contains("zip"), "\(r.stderr)")
            #expect(r.stdout.contains("\"aps_environment\" : \"development\""), "\(script): \(r.stdout)")
            #expect(r.stdout.contains(name), "\(script): \(r.stdout)")
        }
    }

    @Test("A file whose name is not UTF-8 (latin-1 é) is found and read")
    func latin1Name() async throws {
        let folder = try makeTemporaryDirectory(prefix: "kkpush-name").path
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let r = try await Self.bash(
            "f=\"\(folder)/$(printf 'caf\\351').mobileprovision\"; cp '\(Self.profile.path)' \"$f\" && \"$K\" build inspect \"$f\""
        )
        #expect(r.status == 0, "\(r.stdout) \(r.stderr)")
        #expect(!r.stderr.contains("does not exist"), "\(r.stderr)")
        #expect(r.stdout.contains("aps-environment development"), "\(r.stdout)")
    }
}
