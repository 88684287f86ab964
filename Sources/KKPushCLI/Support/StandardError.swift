/// Unbuffered writes to stderr that never fail loudly (a closed stderr must not end the run).
enum StandardError {
    static func emit(_ text: String) {
        CommandIO.current.writeError(text)
    }

    static func line(_ text: String) { emit(text + "\n") }
}
