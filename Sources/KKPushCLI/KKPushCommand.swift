import ArgumentParser

/// The root `kkpush` command.
public struct KKPushCommand: AsyncParsableCommand {
    public static let configuration = CommandConfiguration(
        commandName: "kkpush",
        abstract: "Kantine Koning's APNs push toolkit: send, verify and diagnose pushes, with a mock APNs server.",
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
}
