#!/usr/bin/env bash
# Lists the public declarations of the API that have no `///` doc comment ("every public
# declaration of the API has a doc comment"), and exits 1 when there is any.
#
# The API is what `import BLE` exposes, read from Sources/BLE/API/Exports.swift:
#   - the BLE module itself (Sources/BLE);
#   - every module it re-exports whole (`@_exported import BLEWire`);
#   - the types it re-exports one by one (`@_exported import struct BLEHost.ScanFilter`): the
#     type's declaration, its members and the members of its extensions in that module.
# A declaration counts when it is public or open, or implicitly public: the cases of a public
# enum, the requirements of a public protocol, the members of a `public extension`. Its doc
# comment is the `///` line (or `/** ... */` block) right above it; attributes (`@inlinable`) may
# stand between. Generated files (*.generated.swift) are skipped: their tables are generated.
#
# Usage: scripts/check-doc-comments.sh   (prints file:line: declaration for each one missing)
#        scripts/check-doc-comments.sh MODULE...   (checks those modules whole instead, e.g. CoreBluetooth)
set -euo pipefail
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
exec python3 - "$ROOT" "$@" <<'PY'
import os, re, sys

root = sys.argv[1]
exports = open(os.path.join(root, "Sources/BLE/API/Exports.swift"), encoding="utf-8").read()
whole = ["BLE"] + re.findall(r"^@_exported import (\w+)\s*$", exports, re.M)
chosen = {}  # module -> set of type names
for module, name in re.findall(r"^@_exported import (?:struct|class|enum|protocol|typealias|func|var|let) (\w+)\.(\w+)", exports, re.M):
    chosen.setdefault(module, set()).add(name)
if len(sys.argv) > 2:  # modules named on the command line, each checked whole
    whole, chosen = sys.argv[2:], {}

MODIFIERS = {"public", "open", "private", "fileprivate", "internal", "package", "static", "class", "final",
             "override", "mutating", "nonmutating", "nonisolated", "convenience", "required", "indirect",
             "lazy", "weak", "unowned", "dynamic", "optional", "prefix", "postfix", "infix", "consuming",
             "borrowing", "isolated", "distributed"}
KEYWORDS = {"func", "var", "let", "init", "subscript", "struct", "enum", "class", "actor", "protocol",
            "typealias", "associatedtype", "case", "extension", "operator", "macro"}
TYPES = {"struct", "enum", "class", "actor", "protocol"}

def code_lines(text):
    """Each line with string literals and comments blanked out, so braces and words are code."""
    out, i, n = [], 0, len(text)
    line, depth_comment = [], 0
    state = None  # None, 'line', 'block', 'str', 'mstr', ('raw', hashes), ('mraw', hashes)
    while i < n:
        c = text[i]
        if c == "\n":
            out.append("".join(line)); line = []
            if state == "line": state = None
            i += 1; continue
        if state is None:
            if text.startswith("//", i): state = "line"; i += 2; continue
            if text.startswith("/*", i): state = "block"; depth_comment = 1; i += 2; continue
            m = re.match(r'(#+)("""|")', text[i:i + 12])
            if m:
                state = ("mraw" if m.group(2) == '"""' else "raw", m.group(1)); i += len(m.group(0)); line.append('""'); continue
            if text.startswith('"""', i): state = "mstr"; i += 3; line.append('""'); continue
            if c == '"': state = "str"; i += 1; line.append('""'); continue
            line.append(c); i += 1; continue
        if state == "line": i += 1; continue
        if state == "block":
            if text.startswith("/*", i): depth_comment += 1; i += 2; continue
            if text.startswith("*/", i):
                depth_comment -= 1; i += 2
                if depth_comment == 0: state = None
                continue
            i += 1; continue
        if state == "str":
            if c == "\\": i += 2; continue
            if c == '"': state = None
            i += 1; continue
        if state == "mstr":
            if c == "\\": i += 2; continue
            if text.startswith('"""', i): state = None; i += 3; continue
            i += 1; continue
        kind, hashes = state
        close = ('"""' if kind == "mraw" else '"') + hashes
        if text.startswith(close, i): state = None; i += len(close); continue
        i += 1
    out.append("".join(line))
    return out

def parse_declaration(code):
    """(modifiers, keyword, name) when the line starts a declaration, else None."""
    s = code.strip()
    while s.startswith("@"):
        m = re.match(r"@\w+(\([^()]*(\([^()]*\))*[^()]*\))?\s*", s)
        if not m: break
        s = s[m.end():]
    mods = set()
    while True:
        m = re.match(r"(\w+)(\((set|get)\))?\s+", s)
        if not m: break
        word = m.group(1)
        if word in MODIFIERS and not (word == "class" and re.match(r"class\s+\w+\s*[:{<]|class\s+\w+\s*$", s)):
            mods.add(word + (m.group(2) or "")); s = s[m.end():]; continue
        break
    m = re.match(r"(\w+)\b\??!?\s*([\w.`]+)?", s)
    if not m or m.group(1) not in KEYWORDS: return None
    return mods, m.group(1), (m.group(2) or "").strip("`")

def is_public(mods):
    return "public" in mods or "open" in mods

def documented(lines, index):
    j = index - 1
    while j >= 0 and lines[j].strip().startswith("@"):
        j -= 1
    if j < 0: return False
    prev = lines[j].strip()
    if prev.startswith("///"): return True
    if prev.endswith("*/"):
        while j >= 0 and "/*" not in lines[j]: j -= 1
        return j >= 0 and "/**" in lines[j]
    return False

missing = []

def check_file(path, only=None):
    text = open(path, encoding="utf-8").read()
    raw = text.split("\n")
    code = code_lines(text)
    # Each open brace: (kind, exported, name, public_default). kind: type keyword, 'extension',
    # or 'body' (a function, property or closure body: nothing inside is API).
    stack = []
    pending = None
    for index, line in enumerate(code):
        decl = parse_declaration(line)
        inside = stack[-1] if stack else None
        if decl and (inside is None or inside[0] != "body"):
            mods, keyword, name = decl
            if inside is None:
                counted = is_public(mods) or (keyword == "extension")
                exported = is_public(mods)
                top = name.split(".")[0] if keyword == "extension" else name
                if only is not None and top not in only: counted = exported = False
                if keyword == "extension": counted = False
            else:
                kind, parent_exported, _, public_default = inside
                private = any(m.startswith(("private", "fileprivate", "internal", "package")) for m in mods)
                if kind == "enum" and keyword == "case":
                    exported = parent_exported
                elif kind == "protocol":
                    exported = parent_exported
                elif kind == "extension":
                    exported = parent_exported and (is_public(mods) or (public_default and not private))
                else:
                    exported = parent_exported and is_public(mods)
                counted = exported
            if counted and not documented(raw, index):
                missing.append(f"{os.path.relpath(path, root)}:{index + 1}: {raw[index].strip()}")
            if keyword == "extension":
                top = name.split(".")[0]
                ext_exported = (only is None) or (top in only)
                pending = ("extension", ext_exported, name, is_public(mods))
            elif keyword in TYPES:
                pending = (keyword, exported, name, False)
            else:
                pending = ("body", False, name, False)
        for c in line:
            if c == "{":
                if stack and stack[-1][0] == "body":
                    stack.append(("body", False, "", False))
                elif pending is not None:
                    stack.append(pending); pending = None
                else:
                    stack.append(("body", False, "", False))
            elif c == "}":
                if stack: stack.pop()
                pending = None

def swift_files(module):
    base = os.path.join(root, "Sources", module)
    for dirpath, _, files in os.walk(base):
        for f in sorted(files):
            if f.endswith(".swift") and not f.endswith(".generated.swift"):
                yield os.path.join(dirpath, f)

for module in whole:
    for path in swift_files(module):
        check_file(path)
for module, names in sorted(chosen.items()):
    for path in swift_files(module):
        check_file(path, only=names)

def place(entry):
    path, line, _ = entry.split(":", 2)
    return (path, int(line))
for line in sorted(missing, key=place):
    print(line)
if missing:
    print(f"check-doc-comments: {len(missing)} public declaration(s) of the API without a /// doc comment", file=sys.stderr)
    sys.exit(1)
print("check-doc-comments: ok: every public declaration of the API has a doc comment", file=sys.stderr)
PY
