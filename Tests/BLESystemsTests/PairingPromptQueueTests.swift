import BLE
import BLETestSupport
import Dispatch
import Synchronization
import XCTest
import BLESystems

private let linkA = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_0A), type: .random)
private let linkB = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_00_0B), type: .random)

/// The `ble` tool's pairing questions share one reader of the terminal and wait in one queue:
/// an answer goes only to the question that is current (shown, naming its peer), a withdrawn
/// question takes no line, and a fifth waiting question is refused at once.
final class PairingPromptQueueTests: XCTestCase {
    private func agent(_ prompts: LinePrompts, _ shown: Collected<String>) -> CommandLinePairingAgent {
        CommandLinePairingAgent(passkey: nil, confirm: nil, interactive: true, show: { shown.append($0) }, prompts: prompts)
    }

    /// Waits until the queue has shown `line` (a question shown once it is current), then checks
    /// that `waiting` questions wait: the line is shown after the question took its place.
    private func waitShown(_ line: String, _ shown: Collected<String>, _ prompts: LinePrompts, waiting: Int,
                           file: StaticString = #filePath, line number: UInt = #line) async {
        await shown.wait("\"\(line)\" shown", file: file, line: number) { $0.contains(line) }
        XCTAssertEqual(prompts.waiting, waiting, file: file, line: number)
    }

    /// Waits until `peer` is told it waits behind the current question, then checks that
    /// `waiting` questions wait.
    private func waitQueued(_ peer: DeviceAddress, _ shown: Collected<String>, _ prompts: LinePrompts, waiting: Int,
                            file: StaticString = #filePath, line: UInt = #line) async {
        await shown.wait("\(peer)'s question queued", file: file, line: line) { $0.contains { $0.hasPrefix("ble: \(peer) waits to ask") } }
        XCTAssertEqual(prompts.waiting, waiting, file: file, line: line)
    }

    /// A blocking line source like stdin: each `read` waits for a line the test gives.
    final class LineFeed: Sendable {
        private let lines = Mutex<[String?]>([])
        private let available = DispatchSemaphore(value: 0)
        private let started = SharedValue(0)
        /// How many reads have begun.
        var reads: Int { started.get() }
        /// Waits until `count` reads have begun (each read's start is the event).
        func waitForReads(_ count: Int, _ what: String, file: StaticString = #filePath, line: UInt = #line) async {
            await started.wait(what, within: .seconds(10), file: file, line: line) { $0 == count }
        }
        func read() -> String? {
            started.withLock { $0 += 1 }
            available.wait()
            return lines.withLock { $0.removeFirst() }
        }
        func give(_ line: String?) {
            lines.withLock { $0.append(line) }
            available.signal()
        }
        /// Ends every read still blocked (the test is over).
        func release() { for _ in 0..<8 { give(nil) } }
    }

    /// The reviewer's case: a comparison for link A, then one for link B (a peer keeping a
    /// comparison open on a link of its own). One "y" confirms A only; B has not been shown
    /// its question before A's answer, is not confirmed by it, and gets the next line.
    func testOneAnswerGoesOnlyToTheCurrentQuestion() async throws {
        let prompts = LinePrompts()
        let shown = Collected<String>()
        let agent = agent(prompts, shown)
        let a = Task { await agent.confirmNumericComparison(111_111, for: linkA) }
        await waitShown("does \(linkA) show 111111? [y/N] ", shown, prompts, waiting: 1)
        let b = Task { await agent.confirmNumericComparison(222_222, for: linkB) }
        await waitQueued(linkB, shown, prompts, waiting: 2)
        XCTAssertEqual(prompts.current, "\(linkA)")
        XCTAssertEqual(shown.all, [
            "compare: 111111 (the number \(linkA) shows must be the same)",
            "does \(linkA) show 111111? [y/N] ",
            "ble: \(linkB) waits to ask: answer the question about \(linkA) first",
        ])

        prompts.deliver("y")
        let confirmedA = await a.value
        XCTAssertTrue(confirmedA)
        XCTAssertEqual(prompts.waiting, 1, "B still waits: the y was not its")
        XCTAssertEqual(prompts.current, "\(linkB)")
        XCTAssertEqual(shown.all.suffix(2), ["compare: 222222 (the number \(linkB) shows must be the same)", "does \(linkB) show 222222? [y/N] "],
                       "B's question is shown once it is current, not before")
        prompts.deliver("n")
        let confirmedB = await b.value
        XCTAssertFalse(confirmedB, "B got the next line, its own")
        XCTAssertEqual(prompts.waiting, 0)
    }

    /// The same through a blocking reader, as stdin is read: the reader's one read serves A;
    /// B's question starts the next read only once it is current.
    func testTheOneReaderServesTheQuestionsInTurn() async throws {
        let feed = LineFeed()
        defer { feed.release() }
        let prompts = LinePrompts(reading: { feed.read() })
        let shown = Collected<String>()
        let agent = agent(prompts, shown)
        let a = Task { await agent.confirmNumericComparison(111_111, for: linkA) }
        await feed.waitForReads(1, "the read for A")
        let b = Task { await agent.confirmNumericComparison(222_222, for: linkB) }
        await waitQueued(linkB, shown, prompts, waiting: 2)
        XCTAssertEqual(feed.reads, 1, "one read in flight, not one per question")
        feed.give("y")
        let confirmedA = await a.value
        XCTAssertTrue(confirmedA)
        await feed.waitForReads(2, "the read for B")
        XCTAssertEqual(prompts.current, "\(linkB)")
        feed.give("no")
        let confirmedB = await b.value
        XCTAssertFalse(confirmedB)
    }

    /// A question whose task is cancelled (its pairing ended) leaves at once and takes no
    /// line: the read left blocked for it brings its line to the next question.
    func testACancelledQuestionDoesNotConsumeTheNextLine() async throws {
        let feed = LineFeed()
        defer { feed.release() }
        let prompts = LinePrompts(reading: { feed.read() })
        let shown = Collected<String>()
        let agent = agent(prompts, shown)
        let a = Task { await agent.enterPasskey(for: linkA) }
        await feed.waitForReads(1, "the read for A")
        a.cancel()
        let passkey = await a.value
        XCTAssertNil(passkey, "withdrawn: Passkey Entry Failed")
        XCTAssertEqual(prompts.waiting, 0)
        XCTAssertEqual(shown.all.last, "ble: the question about \(linkA) was withdrawn")

        let b = Task { await agent.confirmNumericComparison(333_333, for: linkB) }
        await waitShown("does \(linkB) show 333333? [y/N] ", shown, prompts, waiting: 1)
        feed.give("y")
        let confirmedB = await b.value
        XCTAssertTrue(confirmedB, "the line typed after B's question is B's")
        XCTAssertEqual(feed.reads, 1, "no reader was left behind for A: the one read served B")
    }

    /// A current question withdrawn while another waits: the other becomes current and the
    /// next line is its.
    func testWithdrawingTheCurrentQuestionHandsTheTurnOn() async throws {
        let prompts = LinePrompts()
        let shown = Collected<String>()
        let agent = agent(prompts, shown)
        let a = Task { await agent.confirmNumericComparison(111_111, for: linkA) }
        await waitShown("does \(linkA) show 111111? [y/N] ", shown, prompts, waiting: 1)
        let b = Task { await agent.enterPasskey(for: linkB) }
        await waitQueued(linkB, shown, prompts, waiting: 2)
        a.cancel()
        let confirmedA = await a.value
        XCTAssertFalse(confirmedA)
        XCTAssertEqual(prompts.current, "\(linkB)")
        prompts.deliver("123456")
        let passkey = await b.value
        XCTAssertEqual(passkey, 123_456)
    }

    /// A task cancelled before it asks never waits, and leaves nothing behind.
    func testAnAlreadyCancelledQuestionDoesNotWait() async throws {
        let prompts = LinePrompts()
        let shown = Collected<String>()
        let agent = agent(prompts, shown)
        let asking = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            return await agent.confirmNumericComparison(1, for: linkA)
        }
        let confirmed = await asking.value
        XCTAssertFalse(confirmed)
        XCTAssertEqual(prompts.waiting, 0)
        XCTAssertEqual(shown.all, [], "nothing shown for a question never asked")
    }

    /// At most four questions wait; the fifth is refused at once (answered no) without being
    /// shown as a question, and the four are unaffected.
    func testTheFifthWaitingQuestionIsRefused() async throws {
        let prompts = LinePrompts()
        XCTAssertEqual(prompts.limit, 4)
        let shown = Collected<String>()
        let agent = agent(prompts, shown)
        var waiting: [Task<Bool, Never>] = []
        for n in 1...4 {
            let peer = DeviceAddress(BDAddress(rawValue: 0xC0_00_00_00_01_00 | UInt64(n)), type: .random)
            waiting.append(Task { await agent.confirmNumericComparison(UInt32(n), for: peer) })
            // Its first line shown (its question, or whom it waits for) once it has its place.
            await shown.wait("question \(n) queued") { $0.contains { $0.contains("\(peer)") } }
            XCTAssertEqual(prompts.waiting, n)
        }
        let confirmedFifth = await agent.confirmNumericComparison(5, for: linkB)
        XCTAssertFalse(confirmedFifth, "refused: Numeric Comparison Failed")
        XCTAssertEqual(prompts.waiting, 4)
        XCTAssertEqual(shown.all.last, "ble: \(linkB): refused, 4 questions are waiting already")
        XCTAssertFalse(shown.all.contains { $0.hasPrefix("does \(linkB)") })
        let refused = await prompts.ask(["?"], about: "sixth", show: { _ in })
        XCTAssertEqual(refused, .refused)
        for task in waiting { task.cancel() }
        for task in waiting {
            let confirmed = await task.value
            XCTAssertFalse(confirmed)
        }
        XCTAssertEqual(prompts.waiting, 0)
    }

    /// A line that comes when no question is current (typed for one already gone) is dropped,
    /// not kept for the next question.
    func testALineWithNoQuestionIsDropped() async throws {
        let prompts = LinePrompts()
        prompts.deliver("y")
        let shown = Collected<String>()
        let agent = agent(prompts, shown)
        let a = Task { await agent.confirmNumericComparison(1, for: linkA) }
        await waitShown("does \(linkA) show 000001? [y/N] ", shown, prompts, waiting: 1)
        prompts.deliver("n")
        let confirmed = await a.value
        XCTAssertFalse(confirmed, "the stale y was not kept for A")
    }

    /// A line assembled for one turn is not handed to another (`deliver(_:turn:)`).
    func testALineForAnEarlierTurnIsDropped() async throws {
        let prompts = LinePrompts()
        let shown = Collected<String>()
        let a = Task { await prompts.ask(["a? "], about: "A", show: { shown.append($0) }) }
        await shown.wait("A's question") { $0 == ["a? "] }
        XCTAssertEqual(prompts.waiting, 1)
        let turnA = try XCTUnwrap(prompts.turn)
        let b = Task { await prompts.ask(["b? "], about: "B", show: { shown.append($0) }) }
        await shown.wait("B's question queued") { $0.count == 2 }
        XCTAssertEqual(prompts.waiting, 2)
        a.cancel()
        let answerA = await a.value
        XCTAssertEqual(answerA, .cancelled)
        prompts.deliver("y", turn: turnA)
        XCTAssertEqual(prompts.waiting, 1, "B did not get A's line")
        let turnB = try XCTUnwrap(prompts.turn)
        XCTAssertNotEqual(turnA, turnB)
        prompts.deliver("n", turn: turnB)
        let answerB = await b.value
        XCTAssertEqual(answerB, .line("n"))
    }

    /// The end of input answers every waiting question, and every later one, at once.
    func testTheEndOfInputAnswersEveryQuestion() async throws {
        let prompts = LinePrompts()
        let shown = Collected<String>()
        let a = Task { await prompts.ask(["a? "], about: "A", show: { shown.append($0) }) }
        let b = Task { await prompts.ask(["b? "], about: "B", show: { shown.append($0) }) }
        // One shown as current, the other told it waits: both have their places.
        await shown.wait("both queued") { $0.count == 2 }
        XCTAssertEqual(prompts.waiting, 2)
        prompts.deliver(nil)
        let answers = [await a.value, await b.value]
        XCTAssertEqual(answers, [.endOfInput, .endOfInput])
        let later = await prompts.ask(["c? "], about: "C", show: { _ in })
        XCTAssertEqual(later, .endOfInput)
    }

    /// `ble serve`'s keys: commands while no question waits; while one does, an echoed line
    /// with Backspace, handed over on Enter for its own turn; a line begun for a withdrawn
    /// question is dropped.
    func testTerminalKeysBuildTheCurrentQuestionsLine() {
        var keys = TerminalKeyLine()
        XCTAssertEqual(keys.take(UInt8(ascii: "a"), turn: nil), [.key(UInt8(ascii: "a"))])
        XCTAssertEqual(keys.take(UInt8(ascii: "y"), turn: 7), [.echo("y")])
        XCTAssertEqual(keys.take(UInt8(ascii: "x"), turn: 7), [.echo("x")])
        XCTAssertEqual(keys.take(0x7F, turn: 7), [.echo("\u{8} \u{8}")])
        XCTAssertEqual(keys.take(0x0A, turn: 7), [.echo("\n"), .line("y", turn: 7)])
        XCTAssertEqual(keys.take(UInt8(ascii: "y"), turn: 8), [.echo("y")])
        XCTAssertEqual(keys.take(UInt8(ascii: "n"), turn: 9), [.echo("n")], "turn 8 withdrawn: its y is dropped")
        XCTAssertEqual(keys.take(0x0D, turn: 9), [.echo("\n"), .line("n", turn: 9)])
        XCTAssertEqual(keys.take(0x1B, turn: 9), [], "control bytes are not typed")
    }
}
