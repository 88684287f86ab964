import ArgumentParser
import KKPushCore

/// Anything that can be shown as a kkpush error.
protocol KKPushErrorConvertible: Error {
    var kkDescription: String { get }
}

extension KKPushError: KKPushErrorConvertible {
    var kkDescription: String { description }
}

/// Runs `body`; a ``KKPushError`` becomes a message on stderr and exit code `code` (default 1)
/// instead of ArgumentParser's generic error output.
func reportingErrors<T>(exitCode code: Int32 = 1, _ body: () async throws -> T) async throws -> T {
    do {
        return try await body()
    } catch let error as KKPushError {
        Output.printError("error: \(error.description)")
        throw ExitCode(code)
    }
}
