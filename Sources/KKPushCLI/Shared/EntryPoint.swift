package import ArgumentParser
package import KKPushSystem

/// How an executable's root command runs one command line: parsed, run, and every error reported through
/// ``ErrorReport`` (the one exit-code table). Shared by `kkpush` and `kkpush-simulate`.
package enum EntryPoint {
    /// Parses and runs `arguments` under `root` with `io`'s environment and streams, and returns the exit code,
    /// without ending the process (tests run command lines in process through it).
    package static func run(_ root: any ParsableCommand.Type, _ arguments: [String], io: CommandIO) async -> Int32 {
        var io = io
        io.arguments = arguments
        return await CommandIO.$current.withValue(io) {
            await InputFile.$standardInput.withValue(io.input) {
                await ErrorReport.$root.withValue(root) { await runCurrent(root, arguments) }
            }
        }
    }

    private static func runCurrent(_ root: any ParsableCommand.Type, _ arguments: [String]) async -> Int32 {
        var ran: (any ParsableCommand.Type)?
        do {
            var command = try root.parseAsRoot(arguments)
            // `--help` parses to ArgumentParser's own help command (the one command not in the root's tree), which
            // shows the nearest command's help: for a misspelt command (`kkpush channel --help`) that is the root's,
            // with exit 0. Name the typo instead.
            if type(of: command) != root, ErrorReport.invocation(of: type(of: command)) == nil,
                let mistake = CommandSpelling.mistake(in: arguments, root: root)
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
            if ran == nil, let mistake = CommandSpelling.mistake(in: arguments, root: root) {
                return ErrorReport.finish(with: ValidationError(mistake.message), command: mistake.command)
            }
            return ErrorReport.finish(with: error, command: ran)
        }
    }
}
