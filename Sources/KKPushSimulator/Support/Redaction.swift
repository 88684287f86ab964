/// The first 12 characters of a token or secret and `…`: the only part the simulator logs.
func redactedPrefix(_ secret: String) -> String {
    secret.count <= 12 ? secret : String(secret.prefix(12)) + "…"
}
