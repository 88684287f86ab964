/// This module's `print`: the running command's standard output (``CommandIO/print(_:separator:terminator:)``), not
/// the process's, so a command run in process prints into its caller's streams. It shadows `Swift.print` here.
func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    CommandIO.print(items, separator: separator, terminator: terminator)
}
