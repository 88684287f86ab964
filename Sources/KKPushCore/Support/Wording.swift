/// How the libraries word what they tell their caller (#46, each layer its own words).
///
/// A message names an input by its API name in parentheses, `(keyID)`, never by a command line's flag. A message
/// that suggests a command of the kkpush command line names it by a placeholder of its own in parentheses, the
/// command's words in lowerCamelCase followed by `Command` (`(jwtDecodeCommand)` for `kkpush jwt decode`), after a
/// sentence that says in plain words what it does ("decoding the provider token shows kid and iss
/// (jwtDecodeCommand)"). No message cites a README section: it says what the section says.
///
/// The command line puts its flags and commands in their place before it prints; ``plain(_:)`` gives a library's own
/// user the text without the command placeholders.
public enum Wording {
    /// `text` without its command placeholders (` (jwtDecodeCommand)`), whose sentences say what the command does;
    /// the API names in parentheses, `(keyID)`, stay, as they name the caller's own inputs.
    public static func plain(_ text: String) -> String {
        text.replacing(#/ ?\([a-z][A-Za-z]*Command\)/#, with: "")
    }
}
