package import ArgumentParser
import Foundation
import KKPushAuth
package import KKPushCLISupport
import KKPushCore
import KKPushSimulateCommand
import KKPushSystem

/// The root `kkpush` command.
package struct KKPushCommand: AsyncParsableCommand, HelpEpilogue {
    /// The commands grouped by the task a person comes with, in the order they come: send a push, know what a
    /// build, key or server says, find why a push did not arrive, run a fleet, try it all on one machine.
    /// Exit codes and where secrets come from follow the list (``helpEpilogue``).
    package static var configuration: CommandConfiguration {
        CommandConfiguration(
            commandName: "kkpush",
            abstract:
                "Kantine Koning's APNs push toolkit: send pushes, know which environment a token belongs to, find why a push did not arrive; a mock APNs server and a simulated app and backend run the whole path on one machine.",
            // The man page (generated from the help dump) keeps them in its description.
            discussion: CommandIO.current.arguments.contains("--experimental-dump-help") ? helpEpilogue : "",
            version: KKPushVersion.string,
            groupedSubcommands: [
                CommandGroup(
                    name: "Send",
                    subcommands: [
                        SendCommand.self, SendBatchCommand.self, PayloadCommand.self, ChannelCommand.self,
                        ActivityCommand.self,
                    ]),
                CommandGroup(
                    name: "Know",
                    subcommands: [
                        BuildCommand.self, EnvCommand.self, JWTCommand.self, CertCommand.self, TLSCommand.self,
                    ]),
                CommandGroup(
                    name: "Diagnose", subcommands: [DiagnoseCommand.self, TokenCommand.self, DemoCommand.self]),
                CommandGroup(
                    name: "Fleet",
                    subcommands: [AuditCommand.self, QueueCommand.self, WorkerCommand.self, ReceiptsCommand.self]),
                CommandGroup(
                    name: "Mock and simulate",
                    subcommands: [SimulateCommand.self, MockCommand.self, BackendCommand.self, BenchCommand.self]),
                CommandGroup(name: "Reference", subcommands: [VersionCommand.self]),
            ]
        )
    }

    /// What `kkpush --help` shows after the commands: the exit codes and the secrets' precedence.
    package static let helpEpilogue = ExitStatus.helpTable + "\n" + Secrets.helpTable

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
        await EntryPoint.run(KKPushCommand.self, arguments, io: io)
    }
}
