package import ArgumentParser
import Foundation
import KKPushAuth
package import KKPushCLISupport
import KKPushCore
import KKPushSimulateCommand
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
        await EntryPoint.run(KKPushCommand.self, arguments, io: io)
    }
}
