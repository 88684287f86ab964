package import Foundation
package import KKPushCore
package import KKPushSystem

/// What a running command takes from outside itself: its arguments, its environment and its standard streams.
///
/// The `kkpush` executable runs with the process's own (``process``). ``KKPushCommand/run(_:io:)`` runs a command
/// in this process with others: the test suite gives each command line its own environment and its own output
/// files, so commands run side by side in one process and their output is captured, as a shell would. Every
/// write of the CLI goes through ``current`` (`print` in this module is ``print(_:separator:terminator:)`` below),
/// and every read of the environment.
///
/// What stays process-wide, so a command that depends on it is run as a process: signal dispositions
/// (`send-batch`'s SIGINT handling), the environment C libraries read for themselves (libpq's `PG*`
/// variables), the working directory.
package struct CommandIO: Sendable {
    /// The command line after the program name.
    package var arguments: [String]
    /// The environment the command reads (`APNS_*`, `KKPUSH_*`, `DATABASE_URL`).
    package var environment: [String: String]
    /// Standard input, output and error.
    package var input: Int32
    package var output: Int32
    package var error: Int32
    /// The `kkpush` executable that commands starting kkpush again (`bench faults`, `bench soak`) run; nil: this
    /// process's own.
    package var executable: String?
    /// Whether these are the process's own streams: output then goes through the C library's buffered stdout, as
    /// Swift's `print` does, so it keeps its order with what ArgumentParser prints.
    package let isProcess: Bool

    /// A command's arguments, environment and streams, other than the process's (see ``CommandIO``).
    package init(
        arguments: [String], environment: [String: String], input: Int32, output: Int32, error: Int32,
        executable: String? = nil
    ) {
        self.arguments = arguments
        self.environment = environment
        self.input = input
        self.output = output
        self.error = error
        self.executable = executable
        self.isProcess = false
    }

    private init(processArguments: [String]) {
        arguments = processArguments
        environment = ProcessInfo.processInfo.environment
        input = STDIN_FILENO
        output = STDOUT_FILENO
        error = STDERR_FILENO
        executable = nil
        isProcess = true
    }

    /// The process's own arguments, environment and streams.
    package static var process: CommandIO { CommandIO(processArguments: Array(CommandLine.arguments.dropFirst())) }

    /// The running command's; the process's outside ``KKPushCommand/run(_:io:)``.
    @TaskLocal package static var current = CommandIO.process

    /// Writes `text` to standard output.
    package func write(_ text: String) {
        if isProcess {
            Swift.print(text, terminator: "")
        } else {
            Array(text.utf8).withUnsafeBytes { _ = FileDescriptors.writeAll(output, $0) }
        }
    }

    /// Writes bytes to standard output, unbuffered.
    package func write(bytes: [UInt8]) {
        if isProcess { fflush(nil) }  // what print buffered comes first
        bytes.withUnsafeBytes { _ = FileDescriptors.writeAll(output, $0) }
    }

    /// Writes `text` to standard error, unbuffered; a closed stderr is ignored, never fatal.
    package func writeError(_ text: String) {
        Array(text.utf8).withUnsafeBytes { _ = FileDescriptors.writeAll(error, $0) }
    }

    /// The executable to start for another kkpush command.
    package var kkpushExecutable: String {
        if let executable { return executable }
        if let path = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") { return path }
        return URL(fileURLWithPath: CommandLine.arguments.first ?? "kkpush").resolvingSymlinksInPath().path
    }
}

extension CommandIO {
    /// What the commands' `print` writes: `items` as `Swift.print` spells them, on the running command's standard
    /// output (``CommandIO/current``), which is the process's except for a command run in process. Each module of
    /// commands declares its own `print` that calls this, so a plain `print` in a command never bypasses it.
    package static func print(_ items: [Any], separator: String = " ", terminator: String = "\n") {
        current.write(items.map { String(describing: $0) }.joined(separator: separator) + terminator)
    }
}
