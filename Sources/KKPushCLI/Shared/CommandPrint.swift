/// The command line's one `print`: the running command's standard output (``CommandIO/print(_:separator:terminator:)``),
/// not the process's, so a command run in process prints into its caller's streams.
///
/// It serves every module of the command line (`KKPushCLI`, `KKPushSimulateCommand` and this one): a declaration in a
/// module shadows one of the standard library of the same name, so in every file that imports `KKPushCLISupport` a
/// bare `print(…)` is this one, not `Swift.print` (which would write to the process's stdout, past a test's captured
/// streams). A file that does not import this module gets `Swift.print`: every command file imports it.
package func print(_ items: Any..., separator: String = " ", terminator: String = "\n") {
    CommandIO.print(items, separator: separator, terminator: terminator)
}
