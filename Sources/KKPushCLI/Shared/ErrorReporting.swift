package import ArgumentParser
package import Foundation
package import KKPushCore
package import KKPushSystem

/// kkpush's one exit-code table (README "Exit codes", `kkpush --help`).
package enum ExitStatus {
    /// Done: the push was accepted, the check passed.
    package static let ok: Int32 = 0
    /// A verdict: the push was rejected or failed, the check found a problem (or could not be made).
    package static let failed: Int32 = 1
    /// An input could not be used: a file missing, unreadable or malformed (a key, a certificate, JSON).
    package static let input: Int32 = 2
    /// Usage: bad flags or a bad combination of them (ArgumentParser's EX_USAGE).
    package static let usage: Int32 = 64
    /// A service kkpush needs is unavailable (sysexits' EX_UNAVAILABLE): a port to listen on is taken, a
    /// database cannot be reached or will not talk as the URL asks (TLS); a host `tls check` gets no handshake from.
    package static let unavailable: Int32 = 69
    /// Refused (sysexits' EX_NOPERM): the database refused the user, the password or a privilege; APNs refused a
    /// queue worker's credential.
    package static let refused: Int32 = 77
    /// Output could not be written (stdout closed, disk full): `send-batch`'s results, `backend export --output`.
    package static let outputFailed: Int32 = 74
    /// 128 + the signal that stopped a run: 130 for SIGINT, 143 for SIGTERM (`send-batch` and `audit --probe` stop
    /// cleanly and exit with it; every other command is ended by the signal, which a shell reports the same way).
    package static func signal(_ number: Int32) -> Int32 { 128 + number }

    /// The table as `kkpush --help` shows it.
    package static let helpTable = """
        Exit codes (every command): 0 ok; 1 a verdict: the push was rejected or failed, the check found a \
        problem or could not be made; 2 an input is unusable (a file missing, unreadable or malformed: a key, \
        a certificate, JSON; a database without the enrollment table; a value the store does not have: audit \
        --tenant of a tenant without enrollments); 64 usage (bad flags or combinations); 69 unavailable (a port \
        to listen on is taken: mock serve, backend serve; a database unreachable, or not speaking TLS as the URL \
        asks; a host tls check cannot reach); 77 refused (the database refused the user, the password or a privilege; APNs refused a queue worker's credential); 74 output could not be written \
        (send-batch's results, backend export --output); 130 SIGINT, 143 SIGTERM (send-batch and audit --probe \
        stop cleanly first; any other command, send and audit among them, is ended by the signal, which a shell \
        reports as 130 or 143). With --json, an error is printed on stdout as {"error": {"code", "message", \
        "fix"}} (the exit code is the same).

        """

    /// The exit status of each kind of error: the one table.
    package static func code(for kind: KKPushError.Kind) -> Int32 {
        switch kind {
        case .usage: usage
        case .input: input
        case .verdict, .failed: failed
        case .unavailable: unavailable
        case .refused: refused
        case .output: outputFailed
        }
    }

    /// The exit status of `error`: its code's kind's (``code(for:)-(KKPushError.Kind)``).
    package static func code(for error: KKPushError) -> Int32 { code(for: error.code.kind) }
}

/// A root command whose `--help` ends with text ArgumentParser has no place for after the command list.
package protocol HelpEpilogue {
    /// The text after the root's command list.
    static var helpEpilogue: String { get }
}

/// An error the CLI raises itself, with its exit code: a usage error, an unusable input.
package struct CLIError: Error {
    package var exitCode: Int32
    package var code: KKPushError.Code
    package var message: String
    package var fix: String

    package init(exitCode: Int32, code: KKPushError.Code, message: String, fix: String) {
        self.exitCode = exitCode
        self.code = code
        self.message = message
        self.fix = fix
    }

    package static func usage(_ code: KKPushError.Code, _ message: String, fix: String) -> CLIError {
        CLIError(exitCode: ExitStatus.usage, code: code, message: message, fix: fix)
    }
    package static func input(_ code: KKPushError.Code, _ message: String, fix: String) -> CLIError {
        CLIError(exitCode: ExitStatus.input, code: code, message: message, fix: fix)
    }
}

/// The one place that turns an error into its message (text on stderr, or the JSON error object on
/// stdout under `--json`) and its exit code.
package enum ErrorReport {
    /// The running executable's root command (`kkpush`'s, or `kkpush-simulate`'s): the parser's messages, usage lines
    /// and the words that run a subcommand are spelled from it. Each executable's entry point sets it.
    @TaskLocal package static var root: any ParsableCommand.Type = UnnamedRoot.self

    /// The root until an entry point names its own.
    package struct UnnamedRoot: ParsableCommand {
        package static let configuration = CommandConfiguration(commandName: "kkpush")
        package init() {}
    }

    /// `kkpush jwt verify` for `JWTVerifyCommand.self`: the words that run `command`, found in ``root``'s
    /// subcommand tree; nil if it is not in it.
    package static func invocation(of command: any ParsableCommand.Type) -> String? {
        func search(_ node: any ParsableCommand.Type, _ path: [String]) -> [String]? {
            let here = path + [node.configuration.commandName ?? node._commandName]
            if node == command { return here }
            for child in node.configuration.subcommands {
                if let found = search(child, here) { return found }
            }
            return nil
        }
        return search(root, []).map { $0.joined(separator: " ") }
    }

    /// Whether this command line asked for JSON (`--json` anywhere on the command line).
    package static var jsonRequested: Bool { CommandIO.current.arguments.contains("--json") }

    /// The commands whose `--json` output is JSON lines (one object a line): their error is one line too.
    package static let jsonLinesCommands: Set<String> = ["audit"]

    /// Whether this command line's JSON is JSON lines.
    package static var jsonLines: Bool { CommandIO.current.arguments.first.map(jsonLinesCommands.contains) ?? false }

    /// What a user is told of an error: its exit code, stable code, message and fix.
    package struct Rendered: Equatable {
        package var exit: Int32
        package var code: String
        package var message: String
        package var fix: String?

        package init(exit: Int32, code: String, message: String, fix: String?) {
            self.exit = exit
            self.code = code
            self.message = message
            self.fix = fix
        }
    }

    /// Prints `error` and returns its exit code; nil for errors ArgumentParser reports itself
    /// (`ExitCode`, help and `--version`, and usage errors outside `--json`).
    /// `invocation` (`kkpush jwt verify`) names the subcommand that ran, for the fix of a usage error.
    package static func report(
        _ error: any Error, json: Bool = jsonRequested, invocation: String? = nil
    ) -> Int32? {
        guard let r = render(error, json: json, invocation: invocation) else { return nil }
        if json {
            let object: JSONValue = [
                "error": ["code": .string(r.code), "message": .string(r.message), "fix": JSONValue(r.fix)]
            ]
            if jsonLines {
                // One line in a stream of JSON lines, as every other object of it.
                CommandIO.current.write(bytes: object.encoded() + [0x0A])
            } else {
                Output.printJSON(object)
            }
        } else {
            Output.printError("error: \(r.message)" + (r.fix.map { "\nFix: \($0)" } ?? ""))
        }
        return r.exit
    }

    /// `error` as the user reads it (the one place that decides), without printing; nil as for ``report``.
    package static func render(
        _ error: any Error, json: Bool, invocation: String? = nil
    ) -> Rendered? {
        switch ownError(in: error) ?? error {
        case let e as KKPushError:
            // The libraries name their inputs by API name, `(port)`; the user reads this command line's flags.
            let e = FlagWords.common.apply(e)
            return Rendered(
                exit: ExitStatus.code(for: e), code: e.code.rawValue,
                message: e.underlying.flatMap(ErrorWords.cause).map { "\(e.message) (\($0))" } ?? e.message, fix: e.fix)
        case let e as CLIError:
            // Its own words, with what a library said in it (a pre-flight fix) in this command line's too.
            return Rendered(
                exit: e.exitCode, code: e.code.rawValue, message: FlagWords.common.apply(e.message),
                fix: FlagWords.common.apply(e.fix))
        case is ExitCode, is CleanExit:
            return nil
        default:
            let parserCode = root.exitCode(for: error).rawValue
            if parserCode == 0 { return nil }
            if error is ValidationError || parserCode == ExitStatus.usage {
                guard json else { return nil }  // ArgumentParser prints it with the usage line
                let command = invocation ?? Self.invocation(inParserMessage: root.fullMessage(for: error))
                return Rendered(
                    exit: ExitStatus.usage, code: "usage", message: root.message(for: error),
                    fix: command.map { "Run \($0) --help for its flags." }
                        ?? "Run the command with --help for its flags.")
            }
            // Not kkpush's nor the parser's: a system or library error that escaped its command. Said as what it
            // is, in words (its description), with where to report it; never a Swift value dump of ours.
            let described = (error as? any LocalizedError)?.errorDescription ?? "\(error)"
            return Rendered(
                exit: ExitStatus.failed, code: "unexpected-error",
                message: "An unexpected error (\(type(of: error))): \(described)",
                fix: "This is a kkpush bug: report it with the command line that caused it.")
        }
    }

    /// kkpush's own error (a `KKPushError` or `CLIError`) inside `error`, if ArgumentParser wrapped it: an error
    /// thrown from a `validate()` reaches `main` inside ArgumentParser's internal `CommandError`, whose
    /// message would be a Swift debug dump of ours, with exit 1 instead of ours. Found by reflection, a few
    /// levels deep, because the wrapper types are not public.
    package static func ownError(in error: any Error) -> (any Error)? {
        func search(_ value: Any, depth: Int) -> (any Error)? {
            if value is KKPushError || value is CLIError { return value as? any Error }
            guard depth > 0 else { return nil }
            for child in Mirror(reflecting: value).children {
                if let found = search(child.value, depth: depth - 1) { return found }
            }
            return nil
        }
        if error is KKPushError || error is CLIError { return nil }
        return search(error, depth: 4)
    }

    /// `kkpush jwt verify` from ArgumentParser's `See 'kkpush jwt verify --help' for more information.`
    /// line, which names the subcommand a parse or `validate()` error belongs to; nil if there is none.
    package static func invocation(inParserMessage text: String) -> String? {
        guard let start = text.range(of: "See '"),
            let end = text.range(of: " --help'", range: start.upperBound..<text.endIndex)
        else { return nil }
        let words = text[start.upperBound..<end.lowerBound]
        return words.isEmpty || words.contains("\n") ? nil : String(words)
    }

    /// Reports `error` and returns its exit code.
    ///
    /// `command` is the subcommand that was parsed and ran, if any. A usage error its `run()` throws
    /// (a `ValidationError`: a flag missing that only the environment could have supplied, an empty
    /// standard input) is shown with that subcommand's usage line, as ArgumentParser does for errors from
    /// `validate()`: left to ArgumentParser, it would show the root's `Usage: kkpush <subcommand>`.
    package static func finish(with error: any Error, command: (any ParsableCommand.Type)? = nil) -> Int32 {
        let invocation = command.flatMap { $0 == root ? nil : Self.invocation(of: $0) }
        if let code = report(error, invocation: invocation) { return code }
        if error is ValidationError, let command, let invocation {
            Output.printError(usageMessage(root.message(for: error), command: command, invocation: invocation))
            return ExitStatus.usage
        }
        // ArgumentParser's own: help and --version on stdout, its usage errors on stderr, an ExitCode silently.
        var text = root.fullMessage(for: error)
        let code = root.exitCode(for: error).rawValue
        // The root's own help ends with what every command shares (kkpush: the exit codes and secrets).
        if code == ExitStatus.ok, let epilogue = (root as? any HelpEpilogue.Type)?.helpEpilogue,
            text.trimmingCharacters(in: .whitespacesAndNewlines)
                == root.helpMessage().trimmingCharacters(in: .whitespacesAndNewlines)
        {
            text = text.trimmingCharacters(in: .newlines) + "\n\n" + wrapped(epilogue, width: 80)
        }
        if !text.isEmpty {
            if code == ExitStatus.ok { print(text) } else { Output.printError(text) }
        }
        return code
    }

    /// `text` with each paragraph broken into lines of at most `width` characters at spaces, as ArgumentParser
    /// wraps the help around it.
    package static func wrapped(_ text: String, width: Int) -> String {
        text.split(separator: "\n", omittingEmptySubsequences: false).map { paragraph in
            var lines: [String] = []
            var line = ""
            for word in paragraph.split(separator: " ") {
                if !line.isEmpty, line.count + 1 + word.count > width {
                    lines.append(line)
                    line = ""
                }
                line += line.isEmpty ? String(word) : " " + word
            }
            lines.append(line)
            return lines.joined(separator: "\n")
        }.joined(separator: "\n")
    }

    /// `Error: …`, the subcommand's usage line and where its help is: ArgumentParser's layout.
    package static func usageMessage(_ message: String, command: any ParsableCommand.Type, invocation: String) -> String
    {
        """
        Error: \(message)
        Usage: \(root.usageString(for: command))
          See '\(invocation) --help' for more information.
        """
    }
}

/// Runs `body`; a ``KKPushError`` or ``CLIError`` is reported by ``ErrorReport``
/// (text on stderr, or JSON on stdout under `--json`) and becomes its exit code from ``ExitStatus`` (a
/// KKPushError's by its code's kind, a CLIError's its own). A `ValidationError` is rethrown, for the entry point
/// (``ErrorReport/finish(with:command:)``) to report with the subcommand's usage.
package func reportingErrors<T>(_ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as ExitCode {
        throw error
    } catch let error as ValidationError {
        // Reported by the entry point, which knows the subcommand: its usage line, or under --json
        // a fix naming its --help.
        throw error
    } catch {
        guard let exit = ErrorReport.report(error) else { throw error }
        throw ExitCode(exit)
    }
}
