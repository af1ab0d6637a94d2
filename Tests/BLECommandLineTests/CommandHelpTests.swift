import BLECommandLine
import XCTest

/// Help and usage come from the declarations: every option and positional is in them, and a
/// faulty declaration is reported.
final class CommandHelpTests: XCTestCase {
    let fetch = CommandSignature(
        name: "fetch",
        abstract: "Fetch a URL through the server.",
        discussion: "The server fetches http and https URLs.",
        positionals: [.required("URL", help: "what to fetch"), .optional("ADDRESS")],
        options: [
            .single("output", short: "o", value: "FILE", help: "where to save the bytes", isRequired: true),
            .repeatable("service", value: "UUID", help: "a service; repeat for more"),
            .flag("json", help: "print one object"),
        ],
        optionGroups: [CommandOptionGroup(title: "CONTROLLER OPTIONS", options: [
            .single("hci", value: "SPEC", help: "which controller"),
            .flag("verbose", help: "log what is dropped"),
        ])]
    )

    func testUsageLineListsPositionalsOptionsAndGroups() {
        XCTAssertEqual(fetch.usage, "fetch URL [ADDRESS] -o FILE [--service UUID]... [--json] [CONTROLLER OPTIONS]")
        XCTAssertEqual(fetch.usageReminder(tool: "ble"),
                       "USAGE: ble fetch URL [ADDRESS] -o FILE [--service UUID]... [--json] [CONTROLLER OPTIONS]   (ble fetch --help for more)")
    }

    func testHelpIncludesEveryDeclaredOptionWithItsDescription() {
        let help = fetch.help(tool: "ble")
        for option in fetch.allOptions {
            let line = help.split(separator: "\n").first { $0.hasPrefix("  ") && $0.contains("--\(option.name) ") }
            XCTAssertNotNil(line, "--\(option.name) is missing from:\n\(help)")
            XCTAssertTrue(line?.hasSuffix(option.help) == true, "\(line ?? "")")
        }
        XCTAssertTrue(help.contains("  URL                       what to fetch"), help)
    }

    func testHelpLayout() {
        XCTAssertEqual(fetch.help(tool: "ble"), """
        Fetch a URL through the server.

        USAGE: ble fetch URL [ADDRESS] -o FILE [--service UUID]... [--json] [CONTROLLER OPTIONS]

        ARGUMENTS:
          URL                       what to fetch

        OPTIONS:
          -o, --output FILE         where to save the bytes
          --service UUID            a service; repeat for more
          --json                    print one object
          -h, --help                show this help

        CONTROLLER OPTIONS:
          --hci SPEC                which controller
          --verbose                 log what is dropped

        The server fetches http and https URLs.
        """)
    }

    func testALongOptionKeepsTwoSpacesBeforeItsText() {
        let signature = CommandSignature(name: "radio", abstract: "A radio.", options: [
            .single("a-rather-long-option-name", value: "VALUE", help: "text"),
        ])
        XCTAssertTrue(signature.help(tool: "ble").contains("  --a-rather-long-option-name VALUE  text"))
    }

    func testSoundDeclarationHasNoProblems() {
        XCTAssertEqual(fetch.declarationProblems, [])
    }

    func testDeclarationProblemsAreFound() {
        let faulty = CommandSignature(
            name: "faulty",
            abstract: "Declared wrong.",
            positionals: [.optional("ADDRESS"), .required("VALUE")],
            options: [
                .flag("json", help: "a"),
                .flag("json", short: "j", help: "b"),
                .single("out", short: "h", value: "FILE", help: "c"),
                .flag("--dashed", help: "d"),
                .flag("number", short: "7", help: "e"),
                CommandOption(name: "force", kind: .flag, help: "f", isRequired: true),
            ]
        )
        XCTAssertEqual(faulty.declarationProblems, [
            "--json is declared twice",
            "'--dashed' cannot be an option name (no leading '-', no '=')",
            "-7 cannot be a short option (it reads as '--' or a negative number)",
            "--force is a flag and cannot be required (it would be missing whenever it is off)",
            "-h is declared twice",
            "a required positional follows the optional ADDRESS",
        ])
    }
}
