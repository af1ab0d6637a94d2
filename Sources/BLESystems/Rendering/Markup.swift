/// Text made safe for XML and HTML: the SVG charts' labels and the web UI's pages.
enum Markup {
    /// `text` safe inside an element or a double-quoted attribute value (`&`, `<`, `>`, `"` as
    /// entities); with `apostrophes`, also inside a single-quoted one (`'` as `&#39;`).
    static func escaped(_ text: String, apostrophes: Bool = false) -> String {
        var out = ""
        for c in text {
            switch c {
            case "&": out += "&amp;"
            case "<": out += "&lt;"
            case ">": out += "&gt;"
            case "\"": out += "&quot;"
            case "'" where apostrophes: out += "&#39;"
            default: out.append(c)
            }
        }
        return out
    }
}
