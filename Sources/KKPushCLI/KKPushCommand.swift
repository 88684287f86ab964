package import ArgumentParser
import Foundation
import KKPushAuth
import KKPushCore
import KKPushSystem

/// The root `kkpush` command.
package struct KKPushCommand: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "kkpush",
        abstract: "Kantine Koning's APNs push toolkit: send, verify and diagnose pushes, with a mock APNs server.",
        discussion: ExitStatus.helpTable + "\n" + Secrets.helpTable,
        version: KKPushVersion.string,
        subcommands: [
            VersionCommand.self,
            JWTCommand.self,
            CertCommand.self,
            EnvCommand.self,
            BuildCommand.self,
            DemoCommand.self,
            BenchCommand.self,
            SendCommand.self,
            SendBatchCommand.self,
            QueueCommand.self,
            WorkerCommand.self,
            ChannelCommand.self,
            DiagnoseCommand.self,
            AuditCommand.self,
            MockCommand.self,
            PayloadCommand.self,
            SimulateCommand.self,
            TokenCommand.self,
            BackendCommand.self,
            TLSCommand.self,
        ]
    )

    package init() {}

    /// Parses and runs a command with the process's arguments, environment and streams, and ends the process with
    /// its exit code.
    package static func main() async {
        // Before anything uses OpenSSL: threads still ending while `exit` runs may free keys (see the function).
        OpenSSLExit.keepStateUntilExit()
        let status = await run(Array(CommandLine.arguments.dropFirst()), io: .process)
        Foundation.exit(status)
    }

    /// Parses and runs one command line with `io`'s environment and streams, and returns its exit code; every
    /// error leaves through ``ErrorReport`` (the one exit-code table). What `kkpush` does, without ending the
    /// process: tests run command lines in process through it.
    package static func run(_ arguments: [String], io: CommandIO) async -> Int32 {
        var io = io
        io.arguments = arguments
        return await CommandIO.$current.withValue(io) {
            await InputFile.$standardInput.withValue(io.input) { await runCurrent(arguments) }
        }
    }

    private static func runCurrent(_ arguments: [String]) async -> Int32 {
        var ran: (any ParsableCommand.Type)?
        do {
            var command = try parseAsRoot(arguments)
            // `--help` parses to ArgumentParser's own help command, which shows the nearest command's help: for a
            // misspelt command (`kkpush channel --help`) that is the root's, with exit 0. Name the typo instead.
            if String(describing: type(of: command)) == "HelpCommand",
                let mistake = CommandSpelling.mistake(in: arguments, root: KKPushCommand.self)
            {
                return ErrorReport.finish(with: ValidationError(mistake.message), command: mistake.command)
            }
            ran = type(of: command)
            if var asyncCommand = command as? any AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
            return ExitStatus.ok
        } catch {
            // A parse error (or a help request) may hide a misspelt command or option: that comes first.
            if ran == nil, let mistake = CommandSpelling.mistake(in: arguments, root: KKPushCommand.self) {
                return ErrorReport.finish(with: ValidationError(mistake.message), command: mistake.command)
            }
            return ErrorReport.finish(with: error, command: ran)
        }
    }

    /// `kkpush jwt verify` for `JWTVerifyCommand.self`: the words that run `command`, found in the
    /// subcommand tree; nil if it is not in it.
    static func invocation(of command: any ParsableCommand.Type) -> String? {
        func search(_ node: any ParsableCommand.Type, _ path: [String]) -> [String]? {
            let here = path + [node.configuration.commandName ?? node._commandName]
            if node == command { return here }
            for child in node.configuration.subcommands {
                if let found = search(child, here) { return found }
            }
            return nil
        }
        return search(KKPushCommand.self, []).map { $0.joined(separator: " ") }
    }
}
