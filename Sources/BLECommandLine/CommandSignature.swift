/// What a command accepts, declared once: the parser reads it, and the usage line and `--help`
/// are generated from it, so the help cannot drift from what is parsed. In the shape of
/// swift-argument-parser (which a toolchain-only package cannot depend on), without its
/// property wrappers: a command lists plain values.
public struct CommandSignature: Sendable {
    /// The command's name, as typed after the tool's (`scan`).
    public var name: String
    /// One line: what the command does (in the tool's command list and atop `--help`).
    public var abstract: String
    /// Everything else `--help` should say, after the options; may be empty.
    public var discussion: String
    public var positionals: [CommandPositional]
    /// The command's own options, listed under OPTIONS and one by one in the usage line.
    public var options: [CommandOption]
    /// Options shared with other commands under a title of their own (say, how to reach a
    /// controller); listed in their own section and as one `[TITLE]` in the usage line.
    public var optionGroups: [CommandOptionGroup]

    public init(name: String, abstract: String, discussion: String = "", positionals: [CommandPositional] = [],
                options: [CommandOption] = [], optionGroups: [CommandOptionGroup] = []) {
        self.name = name
        self.abstract = abstract
        self.discussion = discussion
        self.positionals = positionals
        self.options = options
        self.optionGroups = optionGroups
    }

    /// `-h` / `--help`, which every command takes; the parser answers it before anything else.
    public static let helpOption = CommandOption.flag("help", short: "h", help: "show this help")

    /// Every option the parser accepts, help included, in the order help lists them.
    public var allOptions: [CommandOption] {
        options + [Self.helpOption] + optionGroups.flatMap(\.options)
    }

    /// How many positionals may be given: the required ones at least, all declared at most.
    public var positionalCount: ClosedRange<Int> {
        positionals.count(where: \.isRequired)...positionals.count
    }

    /// Whether `arguments` ask for help: `--help` or `-h` before a `--` (after it, everything is
    /// a positional, so a VALUE of `-h` can still be given). Checked before parsing, so help is
    /// shown even when other arguments are wrong.
    public static func asksForHelp(_ arguments: [String]) -> Bool {
        arguments.prefix(while: { $0 != "--" }).contains { $0 == "--help" || $0 == "-h" }
    }

    /// Mistakes in the declaration itself (not in what a user typed): two options with one
    /// name or letter, a name the parser would read as something else, a required positional
    /// after an optional one. Empty for a sound declaration; tests assert that.
    public var declarationProblems: [String] {
        var problems: [String] = []
        var names: Set<String> = []
        var letters: Set<Character> = []
        for option in allOptions {
            if !names.insert(option.name).inserted { problems.append("--\(option.name) is declared twice") }
            if let letter = option.short, !letters.insert(letter).inserted { problems.append("-\(letter) is declared twice") }
            if option.name.isEmpty || option.name.hasPrefix("-") || option.name.contains("=") {
                problems.append("'\(option.name)' cannot be an option name (no leading '-', no '=')")
            }
            if let letter = option.short, letter == "-" || letter.isNumber {
                problems.append("-\(letter) cannot be a short option (it reads as '--' or a negative number)")
            }
            if option.isRequired && option.valueName == nil {
                problems.append("--\(option.name) is a flag and cannot be required (it would be missing whenever it is off)")
            }
        }
        if let firstOptional = positionals.firstIndex(where: { !$0.isRequired }),
           positionals[firstOptional...].contains(where: \.isRequired) {
            problems.append("a required positional follows the optional \(positionals[firstOptional].name)")
        }
        return problems
    }

    /// The declared option named `--name` or, for a single letter, `-letter`.
    func option(named name: String) -> CommandOption? {
        allOptions.first { $0.name == name }
    }

    func option(letter: Character) -> CommandOption? {
        allOptions.first { $0.short == letter }
    }
}

/// The usage line and `--help` text of a command, generated from its signature: every option and
/// positional the parser accepts is listed, with the words its declaration gives it.
extension CommandSignature {
    /// `scan [--timeout S] [--service UUID]... [CONTROLLER OPTIONS]`, without the tool's name:
    /// positionals (optional ones in brackets), then the options, each group as its title.
    public var usage: String {
        var words = [name]
        for positional in positionals {
            words.append(positional.isRequired ? positional.name : "[\(positional.name)]")
        }
        for option in options {
            let written = option.isRequired ? option.synopsis : "[\(option.synopsis)]"
            words.append(option.isRepeatable ? written + "..." : written)
        }
        for group in optionGroups {
            words.append("[\(group.title)]")
        }
        return words.joined(separator: " ")
    }

    /// What `TOOL NAME --help` prints: the abstract, the usage line, the positionals that have
    /// something to say, every option by section, then the discussion.
    public func help(tool: String) -> String {
        var lines = [abstract, "", "USAGE: \(tool) \(usage)"]
        let described = positionals.filter { !$0.help.isEmpty }
        if !described.isEmpty {
            lines += ["", "ARGUMENTS:"] + described.map { Self.row($0.name, $0.help) }
        }
        lines += ["", "OPTIONS:"] + (options + [Self.helpOption]).map(Self.row)
        for group in optionGroups {
            lines += ["", "\(group.title):"] + group.options.map(Self.row)
        }
        if !discussion.isEmpty { lines += ["", discussion] }
        return lines.joined(separator: "\n")
    }

    /// What a usage error adds under its message: where to look for more.
    public func usageReminder(tool: String) -> String {
        "USAGE: \(tool) \(usage)   (\(tool) \(name) --help for more)"
    }

    /// `  -o, --output FILE         where to save ...`
    static func row(_ option: CommandOption) -> String {
        let left = (option.short.map { "-\($0), " } ?? "") + "--\(option.name)" + (option.valueName.map { " \($0)" } ?? "")
        return row(left, option.help)
    }

    /// Two-space indent, the left column padded to 28 (at least two spaces before the text).
    static func row(_ left: String, _ text: String) -> String {
        let indented = "  " + left
        return indented + String(repeating: " ", count: max(28 - indented.count, 2)) + text
    }
}
