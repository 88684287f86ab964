import ArgumentParser

/// The root `kkpush` command.
public struct KKPushCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "kkpush",
        abstract: "Kantine Koning's APNs push toolkit: send, verify and diagnose pushes, with a mock APNs server.",
        discussion: ExitStatus.helpTable + "\n" + Secrets.helpTable,
        version: KKPushVersion.string,
        subcommands: [
            VersionCommand.self,
            JWTCommand.self,
            CertCommand.self,
            EnvCommand.self,
            DemoCommand.self,
            BenchCommand.self,
            SendCommand.self,
            SendBatchCommand.self,
            DiagnoseCommand.self,
            MockCommand.self,
            PayloadCommand.self,
            SimulateCommand.self,
            TokenCommand.self,
            BackendCommand.self,
        ]
    )

    public init() {}

    /// Parses and runs a command; every error leaves through ``ErrorReport`` (the one exit-code table).
    public static func main() async {
        let arguments = Array(CommandLine.arguments.dropFirst())
        do {
            var command = try parseAsRoot(arguments)
            if var asyncCommand = command as? AsyncParsableCommand {
                try await asyncCommand.run()
            } else {
                try command.run()
            }
        } catch {
            ErrorReport.exit(with: error)
        }
    }
}
