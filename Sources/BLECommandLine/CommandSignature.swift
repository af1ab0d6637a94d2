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

/// An option: a flag (`--json`), an option that takes one value (`--timeout S`), or one that
/// may be given several times, collecting a value each time (`--service UUID`).
public struct CommandOption: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case flag
        /// One value; giving the option twice is a usage error (which one did you mean?).
        case single(valueName: String)
        /// A value each time it is given, all kept in order.
        case repeatable(valueName: String)
    }

    /// The long name, without dashes: `timeout` for `--timeout`.
    public var name: String
    /// A one-letter alias, typed as `-o`.
    public var short: Character?
    public var kind: Kind
    public var help: String
    /// The parser rejects a command line without it (like a positional, but named).
    public var isRequired: Bool

    public init(name: String, short: Character? = nil, kind: Kind, help: String, isRequired: Bool = false) {
        self.name = name
        self.short = short
        self.kind = kind
        self.help = help
        self.isRequired = isRequired
    }

    public static func flag(_ name: String, short: Character? = nil, help: String) -> Self {
        Self(name: name, short: short, kind: .flag, help: help)
    }

    public static func single(_ name: String, short: Character? = nil, value valueName: String, help: String, isRequired: Bool = false) -> Self {
        Self(name: name, short: short, kind: .single(valueName: valueName), help: help, isRequired: isRequired)
    }

    public static func repeatable(_ name: String, short: Character? = nil, value valueName: String, help: String) -> Self {
        Self(name: name, short: short, kind: .repeatable(valueName: valueName), help: help)
    }

    /// What the value is called in help (`S`, `FILE`); nil for a flag.
    public var valueName: String? {
        switch kind {
        case .flag: return nil
        case let .single(valueName), let .repeatable(valueName): return valueName
        }
    }

    public var isFlag: Bool { kind == .flag }
    public var isRepeatable: Bool {
        if case .repeatable = kind { return true }
        return false
    }

    /// How the option is written in usage and messages: `-o FILE` when it has a letter (the
    /// short form is what people type), else `--timeout S`.
    public var synopsis: String {
        (short.map { "-\($0)" } ?? "--\(name)") + (valueName.map { " \($0)" } ?? "")
    }
}

/// A titled set of options several commands share, declared once and added to each.
public struct CommandOptionGroup: Sendable {
    /// The section heading in help and the placeholder in the usage line (`CONTROLLER OPTIONS`).
    public var title: String
    public var options: [CommandOption]

    public init(title: String, options: [CommandOption]) {
        self.title = title
        self.options = options
    }
}

/// A positional argument, by the name help shows for it (`ADDRESS`).
public struct CommandPositional: Sendable, Equatable {
    public var name: String
    /// What it is and how it is written; empty when the name and the discussion say enough.
    public var help: String
    public var isRequired: Bool

    public init(_ name: String, help: String = "", isRequired: Bool = true) {
        self.name = name
        self.help = help
        self.isRequired = isRequired
    }

    public static func required(_ name: String, help: String = "") -> Self { Self(name, help: help) }
    public static func optional(_ name: String, help: String = "") -> Self { Self(name, help: help, isRequired: false) }
}
