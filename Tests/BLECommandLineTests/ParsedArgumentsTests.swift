import BLECommandLine
import XCTest

/// The parser against a signature shaped like `ble`'s commands: what it accepts, and the usage
/// errors (by kind, naming what was wrong) for what it must not.
final class ParsedArgumentsTests: XCTestCase {
    let signature = CommandSignature(
        name: "probe",
        abstract: "A command to parse against.",
        positionals: [.required("ADDRESS"), .optional("VALUE")],
        options: [
            .single("timeout", value: "S", help: "stop after S seconds"),
            .single("min-rssi", value: "DBM", help: "weakest signal taken"),
            .single("output", short: "o", value: "FILE", help: "where to write"),
            .repeatable("service", value: "UUID", help: "a service; repeat for more"),
            .flag("json", help: "JSON lines"),
        ],
        optionGroups: [CommandOptionGroup(title: "CONTROLLER OPTIONS", options: [.single("hci", value: "SPEC", help: "which controller")])]
    )

    func parse(_ words: [String]) throws -> ParsedArguments {
        try ParsedArguments(words, for: signature)
    }

    func assertUsageError(_ words: [String], _ kind: UsageError.Kind, _ message: String, line: UInt = #line) {
        XCTAssertThrowsError(try parse(words), line: line) { error in
            XCTAssertEqual((error as? UsageError)?.kind, kind, line: line)
            XCTAssertEqual("\(error)", message, line: line)
        }
    }

    func testOptionsFlagsAndPositionalsInAnyOrder() throws {
        let args = try parse(["--json", "AA:BB", "--timeout", "3", "-o", "out.bin", "--hci=virtual", "v"])
        XCTAssertEqual(args.positionals, ["AA:BB", "v"])
        XCTAssertTrue(args.flag("json"))
        XCTAssertEqual(args.option("timeout"), "3")
        XCTAssertEqual(args.option("output"), "out.bin")
        XCTAssertEqual(args.option("hci"), "virtual")
        XCTAssertEqual(try args.seconds("timeout"), .seconds(3))
        XCTAssertNil(args.option("min-rssi"))
    }

    func testUnknownShortOptionIsAnErrorNamingIt() {
        assertUsageError(["AA:BB", "-x"], .unknownOption("-x"), "unknown option -x")
        assertUsageError(["-json", "AA:BB"], .unknownOption("-json"), "unknown option -json")
    }

    func testUnknownLongOptionIsAnErrorNamingIt() {
        assertUsageError(["AA:BB", "--xyz"], .unknownOption("--xyz"), "unknown option --xyz")
        assertUsageError(["AA:BB", "--xyz=1"], .unknownOption("--xyz"), "unknown option --xyz")
    }

    func testRepeatedSingleValueOptionIsAnErrorNamingIt() {
        assertUsageError(["AA:BB", "--hci", "virtual", "--hci", "virtual"], .repeatedOption("--hci"),
                         "--hci given more than once (it takes one value)")
        assertUsageError(["AA:BB", "-o", "a", "--output=b"], .repeatedOption("--output"),
                         "--output given more than once (it takes one value)")
    }

    func testRepeatableOptionCollectsEveryValueInOrder() throws {
        let args = try parse(["AA:BB", "--service", "180D", "--service=180F,1812"])
        XCTAssertEqual(args.values("service"), ["180D", "180F,1812"])
        XCTAssertEqual(try parse(["AA:BB"]).values("service"), [])
    }

    func testRepeatedFlagIsStillJustSet() throws {
        XCTAssertTrue(try parse(["AA:BB", "--json", "--json"]).flag("json"))
    }

    func testMissingValueIsAnError() {
        assertUsageError(["AA:BB", "--timeout"], .missingValue(option: "--timeout", valueName: "S"), "--timeout needs a value (S)")
        assertUsageError(["AA:BB", "-o"], .missingValue(option: "-o", valueName: "FILE"), "-o needs a value (FILE)")
    }

    func testFlagGivenAValueIsAnError() {
        assertUsageError(["AA:BB", "--json=yes"], .unexpectedValue(option: "--json"), "--json takes no value")
    }

    func testDoubleDashEndsOptions() throws {
        let args = try parse(["--json", "--", "-x", "--timeout"])
        XCTAssertEqual(args.positionals, ["-x", "--timeout"])
        XCTAssertTrue(args.flag("json"))
        XCTAssertNil(args.option("timeout"))
    }

    func testAValueStartingWithADashIsTakenAfterAnOptionThatTakesOne() throws {
        let args = try parse(["AA:BB", "--min-rssi", "-70", "-o", "-", "--timeout", "--json"])
        XCTAssertEqual(args.option("min-rssi"), "-70")
        XCTAssertEqual(args.option("output"), "-")
        XCTAssertEqual(args.option("timeout"), "--json")
        XCTAssertFalse(args.flag("json"))
        XCTAssertEqual(try parse(["AA:BB", "--min-rssi=-70"]).option("min-rssi"), "-70")
    }

    func testNegativeNumbersAndALoneDashArePositionals() throws {
        XCTAssertEqual(try parse(["AA:BB", "-70"]).positionals, ["AA:BB", "-70"])
        XCTAssertEqual(try parse(["-1.5"]).positionals, ["-1.5"])
        XCTAssertEqual(try parse(["AA:BB", "-"]).positionals, ["AA:BB", "-"])
    }

    func testPositionalCountErrors() {
        assertUsageError([], .missingArgument("ADDRESS"), "missing ADDRESS")
        assertUsageError(["--json"], .missingArgument("ADDRESS"), "missing ADDRESS")
        assertUsageError(["a", "b", "c"], .unexpectedArgument("c"), "unexpected argument 'c'")
        XCTAssertEqual(signature.positionalCount, 1...2)
    }

    func testRequiredOptionMustBeGiven() throws {
        var fetch = signature
        fetch.options[2].isRequired = true
        XCTAssertThrowsError(try ParsedArguments(["AA:BB"], for: fetch)) { error in
            XCTAssertEqual((error as? UsageError)?.kind, .missingArgument("-o FILE"))
            XCTAssertEqual("\(error)", "missing -o FILE")
        }
        XCTAssertEqual(try ParsedArguments(["AA:BB", "-o", "f"], for: fetch).requiredOption("output"), "f")
    }

    func testHelpIsAskedForBeforeDoubleDashOnly() {
        XCTAssertTrue(CommandSignature.asksForHelp(["AA:BB", "--help"]))
        XCTAssertTrue(CommandSignature.asksForHelp(["-x", "-h"]))
        XCTAssertFalse(CommandSignature.asksForHelp(["AA:BB", "--", "-h"]))
        XCTAssertTrue(try parse(["AA:BB", "-h"]).flag("help"), "help is a declared flag, not an unknown option")
    }

    func testNumbersAreCheckedWithTheOptionNamed() throws {
        XCTAssertThrowsError(try parse(["a", "--timeout", "-1"]).seconds("timeout")) { error in
            XCTAssertEqual("\(error)", "--timeout expects a non-negative number, got '-1'")
        }
        XCTAssertThrowsError(try parse(["a", "--timeout", "2e9"]).seconds("timeout")) { error in
            XCTAssertEqual("\(error)", "--timeout is too large (at most 1000000000 seconds)")
        }
        XCTAssertThrowsError(try parse(["a", "--min-rssi", "x"]).int("min-rssi")) { error in
            XCTAssertEqual("\(error)", "--min-rssi expects a whole number, got 'x'")
        }
        XCTAssertEqual(try parse(["a", "--min-rssi", "-70"]).int("min-rssi"), -70)
    }
}
