import Foundation
import KKPushCore
import KKPushTestSupport
import Testing

/// The mock's web console in a real headless Chromium (CDP over a WebSocket): the page of the real
/// `kkpush mock serve`, used as a person would (typing into fields, clicking buttons), its test pushes sent
/// by kkpush's own client through the CLI's `/send` hook. Without chromium the tests fail, saying to run
/// `bash .ci/setup --tests` (as the PostgreSQL tests do without PostgreSQL): never a silent skip.
@Suite("Mock web console (headless Chromium)", .serialized)
struct MockConsoleCLITests {
    static let topic = "nl.kantinekoning.app"
    static let adminToken = "kkpush-console-admin-0123456789"

    /// The real mock (`kkpush mock serve --json`, every port 0) and a browser on its console.
    struct Session {
        var mock: BackgroundProcess
        var adminURL: String
        var browser: HeadlessChromium
        /// The banner (`mock serve --json`'s first line).
        var info: [String: Any] = [:]

        func stop() async {
            await browser.stop()
            await mock.stop()
        }
    }

    static func open(adminToken: String? = nil, extraArguments: [String] = []) async throws -> Session {
        var arguments =
            [
                "mock", "serve", "--sandbox-port", "0", "--production-port", "0", "--admin-port", "0", "--json",
            ] + extraArguments
        if let adminToken { arguments += ["--admin-token", adminToken] }
        let mock = try BackgroundProcess(try CLI.binary, arguments)
        let line = await mock.firstLine()
        guard let announced = line,
            let info = try JSONSerialization.jsonObject(with: Data(announced.utf8)) as? [String: Any],
            let adminURL = info["admin_url"] as? String
        else {
            await mock.stop()
            throw HeadlessChromium.Failure(description: "mock serve printed no admin_url: \(mock.output.stderr)")
        }
        do {
            let browser = try await HeadlessChromium.start()
            try await browser.navigate(adminURL + "/")
            return Session(mock: mock, adminURL: adminURL, browser: browser, info: info)
        } catch {
            await mock.stop()
            throw error
        }
    }

    /// A JavaScript string literal of `text`.
    static func js(_ text: String) -> String {
        String(decoding: try! JSONSerialization.data(withJSONObject: [text]), as: UTF8.self).dropFirst().dropLast()
            .description
    }

    /// Types `value` into the field `id` as a person would (value set, `input` and `change` dispatched).
    static func fill(_ browser: HeadlessChromium, _ id: String, _ value: String) async throws {
        _ = try await browser.evaluate(
            """
            (() => { const e = document.getElementById(\(js(id))); e.focus(); e.value = \(js(value));
              e.dispatchEvent(new Event('input', { bubbles: true })); e.dispatchEvent(new Event('change', { bubbles: true }));
              return true; })()
            """)
    }

    /// Clicks the element `selector` (a real click event).
    static func click(_ browser: HeadlessChromium, _ selector: String) async throws {
        let clicked = try await browser.evaluate(
            "(() => { const e = document.querySelector(\(js(selector))); if (!e) return false; e.click(); return true; })()"
        )
        #expect(clicked.bool == true, "nothing to click at \(selector)")
    }

    static func text(_ browser: HeadlessChromium, _ selector: String) async throws -> String {
        try await browser.evaluate(
            "(() => { const e = document.querySelector(\(js(selector))); return e ? e.textContent : null; })()"
        ).string ?? ""
    }

    /// Mints a sandbox device through the page's Devices form; its token (the page puts it in the send form).
    static func mint(_ browser: HeadlessChromium) async throws -> String {
        try await fill(browser, "send-token", "")
        try await fill(browser, "mint-topic", topic)
        try await click(browser, "#mint-button")
        let token = try await browser.waitFor(
            "a minted token in the send form",
            "(() => { const v = document.getElementById('send-token').value; return v.length >= 64 ? v : null; })()")
        return try #require(token.string)
    }

    /// Sends through the page's form to `token` (payload `payload`); waits for the answer shown and returns
    /// its status (`200`, `410`...) and apns-id.
    static func send(_ browser: HeadlessChromium, token: String, payload: String) async throws -> (String, String) {
        try await fill(browser, "send-token", token)
        try await fill(browser, "send-topic", topic)
        try await fill(browser, "send-payload", payload)
        try await click(browser, "#send-button")
        let status = try await browser.waitFor(
            "the answer of the test push",
            "document.getElementById('send-answer').dataset.status || null", timeout: 20)
        let id = try await browser.evaluate("document.getElementById('send-answer').dataset.apnsId || ''")
        return (status.string ?? "", (id.string ?? "").lowercased())
    }

    /// Waits until the page's delivery log shows the entry with `apnsID`.
    static func waitForLogEntry(_ browser: HeadlessChromium, _ apnsID: String) async throws {
        try await browser.waitFor(
            "apns-id \(apnsID) in the page's delivery log",
            "[...document.querySelectorAll('#log-body tr')].some(r => (r.dataset.apnsId || '').toLowerCase() === \(js(apnsID)))"
        )
    }

    /// curl to the admin API: the HTTP status and the body.
    static func curl(_ arguments: [String]) async throws -> (Int, String) {
        let output = try await runProcess(
            URL(fileURLWithPath: "/usr/bin/curl"), ["-sS", "-w", "\n%{http_code}"] + arguments, timeout: 20)
        let text = String(decoding: output.stdout, as: UTF8.self)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        return (Int(lines.last ?? "") ?? 0, lines.dropLast().joined(separator: "\n"))
    }

    /// Subscribes `token` to the channel `id` through the admin API.
    static func subscribe(_ s: Session, token: String, to id: String) async throws {
        let body = String(decoding: try JSONSerialization.data(withJSONObject: ["token": token]), as: UTF8.self)
        let (subscribed, answer) = try await curl([
            "-X", "POST", "-H", "content-type: application/json", "--data", body,
            s.adminURL
                + "/channels/\(id.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? id)/subscribers",
        ])
        #expect(subscribed == 201, "\(answer)")
    }

    /// Waits until the page's delivery log shows the copy of a broadcast on `channel` delivered to `token`.
    static func waitForBroadcastCopy(_ b: HeadlessChromium, token: String, channel id: String) async throws {
        try await b.waitFor(
            "the broadcast's copy in the delivery log",
            """
            [...document.querySelectorAll('#log-body tr')].some(r => r.dataset.token === \(js(token))
              && r.textContent.includes('broadcast on ' + \(js(id))))
            """)
    }

    @Test("a push sent through the page's form appears in the page's live log; screenshot")
    func sendAndSeeInLog() async throws {
        let s = try await Self.open()
        do {
            let b = s.browser
            try await b.waitFor(
                "the console to reach the mock", "document.getElementById('health').textContent.startsWith('up')")
            #expect(try await b.evaluate("document.title").string == "kkpush mock APNs console")
            let token = try await Self.mint(b)
            let (status, apnsID) = try await Self.send(
                b, token: token, payload: #"{"aps":{"alert":{"title":"Dienst gewijzigd","body":"Bardienst om 19:00"}}}"#
            )
            #expect(status == "200")
            #expect(apnsID.count == 36)
            let answer = try await Self.text(b, "#send-answer")
            #expect(answer.contains("200 accepted") && answer.lowercased().contains(apnsID), "\(answer)")
            try await Self.waitForLogEntry(b, apnsID)
            let row = try await b.evaluate(
                "[...document.querySelectorAll('#log-body tr')].find(r => r.dataset.apnsId.toLowerCase() === \(Self.js(apnsID))).textContent"
            )
            #expect(row.string?.contains("Bardienst om 19:00") == true, "\(row)")
            // The mock's own log (the admin API, not the page) holds it: the push really went through.
            let (code, log) = try await Self.curl([s.adminURL + "/log?apns_id=" + apnsID])
            #expect(code == 200 && log.contains(token), "\(log)")

            // A screenshot of the page: a real PNG of some size.
            let png = try await b.screenshot()
            #expect(png.starts(with: [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A]))
            #expect(png.count > 20_000, "\(png.count) bytes")
            let dir = try makeTemporaryDirectory(prefix: "kkpush-console")
            defer { try? FileManager.default.removeItem(at: dir) }
            try png.write(to: dir.appendingPathComponent("console.png"))
            try? png.write(to: URL(fileURLWithPath: "/tmp/kkpush-console.png"))

            // The page's own origin may call the admin API (the console does); another origin may not, and
            // neither may a page whose name was pointed at 127.0.0.1 (its Host is not an address).
            let port = try #require(URL(string: s.adminURL)?.port)
            let own = try await Self.curl([
                "-X", "POST", "-H", "Origin: \(s.adminURL)", s.adminURL + "/clock", "-d", #"{"advance_seconds":0}"#,
            ])
            #expect(own.0 == 200, "\(own.1)")
            let foreign = try await Self.curl([
                "-X", "POST", "-H", "Origin: http://evil.example", s.adminURL + "/reset",
            ])
            #expect(foreign.0 == 403 && foreign.1.contains("admin-origin"), "\(foreign.1)")
            let rebound = try await Self.curl([
                "-X", "POST", "-H", "Origin: http://evil.example:\(port)", "-H", "Host: evil.example:\(port)",
                s.adminURL + "/reset",
            ])
            #expect(rebound.0 == 403, "\(rebound.1)")
        } catch {
            await s.stop()
            throw error
        }
        await s.stop()
    }

    @Test("a payload with <script> and <img onerror> is shown as text; no script runs")
    func payloadShownAsText() async throws {
        let s = try await Self.open()
        do {
            let b = s.browser
            try await b.waitFor(
                "the console to reach the mock", "document.getElementById('health').textContent.startsWith('up')")
            let token = try await Self.mint(b)
            let payload =
                #"{"aps":{"alert":{"title":"<script>window.__pwned=1</script>","body":"<img src=x onerror=\"window.__pwned=2\">"}}}"#
            let (status, apnsID) = try await Self.send(b, token: token, payload: payload)
            #expect(status == "200")
            try await Self.waitForLogEntry(b, apnsID)
            // The token's history too (a click on the token in the log).
            try await Self.click(b, "#log-body button.link")
            try await b.waitFor(
                "the history panel",
                "!document.getElementById('history').classList.contains('hidden') && document.querySelectorAll('#history-body tr').length > 0"
            )
            // An image of the same source as the injected one, loaded now: by its error event, an image the page
            // made of the payload while rendering (loading since then) has had its own error event too.
            let sentinel = try await b.evaluate(
                "new Promise(r => { const i = new Image(); i.onerror = () => r('error'); i.onload = () => r('load'); i.src = 'x'; })"
            )
            #expect(sentinel.string == "error")
            let logText = try await Self.text(b, "#log-body")
            #expect(logText.contains("<script>window.__pwned=1</script>"), "\(logText)")
            #expect(logText.contains(#"<img src=x onerror=\"window.__pwned=2\">"#), "\(logText)")
            let historyText = try await Self.text(b, "#history-body")
            #expect(historyText.contains("<script>window.__pwned=1</script>"), "\(historyText)")
            #expect(try await b.evaluate("typeof window.__pwned").string == "undefined")
            let injected = try await b.evaluate(
                "document.querySelectorAll('#log-body img, #log-body script, #history-body img, #history-body script, main img').length"
            )
            #expect(injected.int == 0)
            // The headers that back it: the CSP (no inline script) and nosniff.
            let (code, head) = try await Self.curl(["-I", "-X", "GET", s.adminURL + "/"])
            #expect(code == 200)
            #expect(
                head.lowercased().contains("content-security-policy: default-src 'self'; script-src 'self'"), "\(head)")
            #expect(head.lowercased().contains("content-type: text/html; charset=utf-8"), "\(head)")
        } catch {
            await s.stop()
            throw error
        }
        await s.stop()
    }

    @Test(
        "filter by token; a fault added on the page takes effect; unregistered on the page → 410 explained; both in Rejected"
    )
    func filterFaultUnregister() async throws {
        let s = try await Self.open()
        do {
            let b = s.browser
            try await b.waitFor(
                "the console to reach the mock", "document.getElementById('health').textContent.startsWith('up')")
            let first = try await Self.mint(b)
            let second = try await Self.mint(b)
            var ids: [String] = []
            for (token, n) in [(first, 1), (second, 2), (first, 3)] {
                let (status, id) = try await Self.send(b, token: token, payload: #"{"aps":{"alert":"push \#(n)"}}"#)
                #expect(status == "200")
                ids.append(id)
            }
            try await Self.waitForLogEntry(b, ids[2])

            // Filter by token: only that token's two entries.
            try await Self.fill(b, "filter-token", first)
            try await b.waitFor(
                "the log filtered by token",
                "(() => { const rows = [...document.querySelectorAll('#log-body tr')]; return rows.length === 2 && rows.every(r => r.dataset.token === \(Self.js(first))); })()"
            )
            // Filter by topic: another app has none.
            try await Self.fill(b, "filter-token", "")
            try await Self.fill(b, "filter-topic", "nl.other.app")
            try await b.waitFor(
                "the log filtered by another topic", "document.querySelectorAll('#log-body tr').length === 0")
            try await Self.click(b, "#filter-clear")
            try await b.waitFor("the whole log again", "document.querySelectorAll('#log-body tr').length === 3")

            // A fault: the next push answers 500 InternalServerError (explained on the page).
            try await Self.fill(b, "fault-kind", "respond")
            try await Self.fill(b, "fault-status", "500")
            try await Self.fill(b, "fault-reason", "InternalServerError")
            try await Self.fill(b, "fault-count", "1")
            try await Self.click(b, "#fault-add")
            try await b.waitFor("the fault in the list", "document.querySelectorAll('#faults-body tr').length === 1")
            let (faulted, _) = try await Self.send(b, token: second, payload: #"{"aps":{"alert":"x"}}"#)
            #expect(faulted == "500")
            let faultAnswer = try await Self.text(b, "#send-answer")
            #expect(faultAnswer.contains("500 InternalServerError"), "\(faultAnswer)")
            #expect(faultAnswer.contains(APNsReason.internalServerError.explanation), "\(faultAnswer)")
            let (after, _) = try await Self.send(b, token: second, payload: #"{"aps":{"alert":"y"}}"#)
            #expect(after == "200", "the fault was for one push only")
            // A fault removed on the page is gone from the mock.
            try await b.waitFor(
                "the used fault gone from the list", "document.querySelectorAll('#faults-body tr').length === 0")
            try await Self.fill(b, "fault-kind", "delay")
            try await Self.fill(b, "fault-delay", "5000")
            try await Self.fill(b, "fault-count", "")
            try await Self.click(b, "#fault-add")
            try await b.waitFor(
                "the delay fault in the list",
                "[...document.querySelectorAll('#faults-body tr')].some(r => r.textContent.includes('5000 ms'))")
            try await Self.click(b, "#faults-body button")
            try await b.waitFor("the fault list empty", "document.querySelectorAll('#faults-body tr').length === 0")
            let (_, faults) = try await Self.curl([s.adminURL + "/faults"])
            #expect(faults.contains(#"{"faults":[]}"#), "\(faults)")

            // Unregister the first device on the page: a push to it gets 410 Unregistered, explained.
            try await Self.click(b, "[data-unregister=\"\(first)\"]")
            try await b.waitFor(
                "the device shown unregistered",
                "[...document.querySelectorAll('#devices-body tr')].some(r => r.dataset.token === \(Self.js(first)) && r.textContent.includes('Unregistered since'))"
            )
            let (gone, _) = try await Self.send(b, token: first, payload: #"{"aps":{"alert":"z"}}"#)
            #expect(gone == "410")
            let goneAnswer = try await Self.text(b, "#send-answer")
            #expect(goneAnswer.contains("410 Unregistered"), "\(goneAnswer)")
            #expect(goneAnswer.contains(APNsReason.unregistered.explanation), "\(goneAnswer)")
            #expect(goneAnswer.contains(APNsReason.unregistered.fix), "\(goneAnswer)")

            // Both rejections are on the page, in the Rejected table: the injected 500 and the 410 of the mock's
            // own checks, with their reasons and tokens (not only in the metrics).
            try await b.waitFor(
                "the 500 and the 410 in the page's Rejected table",
                """
                (() => { const rows = [...document.querySelectorAll('#rejections-body tr')];
                  const injected = rows.some(r => r.dataset.status === '500' && r.dataset.reason === 'InternalServerError'
                    && r.dataset.token === \(Self.js(second)) && r.textContent.includes('injected fault'));
                  const gone = rows.some(r => r.dataset.status === '410' && r.dataset.reason === 'Unregistered'
                    && r.dataset.token === \(Self.js(first)) && r.textContent.includes("the mock's checks"));
                  return injected && gone; })()
                """)
            let (rejectionsCode, rejections) = try await Self.curl([s.adminURL + "/rejections?status=410"])
            #expect(rejectionsCode == 200 && rejections.contains(#""reason":"Unregistered""#), "\(rejections)")
            #expect(!rejections.contains("InternalServerError"), "filtered by status: \(rejections)")

            // The clock: advanced an hour on the page.
            let (_, before) = try await Self.curl([s.adminURL + "/clock"])
            try await Self.fill(b, "clock-seconds", "3600")
            try await Self.click(b, "#clock-advance")
            try await b.waitFor("the clock shown", "document.getElementById('clock-now').textContent.length > 10")
            let (_, later) = try await Self.curl([s.adminURL + "/clock"])
            func ms(_ text: String) -> Int64 {
                Int64(text.split(whereSeparator: { !$0.isNumber }).first ?? "") ?? 0
            }
            #expect(ms(later) - ms(before) >= 3_600_000, "\(before) → \(later)")
        } catch {
            await s.stop()
            throw error
        }
        await s.stop()
    }

    @Test("a channel made with kkpush channel, a subscriber and a broadcast: all on the page")
    func channelsOnThePage() async throws {
        let s = try await Self.open()
        do {
            let b = s.browser
            try await b.waitFor(
                "the console to reach the mock", "document.getElementById('health').textContent.startsWith('up')")
            try await b.waitFor(
                "the empty channels table", "document.getElementById('channels-count').textContent === '(0)'")
            let channelsURL = try #require(s.info["sandbox_channels_url"] as? String)
            let sandboxURL = try #require(s.info["sandbox_url"] as? String)
            let ca = CLI.certificates.appendingPathComponent("ca.crt").path
            let key = [
                "--key", CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path, "--key-id",
                "KKTEST0001",
                "--team-id", "KKTEAM0001",
            ]
            let create = try await CLI.run(
                [
                    "channel", "create", "--bundle-id", Self.topic, "--env", "sandbox", "--storage-policy", "1",
                    "--url",
                    channelsURL, "--ca-file", ca, "--json",
                ] + key)
            #expect(create.status == 0, "\(create.stdout) \(create.stderr)")
            let id = try #require(try create.json()["channel_id"] as? String)
            let token = try await Self.mint(b)
            try await Self.subscribe(s, token: token, to: id)
            let payload = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-la-\(UUID()).json")
            try #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"open":2}}}"#.write(
                to: payload, atomically: true, encoding: .utf8)
            defer { try? FileManager.default.removeItem(at: payload) }
            let send = try await CLI.run(
                [
                    "send", "--channel", id, "--topic", Self.topic, "--env", "sandbox", "--url", sandboxURL,
                    "--ca-file", ca,
                    "--payload", payload.path,
                ] + key)
            #expect(send.status == 0, "\(send.stdout) \(send.stderr)")
            try await b.waitFor(
                "the channel with its subscriber and stored message in the Channels table",
                """
                (() => { const r = [...document.querySelectorAll('#channels-body tr')].find(r => r.dataset.channelId === \(Self.js(id)));
                  return !!r && r.dataset.environment === 'sandbox' && r.dataset.subscribers === '1'
                    && !!r.querySelector('button[data-token=' + JSON.stringify(\(Self.js(token))) + ']') && r.textContent.includes('1 (most recent message stored)')
                    && r.textContent.includes('until '); })()
                """)
            try await Self.waitForBroadcastCopy(b, token: token, channel: id)
        } catch {
            await s.stop()
            throw error
        }
        await s.stop()
    }

    @Test("a delivery's Download .apns, a push saved by name and replayed to a device and a channel")
    func simulatorFileAndSavedPushes() async throws {
        let savedFile = FileManager.default.temporaryDirectory.appendingPathComponent("kkpush-saved-\(UUID()).json")
        defer { try? FileManager.default.removeItem(at: savedFile) }
        let s = try await Self.open(extraArguments: ["--saved-pushes", savedFile.path])
        do {
            let b = s.browser
            try await b.waitFor(
                "the console to reach the mock", "document.getElementById('health').textContent.startsWith('up')")
            let token = try await Self.mint(b)
            let payload =
                #"{"aps":{"alert":{"title":"Dienst gewijzigd","body":"Bardienst om 19:00"}},"dienst_id":"4711"}"#
            let (status, apnsID) = try await Self.send(b, token: token, payload: payload)
            #expect(status == "200")
            try await Self.waitForLogEntry(b, apnsID)

            // Download .apns on the delivery's row: the Simulator file of what was delivered.
            let sequence = try await b.evaluate(
                "[...document.querySelectorAll('#log-body tr')].find(r => (r.dataset.apnsId || '').toLowerCase() === \(Self.js(apnsID))).dataset.sequence"
            )
            let seq = try #require(sequence.string)
            try await Self.click(b, "#log-body tr[data-sequence='\(seq)'] a.apns-link")
            let downloaded = try await b.waitFor(
                "the downloaded .apns text", "document.body.dataset.lastApns || null")
            let file = try #require(downloaded.string)
            let object = try #require(
                try JSONSerialization.jsonObject(with: Data(file.utf8)) as? [String: Any])
            #expect(object["Simulator Target Bundle"] as? String == Self.topic)
            #expect(object["dienst_id"] as? String == "4711")
            #expect(Data(file.utf8).count <= 4096)
            let read = PayloadFile.read(Array(file.utf8), fileName: "delivery.apns")
            #expect(String(decoding: read.payload, as: UTF8.self) == payload)
            let (fetched, body) = try await Self.curl([s.adminURL + "/deliveries/\(seq)/apns"])
            #expect(fetched == 200)
            #expect(body + "\n" == file || body == file, "\(body)")

            // Save the form as "dienst", replay it to the device: a second delivery with the same payload.
            try await Self.fill(b, "saved-name", "dienst")
            try await Self.click(b, "#saved-save")
            try await b.waitFor(
                "the saved push in the list", "!!document.querySelector('#saved-body tr[data-saved=\"dienst\"]')")
            let before = try await b.evaluate("document.querySelectorAll('#log-body tr').length").int ?? 0
            _ = try await b.evaluate("document.getElementById('send-answer').removeAttribute('data-status'); true")
            try await Self.click(b, "button[data-replay-device='dienst']")
            let replayed = try await b.waitFor(
                "the replay's answer", "document.getElementById('send-answer').dataset.status || null", timeout: 20)
            #expect(replayed.string == "200")
            try await b.waitFor(
                "the replay in the delivery log", "document.querySelectorAll('#log-body tr').length > \(before)")
            // Kept in the file given with --saved-pushes.
            let stored = try String(contentsOf: savedFile, encoding: .utf8)
            #expect(stored.contains("\"dienst\""), "\(stored)")

            // Replay to a channel: a broadcast, its copy delivered to the channel's subscriber.
            let channelsURL = try #require(s.info["sandbox_channels_url"] as? String)
            let ca = CLI.certificates.appendingPathComponent("ca.crt").path
            let create = try await CLI.run([
                "channel", "create", "--bundle-id", Self.topic, "--env", "sandbox", "--url", channelsURL,
                "--ca-file", ca, "--json", "--key",
                CLI.certificates.appendingPathComponent("AuthKey_KKTEST0001.p8").path,
                "--key-id", "KKTEST0001", "--team-id", "KKTEAM0001",
            ])
            #expect(create.status == 0, "\(create.stdout) \(create.stderr)")
            let id = try #require(try create.json()["channel_id"] as? String)
            try await Self.subscribe(s, token: token, to: id)
            try await Self.fill(b, "send-push-type", "liveactivity")
            try await Self.fill(
                b, "send-payload", #"{"aps":{"timestamp":1700000000,"event":"update","content-state":{"open":2}}}"#)
            try await Self.fill(b, "saved-name", "la-update")
            try await Self.click(b, "#saved-save")
            try await b.waitFor(
                "the second saved push", "!!document.querySelector('#saved-body tr[data-saved=\"la-update\"]')")
            try await Self.fill(b, "saved-channel", id)
            _ = try await b.evaluate("document.getElementById('send-answer').removeAttribute('data-status'); true")
            try await Self.click(b, "button[data-replay-channel='la-update']")
            let broadcast = try await b.waitFor(
                "the broadcast's answer", "document.getElementById('send-answer').dataset.status || null", timeout: 20)
            #expect(broadcast.string == "200")
            try await Self.waitForBroadcastCopy(b, token: token, channel: id)
        } catch {
            await s.stop()
            throw error
        }
        await s.stop()
    }

    @Test("with --admin-token: the page asks for it, then works; a foreign Origin is refused")
    func adminToken() async throws {
        let s = try await Self.open(adminToken: Self.adminToken)
        do {
            let b = s.browser
            try await b.waitFor(
                "the token prompt", "!document.getElementById('auth').classList.contains('hidden')")
            let prompt = try await Self.text(b, "#auth-message")
            #expect(prompt.contains("requires its admin token"), "\(prompt)")
            #expect(try await Self.text(b, "#health") == "admin token needed")
            // The page itself needs no token; the data does.
            #expect(try await Self.curl([s.adminURL + "/"]).0 == 200)
            #expect(try await Self.curl([s.adminURL + "/console.js"]).0 == 200)
            #expect(try await Self.curl([s.adminURL + "/devices"]).0 == 401)

            try await Self.fill(b, "auth-token", Self.adminToken)
            try await Self.click(b, "#auth-save")
            try await b.waitFor(
                "the console to reach the mock", "document.getElementById('health').textContent.startsWith('up')")
            #expect(try await b.evaluate("document.getElementById('auth').classList.contains('hidden')").bool == true)
            #expect(
                try await b.evaluate("sessionStorage.getItem('kkpush-mock-admin-token')").string == Self.adminToken)
            #expect(try await b.evaluate("location.href").string?.contains(Self.adminToken) == false)
            let token = try await Self.mint(b)
            let (status, apnsID) = try await Self.send(b, token: token, payload: #"{"aps":{"alert":"with token"}}"#)
            #expect(status == "200")
            try await Self.waitForLogEntry(b, apnsID)

            let bearer = "Authorization: Bearer \(Self.adminToken)"
            let foreign = try await Self.curl([
                "-X", "POST", "-H", bearer, "-H", "Origin: http://evil.example", s.adminURL + "/reset",
            ])
            #expect(foreign.0 == 403 && foreign.1.contains("admin-origin"), "\(foreign.1)")
            let own = try await Self.curl(["-H", bearer, "-H", "Origin: \(s.adminURL)", s.adminURL + "/health"])
            #expect(own.0 == 200, "\(own.1)")
        } catch {
            await s.stop()
            throw error
        }
        await s.stop()
    }
}
