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
