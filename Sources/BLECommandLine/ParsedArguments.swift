/// A command line parsed against a command's signature: its positionals, the values of its
/// options and the flags given. Anything the signature does not declare is a `UsageError`, so a
/// mistyped option fails loudly instead of turning into a positional or being ignored.
///
/// The rules, those of the `ble` tool before this parser existed plus the checks it lacked:
/// - `--name VALUE`, `--name=VALUE` and `-x VALUE` give a value; the word after an option that
///   takes a value is its value whatever it looks like, so `--min-rssi -70` works.
/// - `--` ends the options: everything after it is a positional.
/// - Outside values, `-` alone and negative numbers (`-70`, `-1.5`) are positionals; any other
///   word starting with `-` must be a declared option.
/// - A flag given twice is still just set; an option that takes one value, given twice, is an
///   error naming it; a repeatable option collects every value.
public struct ParsedArguments: Sendable {
    public let signature: CommandSignature
    public private(set) var positionals: [String] = []
    /// Every value given per option name, in order (one for a single-value option).
    private var valuesByOption: [String: [String]] = [:]
    private var flags: Set<String> = []

    public init(_ arguments: [String], for signature: CommandSignature) throws {
        self.signature = signature
        var words = arguments[...]
        var onlyPositionals = false
        while let word = words.popFirst() {
            if onlyPositionals || Self.isPositional(word) {
                positionals.append(word)
            } else if word == "--" {
                onlyPositionals = true
            } else if word.hasPrefix("--") {
                try take(long: word.dropFirst(2), from: &words)
            } else {
                guard word.count == 2, let letter = word.last, let option = signature.option(letter: letter) else {
                    throw UsageError(.unknownOption(word))
                }
                try take(option, as: word, inlineValue: nil, from: &words)
            }
        }
        try checkCounts()
    }

    /// A word that is a positional wherever it stands: not an option's spelling.
    private static func isPositional(_ word: String) -> Bool {
        !word.hasPrefix("-") || word == "-" || Double(word) != nil
    }

    /// `--name` or `--name=value`.
    private mutating func take(long: Substring, from words: inout ArraySlice<String>) throws {
        let name = long.prefix(while: { $0 != "=" })
        let inlineValue = name.endIndex < long.endIndex ? String(long[long.index(after: name.endIndex)...]) : nil
        guard let option = signature.option(named: String(name)) else { throw UsageError(.unknownOption("--\(name)")) }
        try take(option, as: "--\(name)", inlineValue: inlineValue, from: &words)
    }

    /// Records `option`, written `spelling` by the user, taking its value from the word itself
    /// (`--name=value`) or the next word.
    private mutating func take(_ option: CommandOption, as spelling: String, inlineValue: String?, from words: inout ArraySlice<String>) throws {
        guard let valueName = option.valueName else {
            guard inlineValue == nil else { throw UsageError(.unexpectedValue(option: spelling)) }
            flags.insert(option.name)
            return
        }
        guard let value = inlineValue ?? words.popFirst() else {
            throw UsageError(.missingValue(option: spelling, valueName: valueName))
        }
        if !option.isRepeatable, valuesByOption[option.name] != nil {
            throw UsageError(.repeatedOption(spelling))
        }
        valuesByOption[option.name, default: []].append(value)
    }

    private func checkCounts() throws {
        let count = signature.positionalCount
        if positionals.count < count.lowerBound {
            throw UsageError(.missingArgument(signature.positionals[positionals.count].name))
        }
        if positionals.count > count.upperBound {
            throw UsageError(.unexpectedArgument(positionals[count.upperBound]))
        }
        if let missing = signature.allOptions.first(where: { $0.isRequired && valuesByOption[$0.name] == nil }) {
            throw UsageError(.missingArgument(missing.synopsis))
        }
    }

    /// Whether the flag `--name` was given.
    public func flag(_ name: String) -> Bool { flags.contains(name) }

    /// The value of the option `--name`, nil when not given (the last one of a repeatable one).
    public func option(_ name: String) -> String? { valuesByOption[name]?.last }

    /// Every value of a repeatable option, in the order given; empty when not given.
    public func values(_ name: String) -> [String] { valuesByOption[name] ?? [] }

    /// The value of an option declared required, which the parser has made sure is there.
    public func requiredOption(_ name: String) throws -> String {
        guard let value = option(name) else {
            throw UsageError(.missingArgument(signature.option(named: name)?.synopsis ?? "--\(name)"))
        }
        return value
    }

    /// A non-negative, finite number.
    public func double(_ name: String) throws -> Double? {
        guard let v = option(name) else { return nil }
        guard let d = Double(v), d.isFinite, d >= 0 else { throw UsageError("--\(name) expects a non-negative number, got '\(v)'") }
        return d
    }

    public func int(_ name: String) throws -> Int? {
        guard let v = option(name) else { return nil }
        guard let i = Int(v) else { throw UsageError("--\(name) expects a whole number, got '\(v)'") }
        return i
    }

    /// Seconds as a Duration; up to about 31 years, so the conversion cannot overflow.
    public func seconds(_ name: String) throws -> Duration? {
        guard let s = try double(name) else { return nil }
        guard s <= 1e9 else { throw UsageError("--\(name) is too large (at most 1000000000 seconds)") }
        return .milliseconds(Int64((s * 1000).rounded()))
    }
}

/// The command line is wrong: the tool prints the message and the command's usage line and exits
/// with EX_USAGE (64). The parser's own findings have a `Kind` tests and callers can match;
/// commands checking their values (a number out of range, say) give a message.
public struct UsageError: Error, CustomStringConvertible, Equatable, Sendable {
    public enum Kind: Equatable, Sendable {
        /// An option the command does not declare, as typed: `-x`, `--xyz`.
        case unknownOption(String)
        /// An option that takes one value, given again.
        case repeatedOption(String)
        /// An option that takes a value, last on the line.
        case missingValue(option: String, valueName: String)
        /// A flag given a value with `--flag=value`.
        case unexpectedValue(option: String)
        /// A required positional (by name) or required option (by synopsis) not given.
        case missingArgument(String)
        /// A positional beyond the last one declared.
        case unexpectedArgument(String)
        /// Any other mistake, said in words by whoever found it.
        case invalid(String)
    }

    public let kind: Kind

    public init(_ kind: Kind) { self.kind = kind }

    public init(_ message: String) { kind = .invalid(message) }

    public var description: String {
        switch kind {
        case let .unknownOption(option): return "unknown option \(option)"
        case let .repeatedOption(option): return "\(option) given more than once (it takes one value)"
        case let .missingValue(option, valueName): return "\(option) needs a value (\(valueName))"
        case let .unexpectedValue(option): return "\(option) takes no value"
        case let .missingArgument(name): return "missing \(name)"
        case let .unexpectedArgument(word): return "unexpected argument '\(word)'"
        case let .invalid(message): return message
        }
    }
}
