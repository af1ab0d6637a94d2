// The pieces a `CommandSignature` is declared from: options, groups of shared options, and
// positionals.

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
