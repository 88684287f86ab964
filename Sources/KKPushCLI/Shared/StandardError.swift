/// Unbuffered writes to stderr that never fail loudly (a closed stderr must not end the run).
package enum StandardError {
    package static func emit(_ text: String) {
        CommandIO.current.writeError(text)
    }

    package static func line(_ text: String) { emit(text + "\n") }
}
