package import ArgumentParser
package import KKPushCLISupport

/// The root of `kkpush-simulate`: `kkpush simulate` as an executable of its own, whose build leaves out every other
/// command (and the libraries only they link), so a first `swift run kkpush-simulate` compiles about a quarter less
/// than `swift run kkpush simulate`. Same options, output and exit codes.
package struct KKPushSimulateRoot: AsyncParsableCommand {
    package static let configuration = CommandConfiguration(
        commandName: "kkpush-simulate",
        abstract: SimulateCommand.configuration.abstract,
        discussion: SimulateCommand.configuration.discussion + """


            kkpush-simulate is `kkpush simulate` built alone: `swift run kkpush-simulate` builds only what the \
            simulation needs; `swift run kkpush simulate` runs the same code from the whole kkpush command.
            """,
        version: KKPushVersion.string
    )

    @OptionGroup package var simulate: SimulateCommand

    package init() {}

    package func run() async throws {
        try await simulate.run()
    }

    /// Parses and runs one command line with `io`'s environment and streams, and returns its exit code.
    package static func run(_ arguments: [String], io: CommandIO) async -> Int32 {
        await EntryPoint.run(KKPushSimulateRoot.self, arguments, io: io)
    }
}
