"""A third real corpus without any download: the manual pages a machine holds.

Each page (``/usr/share/man/man<section>/*``, gzip-compressed or plain troff, symbolic links
left out as they repeat another page) is a document: the page name, then the text of the
page with the troff requests and escapes stripped and the NAME section left out. The NAME
section's one-line description ("ls \\- list directory contents" -> "list directory
contents") is the question, the page its one relevant document.

The parsing is deliberately small: everything before the first section heading (the
preamble of macro and string definitions that pod2man and others write) is dropped; a request
line keeps its arguments only for the macros that carry text (the font macros, headings,
``.IP``'s tag and the mdoc text macros); escapes become the character they stand for or
nothing. A page with no NAME description (a ``.so`` redirect, a page in another format) is
skipped.
"""

from __future__ import annotations

import functools
import gzip
import re
from pathlib import Path

ROOT = Path("/usr/share/man")

# man(7) macros whose arguments are text: joined with spaces, or alternating fonts joined
# without a space (".BR ls (1)" -> "ls(1)").
_SPACED = {"B", "I", "SM", "SB", "SH", "SS", "IP", "UR", "MT"}
_ALTERNATING = {"BI", "IB", "BR", "RB", "IR", "RI"}
# mdoc(7) macros whose arguments are text (other mdoc macro names among them are dropped).
_MDOC = {"Sh", "Ss", "Nm", "Nd", "Fl", "Ar", "Op", "Oo", "Pa", "Xr", "Cm", "Dv", "Em", "Ev",
         "Li", "Sy", "Va", "Fn", "Fa", "Ft", "Fo", "Ic", "Dq", "Sq", "Qq", "Ql", "Pq", "It",
         "Er", "Ad", "Lk", "Mt", "Ms", "Tn", "Ux", "At", "Bx", "Ns", "No", "Xo", "Xc", "Oc",
         "Aq", "Bq", "Brq", "Ql", "St", "Lb", "In", "Cd", "Vt", "Ot"}
_BREAKS = {"PP", "P", "LP", "IP", "TP", "HP", "Pp", "sp", "br", "It"}
_ARGS = re.compile(r'"((?:[^"]|"")*)"|((?:\\.|\S)+)')
_SPECIAL = {"em": "-", "en": "-", "hy": "-", "mi": "-", "bu": "*", "aq": "'", "dq": '"',
            "lq": '"', "rq": '"', "oq": "'", "cq": "'", "ga": "`", "ti": "~", "ha": "^",
            "rs": "\\", "sl": "/", "co": "(c)", "rg": "(R)", "tm": "(TM)", "->": "->",
            "<-": "<-", "<=": "<=", ">=": ">=", "mu": "x", "pl": "+", "eq": "="}
_ESCAPE = re.compile(
    r"\\(?:"
    r"\((?P<two>..)"                      # \(xx special character
    r"|\[(?P<bracket>[^\]]*)\]"           # \[name] special character
    r"|[fFsmn*gkYz]\(..|[fFsmn*gkYz]\[[^\]]*\]"  # font, size, colour, register, string
    r"|s[-+]?\d+|[fFmn*gkYz]."            # the one-character forms
    r"|[hvwoXlLNRbDSxZ]'[^']*'"           # motions and other quoted-argument escapes
    r"|(?P<char>.)"                       # \- \e \& \| \^ \  \~ \0 \c \% ...
    r")")
_CHAR = {"-": "-", "e": "\\", "\\": "\\", " ": " ", "~": " ", "0": " ", "t": " ", "'": "'",
         "`": "`", ".": "."}


def _unescape(text: str) -> str:
    def one(m):
        name = m.group("two") or m.group("bracket")
        if name is not None:
            return _SPECIAL.get(name, "")
        char = m.group("char")
        return _CHAR.get(char, "") if char is not None else ""
    return _ESCAPE.sub(one, text.split('\\"', 1)[0])  # \" starts a comment


def _args(rest: str) -> list:
    return [m[2] if m[2] is not None else m[1].replace('""', '"') for m in _ARGS.finditer(rest)]


def _request_text(name: str, rest: str) -> str | None:
    """The text a request line carries, or None when it carries none."""
    args = _args(rest)
    if name in _ALTERNATING:
        return "".join(_unescape(a) for a in args)
    if name == "IP":
        args = args[:1]  # the tag (then the indent)
    elif name in _MDOC:
        args = [("-" + a if name == "Fl" and i == 0 else a) for i, a in enumerate(args)
                if a not in _MDOC]
    elif name not in _SPACED:
        return None
    return " ".join(_unescape(a) for a in args)


def sections(source: str) -> list:
    """[heading, lines of text] of each section of a troff page, the preamble dropped."""
    out, in_block = [], False
    for line in source.splitlines():
        if in_block:  # a .de / .ig definition, until its ".."
            in_block = line.strip() != ".."
            continue
        if line.startswith((".", "'")):
            name, _, rest = line[1:].strip().partition(" ")
            if name in ("de", "de1", "am", "ig"):
                in_block = True
                continue
            if name in ("SH", "Sh"):
                out.append([_request_text("SH", rest).strip().upper(), []])
                continue
            text = _request_text(name, rest)
            if text is None or name == "IP":  # a paragraph break, perhaps a tag
                if out and name in _BREAKS:
                    out[-1][1].append("")
                if not text:
                    continue
            if name == "Nd":
                text = "- " + text  # mdoc's description, written as man(7) writes it
        else:
            text = _unescape(line)
        if out:
            out[-1][1].append(text.strip())
    return out


def name_line(lines: list) -> tuple:
    """(names, description) of a NAME section: "ls - list directory contents" ->
    ("ls", "list directory contents"); ("", "") without a " - " separator."""
    text = " ".join(" ".join(lines).split())
    names, sep, description = text.partition(" - ")
    return (names.strip(), description.strip()) if sep else ("", "")


def parse(source: str) -> tuple:
    """(description, body) of a troff page: the NAME section's description, and the text of
    the other sections (headings on their own lines, paragraphs separated by a blank line).
    Raises ValueError when the page has no NAME description."""
    parts = sections(source)
    named = [lines for heading, lines in parts if heading == "NAME"]
    description = name_line(named[0])[1] if named else ""
    if not description:
        raise ValueError("no NAME section with a 'name - description' line")
    body = []
    for heading, lines in parts:
        if heading != "NAME":
            body += ["", heading, *lines]
    return description, re.sub(r"\n{3,}", "\n\n", "\n".join(body)).strip()


def read_page(path: Path) -> str:
    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt", encoding="utf-8", errors="replace") as f:
        return f.read()


def page_name(path: Path) -> str:
    """"ls(1)" for man1/ls.1.gz, "CA.pl(1ssl)" for man1/CA.pl.1ssl.gz."""
    stem = path.name[:-3] if path.name.endswith(".gz") else path.name
    name, _, section = stem.rpartition(".")
    return f"{name}({section})" if name else stem


@functools.lru_cache(maxsize=4)
def pages(root: str, exclude: tuple = ()) -> tuple:
    """(page name, description, body) of every readable page under root's man<section>
    folders, in sorted order; exclude: glob patterns of file names left out."""
    root = Path(root)
    folders = sorted(p for p in root.glob("man*") if p.is_dir()) if root.is_dir() else []
    if not folders:
        raise FileNotFoundError(f"no manual pages on this machine: {root} has no man<section> "
                                "folder (the man_pages corpus needs installed man pages)")
    out = []
    for folder in folders:
        for path in sorted(folder.iterdir()):
            if path.is_symlink() or not path.is_file() or any(path.match(p) for p in exclude):
                continue
            try:
                description, body = parse(read_page(path))
            except (OSError, EOFError, ValueError, UnicodeError):
                continue  # unreadable, a .so redirect, or no NAME description
            if body:
                out.append((page_name(path), description, body))
    if not out:
        raise ValueError(f"no page under {root} has a NAME description")
    return tuple(out)
